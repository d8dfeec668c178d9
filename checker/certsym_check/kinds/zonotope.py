"""The zonotope rule of ``deep_distance_bound`` (certificates/FORMAT.md, "zonotopes"): an upper bound on sup over a
box of ‖f1(x) − f2(x)‖∞ for two networks of the same widths without an output ReLU, both pushed through the same
input, computed in fixed point with every rounding outward (MATH.md Part IV, "Zonotopes").

Every quantity is an integer at scale 2^−F (F = FRACTION_BITS, as ``kinds.symbolic``). A neuron's value is held as
a form f in the input (its m + 1 integers: the free coordinates' coefficients and a constant), a vector E over the
error symbols ε_1 … ε_K made so far, and a radius r ≥ 0: for every x in the box there are ε ∈ [−1, 1]^K (the same
for every neuron of both networks) with value = f(x) + Σ_k E_k ε_k + ρ, |ρ| ≤ r. Layer by layer:

- a = W h + b: f, E and r of the inputs combined by W (rounded to the grid; the roundings, of W's entries times the
  inputs' sizes and of the products, go into r, outward), r by |W|;
- the range [l, u] of a: the form's extremes over the box, ∓ Σ |E_k| ∓ r, outward;
- h = σ(a): a = h when l ≥ 0, h = 0 when u ≤ 0, and otherwise, with λ = u / (u − l) on the grid (rounded down, so
  that λ ∈ [0, 1]) and μ = max(−λ l, (1 − λ) u) / 2 rounded up: h = λ a + μ + μ ε_new, a fresh symbol of magnitude
  μ (σ(a) − λ a lies in [0, 2μ] on [l, u] for any λ ∈ [0, 1]).

The fresh symbols of both networks lie in one list; the input is shared. The bound is, over the outputs j, the
largest of the extremes of f1_j − f2_j over the box plus Σ |E1_j − E2_j| plus r1_j + r2_j. A region needing more
than the stated number of symbols (``columns``) is refused: the cost per region is bounded before the work.

Standard library only; no search. Cost per region: for each layer and network n_ℓ (n_{ℓ−1} + 2)(free + 2 + K)
products (``region_products``, K the stated cap), charged before the work at PRODUCTS_PER_UNIT products a unit.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from operator import mul

from certsym_check.budget import charge, charge_ops, int_ops
from certsym_check.errors import Reject
from certsym_check.kinds.symbolic import _ONE, FRACTION_BITS, PRODUCTS_PER_UNIT, Space, _down, _fixed, _up

MAX_COLUMNS = 4096  # error symbols a region may make, at most (the certificate states its own cap below this)
MAX_ENTRIES = 1 << 21  # a layer's neurons × the stated cap on symbols: the error vectors' integers, held at once
NEURON_OPS = 48  # the interpreted work of one neuron in one region (its range, relaxation and rounding), in ops


def region_products(widths: list[int], free: int, columns: int) -> int:
    """The products one region's bound takes (an upper estimate), with ``free`` coordinates of positive width and at
    most ``columns`` error symbols: for each layer and each of the two networks, n_ℓ n_{ℓ−1} (free + 2 + columns)
    for the combination of forms, error vectors and radii, and 2 n_ℓ (free + 2 + columns) for the range and the
    relaxation of each neuron."""
    return sum(2 * n * (p + 2) * (free + 2 + columns) for p, n in zip(widths, widths[1:], strict=False))


class Rule:
    """The rule for two networks (lists of layers (W, b) over Fractions, the same widths, no output ReLU), with at
    most ``columns`` error symbols a region."""

    def __init__(self, layers1: list, layers2: list, columns: int):
        if not 0 <= columns <= MAX_COLUMNS:
            raise Reject(f"a zonotope tree states at most {MAX_COLUMNS} error symbols a region")
        if any(not b or not all(W) for layers in (layers1, layers2) for W, b in layers):
            raise Reject("the zonotope rule reads layers of positive width")
        self.columns = columns
        self.nets = [[([[_fixed(x) for x in row] for row in W], [_fixed(x) for x in b]) for W, b in layers]
                     for layers in (layers1, layers2)]
        self.widths = [len(layers1[0][0][0]), *(len(b) for _, b in layers1)]
        if max(self.widths) * max(columns, 1) > MAX_ENTRIES:
            raise Reject(f"beyond the checker's bounds: a layer of {max(self.widths)} neurons × {columns} error "
                         f"symbols (at most {MAX_ENTRIES} integers held at once)")
        # a product's cost beyond a word's is charged by the longest weight (``_affine``)
        self.bits = max(abs(x).bit_length() for net in self.nets for W, b in net for row in (*W, b) for x in row)

    def bound(self, box: list[tuple[Fraction, Fraction]], columns: int | None = None) -> Fraction:
        """The rule's upper bound on sup over ``box`` of ‖f1 − f2‖∞ (module docstring), making at most ``columns``
        error symbols (default: the rule's cap). Charged before the work."""
        sp = Space(box)
        columns = self.columns if columns is None else min(columns, self.columns)
        charge(-(-region_products(self.widths, sp.m, columns) // PRODUCTS_PER_UNIT), "the zonotopes")
        charge_ops(NEURON_OPS * 2 * sum(self.widths[1:]), "the zonotopes' neurons")
        symbols = [0, columns]  # error symbols made so far (both networks together), and the cap
        outs = [self._network(net, sp, symbols) for net in self.nets]
        (f1, E1, r1), (f2, E2, r2) = outs
        worst = None
        for j in range(len(f1)):
            diff = [a - c for a, c in zip(f1[j], f2[j], strict=True)]
            spread = sum(map(abs, E1[j].values())) + sum(map(abs, E2[j].values())) + r1[j] + r2[j]
            value = max(sp.high(diff) + spread, -sp.low(diff) + spread)
            worst = value if worst is None else max(worst, value)
        return Fraction(worst, _ONE)

    def _network(self, net: list, sp: Space, symbols: list[int]) -> tuple[list, list, list]:
        """One network's output neurons as (forms, error vectors, radii)."""
        m = sp.m
        forms: list[list[int]] = [[_ONE if q == free else 0 for q in range(m)] + [0] for free in range(m)]
        fixed = [(q, a) for q, (a, c) in enumerate(sp.box) if a == c]
        E: list[dict[int, int]] = [{} for _ in range(m)]
        r = [0] * m
        sizes = [max(abs(sp.lo[i]), abs(sp.hi[i])) for i in range(m)]
        last = len(net) - 1
        for ell, (W, b) in enumerate(net):
            if ell == 0:  # the first layer reads x: its fixed coordinates' products go into the constant, outward
                forms, E, r = self._first(W, b, sp, fixed)
            else:
                longest = max(abs(x).bit_length() for x in itertools.chain(*forms, *(e.values() for e in E)))
                charge_ops(len(W) * len(forms) * (sp.m + 1 + symbols[0]) * (int_ops(self.bits, longest) - 1),
                           "long products")
                forms, E, r = self._affine(W, b, forms, E, r, sizes, sp)
            if ell == last:
                return forms, E, r
            forms, E, r, sizes = self._relu(forms, E, r, sp, symbols)
        raise Reject("a network needs an output layer")  # pragma: no cover - layers are checked on reading

    @staticmethod
    def _first(W: list, b: list, sp: Space, fixed: list) -> tuple[list, list, list]:
        """W x + b as exact forms of the free coordinates (the weights on the grid; their rounding, half a unit
        times Σ |x_q|, and the fixed coordinates' products, rounded outward, go into the radius)."""
        forms, radii = [], []
        error = -(-(sp.every + _ONE) >> FRACTION_BITS) + 1
        for row, c in zip(W, b, strict=True):
            lo_rest = sum(w * (sp.xlo[q] if w > 0 else sp.xhi[q]) for q, _ in fixed for w in (row[q],))
            hi_rest = sum(w * (sp.xhi[q] if w > 0 else sp.xlo[q]) for q, _ in fixed for w in (row[q],))
            low, high = _down(lo_rest), _up(hi_rest)
            mid = (low + high) // 2
            forms.append([row[q] for q in sp.free] + [mid + c])
            radii.append(max(high - mid, mid - low) + error)
        return forms, [{} for _ in W], radii

    @staticmethod
    def _affine(W: list, b: list, forms: list, E: list, r: list, sizes: list[int], sp: Space):
        """W h + b: forms combined column by column, error vectors (sparse: symbol → coefficient) entry by entry
        (products at scale 2^−2F rounded to the nearest unit: the roundings, at most a unit per coefficient times the
        coefficient's variable, and the weights' half units times the inputs' sizes, go into the radius), radii by
        |W|."""
        cols_f = list(zip(*forms, strict=True))
        carried = [(j, e) for j, e in enumerate(E) if e]
        error = -(-(sum(sizes) + _ONE) >> FRACTION_BITS) + sp.slack + 1
        out_f, out_E, out_r = [], [], []
        for row, c in zip(W, b, strict=True):
            f = [_nearest(sum(map(mul, row, col))) for col in cols_f]
            f[-1] += c
            acc: dict[int, int] = {}
            for j, e in carried:
                w = row[j]
                if w:
                    for k, v in e.items():
                        acc[k] = acc.get(k, 0) + w * v
            e = {k: y for k, v in acc.items() if (y := _nearest(v))}
            radius = _up(sum(abs(w) * x for w, x in zip(row, r, strict=True)))
            out_f.append(f)
            out_E.append(e)
            out_r.append(radius + error + len(acc))  # each entry's rounding: half a unit times |ε_k| ≤ 1
        return out_f, out_E, out_r

    def _relu(self, forms: list, E: list, r: list, sp: Space, symbols: list[int]):
        """h = σ(a) neuron by neuron (module docstring); the sizes |h| ≤ u for the next layer's rounding."""
        out_f, out_E, out_r, sizes = [], [], [], []
        for f, e, radius in zip(forms, E, r, strict=True):
            spread = sum(map(abs, e.values())) + radius
            lo, hi = sp.low(f) - spread, sp.high(f) + spread
            if lo >= 0:
                out_f.append(f)
                out_E.append(e)
                out_r.append(radius)
            elif hi <= 0:
                out_f.append(sp.zero)
                out_E.append({})
                out_r.append(0)
            else:
                symbols[0] += 1
                if symbols[0] > symbols[1]:
                    raise Reject(f"a region makes more than the {symbols[1]} error symbols stated for it")
                lam = (hi << FRACTION_BITS) // (hi - lo)  # rounded down: in [0, 1]
                mu = -(-max(-lam * lo, (_ONE - lam) * hi) // (2 * _ONE))  # rounded up
                g = [_nearest(lam * c) for c in f]
                g[-1] += mu
                new = {k: y for k, c in e.items() if (y := _nearest(lam * c))}
                new[symbols[0] - 1] = mu
                # the products' roundings: half a unit per coefficient, times its variable's size (forms) or 1
                out_f.append(g)
                out_E.append(new)
                out_r.append(_up(lam * radius) + sp.slack + len(e) + 1)
            sizes.append(max(hi, 0))
        return out_f, out_E, out_r, sizes


def _nearest(v: int) -> int:
    """v at scale 2^−2F to the nearest unit at 2^−F (error at most half a unit)."""
    return (v + (1 << (FRACTION_BITS - 1))) >> FRACTION_BITS

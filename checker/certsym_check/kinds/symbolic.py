"""The symbolic-difference rule of ``deep_distance_bound`` (certificates/FORMAT.md, "symbolic differences"): an
upper bound on sup over a box of ‖f1(x) − f2(x)‖∞ for two networks of the same widths without an output ReLU,
computed in fixed point with every rounding outward (MATH.md Part IV, the relaxations of one neuron and of a pair).

Every quantity is an integer at scale 2^−F (F = FRACTION_BITS). A *form* is an affine function of the input,
c_1 x_1 + … + c_m x_m + c_0, held as its m + 1 integers. Layer by layer, for ℓ = 1 … L + 1:

- the pre-activations a_ℓ of each network get a lower and an upper form (W⁺ times the lower forms of h_{ℓ−1} plus
  W⁻ times the upper ones, and the reverse, plus b), and their ranges [l, u] are the forms' extremes over the box;
- the difference d_ℓ = a1_ℓ − a2_ℓ gets forms from the identity d_ℓ = W2_ℓ e_{ℓ−1} + (W1_ℓ − W2_ℓ) h1_{ℓ−1}
  + (b1_ℓ − b2_ℓ), e_0 = 0, and from a1_ℓ − a2_ℓ directly; for each neuron the lower form with the larger minimum
  and the upper form with the smaller maximum are kept (the identity's on a tie);
- each hidden neuron's h = σ(a): a stable neuron passes its forms (or 0); an unstable one gets h ≥ λ a (λ = 1 if
  u ≥ −l, else 0) and h ≤ s (a − l) with s = u / (u − l) rounded up;
- each pair's e = σ(a1) − σ(a2): e = d both active, 0 both inactive, a1 or −a2 when one is active and the other
  inactive; otherwise from d ∈ [δl, δu]: 0 ≤ e ≤ d when δl ≥ 0, d ≤ e ≤ 0 when δu ≤ 0, else
  t (d − δu) ≤ e ≤ s (d − δl) with s = δu / (δu − δl) and t = −δl / (δu − δl), both rounded up.

The bound is max_j max(max U_d_j, −min L_d_j) over the output layer. Roundings: each weight and bias is rounded to
the nearest multiple of 2^−F, and a combination's coefficients down (lower forms) or up (upper forms); the error of
each is added to the form's constant, outward (module ``_combine``), so every form stays a bound at every point of
the box. The box's ends are rounded outward to the grid (a larger box: the bound holds on the stated one).

Standard library only; no search. Cost per region: for each layer, at most 16 n_ℓ (n_{ℓ−1} + 1)(m + 1) products
of integers of a few words (``region_products``), charged before the work at PRODUCTS_PER_UNIT products a unit.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import floor
from operator import mul

from certsym_check.budget import charge, charge_ops, int_ops
from certsym_check.errors import Reject

FRACTION_BITS = 64
PRODUCTS_PER_UNIT = 20  # products of a few words each inside sum(map(mul, …)): about 50 ns each
NEURON_OPS = 48  # the interpreted work of one neuron of one network in one region (ranges, relaxations), in ops
_ONE = 1 << FRACTION_BITS

Form = list[int]  # c_1 … c_m, c_0, each at scale 2^−F


def _fixed(x: Fraction) -> int:
    """x rounded to the nearest multiple of 2^−F (error at most half a unit)."""
    return floor(x * _ONE + Fraction(1, 2))


def _down(v: int) -> int:  # v at scale 2^−2F, to 2^−F rounded down
    return v >> FRACTION_BITS


def _up(v: int) -> int:  # v at scale 2^−2F, to 2^−F rounded up
    return -((-v) >> FRACTION_BITS)


class Net:
    """One network in fixed point: per layer the weights split by sign, the biases, and (for the bound on the error
    of rounding them) nothing else: every entry is within half a unit of the exact one."""

    def __init__(self, W: list[list[Fraction]], b: list[Fraction]):
        if not b or not all(W):
            raise Reject("the symbolic rule reads layers of positive width")
        self.pos = [[max(_fixed(x), 0) for x in row] for row in W]
        self.neg = [[min(_fixed(x), 0) for x in row] for row in W]
        self.b = [_fixed(x) for x in b]
        # the longest entry: a product's cost beyond a word's is charged by it (``Space.combine``)
        self.bits = max(max(abs(x).bit_length() for x in row) for row in (*self.pos, *self.neg, self.b))


def region_products(widths: list[int], free: int) -> int:
    """The products one region's bound takes (an upper estimate), with ``free`` coordinates of the box of positive
    width: 8 n_1 (m + 1) for the first layer, whose forms are read off its weights, and 16 n_ℓ (n_{ℓ−1} + 1)(free + 1)
    for each later one (eight combinations of forms, each two sums of products per coefficient)."""
    first = 8 * widths[1] * (widths[0] + 1)
    return first + sum(16 * n * (p + 1) * (free + 1) for p, n in zip(widths[1:], widths[2:], strict=False))


class Rule:
    """The rule for two networks (lists of layers (W, b) over Fractions, the same widths, no output ReLU)."""

    def __init__(self, layers1: list, layers2: list):
        self.n1 = [Net(W, b) for W, b in layers1]
        self.n2 = [Net(W, b) for W, b in layers2]
        self.delta = [Net([[x - y for x, y in zip(r1, r2, strict=True)] for r1, r2 in zip(W1, W2, strict=True)],
                          [x - y for x, y in zip(b1, b2, strict=True)])
                      for (W1, b1), (W2, b2) in zip(layers1, layers2, strict=True)]
        self.widths = [len(layers1[0][0][0]), *(len(b) for _, b in layers1)]

    def bound(self, box: list[tuple[Fraction, Fraction]]) -> Fraction:
        """The rule's upper bound on sup over ``box`` of ‖f1 − f2‖∞: forms in the coordinates of positive width,
        the others constants. Charged before the work."""
        sp = Space(box)
        charge(-(-region_products(self.widths, sp.m) // PRODUCTS_PER_UNIT), "the symbolic differences")
        charge_ops(NEURON_OPS * 3 * sum(self.widths[1:]), "the symbolic differences' neurons")
        low, high, combine = sp.low, sp.high, sp.combine
        Le: list[Form] = []
        Ue: list[Form] = []
        L1 = U1 = L2 = U2 = []
        size1: list[int] = []
        size2: list[int] = []
        size_e: list[int] = []
        last = len(self.n1) - 1
        for ell, (n1, n2, dn) in enumerate(zip(self.n1, self.n2, self.delta, strict=True)):
            if ell == 0:
                La1, Ua1, La2, Ua2 = sp.first(n1, False), sp.first(n1, True), sp.first(n2, False), sp.first(n2, True)
                Ld, Ud = sp.first(dn, False), sp.first(dn, True)
            else:
                La1, Ua1 = combine(n1, L1, U1, size1, False), combine(n1, L1, U1, size1, True)
                La2, Ua2 = combine(n2, L2, U2, size2, False), combine(n2, L2, U2, size2, True)
                Ld = combine(dn, L1, U1, size1, False)
                Ud = combine(dn, L1, U1, size1, True)
                # + W2 e, the bias already in Δb
                Ld = [_add(f, g) for f, g in zip(Ld, combine(n2, Le, Ue, size_e, False, False), strict=True)]
                Ud = [_add(f, g) for f, g in zip(Ud, combine(n2, Le, Ue, size_e, True, False), strict=True)]
            for i in range(len(Ld)):  # a1 − a2 directly, where it is tighter
                lower = _add(La1[i], [-y for y in Ua2[i]])
                upper = _add(Ua1[i], [-y for y in La2[i]])
                if low(lower) > low(Ld[i]):
                    Ld[i] = lower
                if high(upper) < high(Ud[i]):
                    Ud[i] = upper
            if ell == last:
                worst = max(max(high(u), -low(lo_)) for lo_, u in zip(Ld, Ud, strict=True))
                return Fraction(worst, _ONE)
            r1 = [(low(a), high(c)) for a, c in zip(La1, Ua1, strict=True)]
            r2 = [(low(a), high(c)) for a, c in zip(La2, Ua2, strict=True)]
            rd = [(low(a), high(c)) for a, c in zip(Ld, Ud, strict=True)]
            L1, U1, size1 = _relu(La1, Ua1, r1, sp.zero, sp.scaled)
            L2, U2, size2 = _relu(La2, Ua2, r2, sp.zero, sp.scaled)
            Le, Ue, size_e = _pair(La1, Ua1, La2, Ua2, Ld, Ud, r1, r2, rd, sp.zero, sp.scaled)
        raise Reject("a network needs an output layer")  # pragma: no cover - layers are checked on reading


class Space:
    """The forms over one box: its free coordinates (lo < hi) are the variables, the others constants; the box's
    ends on the grid, outward; the extremes of a form over the box; and the outward-rounded operations."""

    def __init__(self, box: list[tuple[Fraction, Fraction]]):
        self.box = box
        self.free = [q for q, (a, c) in enumerate(box) if a < c]
        self.m = len(self.free)
        self.xlo = [floor(a * _ONE) for a, _ in box]
        self.xhi = [-floor(-c * _ONE) for _, c in box]
        self.every = sum(max(abs(a), abs(c)) for a, c in zip(self.xlo, self.xhi, strict=True))  # Σ |x_q|
        self.lo, self.hi = [self.xlo[q] for q in self.free], [self.xhi[q] for q in self.free]
        # a form's coefficients rounded: its value moves by less than ``slack`` units
        self.slack = -(-sum(max(abs(a), abs(c)) for a, c in zip(self.lo, self.hi, strict=True)) >> FRACTION_BITS) + 1
        self.zero: Form = [0] * (self.m + 1)

    def low(self, f: Form) -> int:
        """The form's minimum over the box, rounded down."""
        m = self.m
        terms = sum(c * (a if c >= 0 else z) for c, a, z in zip(f[:m], self.lo, self.hi, strict=True))
        return _down(terms + (f[m] << FRACTION_BITS))

    def high(self, f: Form) -> int:
        """The form's maximum over the box, rounded up."""
        m = self.m
        terms = sum(c * (z if c >= 0 else a) for c, a, z in zip(f[:m], self.lo, self.hi, strict=True))
        return _up(terms + (f[m] << FRACTION_BITS))

    def first(self, net: Net, upper: bool) -> list[Form]:
        """W x + b for the first layer: the free coordinates' weights are the coefficients, the fixed ones'
        products with their values go into the constant (rounded outward with the weights' rounding)."""
        error = -(-(self.every + _ONE) >> FRACTION_BITS) + 1
        ends = (self.xhi, self.xlo) if upper else (self.xlo, self.xhi)
        fixed = [q for q, (a, c) in enumerate(self.box) if a == c]
        out = []
        for pos, neg, c in zip(net.pos, net.neg, net.b, strict=True):
            w = [x + y for x, y in zip(pos, neg, strict=True)]
            rest = sum(w[q] * (ends[0][q] if w[q] > 0 else ends[1][q]) for q in fixed)
            coefficients = [w[q] for q in self.free]
            out.append(coefficients + [_up(rest) + c + error] if upper else coefficients + [_down(rest) + c - error])
        return out

    def combine(self, net: Net, L: list[Form], U: list[Form], size: list[int], upper: bool,
                bias: bool = True) -> list[Form]:
        """W h + b (W h without ``bias``) as forms of x from the forms (L, U) of h, whose entries are at most
        ``size`` in absolute value: lower forms (W⁺ L + W⁻ U + b, rounded down) or upper ones (W⁺ U + W⁻ L + b,
        rounded up)."""
        m = self.m
        one, other = (U, L) if upper else (L, U)
        # what the charge per region (PRODUCTS_PER_UNIT products a unit) assumes is a product of words: the size
        # part of longer ones is charged here, by the longest weight and the longest coefficient of the forms
        longest = max(map(int.bit_length, map(abs, itertools.chain.from_iterable((*L, *U)))))
        charge_ops(2 * len(net.pos) * len(L) * (m + 1) * (int_ops(net.bits, longest) - 1), "long products")
        cols1 = list(zip(*one, strict=True))
        cols2 = list(zip(*other, strict=True))
        # the weights' and the bias's rounding (half a unit each) times the inputs' sizes, and the coefficients'
        error = -(-(sum(size) + _ONE) >> FRACTION_BITS) + self.slack + 1
        out = []
        for pos, neg, c in zip(net.pos, net.neg, net.b, strict=True):
            s = [sum(map(mul, pos, c1)) + sum(map(mul, neg, c2)) for c1, c2 in zip(cols1, cols2, strict=True)]
            c = c if bias else 0
            if upper:
                out.append([_up(v) for v in s[:m]] + [_up(s[m]) + c + error])
            else:
                out.append([_down(v) for v in s[:m]] + [_down(s[m]) + c - error])
        return out

    def scaled(self, f: Form, s: int, shift: int, upper: bool) -> Form:
        """s (f − shift) at scale 2^−F (s at scale 2^−F, s ≥ 0), rounded outward."""
        m = self.m
        g = [*f[:m], f[m] - shift]
        if upper:
            return [_up(s * c) for c in g[:m]] + [_up(s * g[m]) + self.slack]
        return [_down(s * c) for c in g[:m]] + [_down(s * g[m]) - self.slack]

    def hidden(self, layers: list[Net]) -> tuple[list[Form], list[Form], list[int]]:
        """The forms (lower, upper) of one network's last hidden layer h_L, and bounds on |h_L|."""
        L: list[Form] = []
        U: list[Form] = []
        size: list[int] = []
        for ell, net in enumerate(layers):
            La, Ua = (self.first(net, False), self.first(net, True)) if ell == 0 else \
                (self.combine(net, L, U, size, False), self.combine(net, L, U, size, True))
            L, U, size = _relu(La, Ua, [(self.low(a), self.high(c)) for a, c in zip(La, Ua, strict=True)],
                               self.zero, self.scaled)
        return L, U, size


def margin_products(widths: list[int], free: int) -> int:
    """The products ``leads`` takes on one region for one network (an upper estimate): 4 n_1 (m + 1), then
    4 n_ℓ (n_{ℓ−1} + 1)(free + 1) per later hidden layer and 2 (k − 1)(n_L + 1)(free + 1) for the margins."""
    k, hidden = widths[-1], widths[:-1]
    return 4 * hidden[1] * (hidden[0] + 1) + sum(4 * n * (p + 1) * (free + 1) for p, n in
                                                zip(hidden[1:], hidden[2:], strict=False)) + \
        2 * (k - 1) * (hidden[-1] + 1) * (free + 1)


def leads(W: list[list[list[Fraction]]], b: list[list[Fraction]], box: list[tuple[Fraction, Fraction]],
          c: int) -> bool:
    """Every margin f_c − f_j (j ≠ c) of one network (layers W, b over Fractions, no output ReLU) has a lower
    form whose minimum over the box is > 0: its last hidden layer's forms, then the rows W_c − W_j with the
    biases b_c − b_j, combined like any layer. Charged before the work (``margin_products``)."""
    sp = Space(box)
    widths = [len(W[0][0]), *(len(x) for x in b)]
    charge(-(-margin_products(widths, sp.m) // PRODUCTS_PER_UNIT), "the symbolic margins")
    nets = [Net(Wl, bl) for Wl, bl in zip(W[:-1], b[:-1], strict=True)]
    L, U, size = sp.hidden(nets)
    k = len(b[-1])
    rows = [[x - y for x, y in zip(W[-1][c], W[-1][j], strict=True)] for j in range(k) if j != c]
    margins = Net(rows, [b[-1][c] - b[-1][j] for j in range(k) if j != c])
    return all(sp.low(f) > 0 for f in sp.combine(margins, L, U, size, False))


def _add(f: Form, g: Form) -> Form:
    return [x + y for x, y in zip(f, g, strict=True)]


def _ratio_up(num: int, den: int) -> int:
    """num / den at scale 2^−F, rounded up (den > 0)."""
    return -((-num << FRACTION_BITS) // den)


def _relu(La: list[Form], Ua: list[Form], r: list, zero: Form, scaled) -> tuple[list[Form], list[Form], list[int]]:
    """The forms of h = σ(a) (one neuron's relaxation) and the sizes |h| ≤ size."""
    L, U, size = [], [], []
    for f, g, (lo, hi) in zip(La, Ua, r, strict=True):
        if lo >= 0:
            L.append(f)
            U.append(g)
        elif hi <= 0:
            L.append(zero)
            U.append(zero)
        else:
            L.append(f if hi >= -lo else zero)
            U.append(scaled(g, _ratio_up(hi, hi - lo), lo, True))
        size.append(max(hi, 0))
    return L, U, size


def _pair(La1, Ua1, La2, Ua2, Ld, Ud, r1, r2, rd, zero: Form, scaled) -> tuple[list[Form], list[Form], list[int]]:
    """The forms of e = σ(a1) − σ(a2) (a pair's relaxation) and the sizes |e| ≤ size."""
    L, U, size = [], [], []
    for i, ((l1, u1), (l2, u2), (dl, du)) in enumerate(zip(r1, r2, rd, strict=True)):
        if l1 >= 0 and l2 >= 0:
            lo_f, up_f = Ld[i], Ud[i]
        elif u1 <= 0 and u2 <= 0:
            lo_f, up_f = zero, zero
        elif l1 >= 0 and u2 <= 0:
            lo_f, up_f = La1[i], Ua1[i]
        elif u1 <= 0 and l2 >= 0:
            lo_f, up_f = [-x for x in Ua2[i]], [-x for x in La2[i]]
        elif dl >= 0:
            lo_f, up_f = zero, Ud[i]
        elif du <= 0:
            lo_f, up_f = Ld[i], zero
        else:
            lo_f = scaled(Ld[i], _ratio_up(-dl, du - dl), du, False)
            up_f = scaled(Ud[i], _ratio_up(du, du - dl), dl, True)
        L.append(lo_f)
        U.append(up_f)
        size.append(max(abs(dl), abs(du), max(u1, 0) + max(u2, 0)))
    return L, U, size

"""Certified distance between two deep ReLU networks on a box: an exact rational enclosure [L, U] of
sup_{x ∈ B} ‖f1(x) − f2(x)‖∞, f = ρ(θ) (or σ∘ρ(θ) for a network that ends in a ReLU), over QQ.

- Plain intervals: each network's pre-activations bounded over the box layer by layer, h_ℓ ∈ [max(lo, 0),
  max(hi, 0)]; U_plain = max_j max(hi1_j − lo2_j, hi2_j − lo1_j) on the outputs.
- Interval differences (as in ReluDiff), when both networks have the same widths and endings: each hidden layer
  of θ2 is aligned to θ1's by a one-to-one pairing with positive scalings, proposed in floating point (the
  nearest normalized rows, greedily) and exact from there on: any pairing gives a sound bound. With θ2' = g·θ2
  (ρ(θ2') = ρ(θ2)), δ_ℓ = z1_ℓ − z2'_ℓ is bounded: δ_1 exactly over the box, and for ℓ ≥ 2
  δ_ℓ = (W1_ℓ − W2'_ℓ) h1 + W2'_ℓ (h1 − h2') + (b1_ℓ − b2'_ℓ), with h1 − h2' ∈ [min(0, δlo), max(0, δhi)] (σ is
  monotone and 1-Lipschitz), = δ for a neuron active in both networks on the box, 0 for one inactive in both, and
  always within [σ(lo1) − σ(hi2'), σ(hi1) − σ(lo2')] from the plain intervals (``gap``). U_aligned =
  max_j |δ_{L+1, j}|, and U = min(U_plain, U_aligned).
- A pair that ``certsym.decide.deep`` shows equivalent (the block lemma) gets L = U = 0 with that proof.
- L = ‖f1(x*) − f2(x*)‖∞ at a point x* of the box evaluated exactly; x* is the best of random points, the
  center and corners under a floating-point forward pass, which only proposes.
- Branch and bound (with a time budget): the leaf of largest U is halved at the midpoint of the coordinate of
  largest width × first-layer weight, both halves bounded by the same rule, until U ≤ target·L, or with ε until
  U ≤ ε or L > ε, or the budget or the checker's bounds are spent. U is the largest leaf bound (the halvings
  cover the box); L the best witness of any leaf.
This is certificates/FORMAT.md's rule for ``deep_distance_bound``, which the checker recomputes. The bound is
loose where many neurons are unstable on the box (U/L is the honest measure). Cost: a constant number of passes
over the weights in exact arithmetic (each row's extremes over a box of inputs), plus O(weights × points)
floating point for the search, after the deep decision (``certsym.decide.deep``); that much again per region of the
branch and bound, at most MAX_TREE_WORK / (the weights of both networks) leaves.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.core.deep import LayeredNetwork, float_forward, float_layers
from certsym.decide import symbolic, zonotope
from certsym.decide.deadline import Deadline, deadline_of
from certsym.decide.deep import DeepVerdict
from certsym.decide.deep import decide as decide_deep
from certsym.decide.distance import Box, bounds_text, box_text, epsilon_verdict
from certsym.decide.symbolic import halves
from certsym.errors import InputError
from certsym.numbers import QQ, outward

Interval = tuple[list[fmpq], list[fmpq]]
Alignment = list[list[tuple[int, int, fmpq]]]
SEARCH_POINTS = 512
LEAF_POINTS = 64  # floating-point proposals per region of the branch and bound
# the checker's bounds on a tree (certificates/FORMAT.md): leaves × the weights of both networks (2.5·10^6 there;
# 2·10^6 here leaves room for its work budget, about 2–8 units per leaf and weight), nodes × (m + 1), nested
# halvings, and the bits of the box's numbers (a halving adds one)
MAX_TREE_WORK, MAX_NODE_WORK, MAX_TREE_NODES, MAX_TREE_DEPTH, MAX_BOX_BITS = 2 * 10**6, 5 * 10**6, 200_000, 256, 4096


@dataclass
class DeepDistance:
    """[L, U] with the evidence: the box, the alignment (None: plain intervals only), the witness and both outputs
    there; ``plain`` and ``aligned`` are the two upper bounds whose minimum is U."""

    lower: fmpq
    upper: fmpq
    box: Box
    alignment: Alignment | None
    witness: list[fmpq]
    values: tuple[list[fmpq], list[fmpq]]
    plain: fmpq
    aligned: fmpq | None
    equivalence: DeepVerdict | None = None  # a pair the block lemma shows equivalent: L = U = 0
    # the branch and bound: the halvings in preorder, ("split", q) or ("leaf", U of the leaf); empty: the box alone
    tree: list[tuple[str, object]] = field(default_factory=list)
    regions: int = 1
    stopped: str = ""
    seconds: float = 0.0
    epsilon: fmpq | None = None  # the ε asked about, if any
    method: str = "intervals"  # or "symbolic" / "zonotope": ``certsym.decide.symbolic`` / ``.zonotope`` (a tree)
    columns: int = 0  # a zonotope tree: the error symbols a region may make, as stated

    @property
    def verdict(self) -> str | None:
        """Against ``epsilon``: "verified" (U ≤ ε), "violated" (L > ε) or "unknown"; None without one."""
        return None if self.epsilon is None else epsilon_verdict(self.lower, self.upper, self.epsilon)

    @property
    def ratio(self) -> float | None:
        return None if self.lower == 0 else float(self.upper / self.lower)

    def __repr__(self) -> str:
        against = f", ε={self.epsilon}: {self.verdict}" if self.epsilon is not None else ""
        regions = f"{self.leaves} region{'s' * (self.leaves != 1)}"
        return f"DeepDistance({bounds_text(self.lower, self.upper)}, box={box_text(self.box)}, {regions}{against})"

    @property
    def leaves(self) -> int:
        return sum(1 for node in self.tree if node[0] == "leaf") if self.tree else 1


_ZERO = fmpq(0)


def _affine(W, b, lo: list[fmpq], hi: list[fmpq]) -> Interval:
    """The extremes of W h + b over lo ≤ h ≤ hi, row by row, exactly. Cost O(entries of W)."""
    out_lo, out_hi = [], []
    for row, bias in zip(W, b, strict=True):
        bottom, top = bias, bias
        for w, a, c in zip(row, lo, hi, strict=True):
            if w > 0:
                bottom, top = bottom + w * a, top + w * c
            elif w < 0:
                bottom, top = bottom + w * c, top + w * a
        out_lo.append(bottom)
        out_hi.append(top)
    return out_lo, out_hi


def _relu(iv: Interval) -> Interval:
    return [max(x, _ZERO) for x in iv[0]], [max(x, _ZERO) for x in iv[1]]


def gap(delta: Interval, z1: Interval, z2: Interval) -> Interval:
    """An enclosure of σ(z1) − σ(z2) for every neuron, from δ = z1 − z2 ∈ delta and the plain intervals z1, z2
    (module docstring): [min(0, δlo), max(0, δhi)], or δ itself where both are active, or 0 where both are
    inactive; intersected with [σ(lo1) − σ(hi2), σ(hi1) − σ(lo2)]. Cost O(width)."""
    lo, hi = [], []
    for dlo, dhi, a1, b1, a2, b2 in zip(*delta, *z1, *z2, strict=True):
        if a1 >= 0 and a2 >= 0:
            g = (dlo, dhi)
        elif b1 <= 0 and b2 <= 0:
            g = (_ZERO, _ZERO)
        else:
            g = (min(dlo, _ZERO), max(dhi, _ZERO))
        lo.append(max(g[0], max(a1, _ZERO) - max(b2, _ZERO)))
        hi.append(min(g[1], max(b1, _ZERO) - max(a2, _ZERO)))
    return lo, hi


def plain_intervals(theta: LayeredNetwork, box: Box) -> tuple[list[Interval], Interval]:
    """Every layer's pre-activation interval over the box, and the output interval (σ'd with an output ReLU)."""
    h: Interval = ([lo for lo, _ in box], [hi for _, hi in box])
    layers = []
    for ell, layer in enumerate(theta.layers, 1):
        z = _affine(layer.W, layer.b, *h)
        layers.append(z)
        h = _relu(z) if ell <= theta.depth or theta.output_relu else z
    return layers, h


def _moved(theta: LayeredNetwork, alignment: Alignment) -> list[tuple[list, list]]:
    """θ' = g·θ: W'_ℓ[i][p] = d_i W_ℓ[j_i][j_p] / d_p and b'_ℓ[i] = d_i b_ℓ[j_i]."""
    out, prev = [], [(q, fmpq(1)) for q in range(theta.m)]
    for ell, layer in enumerate(theta.layers, 1):
        here = [(j, d) for _, j, d in alignment[ell - 1]] if ell <= theta.depth else \
            [(r, fmpq(1)) for r in range(theta.k)]
        inv = [1 / d for _, d in prev]
        out.append(([[d * layer.W[j][q] * s for (q, _), s in zip(prev, inv, strict=True)] for j, d in here],
                    [d * layer.b[j] for j, d in here]))
        prev = here
    return out


def _differences(theta1: LayeredNetwork, theta2: LayeredNetwork, alignment: Alignment) -> list[tuple[list, list, list]]:
    """Per layer (W1 − W2', b1 − b2', W2') for θ2' = g·θ2: what U_aligned needs of the weights, on any box."""
    out = []
    for layer, (W2, b2) in zip(theta1.layers, _moved(theta2, alignment), strict=True):
        out.append(([[a - c for a, c in zip(r1, r2, strict=True)] for r1, r2 in zip(layer.W, W2, strict=True)],
                    [a - c for a, c in zip(layer.b, b2, strict=True)], W2))
    return out


def aligned_bound(theta1: LayeredNetwork, theta2: LayeredNetwork, alignment: Alignment, z1: list[Interval],
                  z2: list[Interval], box: Box, differences: list | None = None) -> fmpq:
    """U_aligned (module docstring), from both networks' plain pre-activation intervals ``z1``, ``z2``;
    ``differences`` is ``_differences`` when already computed. Cost: a few passes over the weights."""
    delta: Interval = ([], [])
    depth = len(theta1.layers) - 1
    for ell, (diff, shift, W2) in enumerate(differences or _differences(theta1, theta2, alignment), 1):
        if ell == 1:
            delta = _affine(diff, shift, [lo for lo, _ in box], [hi for _, hi in box])
            continue
        g = gap(delta, z1[ell - 2], _placed(z2[ell - 2], alignment[ell - 2]))
        e1 = _affine(diff, shift, *_relu(z1[ell - 2]))
        e2 = _affine(W2, [_ZERO] * len(shift), *g)
        delta = ([a + c for a, c in zip(e1[0], e2[0], strict=True)], [a + c for a, c in zip(e1[1], e2[1], strict=True)])
    if theta1.output_relu:
        delta = gap(delta, z1[depth], z2[depth])
    return max(max(-a, c) for a, c in zip(*delta, strict=True))


def _placed(z: Interval, pairs: list[tuple[int, int, fmpq]]) -> Interval:
    """θ2's interval of a hidden layer as θ2''s: neuron j scaled by d > 0 at place i."""
    return [d * z[0][j] for _, j, d in pairs], [d * z[1][j] for _, j, d in pairs]


def align_layers(theta1: LayeredNetwork, theta2: LayeredNetwork) -> Alignment | None:
    """A one-to-one pairing of every hidden layer, θ2's neuron j scaled by d > 0 placed at θ1's i: greedily by the
    cosine of the normalized rows in the coordinates of the layer below (already aligned); d is the exact ratio of
    the two rows' entries at θ1's largest entry when their signs agree, else of their norms. None when the widths
    or the endings differ. Cost O(Σ n_ℓ² n_{ℓ−1}) floating point."""
    if theta1.widths != theta2.widths or theta1.output_relu != theta2.output_relu:
        return None
    out: Alignment = []
    prev = [(q, fmpq(1)) for q in range(theta1.m)]
    for ell in range(1, theta1.depth + 1):
        L1, L2 = theta1.layers[ell - 1], theta2.layers[ell - 1]
        rows1 = [[*row, bias] for row, bias in zip(L1.W, L1.b, strict=True)]
        rows2 = [[*(row[q] / d for q, d in prev), bias] for row, bias in zip(L2.W, L2.b, strict=True)]
        F1 = np.array([[float(x) for x in r] for r in rows1]).reshape(len(rows1), -1)
        F2 = np.array([[float(x) for x in r] for r in rows2]).reshape(len(rows2), -1)
        n1, n2 = np.linalg.norm(F1, axis=1), np.linalg.norm(F2, axis=1)
        sim = (F1 / np.where(n1 > 0, n1, 1)[:, None]) @ (F2 / np.where(n2 > 0, n2, 1)[:, None]).T
        pairs: list[tuple[int, int, fmpq]] = []
        free1, free2 = set(range(len(rows1))), set(range(len(rows2)))
        for flat in np.argsort(-sim, axis=None, kind="stable"):
            i, j = divmod(int(flat), len(rows2))
            if i in free1 and j in free2:
                free1.discard(i)
                free2.discard(j)
                pairs.append((i, j, _scale(rows1[i], rows2[j], n1[i], n2[j])))
        pairs.sort()
        out.append(pairs)
        prev = [(j, d) for _, j, d in pairs]
    return out


def _scale(r1: list, r2: list, n1: float, n2: float) -> fmpq:
    q = max(range(len(r1)), key=lambda t: abs(r1[t]))
    if r1[q] != 0 and r2[q] != 0 and (r1[q] > 0) == (r2[q] > 0):
        return r1[q] / r2[q]
    if n1 > 0 and n2 > 0:
        ratio = fmpq(*float(n1 / n2).as_integer_ratio())
        return ratio if ratio > 0 else fmpq(1)
    return fmpq(1)


def _witness(theta1: LayeredNetwork, theta2: LayeredNetwork, box: Box, seed: int, points: int = SEARCH_POINTS,
             floats: tuple | None = None, gap_out: list | None = None) -> list[fmpq]:
    """The point of the box (among ``points`` random ones, its centre and corners lo, hi) where the float outputs
    differ most, as an exact dyadic inside the box; that float gap appended to ``gap_out`` when given."""
    f1, f2 = floats or (float_layers(theta1), float_layers(theta2))
    lo = np.array([float(a) for a, _ in box])
    hi = np.array([float(c) for _, c in box])
    rng = np.random.default_rng(seed)
    X = lo + (hi - lo) * rng.random((points, len(box)))
    X = np.vstack([X, (lo + hi) / 2, lo, hi])
    gap = np.abs(float_forward(f1, X, theta1.output_relu) - float_forward(f2, X, theta2.output_relu)).max(axis=1)
    best = X[int(np.argmax(gap))]
    if gap_out is not None:
        gap_out.append(float(gap.max()))
    # the float point, as the nearest dyadic inside the box (exactly), clipped to the box's exact ends
    out = []
    for t, (a, c) in zip(best, box, strict=True):
        y = fmpq(*float(t).as_integer_ratio())
        out.append(min(max(y, a), c))
    return out


class _Bounds:
    """U on any sub-box: min(U_plain, U_aligned), with what does not depend on the box computed once."""

    def __init__(self, theta1: LayeredNetwork, theta2: LayeredNetwork):
        self.theta1, self.theta2 = theta1, theta2
        self.alignment = align_layers(theta1, theta2)
        self.differences = None if self.alignment is None else _differences(theta1, theta2, self.alignment)

    def __call__(self, box: Box) -> tuple[fmpq, fmpq, fmpq | None]:
        """(U, U_plain, U_aligned) on ``box``. Cost: a few passes over the weights."""
        z1, out1 = plain_intervals(self.theta1, box)
        z2, out2 = plain_intervals(self.theta2, box)
        plain = max(max(c - b, d - a) for a, c, b, d in zip(*out1, *out2, strict=True))
        if self.alignment is None:
            return outward(plain, up=True), plain, None
        aligned = aligned_bound(self.theta1, self.theta2, self.alignment, z1, z2, box, self.differences)
        # the stated U is rounded up to a short dyadic: the exact bound of a deep float pair can have thousands of
        # bits, beyond what the checker reads (certificates/FORMAT.md)
        return outward(min(plain, aligned), up=True), plain, aligned


def deep_distance(theta1: LayeredNetwork, theta2: LayeredNetwork, box: Box, seed: int = 0,
                  verdict: DeepVerdict | None = None, seconds: float = 0.0, target: float = 1.1,
                  epsilon: fmpq | None = None, progress: Callable[[str], None] | None = None,
                  deadline: Deadline | None = None, max_regions: int | None = None,
                  method: str = "auto") -> DeepDistance:
    """[L, U] (module docstring) for two deep networks over QQ; ``verdict`` is their deep decision when it is
    already known. With a time budget above 0 (``deadline``, the documented way, which replaces ``seconds``; else
    ``seconds`` from now; 0, the default, is the box alone), the branch and bound runs until U ≤ ``target``·L, or
    with ``epsilon`` until U ≤ ε or L > ε, or the time budget, ``max_regions`` (regions of the tree, default no
    bound but the checker's) or the checker's bounds run out; ``DeepDistance.stopped`` says which. Cost: see the
    module; ``DeepDistance.seconds`` is the time taken, on the deadline's clock. ``method`` "auto" takes symbolic
    differences (``certsym.decide.symbolic``) for two networks of the same widths without an output ReLU, and
    intervals otherwise; "intervals" always takes intervals."""
    if method not in ("auto", "intervals", "symbolic", "zonotope"):
        raise InputError("method must be 'auto', 'intervals', 'symbolic' or 'zonotope'")
    if not (isinstance(theta1.field, type(QQ)) and isinstance(theta2.field, type(QQ))):
        raise InputError("distance bounds are computed over the rationals; these networks have irrational weights")
    if (theta1.m, theta1.k) != (theta2.m, theta2.k):
        raise InputError(f"the networks have different shapes: m = {theta1.m}, k = {theta1.k} and m = {theta2.m}, "
                         f"k = {theta2.k}")
    deadline = deadline_of(seconds, deadline)
    start = deadline.clock()
    verdict = verdict or decide_deep(theta1, theta2, seed)
    if verdict.equivalent:
        zero = fmpq(0)
        return DeepDistance(zero, zero, box, None, [], ([], []), zero, None, verdict, stopped="equivalent",
                            epsilon=epsilon)
    bounds = _Bounds(theta1, theta2)
    upper, plain, aligned = bounds(box)
    x = _witness(theta1, theta2, box, seed)
    values = (theta1(x), theta2(x))
    lower = max(abs(a - c) for a, c in zip(*values, strict=True))
    settled = upper <= fmpq(*float(target).as_integer_ratio()) * lower if epsilon is None else \
        upper <= epsilon or lower > epsilon
    if method in ("auto", "symbolic", "zonotope") and not settled and symbolic.applies(theta1, theta2) and \
            _bits_ok(box):
        # the exact interval rule did not settle the question on the box: the symbolic rule on the box alone, then
        # zonotopes over halvings, then (when they did not settle it either) symbolic differences over halvings with
        # what is left of the time, the better answer kept
        d = None
        if method == "auto":  # the symbolic rule on the box alone first: where it settles the question, at once
            d = _symbolic(theta1, theta2, box, seed, x, values, lower, deadline.share(0.1) if deadline.seconds > 0
                          else deadline, target, epsilon, progress, 1)
            if d.stopped not in _SETTLED:
                d = None
        if d is None and method in ("auto", "zonotope"):
            share = deadline.share(0.6) if method == "auto" and deadline.seconds > 0 else deadline
            d = _symbolic(theta1, theta2, box, seed, x, values, lower, share, target, epsilon, progress,
                          max_regions, rule="zonotope")
        if method != "zonotope" and (d is None or d.stopped not in _SETTLED):
            other = _symbolic(theta1, theta2, box, seed, x, values, lower, deadline, target, epsilon, progress,
                              max_regions)
            d = other if d is None or (other.upper, -other.lower) < (d.upper, -d.lower) or \
                other.stopped in _SETTLED else d
        d.plain, d.aligned = plain, aligned
        d.seconds = deadline.clock() - start
        return d
    d = DeepDistance(lower, upper, box, bounds.alignment, x, values, plain, aligned, stopped="one region",
                     epsilon=epsilon)
    if deadline.seconds > 0:
        _branch_and_bound(d, bounds, seed, deadline, target, epsilon, progress, max_regions)
    d.lower = stated_lower(d.lower, epsilon)
    d.seconds = deadline.clock() - start
    return d


def _bits_ok(box: Box) -> bool:
    """Box numbers short enough for the checker to halve (MAX_BOX_BITS)."""
    return max((_bits(end) for end in box), default=0) <= MAX_BOX_BITS


_SETTLED = ("U ≤ ε", "L > ε", "the target ratio", "U = 0")  # the reasons a tree stops with the question answered
COLUMNS = 160  # the error symbols a zonotope region may make, at most (each stated region states its own count)
TYPICAL = 40  # the symbols of a typical leaf: what sizes the tree (the checker prices each leaf by its own)
HUGE = zonotope.OVER  # the float bound of a region beyond COLUMNS: halved, never stated


def _symbolic(theta1: LayeredNetwork, theta2: LayeredNetwork, box: Box, seed: int, x: list[fmpq], values: tuple,
              lower: fmpq, deadline: Deadline, target: float, epsilon: fmpq | None,
              progress: Callable[[str], None] | None, max_regions: int | None, rule: str = "symbolic") -> DeepDistance:
    """[L, U] by symbolic differences (``certsym.decide.symbolic``) or, with ``rule`` "zonotope", by zonotopes
    (``certsym.decide.zonotope``) over halvings of the box between θ1 and θ2 moved by the alignment of its hidden
    layers (``align_layers``; ρ unchanged), the tree sized to the checker's bounds (at most ``max_regions``
    regions), with a witness searched in every new region. A zonotope tree with a leaf beyond COLUMNS symbols states
    nothing: U is then +∞ there, and the caller keeps the other rule's answer."""
    alignment = align_layers(theta1, theta2)
    moved = theta2 if alignment is None else LayeredNetwork.build(_moved(theta2, alignment), QQ, theta2.m)
    free = sum(1 for lo, hi in box if lo < hi)
    if rule == "zonotope":
        found = zonotope.Rule(theta1, moved, COLUMNS)
        # leaves are priced by the symbols each states (TYPICAL on average, as measured on ACAS Xu's trees)
        cap = max(1, int(symbolic.TREE_SHARE * symbolic.MAX_SYMBOLIC_WORK) //
                  zonotope.region_products(theta1.widths, free, TYPICAL))
    else:
        found = symbolic.Rule(theta1, moved)
        cap = symbolic.max_leaves(theta1.widths, free)
    rule_of, rule = rule, found
    if max_regions is not None:
        cap = max(1, min(cap, (max_regions + 1) // 2))
    floats = (float_layers(theta1), float_layers(theta2))
    best = {"lower": lower, "witness": x, "values": values, "count": 0}
    ratio = float(target)
    limit = deadline if deadline.seconds > 0 else Deadline(0.0)

    def witness(region: Box) -> None:
        best["count"] += 1
        gap: list = []
        y = _witness(theta1, theta2, region, seed + best["count"], LEAF_POINTS, floats, gap)
        if gap[0] <= float(best["lower"]) * (1 - 2.0**-20):  # no better in floats: the exact evaluation is spared
            return
        vals = (theta1(y), theta2(y))
        value = max(abs(a - c) for a, c in zip(*vals, strict=True))
        if value > best["lower"]:
            best.update(lower=value, witness=y, values=vals)

    def stop(top: float) -> str | None:
        if epsilon is not None:
            return "L > ε" if best["lower"] > epsilon else "U ≤ ε" if top <= float(epsilon) else None
        return "the target ratio" if top <= ratio * float(best["lower"]) else "U = 0" if top <= 0 else None

    tree, upper, _, reason = symbolic.symbolic_tree(rule, box, stop, cap, limit, progress, witness,
                                                    _exact_rule(theta1, moved, rule_of))
    reason = reason if deadline.seconds > 0 else "one region"
    if reason == "the checker's bounds" and max_regions is not None and cap < symbolic.max_leaves(theta1.widths,
                                                                                                   free):
        reason = "the region budget"
    if float(upper) >= HUGE:  # a leaf beyond the symbols a region may make: nothing to state
        upper, tree, reason = fmpq(*float("1e300").as_integer_ratio()), [], "the checker's bounds"
    return DeepDistance(stated_lower(best["lower"], epsilon), upper, box, alignment, best["witness"], best["values"],
                        upper, None, tree=tree, regions=len(tree), stopped=reason, epsilon=epsilon, method=rule_of,
                        columns=COLUMNS if rule_of == "zonotope" else 0)


def _exact_rule(theta1: LayeredNetwork, theta2: LayeredNetwork, rule: str = "symbolic") -> Callable[[Box], fmpq]:
    """The checker's own rule on a region (``certsym_check.kinds.symbolic`` or ``.zonotope``, exact in its fixed
    point): the producer states with it the bounds that decide U, so that the replay computes the same numbers. A
    region the checker's zonotope refuses (beyond COLUMNS symbols) gets HUGE, which is never stated."""
    from fractions import Fraction

    from certsym_check.errors import Reject
    from certsym_check.kinds import symbolic as checker_symbolic
    from certsym_check.kinds import zonotope as checker_zonotope

    def exact(layers) -> list:
        return [([[Fraction(int(x.p), int(x.q)) for x in row] for row in L.W], [Fraction(int(x.p), int(x.q))
                                                                               for x in L.b]) for L in layers]

    checker = checker_zonotope.Rule(exact(theta1.layers), exact(theta2.layers), COLUMNS) if rule == "zonotope" \
        else checker_symbolic.Rule(exact(theta1.layers), exact(theta2.layers))

    def bound(region: Box) -> fmpq:
        try:
            value = checker.bound([(Fraction(int(a.p), int(a.q)), Fraction(int(c.p), int(c.q))) for a, c in region])
        except Reject:
            return fmpq(*float(HUGE).as_integer_ratio())
        return fmpq(value.numerator, value.denominator)

    return bound


def stated_lower(lower: fmpq, epsilon: fmpq | None) -> fmpq:
    """L as stated: ``lower`` rounded down to a short dyadic (``outward``), with more bits where the rounding
    would move it from above ε to below (so a VIOLATED verdict survives it), and exact when short. Cost O(size)."""
    for bits in (64, 256, 1024):
        stated = outward(lower, up=False, bits=bits)
        if epsilon is None or stated > epsilon or not lower > epsilon:
            return stated
    return outward(lower, up=False, bits=4000)


@dataclass
class _Node:
    box: Box
    upper: fmpq
    depth: int
    split: int | None = None
    children: tuple = ()


def _branch_and_bound(d: DeepDistance, bounds: _Bounds, seed: int, deadline: Deadline, target: float,
                      epsilon: fmpq | None, progress: Callable[[str], None] | None,
                      max_regions: int | None = None) -> None:
    """Halve the leaf of largest U (module docstring) and update ``d`` in place: U, L with its witness, the tree
    (preorder) and why the search stopped (the target, ε, the time budget, the region budget, the checker's bounds).
    Cost: two region bounds and two leaf searches per halving, at most ``max_regions`` regions."""
    theta1, theta2 = bounds.theta1, bounds.theta2
    floats = (float_layers(theta1), float_layers(theta2))
    # a coordinate's influence: its width times the first layer's weights on it, in both networks
    influence = (np.abs(floats[0][0][0]).sum(axis=0) + np.abs(floats[1][0][0]).sum(axis=0)) if theta1.m else None
    weights = sum(sum(len(row) + 1 for row in layer.W) for t in (theta1, theta2) for layer in t.layers)
    ratio = fmpq(*float(target).as_integer_ratio())
    root = _Node(d.box, d.upper, 0)
    long_box = max((_bits(end) for end in root.box), default=0) > MAX_BOX_BITS  # the checker halves no such box
    heap = [(-root.upper, 0, root)]
    count, nodes = 0, 1

    def stop() -> str | None:
        top = -heap[0][0]
        if epsilon is not None:
            return "L > ε" if d.lower > epsilon else "U ≤ ε" if top <= epsilon else None
        if top <= ratio * d.lower:
            return "the target ratio"
        return "U = 0" if top <= 0 else None

    while not (reason := stop()):
        _, _, node = heap[0]
        if deadline.expired():
            reason = "the time budget"
            break
        if max_regions is not None and nodes + 2 > max_regions:
            reason = "the region budget"
            break
        scores = [float(hi - lo) * float(w) for (lo, hi), w in zip(node.box, influence, strict=True)] \
            if influence is not None else []
        q = max(range(len(scores)), key=lambda i: scores[i]) if scores else None
        leaves = len(heap) + 1
        if q is None or node.box[q][0] == node.box[q][1]:
            reason = "a region no halving shrinks"
            break
        if leaves * weights > MAX_TREE_WORK or (nodes + 2) * (theta1.m + 1) > MAX_NODE_WORK or \
                nodes + 2 > MAX_TREE_NODES or node.depth >= MAX_TREE_DEPTH or long_box:
            reason = "the checker's bounds"
            break
        heapq.heappop(heap)
        node.split = q
        children = []
        for region in halves(node.box, q):
            children.append(_Node(region, bounds(region)[0], node.depth + 1))
            count += 1
            heapq.heappush(heap, (-children[-1].upper, count, children[-1]))
            x = _witness(theta1, theta2, region, seed + count, LEAF_POINTS, floats)
            values = (theta1(x), theta2(x))
            value = max(abs(a - c) for a, c in zip(*values, strict=True))
            if value > d.lower:
                d.lower, d.witness, d.values = value, x, values
        node.children = tuple(children)
        nodes += 2
        if progress is not None and nodes % 100 == 1:
            progress(f"{nodes} regions, U ≈ {float(-heap[0][0]):.6g}, L ≈ {float(d.lower):.6g}")
    d.upper = -heap[0][0]
    d.regions, d.stopped = nodes, reason
    if root.split is not None:
        d.tree = _preorder(root)


def _bits(end: tuple[fmpq, fmpq]) -> int:
    return max(max(abs(int(y.p)), int(y.q)).bit_length() for y in end)


def _preorder(root: _Node) -> list[tuple[str, object]]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.split is None:
            out.append(("leaf", node.upper))
        else:
            out.append(("split", node.split))
            stack.extend(reversed(node.children))
    return out

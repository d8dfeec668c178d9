"""Replay of ``deep_distance_bound``: sup_{x ∈ B} ‖f1(x) − f2(x)‖∞ ∈ [L, U] for two deep ReLU networks over QQ
(f = ρ(θ), or σ∘ρ(θ) for a network that ends in a ReLU), by the rule of certificates/FORMAT.md:

- plain intervals: each network's pre-activations z_ℓ bounded over the box layer by layer (a row's extremes over
  a box of inputs are exact), h_ℓ ∈ [max(lo, 0), max(hi, 0)]; U_plain = max_j max(hi1_j − lo2_j, hi2_j − lo1_j)
  on the outputs (σ applied to the output intervals of a network that ends in a ReLU);
- with an alignment (for every hidden layer a one-to-one pairing [i, j, d], d > 0, of equal widths), θ2 is
  rewritten as θ2' = g·θ2 (neuron j of layer ℓ scaled by d and moved to place i; ρ(θ2') = ρ(θ2)) and the
  difference δ_ℓ = z1_ℓ − z2'_ℓ is bounded: δ_1 exactly over the box, and for ℓ ≥ 2
  δ_ℓ = (W1_ℓ − W2'_ℓ) h1_{ℓ−1} + W2'_ℓ (h1_{ℓ−1} − h2'_{ℓ−1}) + (b1_ℓ − b2'_ℓ) with h1 − h2' in ``_gap``:
  [min(0, δlo), max(0, δhi)] (σ is monotone and 1-Lipschitz), or [δlo, δhi] for a neuron whose plain intervals
  are ≥ 0 in both networks, or 0 for one ≤ 0 in both, intersected with [σ(lo1) − σ(hi2'), σ(hi1) − σ(lo2')];
  U_aligned = max_j |δ_{L+1, j}|, the output ReLUs (both or neither) applied the same way;
- U ≥ min(U_plain, U_aligned), and L ≤ ‖f1(x*) − f2(x*)‖∞ at the witness x* in the box, evaluated exactly;
- with a tree of halvings (``halvings``: preorder, ["split", q] halves the current region at the midpoint of
  coordinate q, left half first; ["leaf", U_leaf] states that region's bound), each leaf's U_leaf is at least that
  rule on its region and U at least the largest U_leaf (the tree must end when every region is a leaf: they cover
  the box);
- or, for an equivalent pair, a ``deep_equivalent`` proof (``kinds.deep``) and L = U = 0;
- or symbolic differences (``kinds.symbolic``) on a tree whose splits may state their region's bound too
  (["split", q, U_region]), inherited by every node below: the rule is computed only on a node whose stated bound is
  below what it inherits, on a meter of its own (SYMBOLIC_BUDGET units).

A stated bound may be looser than the rule's number, never tighter: the producer rounds U and every U_leaf up, and L
down, to short dyadics, since the rule's exact numbers for float networks run to thousands of bits. Every stated
bound has a numerator and a denominator of at most MAX_STATED_BITS bits, the field named when one is longer. No
search. Cost: a constant number of passes over the weights per region, each row brought to integers once and every
bound over its layer's common denominator; the sizes are bounded before the work (MAX_WEIGHTS, and the distinct
denominators times the depth; for a tree MAX_NODES nodes, MAX_DEPTH nested halvings, box numbers of at most
MAX_BOX_BITS bits, leaves × the weights of both networks ≤ MAX_DISTANCE_WORK and nodes × (m + 1) ≤ MAX_WORK; a
leaf's stated bound is refused unread when longer than a MAX_STATED_BITS-bit number can be written, its reading
charged).
Standard library only.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from fractions import Fraction

from certsym_check.budget import charge, charge_products, lcm, metered
from certsym_check.core import Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational, show
from certsym_check.kinds import symbolic, zonotope
from certsym_check.kinds.boxes import MAX_NUMERATOR_BITS, box_text, epsilon_verdict, parse_box
from certsym_check.kinds.deep import LEMMA, PHASES, DeepNet, check_deep_equivalent
from certsym_check.kinds.integer_rows import integer_form, row_extremes

STATEMENT = "interval differences and exact evaluation"
TREE_STATEMENT = "halvings of the box, interval differences and exact evaluation"
SYMBOLIC_STATEMENT = "halvings of the box, symbolic differences in fixed point and exact evaluation"
ZONOTOPE_STATEMENT = "halvings of the box, zonotopes in fixed point and exact evaluation"
# a symbolic tree's leaves × the products of one region's bound (``kinds.symbolic.region_products``): about 50 ns
# a product, so at this bound the replay's products take about 100 s
MAX_SYMBOLIC_WORK = 2 * 10**9
# the units of a symbolic tree's own meter (``budget.metered``), beside the certificate's WORK_BUDGET: its products
# at PRODUCTS_PER_UNIT a unit, and the size part of long ones, so that its replay takes at most about two minutes
SYMBOLIC_BUDGET = 12 * 10**7
MAX_NODES = 200_000
MAX_DEPTH = 256  # nested halvings: each adds a bit to a coordinate's denominator
MAX_WORK = 5 * 10**6  # leaves × their work, and nodes × (m + 1), for a tree of halvings (deep_top1's)
# a distance tree's leaves × the weights of both networks: a leaf costs about four passes over the weights, so at
# this bound the worst replay measured (a 1-16-1 pair, 25,000 leaves) takes about 22 s on a 2-core machine
MAX_DISTANCE_WORK = 25 * 10**5
MAX_BOX_BITS = 4096  # numerators and denominators of a box that is halved: each halving adds one bit
MAX_WEIGHTS = 2 * 10**7  # entries of both networks: each pass is a few integer operations per entry
MAX_GROWTH_BITS = 1 << 20  # (layers + 1) × the bits of the distinct denominators: bounds every common denominator
MAX_STATED_BITS = 4096  # numerator and denominator of a stated bound (U, L, a leaf's U): compared, never computed with

Interval = tuple[list[Fraction], list[Fraction]]


def _common(xs: list[Fraction]) -> tuple[list[int], int]:
    D = lcm((x.denominator for x in xs), "a layer's bounds over one denominator")
    return [x.numerator * (D // x.denominator) for x in xs], D


def affine_extremes(W: list, b: list, lo: list[Fraction], hi: list[Fraction]) -> Interval:
    """The extremes of W h + b over the box lo ≤ h ≤ hi, row by row, exactly."""
    LO, D1 = _common(lo)
    HI, D2 = _common(hi)
    D = lcm((D1, D2), "a layer's bounds over one denominator")
    LO, HI = [y * (D // D1) for y in LO], [y * (D // D2) for y in HI]
    out_lo, out_hi = [], []
    for row, bias in zip(W, b, strict=True):
        ints, den = integer_form([*row, bias])
        a, c = row_extremes(ints, den, LO, HI, D)
        out_lo.append(a)
        out_hi.append(c)
    return out_lo, out_hi


def relu_interval(iv: Interval) -> Interval:
    return [max(x, Fraction(0)) for x in iv[0]], [max(x, Fraction(0)) for x in iv[1]]


def plain_intervals(t: DeepNet, box: list) -> tuple[list[Interval], Interval]:
    """The pre-activation intervals of every layer over the box, and the output interval (σ'd if t ends in a ReLU)."""
    h: Interval = ([lo for lo, _ in box], [hi for _, hi in box])
    layers = []
    for ell in range(1, t.depth + 2):
        z = affine_extremes(t.W[ell - 1], t.b[ell - 1], *h)
        layers.append(z)
        h = relu_interval(z) if ell <= t.depth or t.output_relu else z
    return layers, h


def _alignment(t1: DeepNet, t2: DeepNet, value: object) -> list[list[tuple[int, int, Fraction]]]:
    """The stated alignment: per hidden layer, a one-to-one pairing of all its neurons [i, j, d], d > 0."""
    layers = seq(value, t1.depth, "proof.alignment")
    out = []
    for ell, pairs in enumerate(layers, 1):
        n = len(t1.b[ell - 1])
        if len(t2.b[ell - 1]) != n:
            raise Reject(f"proof.alignment: hidden layer {ell} has {n} and {len(t2.b[ell - 1])} neurons")
        items = seq(pairs, n, f"proof.alignment[{ell - 1}]")
        layer, seen1, seen2 = [], set(), set()
        for s, item in enumerate(items):
            i, j, d = seq(item, 3, f"proof.alignment[{ell - 1}][{s}]")
            i, j, d = index(i, n, "proof.alignment"), index(j, n, "proof.alignment"), rational(d)
            if d <= 0 or i in seen1 or j in seen2:
                raise Reject(f"proof.alignment[{ell - 1}][{s}]: scalings must be positive and the pairing one to one")
            seen1.add(i)
            seen2.add(j)
            layer.append((i, j, d))
        out.append(sorted(layer))
    return out


def _moved(t2: DeepNet, alignment: list) -> tuple[list, list]:
    """θ2' = g·θ2: W2'_ℓ[i][p] = d_i · W2_ℓ[j_i][j_p] / d_p, b2'_ℓ[i] = d_i · b2_ℓ[j_i] (layer 0 and the output
    unmoved)."""
    W, b = [], []
    prev = [(q, Fraction(1)) for q in range(t2.m)]
    for ell in range(1, t2.depth + 2):
        here = [(j, d) for _, j, d in alignment[ell - 1]] if ell <= t2.depth else [(r, Fraction(1))
                                                                                    for r in range(t2.k)]
        inv = [1 / d for _, d in prev]
        rows = []
        for j, d in here:
            src = t2.W[ell - 1][j]
            cols = [src[q] for q, _ in prev]
            charge_products(cols, inv, "moving theta2 by the alignment", accumulate=False)
            charge_products(cols, [d] * len(cols), "moving theta2 by the alignment", accumulate=False)
            rows.append([d * w * s for w, s in zip(cols, inv, strict=True)])
        W.append(rows)
        charge_products([d for _, d in here], [t2.b[ell - 1][j] for j, _ in here], "moving theta2 by the alignment",
                        accumulate=False)
        b.append([d * t2.b[ell - 1][j] for j, d in here])
        prev = here
    return W, b


def _differences(t1: DeepNet, t2: DeepNet, alignment: list) -> list[tuple[list, list, list]]:
    """Per layer (W1 − W2', b1 − b2', W2'), θ2' = g·θ2: what U_aligned needs of the weights, on any box."""
    W2, b2 = _moved(t2, alignment)
    out = []
    for ell in range(1, t1.depth + 2):
        W1, b1 = t1.W[ell - 1], t1.b[ell - 1]
        # a difference costs what a product of the same sizes does (a gcd of the denominators)
        for r1, r2 in zip(W1, W2[ell - 1], strict=True):
            charge_products(r1, r2, "the weights' differences", accumulate=False)
        charge_products(b1, b2[ell - 1], "the weights' differences", accumulate=False)
        out.append(([[a - c for a, c in zip(r1, r2, strict=True)] for r1, r2 in zip(W1, W2[ell - 1], strict=True)],
                    [a - c for a, c in zip(b1, b2[ell - 1], strict=True)], W2[ell - 1]))
    return out


def _gap(delta: Interval, z1: Interval, z2: Interval) -> Interval:
    """σ(z1) − σ(z2) enclosed from δ = z1 − z2 ∈ delta and the plain intervals z1, z2 (module docstring)."""
    zero = Fraction(0)
    charge_products(z1[0], z2[1], "the gaps σ(z1) − σ(z2)", accumulate=False)
    charge_products(z1[1], z2[0], "the gaps σ(z1) − σ(z2)", accumulate=False)
    lo, hi = [], []
    for dlo, dhi, a1, b1, a2, b2 in zip(*delta, *z1, *z2, strict=True):
        if a1 >= 0 and a2 >= 0:
            g = (dlo, dhi)
        elif b1 <= 0 and b2 <= 0:
            g = (zero, zero)
        else:
            g = (min(dlo, zero), max(dhi, zero))
        lo.append(max(g[0], max(a1, zero) - max(b2, zero)))
        hi.append(min(g[1], max(b1, zero) - max(a2, zero)))
    return lo, hi


def _aligned(t1: DeepNet, alignment: list, differences: list, z1: list[Interval], z2: list[Interval],
             box: list) -> Fraction:
    """U_aligned: the difference δ bounded layer by layer (module docstring); z1, z2 the plain pre-activation
    intervals of θ1 and θ2 (θ2's placed and scaled by the alignment)."""
    lo, hi = [a for a, _ in box], [c for _, c in box]
    delta: Interval = ([], [])
    for ell, (diff, shift, W2) in enumerate(differences, 1):
        if ell == 1:
            delta = affine_extremes(diff, shift, lo, hi)
            continue
        scalings = [d for _, _, d in alignment[ell - 2]]
        for end in z2[ell - 2]:
            charge_products(scalings, [end[j] for _, j, _ in alignment[ell - 2]], "placing theta2's intervals",
                            accumulate=False)
        placed = ([d * z2[ell - 2][0][j] for _, j, d in alignment[ell - 2]],
                  [d * z2[ell - 2][1][j] for _, j, d in alignment[ell - 2]])
        gap = _gap(delta, z1[ell - 2], placed)
        e1 = affine_extremes(diff, shift, *relu_interval(z1[ell - 2]))
        e2 = affine_extremes(W2, [Fraction(0)] * len(shift), *gap)
        for x, y in zip(e1, e2, strict=True):
            charge_products(x, y, "the differences' bounds", accumulate=False)
        delta = ([a + c for a, c in zip(e1[0], e2[0], strict=True)], [a + c for a, c in zip(e1[1], e2[1], strict=True)])
    if t1.output_relu:
        delta = _gap(delta, z1[t1.depth], z2[t1.depth])
    return max(max(-a, c) for a, c in zip(*delta, strict=True))


def _bound(t1: DeepNet, t2: DeepNet, alignment: list | None, differences: list | None, box: list) -> Fraction:
    """U on a box: U_plain, or min(U_plain, U_aligned) with an alignment and its ``differences``."""
    z1, out1 = plain_intervals(t1, box)
    z2, out2 = plain_intervals(t2, box)
    charge_products(out1[1], out2[0], "the plain bound", accumulate=False)
    charge_products(out1[0], out2[1], "the plain bound", accumulate=False)
    computed = max(max(c - b, d - a) for a, c, b, d in zip(*out1, *out2, strict=True))
    return computed if differences is None else min(computed, _aligned(t1, alignment, differences, z1, z2, box))


def halvings(value: object, box: list, leaf: Callable[[object, str], object], weights: int,
             max_work: int = MAX_WORK, bounded: bool = False, cost: Callable[[object, str], int] | None = None):
    """The nodes of a preorder tree of halvings of ``box`` (``["split", q]``: the current region's coordinate q
    halved at its midpoint, the left half next; ``["leaf", v]``: the current region is a leaf; ``leaf`` reads v), as
    (path, kind, v, region, inherited) in order. The tree must end when every region is a leaf, so the leaves cover
    the box. With ``bounded`` a split may state its region's bound too (``["split", q, v]``), and ``inherited`` is
    the least bound the node's ancestors state (None when none does; ``inherits``): a node whose v is at least that
    needs no work of its own. With ``cost``, every node that states a v states after it the size of its region's
    work too (``["leaf", v, K]``, ``["split", q, v, K]``), which ``cost(K, where)`` reads and prices; the tuples
    yielded end with K (None otherwise). Bounds, before the walk: MAX_NODES nodes, the nodes that need work (the
    leaves, or with ``bounded`` those whose v is below what they inherit) × ``weights`` (with ``cost``: the sum of
    their prices) ≤ ``max_work``, nodes × (m + 1) ≤ MAX_WORK; MAX_DEPTH nested halvings, none of a coordinate of
    width 0."""
    tree = seq(value, None, "proof.tree")
    if len(tree) > MAX_NODES:
        raise Reject(f"beyond the checker's bounds: {len(tree)} nodes (at most {MAX_NODES})")
    nodes = []
    for s, item in enumerate(tree):
        where = f"proof.tree[{s}]"
        if not isinstance(item, list) or not item or item[0] not in ("split", "leaf"):
            raise Reject(f"{where}: a node is [\"split\", q] or [\"leaf\", value]")
        more = cost is not None
        if item[0] == "leaf":
            _, v, *size = seq(item, 3 if more else 2, where)
            nodes.append(("leaf", None, leaf(v, where), size[0] if size else None))
        else:
            stated = bounded and len(item) == (4 if more else 3)
            kind, q, *rest = seq(item, (4 if more else 3) if stated else 2, where)
            nodes.append(("split", index(q, len(box), where), leaf(rest[0], where) if rest else None,
                          rest[1] if len(rest) > 1 else None))
    inherited = inherits(nodes)
    inherited += [None] * (len(nodes) - len(inherited))  # nodes past the tree's end: the walk rejects them
    works = [(v is not None and (held is None or v < held)) if bounded else kind == "leaf"
             for (kind, _, v, _), held in zip(nodes, inherited, strict=True)]
    if cost is None:
        work = sum(works) * weights
    else:  # every stated count read and checked; the working nodes' prices summed
        prices = [cost(size, f"proof.tree[{s}]") if v is not None else 0 for s, (_, _, v, size) in enumerate(nodes)]
        work = sum(price for price, busy in zip(prices, works, strict=True) if busy)
    if work > max_work or len(nodes) * (len(box) + 1) > MAX_WORK:
        raise Reject(f"beyond the checker's bounds: {sum(works)} regions to bound, {work} products (at most "
                     f"{max_work}), or {len(nodes)} nodes × {len(box) + 1} coordinates (at most {MAX_WORK})")
    stack = [(box, 0)]
    for s, ((kind, q, v, size), held) in enumerate(zip(nodes, inherited, strict=True)):
        if not stack:
            raise Reject(f"proof.tree[{s}]: the tree goes on after every region is a leaf")
        region, depth = stack.pop()
        yield f"proof.tree[{s}]", kind, v, region, held, size
        if kind == "leaf":
            continue
        lo, hi = region[q]
        if lo == hi or depth >= MAX_DEPTH:
            raise Reject(f"proof.tree[{s}]: a split of a coordinate of width 0, or deeper than {MAX_DEPTH}")
        mid = (lo + hi) / 2
        stack.append(([*region[:q], (mid, hi), *region[q + 1:]], depth + 1))
        stack.append(([*region[:q], (lo, mid), *region[q + 1:]], depth + 1))
    if stack:
        raise Reject(f"proof.tree: {len(stack)} regions of the box are left without a leaf")


def inherits(nodes: list[tuple[str, object, object]]) -> list:
    """For each node (kind, q, v) of a preorder tree, the least v stated by its ancestors (None when none states
    one), by the tree's shape alone: a walk of the nodes with a stack of what each open region holds. Cost
    O(nodes) comparisons of stated bounds. Nodes past the tree's end are left out (the walk rejects them)."""
    out = []
    stack: list = [None]
    for kind, _, v, *_ in nodes:
        if not stack:
            break
        held = stack.pop()
        out.append(held)
        if kind == "split":
            mine = v if v is not None and (held is None or v < held) else held
            stack += [mine, mine]
    return out


def sizes_bounded(t1: DeepNet, t2: DeepNet, numbers: dict[str, list[Fraction]]) -> None:
    weights = sum(len(row) + 1 for t in (t1, t2) for W in t.W for row in W)
    if weights > MAX_WEIGHTS:
        raise Reject(f"beyond the checker's bounds: {weights} weights (at most {MAX_WEIGHTS})")
    seen: set[int] = set()
    total = 0
    entries = itertools.chain(*numbers.values(), *(itertools.chain(*itertools.chain(*t.W), *t.b) for t in (t1, t2)))
    for x in entries:
        if x.denominator not in seen:
            seen.add(x.denominator)
            total += x.denominator.bit_length()
    if total * (max(t1.depth, t2.depth) + 2) > MAX_GROWTH_BITS:
        raise Reject(f"beyond the checker's bounds: the distinct denominators ({total} bits) times the depth exceed "
                     f"{MAX_GROWTH_BITS} bits")
    for where, xs in numbers.items():
        worst = max((x.numerator.bit_length() for x in xs), default=0)
        if worst > MAX_NUMERATOR_BITS:
            raise Reject(f"beyond the checker's bounds: a numerator of {worst} bits in {where} (at most "
                         f"{MAX_NUMERATOR_BITS})")


def check_deep_distance(F, nets: list[DeepNet], proof: object, rep: Report, own_meter: bool = True) -> None:
    """A ``deep_distance_bound`` certificate (certificates/FORMAT.md); without ``own_meter`` a symbolic tree is
    charged to the caller's meter (a certificate of several boxes, ``kinds.vnnlib``), not to one of its own."""
    if not isinstance(F, QQ):
        raise Reject("deep_distance_bound certificates are over QQ")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the two networks differ in input or output size")
    equivalent = isinstance(proof, dict) and "equivalence" in proof
    tree = isinstance(proof, dict) and "tree" in proof and not equivalent
    if isinstance(proof, dict) and proof.get("statement") in (SYMBOLIC_STATEMENT, ZONOTOPE_STATEMENT) and \
            not equivalent:
        _check_symbolic(nets, proof, rep, own_meter)
        return
    required = {"box", "upper", "lower", "equivalence", "statement"} if equivalent else \
        {"box", "alignment", "upper", "lower", "witness", "statement"} | ({"tree"} if tree else set())
    if isinstance(proof, dict) and "epsilon" in proof:
        required |= {"epsilon", "verdict"}
    p = keys(proof, required, "proof")
    statement = (LEMMA, PHASES) if equivalent else (TREE_STATEMENT,) if tree else (STATEMENT,)
    if p["statement"] not in statement:
        raise Reject(f"proof must cite {' or '.join(map(repr, statement))}")
    box = parse_box(p["box"], t1.m)
    upper, lower = rational(p["upper"]), rational(p["lower"])
    if equivalent:
        if upper != 0 or lower != 0:
            raise Reject("an equivalence proof gives L = U = 0")
        check_deep_equivalent(F, nets, p["equivalence"], rep)
        rep.facts.append(f"distance 0 on every box: f1 = f2 ({p['statement']}); box {box_text(box)}")
        epsilon_verdict(p, lower, upper, rep)
        return
    _stated(upper, "proof.upper")
    _stated(lower, "proof.lower")
    x = [rational(y) for y in seq(p["witness"], t1.m, "proof.witness")]
    alignment = None
    if p["alignment"] is not None:
        if t1.depth != t2.depth or t1.output_relu != t2.output_relu:
            raise Reject("an alignment needs the same depth and the same output ReLU on both networks")
        alignment = _alignment(t1, t2, p["alignment"])
    scalings = [d for layer in alignment or [] for _, _, d in layer]
    sizes_bounded(t1, t2, {"proof.box": [y for b in box for y in b], "proof.alignment": scalings, "proof.witness": x})
    differences = None if alignment is None else _differences(t1, t2, alignment)
    if tree:
        weights = sum(len(row) + 1 for t in (t1, t2) for W in t.W for row in W)
        box_numbers_short([y for b in box for y in b], "the box")
        leaves = _leaves_bounded(p["tree"], box, upper, lambda region: _bound(t1, t2, alignment, differences, region),
                                 weights, MAX_DISTANCE_WORK)
        rep.checks["deep distance: U recomputed on every leaf of the halvings, which cover the box"] += leaves
    else:
        computed = _bound(t1, t2, alignment, differences, box)
        if upper < computed:
            raise Reject(f"the stated upper bound is below the one the rule gives ({show(computed)})")
    if not tree:
        rep.checks["deep distance: U recomputed from the box" + (" and the alignment" if alignment else "")] += 1
    _witness_below(t1, t2, x, box, lower, rep)
    rep.facts.append(f"sup over the box of the output difference in [{show(lower)}, {show(upper)}]; box "
                     f"{box_text(box)}" + (f", {leaves} leaves" if tree else ""))
    epsilon_verdict(p, lower, upper, rep)


def _check_symbolic(nets: list[DeepNet], proof: object, rep: Report, own_meter: bool = True) -> None:
    """The symbolic-difference rule (``kinds.symbolic``), or the zonotope rule (``kinds.zonotope``, with the stated
    cap "columns" on the error symbols of a region), on every leaf of a tree of halvings: two networks of the same
    widths without an output ReLU, θ2 moved by the stated alignment (null: the identity, as for a pruned, quantized
    or perturbed copy)."""
    t1, t2 = nets
    zonotopes = proof.get("statement") == ZONOTOPE_STATEMENT
    required = {"box", "alignment", "upper", "lower", "witness", "statement", "tree"} | \
        ({"columns"} if zonotopes else set())
    if "epsilon" in proof:
        required |= {"epsilon", "verdict"}
    p = keys(proof, required, "proof")
    if t1.output_relu or t2.output_relu or [len(b) for b in t1.b] != [len(b) for b in t2.b]:
        raise Reject("the symbolic rule reads two networks of the same widths without an output ReLU")
    alignment = None if p["alignment"] is None else _alignment(t1, t2, p["alignment"])
    box = parse_box(p["box"], t1.m)
    upper, lower = rational(p["upper"]), rational(p["lower"])
    _stated(upper, "proof.upper")
    _stated(lower, "proof.lower")
    x = [rational(y) for y in seq(p["witness"], t1.m, "proof.witness")]
    scalings = [d for layer in alignment or [] for _, _, d in layer]
    sizes_bounded(t1, t2, {"proof.box": [y for b in box for y in b], "proof.alignment": scalings, "proof.witness": x})
    box_numbers_short([y for b in box for y in b], "the box")
    widths = [t1.m, *(len(b) for b in t1.b)]
    W2, b2 = (t2.W, t2.b) if alignment is None else _moved(t2, alignment)
    for W in (*t1.W, *W2, *t1.b, *b2):  # each weight brought to fixed point: a product by 2^64 and a floor
        entries = [w for row in W for w in row] if W and isinstance(W[0], list) else list(W)
        charge_products(entries, [1 << symbolic.FRACTION_BITS] * len(entries), "the weights in fixed point",
                        accumulate=False)
    free = sum(1 for a, c in box if a < c)
    if zonotopes:
        columns = p["columns"]
        if type(columns) is not int or not 0 <= columns <= zonotope.MAX_COLUMNS:
            raise Reject(f"proof.columns must be an integer from 0 to {zonotope.MAX_COLUMNS}")
        rule = zonotope.Rule(list(zip(t1.W, t1.b, strict=True)), list(zip(W2, b2, strict=True)), columns)
        products = zonotope.region_products(widths, free, columns)

        def cost(size: object, where: str) -> int:  # a region's stated symbols, at most the proof's cap
            if type(size) is not int or not 0 <= size <= columns:
                raise Reject(f"{where}: a zonotope node states its region's error symbols, an integer from 0 to "
                             f"proof.columns ({columns})")
            return zonotope.region_products(widths, free, size)
    else:
        rule = symbolic.Rule(list(zip(t1.W, t1.b, strict=True)), list(zip(W2, b2, strict=True)))
        products = symbolic.region_products(widths, free)
    with metered(SYMBOLIC_BUDGET) if own_meter else contextlib.nullcontext():  # the tree's own meter
        leaves = _leaves_bounded(p["tree"], box, upper, rule.bound, products, MAX_SYMBOLIC_WORK, bounded=True,
                                 cost=cost if zonotopes else None)
    how = f"zonotopes (at most {p['columns']} error symbols a region)" if zonotopes else "symbolic differences"
    rep.checks[f"deep distance: U by {how} on every leaf of the halvings, which cover the box"] += leaves
    _witness_below(t1, t2, x, box, lower, rep)
    rep.facts.append(f"sup over the box of the output difference in [{show(lower)}, {show(upper)}]; box "
                     f"{box_text(box)}, {leaves} leaves, {how}")
    epsilon_verdict(p, lower, upper, rep)


def _leaves_bounded(tree: object, box: list, upper: Fraction, rule: Callable[..., Fraction], per_leaf: int,
                    max_work: int, bounded: bool = False, cost: Callable[[object, str], int] | None = None) -> int:
    """Every leaf of the tree of halvings states a bound at least ``rule`` on its region, and U at least every
    stated bound; the number of leaves. With ``bounded`` a split may state its region's bound, and a node's stated
    bound need only be at least the least of the rule's on its region and those its ancestors state (the rule is
    computed only where the stated bound is below the latter). With ``cost``, each stating node states its work's
    size K too (``halvings``), and the rule is ``rule(region, K)``. Bounds as ``halvings``."""
    leaves = 0
    for where, kind, stated, region, inherited, size in halvings(tree, box, _leaf_bound, per_leaf, max_work, bounded,
                                                                 cost):
        if stated is None:
            continue
        if inherited is None or stated < inherited:
            value = rule(region) if cost is None else rule(region, size)
            if stated < value:
                raise Reject(f"{where}: the stated bound of the {kind} is below the one the rule gives on its "
                             f"region ({show(value)})")
        if kind == "leaf":
            if upper < stated:
                raise Reject(f"the stated upper bound is below the bound stated at {where} ({show(stated)})")
            leaves += 1
    return leaves


def _witness_below(t1: DeepNet, t2: DeepNet, x: list, box: list, lower: Fraction, rep: Report) -> None:
    """The witness lies in the box and L ≤ ‖f1(x*) − f2(x*)‖∞ there, evaluated exactly."""
    if any(not lo <= y <= hi for y, (lo, hi) in zip(x, box, strict=True)):
        raise Reject("the witness lies outside the box")
    value = max(abs(a - b) for a, b in zip(t1.evaluate(x), t2.evaluate(x), strict=True))
    if lower > value:
        raise Reject(f"the stated lower bound exceeds ‖f1(x*) − f2(x*)‖∞ at the witness ({show(value)})")
    rep.checks["deep distance: L ≤ ‖f1(x*) − f2(x*)‖∞ evaluated exactly, witness in the box"] += 1


def _leaf_bound(value: object, where: str) -> Fraction:
    """A leaf's stated bound: an exact rational string of at most MAX_STATED_BITS bits, refused unread when longer
    than such a number can be written."""
    if not isinstance(value, str):
        raise Reject(f"{where}: a leaf's bound is an exact rational string")
    if len(value) > 2 * (MAX_STATED_BITS * 30103 // 100000 + 2) + 2:
        raise Reject(f"beyond the checker's bounds: {where}: a stated bound longer than {MAX_STATED_BITS}-bit "
                     "numbers can be written")
    charge(4 + len(value) ** 2 // 100_000, "reading the leaves' bounds")  # decimal to binary is quadratic
    bound = rational(value)
    _stated(bound, where)
    return bound


def _stated(x: Fraction, where: str) -> None:
    """A stated bound of at most MAX_STATED_BITS bits, numerator and denominator, or a rejection naming it."""
    bits = max(x.numerator.bit_length(), x.denominator.bit_length())
    if bits > MAX_STATED_BITS:
        raise Reject(f"beyond the checker's bounds: {where} has a numerator or denominator of {bits} bits (at most "
                     f"{MAX_STATED_BITS}; a stated bound may be rounded outward to a short dyadic)")


def box_numbers_short(xs: list[Fraction], where: str) -> None:
    """Box numbers of at most MAX_BOX_BITS bits, numerator and denominator: a midpoint costs O(bits)."""
    if any(max(abs(x.numerator), x.denominator).bit_length() > MAX_BOX_BITS for x in xs):
        raise Reject(f"beyond the checker's bounds: a number of {where} beyond {MAX_BOX_BITS} bits")

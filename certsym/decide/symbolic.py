"""Symbolic differences (MATH.md Part IV): an upper bound on sup over a box of ‖f1(x) − f2(x)‖∞ for two networks of
the same widths without an output ReLU (a pruned, quantized or perturbed copy), and the halvings of the box that
bring it below ε or near the witness's value.

The rule is certificates/FORMAT.md's "symbolic differences": every pre-activation of both networks and every
difference d_ℓ = a1_ℓ − a2_ℓ gets a lower and an upper affine form in x, layer by layer; the difference's forms
come from the identity d_ℓ = W2_ℓ e_{ℓ−1} + (W1_ℓ − W2_ℓ) h1_{ℓ−1} + (b1_ℓ − b2_ℓ) (or from a1 − a2 directly,
whichever is tighter), where e = σ(a1) − σ(a2) is relaxed by the pair inequalities min(d, 0) ≤ e ≤ max(d, 0) and
their chords, and each σ(a) by the triangle relaxation. The difference of two close networks is then bounded by
forms of the small ΔW and of e, not by the difference of two wide ranges: the correlation that intervals lose.

Here the rule runs in binary64 on numpy, only to *search*: which halvings to make and what to state. The stated
leaf bounds are the float ones raised by a relative margin and rounded up to short dyadics; the independent checker
recomputes the rule exactly (in fixed point with outward rounding) on every leaf and accepts only stated bounds at
least as large, and the producer replays the certificate before it states a verdict. Cost: per region, eight
products of a layer's weights with forms of m + 1 columns, O(Σ_ℓ n_ℓ n_{ℓ−1} (m + 1)) flops; a halving is chosen
by bounding both halves of every coordinate when m ≤ TRY_ALL, else of the widest ones by first-layer influence.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from flint import fmpq

from certsym.core.deep import LayeredNetwork
from certsym.decide.deadline import Deadline
from certsym.numbers import QQ, outward

# the checker's bounds (certificates/FORMAT.md): a distance tree's regions to bound × region_products ≤
# MAX_SYMBOLIC_WORK, on the tree's own meter; a top-1 tree's leaves × margin_products, charged at PRODUCTS_PER_UNIT a
# unit against the replay's WORK_BUDGET of 2·10^7 units. Trees are sized to SHARE of these (the long products, the
# witness, the weights' reading and the rest take the remainder)
MAX_SYMBOLIC_WORK, PRODUCTS_PER_UNIT, WORK_BUDGET, SHARE = 2 * 10**9, 20, 20_000_000, 0.8
BAND = 0.03  # the relative margin of a float bound, and the band under the top where the checker's number is taken
TREE_SHARE = 0.95  # a distance tree's meter holds its regions alone (the witness and the weights are charged apart)
TRY_ALL = 8  # input dimensions up to which every coordinate's halving is tried
MARGIN = 2.0**-30  # the relative margin added to a float bound before it is stated (the exact rule differs by less)
ABSOLUTE = 2.0**-40  # added to every stated bound (a bound of 0 is stated as about 10^−12)
TOLERANCE = 2.0**-36  # relative: a range end closer to 0 counts as 0 (the neuron unstable), as the checker may see it

Box = list[tuple[fmpq, fmpq]]


def applies(theta1: LayeredNetwork, theta2: LayeredNetwork) -> bool:
    """Whether the rule reads the pair: rational weights, the same widths, no output ReLU."""
    return all(isinstance(t.field, type(QQ)) and not t.output_relu for t in (theta1, theta2)) and \
        theta1.widths == theta2.widths


def region_products(widths: tuple[int, ...], free: int) -> int:
    """The products the checker counts for one region with ``free`` coordinates of positive width: 8 n_1 (m + 1)
    for the first layer, 16 n_ℓ (n_{ℓ−1} + 1)(free + 1) for each later one."""
    return 8 * widths[1] * (widths[0] + 1) + sum(16 * n * (p + 1) * (free + 1)
                                                 for p, n in zip(widths[1:], widths[2:], strict=False))


def margin_products(widths: tuple[int, ...], free: int) -> int:
    """The products the checker counts for one network's margins on one region: 4 n_1 (m + 1), then
    4 n_ℓ (n_{ℓ−1} + 1)(free + 1) per later hidden layer and 2 (k − 1)(n_L + 1)(free + 1)."""
    k, hidden = widths[-1], widths[:-1]
    return 4 * hidden[1] * (hidden[0] + 1) + sum(4 * n * (p + 1) * (free + 1) for p, n in
                                                zip(hidden[1:], hidden[2:], strict=False)) + \
        2 * (k - 1) * (hidden[-1] + 1) * (free + 1)


def max_leaves(widths: tuple[int, ...], free: int) -> int:
    """The most leaves of a distance tree whose replay fits the checker's bounds (TREE_SHARE of MAX_SYMBOLIC_WORK): the
    checker bounds at most one region per leaf (``_preorder``: a leaf's own, or the one split it inherits from;
    splits are shared)."""
    return max(1, int(TREE_SHARE * MAX_SYMBOLIC_WORK) // region_products(widths, free))


class Rule:
    """The rule in binary64 for one pair: the layers as float arrays, split by sign, with W1 − W2."""

    def __init__(self, theta1: LayeredNetwork, theta2: LayeredNetwork):
        def arrays(t: LayeredNetwork) -> list[tuple[np.ndarray, np.ndarray]]:
            return [(np.array([[float(x) for x in row] for row in layer.W], dtype=np.float64).reshape(
                layer.width, -1), np.array([float(x) for x in layer.b])) for layer in t.layers]

        self.l1, self.l2 = arrays(theta1), arrays(theta2)
        self.delta = [(np.array([[float(x - y) for x, y in zip(r1, r2, strict=True)] for r1, r2 in
                                 zip(a.W, c.W, strict=True)]).reshape(a.width, -1),
                       np.array([float(x - y) for x, y in zip(a.b, c.b, strict=True)]))
                      for a, c in zip(theta1.layers, theta2.layers, strict=True)]
        self.m = theta1.m

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> float:
        """The rule's bound on the box [lo, hi], in binary64: forms in the coordinates of positive width, the
        others constants. Cost O(n_1 m + Σ_{ℓ≥2} n_ℓ n_{ℓ−1} (free + 1))."""
        free, m, low, high = _space(lo, hi)
        fixed = lo[~free]

        def first(W: np.ndarray, b: np.ndarray) -> np.ndarray:
            return np.hstack([W[:, free], (W[:, ~free] @ fixed + b)[:, None]])

        def combine(W: np.ndarray, b: np.ndarray | None, L: np.ndarray, U: np.ndarray, upper: bool) -> np.ndarray:
            pos, neg = np.maximum(W, 0), np.minimum(W, 0)
            out = pos @ U + neg @ L if upper else pos @ L + neg @ U
            if b is not None:
                out[:, m] += b
            return out

        Le = Ue = L1 = U1 = L2 = U2 = None
        last = len(self.l1) - 1
        for ell, ((W1, b1), (W2, b2), (dW, db)) in enumerate(zip(self.l1, self.l2, self.delta, strict=True)):
            if ell == 0:
                La1 = Ua1 = first(W1, b1)
                La2 = Ua2 = first(W2, b2)
                Ld = Ud = first(dW, db)
            else:
                La1, Ua1 = combine(W1, b1, L1, U1, False), combine(W1, b1, L1, U1, True)
                La2, Ua2 = combine(W2, b2, L2, U2, False), combine(W2, b2, L2, U2, True)
                Ld = combine(dW, db, L1, U1, False) + combine(W2, None, Le, Ue, False)
                Ud = combine(dW, db, L1, U1, True) + combine(W2, None, Le, Ue, True)
            lower, upper = La1 - Ua2, Ua1 - La2
            Ld = np.where((low(lower) > low(Ld))[:, None], lower, Ld)
            Ud = np.where((high(upper) < high(Ud))[:, None], upper, Ud)
            if ell == last:
                return float(max(high(Ud).max(), (-low(Ld)).max()))
            r1, r2 = (low(La1), high(Ua1)), (low(La2), high(Ua2))
            L1, U1 = _relu(La1, Ua1, *r1)
            L2, U2 = _relu(La2, Ua2, *r2)
            Le, Ue = _pair(La1, Ua1, La2, Ua2, Ld, Ud, r1, r2, (low(Ld), high(Ud)))
        raise AssertionError("a network has an output layer")  # pragma: no cover


def _space(lo: np.ndarray, hi: np.ndarray):
    """The forms' variables (the coordinates of positive width) and their extremes over the box."""
    free = hi > lo
    m = int(free.sum())
    xl, xh = lo[free], hi[free]

    def low(F: np.ndarray) -> np.ndarray:
        return (F[:, :m] * np.where(F[:, :m] >= 0, xl, xh)).sum(axis=1) + F[:, m]

    def high(F: np.ndarray) -> np.ndarray:
        return (F[:, :m] * np.where(F[:, :m] >= 0, xh, xl)).sum(axis=1) + F[:, m]

    return free, m, low, high


def leading_class(layers: list[tuple[np.ndarray, np.ndarray]], lo: np.ndarray, hi: np.ndarray) -> int | None:
    """The class c whose margins f_c − f_j (j ≠ c) have lower forms with minima > 0 over the box [lo, hi] (the
    checker's ``symbolic.leads``: the last hidden layer's forms, then the rows W_c − W_j), in binary64 with a
    relative tolerance; None when no class does. Cost: one pass of forms through the hidden layers, and k rows."""
    free, m, low, high = _space(lo, hi)
    L = U = None
    for ell, (W, b) in enumerate(layers[:-1]):
        if ell == 0:
            La = Ua = np.hstack([W[:, free], (W[:, ~free] @ lo[~free] + b)[:, None]])
        else:
            pos, neg = np.maximum(W, 0), np.minimum(W, 0)
            La, Ua = pos @ L + neg @ U, pos @ U + neg @ L
            La[:, m] += b
            Ua[:, m] += b
        L, U = _relu(La, Ua, low(La), high(Ua))
    W, b = layers[-1]
    if L is None:  # pragma: no cover - a layered network has a hidden layer
        return None
    for c in range(len(b)):
        rows = W[c] - np.delete(W, c, axis=0)
        pos, neg = np.maximum(rows, 0), np.minimum(rows, 0)
        F = pos @ L + neg @ U
        F[:, m] += b[c] - np.delete(b, c)
        least = low(F)
        if (least > TOLERANCE * (1 + np.abs(least) + np.abs(high(F)))).all():
            return c
    return None


def _chord(F: np.ndarray, s: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """s (F − shift), row by row."""
    out = F * s[:, None]
    out[:, -1] -= s * shift
    return out


def _tolerance(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How far from 0 a float range end must be for a neuron to count as stable here: the checker's fixed point
    and outward roundings move ends by far less, so a neuron this rule calls stable is stable there too (one the
    checker calls stable and this rule not only makes the stated bound looser)."""
    return TOLERANCE * (1 + np.abs(lo) + np.abs(hi))


def _relu(La: np.ndarray, Ua: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triangle relaxation of h = σ(a), rows by the neuron's range [lo, hi]."""
    tol = _tolerance(lo, hi)
    point = hi <= lo  # a neuron of one value: active or inactive by its sign, whatever the tolerance
    active, inactive = (lo >= tol) | (point & (lo >= 0)), (hi <= -tol) | (point & (lo < 0))
    unstable = ~active & ~inactive
    s = np.where(unstable, hi / np.where(unstable, hi - lo, 1), 0)
    U = np.where(active[:, None], Ua, np.where(unstable[:, None], _chord(Ua, s, lo), 0))
    L = np.where((active | (unstable & (hi >= -lo)))[:, None], La, 0)
    return L, U


def _pair(La1, Ua1, La2, Ua2, Ld, Ud, r1, r2, rd) -> tuple[np.ndarray, np.ndarray]:
    """The relaxation of e = σ(a1) − σ(a2), rows by the ranges of a1, a2 and d (cases in order, as the rule)."""
    (l1, u1), (l2, u2), (dl, du) = r1, r2, rd
    width = np.where(du > dl, du - dl, 1)
    t1, t2, td = _tolerance(l1, u1), _tolerance(l2, u2), _tolerance(dl, du)
    cases = [(l1 >= t1) & (l2 >= t2), (u1 <= -t1) & (u2 <= -t2), (l1 >= t1) & (u2 <= -t2),
             (u1 <= -t1) & (l2 >= t2), dl >= td, du <= -td]
    zero = np.zeros_like(Ld)
    lows = [Ld, zero, La1, -Ua2, zero, Ld, _chord(Ld, -dl / width, du)]
    highs = [Ud, zero, Ua1, -La2, Ud, zero, _chord(Ud, du / width, dl)]
    L, U = lows[-1].copy(), highs[-1].copy()
    taken = np.zeros(len(l1), dtype=bool)
    for case, lo_f, hi_f in zip(cases, lows, highs, strict=False):
        pick = case & ~taken
        L[pick], U[pick] = lo_f[pick], hi_f[pick]
        taken |= case
    return L, U


@dataclass
class _Node:
    box: Box
    upper: float  # the rule's float bound on the box
    bound: float  # the bound that holds on it: the least of its own and its ancestors'
    split: int | None = None
    children: tuple = ()
    size: int | None = None  # a zonotope rule's error symbols on the box, stated beside its bound


def symbolic_tree(rule: Rule, box: Box, stop: Callable[[float], str | None], leaves_cap: int, deadline: Deadline,
                  progress: Callable[[str], None] | None = None,
                  witness: Callable[[Box], None] | None = None,
                  exact: Callable[[Box], fmpq] | None = None) -> tuple[list[list], fmpq, int, str]:
    """Halve the leaf of largest bound until ``stop(U)`` names a reason (ε reached, the target, a witness above ε),
    ``leaves_cap`` leaves or the deadline; ``witness(region)`` is called on each new region (the caller's search
    for L). A region's bound is the least of the rule's on it and its ancestors' (the rule is not monotone under
    halving: the chords of a half can be looser than the whole's), so a halving never loses what its region had.
    Returns the preorder tree (``_preorder``; ``exact`` the checker's rule, for the bounds near the top), the stated
    U, the regions bounded and the reason it stopped. Cost: a bound per region tried (2m per halving when
    m ≤ TRY_ALL, else 4), and ``exact`` on the stated regions within BAND of the top."""
    m = len(box)

    sizes: dict[int, int] = {}  # a zonotope rule's symbols per region tried, by the region's id

    def value(region: Box) -> float:
        lo = np.array([float(a) for a, _ in region])
        hi = np.array([float(c) for _, c in region])
        out = rule.bound(lo, hi)
        if hasattr(rule, "last_columns"):  # stated beside the bound, with room for the fixed point's choices
            sizes[id(region)] = min(rule.last_columns + 2, rule.columns)
        return out

    influence = np.abs(rule.l1[0][0]).sum(axis=0) + np.abs(rule.l2[0][0]).sum(axis=0)
    first = value(box)
    root = _Node(box, first, first, size=sizes.get(id(box)))
    root_widths = [float(c - a) or 1.0 for a, c in box]
    heap = [(-root.bound, 0, root)]
    count, regions = 0, 1
    while True:
        reason = stop(-heap[0][0])
        if reason is None and deadline.expired():
            reason = "the time budget"
        if reason is None and len(heap) + 1 > leaves_cap:
            reason = "the checker's bounds"
        if reason is not None:
            break
        node = heap[0][2]
        widths = [float(c - a) for a, c in node.box]
        if hasattr(rule, "split"):  # the rule's own choice (zonotopes: the smear)
            candidates = [rule.split(np.array([float(a) for a, _ in node.box]),
                                     np.array([float(c) for _, c in node.box]))]
        elif m <= TRY_ALL:
            candidates = [q for q in range(m) if widths[q] > 0]
        else:
            candidates = sorted(range(m), key=lambda q: -widths[q] * influence[q])[:2]
        tried = []
        for q in candidates:
            parts = halves(node.box, q)
            bounds = [value(h) for h in parts]
            tried.append((q, bounds, [min(u, node.bound) for u in bounds], parts))
            regions += 2
        # the halving whose halves bound least in all (the largest alone stalls where the worst part of the region
        # needs several coordinates halved: every single halving keeps one half as bad); among near ties the
        # widest coordinate relative to the box, so that no coordinate is halved without end
        least = min((sum(t[2]) for t in tried), default=None)
        near = [t for t in tried if sum(t[2]) <= least * (1 + 2.0**-20)] if least is not None else []
        best = max(near, key=lambda t: widths[t[0]] / root_widths[t[0]]) if near else None
        if best is None:
            reason = "a region no halving shrinks"
            break
        heapq.heappop(heap)
        q, bounds, held, parts = best
        node.split = q
        node.children = tuple(_Node(h, u, v, size=sizes.get(id(h))) for h, u, v in zip(parts, bounds, held,
                                                                                       strict=True))
        for child in node.children:
            count += 1
            heapq.heappush(heap, (-child.bound, count, child))
            if witness is not None:
                witness(child.box)
        if progress is not None and count % 100 == 0:
            progress(f"{len(heap)} leaves, U ≈ {-heap[0][0]:.6g}")
    tree = _preorder(root, exact)
    stated = max(node[1] for node in tree if node[0] == "leaf")
    return tree, stated, regions, reason


def stated_bound(x: float) -> fmpq:
    """A float bound as stated: raised by MARGIN (relative, and absolutely by ABSOLUTE, which covers the checker's
    fixed-point roundings of a bound near 0: some units of 2^−64 per neuron and layer) and rounded up to a short
    dyadic."""
    return outward(fmpq(*float(x + abs(x) * MARGIN + ABSOLUTE).as_integer_ratio()), up=True)


def halves(box: Box, q: int) -> tuple[Box, Box]:
    """The box cut at the midpoint of coordinate q: (x_q ≤ mid, x_q ≥ mid), the order of a preorder tree."""
    lo, hi = box[q]
    mid = (lo + hi) / 2
    return [*box[:q], (lo, mid), *box[q + 1:]], [*box[:q], (mid, hi), *box[q + 1:]]


def _leaves(root: _Node):
    stack = [root]
    while stack:
        node = stack.pop()
        if node.split is None:
            yield node
        stack.extend(node.children)


def _preorder(root: _Node, exact: Callable[[Box], fmpq] | None = None) -> list[list]:
    """The tree as the checker reads it. A split states its own bound (``["split", q, v]``, which the checker
    computes) only where some leaf below needs it: the least bound among a leaf's ancestors, when that is below the
    leaf's own. Every other split is ``["split", q]``. A leaf states the least of its own bound and those of its
    stating ancestors (``["leaf", v]``; computed only where v is its own). The leaves' bounds, and so U, are those
    of inheriting every ancestor, at the cost of the splits that serve.

    A stated bound is the float one raised by BAND (the checker's fixed point can make a discrete choice the float
    rule did not: a neuron's phase or a form, about 1% apart where an end is near 0), except within BAND of the
    top, where it is ``exact`` (the checker's own rule on the region) when given: the bounds that decide U are
    then the checker's, and a replay cannot refuse them. Cost O(nodes × depth), and ``exact`` on the regions of the
    band."""
    own: dict[int, fmpq] = {}
    top = max(node.bound for node in _leaves(root))
    margin = 1 + BAND if exact is not None else 1.0
    needed: set[int] = set()
    walk: list[tuple[_Node, fmpq | None, int | None]] = [(root, None, None)]
    while walk:  # which splits serve a leaf: the one with the least bound above it, when below the leaf's own
        node, best, holder = walk.pop()
        mine = own.setdefault(id(node), stated_bound(node.upper * margin))
        if node.split is None:
            if best is not None and best < mine:
                needed.add(holder)
            continue
        if best is None or mine < best:
            best, holder = mine, id(node)
        walk.extend((child, best, holder) for child in node.children)
    if exact is not None:  # the stated regions near the top: the checker's own number
        band = [root]
        while band:
            node = band.pop()
            band.extend(node.children)
            stating = node.split is None or id(node) in needed
            if stating and node.upper * (1 + BAND) >= top:
                own[id(node)] = outward(exact(node.box), up=True)
    out: list[list] = []
    stack: list[tuple[_Node, fmpq | None]] = [(root, None)]
    while stack:
        node, inherited = stack.pop()
        mine = own[id(node)]
        size = [] if node.size is None else [node.size]  # a zonotope rule's symbols, beside a stated bound
        if node.split is None:
            out.append(["leaf", mine, *size] if inherited is None or mine < inherited else
                       ["leaf", inherited, *([0] if size else [])])
            continue
        states = id(node) in needed and (inherited is None or mine < inherited)
        out.append(["split", node.split, mine, *size] if states else ["split", node.split])
        held = mine if states else inherited
        stack.extend((child, held) for child in reversed(node.children))
    return out

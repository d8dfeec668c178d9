"""Branch and bound for the distance of two aligned networks: the box is split on neuron phases (z ≤ 0 | z ≥ 0)
until U/L reaches a target, ε is decided, or a time or region budget runs out.

Every region carries the exact bound of ``certsym.decide.relaxation`` (rational multipliers, weak duality), so
U = max over the leaves of their bounds is sound whatever the splits; the leaves cover the box because each split
covers its parent (z ≤ 0 or z ≥ 0). L = ‖D(x*)‖∞ at the best point found, evaluated exactly; the points come from
the linear programs' solutions and a floating-point search, which only propose.

The split is the unstable neuron whose relaxation gaps (the triangle's and the pair chords' intercepts, weighted by
their multipliers in the worst objective) contribute most to the worst leaf's bound (as BaBSR does).
Cost: one ``bound_region`` per region (two per split), at most ``max_regions``, and never more than the checker's
work bound for a tree (``ReplayWork``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import fmpq

from certsym.core.network import Network
from certsym.decide.deadline import Deadline, deadline_of
from certsym.decide.relaxation import Key, Pair, Region, RegionBound, bound_region
from certsym.errors import InputError

MAX_REGIONS = 2000  # the region budget when none is given
DEFAULT_SECONDS = 10.0  # the time budget when none is given
# the work a tree is grown to, in the operations of the checker's bound on a tree of regions (3·10^8 of them,
# certificates/FORMAT.md, Bounds), which ``ReplayWork`` counts as the checker does. The checker also charges every
# operation of the walk to its budget of 2·10^7 units, measured at 0.10 to 0.29 units an operation counted here
# (shallow float pairs from 2-8-2 to 784-256-10), so a tree stops at about 0.35 × 4.5·10^7 ≈ 80% of the budget;
# the replay before the verdict (certsym.certify.replay) refuses whatever still would not fit
TREE_WORK = 45 * 10**6
BOUND_OVERHEAD, NODE_WORK, MULTIPLIER_WORK = 1_000, 8, 50  # its fixed charges: per bound, per coordinate, per μ
REFINE_OVERHEAD = 200  # and per refinement


def budget(seconds: float | None, regions: int | None) -> tuple[float, int]:
    """The time and region budgets of a search: ``seconds`` (default DEFAULT_SECONDS; none at all when ``regions``
    alone is given, so that the search depends only on its inputs and its seed) and ``regions`` (default
    MAX_REGIONS). Raises InputError for a budget that is not positive. Cost O(1)."""
    if regions is not None and (isinstance(regions, bool) or not isinstance(regions, int) or regions < 1):
        raise InputError("--regions must be a whole number, at least 1")
    if seconds is None:
        seconds = math.inf if regions is not None else DEFAULT_SECONDS
    if not seconds > 0:
        raise InputError("--seconds must be positive")
    return seconds, MAX_REGIONS if regions is None else regions


class ReplayWork:
    """The checker's region work of a tree as it grows (certificates/FORMAT.md, Bounds): per node
    (N(m + 1)w + 1,000) + 16k + 8(m + 1), per bound N(m + 1)w + 1,000, per refinement with r multipliers
    (1 + r)(m + 1)w + 200, per multiplier 50, with N = n1 + n2 + pairs
    and w = max(1, ⌊(r + e)/128⌋) the words of the rows' integers (r) and the box ends (e), as the checker computes
    them. Cost of the set-up O((n1 + n2) m)."""

    def __init__(self, A: Network, B: Network, pairs: list[tuple[int, int, fmpq]], box: list):
        scale = {j: d for _, j, d in pairs}
        num_bits = den_bits = 1
        for net, side in ((A, "A"), (B, "B")):
            for i in range(net.n):
                row = [*net.A[i], net.b[i]]
                d = scale.get(i, fmpq(1)) if side == "B" else fmpq(1)
                den = math.lcm(*(int(x.q) for x in row))
                num_bits = max(num_bits, max(abs(int(x.p) * (den // int(x.q)) * int(d.p)).bit_length() for x in row))
                den_bits = max(den_bits, (den * int(d.q)).bit_length())
        box_bits = 2 * max((int(y.p).bit_length() + int(y.q).bit_length() for b in box for y in b), default=1)
        words = max(1, (num_bits + den_bits + box_bits) // 128)
        self.per_row = (A.m + 1) * words
        self.per_bound = (A.n + B.n + len(pairs)) * self.per_row + BOUND_OVERHEAD
        self.per_node = self.per_bound + 16 * A.k + NODE_WORK * (A.m + 1)
        self.used = 0

    def cost(self, node: bool, bound: RegionBound | None) -> int:
        """The work of a node (``node``) and of the bounds and refinements of ``bound``, as the checker counts
        it."""
        if bound is None:
            return self.per_node if node else 0
        multipliers = sum(len(bound.multipliers[o]) for o in bound.bounds) + \
            sum(len(r.multipliers) for r in bound.refinements)
        return (self.per_node if node else 0) + len(bound.bounds) * self.per_bound + \
            sum((1 + len(r.multipliers)) * self.per_row + REFINE_OVERHEAD for r in bound.refinements) + \
            MULTIPLIER_WORK * multipliers

    def add(self, node: bool, bound: RegionBound | None) -> None:
        self.used += self.cost(node, bound)

    @property
    def within(self) -> bool:
        return self.used <= TREE_WORK


@dataclass
class Node:
    """A region of the tree: a leaf with its bound, or split on a neuron's phase into (z ≤ 0, z ≥ 0), or on a
    coordinate ("x", q) into its two halves."""

    region: Region
    bound: RegionBound | None = None
    split: Key | None = None
    children: list[Node] = field(default_factory=list)
    # every objective's bound on this region: its own where it was computed, else its nearest ancestor's
    effective: dict[tuple, fmpq] = field(default_factory=dict)
    label: int | None = None  # top-1 agreement: the class the region is bounded for
    shift: bool = False  # top-1 agreement: closed by f1 − f2 being the same for every output

    @property
    def upper(self) -> fmpq:
        return max(self.effective.values())

    def preorder(self) -> list[Node]:
        out, stack = [], [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(node.children))
        return out

    def leaves(self) -> list[Node]:
        return [node for node in self.preorder() if not node.children]


@dataclass
class Search:
    """The tree, the best exact lower bound and its point, and why the search stopped."""

    root: Node
    lower: fmpq
    witness: list[fmpq]
    values: list[fmpq]
    stopped: str
    regions: int
    seconds: float

    @property
    def upper(self) -> fmpq:
        return max(leaf.upper for leaf in self.root.leaves())


def split_key(node: Node, worst: tuple | None = None) -> Key | None:
    """The unstable neuron to split: largest multiplier-weighted intercept in the worst objective (default the one
    with the largest bound); None when the region has no unstable neuron."""
    rb = node.bound
    if worst is None:
        worst = max(node.effective, key=lambda o: node.effective[o])

    score: dict[Key, float] = {}
    unstable = {key for key, _ in rb.unstable}
    for (tag, idx), mu in rb.multipliers.get(worst, {}).items():
        if tag[0] == "t":
            key = (tag[1], idx)
            score[key] = score.get(key, 0.0) + float(mu) * rb.gaps.get(key, 0.0)
        elif tag[0] == "d":
            for key in rb.pair_keys[idx]:
                if key in unstable:
                    score[key] = score.get(key, 0.0) + float(mu) * rb.pair_gaps.get(idx, 0.0)
    if not score:
        score = {key: s for key, s in rb.unstable}
    score = {key: s for key, s in score.items() if key in unstable}
    return max(score, key=lambda key: score[key]) if score else None


def children(region: Region, key: Key) -> list[Region]:
    """The two regions of a split, in the certificate's order: a phase split z ≤ 0, then z ≥ 0; a coordinate
    split ("x", q) x_q ≤ mid, then x_q ≥ mid."""
    if key[0] == "x":
        q = key[1]
        lo, hi = region.box[q]
        mid = (lo + hi) / 2
        return [Region([*region.box[:q], half, *region.box[q + 1:]], dict(region.phases), dict(region.refined))
                for half in ((lo, mid), (mid, hi))]
    return [Region(region.box, {**region.phases, key: phase}, dict(region.refined)) for phase in (-1, 1)]


def _threshold(epsilon: fmpq | None, lower: fmpq, target: float) -> fmpq:
    """The bound below which an objective no longer keeps the search going."""
    if epsilon is not None:
        return epsilon
    return lower * fmpq(int(target * 1000), 1000) if lower > 0 else fmpq(0)


def branch_and_bound(P: Pair, box: list, evaluate: Callable[[list[fmpq]], list[fmpq]], start: list[fmpq],
                     target: float = 1.1, seconds: float = 60.0, max_regions: int = 4000,
                     epsilon: fmpq | None = None, snap: bool = False,
                     progress: Callable[[str], None] | None = None, work: ReplayWork | None = None,
                     deadline: Deadline | None = None) -> Search:
    """Split the worst leaf until U ≤ target·L, or (with ``epsilon``) U ≤ ε or L > ε, or the budget is spent: the
    time (``deadline``, which replaces ``seconds`` when given), ``max_regions``, or the checker's work bound
    (``work``: a split that would pass it is undone). ``Search.stopped`` names what stopped it. Cost: at most
    ``max_regions`` region bounds (module docstring); ``Search.seconds`` is the time taken, on the deadline's
    clock."""
    deadline = deadline_of(seconds, deadline)
    t0 = deadline.clock()
    best = {"lower": fmpq(-1), "x": start, "values": []}

    def consider(x: list[fmpq]) -> None:
        values = evaluate(x)
        value = max(abs(v) for v in values)
        if value > best["lower"]:
            best.update(lower=value, x=x, values=values)

    def propose(point: np.ndarray, region: Region) -> None:
        """The LP's point as the rationals its floats are, then with coordinates near the region's ends moved onto
        them (a vertex of the region, where a linear piece takes its extremes), then (small problems) rounded to
        small denominators; each clipped to the box and evaluated exactly."""
        floats = point.tolist()
        exact = [fmpq(*float(t).as_integer_ratio()) for t in floats]
        candidates = [exact]
        ends = []
        for t, x, (lo, hi) in zip(floats, exact, region.box, strict=True):
            width = float(hi - lo)
            ends.append(lo if abs(t - float(lo)) <= 1e-9 * width else hi if abs(t - float(hi)) <= 1e-9 * width else x)
        candidates.append(ends)
        if snap:
            candidates.append([fmpq(f.numerator, f.denominator) for f in
                               (Fraction(t).limit_denominator(1 << 20) for t in floats)])
        for candidate in candidates:
            consider([min(max(x, lo), hi) for x, (lo, hi) in zip(candidate, box, strict=True)])

    consider(start)
    root = Node(Region(box))
    root.bound = bound_region(P, root.region, snap, deadline=deadline)
    root.effective = dict(root.bound.bounds)
    if work is not None:
        work.add(True, root.bound)
    for point in root.bound.points:
        propose(point, root.region)
    heap = [(-float(root.upper), 0, root)]
    count, regions, stopped = 1, 1, "the target ratio"

    linear = [fmpq(0)]  # the largest bound of the leaves that are linear (no longer in the heap)

    def exact_upper() -> fmpq:
        return max([linear[0], *(node.upper for _, _, node in heap)])

    def done() -> str | None:
        U = max(-heap[0][0] if heap else 0.0, float(linear[0]))
        # floats say when to look; an exact comparison confirms (a verdict is computed from the exact leaf bounds)
        lower = float(best["lower"])
        if epsilon is not None:
            if best["lower"] > epsilon:
                return "L > ε"
            if float(epsilon) >= U and epsilon >= exact_upper():
                return "U ≤ ε"
        elif lower > 0 and lower * target >= U and best["lower"] * fmpq(*float(target).as_integer_ratio()) >= \
                exact_upper():
            return "the target ratio"
        if U <= 0 and exact_upper() <= 0:
            return "U = 0"
        return None

    while True:
        reason = done()
        if reason:
            stopped = reason
            break
        if deadline.expired():
            stopped = "the time budget"
            break
        if regions + 2 > max_regions:
            stopped = "the region budget"
            break
        if not heap:
            stopped = "every region linear"
            break
        _, _, node = heapq.heappop(heap)
        key = split_key(node)
        if key is None:  # linear on the region: the relaxation is exact there, so bound what was inherited
            stale = [o for o in node.effective if o not in node.bound.bounds]
            extra = bound_region(P, node.region, snap, stale, deadline) if stale else None
            if extra is not None and work is not None and work.used + work.cost(False, extra) > TREE_WORK:
                extra = None  # no room in the checker's bound: the inherited bounds stand
            if extra is not None:
                if work is not None:
                    work.add(False, extra)
                node.bound.merge(extra)
                node.effective |= {o: min(b, node.effective[o]) for o, b in extra.bounds.items()}
                for point in extra.points:
                    propose(point, node.region)
            linear[0] = max(linear[0], node.upper)
            continue
        node.split = key
        for child_region in children(node.region, key):
            child = Node(child_region)
            # only the objectives within 3% of the region's worst (and above what would stop the search) are
            # bounded again: a split is spent on the bound that decides U; the others keep the parent's bound,
            # which holds on every subregion, and are bounded again when they become the worst
            level = max(_threshold(epsilon, best["lower"], target), node.upper * fmpq(97, 100))
            open_ = [o for o, b in node.effective.items() if b > level]
            child.bound = bound_region(P, child.region, snap, open_, deadline)
            child.effective = node.effective | {o: min(b, node.effective[o]) for o, b in child.bound.bounds.items()}
            for point in child.bound.points:
                propose(point, child.region)
            node.children.append(child)
            if work is not None:
                work.add(True, child.bound)
        if work is not None and not work.within:  # the checker would refuse the tree: undo the split and stop
            for child in node.children:
                work.used -= work.cost(True, child.bound)
            node.children, node.split = [], None
            stopped = "the checker's work bound"
            break
        for child in node.children:
            count += 1
            heapq.heappush(heap, (-float(child.upper), count, child))
        regions += 2
        if progress and regions % 50 == 1:
            progress(f"{regions} regions, U ≈ {-heap[0][0]:.6g}, L ≈ {float(best['lower']):.6g}")
    return Search(root, best["lower"], best["x"], best["values"], stopped, regions, deadline.clock() - t0)

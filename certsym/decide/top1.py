"""Top-1 agreement of two networks on a box: does ρ(θ1) have the same largest output as ρ(θ2) at every x ∈ B?

Three answers, never a guess:

- AGREE, with a tree of regions covering the box (phase splits z ≤ 0 | z ≥ 0, and coordinate halvings where no
  neuron is left to split). Each leaf names a class c and carries, for both networks and every j ≠ c, an exact bound
  below 0 of the margin f_j − f_c on the leaf (``certsym.decide.relaxation``: rational multipliers, weak duality), so
  c is the unique largest output of both networks at every point of the leaf; or it is a *shift* leaf, with bounds
  ≤ 0 of ±(D_t − D_0) for every t (D = f1 − f2, the neurons paired as in ``certsym.decide.distance.align``): f1 − f2
  is the same for every output there, so both networks have the same set of largest outputs, ties included (this
  closes the regions where the networks coincide, decision boundaries and all). Exactly equivalent networks
  (Theorems 3/4) agree everywhere.
- DIFFER, with a point of the box where both networks have a unique largest output and the two differ, evaluated
  exactly. Both answers hold under any rule for breaking ties.
- UNKNOWN when the budget runs out, or when a leaf no split resolves (a decision boundary both networks share
  exactly, which per-leaf margins cannot certify).

Witnesses are proposed in floating point and then evaluated exactly: random points and corners of the box, the
linear programs' solutions, and, at points near a decision boundary, a linear program over the cell of the point's
activation pattern (both networks are affine on it) that maximizes δ subject to f1_a − f1_l ≥ δ (l ≠ a) and
f2_b − f2_l ≥ δ (l ≠ b) for two classes a ≠ b: the sliver between two nearly equal decision boundaries.

Cost: per region, 2(k − 1) bounds (linear programs of m + unstable variables, exact products O((n1 + n2) m));
per cell programme, m + 1 variables and n1 + n2 + 2(k − 1) dense rows; at most ``max_regions`` regions.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.core.network import Network
from certsym.decide.branch_and_bound import MAX_REGIONS, Node, ReplayWork, children, split_key
from certsym.decide.deadline import Deadline, deadline_of
from certsym.decide.distance import Box, align, box_text, checked_box, floats
from certsym.decide.equivalence import decide
from certsym.decide.relaxation import Pair, Region, bound_region


@dataclass
class ShallowTop1:
    """The answer (``verdict``: "agree", "differ" or "unknown") with its evidence: the tree (``root``, over the
    alignment ``pairs``) or the equivalence proof for "agree"; the witness, both networks' outputs there and their
    classes for "differ"."""

    verdict: str
    box: Box
    pairs: list[tuple[int, int, fmpq]] = field(default_factory=list)
    root: Node | None = None
    equivalence: object = None
    witness: list[fmpq] | None = None
    outputs: tuple[list[fmpq], list[fmpq]] | None = None
    classes: tuple[int, int] | None = None
    stopped: str = ""
    regions: int = 0
    seconds: float = 0.0

    @property
    def leaves(self) -> int:
        """The regions whose margins cover the box (0 without a tree)."""
        return len(self.root.leaves()) if self.root is not None else 0

    @property
    def labels(self) -> list[int]:
        """The classes the leaves certify, sorted."""
        return sorted({leaf.label for leaf in self.root.leaves()}) if self.root is not None else []

    def __repr__(self) -> str:
        return top1_text("ShallowTop1", self.verdict, self.box, self.classes, self.regions, self.stopped)


def top1_text(name: str, verdict: str, box: Box, classes: tuple[int, int] | None, regions: int, stopped: str) -> str:
    """A top-1 answer on one line: the verdict, the box, the witness's classes or the regions and the stop."""
    detail = f", classes {classes[0]} vs {classes[1]} at the witness" if classes is not None else \
        f", {regions} region{'s' * (regions != 1)}" + (f", stopped at {stopped}" if verdict == "unknown" else "")
    return f"{name}({verdict}, box={box_text(box)}{detail})"


def unique_top(values: list) -> int | None:
    """The index of the unique largest entry, or None when the largest is attained twice."""
    best = max(values)
    top = [i for i, v in enumerate(values) if v == best]
    return top[0] if len(top) == 1 else None


def _forward(f: tuple, X: np.ndarray) -> np.ndarray:
    W, b, M, c = f
    return np.maximum(X @ W.T + b, 0) @ M.T + c


def _cell_programme(fa: tuple, fb: tuple, x: np.ndarray, a: int, b: int, lo: np.ndarray,
                    hi: np.ndarray) -> np.ndarray | None:
    """A point of x's activation cell (both patterns fixed, so both networks affine) in the box where class a leads
    f1 and class b leads f2 by the largest δ, if δ > 0 (floating point; the caller evaluates it exactly)."""
    from scipy.optimize import linprog  # loaded on first use, as in relaxation.bound_region

    rows, rhs = [], []
    affine = []
    for W, bias, M, c in (fa, fb):
        z = W @ x + bias
        on = z > 0
        sign = np.where(on, -1.0, 1.0)  # active: −z ≤ 0; inactive: z ≤ 0
        rows.append(sign[:, None] * W)
        rhs.append(-sign * bias)
        affine.append(((M * on) @ W, (M * on) @ bias + c))
    m = len(x)
    G = [np.hstack([np.vstack(rows), np.zeros((sum(len(r) for r in rows), 1))])]
    h = [np.concatenate(rhs)]
    for (L, K), top in zip(affine, (a, b), strict=True):
        others = [t for t in range(len(K)) if t != top]
        # δ − (f_top − f_l) ≤ 0
        G.append(np.hstack([-(L[top] - L[others]), np.ones((len(others), 1))]))
        h.append(K[top] - K[others])
    scale = np.maximum(np.abs(np.vstack(G)).max(axis=1), 1e-300)
    res = linprog(np.r_[np.zeros(m), -1.0], A_ub=np.vstack(G) / scale[:, None], b_ub=np.concatenate(h) / scale,
                  bounds=[*zip(lo, hi, strict=True), (None, 1.0)], method="highs")
    if res.status != 0 or res.x[-1] <= 0:
        return None
    return np.asarray(res.x[:m])


class _Witnesses:
    """Candidate points, evaluated exactly; ``found`` holds the first strict disagreement."""

    def __init__(self, A: Network, B: Network, box: Box):
        self.A, self.B, self.box = A, B, box
        self.fa, self.fb = floats(A), floats(B)
        self.lo = np.array([float(lo) for lo, _ in box])
        self.hi = np.array([float(hi) for _, hi in box])
        self.found: tuple | None = None

    def exact(self, point: np.ndarray) -> bool:
        """Evaluate the point (the rationals its floats are, clipped to the box) exactly."""
        x = [min(max(fmpq(*float(t).as_integer_ratio()), lo), hi) for t, (lo, hi) in zip(point, self.box,
                                                                                          strict=True)]
        o1, o2 = self.A.evaluate(x), self.B.evaluate(x)
        a, b = unique_top(o1), unique_top(o2)
        if a is not None and b is not None and a != b:
            self.found = (x, (o1, o2), (a, b))
            return True
        return False

    def near(self, point: np.ndarray, pairs: list[tuple[int, int]]) -> bool:
        """The cell programme at ``point`` for each (a, b), then the point itself."""
        for a, b in pairs:
            y = _cell_programme(self.fa, self.fb, point, a, b, self.lo, self.hi)
            if y is not None and self.exact(y):
                return True
        return self.exact(point)

    def sample(self, seed: int, count: int = 2000) -> np.ndarray:
        """Random points, corners and the centre of the box; those where the float classes differ, and the ones
        nearest a decision boundary, are examined (cell programmes for their two leading classes)."""
        rng = np.random.default_rng(seed)
        lo, hi = self.lo, self.hi
        X = np.vstack([lo + (hi - lo) * rng.random((count, len(lo))), lo, hi, (lo + hi) / 2,
                       np.where(rng.random((64, len(lo))) < 0.5, lo, hi)])
        F1, F2 = _forward(self.fa, X), _forward(self.fb, X)
        differ = np.flatnonzero(F1.argmax(axis=1) != F2.argmax(axis=1))
        for i in differ[:20]:
            if self.exact(X[i]):
                return X
        if F1.shape[1] > 1:
            top2 = np.sort(F1, axis=1)[:, -2:]
            for i in np.argsort(top2[:, 1] - top2[:, 0])[:5]:
                first, second = (int(t) for t in np.argsort(-F1[i])[:2])
                if self.near(X[i], [(first, second), (second, first)]):
                    break
        return X


def top1(A: Network, B: Network, box: Box | None = None, seed: int = 0, seconds: float = 10.0,
         max_regions: int = MAX_REGIONS, progress: Callable[[str], None] | None = None,
         deadline: Deadline | None = None) -> ShallowTop1:
    """Decide whether ρ(θ1) and ρ(θ2) have the same largest output on the box (module docstring): "agree" with a
    tree of per-leaf margin bounds, "differ" with an exact witness, or "unknown" when the time budget
    (``deadline``, the documented way, which replaces ``seconds``; else ``seconds`` from now), ``max_regions`` or
    the checker's work bound runs out (``ShallowTop1.stopped`` says which). Raises InputError as
    ``certsym.decide.distance.checked_box`` does. Cost: the module's, at most ``max_regions`` regions;
    ``ShallowTop1.seconds`` is the time taken, on the deadline's clock."""
    deadline = deadline_of(seconds, deadline)
    t0 = deadline.clock()
    box = checked_box(A, B, box)
    k = A.k
    seen = _Witnesses(A, B, box)
    X = seen.sample(seed)

    def answer(verdict: str, stopped: str, root: Node | None = None, regions: int = 0, **kw) -> ShallowTop1:
        if seen.found:
            x, outputs, classes = seen.found
            return ShallowTop1("differ", box, witness=x, outputs=outputs, classes=classes,
                               stopped="a disagreement", regions=regions, seconds=deadline.clock() - t0)
        return ShallowTop1(verdict, box, pairs, root=root, stopped=stopped, regions=regions,
                           seconds=deadline.clock() - t0, **kw)

    pairs: list = []
    if seen.found:
        return answer("differ", "")
    if k == 1:  # one output: its largest entry is always class 0
        root = Node(Region(box), label=0)
        return answer("agree", "one output", root, 1)
    if np.array_equal(_forward(seen.fa, X), _forward(seen.fb, X)):
        verdict = decide(A, B)
        if verdict.equivalent:
            return answer("agree", "Theorems 3/4", equivalence=verdict)
    pairs = align(A, B)
    P = Pair(A, B, pairs)
    work = ReplayWork(A, B, pairs, box)
    small = (A.n + B.n) * (A.m + 1) <= 20_000

    def objectives(c: int) -> list[tuple]:
        return [(net, c, j) for net in "AB" for j in range(k) if j != c]

    def label(points: list[np.ndarray], fallback: int) -> int:
        """The class f1 gives most of the points (floating point: only a choice of what to bound)."""
        if not points:
            return fallback
        return Counter(int(t) for t in _forward(seen.fa, np.array(points)).argmax(axis=1)).most_common(1)[0][0]

    def worst(node: Node) -> tuple:
        return max(objectives(node.label), key=lambda o: node.effective.get(o, fmpq(1)))

    shifts = [("=", t, s) for t in range(1, k) for s in (1, -1)]
    # the neurons where the networks differ: all but the pairs with equal scaled rows and output weights. When they
    # are few, splitting on them first isolates regions where the networks coincide (closed as shift leaves)
    same = {key for p in _identical_pairs(P) for key in (("A", pairs[p][0]), ("B", pairs[p][1]))}
    differing = {(s, i) for s in "AB" for i in range(P.size[s])} - same
    few = len(differing) <= (A.n + B.n) // 4

    def settle(node: Node, parent: dict) -> bool:
        """Bound the node's class; True when every margin is below 0 (a certified leaf). Where the two networks'
        outputs differ by the same amount at the programs' points (floating point: only a choice of what to try),
        also bound ±(D_t − D_0): all ≤ 0 closes the node as a shift leaf."""
        todo = [o for o in objectives(node.label) if not parent.get(o, fmpq(0)) < 0]
        node.bound = bound_region(P, node.region, small, todo, deadline)
        work.add(True, node.bound)
        node.effective = parent | {o: min(b, parent.get(o, b)) for o, b in node.bound.bounds.items()}
        if all(node.effective[o] < 0 for o in objectives(node.label)):
            return True
        points = np.array(node.bound.points).reshape(-1, A.m)
        D = _forward(seen.fa, points) - _forward(seen.fb, points)
        if len(points) and np.abs(D - D[:, :1]).max() <= 1e-9 * max(1.0, np.abs(D).max()):
            extra = bound_region(P, node.region, small, [o for o in shifts if not parent.get(o, fmpq(1)) <= 0],
                                 deadline)
            work.add(False, extra)
            node.bound.merge(extra)
            node.effective |= {o: min(b, parent.get(o, b)) for o, b in extra.bounds.items()}
            node.shift = all(node.effective.get(o, fmpq(1)) <= 0 for o in shifts)
        return node.shift

    root = Node(Region(box), label=label(list(X), 0))
    regions = 1
    heap: list = []
    if not settle(root, {}):
        heap.append((-float(root.effective[worst(root)]), 0, root))
    count = 0
    while heap:
        if deadline.expired():
            return answer("unknown", "the time budget", root, regions)
        if regions + 2 > max_regions:
            return answer("unknown", "the region budget", root, regions)
        _, _, node = heapq.heappop(heap)
        # the programs' last points, for the worst margin: near them the two networks' boundaries are closest
        o = worst(node)
        _, c, j = o
        if any(seen.near(p, [(c, j), (j, c)]) for p in node.bound.points[-4:]):
            return answer("differ", "", root, regions)
        key = split_key(node, o)
        if few:
            scores = {u: score for u, score in node.bound.unstable if u in differing}
            if scores:
                key = max(scores, key=lambda u: scores[u])
        if key is None:
            widths = [hi - lo for lo, hi in node.region.box]
            q = max(range(len(widths)), key=lambda i: widths[i])
            if widths[q] == 0:
                return answer("unknown", "a point no split resolves (a tie, or a boundary both share)", root,
                              regions)
            key = ("x", q)
        node.split = key
        for child_region in children(node.region, key):
            inside = [p for p in node.bound.points if _inside(p, child_region, P)]
            child = Node(child_region, label=label(inside, node.label))
            node.children.append(child)
            if not settle(child, node.effective):
                count += 1
                heapq.heappush(heap, (-float(child.effective[worst(child)]), count, child))
        regions += 2
        if not work.within:
            return answer("unknown", "the checker's work bound", root, regions)
        if progress and regions % 50 == 1:
            progress(f"{regions} regions, {len(heap)} open")
    return answer("agree", "every leaf certified", root, regions)


def _identical_pairs(P: Pair) -> list[int]:
    """The pairs whose two neurons have the same scaled row and the same output weights (exactly). Cost
    O(pairs · (m + k)) comparisons."""
    m = P.m + 1
    rows_a, rows_b = P.rows["A"].entries(), P.rows["B"].entries()
    return [p for p, (i, j, _) in enumerate(P.pairs)
            if rows_a[i * m:(i + 1) * m] == rows_b[j * m:(j + 1) * m]
            and all(wa == -wb for wa, wb in zip(P.weights["A"][i], P.weights["B"][j], strict=True))]


def _inside(point: np.ndarray, region: Region, P: Pair) -> bool:
    """Whether a float point lies in the region (box and phases), in floating point: only a choice of label."""
    lo = np.array([float(a) for a, _ in region.box])
    hi = np.array([float(b) for _, b in region.box])
    if np.any(point < lo) or np.any(point > hi):
        return False
    for (s, i), phase in region.phases.items():
        z = P.float_rows[s][i, :-1] @ point + P.float_rows[s][i, -1]
        if z * phase < 0:
            return False
    return True

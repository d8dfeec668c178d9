"""Top-1 agreement of two deep ReLU networks on a box (the question of ``top1``, for MATH.md Part III networks):
AGREE when at every point of the box both networks have the same set of largest outputs, DIFFER at an exact
witness where both have unique largest outputs and they differ, UNKNOWN within the budget.

- AGREE: the box is cut into leaves by halving coordinates (a tree, in preorder). On a leaf, plain intervals
  (``deep_distance.plain_intervals``) bound each network's last hidden layer, h ∈ [lo, hi]; the margin
  f_c − f_j = (W_c − W_j)·h + (b_c − b_j) is then at least its row's exact minimum over that box of h. When that
  minimum is > 0 for every j ≠ c, in both networks and for the same c, c is the unique largest output of both at
  every point of the leaf. A pair the deep decision shows equivalent needs no tree (one function, ties and all).
  A region where both networks tie in the same way (a shared decision boundary of two networks that are not
  equivalent) is never certified, and holds no witness: it ends UNKNOWN.
- DIFFER: floating-point proposals (the centre and random points of each region tried), each evaluated exactly.
Networks that end in a ReLU are refused: σ∘ρ ties at 0, where "the largest output" is a set.
This is certificates/FORMAT.md's rule for ``deep_top1_agreement`` and ``deep_top1_disagreement``, which the checker
recomputes. Cost per region: one exact pass over both networks' weights and k(k − 1) rows of the last layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.core.deep import LayeredNetwork, float_forward, float_layers
from certsym.decide import symbolic
from certsym.decide.deadline import Deadline, deadline_of
from certsym.decide.deep import DeepVerdict
from certsym.decide.deep import decide as decide_deep
from certsym.decide.deep_distance import _affine, _relu, halves, plain_intervals
from certsym.decide.distance import Box
from certsym.decide.top1 import top1_text, unique_top
from certsym.errors import InputError
from certsym.numbers import QQ

POINTS = 64  # floating-point proposals per region
SEGMENTS = 4  # segments from the centre searched for the sliver between the two decision boundaries
MAX_LEAF_WORK = 5 * 10**6  # leaves × (weights + 2k² × last width), and nodes × (m + 1): the checker's bounds


@dataclass
class DeepTop1:
    """The verdict ("agree", "differ", "unknown") with its evidence: ``tree`` in preorder (("split", q) or
    ("leaf", c)), or the equivalence, or ``witness`` with both exact outputs and their ``classes``."""

    verdict: str
    box: Box
    tree: list[tuple[str, int]] = field(default_factory=list)
    equivalence: DeepVerdict | None = None
    witness: list[fmpq] | None = None
    outputs: tuple[list[fmpq], list[fmpq]] | None = None
    classes: tuple[int, int] | None = None
    regions: int = 0
    stopped: str = ""
    seconds: float = 0.0
    method: str = "intervals"  # or "symbolic": each leaf's margins by ``certsym.decide.symbolic.leading_class``

    @property
    def leaves(self) -> int:
        return sum(1 for kind, _ in self.tree if kind == "leaf")

    @property
    def labels(self) -> list[int]:
        """The classes the leaves certify, sorted."""
        return sorted({c for kind, c in self.tree if kind == "leaf"})

    def __repr__(self) -> str:
        return top1_text("DeepTop1", self.verdict, self.box, self.classes, self.regions, self.stopped)


def leaf_class(theta: LayeredNetwork, box: Box) -> int | None:
    """The class c whose margins f_c − f_j (j ≠ c) have exact interval lower bounds > 0 on the box, if any.
    Cost: one pass over the weights and k(k − 1) rows of the last layer."""
    layers, _ = plain_intervals(theta, box)
    h = _relu(layers[-2]) if len(layers) > 1 else ([lo for lo, _ in box], [hi for _, hi in box])
    last = theta.layers[-1]
    for c in range(theta.k):
        rows = [[a - b for a, b in zip(last.W[c], last.W[j], strict=True)] for j in range(theta.k) if j != c]
        shifts = [last.b[c] - last.b[j] for j in range(theta.k) if j != c]
        low, _ = _affine(rows, shifts, *h)
        if all(x > 0 for x in low):
            return c
    return None


def deep_top1(theta1: LayeredNetwork, theta2: LayeredNetwork, box: Box, seed: int = 0, seconds: float = 10.0,
              progress: Callable[[str], None] | None = None, deadline: Deadline | None = None,
              max_regions: int | None = None, method: str = "auto") -> DeepTop1:
    """AGREE / DIFFER / UNKNOWN (module docstring). Regions are taken depth first, each split on its widest
    coordinate relative to the box; the search stops when the time budget runs out (``deadline``, the documented
    way, which replaces ``seconds``; else ``seconds`` from now), at ``max_regions`` regions (default no bound but
    the checker's), or at the checker's work bound; ``DeepTop1.stopped`` says which. Cost: the module's per region,
    at most ``max_regions`` regions; ``DeepTop1.seconds`` is the time taken, on the deadline's clock."""
    for t in (theta1, theta2):
        if not isinstance(t.field, type(QQ)):
            raise InputError("top-1 agreement is decided over the rationals; these networks have irrational weights")
        if t.output_relu:
            raise InputError("--top1 needs networks without an output ReLU: σ(f) ties at 0, where the largest "
                             "output is not unique")
    if (theta1.m, theta1.k) != (theta2.m, theta2.k):
        raise InputError(f"the networks have different shapes: m = {theta1.m}, k = {theta1.k} and m = {theta2.m}, "
                         f"k = {theta2.k}")
    if any(max(abs(int(x.p)), int(x.q)).bit_length() > 4096 for end in box for x in end):
        raise InputError("the box's numbers must have at most 4,096 bits (the checker's bound)")
    deadline = deadline_of(seconds, deadline)
    start = deadline.clock()

    def taken() -> float:
        return deadline.clock() - start

    verdict = decide_deep(theta1, theta2, seed)
    if verdict.equivalent:
        return DeepTop1("agree", box, equivalence=verdict, stopped="equivalent", seconds=taken())
    floats = (float_layers(theta1), float_layers(theta2))
    if method == "auto":  # margins by symbolic forms (the checker's bound: leaves × their products)
        free = sum(1 for lo, hi in box if lo < hi)
        work = sum(symbolic.margin_products(t.widths, free) for t in (theta1, theta2))
        bound = min(symbolic.MAX_SYMBOLIC_WORK,
                    int(symbolic.SHARE * symbolic.WORK_BUDGET * symbolic.PRODUCTS_PER_UNIT))

        def leading(t: int, region: Box) -> int | None:
            lo = np.array([float(a) for a, _ in region])
            hi = np.array([float(c) for _, c in region])
            return symbolic.leading_class(floats[t], lo, hi)
    elif method == "intervals":
        work = sum(sum(len(row) + 1 for row in layer.W) for t in (theta1, theta2) for layer in t.layers) + \
            2 * theta1.k ** 2 * max(len(theta1.layers[-1].W[0]), len(theta2.layers[-1].W[0]))
        bound = MAX_LEAF_WORK

        def leading(t: int, region: Box) -> int | None:
            return leaf_class((theta1, theta2)[t], region)
    else:
        raise InputError("method must be 'auto' or 'intervals'")
    kind = "symbolic" if method == "auto" else "intervals"
    width = [hi - lo for lo, hi in box]
    rng = np.random.default_rng(seed)
    tree: list[tuple[str, int]] = []
    stack = [box]
    regions = 0
    while stack:
        region = stack.pop()
        regions += 1
        found = _witness(theta1, theta2, floats, region, rng)
        if found is not None:
            x, outputs, classes = found
            return DeepTop1("differ", box, witness=x, outputs=outputs, classes=classes, regions=regions,
                            stopped="a witness", seconds=taken())
        c = leading(0, region)
        if c is not None and leading(1, region) == c:
            tree.append(("leaf", c))
            continue
        leaves = sum(1 for kind, _ in tree if kind == "leaf") + len(stack) + 2
        nodes = len(tree) + 2 * (len(stack) + 2)
        # the clock is read once, so that the reason given is the limit that was reached
        why = "the time budget" if deadline.expired() else \
            "the region budget" if max_regions is not None and regions + len(stack) + 2 > max_regions else \
            "the checker's work bound" if leaves * work > bound or nodes * (len(box) + 1) > MAX_LEAF_WORK else None
        if why is not None:
            return DeepTop1("unknown", box, regions=regions, stopped=why, seconds=taken())
        q = max(range(len(region)), key=lambda i: (region[i][1] - region[i][0]) / width[i] if width[i] else -1)
        if width[q] == 0:
            return DeepTop1("unknown", box, regions=regions, stopped="a point box with a tie", seconds=taken())
        tree.append(("split", q))
        left, right = halves(region, q)
        stack += [right, left]  # preorder: the left half next
        if progress is not None and regions % 50 == 0:
            progress(f"{regions} regions, {len(stack)} open, {taken():.1f} s")
    return DeepTop1("agree", box, tree=tree, regions=regions, stopped="every leaf certified", seconds=taken(),
                    method=kind)


def _witness(theta1: LayeredNetwork, theta2: LayeredNetwork, floats: tuple, region: Box, rng: np.random.Generator):
    """A point of the region where both networks have unique largest outputs that differ, exactly; or None.
    Floating point proposes: the centre and POINTS random points, and, on up to SEGMENTS segments from the centre
    to points where θ1's class is another, a point between the two networks' class changes (each found by
    bisection): when the decision boundaries are close but apart, the sliver between them is where the classes
    differ. Only proposals whose float classes differ are evaluated exactly."""
    lo = np.array([float(a) for a, _ in region])
    hi = np.array([float(c) for _, c in region])
    X = np.vstack([(lo + hi) / 2, lo + (hi - lo) * rng.random((POINTS, len(region)))])
    f1, f2 = (float_forward(f, X, False).argmax(axis=1) for f in floats)
    other = np.flatnonzero(f1 != f1[0])[:SEGMENTS]
    if len(other):
        a = X[0]
        between = []
        for j in other.tolist():
            cuts = [_change(f, a, X[j]) for f in floats]
            between.append(a + (X[j] - a) * (cuts[0] + cuts[1]) / 2)
        X = np.vstack([X, *between])
        f1, f2 = (float_forward(f, X, False).argmax(axis=1) for f in floats)
    for i in np.flatnonzero(f1 != f2)[:4].tolist():
        x = [min(max(fmpq(*float(t).as_integer_ratio()), a), c) for t, (a, c) in zip(X[i], region, strict=True)]
        outputs = (theta1(x), theta2(x))
        a, b = unique_top(outputs[0]), unique_top(outputs[1])
        if a is not None and b is not None and a != b:
            return x, outputs, (a, b)
    return None


def _change(layers: list, a: np.ndarray, b: np.ndarray) -> float:
    """A t in [0, 1] where the network's float class on a + t (b − a) changes (bisection, 60 steps)."""
    start = int(float_forward(layers, a[None], False).argmax())
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if int(float_forward(layers, (a + mid * (b - a))[None], False).argmax()) == start:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2

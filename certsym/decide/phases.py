"""Complete deep equivalence by phase splitting (MATH.md Part IV, "Complete decisions by phase splitting"): whether
f1 = f2 on all of R^m for two ReLU networks over QQ of any depths and widths, with a certificate either way.

The neurons of both networks are taken in one fixed order (``order``): layer by layer, the first network's
neurons of a layer before the second's, the output neurons last when a network ends in a ReLU. On a region every
neuron whose earlier layers are phased has an affine pre-activation a(x) = w·x + c, computed exactly; a constant
one (w = 0) takes the phase of its sign, any other splits the region into a ≥ 0 (h = a) and a ≤ 0 (h = 0), the
first branch first. A region is the polyhedron of its split constraints g_j(x) ≥ 0, and a branch is closed by:

- ``["empty", μ]``: μ ≥ 0 on the region's constraints with Σ μ_j g_j a negative constant (Farkas);
- ``["flat", μ]``: μ ≥ 0 with Σ μ_j g_j ≡ 0 and μ_j > 0 on some constraint (each has w_j ≠ 0): the region lies
  in a hyperplane, and no point of it is interior;
- ``["equal"]``: every neuron phased, and the two networks' affine maps on the region are equal.

Leaves cover R^m, the full-dimensional ones up to a null set, and f1 − f2 is continuous: equal maps on every
leaf with interior prove f1 = f2. A leaf with interior whose maps differ gives a witness: a rational point
strictly inside it (the LP's, checked exactly) where the networks' exact outputs differ.

The float LP (scipy's HiGHS) only searches: for each region it maximizes t subject to g_j(x) ≥ t ‖w_j‖, t ≤ 1;
t* > 0 gives an interior point (verified exactly), t* ≤ 0 a dual μ whose support is solved exactly for the
certificate. Cost: one LP per node and O(Σ_ℓ n_ℓ n_{ℓ−1} (m + 1)) exact products per path, at most ``max_nodes``
nodes (exponential in the neurons in the worst case; None when the budget or an exact extraction fails).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq, fmpq_mat

from certsym.core.deep import LayeredNetwork
from certsym.decide.deadline import Deadline
from certsym.numbers import QQ

MAX_NODES = 10_000  # tree nodes tried before giving up (the decision stays UNDECIDED): about 12 s
MAX_NEURONS = 96  # both networks' neurons: beyond, the tree is not tried
MAX_INPUTS = 64  # inputs: the checker's bound (its forms have m + 1 entries)
TOLERANCE = 1e-9  # a float t* within this of 0 is settled by the exact extraction, not by the float

Form = list[fmpq]  # w_1 … w_m, c


@dataclass
class PhaseTree:
    """The outcome: ``tree`` (preorder, module docstring) when f1 = f2, or ``witness`` where they differ; ``nodes``
    the nodes built."""

    tree: list[list] | None = None
    witness: list[fmpq] | None = None
    nodes: int = 0
    reason: str = ""
    regions: int = 0
    flat: int = 0
    empty: int = 0


@dataclass
class _State:
    theta: tuple[LayeredNetwork, LayeredNetwork]
    m: int
    budget: int
    deadline: Deadline | None = None
    out: PhaseTree = field(default_factory=PhaseTree)


class _GiveUp(Exception):
    pass


def order(theta1: LayeredNetwork, theta2: LayeredNetwork) -> list[tuple[int, int, int]]:
    """The neurons in the order of the tree: (network 0 or 1, layer ℓ ≥ 1, index), layer by layer, network 0's
    layer ℓ before network 1's; a network's output layer only when it ends in a ReLU."""
    out = []
    for ell in range(1, max(len(theta1.layers), len(theta2.layers)) + 1):
        for t, theta in enumerate((theta1, theta2)):
            if ell < len(theta.layers) or (ell == len(theta.layers) and theta.output_relu):
                out.extend((t, ell, i) for i in range(theta.layers[ell - 1].width))
    return out


def decide(theta1: LayeredNetwork, theta2: LayeredNetwork, max_nodes: int | None = None,
           deadline: Deadline | None = None) -> PhaseTree | None:
    """f1 = f2 (a tree) or a witness, by phase splitting (module docstring), within ``max_nodes`` nodes (default
    MAX_NODES) and the time budget ``deadline`` (none by default); None when the pair is over another field or
    shape; a PhaseTree with only ``reason`` when it has more
    than MAX_NEURONS neurons or the budget or an exact extraction runs out."""
    max_nodes = MAX_NODES if max_nodes is None else max_nodes
    if not all(isinstance(t.field, type(QQ)) for t in (theta1, theta2)) or (theta1.m, theta1.k) != (theta2.m,
                                                                                                   theta2.k):
        return None
    neurons = order(theta1, theta2)
    if len(neurons) > MAX_NEURONS or theta1.m > MAX_INPUTS:
        return PhaseTree(reason=f"{len(neurons)} neurons and {theta1.m} inputs (phase splitting is tried up to "
                         f"{MAX_NEURONS} neurons and {MAX_INPUTS} inputs)")
    if any(layer.width == 0 for t in (theta1, theta2) for layer in t.layers[:-1]):
        return PhaseTree(reason="a hidden layer without neurons")
    state = _State((theta1, theta2), theta1.m, max_nodes, deadline)
    tree: list[list] = []
    try:
        witness = _explore(state, neurons, 0, [_inputs(theta1.m), _inputs(theta2.m)], [[], []], [], tree)
    except _GiveUp as exc:
        state.out.reason = str(exc)
        return state.out
    state.out.nodes = len(tree)
    if witness is not None:
        state.out.witness = witness
    else:
        state.out.tree = tree
    return state.out


def _inputs(m: int) -> list[Form]:
    """The identity map x ↦ x as forms."""
    return [[fmpq(int(q == r)) for r in range(m)] + [fmpq(0)] for q in range(m)]


def _layer_forms(theta: LayeredNetwork, ell: int, below: list[Form], m: int) -> list[Form]:
    """W_ℓ h_{ℓ−1} + b_ℓ as forms of x, from the forms of h_{ℓ−1}. Cost: one exact product of matrices."""
    layer = theta.layers[ell - 1]
    if not below or layer.width == 0:
        return [[fmpq(0)] * m + [c] for c in layer.b]
    H = fmpq_mat(len(below), m + 1, [x for f in below for x in f])
    A = fmpq_mat(layer.width, len(below), [x for row in layer.W for x in row]) * H
    return [[A[i, j] + (layer.b[i] if j == m else 0) for j in range(m + 1)] for i in range(layer.width)]


def _explore(state: _State, neurons: list, at: int, maps: list[list[Form]], current: list[list[Form]],
             region: list[Form], tree: list[list]) -> list[fmpq] | None:
    """The subtree of the region from neuron ``at`` on: ``maps[t]`` the forms of network t's last fully phased
    layer, ``current[t]`` those of the layer being phased. Appends to ``tree``; returns a witness or None."""
    theta, m = state.theta, state.m
    while at < len(neurons):
        t, ell, i = neurons[at]
        a = _layer_forms(theta[t], ell, maps[t], m)[i]
        if all(x == 0 for x in a[:m]):  # constant: its phase is its sign
            h = a if a[m] >= 0 else [fmpq(0)] * (m + 1)
            maps, current = _advance(theta, neurons, at, maps, current, h)
            at += 1
            continue
        if len(tree) >= state.budget:
            raise _GiveUp(f"the phase tree reached {state.budget} nodes")
        if state.deadline is not None and state.deadline.expired():
            raise _GiveUp(f"the time budget ({state.deadline.seconds:g} s) ran out after {len(tree)} nodes")
        tree.append(["split"])
        for sign in (1, -1):
            g = [sign * x for x in a]
            sub = [*region, g]
            closed = _close(sub, m)
            if closed is not None:
                tree.append(closed)
                state.out.empty += closed[0] == "empty"
                state.out.flat += closed[0] == "flat"
                continue
            h = a if sign == 1 else [fmpq(0)] * (m + 1)
            m2, c2 = _advance(theta, neurons, at, maps, current, h)
            found = _explore(state, neurons, at + 1, m2, c2, sub, tree)
            if found is not None:
                return found
        return None
    # every neuron phased: the networks' affine maps on the region
    outs = [_outputs(theta[t], maps[t], m) for t in (0, 1)]
    state.out.regions += 1
    if outs[0] == outs[1]:
        tree.append(["equal"])
        return None
    return _witness(state, region, outs)


def _advance(theta: tuple, neurons: list, at: int, maps: list, current: list, h: Form) -> tuple[list, list]:
    """The phase of neuron ``at`` recorded: its form joins its layer's; a layer complete becomes the map below."""
    t, ell, i = neurons[at]
    maps, current = list(maps), [list(c) for c in current]
    current[t].append(h)
    if len(current[t]) == theta[t].layers[ell - 1].width:
        maps[t], current[t] = current[t], []
    return maps, current


def _outputs(theta: LayeredNetwork, below: list[Form], m: int) -> list[Form]:
    """The network's outputs as forms: the output layer's phased forms when it ends in a ReLU, else its
    pre-activations over the last hidden layer."""
    if theta.output_relu:
        return below  # the output layer was phased last: ``below`` holds it
    return _layer_forms(theta, len(theta.layers), below, m)


def _lp(region: list[Form], m: int):
    """max t s.t. g_j(x) ≥ t‖w_j‖, t ≤ 1, in floats: (t*, x*, dual y) or None when the solver fails."""
    from scipy.optimize import linprog

    G = np.array([[float(x) for x in g] for g in region])
    norms = np.linalg.norm(G[:, :m], axis=1)
    # −w·x + ‖w‖ t ≤ c  ⇔  w·x + c ≥ ‖w‖ t
    A = np.hstack([-G[:, :m], norms[:, None]])
    cost = np.zeros(m + 1)
    cost[m] = -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = linprog(cost, A_ub=A, b_ub=G[:, m], bounds=[(None, None)] * m + [(None, 1.0)], method="highs")
    if res.status != 0:
        return None
    return -res.fun, res.x[:m], -np.asarray(res.ineqlin.marginals) * 1.0


def _close(region: list[Form], m: int) -> list | None:
    """["empty", μ] or ["flat", μ] when the region has no interior (exact), None when it has one (an interior
    point verified exactly). _GiveUp when neither can be verified."""
    found = _lp(region, m)
    if found is None:
        raise _GiveUp("the float LP of a region failed")
    t, x, y = found
    if t > TOLERANCE:
        point = [fmpq(*float(v).as_integer_ratio()) for v in x]
        if all(_value(g, point) > 0 for g in region):
            return None
    mu = _exact_multipliers(region, m, y)
    if mu is None:
        if t > TOLERANCE:
            raise _GiveUp("an interior point of a region could not be verified exactly")
        raise _GiveUp("the multipliers of a region without interior could not be made exact")
    total = sum((u * g[m] for u, g in zip(mu, region, strict=True)), fmpq(0))
    return ["empty" if total < 0 else "flat", mu]


def _value(g: Form, x: list[fmpq]) -> fmpq:
    return sum((w * v for w, v in zip(g, x, strict=False)), g[-1])


def _exact_multipliers(region: list[Form], m: int, y: np.ndarray) -> list[fmpq] | None:
    """μ ≥ 0, Σ μ = 1, Σ μ_j w_j = 0 exactly, on the support of the float dual y, with Σ μ_j c_j ≤ 0; the free
    coordinates of the solution set from y itself. None when no such μ is found there."""
    scale = max(float(np.max(y)) if len(y) else 0.0, 1e-300)
    support = [j for j in range(len(region)) if y[j] > 1e-7 * scale]
    if not support:
        return None
    rows = m + 1
    M = fmpq_mat(rows, len(support) + 1, [x for r in range(rows) for x in
                                          ([region[j][r] for j in support] + [fmpq(0)] if r < m else
                                           [fmpq(1)] * len(support) + [fmpq(1)])])
    R, rank = M.rref()
    pivots = []
    for r in range(rank):
        c = next(c for c in range(len(support) + 1) if R[r, c] != 0)
        if c == len(support):
            return None  # inconsistent
        pivots.append(c)
    free = [c for c in range(len(support)) if c not in pivots]
    values = {c: fmpq(*float(y[support[c]] / scale).as_integer_ratio()) for c in free}
    sol = [fmpq(0)] * len(support)
    for c in free:
        sol[c] = values[c]
    for r, c in enumerate(pivots):
        sol[c] = R[r, len(support)] - sum((R[r, f] * values[f] for f in free), fmpq(0))
    if any(v < 0 for v in sol) or all(v == 0 for v in sol):
        return None
    mu = [fmpq(0)] * len(region)
    for c, j in enumerate(support):
        mu[j] = sol[c]
    if sum((u * g[m] for u, g in zip(mu, region, strict=True)), fmpq(0)) > 0:
        return None
    return mu


def _witness(state: _State, region: list[Form], outs: list[list[Form]]) -> list[fmpq] | None:
    """A rational point strictly inside the region where the networks' exact outputs differ (the region has
    interior: it was not closed). _GiveUp when none of the points tried works."""
    m = state.m
    found = _lp(region, m)
    if found is None:
        raise _GiveUp("the float LP of a leaf failed")
    t, x, _ = found
    rng = np.random.default_rng(len(region))
    for k in range(20):
        p = x + (0 if k == 0 else 0.25 * max(t, 1e-12) * rng.standard_normal(m) / np.sqrt(m))
        point = [fmpq(*float(v).as_integer_ratio()) for v in p]
        if not all(_value(g, point) > 0 for g in region):
            continue
        v1, v2 = (state.theta[0](point), state.theta[1](point))
        if v1 != v2:
            return point
    raise _GiveUp("a leaf whose maps differ gave no exact witness on the points tried")

"""Local maximization of one output difference over the activation cells of two networks, by linear programs.

D_t(x) = ρ(θ_A)(x)_t − ρ(θ_B)(x)_t is piecewise affine: on a cell, the set of x where every neuron of both
networks keeps one phase (z ≥ 0 or z ≤ 0), both networks are affine, and so is D_t. The maximum of s·D_t over a
cell intersected with the box is a linear program in x (m variables, one row per neuron of A and B). The walk:
solve it in the cell of the current point, move to its optimum, then enter the neighbouring cell across the
neuron constraints that limit the optimum most (the largest dual values), and repeat while the value grows. Each
step can only climb, so the walk ends at a cell whose LP optimum is not improved by its most limiting
neighbours: a local maximum of the piecewise-affine function, where sampling and gradient steps stall on its
kinks.

Floating point throughout (HiGHS through scipy): the walk only proposes points. Its caller evaluates every
point exactly; nothing here decides a bound.

Cost per step: one LP of m variables and n_A + n_B rows (dense), plus O((n_A + n_B) m) to set it up.
"""

from __future__ import annotations

import numpy as np

from certsym.decide.deadline import Deadline

Floats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (W1, b1, W2, b2) of one network, binary64


def cell_ascent(fa: Floats, fb: Floats, lo: np.ndarray, hi: np.ndarray, x: np.ndarray, t: int, s: float,
                deadline: Deadline, steps: int = 40, flips: float = 0.25) -> list[np.ndarray]:
    """The points of the walk from ``x`` (module docstring) maximizing s·D_t over the box [lo, hi], in the order
    visited (each better than the last by the floats), until no step improves, ``steps`` LPs are solved, or
    ``deadline`` expires. A step flips the ``flips`` share of the limiting neuron
    constraints with the largest duals (at least one). Cost: at most ``steps`` LPs (module docstring)."""
    from scipy.optimize import linprog  # loaded on first use, as the relaxation's LPs are

    WA, bA, MA, _ = fa
    WB, bB, MB, _ = fb
    W = np.vstack([WA, WB])
    bias = np.concatenate([bA, bB])
    nA = len(bA)
    bounds = np.column_stack([lo, hi])

    def value(point: np.ndarray) -> float:
        zA, zB = WA @ point + bA, WB @ point + bB
        return float(s * (MA[t] @ np.maximum(zA, 0) - MB[t] @ np.maximum(zB, 0)))

    active = W @ x + bias > 0
    best, out = value(x), []
    for _ in range(steps):
        if deadline.expired():
            break
        gradient = s * ((MA[t] * active[:nA]) @ WA - (MB[t] * active[nA:]) @ WB)
        sign = np.where(active, -1.0, 1.0)  # active: −z ≤ 0; inactive: z ≤ 0
        res = linprog(-gradient, A_ub=sign[:, None] * W, b_ub=-sign * bias, bounds=bounds, method="highs")
        if res.status != 0 or res.x is None:
            break
        point = np.clip(res.x, lo, hi)
        reached = value(point)
        if reached <= best * (1 + 1e-12) + 1e-300 and out:
            break
        if reached > best:
            best = reached
            out.append(point)
        duals = -np.asarray(res.ineqlin.marginals)  # ≥ 0; positive on the rows that limit the optimum
        limiting = np.flatnonzero(duals > 0)
        if not len(limiting):
            break  # the optimum is a vertex of the box alone: no neighbouring cell does better along these rows
        chosen = limiting[np.argsort(-duals[limiting])[:max(1, int(len(limiting) * flips))]]
        active = W @ point + bias > 0
        active[chosen] = sign[chosen] > 0  # across the limiting rows: z ≥ 0 imposed becomes z ≤ 0, and back
    return out

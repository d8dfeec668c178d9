"""An approximate baseline: HiGHS (scipy.optimize.milp) bounds max |ρ(θ1) − ρ(θ2)| over a box [−R, R]^m.

Big-M encoding of each ReLU h = σ(z): h ≥ 0, h ≥ z, h ≤ z + M(1 − δ), h ≤ Mδ, δ ∈ {0, 1}, with
M = |b| + R Σ|a_j| (z's bound on the box). Floating point, a bounded box and solver tolerances: a verdict
"equal (approx.)" means the gap found is below 1e-7, not a proof. k = 1 only.
"""

from __future__ import annotations

import time

import numpy as np

from certsym.core.network import Network


def _as_float(net: Network):
    A = np.array([[float(x) for x in row] for row in net.A], dtype=float).reshape(net.n, net.m)
    b = np.array([float(x) for x in net.b])
    v = np.array([float(x) for x in net.M[0]])
    return A, b, v, float(net.c[0])


def milp_gap(t1: Network, t2: Network, R: float = 10.0, time_limit: float = 60.0) -> tuple[str, float]:
    """("equal (approx.)" | "NOT equal" | "timeout", seconds) from maximizing and minimizing ρ1 − ρ2."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    A1, b1, v1, c1 = _as_float(t1)
    A2, b2, v2, c2 = _as_float(t2)
    A, b, v = np.vstack([A1, A2]), np.concatenate([b1, b2]), np.concatenate([v1, -v2])
    N, m = A.shape
    M = np.abs(b) + R * np.abs(A).sum(axis=1) + 1.0
    # variables: x (m), h (N), δ (N)
    nv = m + 2 * N
    rows, lo, hi = [], [], []

    def row(x_coef, h_coef, d_coef):
        r = np.zeros(nv)
        r[:m], r[m:m + N], r[m + N:] = x_coef, h_coef, d_coef
        return r

    for i in range(N):
        e = np.zeros(N)
        e[i] = 1.0
        rows.append(row(-A[i], e, 0 * e)); lo.append(b[i]); hi.append(np.inf)            # h ≥ a·x + b  # noqa: E702
        rows.append(row(-A[i], e, M[i] * e)); lo.append(-np.inf); hi.append(b[i] + M[i])  # h ≤ z + M(1−δ)  # noqa: E702
        rows.append(row(0 * A[i], e, -M[i] * e)); lo.append(-np.inf); hi.append(0.0)      # h ≤ Mδ  # noqa: E702
    constraints = LinearConstraint(np.array(rows), lo, hi)
    bounds = Bounds(np.concatenate([-R * np.ones(m), np.zeros(N), np.zeros(N)]),
                    np.concatenate([R * np.ones(m), np.full(N, np.inf), np.ones(N)]))
    integrality = np.concatenate([np.zeros(m + N), np.ones(N)])
    start = time.perf_counter()
    gaps = []
    for sign in (1.0, -1.0):
        objective = np.concatenate([np.zeros(m), -sign * v, np.zeros(N)])  # maximize sign·(ρ1 − ρ2)
        left = time_limit - (time.perf_counter() - start)
        if left <= 0:
            return "timeout", time.perf_counter() - start
        res = milp(objective, constraints=constraints, bounds=bounds, integrality=integrality,
                   options={"time_limit": left, "disp": False})
        if res.status != 0 or res.x is None:
            return "timeout", time.perf_counter() - start
        gaps.append(-res.fun + sign * (c1 - c2))
    verdict = "equal (approx.)" if max(gaps) < 1e-7 else "NOT equal"
    return verdict, time.perf_counter() - start

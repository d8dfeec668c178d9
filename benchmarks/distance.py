"""certsym distance on the issue's pairs, side by side: time, L, U, U/L, the largest of 10^4 sampled differences,
the checker's replay time, and (``--milp``) a HiGHS MILP maximum for the smallest pair.

Models: random float32 networks with W ~ N(0, 1/m) (seeded; no trained weights are shipped), box [0, 1]^784.
Pairs: 784-256-10 against its float16 copy, its ×3-rescaled copy (hidden layer ×3, output ÷3, rounded to
float32), and a copy with the 10% of hidden units of smallest ‖v_i‖·‖a_i‖ pruned; 784-4096-10 against its
float16 copy. Run: ``python benchmarks/distance.py [--milp] [--skip-large]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from certsym.api import load
from certsym.certify import InputRecord, distance_certificate
from certsym.decide.distance import distance
from certsym_check import check_certificate


def model(n: int, seed: int, m: int = 784, k: int = 10) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, m)) / np.sqrt(m)).astype(np.float32), (rng.normal(size=n) * 0.1).astype(np.float32),
            (rng.normal(size=(k, n)) / np.sqrt(n)).astype(np.float32), (rng.normal(size=k) * 0.1).astype(np.float32)]


def copies(a: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    W1, b1, W2, b2 = a
    norms = np.linalg.norm(W2, axis=0) * np.linalg.norm(W1, axis=1)
    keep = np.sort(np.argsort(norms)[len(norms) // 10:])
    return {"float16": [x.astype(np.float16) for x in a],
            "x3": [(W1 * 3).astype(np.float32), (b1 * 3).astype(np.float32), (W2 / 3).astype(np.float32), b2],
            "pruned 10%": [W1[keep], b1[keep], W2[:, keep], b2]}


def sampled_max(a, b, count: int = 10_000, seed: int = 1) -> float:
    X = np.random.default_rng(seed).random((count, a[0].shape[1]))

    def rho(W1, b1, W2, b2):
        return np.maximum(X @ W1.astype(np.float64).T + b1, 0) @ W2.astype(np.float64).T + b2

    return float(np.abs(rho(*a) - rho(*b)).max())


def milp_max(a, b, output: int, time_limit: float) -> tuple[float | None, float, str]:
    """max over [0, 1]^m of |D_output| by HiGHS (scipy.optimize.milp), big-M from each neuron's range on the box."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    W = np.vstack([a[0], b[0]]).astype(np.float64)
    bias = np.concatenate([a[1], b[1]]).astype(np.float64)
    v = np.concatenate([a[2][output], -b[2][output]]).astype(np.float64)
    N, m = W.shape
    zmax = np.maximum(W, 0).sum(axis=1) + bias
    zmin = np.minimum(W, 0).sum(axis=1) + bias
    rows, lo, hi = [], [], []
    for i in range(N):  # h ≥ z, h ≤ z − zmin(1 − δ), h ≤ zmax δ, h ≥ 0
        if zmax[i] <= 0 or zmin[i] >= 0:
            continue
        r = np.zeros(m + 2 * N)
        r[:m], r[m + i] = -W[i], 1
        rows.append(r.copy()); lo.append(bias[i]); hi.append(np.inf)  # noqa: E702
        r[m + N + i] = -zmin[i]
        rows.append(r); lo.append(-np.inf); hi.append(bias[i] - zmin[i])  # noqa: E702
        r2 = np.zeros(m + 2 * N)
        r2[m + i], r2[m + N + i] = 1, -zmax[i]
        rows.append(r2); lo.append(-np.inf); hi.append(0)  # noqa: E702
    for i in range(N):  # stable neurons: h = z (active) or h = 0 (inactive)
        if zmin[i] >= 0:
            r = np.zeros(m + 2 * N)
            r[:m], r[m + i] = -W[i], 1
            rows.append(r); lo.append(bias[i]); hi.append(bias[i])  # noqa: E702
    hmax = np.maximum(zmax, 0)
    bounds = Bounds(np.zeros(m + 2 * N), np.concatenate([np.ones(m), hmax, np.ones(N)]))
    integrality = np.concatenate([np.zeros(m + N), np.ones(N)])
    best, start, status = None, time.perf_counter(), "optimal"
    for sign in (1.0, -1.0):
        c = np.concatenate([np.zeros(m), -sign * v, np.zeros(N)])
        res = milp(c, constraints=LinearConstraint(np.array(rows), lo, hi), bounds=bounds, integrality=integrality,
                   options={"time_limit": time_limit, "disp": False})
        if res.x is not None:
            value = float(-res.fun + sign * (float(a[3][output]) - float(b[3][output])))
            best = value if best is None else max(best, value)
        if res.status != 0:
            status = res.message
    return best, time.perf_counter() - start, status


def run(name: str, a, b, rows: list, milp: bool, limit: float) -> None:
    start = time.perf_counter()
    A, B = load(a).network, load(b).network
    loaded = time.perf_counter()
    d = distance(A, B)
    done = time.perf_counter()
    doc = distance_certificate(d, (InputRecord("a", "0" * 64), InputRecord("b", "0" * 64)), (A, B))
    doc = json.loads(json.dumps(doc))
    t0 = time.perf_counter()
    report = check_certificate(doc)
    replay = time.perf_counter() - t0
    row = {"pair": name, "load s": round(loaded - start, 2), "distance s": round(done - loaded, 2),
           "L": float(d.lower), "U": float(d.upper), "U/L": d.ratio, "sampled max": sampled_max(a, b),
           "checker s": round(replay, 2), "valid": report.valid, "stable/unstable": f"{d.stable}/{d.unstable}"}
    if milp:
        j = max(range(len(d.values)), key=lambda t: abs(d.values[t]))
        value, seconds, status = milp_max(a, b, j, limit)
        row |= {"MILP max (output of the witness)": value, "MILP s": round(seconds, 1), "MILP status": status,
                "U / MILP": None if not value else float(d.upper) / value}
    rows.append(row)
    print(json.dumps(row))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--milp", action="store_true", help="the HiGHS MILP baseline on the smallest pair (needs scipy)")
    p.add_argument("--milp-limit", type=float, default=300.0, help="seconds per MILP solve (default 300)")
    p.add_argument("--skip-large", action="store_true", help="skip the 784-4096-10 pair")
    args = p.parse_args()
    rows: list = []
    a = model(256, 0)
    for i, (name, b) in enumerate(copies(a).items()):
        run(f"784-256-10 vs {name}", a, b, rows, args.milp and i == 0, args.milp_limit)
    if not args.skip_large:
        big = model(4096, 1)
        run("784-4096-10 vs float16", big, copies(big)["float16"], rows, False, 0)


if __name__ == "__main__":
    main()

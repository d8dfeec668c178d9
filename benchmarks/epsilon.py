"""Certified distance with linear relaxations and branch and bound, beside the peers, in one run.

Pairs: random float32 20-64-5 networks (W ~ N(0, 1/m), seeded) against their float16 copy, a copy with the 10% of
hidden units of smallest ‖v_i‖·‖a_i‖ pruned, and a copy with one bias changed by 1/64, on [−1, 1]^20; and
784-256-10 against its float16 copy on [0, 1]^784. Columns: the symbolic-interval U (the previous rule), certsym's
branch and bound (U, L, U/L, seconds, regions, the checker's replay), a HiGHS MILP (scipy.optimize.milp, big-M from
each neuron's range, both signs of every output, floating point: its incumbent is a lower estimate and its dual
bound an upper estimate, neither certified), and auto_LiRPA's CROWN / α-CROWN on the difference network when it
imports (``--lirpa PATH`` adds a directory holding it to sys.path).
Then ``--epsilon`` at several ε per small pair: the verified / violated / unknown counts; and ``--top1`` on boxes
of several radii around seeded centres (small pairs and 784-256-10): the agree / differ / unknown counts, every
certificate replayed (``--top1-only`` runs just these).

Run: ``python benchmarks/epsilon.py [--seconds 60] [--large-seconds 120] [--milp-limit 60] [--seeds 3]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np
from distance import model as seeded_model  # benchmarks/distance.py, beside this script
from flint import fmpq

from certsym.api import load
from certsym.certify import InputRecord, distance_certificate, top1_certificate
from certsym.decide.distance import align, distance, parse_box, upper_bound
from certsym.decide.top1 import top1
from certsym_check import check_certificate


def model(m: int, n: int, k: int, seed: int) -> list[np.ndarray]:
    return seeded_model(n, seed, m, k)


def copies(a: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    W1, b1, W2, b2 = a
    norms = np.linalg.norm(W2, axis=0) * np.linalg.norm(W1, axis=1)
    keep = np.sort(np.argsort(norms)[len(norms) // 10:])
    bias = b1.copy()
    bias[int(np.argmax(norms))] += np.float32(1 / 64)
    return {"float16": [x.astype(np.float16) for x in a], "pruned 10%": [W1[keep], b1[keep], W2[:, keep], b2],
            "one bias + 1/64": [W1, bias, W2, b2]}


def milp(a, b, lo: float, hi: float, limit: float) -> tuple[float, float, float]:
    """(incumbent, dual bound, seconds) of max_t max_s s·D_t over [lo, hi]^m by HiGHS, floating point."""
    from scipy.optimize import Bounds, LinearConstraint
    from scipy.optimize import milp as solve

    W = np.vstack([a[0], b[0]]).astype(np.float64)
    bias = np.concatenate([a[1], b[1]]).astype(np.float64)
    N, m = W.shape
    zmax = np.maximum(W, 0).sum(axis=1) * hi + np.minimum(W, 0).sum(axis=1) * lo + bias
    zmin = np.minimum(W, 0).sum(axis=1) * hi + np.maximum(W, 0).sum(axis=1) * lo + bias
    rows, rlo, rhi = [], [], []
    for i in range(N):
        r = np.zeros(m + 2 * N)
        if zmin[i] >= 0:  # h = z
            r[:m], r[m + i] = -W[i], 1
            rows.append(r); rlo.append(bias[i]); rhi.append(bias[i])  # noqa: E702
            continue
        if zmax[i] <= 0:
            continue
        r[:m], r[m + i] = -W[i], 1
        rows.append(r.copy()); rlo.append(bias[i]); rhi.append(np.inf)  # noqa: E702  h ≥ z
        r[m + N + i] = -zmin[i]
        rows.append(r); rlo.append(-np.inf); rhi.append(bias[i] - zmin[i])  # noqa: E702  h ≤ z − zmin(1 − δ)
        r2 = np.zeros(m + 2 * N)
        r2[m + i], r2[m + N + i] = 1, -zmax[i]
        rows.append(r2); rlo.append(-np.inf); rhi.append(0)  # noqa: E702  h ≤ zmax δ
    bounds = Bounds(np.concatenate([np.full(m, lo), np.zeros(2 * N)]),
                    np.concatenate([np.full(m, hi), np.maximum(zmax, 0), np.ones(N)]))
    integrality = np.concatenate([np.zeros(m + N), np.ones(N)])
    V = np.hstack([a[2], -b[2]]).astype(np.float64)
    offset = a[3].astype(np.float64) - b[3].astype(np.float64)
    best, dual, start = -np.inf, -np.inf, time.perf_counter()
    for t in range(V.shape[0]):
        for s in (1.0, -1.0):
            c = np.concatenate([np.zeros(m), -s * V[t], np.zeros(N)])
            res = solve(c, constraints=LinearConstraint(np.array(rows), rlo, rhi), bounds=bounds,
                        integrality=integrality, options={"time_limit": limit, "disp": False})
            if res.x is not None:
                best = max(best, -res.fun + s * offset[t])
            bound = getattr(res, "mip_dual_bound", None)
            dual = max(dual, (-bound if bound is not None else np.inf) + s * offset[t])
    return best, dual, time.perf_counter() - start


def lirpa(a, b, lo: float, hi: float, method: str) -> tuple[float | None, float, str]:
    """auto_LiRPA's bound on max |D| for the difference network [x] → f1(x) − f2(x), or None with the reason."""
    start = time.perf_counter()
    try:
        import torch
        from auto_LiRPA import BoundedModule, BoundedTensor, PerturbationLpNorm
    except Exception as exc:  # noqa: BLE001 - the peer is optional; the reason is reported
        return None, 0.0, f"does not import: {type(exc).__name__}: {str(exc)[:80]}"
    torch.set_default_dtype(torch.float64)
    try:
        class Diff(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.f = torch.nn.Sequential(torch.nn.Linear(a[0].shape[1], a[0].shape[0]), torch.nn.ReLU(),
                                             torch.nn.Linear(a[0].shape[0], a[2].shape[0]))
                self.g = torch.nn.Sequential(torch.nn.Linear(b[0].shape[1], b[0].shape[0]), torch.nn.ReLU(),
                                             torch.nn.Linear(b[0].shape[0], b[2].shape[0]))
                for net, p in ((self.f, a), (self.g, b)):
                    for layer, (W, c) in zip((net[0], net[2]), ((p[0], p[1]), (p[2], p[3])), strict=True):
                        layer.weight.data = torch.tensor(np.asarray(W, np.float64))
                        layer.bias.data = torch.tensor(np.asarray(c, np.float64))

            def forward(self, x):
                return self.f(x) - self.g(x)

        net = Diff().double()
        x = torch.full((1, a[0].shape[1]), (lo + hi) / 2, dtype=torch.float64)
        bounded = BoundedModule(net, x)
        ptb = PerturbationLpNorm(x_L=torch.full_like(x, lo), x_U=torch.full_like(x, hi))
        lb, ub = bounded.compute_bounds(x=(BoundedTensor(x, ptb),), method=method)
        return float(max(ub.max(), -lb.min())), time.perf_counter() - start, "ok"
    except Exception as exc:  # noqa: BLE001
        return None, time.perf_counter() - start, f"failed: {type(exc).__name__}: {str(exc)[:80]}"


def run(name: str, a, b, lo: float, hi: float, seconds: float, milp_limit: float, rows: list) -> dict:
    A, B = load(a).network, load(b).network
    box = parse_box(f"{lo},{hi}", A.m)
    interval = upper_bound(A, B, box, align(A, B))[0]
    start = time.perf_counter()
    d = distance(A, B, box, seconds=seconds)
    took = time.perf_counter() - start
    doc = json.loads(json.dumps(distance_certificate(d, (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64)),
                                                     (A, B))))
    start = time.perf_counter()
    report = check_certificate(doc)
    replay = time.perf_counter() - start
    row = {"pair": name, "U intervals": float(interval), "U": float(d.upper), "L": float(d.lower),
           "U/L": d.ratio, "s": round(took, 1), "regions": d.search.regions if d.search else 0,
           "stopped": d.search.stopped if d.search else "equivalent", "checker s": round(replay, 1),
           "valid": report.valid}
    if milp_limit > 0:
        best, dual, ms = milp(a, b, lo, hi, milp_limit)
        row |= {"MILP incumbent": best, "MILP dual bound": dual, "MILP s": round(ms, 1)}
    for method in ("CROWN", "alpha-CROWN"):
        value, ls, status = lirpa(a, b, lo, hi, method)
        row |= {f"{method} U": value, f"{method} s": round(ls, 1), f"{method} status": status}
    rows.append(row)
    print(json.dumps(row), flush=True)
    return row


def epsilon_counts(pairs: list, seconds: float) -> dict:
    """--epsilon at ε = f·L0 for f in (0.5, 0.9, 1.1, 1.5, 2, 4), L0 the witness value of a 1 s run."""
    counts: dict[float, Counter] = {}
    for _, a, b, lo, hi in pairs:
        A, B = load(a).network, load(b).network
        box = parse_box(f"{lo},{hi}", A.m)
        L0 = distance(A, B, box, seconds=1, max_regions=3).lower
        for f in (0.5, 0.9, 1.1, 1.5, 2.0, 4.0):
            eps = L0 * fmpq(int(f * 10), 10)
            d = distance(A, B, box, seconds=seconds, epsilon=eps)
            doc = distance_certificate(d, (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64)), (A, B))
            assert check_certificate(json.loads(json.dumps(doc))).valid
            counts.setdefault(f, Counter())[d.verdict] += 1
    out = {f"{f} L0": dict(c) for f, c in counts.items()}
    print(json.dumps({"epsilon": out}), flush=True)
    return out


def top1_counts(pairs: list, radii: list[fmpq], centres: int, seconds: float, label: str) -> dict:
    """--top1 on the boxes c ± r (clipped to the pair's box) for ``centres`` seeded centres c and each radius r:
    the agree / differ / unknown counts, the median seconds, and every certificate replayed."""
    out = {}
    for r in radii:
        counts: Counter = Counter()
        times, regions = [], []
        for p, (_, a, b, lo, hi) in enumerate(pairs):
            A, B = load(a).network, load(b).network
            rng = np.random.default_rng(1000 + p)
            for _ in range(centres):
                c = [fmpq(int(t * 256), 256) for t in rng.uniform(lo, hi, A.m)]
                box = [(max(x - r, fmpq(int(lo))), min(x + r, fmpq(int(hi)))) for x in c]
                res = top1(A, B, box, seconds=seconds)
                counts[res.verdict] += 1
                times.append(res.seconds)
                regions.append(res.regions)
                if res.verdict != "unknown":
                    doc = top1_certificate(res, (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64)), (A, B))
                    assert check_certificate(json.loads(json.dumps(doc))).valid
        out[str(r)] = {**{v: counts[v] for v in ("agree", "differ", "unknown")},
                       "median s": round(float(np.median(times)), 2), "max regions": max(regions)}
    print(json.dumps({"top1": label, "counts": out}), flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=60.0, help="certsym's budget per small pair (default 60)")
    p.add_argument("--large-seconds", type=float, default=120.0, help="budget for 784-256-10 (default 120)")
    p.add_argument("--milp-limit", type=float, default=6.0, help="HiGHS seconds per objective (default 6)")
    p.add_argument("--seeds", type=int, default=2, help="20-64-5 models (default 2)")
    p.add_argument("--epsilon-seconds", type=float, default=10.0, help="budget per --epsilon run (default 10)")
    p.add_argument("--lirpa", metavar="PATH", help="a directory holding auto_LiRPA, added to sys.path")
    p.add_argument("--skip-large", action="store_true")
    p.add_argument("--top1-only", action="store_true", help="only the --top1 counts")
    p.add_argument("--top1-seconds", type=float, default=10.0, help="budget per --top1 run (default 10)")
    args = p.parse_args()
    if args.lirpa:
        sys.path.insert(0, args.lirpa)
    rows: list = []
    small = []
    for seed in range(args.seeds):
        a = model(20, 64, 5, seed)
        for name, b in copies(a).items():
            small.append((f"20-64-5 #{seed} vs {name}", a, b, -1.0, 1.0))
    large = model(784, 256, 10, 0)
    if not args.top1_only:
        for name, a, b, lo, hi in small:
            run(name, a, b, lo, hi, args.seconds, args.milp_limit, rows)
        if not args.skip_large:
            run("784-256-10 vs float16", large, copies(large)["float16"], 0.0, 1.0, args.large_seconds, 0, rows)
        epsilon_counts(small, args.epsilon_seconds)
    top1_counts(small, [fmpq(1, 64), fmpq(1, 16), fmpq(1, 4), fmpq(1)], 3, args.top1_seconds, "20-64-5 pairs")
    if not args.skip_large:
        top1_counts([("784-256-10 vs float16", large, copies(large)["float16"], 0.0, 1.0)],
                    [fmpq(1, 255), fmpq(4, 255), fmpq(16, 255)], 3, args.top1_seconds * 3, "784-256-10 vs float16")


if __name__ == "__main__":
    main()

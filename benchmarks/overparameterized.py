"""Safran and Shamir's experiment with one student neuron added (n = k + 1): for k = 6 … 14, R runs of gradient
descent on the exact population loss from W_ij ~ N(0, 1/k) for all (k + 1) × k weights (Safran and Shamir's
protocol); "spurious" means a final loss ≥ 10^-3. Prints, per k, the spurious share with a 95% Wilson interval
beside the published share at n = k + 1 (0.1% at k = 8, 10 and 11, 0.3% at 12, 1.5% at 13, 5.5% at 14; about 0
below), the spurious losses found, and the time.

Run: ``python benchmarks/overparameterized.py [--runs 1000] [--ks 6-14] [--seed 2018]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from certsym.landscape.descent import PUBLISHED_PLUS_ONE as PUBLISHED
from certsym.landscape.descent import experiment, wilson


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--ks", default="6-14")
    p.add_argument("--seed", type=int, default=2018)
    args = p.parse_args()
    lo, _, hi = args.ks.partition("-")
    print("| k | runs | spurious | share (95% interval) | published | spurious losses | time |")
    print("|---|---|---|---|---|---|---|")
    for k in range(int(lo), int(hi or lo) + 1):
        start = time.perf_counter()
        e = experiment(k, args.runs, args.seed, extra=1)
        spurious = [r for r in e.runs if r.lands_in != "global minimum"]
        a, b = wilson(len(spurious), args.runs)
        losses = Counter(f"{r.loss:.4f}" for r in spurious)
        print(f"| {k} | {args.runs} | {len(spurious)} | {100 * len(spurious) / args.runs:.1f}% "
              f"({100 * a:.1f}–{100 * b:.1f}%) | {f'{PUBLISHED[k]}%' if k in PUBLISHED else '—'} | "
              f"{', '.join(f'{v} ×{c}' for v, c in sorted(losses.items())) or '—'} | "
              f"{time.perf_counter() - start:.0f} s |", flush=True)


if __name__ == "__main__":
    main()

"""Safran and Shamir's experiment at their scale: for k = 6 … 20, R runs of gradient descent on the exact population
loss from W_ij ~ N(0, 1/k) (their code draws randn(k, k)/sqrt(k)), advanced together in batches; "spurious" means a
final loss ≥ 10^-3. Prints, per k, the spurious share with a
95% Wilson interval beside the published share (1000 runs each), the end points found with their certified
losses and indices (``certsym landscape descent``'s certification), and the time.

Run: ``python benchmarks/safran_shamir.py [--runs 1000] [--ks 6-20] [--init normal|uniform] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import time

from certsym.landscape.descent import PUBLISHED_SHARES as PUBLISHED
from certsym.landscape.descent import experiment, wilson


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--init", choices=("normal", "uniform"), default="normal",
                   help="N(0, 1/k), the published protocol (default), or the uniform of the same variance")
    p.add_argument("--ks", default="6-20")
    p.add_argument("--seed", type=int, default=2018)
    p.add_argument("--json", metavar="OUT")
    args = p.parse_args()
    lo, _, hi = args.ks.partition("-")
    rows = []
    for k in range(int(lo), int(hi or lo) + 1):
        start = time.perf_counter()
        e = experiment(k, args.runs, args.seed, init=args.init)
        spurious = sum(r.loss >= 1e-3 for r in e.runs)
        certified = e.certified_end_points()
        seconds = time.perf_counter() - start
        a, b = wilson(spurious, args.runs)
        ends = {}
        for name, count in e.counts.most_common():
            g = certified.get(name)
            c = g.critical if g else None
            ends[name] = {"runs": count, "family": c.family.name if c else None,
                          "F": float(c.box.loss.mid()) if c else None,
                          "negative": c.inertia.negative if c else None, "reason": g.reason if g and not c else ""}
        row = {"k": k, "runs": args.runs, "spurious %": round(100 * spurious / args.runs, 1),
               "95% interval": [round(100 * a, 1), round(100 * b, 1)], "published %": PUBLISHED.get(k),
               "inside": PUBLISHED.get(k) is not None and 100 * a <= PUBLISHED[k] <= 100 * b,
               "seconds": round(seconds, 1), "end points": ends}
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()

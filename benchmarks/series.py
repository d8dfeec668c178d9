"""The exact series in t = k^(-1/2) (``certsym landscape series``): derivation time per family and order, and the
agreement of each exact coefficient with its least-squares fit (digits = −log10 |exact − fit| / max(1, |exact|)).

Run: ``python benchmarks/series.py [--orders 2,4,6]``.
"""

from __future__ import annotations

import argparse
import math
import time

from certsym.landscape.expansion import agreement, expand
from certsym.landscape.series import fit


def _digits(r) -> float:
    return min(16.0, -math.log10(max(r.difference, 1e-17) / max(1.0, abs(r.value))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--orders", default="2,4,6")
    args = p.parse_args()
    print("| family | order | derivation | rounds | critical value, digits agreeing with the fit per power |")
    print("|---|---|---|---|---|")
    for name in ("one-misfit", "negative-diagonal", "good-plus-negative"):
        start = time.perf_counter()
        fits = fit(name, report=9)
        fitting = time.perf_counter() - start
        for order in (int(o) for o in args.orders.split(",")):
            e = expand(name, order)
            rows = [r for r in agreement(e, fits) if r.name == e.loss.name and r.fit is not None]
            digits = ", ".join(f"t^{r.power}: {_digits(r):.0f}" for r in rows)
            print(f"| {name} | {order} | {e.seconds:.1f} s | {e.rounds} | {e.loss.name}: {digits} |", flush=True)
        print(f"| {name} | fit | {fitting:.1f} s | | |")


if __name__ == "__main__":
    main()

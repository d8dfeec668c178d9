"""Theorem 1 at width: `certsym identifiable W.npz --cert I.json` and the checker's replay, against a float rank
test, on random float32 networks 784-n-10; then MATH.md's antiparallel rule at m = 1.

    python benchmarks/identifiable.py [--n 64 256 1024] [--antiparallel 23 30 38]

The baseline is a process that loads the file with numpy, forms W (km × n, columns vec(v_i a_i^T)) in float64
and computes its rank by SVD (numpy.linalg.matrix_rank): the float answer to the rank condition, with no
certificate. certsym decides Theorem 1 exactly and writes a certificate (a rank minor found modulo 2^61 − 1);
the checker (standard library only) replays it against the file. Each size prints its seconds, their ratio,
peak resident memory, and the scaling exponent of each time against the previous size.

The antiparallel rows: m = 1, k = 1, n neurons with pairwise distinct kinks and one antiparallel pair, so that
Theorem 1's zero-factor search would face 2^p orientations while MATH.md's antiparallel rule settles the
question with one rank; `certsym identifiable --cert` and the replay, each with a 300 s limit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from fast_path import RSS  # beside this script: the peak-RSS wrapper

BASELINE = ("import sys, numpy as np\n"
            "with np.load(sys.argv[1]) as z:\n"
            "    A, V = z['0.weight'].astype(np.float64), z['2.weight'].astype(np.float64)\n"
            "W = np.einsum('jn,nq->jqn', V, A).reshape(-1, A.shape[0])\n"
            "print(np.linalg.matrix_rank(W))\n")

# Processes measured here import certsym as an installed copy does, from cached bytecode (pip compiles it at install
# time): an environment that forbids writing bytecode would add the compilation of every module to each run.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)



def timed(argv: list[str], timeout: float = 600) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and stdout of ``python -m argv`` or ``python -c ...`` (inf seconds on
    timeout). Run outside the source tree, whose directory would otherwise shadow the installed package."""
    cmd = [sys.executable, *argv] if argv[0] == "-c" else [sys.executable, "-c", RSS, *argv]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return math.inf, 0.0, "timeout"
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    rss = next((int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("peak-rss-kib")), 0)
    return elapsed, rss / 1024, done.stdout


def network(path: Path, n: int, m: int = 784, k: int = 10, seed: int = 0) -> None:
    """A random float32 784-n-10 network (standard normal weights), saved as .npz with torch's names."""
    rng = np.random.default_rng(seed + n)
    np.savez(path, **{"0.weight": rng.standard_normal((n, m), dtype=np.float32),
                      "0.bias": rng.standard_normal(n, dtype=np.float32),
                      "2.weight": rng.standard_normal((k, n), dtype=np.float32),
                      "2.bias": rng.standard_normal(k, dtype=np.float32)})


def antiparallel(path: Path, n: int) -> None:
    """m = k = 1: slopes ±1..±7, kinks −b_i/a_i pairwise distinct, output weights 3^i, and neurons 0 and n − 1
    antiparallel (benchmarks/startup.py's network at n = 26)."""
    cycle = [1, -2, 3, 5, -7, 2, 1, -3, 5, 7, -1, 2, 3, -5, 7]
    slopes = [cycle[i % len(cycle)] for i in range(n - 1)]
    A = [[str(a)] for a in slopes] + [[str(-slopes[0])]]
    b = [str(3 * i + 1) for i in range(n - 1)] + [str(-1)]
    path.write_text(json.dumps({"M": [[str(3**i) for i in range(n)]], "A": A, "b": b, "c": ["0"]}))


HEADER = ["| n | numpy rank test (s) | certsym identifiable --cert (s) | ratio | peak RSS (MiB) | exponent | "
          "checker replay (s) | checker peak RSS (MiB) | exponent |", "|---|---|---|---|---|---|---|---|---|"]


def width_table(ns: list[int], folder: Path):
    """The Markdown table for the 784-n-10 networks, one row per n."""
    yield from HEADER
    previous = None
    for n in ns:
        path, cert = folder / f"w{n}.npz", folder / f"i{n}.json"
        network(path, n)
        base = min(timed(["-c", BASELINE, str(path)])[0] for _ in range(2))
        ours, rss, out = timed(["certsym", "identifiable", str(path), "--cert", str(cert)])
        assert out.startswith("IDENTIFIABLE"), out
        check, check_rss, out = timed(["certsym_check", str(cert), "--inputs", str(path)])
        assert "VALID identifiable" in out and "INVALID" not in out, out
        if previous is None:
            exps = ("-", "-")
        else:
            n0, t0, c0 = previous
            exps = tuple(f"{math.log(t / t_) / math.log(n / n0):.2f}" for t, t_ in ((ours, t0), (check, c0)))
        previous = n, ours, check
        yield (f"| {n:,} | {base:.2f} | {ours:.2f} | {ours / base:.1f} | {rss:.0f} | {exps[0]} | {check:.1f} | "
               f"{check_rss:.0f} | {exps[1]} |")


def antiparallel_table(ns: list[int], folder: Path):
    """The Markdown table for m = 1 with one antiparallel pair."""
    yield "| n | certsym identifiable --cert (s) | verdict | checker replay (s) |"
    yield "|---|---|---|---|"
    for n in ns:
        path, cert = folder / f"a{n}.json", folder / f"a{n}.cert.json"
        antiparallel(path, n)
        ours, _, out = timed(["certsym", "identifiable", str(path), "--cert", str(cert)], timeout=300)
        verdict = out.split(":")[0] if out != "timeout" else "timeout (300 s)"
        check = timed(["certsym_check", str(cert)], timeout=300)[0] if cert.exists() else math.nan
        yield f"| {n} | {ours:.2f} | {verdict} | {check:.2f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--antiparallel", type=int, nargs="*", default=[23, 30, 38])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for line in width_table(args.n, Path(tmp)):
            print(line, flush=True)
        if args.antiparallel:
            print()
            for line in antiparallel_table(args.antiparallel, Path(tmp)):
                print(line, flush=True)


if __name__ == "__main__":
    main()

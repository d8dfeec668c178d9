"""Fast exact path at scale: `certsym equiv` (certificate included) on two float32 networks versus a process
that reads both files once and hashes them with SHA-256 (the issue's baseline), and one that loads both with numpy
and makes one pass over the weights; then the checker's replay. Medians of three runs, the processes alternating.

    python benchmarks/fast_path.py [--n 100000] [--m 784] [--k 10] [--dir DIR]

Prints one table row per size: baseline seconds, certsym seconds, their ratio, checker seconds and their ratio to
certsym's, the peak RSS of both (the checker's also against the two files' size).
The second network is the first with its hidden units permuted, rescaled by powers of two (exact in
float32) and one dead unit added, so the verdict is EQUIVALENT with n matches. A third network is the second
with one first-layer weight moved by one ulp: its NOT EQUIVALENT verdict (witness, near-miss summary and
certificate) is timed against the equivalent pair's, in the same run, and replayed.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BASELINE = ("import sys, numpy as np\n"
            "s = 0.0\n"
            "for p in sys.argv[1:]:\n"
            "    with np.load(p) as z:\n"
            "        s += sum(float(np.abs(z[k]).sum()) for k in z.files)\n"
            "print(s)\n")
# The baseline: each file read once and hashed with SHA-256 (what binding a certificate to the files costs).
READ_HASH = ("import hashlib, sys\n"
             "for p in sys.argv[1:]:\n"
             "    with open(p, 'rb') as fh:\n"
             "        print(hashlib.sha256(fh.read()).hexdigest())\n")
RSS = ("import resource, runpy, sys\n"
       "sys.argv = sys.argv[1:]\n"
       "try:\n"
       "    runpy.run_module(sys.argv[0], run_name='__main__')\n"
       "except SystemExit as e:\n"
       "    code = e.code\n"
       "else:\n"
       "    code = 0\n"
       "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
       "print('peak-rss-kib', hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
       "sys.exit(code)\n")

# Processes measured here import certsym as an installed copy does, from cached bytecode (pip compiles it at install
# time): an environment that forbids writing bytecode would add the compilation of every module to each run.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)



def make_pair(directory: Path, n: int, m: int, k: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """Two float32 .npz networks computing the same function, and the second one moved by one ulp (see the
    module docstring)."""
    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((n, m), dtype=np.float32)
    b1 = rng.standard_normal(n, dtype=np.float32)
    W2 = rng.standard_normal((k, n), dtype=np.float32)
    b2 = rng.standard_normal(k, dtype=np.float32)
    perm = rng.permutation(n)
    scale = (2.0 ** rng.integers(-3, 4, size=n)).astype(np.float32)
    W1b = np.vstack([W1[perm] * scale[:, None], rng.standard_normal((1, m), dtype=np.float32)])
    b1b = np.append(b1[perm] * scale, np.float32(0.5))
    W2b = np.hstack([W2[:, perm] / scale, np.zeros((k, 1), dtype=np.float32)])
    W1c = W1b.copy()
    W1c[n // 2, m // 2] = np.nextafter(W1c[n // 2, m // 2], np.float32(np.inf))  # one ulp
    paths = directory / "theta1.npz", directory / "theta2.npz", directory / "theta3.npz"
    for path, tensors in zip(paths, ((W1, b1, W2, b2), (W1b, b1b, W2b, b2), (W1c, b1b, W2b, b2)), strict=True):
        np.savez(path, **dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"), tensors, strict=True)))
    return paths


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB, when reported) and stdout of a subprocess."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
    rss = next((int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("peak-rss-kib")), 0)
    return elapsed, rss, done.stdout


HEADER = ["| n | m | k | read + SHA-256 (s) | numpy load + pass (s) | certsym equiv + certificate (s) | "
          "ratio to read + SHA-256 | ratio to numpy | exponent | checker (s) | "
          "checker / certsym | certsym peak RSS (MiB) | checker peak RSS (MiB) | checker RSS / both files | "
          "one-ulp pair: equiv + certificate (s) | its ratio to the equivalent pair | its checker (s) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]


def table(ns: list[int], m: int, k: int, directory: Path | None = None):
    """Yield the Markdown table's lines, one row per n (the header first)."""
    yield from HEADER
    previous = None  # (n, certsym's seconds) of the row before: the scaling exponent between the two
    with tempfile.TemporaryDirectory() as tmp:
        directory = directory or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        for n in ns:
            a, b, c = make_pair(directory, n, m, k)
            cert, near = directory / "cert.json", directory / "near.json"
            # medians of three, each baseline run beside a run of certsym so that both see the same machine
            runs = []
            for _ in range(3):
                read_hash = timed([sys.executable, "-c", READ_HASH, str(a), str(b)])[0]
                base = timed([sys.executable, "-c", BASELINE, str(a), str(b)])[0]
                ours, rss, out = timed([sys.executable, "-c", RSS, "certsym", "equiv", str(a), str(b), "--cert",
                                        str(cert), "--reference"])
                runs.append((read_hash, base, ours, rss))
            read_hash, base, ours, rss = (statistics.median(column) for column in zip(*runs, strict=True))
            assert out.startswith("EQUIVALENT"), out
            check, check_rss, out = timed([sys.executable, "-c", RSS, "certsym_check", str(cert), "--inputs", str(a),
                                           str(b)])
            files = (a.stat().st_size + b.stat().st_size) / 2**20
            assert "VALID" in out and "INVALID" not in out, out
            last, _, out = timed([sys.executable, "-m", "certsym", "equiv", str(a), str(c), "--cert", str(near),
                                  "--reference"])
            assert out.startswith("NOT EQUIVALENT"), out
            last_check, _, out = timed([sys.executable, "-m", "certsym_check", str(near), "--inputs", str(a), str(c)])
            assert "VALID" in out and "INVALID" not in out, out
            exponent = f"{math.log(ours / previous[1]) / math.log(n / previous[0]):.2f}" if previous else "-"
            previous = n, ours
            yield (f"| {n:,} | {m} | {k} | {read_hash:.2f} | {base:.2f} | {ours:.2f} | {ours / read_hash:.2f} | "
                   f"{ours / base:.1f} | {exponent} | {check:.1f} | "
                   f"{check / ours:.2f} | {rss / 1024:.0f} | {check_rss / 1024:.0f} | {check_rss / 1024 / files:.2f} | "
                   f"{last:.2f} | {last / ours:.2f} | {last_check:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--m", type=int, default=784)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=None, help="where to write the networks (default: a temporary one)")
    args = ap.parse_args()
    for line in table(args.n, args.m, args.k, args.dir):
        print(line, flush=True)


if __name__ == "__main__":
    main()

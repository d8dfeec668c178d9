"""Does ``--seconds S`` bound the whole command? Whole processes, wall clock.

``certsym distance A B --seconds S --cert C`` is run as a user runs it (a fresh interpreter: imports, reading the
files, the search, the certificate, its replay, writing) on two pairs built here, and the elapsed wall-clock time is
compared with S. The goal (issue 45): elapsed ≤ S + 5 s.

- shallow: a random float32 784-256-10 network (weights N(0, 1/fan-in)) against its float16 copy, on [0, 1]^784;
- deep: a random float32 5-50-50-50-5 network against a copy with every weight moved by a relative 10^-3 (seeded),
  on [-1, 1]^5.

    python benchmarks/seconds_budget.py [--seconds 10 20] [--repeat 1]

Timing lives here, never in the tests: the tests bound their searches by counts and drive time budgets with fake
clocks (certsym.decide.deadline).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _layers(rng: np.random.Generator, widths: list[int]) -> dict[str, np.ndarray]:
    """A torch.nn.Sequential-style state dict (Linear at 0, 2, 4, ...), float32, weights N(0, 1/fan-in)."""
    out = {}
    for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        out[f"{2 * i}.weight"] = (rng.standard_normal((b, a)) / np.sqrt(a)).astype(np.float32)
        out[f"{2 * i}.bias"] = (rng.standard_normal(b) * 0.1).astype(np.float32)
    return out


def pairs(folder: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> ([file A, file B], extra arguments): the shallow and the deep pair, saved as .npz."""
    rng = np.random.default_rng(45)
    shallow = _layers(rng, [784, 256, 10])
    half = {k: v.astype(np.float16) for k, v in shallow.items()}
    deep = _layers(rng, [5, 50, 50, 50, 5])
    moved = {k: (v * (1 + 1e-3 * rng.standard_normal(v.shape))).astype(np.float32) for k, v in deep.items()}
    out = {}
    for name, (a, b), extra in (("shallow 784-256-10 / float16", (shallow, half), []),
                                ("deep 5-50-50-50-5 / moved 1e-3", (deep, moved), ["--box=-1,1"])):
        paths = []
        for tag, arrays in (("a", a), ("b", b)):
            path = folder / f"{name.split()[0]}_{tag}.npz"
            np.savez(path, **arrays)
            paths.append(str(path))
        out[name] = (paths, extra)
    return out


def run(paths: list[str], extra: list[str], seconds: float, cert: Path) -> tuple[float, int, dict]:
    """(wall-clock seconds, exit code, the --json output or {}) of one whole ``certsym distance`` process."""
    cmd = [sys.executable, "-m", "certsym", "distance", *paths, *extra, "--seconds", str(seconds), "--cert",
           str(cert), "--json"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = {"error": (done.stderr.strip().splitlines() or [""])[-1]}
    return elapsed, done.returncode, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[10.0, 20.0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print("| pair | --seconds S | elapsed (s) | elapsed − S (s) | within S + 5 | exit | stopped |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for name, (paths, extra) in pairs(Path(d)).items():
            for seconds in args.seconds:
                for _ in range(args.repeat):
                    elapsed, code, out = run(paths, extra, seconds, Path(d) / "c.json")
                    stopped = out.get("stopped", out.get("error", ""))
                    if out.get("refused"):  # the certificate did not replay: UNKNOWN, with the checker's reason
                        stopped = f"{stopped}; refused: {out['refused']}"
                    print(f"| {name} | {seconds:g} | {elapsed:.1f} | {elapsed - seconds:+.1f} | "
                          f"{'yes' if elapsed <= seconds + 5 else 'NO'} | {code} | {stopped} |", flush=True)


if __name__ == "__main__":
    main()

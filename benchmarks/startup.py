"""Start-up and small commands: this tree against an earlier revision, side by side in one run.

Each command runs ``--repeat`` times, alternating the two trees, in fresh processes; the table gives the medians
and their ratio. The commands: ``certsym --help``; ``equiv`` on a pair of small float32 npz files (the fast path,
whose imports dominate); ``identifiable`` on m = 1, n = 26 with one antiparallel pair (MATH.md's antiparallel
rule: one rank settles it). It also says whether the fast path imported sympy.

    python benchmarks/startup.py [--base REV] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Processes measured here import certsym as an installed copy does, from cached bytecode (pip compiles it at install
# time): an environment that forbids writing bytecode would add the compilation of every module to each run.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)



def _files(folder: Path) -> dict[str, list[str]]:
    rng = np.random.default_rng(0)
    net = {"0.weight": rng.standard_normal((64, 784)), "0.bias": rng.standard_normal(64),
           "2.weight": rng.standard_normal((10, 64)), "2.bias": rng.standard_normal(10)}
    np.savez(folder / "a.npz", **{k: v.astype(np.float32) for k, v in net.items()})
    np.savez(folder / "b.npz", **{k: v.astype(np.float32) for k, v in net.items()})
    n = 26
    slopes = [1, -2, 3, 5, -7, 2, 1, -3, 5, 7, -1, 2, 3, -5, 7, 1, -2, 3, 5, -7, 2, 1, -3, 5, 7]
    A = [[str(a)] for a in slopes] + [[str(-slopes[0])]]
    b = [str(3 * i + 1) for i in range(n - 1)] + ["-1"]
    (folder / "antiparallel.json").write_text(json.dumps({"M": [[str(3**i) for i in range(n)]], "A": A, "b": b,
                                                          "c": ["0"]}))
    return {"certsym --help": ["--help"],
            "equiv, two 784-64-10 float32 npz": ["equiv", str(folder / "a.npz"), str(folder / "b.npz")],
            "identifiable, m = 1, n = 26, one antiparallel pair": ["identifiable",
                                                                  str(folder / "antiparallel.json")]}


def _run(tree: Path, argv: list[str], timeout: float) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    try:  # run outside both trees: the working directory comes first on sys.path and would shadow PYTHONPATH
        subprocess.run([sys.executable, "-m", "certsym", *argv], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - start


def _imports_sympy(tree: Path, argv: list[str]) -> bool:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "certsym", *argv], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    return any(line.rstrip().endswith(" sympy") for line in done.stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=None, help="the earlier revision to compare with (default: none)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per run before it counts as over")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trees = {"this tree": ROOT}
        if args.base:
            base = folder / "base"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            trees[f"base {args.base}"] = base
        try:
            commands = _files(folder)
            print("| command | " + " | ".join(f"{name} (s)" for name in trees) + (" | ratio |" if args.base else " |"))
            print("|---" * (len(trees) + 1 + bool(args.base)) + "|")
            for label, argv in commands.items():
                times: dict[str, list[float]] = {name: [] for name in trees}
                for _ in range(args.repeat):
                    for name, tree in trees.items():  # alternating: both see the same machine
                        times[name].append(_run(tree, argv, args.timeout))
                medians = [statistics.median(t) for t in times.values()]
                cells = [f"{m:.2f}" if m != float("inf") else f"> {args.timeout:.0f}" for m in medians]
                ratio = f" | {medians[0] / medians[1]:.2f}" if args.base and medians[1] != float("inf") else \
                    (" | -" if args.base else "")
                print(f"| {label} | " + " | ".join(cells) + ratio + " |")
            fast = commands["equiv, two 784-64-10 float32 npz"]
            for name, tree in trees.items():
                print(f"{name}: the fast path imports sympy: {'yes' if _imports_sympy(tree, fast) else 'no'}")
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder / "base")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()

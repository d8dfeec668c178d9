"""`certsym audit` on a model zoo: many float32 networks in a few classes of equal functions.

    python benchmarks/audit_zoo.py [--quick] [--dir DIR] [--seed S] [--classes 20] [--per-class 10]

Builds (seeded, in a temporary directory unless --dir) 200 float32 .npz models of shape 784-1024-10 in 20
classes (--classes × --per-class of them; --quick: 20 models of 784-64-10 in 4 classes). Each class has a random
base network of n - S live units and S dead ones; every other member is the base with its live units permuted
and rescaled by powers of two (exact in float32), s of them split into two positively proportional halves
(a, b, v) → (a, b, v/2) and (2^t a, 2^t b, v/2^(t+1)), and S - s dead units (v = 0, or a = 0 with a negative
bias), so that every file has n hidden units. File names are shuffled, so that a class is spread over the
directory.

Then times, through the command line in a subprocess, `certsym audit DIR --cert-dir C --json` with
--workers 1, --workers 2 and --dask local:2, against a process that makes one `np.load` of every file with every
array touched (the sum over the files): whole processes against whole processes, as the issue measures; the loads
alone, timed inside that process, are printed beside it. For each case it checks that the classes found are exactly the
classes built, and replays a seeded sample of 10 certificates with the checker
(`certsym check CERT --inputs REP MEMBER`, one process each), timing each replay. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")
BASELINE = ("import sys, time, numpy as np\n"
            "paths = sys.argv[1:]\n"
            "t = time.perf_counter()\n"
            "s = 0.0\n"
            "for p in paths:\n"
            "    with np.load(p) as z:\n"
            "        s += sum(float(z[k].sum()) for k in z.files)\n"
            "print(time.perf_counter() - t, s)\n")

# Processes measured here import certsym as an installed copy does, from cached bytecode (pip compiles it at install
# time): an environment that forbids writing bytecode would add the compilation of every module to each run.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)



def build_zoo(directory: Path, classes: int, per_class: int, n: int, m: int, k: int, spare: int,
              seed: int = 0) -> dict[str, int]:
    """Write classes × per_class float32 .npz networks (module docstring) into ``directory``; {file: class}.
    Cost: O(classes · per_class · n · m) random numbers and the writes."""
    rng = np.random.default_rng(seed)
    names = rng.permutation(classes * per_class)
    label: dict[str, int] = {}
    live = n - spare
    for c in range(classes):
        A = rng.standard_normal((live, m), dtype=np.float32)
        b = rng.standard_normal(live, dtype=np.float32)
        V = rng.standard_normal((k, live), dtype=np.float32)
        c0 = rng.standard_normal(k, dtype=np.float32)
        for j in range(per_class):
            splits = 0 if j == 0 else int(rng.integers(1, spare))
            perm = rng.permutation(live) if j else np.arange(live)
            d = (np.float32(2.0) ** rng.integers(-3, 4, live).astype(np.float32)) if j else np.ones(live, np.float32)
            W1, b1, W2 = A[perm] * d[:, None], b[perm] * d, V[:, perm] / d
            split = rng.choice(live, splits, replace=False)
            t = np.float32(2.0) ** rng.choice(np.array([-2, -1, 1, 2], dtype=np.float32), splits)
            extra_A, extra_b, extra_V = W1[split] * t[:, None], b1[split] * t, W2[:, split] / (2 * t)
            W2 = W2.copy()
            W2[:, split] /= 2
            dead = spare - splits
            dead_A = rng.standard_normal((dead, m), dtype=np.float32)
            dead_b = rng.standard_normal(dead, dtype=np.float32)
            dead_V = rng.standard_normal((k, dead), dtype=np.float32)
            flat = rng.random(dead) < 0.5  # half of them: a = 0 and b < 0 (any v); the others: v = 0
            dead_A[flat], dead_b[flat] = 0, -np.abs(dead_b[flat]) - 1
            dead_V[:, ~flat] = 0
            W1 = np.vstack([W1, extra_A, dead_A])
            b1 = np.concatenate([b1, extra_b, dead_b])
            W2 = np.hstack([W2, extra_V, dead_V])
            order = rng.permutation(n)
            path = directory / f"model_{names[c * per_class + j]:04d}.npz"
            np.savez(path, **dict(zip(KEYS, (W1[order], b1[order], W2[:, order], c0), strict=True)))
            label[str(path)] = c
    return label


def certsym_command() -> list[str]:
    """The console script beside this interpreter (LocalCluster's spawned workers need a guarded main).
    Cost: one stat."""
    script = Path(sys.executable).with_name("certsym")
    return [str(script)] if script.exists() else [sys.executable, "-m", "certsym"]


def run_case(zoo: Path, out: Path, options: list[str], label: dict[str, int], replay: int = 10) -> dict:
    """Time one `certsym audit` run; check its classes against ``label``; replay ``replay`` certificates (0: all;
    -1: none). Cost: the audit, plus one checker process per certificate replayed."""
    certs = out / "certs"
    shutil.rmtree(certs, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.run([*certsym_command(), "audit", str(zoo), "--cert-dir", str(certs), "--json", *options],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"certsym audit {' '.join(options)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout)
    found = sorted(sorted(c["members"]) for c in result["classes"])
    built: dict[int, list[str]] = {}
    for path, c in label.items():
        built.setdefault(c, []).append(path)
    exact = found == sorted(sorted(ms) for ms in built.values())
    triples = [(cert, cls["against"][member], member) for cls in result["classes"]
               for member, cert in cls["certificates"].items()]
    complete = len(triples) == len(label) - len(result["classes"])
    count = len(triples) if replay == 0 else max(0, min(replay, len(triples)))
    sample = [triples[i] for i in np.random.default_rng(1).choice(len(triples), count, replace=False)]
    valid, times = 0, []
    for cert, rep, member in sample:
        t = time.perf_counter()
        check = subprocess.run([*certsym_command(), "check", cert, "--inputs", rep, member], capture_output=True,
                               text=True)
        times.append(time.perf_counter() - t)
        valid += check.returncode == 0 and "VALID" in check.stdout
    return {"seconds": seconds, "classes": len(result["classes"]), "exact": exact and complete,
            "certificates": len(triples), "valid": valid, "sampled": len(sample),
            "check": sum(times) / len(times) if times else float("nan")}


def main() -> None:
    """Build the zoo, time numpy and the three audit cases, print the table. Cost: about a minute per run (full)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 models of 784-64-10 in 4 classes")
    parser.add_argument("--dir", help="build the zoo here and keep it (default: a temporary directory)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replay", type=int, default=10, help="certificates replayed per case (0: every one)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of every case, alternating (default 3)")
    parser.add_argument("--classes", type=int, default=20, help="classes of the full zoo (default 20)")
    parser.add_argument("--per-class", type=int, default=10, help="models per class of the full zoo (default 10)")
    args = parser.parse_args()
    classes, per_class, n, spare = (4, 5, 64, 8) if args.quick else (args.classes, args.per_class, 1024, 32)
    m, k = 784, 10
    with tempfile.TemporaryDirectory(prefix="audit-zoo-") as tmp:
        root = Path(args.dir) if args.dir else Path(tmp)
        zoo = root / "zoo"
        zoo.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        label = build_zoo(zoo, classes, per_class, n, m, k, spare, args.seed)
        print(f"built {len(label)} models of {m}-{n}-{k} in {classes} classes in {time.perf_counter() - t:.1f} s "
              f"({sum(Path(p).stat().st_size for p in label) / 2**20:.0f} MiB)", file=sys.stderr)
        files = sorted(label)
        os.sync()  # the zoo's pages written back before anything is timed
        cases = (("--workers 1", ["--workers", "1"]), ("--workers 2", ["--workers", "2"]),
                 ("--dask local:2", ["--dask", "local:2"]))
        subprocess.run([sys.executable, "-c", BASELINE, *files], capture_output=True, check=True)  # warm the cache
        baseline: list[float] = []
        process: list[float] = []  # the same baseline as a whole process (start-up and numpy's import included)
        runs: dict[str, list[dict]] = {name: [] for name, _ in cases}
        for r in range(max(1, args.runs)):  # the cases alternate, so that a slow minute falls on all of them
            start = time.perf_counter()
            base = subprocess.run([sys.executable, "-c", BASELINE, *files], capture_output=True, text=True, check=True)
            process.append(time.perf_counter() - start)
            baseline.append(float(base.stdout.split()[0]))
            for name, options in cases:
                print(f"run {r + 1}: certsym audit {name} ...", file=sys.stderr)
                runs[name].append(run_case(zoo, root / name.strip("-").replace(" ", "_").replace(":", "_"), options,
                                           label, args.replay if r == 0 else -1))
        numpy_seconds = float(np.median(process))  # whole processes against whole processes, as the issue measures
        inside = float(np.median(baseline))
        rows = [(name, {**runs[name][0], "seconds": float(np.median([x["seconds"] for x in runs[name]])),
                        "exact": all(x["exact"] for x in runs[name])})
                for name, _ in cases]
        scaling = [b["seconds"] / a["seconds"] for a, b in zip(runs["--workers 1"], runs["--workers 2"], strict=True)]
    print(f"\n{len(label)} float32 models of {m}-{n}-{k}, {classes} classes; certsym audit DIR --cert-dir C "
          f"through the command line (wall time, process start included; medians of {len(baseline)} runs)\n")
    print("| case | time (s) | ratio to the numpy process | ratio to numpy's loads alone | classes found | "
          "classes exact | certificates | sample replayed VALID | checker (s per certificate) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| numpy process: start, import, one np.load of every file, all arrays touched | {numpy_seconds:.2f} | "
          f"1.0 | {numpy_seconds / inside:.2f} | - | - | - | - | - |")
    print(f"| numpy's loads alone (timed inside that process) | {inside:.2f} | {inside / numpy_seconds:.2f} | 1.0 | "
          "- | - | - | - | - |")
    for name, r in rows:
        print(f"| certsym audit {name} | {r['seconds']:.2f} | {r['seconds'] / numpy_seconds:.1f} | "
              f"{r['seconds'] / inside:.1f} | {r['classes']} | {'yes' if r['exact'] else 'NO'} | {r['certificates']} | "
              f"{r['valid']}/{r['sampled']} | {r['check']:.2f} |")
    print(f"\n--workers 2 against --workers 1, run by run: {', '.join(f'{x:.2f}' for x in scaling)} "
          f"(median {np.median(scaling):.2f}); numpy processes: {', '.join(f'{x:.2f}' for x in process)} s, their "
          f"loads: {', '.join(f'{x:.2f}' for x in baseline)} s")
    if not all(r["exact"] and r["valid"] == r["sampled"] for _, r in rows):
        raise SystemExit("some case found wrong classes or a certificate did not replay VALID")


if __name__ == "__main__":
    main()

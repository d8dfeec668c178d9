"""Equivalence at scale: certsym equiv + independent check, against z3 (exact, over the reals) and a HiGHS
MILP on a box (approximate).

    python benchmarks/equiv_scaling.py [--sizes 100 1000 10000 100000] [--m 32] [--timeout 60]
                                       [--readme benchmarks/README.md]

Pairs: θ random with small-height rational entries (numerators in [-9, 9], denominators in 1..9),
θ' = h·θ for a random h ∈ H_n (permutation, positive rational scalings) with 1% of its neurons
split into two positively proportional halves and a dead neuron appended. z3 is a baseline only
(``pip install z3-solver``); it gets the formula ∃x f1(x) ≠ f2(x) over the reals (unsat = equal).
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from flint import fmpq

from certsym.certify import InputRecord, equivalence_certificate
from certsym.core.group import HElement
from certsym.core.network import Network
from certsym.decide.equivalence import decide
from certsym_check import check_certificate


def rand_q(rng: random.Random) -> fmpq:
    return fmpq(rng.randint(-9, 9), rng.randint(1, 9))


def disguised_pair(n: int, m: int, k: int, seed: int) -> tuple[Network, Network]:
    rng = random.Random(seed)
    M = [[rand_q(rng) for _ in range(n)] for _ in range(k)]
    A = [[rand_q(rng) for _ in range(m)] for _ in range(n)]
    b = [rand_q(rng) for _ in range(n)]
    c = [rand_q(rng) for _ in range(k)]
    theta = Network.build(M, A, b, c)
    perm = list(range(n))
    rng.shuffle(perm)
    h = HElement.make(perm, [fmpq(rng.randint(1, 9), rng.randint(1, 9)) for _ in range(n)])
    other = h.act(theta)
    neurons = other.neurons()
    for i in rng.sample(range(n), max(1, n // 100)):
        nu = neurons[i]
        half = tuple(x / 2 for x in nu.v)
        neurons[i] = type(nu)(nu.a, nu.b, half)
        neurons.append(type(nu)(tuple(3 * x for x in nu.a), 3 * nu.b, tuple(x / 3 for x in half)))
    neurons.append(type(neurons[0])(tuple(fmpq(1) for _ in range(m)), fmpq(5), tuple(fmpq(0) for _ in range(k))))
    return theta, Network.from_neurons(neurons, other.c, other.field, m)


def time_certsym(t1: Network, t2: Network) -> tuple[float, float, bool]:
    start = time.perf_counter()
    verdict = decide(t1, t2)
    cert = equivalence_certificate(verdict, (InputRecord("p1", "0" * 64), InputRecord("p2", "0" * 64)))
    mid = time.perf_counter()
    report = check_certificate(cert)
    end = time.perf_counter()
    assert verdict.equivalent and report.valid, report.reason
    return mid - start, end - mid, verdict.equivalent


def time_z3(t1: Network, t2: Network, timeout_s: float) -> tuple[float, str]:
    try:
        from certsym.reproduce.z3_oracle import z3_verdict

        start = time.perf_counter()
        verdict = z3_verdict(t1, t2, timeout_s)
    except ImportError:
        return float("nan"), "z3 not installed"
    return time.perf_counter() - start, "timeout/unknown" if verdict == "unknown" else verdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000, 100000])
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--k", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0, help="z3 and MILP time limit (s)")
    ap.add_argument("--baseline-max-n", type=int, default=1000, help="skip the baselines above this width")
    ap.add_argument("--readme", metavar="PATH", help="also run fast_path.py and write both tables into this file")
    ap.add_argument("--fast-sizes", type=int, nargs="+", default=[1000, 10000, 100000], metavar="N",
                    help="n for the float32 fast-path table (m = 784, k = 10) written with --readme")
    args = ap.parse_args()
    head = ("| n | certsym equiv + certificate (s) | checker replay (s) | total (s) | z3 (s) | z3 verdict "
            "| z3 / certsym | MILP (s) | MILP verdict (approx.) | MILP / certsym |")
    lines = [f"m = {args.m}, k = {args.k}; z3 and MILP limited to {args.timeout:.0f} s each", "", head,
             "|" + "---|" * 10]
    print("\n".join(lines), flush=True)
    for n in args.sizes:
        t1, t2 = disguised_pair(n, args.m, args.k, seed=n)
        decide_s, check_s, _ = time_certsym(t1, t2)
        total = decide_s + check_s
        cols = []
        for name in ("z3", "milp"):
            if n > args.baseline_max_n:
                cols += ["not run", f"(over --baseline-max-n {args.baseline_max_n})", "-"]
                continue
            seconds, verdict = time_z3(t1, t2, args.timeout) if name == "z3" else _milp(t1, t2, args.timeout)
            ratio = f"> {seconds / total:.0f}" if verdict.startswith("timeout") else f"{seconds / total:.1f}"
            cols += [f"{seconds:.1f}", verdict, ratio]
        line = f"| {n} | {decide_s:.2f} | {check_s:.2f} | {total:.2f} | " + " | ".join(cols) + " |"
        lines.append(line)
        print(line, flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += ["", f"Peak resident memory of the benchmark process: {rss:.0f} MiB."]
    print(lines[-1])
    if args.readme:
        from fast_path import table

        fast = []
        for line in table(args.fast_sizes, 784, 10):
            fast.append(line)
            print(line, flush=True)
        _write_readme(args.readme, lines, fast)


def _milp(t1: Network, t2: Network, timeout: float) -> tuple[float, str]:
    if t1.k != 1:
        return float("nan"), "k > 1 not encoded"
    try:
        from milp_baseline import milp_gap
    except ImportError:
        return float("nan"), "scipy not installed"
    verdict, seconds = milp_gap(t1, t2, time_limit=timeout)
    return seconds, "timeout/unknown" if verdict == "timeout" else verdict


def _write_readme(path: str, lines: list[str], fast: list[str]) -> None:
    import datetime
    import shlex
    import sys

    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    text = f"""# Benchmarks

Timings are measured by scripts, never asserted by tests. Baselines: `python -m pip install -e ".[bench]"`
(z3-solver) and scipy (HiGHS MILP).

## Equivalence at scale (`equiv_scaling.py`)

certsym's exact decision plus certificate, then the independent checker's replay, on disguised pairs (θ and
h·θ with 1% of the neurons split and a dead neuron added). z3 decides ∃x f1(x) ≠ f2(x) over the reals
(exact); the MILP (HiGHS, big-M ReLU encoding) maximizes |f1 − f2| over the box [−10, 10]^m in floating
point, so its verdict is approximate. Regenerate this file with:

    {command}

Measured {datetime.date.today().isoformat()} on the development machine (2 cores):

""" + "\n".join(lines) + """

## Fast exact path for float32 model files (`fast_path.py`)

Two float32 `.npz` networks with m = 784 inputs and k = 10 outputs, the second one the first with its hidden
units permuted, rescaled by powers of two and a dead unit added. The baseline is a process that only loads
both files with numpy and makes one pass over the weights; certsym's process decides equivalence exactly and
writes a certificate that references both files by SHA-256; the checker (standard library only) then replays
it against the files. Part of the command above (`--fast-sizes`); alone: `python benchmarks/fast_path.py`.

""" + "\n".join(fast) + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()

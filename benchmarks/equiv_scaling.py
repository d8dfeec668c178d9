"""Equivalence at scale: certsym equiv + independent check, against z3 deciding ∀x f1(x) = f2(x).

    python benchmarks/equiv_scaling.py [--sizes 100 1000 10000 100000] [--m 32] [--z3-timeout 60]

Pairs: θ random with small-height rational entries (numerators in [-9, 9], denominators in 1..9),
θ' = h·θ for a random h ∈ H_n (permutation, positive rational scalings) with 1% of its neurons
split into two positively proportional halves and a dead neuron appended. z3 is a baseline only
(``pip install z3-solver``); it gets the formula ∃x f1(x) ≠ f2(x) over the reals (unsat = equal).
"""

from __future__ import annotations

import argparse
import random
import time

from flint import fmpq

from certsym.certificate import InputRecord, equivalence_certificate
from certsym.check import check_certificate
from certsym.equivalence import decide
from certsym.group import HElement
from certsym.network import Network


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
        from paper_checks.z3_oracle import z3_verdict

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
    ap.add_argument("--z3-timeout", type=float, default=60.0)
    ap.add_argument("--z3-max-n", type=int, default=1000, help="skip z3 above this width")
    args = ap.parse_args()
    print(f"m = {args.m}, k = {args.k}; times in seconds")
    print("| n | certsym equiv + certificate | checker replay | total | z3 | z3 verdict | z3 / certsym |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        t1, t2 = disguised_pair(n, args.m, args.k, seed=n)
        decide_s, check_s, _ = time_certsym(t1, t2)
        total = decide_s + check_s
        if n <= args.z3_max_n:
            z3_s, z3_verdict = time_z3(t1, t2, args.z3_timeout)
            ratio = f"> {z3_s / total:.0f}" if z3_verdict.startswith("timeout") else f"{z3_s / total:.1f}"
            z3_col = f"{z3_s:.1f}"
        else:
            z3_col, z3_verdict, ratio = "not run", f"(z3 already times out at n = {args.z3_max_n})", "-"
        print(f"| {n} | {decide_s:.2f} | {check_s:.2f} | {total:.2f} | {z3_col} | {z3_verdict} | {ratio} |",
              flush=True)


if __name__ == "__main__":
    main()

"""Deep networks (MATH.md Part III): certsym's three-valued ``equiv`` against its baselines, side by side.

1. Scale: 784-n-n-10 float32 pairs (θ and h·θ, hidden units permuted and rescaled by powers of two in both
   hidden layers, plus one dead unit per layer; and θ with one weight of layer 2 moved by one ulp). certsym's
   process (``equiv --cert``, the files referenced by SHA-256 beyond 200,000 weights) and the checker's replay
   against the files (``check --inputs``) beside a numpy baseline that loads both .npz files and runs one forward
   pass of 1,000 × 784 inputs through each; whole processes, alternating, medians of ``--repeat`` runs.
2. z3 over the reals against certsym on disguised 3-hidden-layer pairs of growing width (both exact).
3. The UNDECIDED rate on random generic pairs with non-increasing widths: independent nets, disguised copies,
   and copies with one weight changed.
4. ``distance --top1`` for deep networks: 8-16-16-4 float32 networks against their float16 copies, on boxes c ± r
   around seeded centres: AGREE / DIFFER / UNKNOWN counts, times, leaves and the checker's replay.
5. ``distance`` and ``--epsilon`` for deep networks, the same pairs and boxes: U/L of one region (interval
   differences over the box) against the branch and bound's halvings after ``--seconds``, and the verified /
   violated / unknown counts at ε = f·L for several f, every certificate replayed.

    python benchmarks/deep.py [--sizes 256 1024] [--repeat 3] [--scale-only] [--z3-widths 2 4 8] [--pairs 200]
                              [--top1-only] [--epsilon-only] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.core.deep import LayeredNetwork
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, UNDECIDED, decide
from certsym.numbers import QQ

# Processes measured here import certsym as an installed copy does, from cached bytecode (pip compiles it at install
# time): an environment that forbids writing bytecode would add the compilation of every module to each run.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

BASELINE = """
import sys, numpy as np
a, b = (np.load(p) for p in sys.argv[1:3])
x = np.random.default_rng(0).random((1000, 784), dtype=np.float32)
for z in (a, b):
    h = x
    for i in range(0, 6, 2):
        h = h @ z[f"{i}.weight"].T + z[f"{i}.bias"]
        h = np.maximum(h, 0) if i < 4 else h
"""


def _pair(n: int, rng: np.random.Generator) -> tuple[dict, dict, dict]:
    widths = [784, n, n, 10]
    a = {}
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        a[f"{2 * i}.weight"] = (rng.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        a[f"{2 * i}.bias"] = (rng.standard_normal(fan_out) * 0.1).astype(np.float32)
    b = {k: v.copy() for k, v in a.items()}
    for layer in (0, 2):
        perm = rng.permutation(n)
        s = (2.0 ** rng.integers(-2, 3, n)).astype(np.float32)
        b[f"{layer}.weight"] = b[f"{layer}.weight"][perm] * s[:, None]
        b[f"{layer}.bias"] = b[f"{layer}.bias"][perm] * s
        b[f"{layer + 2}.weight"] = b[f"{layer + 2}.weight"][:, perm] / s[None, :]
        # one dead unit: a row, and a zero column in the next layer
        b[f"{layer}.weight"] = np.vstack([b[f"{layer}.weight"], rng.standard_normal((1, b[f"{layer}.weight"].shape[1]))
                                          .astype(np.float32)])
        b[f"{layer}.bias"] = np.append(b[f"{layer}.bias"], np.float32(0.5))
        nxt = b[f"{layer + 2}.weight"]
        b[f"{layer + 2}.weight"] = np.hstack([nxt, np.zeros((nxt.shape[0], 1), np.float32)])
    c = {k: v.copy() for k, v in a.items()}
    c["2.weight"][3, 5] = np.nextafter(c["2.weight"][3, 5], np.float32(10))
    return a, b, c


def _run(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def scale(sizes: list[int], repeat: int = 3) -> None:
    """Section 1: whole processes, the three of each row alternating ``repeat`` times, medians side by side."""
    print("| n | numpy load + forward 1000 x 784 (s) | certsym equiv --cert (s) | ratio (goal <= 5) | verdict | "
          "check --inputs (s) | check / equiv (goal <= 3) |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            a, b, c = _pair(n, rng)
            paths = {}
            for name, z in (("a", a), ("b", b), ("c", c)):
                paths[name] = str(Path(d) / f"{name}{n}.npz")
                np.savez(paths[name], **z)
            for other, label in (("b", "disguised copy"), ("c", "one last bit")):
                cert = str(Path(d) / f"{other}{n}.json")
                files = [paths["a"], paths[other]]
                runs: dict[str, list[float]] = {"base": [], "equiv": [], "check": []}
                codes = {}
                _run([sys.executable, "-m", "certsym", "equiv", *files])  # bytecode written once, as installed
                for _ in range(repeat):
                    runs["base"].append(_run([sys.executable, "-c", BASELINE, *files])[0])
                    t, codes["equiv"] = _run([sys.executable, "-m", "certsym", "equiv", *files, "--cert", cert])
                    runs["equiv"].append(t)
                    t, codes["check"] = _run([sys.executable, "-m", "certsym_check", "--quiet", "--inputs", *files,
                                              "--", cert])
                    runs["check"].append(t)
                base, t, tc = (float(np.median(runs[k])) for k in ("base", "equiv", "check"))
                verdict = {0: "EQUIVALENT", 1: "NOT EQUIVALENT", 3: "UNDECIDED"}.get(codes["equiv"],
                                                                                     f"exit {codes['equiv']}")
                print(f"| {n:,} ({label}) | {base:.2f} | {t:.2f} | **{t / base:.1f}** | {verdict} | {tc:.2f} "
                      f"({'VALID' if codes['check'] == 0 else 'exit ' + str(codes['check'])}) | **{tc / t:.1f}** |",
                      flush=True)


def _random_net(rng: np.random.Generator, widths: list[int], scale: int = 3) -> LayeredNetwork:
    layers = [([[int(x) for x in row] for row in rng.integers(-scale, scale + 1, (b, a))],
               [int(x) for x in rng.integers(-scale, scale + 1, b)]) for a, b in zip(widths, widths[1:], strict=False)]
    return LayeredNetwork.build(layers, QQ, widths[0])


def _disguise(t: LayeredNetwork, rng: np.random.Generator) -> LayeredNetwork:
    W = [[list(row) for row in layer.W] for layer in t.layers]
    b = [list(layer.b) for layer in t.layers]
    for ell in range(1, t.depth + 1):
        n = len(b[ell - 1])
        perm = rng.permutation(n)
        d = [fmpq(int(rng.integers(1, 4)), int(rng.integers(1, 4))) for _ in range(n)]
        W[ell - 1] = [[x * d[i] for x in W[ell - 1][perm[i]]] for i in range(n)]
        b[ell - 1] = [b[ell - 1][perm[i]] * d[i] for i in range(n)]
        W[ell] = [[row[perm[i]] / d[i] for i in range(n)] for row in W[ell]]
    return LayeredNetwork.build(list(zip(W, b, strict=True)), QQ, t.m)


def z3_verdict(t1: LayeredNetwork, t2: LayeredNetwork, timeout: float) -> str:
    """"equal", "different" or "timeout": ∃x f1(x) ≠ f2(x) over the reals, by z3 within ``timeout`` seconds."""
    import z3  # the bench extra

    xs = [z3.Real(f"x{q}") for q in range(t1.m)]

    def realize(t: LayeredNetwork) -> list:
        h = xs
        for ell, layer in enumerate(t.layers, 1):
            z = [z3.Sum([z3.RealVal(str(w)) * v for w, v in zip(row, h, strict=True)] + [z3.RealVal(str(c))])
                 for row, c in zip(layer.W, layer.b, strict=True)]
            h = [z3.If(v > 0, v, 0) for v in z] if ell < len(t.layers) else z
        return h

    s = z3.Solver()
    s.set("timeout", int(timeout * 1000))
    s.add(z3.Or([a != b for a, b in zip(realize(t1), realize(t2), strict=True)]))
    r = s.check()
    return "equal" if r == z3.unsat else "different" if r == z3.sat else "timeout"


def versus_z3(widths: list[int], timeout: float) -> None:
    print("\n| width (3 hidden layers, m = 4) | certsym (s) | verdict | z3 (s) | z3 verdict | z3 / certsym |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(2)
    for w in widths:
        t = _random_net(rng, [4, w, w, w, 2])
        other = _disguise(t, rng)
        start = time.perf_counter()
        v = decide(t, other)
        tc = time.perf_counter() - start
        start = time.perf_counter()
        z = z3_verdict(t, other, timeout)
        tz = time.perf_counter() - start
        print(f"| {w} | {tc:.3f} | {v.status} | {tz:.2f} | {z} | {tz / tc:.0f} |")


def undecided_rate(pairs: int) -> None:
    rng = np.random.default_rng(3)
    counts: dict[str, dict[str, int]] = {}
    for _ in range(pairs):
        m = int(rng.integers(1, 4))
        widths = [m] + sorted((int(x) for x in rng.integers(2, 7, int(rng.integers(2, 4)))), reverse=True) + [1]
        t = _random_net(rng, widths)
        changed = [[list(row) for row in layer.W] for layer in t.layers]
        ell = int(rng.integers(0, len(changed)))
        changed[ell][0][0] = changed[ell][0][0] + fmpq(1, 8)
        cases = {"independent": _random_net(rng, widths), "disguised": _disguise(t, rng),
                 "one weight + 1/8": LayeredNetwork.build([(W, layer.b) for W, layer in zip(changed, t.layers,
                                                                                          strict=True)], QQ, m)}
        for name, other in cases.items():
            status = decide(t, other).status
            counts.setdefault(name, {EQUIVALENT: 0, NOT_EQUIVALENT: 0, UNDECIDED: 0})[status] += 1
    print(f"\n| pairs ({pairs} each, random integer weights, non-increasing widths) | EQUIVALENT | NOT EQUIVALENT | "
          "UNDECIDED |")
    print("|---|---|---|---|")
    for name, c in counts.items():
        print(f"| {name} | {c[EQUIVALENT]} | {c[NOT_EQUIVALENT]} | {c[UNDECIDED]} |")


def _float_net(rng: np.random.Generator, widths: list[int], dtype) -> tuple[LayeredNetwork, LayeredNetwork]:
    """A float32 network with W ~ N(0, 1/fan-in) and its copy rounded to ``dtype``, both exact dyadics."""
    arrays = [((rng.normal(size=(b, a)) / np.sqrt(a)).astype(np.float32), (rng.normal(size=b) * 0.1).astype(np.float32))
              for a, b in zip(widths, widths[1:], strict=False)]

    def exact(cast) -> LayeredNetwork:
        return LayeredNetwork.build([([[fmpq(*float(x).as_integer_ratio()) for x in row] for row in cast(W)],
                                   [fmpq(*float(x).as_integer_ratio()) for x in cast(b)]) for W, b in arrays],
                                 QQ, widths[0])
    return exact(lambda a: a), exact(lambda a: a.astype(dtype))


def top1_counts(models: int = 3, centres: int = 4, seconds: float = 10.0) -> None:
    """Section 4 of the module docstring."""
    from certsym.certify import deep_top1_certificate
    from certsym.certify.envelope import InputRecord
    from certsym.decide.deep_top1 import deep_top1
    from certsym_check import check_certificate

    records = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "0" * 64))
    rng = np.random.default_rng(0)
    pairs = [_float_net(rng, [8, 16, 16, 4], np.float16) for _ in range(models)]
    print(f"\n### deep --top1: {models} 8-16-16-4 float32 networks vs their float16 copies, {centres} centres each, "
          f"{seconds:g} s budget\n")
    print("| r | agree | differ | unknown | median s | most leaves | checker s (max) |")
    print("|---|---|---|---|---|---|---|")
    for r in (fmpq(1, 64), fmpq(1, 16), fmpq(1, 4)):
        counts, times, leaves, replay = {"agree": 0, "differ": 0, "unknown": 0}, [], [0], [0.0]
        for t1, t2 in pairs:
            for _ in range(centres):
                c = [fmpq(int(v), 256) for v in rng.integers(0, 257, 8)]
                box = [(x - r, x + r) for x in c]
                start = time.perf_counter()
                out = deep_top1(t1, t2, box, seconds=seconds)
                times.append(time.perf_counter() - start)
                counts[out.verdict] += 1
                leaves.append(out.leaves)
                if out.verdict != "unknown":
                    start = time.perf_counter()
                    assert check_certificate(deep_top1_certificate(out, records, (t1, t2))).valid
                    replay.append(time.perf_counter() - start)
        print(f"| {r} | {counts['agree']} | {counts['differ']} | {counts['unknown']} | {np.median(times):.2f} | "
              f"{max(leaves)} | {max(replay):.2f} |", flush=True)


def epsilon_counts(models: int = 3, centres: int = 4, seconds: float = 10.0) -> None:
    """Section 5 of the module docstring."""
    from certsym.certify import deep_distance_certificate
    from certsym.certify.envelope import InputRecord
    from certsym.decide.deep_distance import deep_distance
    from certsym_check import check_certificate

    records = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "0" * 64))
    rng = np.random.default_rng(0)
    pairs = [_float_net(rng, [8, 16, 16, 4], np.float16) for _ in range(models)]
    factors = (fmpq(1, 2), fmpq(9, 10), fmpq(11, 10), fmpq(3, 2), fmpq(2))
    print(f"\n### deep distance and --epsilon: {models} 8-16-16-4 float32 networks vs their float16 copies, "
          f"{centres} centres each, {seconds:g} s budget\n")
    print("| r | U/L one region (median) | U/L halvings (median, worst) | leaves (median) | checker s (max) | "
          + " | ".join(f"ε = {f}·L: verified / violated / unknown" for f in factors) + " |")
    print("|---" * (5 + len(factors)) + "|")
    for r in (fmpq(1, 64), fmpq(1, 16), fmpq(1, 4)):
        one, tree, leaves, replay = [], [], [], [0.0]
        counts = {f: {"verified": 0, "violated": 0, "unknown": 0} for f in factors}
        for t1, t2 in pairs:
            for _ in range(centres):
                c = [fmpq(int(v), 256) for v in rng.integers(0, 257, 8)]
                box = [(x - r, x + r) for x in c]
                first = deep_distance(t1, t2, box)
                d = deep_distance(t1, t2, box, seconds=seconds)
                if d.lower == 0:
                    continue
                one.append(float(first.upper / d.lower))
                tree.append(float(d.upper / d.lower))
                leaves.append(d.leaves)
                start = time.perf_counter()
                assert check_certificate(deep_distance_certificate(d, records, (t1, t2))).valid
                replay.append(time.perf_counter() - start)
                for f in factors:
                    epsilon = f * d.lower
                    e = deep_distance(t1, t2, box, seconds=seconds, epsilon=epsilon)
                    counts[f][e.verdict] += 1
                    assert check_certificate(deep_distance_certificate(e, records, (t1, t2), epsilon)).valid
        cells = [f"{counts[f]['verified']} / {counts[f]['violated']} / {counts[f]['unknown']}" for f in factors]
        print(f"| {r} | {np.median(one):.2f} | {np.median(tree):.2f}, {max(tree):.2f} | {int(np.median(leaves))} | "
              f"{max(replay):.2f} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[256, 1024])
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per row of section 1 (medians)")
    ap.add_argument("--scale-only", action="store_true", help="only section 1 (784-n-n-10 files)")
    ap.add_argument("--z3-widths", type=int, nargs="*", default=[2, 4, 8])
    ap.add_argument("--z3-timeout", type=float, default=60.0)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--top1-only", action="store_true", help="only section 4 (deep --top1)")
    ap.add_argument("--epsilon-only", action="store_true", help="only section 5 (deep distance and --epsilon)")
    ap.add_argument("--seconds", type=float, default=10.0, help="budget per search of sections 4 and 5")
    args = ap.parse_args()
    if args.top1_only or args.epsilon_only:
        if args.top1_only:
            top1_counts(seconds=args.seconds)
        if args.epsilon_only:
            epsilon_counts(seconds=args.seconds)
        return
    scale(args.sizes, args.repeat)
    if args.scale_only:
        return
    versus_z3(args.z3_widths, args.z3_timeout)
    undecided_rate(args.pairs)
    top1_counts(seconds=args.seconds)
    epsilon_counts(seconds=args.seconds)


if __name__ == "__main__":
    main()

"""Deep pairs equal only on the image of the layers below (MATH.md Part IV, phase splitting), against z3.

Each pair is a random base network (integer weights in −3..3) and a copy changed in one of three ways the block
lemma cannot see: an always-active unit split in two (rows (w, c1), (w, c2), c1 + c2 = 2c, each read with half the
weight), an affine layer folded into the next (every unit of layer 2 always active: nonnegative weights and a
positive bias), or a unit dead on the image added (σ(h_0 − h_1) where layer 1's units 0 and 1 share a row and
h_1 = h_0 + 1 wherever h_0 > 0). The not equivalent variants move one number after the change (a split's bias and a
folded bias by 1/64, the dead unit's bias to 1/4). certsym's deep decision (block lemma, witness search, then
phase splitting) and z3 (∃x f1(x) ≠ f2(x) over the reals) answer each; the script prints both, their seconds,
and the count of wrong verdicts.

    python benchmarks/nongeneric.py [--pairs 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from deep import z3_verdict  # benchmarks/deep.py, run from this folder
from flint import fmpq

from certsym.core.deep import LayeredNetwork
from certsym.decide.deep import decide
from certsym.numbers import QQ


def _net(layers: list, m: int) -> LayeredNetwork:
    return LayeredNetwork.build([([[fmpq(x) for x in row] for row in W], [fmpq(x) for x in b]) for W, b in layers],
                                QQ, m, False)


def _random(rng, m: int, widths: list[int], k: int, positive_layer: int | None = None) -> list:
    out, a = [], m
    for ell, n in enumerate([*widths, k], 1):
        if ell == positive_layer:
            W = rng.integers(0, 3, (n, a))
            b = rng.integers(1, 3, n)
        else:
            W, b = rng.integers(-3, 4, (n, a)), rng.integers(-2, 3, n)
        out.append(([[int(v) for v in row] for row in W], [int(v) for v in b]))
        a = n
    return out


def _split(rng, m: int, off: fmpq) -> tuple[list, list]:
    """Layer 2 unit 0 always active (nonnegative row, positive bias), split into two with biases c ± 1 (+ off)."""
    base = _random(rng, m, [3, 3], 1, positive_layer=2)
    (W1, b1), (W2, b2), (W3, b3) = base
    w, c = W2[0], b2[0]
    W2s = [w, w, *W2[1:]]
    b2s = [fmpq(c) - 1, fmpq(c) + 1 + off, *b2[1:]]
    W3s = [[fmpq(r[0], 2), fmpq(r[0], 2), *r[1:]] for r in W3]
    return base, [(W1, b1), (W2s, b2s), (W3s, b3)]


def _fold(rng, m: int, off: fmpq) -> tuple[list, list]:
    """Layer 2 always active: the copy has one hidden layer fewer, layer 2 folded into the output."""
    base = _random(rng, m, [3, 3], 1, positive_layer=2)
    (W1, b1), (W2, b2), (W3, b3) = base
    A, c, V, d = np.array(W2), np.array(b2), np.array(W3), np.array(b3)
    folded = ([[int(x) for x in row] for row in V @ A], [fmpq(int(x)) + off for x in V @ c + d])
    return base, [(W1, b1), folded]


def _dead(rng, m: int, off: fmpq) -> tuple[list, list]:
    """Layer 1's units 0 and 1 share a row, with biases b and b + 1, so σ(h_0 − h_1) is 0 on the image of layer 1
    (but its row is not ≤ 0, so no move D1–D4 removes it); the copy adds that unit (bias 16·off) to layer 2, read
    with weight 3."""
    base = _random(rng, m, [3, 3], 1)
    (W1, b1), (W2, b2), (W3, b3) = base
    W1 = [W1[0], W1[0], *W1[2:]]
    b1 = [b1[0], b1[0] + 1, *b1[2:]]
    base = [(W1, b1), (W2, b2), (W3, b3)]
    unit = [1, -1] + [0] * (len(W1) - 2)
    copy = [(W1, b1), ([*W2, unit], [*b2, 16 * off]), ([[*r, 3] for r in W3], b3)]
    return base, copy


def _z3(t1: LayeredNetwork, t2: LayeredNetwork) -> str:
    """z3's verdict in this script's words (``deep.z3_verdict``, with a day as its timeout: in effect none)."""
    verdict = z3_verdict(t1, t2, 86_400.0)
    return {"equal": "equivalent", "different": "not_equivalent"}.get(verdict, "unknown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    makers = {"split": _split, "fold": _fold, "dead": _dead}
    rows, wrong = [], 0
    print(f"{'#':>3} {'change':6} {'m':>2} {'truth (z3)':15} {'certsym':15} {'how':16} {'certsym s':>9} {'z3 s':>7}")
    for n in range(args.pairs):
        kind = list(makers)[n % 3]
        m = int(rng.integers(1, 4))
        off = fmpq(0) if (n // 3) % 2 == 0 else fmpq(1, 64)
        first, second = makers[kind](rng, m, off)
        t1, t2 = _net(first, m), _net(second, m)
        start = time.perf_counter()
        v = decide(t1, t2)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        truth = _z3(t1, t2)
        theirs = time.perf_counter() - start
        how = "phase splitting" if v.phases is not None else "block lemma" if v.status == "equivalent" else \
            "witness" if v.status == "not_equivalent" else "-"
        wrong += v.status != "undecided" and v.status != truth
        rows.append((truth, v.status))
        print(f"{n:>3} {kind:6} {m:>2} {truth:15} {v.status:15} {how:16} {ours:>9.2f} {theirs:>7.2f}")
    for truth in ("equivalent", "not_equivalent"):
        total = sum(1 for t, _ in rows if t == truth)
        undecided = sum(1 for t, s in rows if t == truth and s == "undecided")
        print(f"{truth}: {total} pairs, {undecided} UNDECIDED ({100 * undecided / max(total, 1):.0f}%)")
    print(f"wrong verdicts: {wrong}")


if __name__ == "__main__":
    main()

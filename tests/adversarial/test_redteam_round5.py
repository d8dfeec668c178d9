"""Red team, round five (issue 45): the new charges of the checker's work budget and the outward rounding of the
stated deep distance bounds. Every certificate is built in the test; the budget is asserted by verdicts and units
(report.work), never by seconds.

Holes found (each test below asserts the correct behaviour, so it failed while the hole was open):

- ``top1_agreement``: each bound's objective, the margin f_j − f_c, is built as v_i[j] − v_i[c] for every neuron i
  (and the constants c_j − c_c), charged a fixed 3 units a neuron whatever the sizes of the output weights. With two
  coprime 32,760-bit denominators among the output weights (within the 2^16 bits of distinct denominators), each
  such difference is one 32,760-bit gcd (1.3 ms), and a stably inactive neuron adds nothing else to the bound. One
  region of k = 400 outputs, one neuron (an 8 MB certificate), replayed VALID in 137 s of CPU on 1,040,037 units
  (131 µs a unit); every further region repeats it. Now each objective is charged by the sizes of its columns
  (``relaxation.columns_cost``) and of its constants, before it is built.
- ``distance_bound`` with regions: a bound stated once at the root is inherited by every leaf below it, and each
  leaf takes the largest of its bounds (and the replay the largest of the leaves'), comparisons of long rationals
  (two products of up to 194,000 by 64,000 bits each) charged a fixed half unit. The root's bounds of 78,000
  characters and 10,000 leaves (671 KB) replayed VALID in 83 s of CPU on 955,023 units (87 µs a unit). Now every
  comparison of inherited bounds is charged at the sizes of its operands (and so are a bound's comparison with the
  inherited one, its constant added to its rows' maximum, and a refinement's comparisons in the regions below it).
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

from certsym_check.budget import WORK_BUDGET
from certsym_check.envelope import CLAIMS, check_certificate
from tests.helpers import decimal_text

RELAX = "linear relaxations with rational multipliers over a tree of regions"


def _s(x) -> object:
    if isinstance(x, list | tuple):
        return [_s(y) for y in x]
    x = Fraction(x)
    num = decimal_text(x.numerator)
    return num if x.denominator == 1 else f"{num}/{decimal_text(x.denominator)}"


def _doc(kind: str, p1: dict, p2: dict, proof: dict) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind], "field": {"type": "QQ"},
            "inputs": [{"name": f"theta{i}", "sha256": "0" * 64, "atoms": [], "parameters": p}
                       for i, p in enumerate((p1, p2), 1)], "proof": proof}


def _shallow(A: list, b: list, M: list, c: list, m: int) -> dict:
    return {"A": _s(A), "b": _s(b), "M": _s(M), "c": _s(c), "shape": {"m": m, "n": len(A), "k": len(c)}}


def _replay(doc: dict):
    return check_certificate(json.loads(json.dumps(doc)))


def _coprime(bits: int, seed: int) -> tuple[int, int]:
    """Two coprime odd integers of exactly ``bits`` bits (a gcd of them costs about bits² / 8·10^8 s in CPython)."""
    rnd = random.Random(seed)
    while True:
        p, q = (rnd.getrandbits(bits) | (1 << (bits - 1)) | 1 for _ in range(2))
        if math.gcd(p, q) == 1:
            return p, q


# ================================================================ hole: top-1 objectives charged by their sizes

def _top1_long_columns(k: int, bits: int = 32_760) -> tuple[dict, int]:
    """One neuron z = −x − 1, stably inactive on [0, 1], whose output weights alternate 1/p and 1/q (coprime,
    ``bits`` bits each); c = (1, 0, …, 0), so class 0 leads everywhere. One region stating every margin of network A
    (k(k − 1) objectives, each c_j − c_c) and B's margins over class 0. True. Returns the certificate and the number
    of margins whose weights' difference has coprime denominators."""
    p, q = _coprime(bits, seed=5)
    M = [[Fraction(1, p if t % 2 else q)] for t in range(k)]
    c = [1] + [0] * (k - 1)
    bounds = [["A", a, j, _s(c[j] - c[a]), []] for a in range(k) for j in range(k) if j != a]
    bounds += [["B", 0, j, "-1", []] for j in range(1, k)]
    proof = {"box": [["0", "1"]], "statement": RELAX, "pairs": [], "regions": [{"bounds": bounds, "class": 0}]}
    doc = _doc("top1_agreement", _shallow([[-1]], [-1], M, c, 1), _shallow([[-1]], [-1], [[0]] * k, c, 1), proof)
    return doc, sum(1 for a in range(k) for j in range(k) if (a - j) % 2)


def test_top1_margins_of_long_output_weights_are_charged_by_their_sizes():
    """Each margin's v_i[j] − v_i[c] with coprime 32,760-bit denominators is a gcd of that size: charged at least
    the size part of one product of such numbers (32,760² / 409,600 units) before it is taken (it was 3 units)."""
    doc, mixed = _top1_long_columns(k=10)
    report = _replay(doc)
    assert report.valid, report.reason
    assert report.work >= mixed * (32_760 * 32_760 // 409_600)


def test_top1_margins_of_short_weights_stay_cheap():
    """The same certificate with word-sized weights: the size part adds next to nothing."""
    doc, _ = _top1_long_columns(k=10, bits=20)
    report = _replay(doc)
    assert report.valid, report.reason
    assert report.work < 5_000


# ================================================================ hole: inherited bounds compared at their sizes

def _distance_long_root(leaves: int, k: int = 2, bits: int = 32_000, extra: int = 130_000) -> dict:
    """One stably inactive neuron per network (z = −x − 1 on [0, 1]), so D_t = c1_t − c2_t is constant; the root
    states the bounds ±D_t, long rationals (numerators of about bits + extra bits over a denominator of 2·bits
    bits) in increasing order, and the last output the largest, an integer of 131,000 bits; a balanced tree of
    ``leaves`` leaves halving x, none restating a bound. True: U = L = D_{k−1}."""
    p, q = _coprime(bits, seed=5)
    A = random.Random(6).getrandbits(bits + extra) | (1 << (bits + extra - 1))
    c1 = [Fraction(A + t, p) for t in range(k - 1)] + [Fraction(2**131_000 - 1)]
    c2 = [Fraction(1, q)] * (k - 1) + [Fraction(0)]
    D = [a - b for a, b in zip(c1, c2, strict=True)]
    root = [[t, s, _s(s * D[t]), []] for t in range(k) for s in (1, -1)]
    nodes: list[dict] = []

    def grow(n: int, top: bool) -> None:
        node: dict = {"bounds": root} if top else {}
        nodes.append(node)
        if n > 1:
            node["split"] = ["x", 0]
            grow(n // 2, False)
            grow(n - n // 2, False)

    grow(leaves, True)
    U = _s(max(abs(d) for d in D))
    proof = {"box": [["0", "1"]], "upper": U, "lower": U, "pairs": [], "witness": ["0"], "statement": RELAX,
             "regions": nodes}
    return _doc("distance_bound", _shallow([[-1]], [-1], [[1]] * k, c1, 1), _shallow([[-1]], [-1], [[1]] * k, c2, 1),
                proof)


def test_inherited_long_bounds_are_charged_at_every_leaf():
    """Each leaf compares the 2k bounds it inherits (long rationals): charged at their sizes, at least the cross
    products' size part (194,000 · 64,000 / 102,400 units) per comparison (it was 8 operations a bound)."""
    leaves = 4
    report = _replay(_distance_long_root(leaves))
    assert report.valid, report.reason
    assert report.work >= leaves * 3 * (194_000 * 64_000 // 102_400)


def test_inherited_long_bounds_over_many_leaves_are_refused_within_the_budget():
    """The hole's shape (1,000 leaves; 10,000 replayed VALID in 83 s on 955,023 units): refused by the budget."""
    report = _replay(_distance_long_root(1_000))
    assert not report.valid
    assert "work budget" in report.reason
    assert report.work <= WORK_BUDGET + WORK_BUDGET // 10

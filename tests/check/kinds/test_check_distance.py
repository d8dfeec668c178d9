"""Red-team tests for ``distance_bound`` certificates (checker/certsym_check/distance.py).

Failing now (holes):
- test_big_denominators_do_not_hang_the_checker: a hand-made ~0.4 MB certificate (one input, 500 stably active
  neurons whose output weights have pairwise coprime ~1000-digit denominators) keeps the checker busy far beyond
  10 s (≈13 s at 400 neurons, ≈83 s at 1000 neurons / 1 MB): U's exact denominator grows to the sum of all
  denominators and is normalized with quadratic gcds (math.lcm over all active terms, Fraction(top, G·Db)).
  FORMAT.md promises "four linear passes" with every limit checked before the work.
- test_valid_certificate_with_a_long_bound_is_accepted: a correct certificate whose exact U has more than 4300
  digits is rejected as "malformed certificate (ValueError)": the fact string formats Fractions with str(),
  which hits Python's int-to-str digit limit (the same crash turns every U mismatch message into "malformed").

Passing (attacks withstood): tampered U / L, witness outside the box, duplicated neurons in pairs, d ≤ 0,
lo > hi, a number field, constant networks (n = 0), degenerate boxes, and a small random soundness sweep of the
recomputed U against exact evaluation on grids.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
from fractions import Fraction as Fr

import pytest
from helpers import HANG_GUARD, cpu_budget, out_of_cpu

from certsym_check import check_certificate
from certsym_check.kinds.distance import _upper, evaluate

CLAIM = "sup over the box of ||rho(theta1)(x) - rho(theta2)(x)||_inf lies in [lower, upper]"


def _s(x) -> str:
    x = Fr(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _params(net, m: int, k: int) -> dict:
    A, b, M, c = net
    return {"M": [[_s(x) for x in r] for r in M], "A": [[_s(x) for x in r] for r in A], "b": [_s(x) for x in b],
            "c": [_s(x) for x in c], "shape": {"m": m, "n": len(A), "k": k}}


def _doc(n1, n2, m, k, box, upper, lower, pairs, witness, field=None) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": "distance_bound", "claim": CLAIM,
            "field": field or {"type": "QQ"},
            "inputs": [{"name": "a", "sha256": "0" * 64, "atoms": [], "parameters": _params(n1, m, k)},
                       {"name": "b", "sha256": "1" * 64, "atoms": [], "parameters": _params(n2, m, k)}],
            "proof": {"box": [[_s(lo), _s(hi)] for lo, hi in box], "upper": _s(upper), "lower": _s(lower),
                      "pairs": [[i, j, _s(d)] for i, j, d in pairs], "witness": [_s(x) for x in witness],
                      "statement": "symbolic intervals and exact evaluation"}}


class _N:
    pass


def _net(net, m, k):
    A, b, M, c = net
    t = _N()
    t.m, t.n, t.k = m, len(A), k
    t.rows = [[Fr(x) for x in A[i]] + [Fr(b[i])] for i in range(len(A))]
    t.v = [[Fr(M[j][i]) for j in range(k)] for i in range(len(A))]
    t.c = [Fr(x) for x in c]
    return t


def _valid(n1, n2, m, k, box, pairs, witness) -> dict:
    """A certificate with the correct U (the checker's own rule) and L."""
    t1, t2 = _net(n1, m, k), _net(n2, m, k)
    U = _upper(t1, t2, [(Fr(a), Fr(b)) for a, b in box], [(i, j, Fr(d)) for i, j, d in pairs])
    x = [Fr(y) for y in witness]
    L = max(abs(a - b) for a, b in zip(evaluate(t1, x), evaluate(t2, x), strict=True))
    return _doc(n1, n2, m, k, box, U, L, pairs, witness)


# A small pair: θ1 = relu(x1 - x2) + relu(x1 + 1/2), θ2 = 2·relu(2x1 - 2x2) ⋅ 1/4 + relu(x2), c differ.
N1 = ([[1, -1], [1, 0]], [0, Fr(1, 2)], [[1, 1]], [Fr(1, 3)])
N2 = ([[2, -2], [0, 1]], [0, 0], [[Fr(1, 2), 1]], [0])
BOX = [(-1, 1), (Fr(-1, 2), 2)]


def _base() -> dict:
    return _valid(N1, N2, 2, 1, BOX, [(0, 0, Fr(1, 2))], [1, Fr(-1, 2)])


def test_base_certificate_is_accepted():
    r = check_certificate(_base())
    assert r.valid, r.reason


def test_tampered_upper_rejected():
    d = _base()
    d["proof"]["upper"] = _s(Fr(d["proof"]["upper"]) - Fr(1, 10**30))
    assert not check_certificate(d).valid


def test_tampered_lower_rejected():
    d = _base()
    d["proof"]["lower"] = _s(Fr(d["proof"]["lower"]) + Fr(1, 10**30))
    assert not check_certificate(d).valid


def test_witness_outside_box_rejected():
    d = _base()
    d["proof"]["witness"] = ["1", "-3/5"]  # below lo = -1/2
    assert not check_certificate(d).valid


@pytest.mark.parametrize("pairs", [[[0, 0, "1"], [0, 1, "1"]], [[0, 0, "1"], [1, 0, "1"]], [[0, 0, "0"]],
                                   [[0, 0, "-1"]], [[True, 0, "1"]], [[0, 2, "1"]], [[0, 0, 1]]])
def test_bad_pairs_rejected(pairs):
    d = _base()
    d["proof"]["pairs"] = pairs
    assert not check_certificate(d).valid


def test_inverted_box_rejected():
    d = _base()
    d["proof"]["box"][0] = ["1", "-1"]
    assert not check_certificate(d).valid


def test_number_field_rejected():
    d = _base()
    d["field"] = {"type": "number_field", "polynomial": ["-2", "0", "1"], "interval": ["1", "2"]}
    assert not check_certificate(d).valid


def test_constant_networks_and_point_box():
    n1, n2 = ([], [], [[]], [Fr(5, 7)]), ([], [], [[]], [-1])
    d = _valid(n1, n2, 1, 1, [(3, 3)], [], [3])
    assert check_certificate(d).valid
    assert Fr(d["proof"]["upper"]) == Fr(12, 7)
    d["proof"]["upper"] = "0"
    assert not check_certificate(d).valid


def test_random_upper_bounds_are_sound():
    """U recomputed by the checker's rule bounds |D| at every point of a grid (exact), on random small pairs with
    random alignments and scalings, including degenerate boxes, zero weights and boundary z = 0."""
    R = random.Random(7)

    def q():
        return Fr(R.randint(-3, 3), R.choice([1, 1, 2, 3]))

    def net(m, n, k):
        return ([[q() for _ in range(m)] for _ in range(n)], [q() for _ in range(n)],
                [[q() for _ in range(n)] for _ in range(k)], [q() for _ in range(k)])

    for _ in range(400):
        m, k = R.randint(1, 2), R.randint(1, 2)
        n1, n2 = net(m, R.randint(0, 3), k), net(m, R.randint(0, 3), k)
        box = [tuple(sorted(Fr(R.randint(-3, 3), R.choice([1, 2])) for _ in range(2))) for _ in range(m)]
        idx = list(range(len(n2[0])))
        R.shuffle(idx)
        pairs = [(i, j, Fr(R.randint(1, 4), R.randint(1, 4))) for i, j in zip(range(len(n1[0])), idx, strict=False)
                 if R.random() < 0.7]
        t1, t2 = _net(n1, m, k), _net(n2, m, k)
        U = _upper(t1, t2, box, pairs)
        for x in itertools.product(*[[lo + (hi - lo) * Fr(s, 4) for s in range(5)] for lo, hi in box]):
            v = max(abs(a - b) for a, b in zip(evaluate(t1, list(x)), evaluate(t2, list(x)), strict=True))
            assert v <= U


def _coprime_denominators(count: int, digits: int) -> list[Fr]:
    ps, x = [], 2
    while len(ps) < count:
        if all(x % p for p in ps if p * p <= x):
            ps.append(x)
        x += 1
    return [Fr(1, p ** max(1, int(digits / math.log10(p)))) for p in ps]


def test_valid_certificate_with_a_long_bound_is_accepted():
    """The exact U has ~15,000 digits: the checker once crashed formatting it (Python's int-to-text limit). The
    certificate is written here with that limit lifted; the checker must replay it without it."""
    import sys

    vs = _coprime_denominators(8, 1000)
    n1 = ([[1]] * 8, [1] * 8, [vs], [0])
    n2 = ([], [], [[]], [0])
    U = 2 * sum(vs)  # z_i = x + 1 on [0, 1], all active, maximum at x = 1
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        d = json.loads(json.dumps(_doc(n1, n2, 1, 1, [(0, 1)], U, U, [], [1])))
    finally:
        sys.set_int_max_str_digits(limit)
    r = check_certificate(d)
    assert r.valid, r.reason
    assert any("bits" in fact for fact in r.facts)


_DOS = r"""
import json, sys
from certsym_check import check_certificate
print(check_certificate(json.load(sys.stdin)).valid)
"""


def test_big_denominators_do_not_hang_the_checker():
    """~0.5 MB of JSON with coprime 1000-digit denominators once kept the checker busy well over 10 s (quadratic in
    the certificate's size); the distinct denominators are now bounded before the work."""
    n = 500
    vs = _coprime_denominators(n, 1000)
    n1 = ([[1]] * n, [1] * n, [vs], [0])
    n2 = ([], [], [[]], [0])
    d = _doc(n1, n2, 1, 1, [(0, 1)], 0, 0, [], [1])  # any U: the checker recomputes U before comparing
    text = json.dumps(d)
    assert len(text) < 600_000
    try:  # 10 s of the child's own CPU time, which other processes on a busy machine do not use up
        out = subprocess.run([sys.executable, "-c", _DOS], input=text, capture_output=True, text=True,
                             timeout=HANG_GUARD, preexec_fn=cpu_budget(10, None))
    except subprocess.TimeoutExpired:
        pytest.fail("the checker hung on a 0.5 MB distance_bound certificate")
    assert not out_of_cpu(out.returncode), "the checker took more than 10 s of CPU on a 0.5 MB certificate"
    assert out.returncode == 0 and out.stdout.split()[0] == "False", out.stderr[-400:]

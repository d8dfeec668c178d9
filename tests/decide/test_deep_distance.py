"""certsym.decide.deep_distance: [L, U] ∋ sup over a box of ‖f1 − f2‖∞ for deep networks, checked against z3.

z3 over the reals, which shares no code with the bound, must find no point of the box where some output
differs by more than U; L is attained at the witness (exactly); a box that is a single point gives U = L; every
certificate replays in the independent checker, and forged ones are refused with a reason.
"""

from __future__ import annotations

import copy
import json

import pytest
from flint import fmpq
from helpers import Z3_RLIMIT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord
from certsym.certify.deep import deep_distance_certificate
from certsym.core.deep import LayeredNetwork
from certsym.decide.deep_distance import deep_distance
from certsym.numbers import QQ
from certsym_check import check
from tests.decide.test_deep import deep_nets, disguised, z3_outputs

z3 = pytest.importorskip("z3")
RECORDS = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "0" * 64))
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BOXES = st.sampled_from([(fmpq(0), fmpq(1)), (fmpq(-1), fmpq(1)), (fmpq(-2), fmpq(1, 2))])


def z3_exceeds(t1: LayeredNetwork, t2: LayeredNetwork, box: list, bound, strict: bool = True) -> bool:
    """∃x in the box with |f1(x)_j − f2(x)_j| > bound (≥ bound when not ``strict``) for some j, over the reals,
    by z3."""
    xs = [z3.Real(f"x{q}") for q in range(t1.m)]
    solver = z3.Solver()
    solver.set("rlimit", Z3_RLIMIT)
    for x, (lo, hi) in zip(xs, box, strict=True):
        solver.add(x >= z3.RealVal(str(lo)), x <= z3.RealVal(str(hi)))
    U = z3.RealVal(str(bound))
    solver.add(z3.Or([z3.Or(a - b > U, b - a > U) if strict else z3.Or(a - b >= U, b - a >= U)
                      for a, b in zip(z3_outputs(t1, xs), z3_outputs(t2, xs), strict=True)]))
    result = solver.check()
    assert result != z3.unknown, "z3 ran out of its resource count"
    return result == z3.sat


def perturbed(t: LayeredNetwork, ell: int, i: int, q: int, delta: fmpq) -> LayeredNetwork:
    layers = [([list(row) for row in layer.W], list(layer.b)) for layer in t.layers]
    W, b = layers[ell]
    row = W[i % len(W)] if W else None
    if row:
        row[q % len(row)] += delta
    else:
        b[i % len(b)] += delta
    return LayeredNetwork.build(layers, QQ, t.m, t.output_relu)


def assert_sound(t1: LayeredNetwork, t2: LayeredNetwork, box: list) -> None:
    d = deep_distance(t1, t2, box, method="intervals")
    assert 0 <= d.lower <= d.upper
    assert not z3_exceeds(t1, t2, box, d.upper), "a point of the box exceeds U"
    if d.equivalence is None:
        assert all(lo <= x <= hi for x, (lo, hi) in zip(d.witness, box, strict=True))
        assert d.lower == max(abs(a - c) for a, c in zip(t1(d.witness), t2(d.witness), strict=True))
    report = check(json.loads(json.dumps(deep_distance_certificate(d, RECORDS, (t1, t2)))))
    assert report.valid, report.reason


@SETTINGS
@given(disguised(), st.integers(0, 3), st.integers(0, 9), st.integers(0, 9), st.sampled_from(
    [fmpq(1, 8), fmpq(-1, 4), fmpq(1)]), BOXES)
def test_perturbed_disguises_are_bounded_soundly(pair, ell: int, i: int, q: int, delta: fmpq, side) -> None:
    """h·θ (with moves undone) and one weight or bias of it moved: U is never exceeded anywhere in the box."""
    t1, t2 = pair
    t2 = perturbed(t2, ell % len(t2.layers), i, q, delta)
    assert_sound(t1, t2, [side] * t1.m)


@SETTINGS
@given(deep_nets(), deep_nets(), BOXES)
def test_independent_pairs_are_bounded_soundly(t1: LayeredNetwork, t2: LayeredNetwork, side) -> None:
    if (t1.m, t1.k) != (t2.m, t2.k):
        t2 = LayeredNetwork.build([(layer.W, layer.b) for layer in t1.layers[:-1]] + [(t1.layers[-1].W, [
            x + 1 for x in t1.layers[-1].b])], QQ, t1.m, t2.output_relu)
    assert_sound(t1, t2, [side] * t1.m)


@SETTINGS
@given(deep_nets(), st.integers(0, 9), st.integers(0, 9), st.lists(st.integers(-4, 4), min_size=2, max_size=2))
def test_a_point_box_gives_u_equal_to_l(t: LayeredNetwork, i: int, q: int, point: list) -> None:
    other = perturbed(t, 0, i, q, fmpq(1, 2))
    x = [fmpq(v, 2) for v in point[:t.m]]
    d = deep_distance(t, other, [(v, v) for v in x], method="intervals")
    if d.equivalence is None:
        assert d.upper == d.lower == max(abs(a - c) for a, c in zip(t(x), other(x), strict=True))
    else:
        assert d.upper == d.lower == 0


def _net(layers, relu=False) -> LayeredNetwork:
    return LayeredNetwork.build(layers, QQ, len(layers[0][0][0]), relu)


T1 = _net([([[1, 2], [-1, 1], [1, 0]], [1, 0, -1]), ([[1, 1, 0], [0, 2, 1]], [0, -1]), ([[1, 2]], [0])])
T2 = _net([([[1, 2], [-1, 1], [1, 0]], [1, 0, -1]), ([[1, 1, 0], [0, 2, 1]], [0, -1]), ([[1, 2]], [fmpq(1, 8)])])


def _cert() -> dict:
    d = deep_distance(T1, T2, [(fmpq(0), fmpq(1))] * 2, method="intervals")
    assert d.alignment is not None and d.upper == d.lower == fmpq(1, 8)
    return json.loads(json.dumps(deep_distance_certificate(d, RECORDS, (T1, T2))))


def _forged(edit) -> str:
    doc = copy.deepcopy(_cert())
    edit(doc["proof"])
    report = check(doc)
    assert not report.valid
    return report.reason


@pytest.mark.parametrize("edit,words", [
    (lambda p: p.update(upper="1/16"), "upper bound is below the one the rule gives"),
    (lambda p: p.update(lower="1/4"), "lower bound exceeds"),
    (lambda p: p.update(witness=["2", "0"]), "outside the box"),
    (lambda p: p["alignment"][0][0].__setitem__(2, "-1"), "positive"),
    (lambda p: p["alignment"][0][1].__setitem__(1, p["alignment"][0][0][1]), "one to one"),
    (lambda p: p["alignment"].pop(), "proof.alignment"),
    (lambda p: p.update(statement="symbolic intervals and exact evaluation"), "must cite"),
    (lambda p: p.update(box=[["1", "0"], ["0", "1"]]), "lo > hi"),
    (lambda p: p.update(equivalence={}, upper="0", lower="0"), "proof"),
])
def test_forged_deep_distance_certificates_are_refused(edit, words: str) -> None:
    assert words in _forged(edit)


def test_an_equivalent_pair_gets_zero_with_the_block_lemma_and_a_forged_zero_is_refused() -> None:
    moved = _net([([[-1, 1], [2, 4], [1, 0]], [0, 2, -1]), ([[1, fmpq(1, 2), 0], [2, 0, 1]], [0, -1]),
                  ([[1, 2]], [0])])  # T1 with layer 1 permuted and one neuron scaled by 2
    d = deep_distance(T1, moved, [(fmpq(0), fmpq(1))] * 2, method="intervals")
    assert d.equivalence is not None and d.upper == d.lower == 0
    doc = json.loads(json.dumps(deep_distance_certificate(d, RECORDS, (T1, moved))))
    assert check(doc).valid
    fake = copy.deepcopy(doc)
    fake["inputs"][1]["parameters"]["layers"][2]["b"] = ["1/8"]  # another function, the same proof
    assert not check(fake).valid

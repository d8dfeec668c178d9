"""Proposition 14: affine networks are exactly those reducing to antisymmetric pairs."""

from __future__ import annotations

import json

from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, affine_certificate
from certsym.core.network import Network
from certsym.decide.affine import decide_affine, midpoint_defect
from certsym_check import check_certificate

RECORD = InputRecord("p", "0" * 64)
small = st.integers(-3, 3).map(fmpq)
positive = st.tuples(st.integers(1, 4), st.integers(1, 4)).map(lambda t: fmpq(*t))


@st.composite
def affine_networks(draw) -> Network:
    """Antisymmetric pairs v σ(r·x̃) − (v/λ) σ(−λ r·x̃), split halves, dead and constant neurons."""
    m, k = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    neurons = []
    for _ in range(draw(st.integers(0, 3))):
        a, b = [draw(small) for _ in range(m)], draw(small)
        if all(x == 0 for x in a):
            a[0] = fmpq(1)
        v, lam = [draw(small) for _ in range(k)], draw(positive)
        half = draw(positive)
        neurons.append((a, b, [x / (1 + half) for x in v]))
        neurons.append(([half * x for x in a], half * b, [x / (1 + half) for x in v]))  # split of the first
        neurons.append(([-lam * x for x in a], -lam * b, [-x / lam for x in v]))
    neurons.append(([draw(small) for _ in range(m)], draw(small), [fmpq(0)] * k))  # dead
    neurons.append(([fmpq(0)] * m, draw(small), [draw(small) for _ in range(k)]))  # constant
    order = draw(st.permutations(range(len(neurons))))
    neurons = [neurons[i] for i in order]
    return Network.build([[nu[2][j] for nu in neurons] for j in range(k)], [nu[0] for nu in neurons],
                         [nu[1] for nu in neurons], [draw(small) for _ in range(k)])


points = st.lists(st.tuples(st.integers(-9, 9), st.integers(1, 5)).map(lambda t: fmpq(*t)), min_size=2, max_size=2)


@settings(max_examples=50, deadline=None)
@given(affine_networks(), st.lists(points, min_size=3, max_size=3))
def test_affine_networks_are_recognized(theta: Network, xs) -> None:
    verdict = decide_affine(theta)
    assert verdict.affine
    for x in xs:
        x = x[: theta.m]
        expected = [sum((L[q] * x[q] for q in range(theta.m)), C) for L, C in zip(verdict.linear, verdict.constant,
                                                                                 strict=True)]
        assert theta(x) == expected
    report = check_certificate(affine_certificate(verdict, RECORD))
    assert report.valid, report.reason


@settings(max_examples=50, deadline=None)
@given(affine_networks(), small, small, st.integers(1, 3).map(fmpq))
def test_a_live_kink_is_not_affine(theta: Network, a0, b0, v0) -> None:
    """Adding v0 σ(x_1 + a0 x_2 + b0) with v0 ≠ 0 to an affine network makes it non-affine."""
    a = [fmpq(1)] + [a0] * (theta.m - 1)
    kinked = Network.build([list(row) + [v0] for row in theta.M], list(theta.A) + [a], list(theta.b) + [b0],
                           theta.c, theta.field)
    verdict = decide_affine(kinked)
    assert not verdict.affine
    assert any(d != 0 for d in midpoint_defect(kinked, *verdict.points))
    report = check_certificate(affine_certificate(verdict, RECORD))
    assert report.valid, report.reason


def test_broken_affine_certificates_rejected() -> None:
    theta = Network.build([[1, -1, 2]], [[1], [-1], [0]], [0, 0, 1], [0])  # x + 2
    doc = affine_certificate(decide_affine(theta), RECORD)
    assert check_certificate(doc).valid and doc["kind"] == "affine"
    for path, value in ((("linear", 0, 0), "2"), (("constant", 0), "0"), (("pairs", 0, "lambda"), "2")):
        broken = json.loads(json.dumps(doc))
        node = broken["proof"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert not check_certificate(broken).valid
    broken = json.loads(json.dumps(doc))
    broken["proof"]["pairs"] = []
    assert not check_certificate(broken).valid
    kinked = Network.build([[1]], [[1]], [0], [0])
    doc = affine_certificate(decide_affine(kinked), RECORD)
    assert doc["kind"] == "not_affine" and check_certificate(doc).valid
    broken = json.loads(json.dumps(doc))
    broken["proof"]["y"] = broken["proof"]["x"]
    assert not check_certificate(broken).valid

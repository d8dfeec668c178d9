"""An exact oracle for the distance on a line: for m = 1, x ↦ ρ(θ1)(x) − ρ(θ2)(x) is piecewise affine with kinks at
the points −b_i / a_i, so its sup norm over [lo, hi] is the largest |value| at the ends and the kinks inside,
computed here with Fractions and no code of certsym's. certsym's [L, U] must contain it, its certificate must
replay, and with --target 1 the branch and bound must find it exactly."""

from __future__ import annotations

import json
from fractions import Fraction

from flint import fmpq
from helpers import no_time_limit
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, distance_certificate
from certsym.core.network import Network
from certsym.decide.distance import distance
from certsym_check import check_certificate

small = st.fractions(min_value=-3, max_value=3, max_denominator=4)


def _value(net: dict, x: Fraction) -> list[Fraction]:
    hidden = [max(a * x + b, Fraction(0)) for a, b in zip(net["a"], net["b"], strict=True)]
    return [sum((v * h for v, h in zip(row, hidden, strict=True)), Fraction(0)) + c
            for row, c in zip(net["M"], net["c"], strict=True)]


def _sup(n1: dict, n2: dict, lo: Fraction, hi: Fraction) -> Fraction:
    points = {lo, hi} | {-b / a for net in (n1, n2) for a, b in zip(net["a"], net["b"], strict=True)
                         if a != 0 and lo <= -b / a <= hi}
    return max(max(abs(p - q) for p, q in zip(_value(n1, x), _value(n2, x), strict=True)) for x in points)


@st.composite
def nets(draw, k: int):
    n = draw(st.integers(1, 3))
    return {"a": draw(st.lists(small, min_size=n, max_size=n)), "b": draw(st.lists(small, min_size=n, max_size=n)),
            "M": [draw(st.lists(small, min_size=n, max_size=n)) for _ in range(k)],
            "c": draw(st.lists(small, min_size=k, max_size=k))}


def _network(net: dict) -> Network:
    def q(x: Fraction) -> fmpq:
        return fmpq(x.numerator, x.denominator)

    return Network.build([[q(v) for v in row] for row in net["M"]], [[q(a)] for a in net["a"]],
                         [q(b) for b in net["b"]], [q(c) for c in net["c"]])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 2).flatmap(lambda k: st.tuples(nets(k), nets(k))), small, st.fractions(0, 2, max_denominator=4))
def test_enclosure_contains_the_exact_sup_on_a_line(pair, lo, width) -> None:
    n1, n2 = pair
    hi = lo + width
    exact = _sup(n1, n2, lo, hi)
    A, B = _network(n1), _network(n2)
    box = [(fmpq(lo.numerator, lo.denominator), fmpq(hi.numerator, hi.denominator))]
    d = distance(A, B, box, deadline=no_time_limit(), max_regions=400, target=1.0)
    L, U = (Fraction(int(x.p), int(x.q)) for x in (d.lower, d.upper))
    assert L <= exact <= U
    assert U == L == exact or d.search is None or d.search.stopped != "the target ratio"
    doc = json.loads(json.dumps(distance_certificate(d, (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64)),
                                                     (A, B))))
    assert check_certificate(doc).valid

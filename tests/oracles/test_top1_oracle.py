"""An exact oracle for top-1 agreement on a line: for m = 1 every output is affine between the kinks −b_i / a_i of
both networks, so adding, on each piece, the points where two outputs of one network cross leaves intervals on
whose interiors every ordering is constant. The sets of largest outputs then agree everywhere iff they agree at
every such point and at the midpoints between them. Computed with Fractions and no code of certsym's: an "agree"
must agree with it, a "differ" witness must be a strict disagreement, and both certificates must replay."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from flint import fmpq
from helpers import no_time_limit
from hypothesis import event, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, top1_certificate
from certsym.decide.top1 import top1
from certsym.errors import InputError
from certsym_check import check_certificate
from tests.oracles.test_distance_oracle import _network, _value, nets, small

# why a search ends without a verdict: a tie or a boundary both networks share, or the count of regions
UNKNOWN_STOPS = ("a point no split resolves (a tie, or a boundary both share)", "the region budget",
                 "the checker's work bound")


def _tops(values: list[Fraction]) -> frozenset[int]:
    best = max(values)
    return frozenset(i for i, v in enumerate(values) if v == best)


def _points(n1: dict, n2: dict, lo: Fraction, hi: Fraction) -> list[Fraction]:
    """The kinks, the crossings of two outputs of one network inside each piece, the ends, and the midpoints."""
    kinks = sorted({lo, hi} | {-b / a for net in (n1, n2) for a, b in zip(net["a"], net["b"], strict=True)
                               if a != 0 and lo < -b / a < hi})
    points = set(kinks)
    for p, q in zip(kinks, kinks[1:], strict=False):
        for net in (n1, n2):
            fp, fq = _value(net, p), _value(net, q)
            for i in range(len(fp)):
                for j in range(i):
                    gp, gq = fp[i] - fp[j], fq[i] - fq[j]
                    if gp != gq and (gp < 0 < gq or gq < 0 < gp):
                        points.add(p + (q - p) * gp / (gp - gq))
    ordered = sorted(points)
    return ordered + [(p + q) / 2 for p, q in zip(ordered, ordered[1:], strict=False)]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3).flatmap(lambda k: st.tuples(nets(k), nets(k))), small, st.fractions(0, 2, max_denominator=4))
def test_top1_agrees_with_the_exact_oracle_on_a_line(pair, lo, width) -> None:
    n1, n2 = pair
    hi = lo + width
    points = _points(n1, n2, lo, hi)
    agree = all(_tops(_value(n1, x)) == _tops(_value(n2, x)) for x in points)
    A, B = _network(n1), _network(n2)
    box = [(fmpq(lo.numerator, lo.denominator), fmpq(hi.numerator, hi.denominator))]
    r = top1(A, B, box, deadline=no_time_limit(), max_regions=200)
    event(r.verdict)
    records = (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64))
    # every example asserts: each verdict against the oracle, and a certificate exactly when there is a verdict
    assert r.verdict in ("agree", "differ", "unknown")
    if r.verdict == "agree":
        assert agree
    elif r.verdict == "differ":
        x = Fraction(int(r.witness[0].p), int(r.witness[0].q))
        t1, t2 = _tops(_value(n1, x)), _tops(_value(n2, x))
        assert lo <= x <= hi and len(t1) == len(t2) == 1 and t1 != t2 and not agree
    else:
        assert r.stopped in UNKNOWN_STOPS and r.witness is None, r.stopped
        with pytest.raises(InputError):
            top1_certificate(r, records, (A, B))
        return
    doc = json.loads(json.dumps(top1_certificate(r, records, (A, B))))
    assert check_certificate(doc).valid


def test_the_oracle_sees_a_crossing_inside_a_piece() -> None:
    """The oracle itself: two affine outputs crossing at 1/3 inside one piece, against a network with no crossing."""
    n1 = {"a": [Fraction(1)], "b": [Fraction(0)], "M": [[Fraction(3)], [Fraction(0)]], "c": [Fraction(0), Fraction(1)]}
    n2 = {"a": [Fraction(1)], "b": [Fraction(0)], "M": [[Fraction(0)], [Fraction(0)]], "c": [Fraction(0), Fraction(1)]}
    points = _points(n1, n2, Fraction(0), Fraction(1))
    assert Fraction(1, 3) in points
    assert not all(_tops(_value(n1, x)) == _tops(_value(n2, x)) for x in points)
    assert top1(_network(n1), _network(n2), [(fmpq(0), fmpq(1))], deadline=no_time_limit()).verdict == "differ"

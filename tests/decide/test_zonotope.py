"""Zonotopes (certsym.decide.zonotope, the checker's kinds.zonotope; MATH.md Part IV): the checker's fixed-point
bound holds at every point of the box (z3), the float search follows it, a zonotope tree replays, and trees whose
stated bounds, error symbols or costs are forged are refused."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq
from helpers import no_time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certsym.certify.deep import deep_distance_certificate
from certsym.core.deep import LayeredNetwork
from certsym.decide import zonotope
from certsym.decide.deep_distance import deep_distance
from certsym_check import check
from certsym_check.budget import metered
from certsym_check.errors import Reject
from certsym_check.kinds.zonotope import Rule as CheckerRule
from tests.decide.test_deep_distance import z3_exceeds
from tests.decide.test_symbolic import ENDS, RECORDS, SHAPES, _fractions, _pair, exact_layers

ZONOTOPES = "halvings of the box, zonotopes in fixed point and exact evaluation"


def _checker_rule(t1: LayeredNetwork, t2: LayeredNetwork, columns: int = 4096) -> CheckerRule:
    return CheckerRule(exact_layers(t1), exact_layers(t2), columns)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SHAPES, st.integers(0, 10**6), st.sampled_from([fmpq(1, 256), fmpq(-1, 16), fmpq(1, 2)]),
       st.lists(st.tuples(ENDS, ENDS), min_size=3, max_size=3))
def test_the_rule_bounds_every_point_of_the_box(widths, seed: int, step: fmpq, ends) -> None:
    """z3 finds no x in the box with |f1(x)_j − f2(x)_j| above the checker's zonotope bound (fixed coordinates
    included), and the producer's float rule is never below it beyond 10^−6 (relative)."""
    t1, t2 = _pair(widths, seed, step)
    box = [(min(a, c), max(a, c)) for a, c in ends[:widths[0]]]
    bound = _checker_rule(t1, t2).bound(_fractions(box))
    assert not z3_exceeds(t1, t2, box, fmpq(bound.numerator, bound.denominator)), "a point exceeds the bound"
    lo = np.array([float(a) for a, _ in box])
    hi = np.array([float(c) for _, c in box])
    approx = zonotope.Rule(t1, t2, 4096).bound(lo, hi)
    # never below the checker's beyond rounding (a neuron within a tolerance of 0 counts unstable in floats, which
    # can only loosen the float bound), and equal to it on the boxes here up to rounding
    assert approx >= float(bound) - 1e-6 * max(1.0, abs(float(bound)))


def test_a_region_making_more_symbols_than_stated_is_refused() -> None:
    t1, t2 = _pair([2, 6, 6, 2], 3, fmpq(1, 64))
    box = _fractions([(fmpq(-2), fmpq(2))] * 2)
    rule = _checker_rule(t1, t2)
    with metered(10**9):
        rule.bound(box)
    with pytest.raises(Reject, match="more than the 1 error symbols stated for it"):
        rule.bound(box, 1)


@pytest.fixture(scope="module")
def tree():
    t1, t2 = _pair([2, 6, 6, 2], 3, fmpq(1, 64))
    box = [(fmpq(-2), fmpq(2))] * 2
    d = deep_distance(t1, t2, box, deadline=no_time_limit(), max_regions=41, target=1.0, method="zonotope")
    assert d.method == "zonotope" and d.leaves > 1 and d.regions <= 41
    doc = json.loads(json.dumps(deep_distance_certificate(d, RECORDS, (t1, t2))))
    assert doc["proof"]["statement"] == ZONOTOPES and isinstance(doc["proof"]["columns"], int)
    return t1, t2, box, d, doc


def test_a_zonotope_tree_replays_and_no_point_exceeds_it(tree) -> None:
    t1, t2, box, d, doc = tree
    report = check(doc)
    assert report.valid, report.reason
    assert "zonotopes (at most" in str(report)
    assert not z3_exceeds(t1, t2, box, d.upper)


def _first_stated(doc: dict) -> int:
    return next(s for s, node in enumerate(doc["proof"]["tree"]) if node[0] == "leaf" and node[2] > 0)


def _lowered(doc: dict) -> None:
    s = _first_stated(doc)
    doc["proof"]["tree"][s][1] = str(Fraction(doc["proof"]["tree"][s][1]) / 2)


def _fewer_symbols(doc: dict) -> None:
    s = _first_stated(doc)
    doc["proof"]["tree"][s][2] = 0


def _beyond_columns(doc: dict) -> None:
    doc["proof"]["tree"][_first_stated(doc)][2] = doc["proof"]["columns"] + 1


def _no_columns(doc: dict) -> None:
    del doc["proof"]["columns"]


def _no_symbols(doc: dict) -> None:
    s = _first_stated(doc)
    doc["proof"]["tree"][s] = doc["proof"]["tree"][s][:2]


@pytest.mark.parametrize("edit,words", [(_lowered, "below the one the rule gives"),
                                        (_fewer_symbols, "more than the 0 error symbols stated"),
                                        (_beyond_columns, "an integer from 0 to proof.columns"),
                                        (_no_columns, "columns"), (_no_symbols, "proof.tree")])
def test_forged_zonotope_trees_are_refused(tree, edit, words: str) -> None:
    *_, doc = tree
    forged = copy.deepcopy(doc)
    edit(forged)
    report = check(forged)
    assert not report.valid and words in report.reason, report.reason

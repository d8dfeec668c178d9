"""certsym.decide.deep_distance's branch and bound: halvings of the box until U ≤ target·L, U ≤ ε or L > ε.

z3 over the reals (no code shared with the bound) must find no point of the box above the tree's U; the tree's
certificate replays, and forged trees (a leaf dropped, a leaf's bound nudged, a split moved, the box shifted, a
node too many, the bounds exceeded) are refused with a reason.
"""

from __future__ import annotations

import copy
import json
import random

import numpy as np
import pytest
from flint import fmpq
from helpers import Ticks, decimal_text, no_time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord
from certsym.certify.deep import deep_distance_certificate
from certsym.core.deep import LayeredNetwork
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import deep_distance
from certsym.numbers import QQ
from certsym_check import check
from certsym_check.kinds import deep_distance as checker_deep_distance
from tests.decide.test_deep import disguised
from tests.decide.test_deep_distance import perturbed, z3_exceeds

RECORDS = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "1" * 64))
BOX = [(fmpq(-1), fmpq(1))] * 2
# searches bounded by counts of regions, never by the time: what a test asserts does not depend on the machine
UNTIMED = {"deadline": no_time_limit()}


def _pair() -> tuple[LayeredNetwork, LayeredNetwork]:
    """A seeded 2-5-5-2 network over Q (weights in 1/64) and a copy with every third weight moved by 1/256 (small
    enough for z3 to settle the tree's tight U in a second)."""
    rng = np.random.default_rng(0)
    layers = []
    for a, b in ((2, 5), (5, 5), (5, 2)):
        W = [[fmpq(round(x * 64), 64) for x in row] for row in rng.standard_normal((b, a)) / np.sqrt(a)]
        layers.append((W, [fmpq(round(x * 64), 64) for x in rng.standard_normal(b) * 0.1]))
    moved = [([[w + (fmpq(1, 256) if (i + j) % 3 == 0 else 0) for j, w in enumerate(row)] for i, row in enumerate(W)],
              b) for W, b in layers]
    return LayeredNetwork.build(layers, QQ, 2, False), LayeredNetwork.build(moved, QQ, 2, False)


def _doc(d, nets, epsilon=None) -> dict:
    return json.loads(json.dumps(deep_distance_certificate(d, RECORDS, nets, epsilon)))


@pytest.fixture(scope="module")
def searched():
    t1, t2 = _pair()
    one = deep_distance(t1, t2, BOX, method="intervals")
    assert one.stopped == "one region"
    d = deep_distance(t1, t2, BOX, **UNTIMED, max_regions=2000, method="intervals")
    return t1, t2, one, d


def test_the_halvings_tighten_u_soundly(searched) -> None:
    t1, t2, one, d = searched
    assert one.tree == [] and one.leaves == 1
    assert d.tree and d.leaves > 10 and d.upper < one.upper / 2, (float(one.upper), float(d.upper), d.leaves)
    assert 0 < d.lower <= d.upper and d.lower >= one.lower
    assert d.upper == max(value for kind, value in d.tree if kind == "leaf")
    assert d.lower == max(abs(a - c) for a, c in zip(t1(d.witness), t2(d.witness), strict=True))
    assert not z3_exceeds(t1, t2, BOX, d.upper), "a point of the box exceeds the tree's U"
    report = check(_doc(d, (t1, t2)))
    assert report.valid, report.reason
    assert report.checks["deep distance: U recomputed on every leaf of the halvings, which cover the box"] == d.leaves


def _leaf(doc: dict, last: bool = False) -> int:
    leaves = [s for s, (kind, _) in enumerate(doc["proof"]["tree"]) if kind == "leaf"]
    return leaves[-1] if last else leaves[0]


def _nudged(doc: dict) -> None:
    """A leaf's bound made tighter than the rule's by 10^-9."""
    node = doc["proof"]["tree"][_leaf(doc)]
    node[1] = str(fmpq(node[1]) - fmpq(1, 10**9))


def _moved_split(doc: dict) -> None:
    node = doc["proof"]["tree"][0]
    node[1] = 1 - node[1]


def _shifted(doc: dict) -> None:
    doc["proof"]["box"][0] = ["-1", "2"]


@pytest.mark.parametrize("edit,words", [
    (lambda d: d["proof"]["tree"].pop(), "left without a leaf"),
    (lambda d: d["proof"]["tree"].pop(1), "the stated bound of the leaf"),  # a subtree's first node dropped
    (_nudged, "the stated bound of the leaf is below the one the rule gives"),
    (_moved_split, "the stated bound of the leaf"),
    (_shifted, "the stated bound of the leaf"),
    (lambda d: d["proof"]["tree"].append(["leaf", "0"]), "goes on after every region is a leaf"),
    (lambda d: d["proof"].update(upper=str(fmpq(d["proof"]["upper"]) - fmpq(1, 10**9))), "upper bound is below"),
    (lambda d: d["proof"].update(lower=str(fmpq(d["proof"]["lower"]) + fmpq(1, 10**9))), "lower bound exceeds"),
    (lambda d: d["proof"].update(upper="1/" + "3" * 1300), "proof.upper has a numerator or denominator of"),
    (lambda d: d["proof"].update(lower="1/" + "3" * 1300), "proof.lower has a numerator or denominator of"),
    (lambda d: d["proof"]["tree"].__setitem__(_leaf(d), ["leaf", "9" * 1300]), "has a numerator or denominator"),
    (lambda d: d["proof"]["tree"].__setitem__(_leaf(d), ["leaf", "9" * 2600]), "longer than 4096-bit numbers"),
    (lambda d: d["proof"].update(statement="interval differences and exact evaluation"), "must cite"),
    (lambda d: d["proof"]["tree"].__setitem__(0, ["cut", 0]), "a node is"),
    (lambda d: d["proof"]["tree"].__setitem__(_leaf(d), ["leaf", 0.5]), "a leaf's bound is an exact rational string"),
    (lambda d: d["proof"]["tree"].__setitem__(_leaf(d), ["leaf", "1/0"]), "zero denominator"),
    (lambda d: d["proof"]["tree"].__setitem__(0, ["split", 2]), "proof.tree[0]"),
    (lambda d: d["proof"].update(tree=[["leaf", "0"]] * (checker_deep_distance.MAX_NODES + 1)),
     "beyond the checker's bounds"),
])
def test_forged_trees_are_refused(searched, edit, words: str) -> None:
    t1, t2, _, d = searched
    doc = _doc(d, (t1, t2))
    if edit is _nudged or edit is _shifted:
        assert check(copy.deepcopy(doc)).valid
    edit(doc)
    report = check(doc)
    assert not report.valid and words in report.reason, report.reason


def test_looser_stated_bounds_replay(searched) -> None:
    """A stated bound may be looser than the rule's, never tighter: every leaf's and U raised, L lowered, VALID."""
    t1, t2, _, d = searched
    doc = _doc(d, (t1, t2))
    slack = fmpq(1, 2**20)
    for node in doc["proof"]["tree"]:
        if node[0] == "leaf":
            node[1] = str(fmpq(node[1]) + slack)
    doc["proof"]["upper"] = str(fmpq(doc["proof"]["upper"]) + slack)
    doc["proof"]["lower"] = str(fmpq(doc["proof"]["lower"]) / 2)
    report = check(doc)
    assert report.valid, report.reason
    doc["proof"]["upper"] = str(fmpq(doc["proof"]["upper"]) - slack / 2)  # below the largest stated leaf
    report = check(doc)
    assert not report.valid and "below the bound stated at proof.tree[" in report.reason, report.reason


def test_more_leaves_than_the_work_bound_allows_are_refused(searched, monkeypatch) -> None:
    t1, t2, _, d = searched
    doc = _doc(d, (t1, t2))
    weights = sum(len(row) + 1 for t in (t1, t2) for layer in t.layers for row in layer.W)
    monkeypatch.setattr(checker_deep_distance, "MAX_DISTANCE_WORK", d.leaves * weights - 1)
    report = check(doc)
    assert not report.valid and "beyond the checker's bounds" in report.reason, report.reason
    monkeypatch.setattr(checker_deep_distance, "MAX_DISTANCE_WORK", d.leaves * weights)
    assert check(doc).valid


def test_epsilon_between_the_root_and_the_tree_is_verified_by_the_tree(searched) -> None:
    t1, t2, one, d = searched
    epsilon = (one.upper + d.upper) / 2  # above the tree's U, below the one-region bound
    v = deep_distance(t1, t2, BOX, **UNTIMED, max_regions=20_000, epsilon=epsilon, method="intervals")
    assert v.verdict == "verified" and v.stopped == "U ≤ ε" and v.upper <= epsilon < one.upper and v.tree
    report = check(_doc(v, (t1, t2), epsilon))
    assert report.valid, report.reason
    assert any("VERIFIED" in fact for fact in report.facts)


def test_epsilon_below_a_witness_is_violated_exactly(searched) -> None:
    t1, t2, _, d = searched
    epsilon = d.lower * fmpq(9, 10)
    v = deep_distance(t1, t2, BOX, **UNTIMED, max_regions=20_000, epsilon=epsilon, method="intervals")
    assert v.verdict == "violated"
    assert max(abs(a - c) for a, c in zip(t1(v.witness), t2(v.witness), strict=True)) == v.lower > epsilon
    report = check(_doc(v, (t1, t2), epsilon))
    assert report.valid, report.reason


def test_a_point_box_searched_still_gives_u_equal_to_l() -> None:
    t1, t2 = _pair()
    point = [(fmpq(1, 3), fmpq(1, 3)), (fmpq(-1, 2), fmpq(-1, 2))]
    d = deep_distance(t1, t2, point, **UNTIMED, max_regions=200, method="intervals")
    assert d.upper == d.lower == max(abs(a - c) for a, c in zip(t1([p for p, _ in point]), t2([p for p, _ in point]),
                                                                 strict=True))
    assert check(_doc(d, (t1, t2))).valid


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(disguised(), st.integers(0, 3), st.integers(0, 9), st.integers(0, 9), st.sampled_from(
    [fmpq(1, 8), fmpq(-1, 4), fmpq(1)]))
def test_trees_on_perturbed_disguises_are_sound(pair, ell: int, i: int, q: int, delta: fmpq) -> None:
    """h·θ (moves undone) and one weight or bias moved, searched over 100 regions: no point of the box above U."""
    t1, t2 = pair
    t2 = perturbed(t2, ell % len(t2.layers), i, q, delta)
    box = [(fmpq(-1), fmpq(1))] * t1.m
    d = deep_distance(t1, t2, box, **UNTIMED, max_regions=100, target=1.0, method="intervals")
    assert 0 <= d.lower <= d.upper
    assert not z3_exceeds(t1, t2, box, d.upper), "a point of the box exceeds U"
    report = check(_doc(d, (t1, t2)))
    assert report.valid, report.reason


def test_long_leaf_values_are_refused_unread(searched) -> None:
    """A leaf's value is read only when it is no longer than a 4,096-bit fraction can be written: 300 values of
    100,000 characters (about 25 s to parse) are refused unread, before any region's bound is computed."""
    t1, t2, _, d = searched
    doc = _doc(d, (t1, t2))
    value = "1" * 39_450 + "/" + "7" * 60_549
    doc["proof"]["tree"] = [["split", 0], ["leaf", value]] * 299 + [["leaf", value]]
    report = check(doc)
    assert not report.valid and "proof.tree[1]: a stated bound longer than" in report.reason, report.reason
    assert report.work < 10_000, report.work  # nothing parsed, no region bounded


def test_a_halved_box_of_long_numbers_is_refused() -> None:
    """Box numbers of more than 4,096 bits (whose midpoints would cost their length) are refused before a tree is
    walked; the producer builds no tree on such a box."""
    t1, t2 = _pair()
    big = fmpq(1, 3 ** 2600)  # a denominator of 4,121 bits
    box = [(fmpq(-1), big), (fmpq(-1), fmpq(1))]
    d = deep_distance(t1, t2, box, **UNTIMED, max_regions=200, method="intervals")
    assert d.tree == [] and d.stopped == "the checker's bounds"
    small = deep_distance(t1, t2, [(fmpq(-1), fmpq(1))] * 2, **UNTIMED, max_regions=200, method="intervals")
    doc = _doc(small, (t1, t2))
    doc["proof"]["box"][0][1] = str(big)
    report = check(doc)
    assert not report.valid and "beyond 4096 bits" in report.reason, report.reason


def test_differences_of_long_coprime_denominators_are_charged(searched) -> None:
    """θ1's weights over D1 and scalings 1/D2, D1 and D2 coprime of 174,000 bits (within the denominator bound):
    every entry of W1 − W2' costs a quadratic gcd. Charged to the work budget, the certificate is refused before
    the differences are formed (uncharged, 400 of them ran 25 s)."""
    t1, t2, _, d = searched
    doc = _doc(d, (t1, t2))
    rnd = random.Random(0)
    D1 = rnd.getrandbits(174_000) | (1 << 173_999) | 1
    D2 = D1 + 2  # odd and two apart: coprime
    m, n = 200, 2
    one = decimal_text(D1)
    doc["inputs"][0]["parameters"] = {"layers": [
        {"W": [[f"{1 + (i + q) % 3}/{one}" for q in range(m)] for i in range(n)], "b": [f"1/{one}"] * n},
        {"W": [["1"] * n], "b": ["0"]}], "m": m, "output_relu": False}
    doc["inputs"][1]["parameters"] = {"layers": [{"W": [["1"] * m for _ in range(n)], "b": ["1"] * n},
                                                 {"W": [["1"] * n], "b": ["0"]}], "m": m, "output_relu": False}
    doc["proof"] = {"box": [["0", "1"]] * m, "alignment": [[[i, i, f"1/{decimal_text(D2)}"] for i in range(n)]],
                    "upper": "0", "lower": "0", "witness": ["0"] * m,
                    "statement": "interval differences and exact evaluation"}
    report = check(doc)
    assert not report.valid and "the weights' differences: beyond the checker's work budget" in report.reason, \
        report.reason


def test_the_time_and_region_budgets_stop_the_halvings_and_say_so() -> None:
    """A fake clock (one second per read) stops the halvings at the time budget, and a count at the region budget,
    each before the target, and each says which; both trees replay. A budget of 0 is the box alone."""
    t1, t2 = _pair()
    timed = deep_distance(t1, t2, BOX, deadline=Deadline(20, clock=Ticks(1.0)), max_regions=10_000,
                          method="intervals")
    assert timed.stopped == "the time budget" and 1 < timed.regions < 40 and timed.tree
    counted = deep_distance(t1, t2, BOX, **UNTIMED, max_regions=21, method="intervals")
    assert counted.stopped == "the region budget" and counted.regions == 21 and counted.leaves == 11
    for d in (timed, counted):
        report = check(_doc(d, (t1, t2)))
        assert report.valid, report.reason
    alone = deep_distance(t1, t2, BOX, deadline=Deadline(0, clock=Ticks(1.0)), method="intervals")
    assert alone.stopped == "one region" and alone.tree == []

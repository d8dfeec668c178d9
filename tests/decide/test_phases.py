"""Complete deep equivalence by phase splitting (certsym.decide.phases; MATH.md Part IV): on pairs equal only on
the image of the layers below (always-active units shifted, dead units added, affine layers, other depths), the
deep decision is never UNDECIDED, z3 never contradicts it, its certificate replays, and forged trees are refused."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from flint import fmpq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord
from certsym.certify.deep import deep_certificate
from certsym.core.deep import LayeredNetwork
from certsym.decide import phases
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, decide
from certsym.numbers import QQ
from certsym_check import check
from tests.decide.test_deep import z3_verdict

RECORDS = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "1" * 64))


def _net(layers: list, m: int, relu: bool = False) -> LayeredNetwork:
    return LayeredNetwork.build([([[fmpq(x) for x in row] for row in W], [fmpq(x) for x in b]) for W, b in layers],
                                QQ, m, relu)


def _base(seed: int, m: int, widths: list[int], k: int) -> list:
    rng = np.random.default_rng(seed)
    out, a = [], m
    for n in [*widths, k]:
        out.append(([[int(v) for v in row] for row in rng.integers(-3, 4, (n, a))],
                    [int(v) for v in rng.integers(-2, 3, n)]))
        a = n
    return out


def _shift_active(layers: list) -> list:
    """Layer 2 gets a unit relu(h_1 + 1) of an always-nonnegative input h_1 ≥ 0 (a layer-1 output): always active,
    so relu(h_1 + 1) = h_1 + 1; the copy computes it that way and subtracts the 1 in the next layer's bias."""
    (W1, b1), (W2, b2), *rest = [(list(map(list, W)), list(b)) for W, b in layers]
    n1 = len(W1)
    W2 = W2 + [[1] + [0] * (n1 - 1)]
    b2 = b2 + [1]
    nxt_W, nxt_b = rest[0]
    nxt_W = [row + [2] for row in nxt_W]
    nxt_b = [c - 2 for c in nxt_b]  # 2·(h_1 + 1) − 2 = 2 h_1
    return [(W1, b1), (W2, b2), (nxt_W, nxt_b), *rest[1:]]


def _plain_extra(layers: list) -> list:
    """The same as ``_shift_active`` without the shift: the unit relu(h_1) read with weight 2, i.e. 2 h_1."""
    (W1, b1), (W2, b2), *rest = [(list(map(list, W)), list(b)) for W, b in layers]
    n1 = len(W1)
    W2 = W2 + [[1] + [0] * (n1 - 1)]
    b2 = b2 + [0]
    nxt_W, nxt_b = rest[0]
    return [(W1, b1), (W2, b2), ([row + [2] for row in nxt_W], nxt_b), *rest[1:]]


def _dead_unit(layers: list, weight: int) -> list:
    """Layer 2 gets relu(−h_1 − 1) = 0 on the image of layer 1, read by the next layer with any weight."""
    (W1, b1), (W2, b2), *rest = [(list(map(list, W)), list(b)) for W, b in layers]
    n1 = len(W1)
    W2 = W2 + [[-1] + [0] * (n1 - 1)]
    b2 = b2 + [-1]
    nxt_W, nxt_b = rest[0]
    return [(W1, b1), (W2, b2), ([row + [weight] for row in nxt_W], nxt_b), *rest[1:]]


def _decided(t1: LayeredNetwork, t2: LayeredNetwork, expected: str | None = None) -> None:
    v = decide(t1, t2)
    assert v.status in (EQUIVALENT, NOT_EQUIVALENT), v.reason
    assert z3_verdict(t1, t2) == ("equal" if v.status == EQUIVALENT else "different")
    if expected is not None:
        assert v.status == expected
    report = check(json.loads(json.dumps(deep_certificate(v, RECORDS))))
    assert report.valid, report.reason


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([1, 2]), st.sampled_from(["shift", "dead", "moved"]))
def test_pairs_equal_only_on_the_image_are_decided_and_z3_agrees(seed: int, m: int, how: str) -> None:
    base = _base(seed, m, [3, 2], 1)
    first = _plain_extra(base)
    if how == "shift":
        second = _shift_active(base)
    elif how == "dead":
        first, second = _dead_unit(base, 0), _dead_unit(base, 3)
    else:  # the shifted copy with its correction off by 1/2: not equivalent wherever layer 2 is read
        second = _shift_active(base)
        second[2][1][0] = second[2][1][0] + fmpq(1, 2)
    _decided(_net(first, m), _net(second, m))


def test_an_always_active_unit_folded_into_the_bias_is_equivalent() -> None:
    t1 = _net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [1, 0]), ([[1, -1]], [0])], 1)
    t2 = _net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, -1]], [1])], 1)
    _decided(t1, t2, EQUIVALENT)


def test_networks_of_different_depths_and_output_relus() -> None:
    """|x| as one hidden layer, and as two (the second an identity on nonnegative values), with an output ReLU."""
    shallow = _net([([[1], [-1]], [0, 0]), ([[1, 1]], [0])], 1)
    deep = _net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, 1]], [0])], 1, relu=True)
    _decided(shallow, deep, EQUIVALENT)
    off = _net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, 2]], [0])], 1, relu=True)
    _decided(shallow, off, NOT_EQUIVALENT)


@pytest.fixture(scope="module")
def tree_doc() -> dict:
    base = _base(7, 2, [3, 2], 1)
    t1, t2 = _net(_plain_extra(base), 2), _net(_shift_active(base), 2)
    v = decide(t1, t2)
    assert v.phases is not None
    return json.loads(json.dumps(deep_certificate(v, RECORDS)))


def _first(doc: dict, kind: str) -> int:
    return next(s for s, node in enumerate(doc["proof"]["phases"]) if node[0] == kind)


def _negated(doc: dict) -> None:
    s = _first(doc, "flat") if any(n[0] == "flat" for n in doc["proof"]["phases"]) else _first(doc, "empty")
    mu = doc["proof"]["phases"][s][1]
    j = next(i for i, u in enumerate(mu) if u != "0")
    mu[j] = "-" + mu[j]


def _scaled(doc: dict) -> None:
    s = _first(doc, "empty")
    mu = doc["proof"]["phases"][s][1]
    j = next(i for i, u in enumerate(mu) if u != "0")
    mu[j] = mu[j] + "0" if "/" not in mu[j] else mu[j].replace("/", "0/")


def _relabel(doc: dict, kind: str, new: str) -> None:
    s = _first(doc, kind)
    doc["proof"]["phases"][s][0] = new


def _weight_moved(doc: dict) -> None:
    doc["inputs"][1]["parameters"]["layers"][-1]["b"][0] = "1/3"


@pytest.mark.parametrize("edit, words", [
    (_negated, "negative"),
    (_scaled, "not constant|negative constant"),
    (lambda d: d["proof"]["phases"].pop(), "ends before"),
    (lambda d: d["proof"]["phases"].append(["equal"]), "goes on after"),
    (lambda d: d["proof"]["phases"].__setitem__(_first(d, "equal"), ["split"]), "expected \\[\"equal\"\\]|ends before"),
    (lambda d: _relabel(d, "empty", "flat"), "not shown flat"),
    (_weight_moved, "affine maps differ"),
    (lambda d: d["proof"].update(statement="block lemma"), "proof"),
])
def test_forged_phase_trees_are_refused(tree_doc: dict, edit, words: str) -> None:
    import re

    forged = copy.deepcopy(tree_doc)
    edit(forged)
    report = check(forged)
    assert not report.valid
    assert re.search(words, report.reason), report.reason


def test_the_budget_is_counted_in_nodes() -> None:
    base = _base(3, 2, [3, 2], 1)
    t1, t2 = _net(_plain_extra(base), 2), _net(_shift_active(base), 2)
    stopped = phases.decide(t1, t2, max_nodes=1)
    assert stopped is not None and stopped.tree is None and stopped.witness is None
    assert "reached 1 nodes" in stopped.reason


def test_a_spent_time_budget_leaves_the_pair_undecided_and_says_so() -> None:
    """The time budget is read through a Deadline (a fake clock here): spent, the splitting stops at its first
    split and the verdict says why; unlimited, the same pair is decided."""
    from certsym.decide.deadline import Deadline
    from certsym.decide.deep import UNDECIDED

    base = _base(3, 2, [3, 2], 1)
    t1, t2 = _net(_plain_extra(base), 2), _net(_shift_active(base), 2)
    spent = decide(t1, t2, deadline=Deadline(0.0, clock=lambda: 0.0))
    assert spent.status == UNDECIDED and "time budget (0 s) ran out after 0 nodes" in spent.reason
    assert decide(t1, t2, deadline=Deadline(float("inf"))).status == EQUIVALENT

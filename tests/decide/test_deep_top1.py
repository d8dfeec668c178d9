"""certsym.decide.deep_top1 against z3 over the reals (an oracle sharing no code with the decision), and its
certificates against the independent checker, including tampered ones."""

from __future__ import annotations

import copy
import json
import random

import pytest
import z3
from flint import fmpq
from helpers import Z3_RLIMIT, Ticks, no_time_limit

from certsym.certify import deep_top1_certificate
from certsym.certify.envelope import InputRecord
from certsym.decide.deadline import Deadline
from certsym.decide.deep_top1 import deep_top1
from certsym.errors import InputError
from certsym_check import check_certificate
from tests.decide.test_deep import net, z3_outputs


def _records() -> tuple[InputRecord, InputRecord]:
    return InputRecord("theta1", "0" * 64), InputRecord("theta2", "0" * 64)


def _z3_disagree(t1, t2, box) -> bool:
    """∃x in the box where the two networks' sets of largest outputs differ."""
    xs = [z3.Real(f"x{q}") for q in range(t1.m)]
    f1, f2 = z3_outputs(t1, xs), z3_outputs(t2, xs)

    def top(f, c):
        return z3.And([f[c] >= f[j] for j in range(t1.k) if j != c])

    solver = z3.Solver()
    solver.set("rlimit", Z3_RLIMIT)
    solver.add(*[z3.And(x >= z3.RealVal(str(lo)), x <= z3.RealVal(str(hi))) for x, (lo, hi) in zip(xs, box,
                                                                                                      strict=True)])
    solver.add(z3.Or([top(f1, c) != top(f2, c) for c in range(t1.k)]))
    result = solver.check()
    assert result != z3.unknown, "z3 ran out of its resource count"
    return result == z3.sat


def _random_pair(rng: random.Random):
    """A deep network (m ≤ 2, 2 or 3 hidden layers of width ≤ 4, 2 or 3 outputs, integer weights in [−3, 3]) and a
    copy with one output bias moved by j/8 (or none)."""
    m, depth, k = rng.randint(1, 2), rng.randint(2, 3), rng.randint(2, 3)
    widths = [m] + [rng.randint(1, 4) for _ in range(depth)] + [k]
    layers = [([[rng.randint(-3, 3) for _ in range(a)] for _ in range(b)], [rng.randint(-3, 3) for _ in range(b)])
              for a, b in zip(widths, widths[1:], strict=False)]
    moved = [([list(r) for r in W], list(b)) for W, b in layers]
    if rng.random() < 0.8:
        j = rng.randrange(k)
        moved[-1][1][j] = fmpq(moved[-1][1][j]) + fmpq(rng.choice([-3, -1, 1, 2, 4]), 8)
    return net(layers), net(moved)


def test_verdicts_agree_with_z3() -> None:
    """40 random pairs and boxes: every AGREE is z3-unsatisfiable disagreement, every DIFFER satisfiable (and its
    witness exact), every certificate VALID; UNKNOWN (boundaries that coincide without equivalence: ties on both
    sides, so neither claim holds) stays a minority."""
    rng = random.Random(7)
    decided = 0
    for _ in range(40):
        t1, t2 = _random_pair(rng)
        lo, width = fmpq(rng.randint(-2, 1)), rng.choice([fmpq(1, 4), fmpq(1), fmpq(3)])
        box = [(lo, lo + width)] * t1.m
        r = deep_top1(t1, t2, box, deadline=no_time_limit(), max_regions=400)
        if r.verdict == "unknown":
            continue
        decided += 1
        assert _z3_disagree(t1, t2, box) == (r.verdict == "differ")
        report = check_certificate(json.loads(json.dumps(deep_top1_certificate(r, _records(), (t1, t2)))))
        assert report.valid, report.reason
    assert decided >= 25


def _pair():
    A = net([([[1, 0], [0, 1], [1, 1]], [0, 0, 0]), ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0, 0, 0]),
             ([[1, 0, 0], [0, 1, 0], [0, 0, fmpq(1, 2)]], [0, 0, 0])], False)
    B = net([([[1, 0], [0, 1], [1, 1]], [0, 0, 0]), ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [0, 0, 0]),
             ([[1, 0, 0], [0, 1, 0], [0, 0, fmpq(1, 2)]], [0, fmpq(1, 100), 0])], False)
    return A, B


def test_agreement_with_splits_replays_and_tampering_is_refused() -> None:
    """f = (x0, x1, (x0 + x1)/2) on [0, 1]²: class 0 where x0 > x1, 1 where x1 > x0; B favours class 1 by 1/100.
    On the box x0 ∈ [1/2, 1], x1 ∈ [0, 1/4] both say 0, and a tree of halvings is needed near x0 = 1/2."""
    A, B = _pair()
    box = [(fmpq(1, 2), fmpq(1)), (fmpq(0), fmpq(1, 4))]
    r = deep_top1(A, B, box, deadline=no_time_limit(), max_regions=400)
    assert r.verdict == "agree" and r.leaves >= 1 and r.equivalence is None
    cert = json.loads(json.dumps(deep_top1_certificate(r, _records(), (A, B))))
    assert check_certificate(cert).valid
    proof = cert["proof"]
    for edit, reason in [
        (lambda p: p["tree"].append(["leaf", 0]), "goes on"),
        (lambda p: p["tree"].pop(), "left without a leaf"),
        (lambda p: p.__setitem__("tree", [["leaf", 1]]), "does not lead"),
        (lambda p: p.__setitem__("box", [["0", "1"], ["0", "1"]]), ""),
        (lambda p: p.__setitem__("tree", [["split", 2]]), "index"),
        (lambda p: p.__setitem__("tree", [["cut", 0]]), "a node is"),
        (lambda p: p.__setitem__("statement", "block lemma"), ""),
    ]:
        doc = copy.deepcopy(cert)
        edit(doc["proof"])
        report = check_certificate(doc)
        assert not report.valid and reason in report.reason, (proof, report.reason)


def test_disagreement_witness_replays_and_tampering_is_refused() -> None:
    A, B = _pair()
    box = [(fmpq(0), fmpq(1)), (fmpq(0), fmpq(1))]
    r = deep_top1(A, B, box, deadline=no_time_limit(), max_regions=400)
    assert r.verdict == "differ" and set(r.classes) == {0, 1}
    cert = json.loads(json.dumps(deep_top1_certificate(r, _records(), (A, B))))
    assert check_certificate(cert).valid
    for path, value in [("classes", list(reversed(r.classes))), ("classes", [0, 0]),
                        ("witness", ["2", "0"]), ("witness", ["1/3", "1/3"])]:
        doc = copy.deepcopy(cert)
        doc["proof"][path] = value
        assert not check_certificate(doc).valid


def test_output_relu_is_refused() -> None:
    A, _ = _pair()
    C = net([(layer.W, layer.b) for layer in A.layers], True)
    with pytest.raises(InputError, match="output ReLU"):
        deep_top1(A, C, [(fmpq(0), fmpq(1))] * 2)


def test_costly_trees_are_refused_before_the_work() -> None:
    """Found by review: 256 halvings of a box with 175,000-bit denominators (32 s of gcds, no leaf charged; here
    12,680 bits), and splits copying a region of 10^6 coordinates (2.5 GB), are refused by their sizes first, before
    any work is charged."""
    A, B = _pair()
    r = deep_top1(A, B, [(fmpq(1, 2), fmpq(1)), (fmpq(0), fmpq(1, 4))], deadline=no_time_limit(), max_regions=400)
    cert = json.loads(json.dumps(deep_top1_certificate(r, _records(), (A, B))))
    huge = copy.deepcopy(cert)
    huge["proof"]["box"][0] = ["1/" + str(3 ** 8000), "1"]
    huge["proof"]["tree"] = [["split", 0]] * 256
    report = check_certificate(huge)
    assert not report.valid and "4096 bits" in report.reason and report.work < 10_000, report.work
    wide = [net([([[1] * 100], [0]), ([[1]], [0]), ([[0], [0]], [0, c])]) for c in (1, 2)]  # class 1 everywhere
    r = deep_top1(*wide, [(fmpq(0), fmpq(1, 4))] * 100, deadline=no_time_limit(), max_regions=400)
    assert r.verdict == "agree" and r.tree == [("leaf", 1)]
    many = json.loads(json.dumps(deep_top1_certificate(r, _records(), tuple(wide))))
    many["proof"]["tree"] = [["split", q % 100] for q in range(200_000)]
    report = check_certificate(many)
    assert not report.valid and "coordinates" in report.reason


def test_the_time_and_region_budgets_stop_the_search_and_say_so() -> None:
    """A pair whose boundaries coincide without equivalence (case 19 of the z3 test) is never decided: the search
    stops at the time budget of a fake clock (one second per read), or at the region budget, and says which."""
    rng = random.Random(7)
    for _ in range(20):
        t1, t2 = _random_pair(rng)
        lo, width = fmpq(rng.randint(-2, 1)), rng.choice([fmpq(1, 4), fmpq(1), fmpq(3)])
    box = [(lo, lo + width)] * t1.m
    timed = deep_top1(t1, t2, box, deadline=Deadline(30, clock=Ticks(1.0)), max_regions=10_000)
    assert timed.verdict == "unknown" and timed.stopped == "the time budget" and 1 < timed.regions < 30
    counted = deep_top1(t1, t2, box, deadline=no_time_limit(), max_regions=40)
    assert counted.verdict == "unknown" and counted.stopped == "the region budget" and counted.regions <= 40
    spent = deep_top1(t1, t2, box, deadline=Deadline(0, clock=Ticks(1.0)))
    assert spent.verdict == "unknown" and spent.stopped == "the time budget" and spent.regions == 1

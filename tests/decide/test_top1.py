"""Top-1 agreement: verdicts on copies of a network, replayed certificates, exact checks of the witnesses, and a
checker that rejects tampered trees, margins, classes and witnesses."""

from __future__ import annotations

import copy
import functools
import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq
from helpers import Ticks, no_time_limit

from certsym.api import load
from certsym.certify import InputRecord, top1_certificate
from certsym.cli import main
from certsym.decide.deadline import Deadline
from certsym.decide.top1 import top1, unique_top
from certsym.errors import InputError
from certsym_check import check_certificate

RECORDS = (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64))
NAMES = ("0.weight", "0.bias", "2.weight", "2.bias")
# searches bounded by a count of regions, not by the time: what a test asserts does not depend on the machine
UNTIMED = {"deadline": no_time_limit(), "max_regions": 200}


def _model(seed: int, m: int = 4, n: int = 12, k: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, m)) / np.sqrt(m)).astype(np.float32), (rng.normal(size=n) * 0.3).astype(np.float32),
            (rng.normal(size=(k, n)) / np.sqrt(n)).astype(np.float32), (rng.normal(size=k) * 0.1).astype(np.float32)]


def _pair(seed: int, copy_kind: str = "float16"):
    a = _model(seed)
    W1, b1, W2, b2 = a
    if copy_kind == "shifted":  # output biases 0 and 1: the shift is exact
        a = [W1, b1, W2, np.zeros_like(b2)]
    b = {"float16": [x.astype(np.float16) for x in a],
         "times2": [W1 * 2, b1 * 2, W2 / 2, b2],
         "shifted": [W1, b1, W2, np.ones_like(b2)],
         "doubled": [W1, b1, W2 * 2, b2 * 2]}[copy_kind]
    return load(a).network, load(b).network


def _box(hi: str, m: int = 4) -> list:
    return [(fmpq(0), fmpq(*map(int, (hi + "/1").split("/")[:2])))] * m


def _doc(r, A, B) -> dict:
    return json.loads(json.dumps(top1_certificate(r, RECORDS, (A, B))))


def test_agreement_holds_on_ten_thousand_points_and_replays() -> None:
    """A tree of 13 leaves: the certificate replays, and at 10^4 random points of the box both networks have the
    certified leaf's class as their float argmax (margins far above float error), 50 of them exactly."""
    A, B = _pair(2)
    r = top1(A, B, _box("1/2"), **UNTIMED)
    assert r.verdict == "agree" and len(r.root.leaves()) > 1
    assert check_certificate(_doc(r, A, B)).valid
    rng = np.random.default_rng(0)
    X = rng.random((10_000, 4)) / 2
    classes = {leaf.label for leaf in r.root.leaves()}
    for x in X[:50]:
        point = [fmpq(*float(t).as_integer_ratio()) for t in x]
        c1, c2 = unique_top(A.evaluate(point)), unique_top(B.evaluate(point))
        assert c1 == c2 and c1 in classes


def test_disagreement_witness_is_exact() -> None:
    A, B = _pair(0)
    r = top1(A, B, _box("1"), **UNTIMED)
    assert r.verdict == "differ"
    a, b = r.classes
    assert a != b and unique_top(A.evaluate(r.witness)) == a and unique_top(B.evaluate(r.witness)) == b
    assert all(lo <= x <= hi for x, (lo, hi) in zip(r.witness, r.box, strict=True))
    assert check_certificate(_doc(r, A, B)).valid


def test_equivalent_networks_agree_by_equivalence() -> None:
    A, B = _pair(0, "times2")
    r = top1(A, B, _box("1"), **UNTIMED)
    assert r.verdict == "agree" and r.equivalence is not None
    doc = _doc(r, A, B)
    assert doc["proof"]["statement"] == "Theorems 3/4" and check_certificate(doc).valid


def test_outputs_shifted_alike_agree_by_shift_leaves() -> None:
    """f2 = f1 + 1 on every output: no margin certifies a box crossed by a decision boundary, but f1 − f2 is the
    same for every output, so the leaves are shift leaves (bounds ≤ 0 of ±(D_t − D_0)) and the answer is AGREE."""
    A, B = _pair(0, "shifted")
    r = top1(A, B, _box("1"), **UNTIMED)
    assert r.verdict == "agree" and any(leaf.shift for leaf in r.root.leaves())
    doc = _doc(r, A, B)
    assert any(n.get("shift") for n in doc["proof"]["regions"]) and check_certificate(doc).valid


@pytest.mark.parametrize("seed", [7, 10])
def test_one_changed_neuron_is_decided_where_the_networks_coincide(seed: int) -> None:
    """A copy with one bias changed by 1/64: where that neuron is inactive the networks coincide, and a shift leaf
    closes the region (bounds ≤ 0 of ±(D_t − D_0)); elsewhere margins decide. AGREE on [0, 1]^4, replayed."""
    W1, b1, W2, b2 = _model(seed)
    changed = b1.copy()
    changed[int(np.argmax(np.linalg.norm(W2, axis=0) * np.linalg.norm(W1, axis=1)))] += np.float32(1 / 64)
    A, B = load([W1, b1, W2, b2]).network, load([W1, changed, W2, b2]).network
    r = top1(A, B, _box("1"), **UNTIMED)
    assert r.verdict == "agree" and any(leaf.shift for leaf in r.root.leaves())
    doc = _doc(r, A, B)
    assert any(n.get("shift") for n in doc["proof"]["regions"]) and check_certificate(doc).valid


def test_a_shared_decision_boundary_is_unknown_not_a_guess() -> None:
    """Doubling every output keeps every argmax, but no margin certifies a box crossed by a decision boundary and
    f1 − f2 = −f1 is not the same for every output: the answer is UNKNOWN, and no certificate is written for it."""
    A, B = _pair(0, "doubled")
    r = top1(A, B, _box("1"), deadline=no_time_limit(), max_regions=20)
    assert r.verdict == "unknown" and r.witness is None and r.stopped == "the region budget"
    with pytest.raises(InputError):
        top1_certificate(r, RECORDS, (A, B))


def test_the_time_budget_stops_the_search_and_says_so() -> None:
    """A fake clock that moves one second per read, a budget of 40 s: the search stops at the time budget after a
    number of regions that depends only on the code (not on the machine), below the region budget, and says so."""
    A, B = _pair(0, "doubled")
    clock = Ticks(1.0)
    r = top1(A, B, _box("1"), deadline=Deadline(40, clock=clock), max_regions=2000)
    assert r.verdict == "unknown" and r.stopped == "the time budget" and 1 <= r.regions < 2000
    again = top1(A, B, _box("1"), deadline=Deadline(40, clock=Ticks(1.0)), max_regions=2000)
    assert again.regions == r.regions and again.seconds == r.seconds  # the same looks at the same fake clock
    spent = top1(A, B, _box("1"), deadline=Deadline(0, clock=Ticks(1.0)))
    assert spent.verdict == "unknown" and spent.stopped == "the time budget" and spent.regions == 1


def test_point_boxes_decide_exactly() -> None:
    A, B = _pair(0)
    differ = top1(A, B, _box("1"), **UNTIMED)
    point = [(x, x) for x in differ.witness]
    at = top1(A, B, point, **UNTIMED)
    assert at.verdict == "differ" and at.witness == differ.witness
    centre = [(fmpq(1, 16), fmpq(1, 16))] * 4
    same = top1(A, B, centre, **UNTIMED)
    assert same.verdict == "agree" and len(same.root.leaves()) == 1
    assert check_certificate(_doc(same, A, B)).valid and check_certificate(_doc(at, A, B)).valid


@functools.cache
def _cached() -> tuple[str, str, str]:
    A, B = _pair(2)
    agree = top1(A, B, _box("1/2"), **UNTIMED)
    A0, B0 = _pair(0)
    differ = top1(A0, B0, _box("1"), **UNTIMED)
    As, Bs = _pair(0, "shifted")
    shifted = top1(As, Bs, _box("1"), **UNTIMED)
    return json.dumps(_doc(agree, A, B)), json.dumps(_doc(differ, A0, B0)), json.dumps(_doc(shifted, As, Bs))


def _leaf(doc: dict) -> dict:
    return next(n for n in doc["proof"]["regions"] if "split" not in n and n.get("bounds"))


def _nudge(doc: dict) -> None:
    entry = next(b for n in doc["proof"]["regions"] for b in n.get("bounds", []) if b[4])
    entry[4][0][2] = str(Fraction(entry[4][0][2]) * Fraction(1001, 1000))


def _drop_margin(doc: dict) -> None:
    """Every bound of one margin removed from the tree: a leaf lacks it."""
    target = _leaf(doc)["bounds"][0][:3]
    for node in doc["proof"]["regions"]:
        if "bounds" in node:
            node["bounds"] = [b for b in node["bounds"] if b[:3] != target]


def _drop_leaf(doc: dict) -> None:
    regions = doc["proof"]["regions"]
    regions.pop(max(i for i, node in enumerate(regions) if "split" not in node))


AGREEMENT = {
    "multiplier nudged": _nudge,
    "bound restated as -1": lambda d: _leaf(d)["bounds"][0].__setitem__(3, "-1"),
    "leaf class changed": lambda d: _leaf(d).__setitem__("class", (_leaf(d)["class"] + 1) % 3),
    "leaf class missing": lambda d: _leaf(d).pop("class"),
    "a margin missing": _drop_margin,
    "leaf dropped": _drop_leaf,
    "split moved": lambda d: next(n for n in d["proof"]["regions"] if "split" in n)["split"].__setitem__(
        1, (next(n for n in d["proof"]["regions"] if "split" in n)["split"][1] + 1) % 12),
    "split on a coordinate instead": lambda d: next(n for n in d["proof"]["regions"] if "split" in n).__setitem__(
        "split", ["x", 0]),
    "box widened": lambda d: d["proof"]["box"].__setitem__(0, ["0", "1"]),
    "network name": lambda d: _leaf(d)["bounds"][0].__setitem__(0, "C"),
    "margin of a class over itself": lambda d: _leaf(d)["bounds"][0].__setitem__(2, _leaf(d)["bounds"][0][1]),
    "output bias changed": lambda d: d["inputs"][1]["parameters"]["c"].__setitem__(0, "7"),
    "kind": lambda d: d.__setitem__("kind", "top1_disagreement"),
    "statement": lambda d: d["proof"].__setitem__("statement", "trust me"),
}

DISAGREEMENT = {
    "classes swapped": lambda d: d["proof"]["classes"].reverse(),
    "classes equal": lambda d: d["proof"]["classes"].__setitem__(1, d["proof"]["classes"][0]),
    "witness outside the box": lambda d: d["proof"]["witness"].__setitem__(0, "2"),
    "witness moved": lambda d: d["proof"]["witness"].__setitem__(0, "0"),
    "box shrunk away from the witness": lambda d: d["proof"]["box"].__setitem__(
        0, [str(Fraction(d["proof"]["witness"][0]) + 1), str(Fraction(d["proof"]["witness"][0]) + 2)]),
    "inputs swapped": lambda d: d["inputs"].reverse(),
    "kind": lambda d: d.__setitem__("kind", "top1_agreement"),
}


def _shift_leaf(doc: dict) -> dict:
    return next(n for n in doc["proof"]["regions"] if n.get("shift"))


def _shift_bound(doc: dict) -> list:
    return next(b for n in doc["proof"]["regions"] for b in n.get("bounds", []) if b[0] == "=")


SHIFT = {
    "shift leaf given a class": lambda d: _shift_leaf(d).__setitem__("class", 0),
    "shift false": lambda d: _shift_leaf(d).__setitem__("shift", False),
    "shift as a string": lambda d: _shift_leaf(d).__setitem__("shift", "true"),
    "shift bound restated": lambda d: _shift_bound(d).__setitem__(3, "-1"),
    "shift objective on output 0": lambda d: _shift_bound(d).__setitem__(1, 0),
    "shift sign 1.0": lambda d: _shift_bound(d).__setitem__(2, 1.0),
    "output bias changed": lambda d: d["inputs"][1]["parameters"]["c"].__setitem__(1, "2"),
    "pairs dropped": lambda d: d["proof"].__setitem__("pairs", []),
}


MUTATIONS = [(0, name, f) for name, f in AGREEMENT.items()] + [(1, name, f) for name, f in DISAGREEMENT.items()] + \
    [(2, name, f) for name, f in SHIFT.items()]


@pytest.mark.parametrize(("which", "name", "mutate"), MUTATIONS, ids=[f"{w}-{n}" for w, n, _ in MUTATIONS])
def test_checker_rejects_tampered_certificates(which: int, name: str, mutate) -> None:
    """A genuine agreement (0), disagreement (1) or shift-leaf agreement (2) replays; each mutation is refused."""
    doc = json.loads(_cached()[which])
    assert check_certificate(doc).valid
    broken = copy.deepcopy(doc)
    mutate(broken)
    assert broken != doc
    assert not check_certificate(json.loads(json.dumps(broken))).valid, name


def test_cli_top1(tmp_path, capfd) -> None:
    a = _model(2)
    np.savez(tmp_path / "a.npz", **dict(zip(NAMES, a, strict=True)))
    np.savez(tmp_path / "b.npz", **dict(zip(NAMES, [x.astype(np.float16) for x in a], strict=True)))
    W1, b1, W2, b2 = a
    np.savez(tmp_path / "c1.npz", **dict(zip(NAMES, [W1, b1, W2 * 2, b2 * 2], strict=True)))
    files = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]
    cert = tmp_path / "t.json"
    for box, code, word in (("0,0.5", 0, "AGREE"), ("-1,1", 1, "DIFFER")):
        assert main(["distance", *files, "--top1", "--box", box, "--regions", "200", "--cert", str(cert)]) == code
        assert capfd.readouterr().out.startswith(word)
        assert main(["check", str(cert), "--inputs", *files]) == 0
        assert "VALID top1_" in capfd.readouterr().out
    cert.unlink()
    doubled = [files[0], str(tmp_path / "c1.npz")]
    assert main(["distance", *doubled, "--top1", "--regions", "20", "--cert", str(cert), "--json"]) == 3
    out = capfd.readouterr()
    assert json.loads(out.out)["top1"] == "unknown" and "no certificate" in out.err and not cert.exists()
    assert main(["distance", *files, "--top1", "--epsilon", "1"]) == 2
    assert "--top1" in capfd.readouterr().err

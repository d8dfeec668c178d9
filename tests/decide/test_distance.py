"""Certified distance: soundness against sampling, U = 0 for equivalent pairs, and a checker that rejects
tampered bounds, alignments and witnesses."""

from __future__ import annotations

import copy
import functools
import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq, fmpq_mat
from helpers import Ticks, frozen_clock, no_time_limit

from certsym.api import load
from certsym.certify import InputRecord, distance_certificate
from certsym.cli import main
from certsym.core.network import Network
from certsym.decide.deadline import Deadline
from certsym.decide.distance import align, distance, evaluate_difference, parse_box
from certsym.decide.relaxation import Pair, Region, bound_region, extremes
from certsym.errors import InputError
from certsym.io.vnnlib import input_boxes
from certsym_check import check_certificate

RECORDS = (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64))
# searches bounded by counts of regions, never by the time: what a test asserts does not depend on the machine
UNTIMED = {"deadline": no_time_limit()}


def _model(seed: int, m: int = 6, n: int = 10, k: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, m)) / np.sqrt(m)).astype(np.float32), (rng.normal(size=n) * 0.3).astype(np.float32),
            (rng.normal(size=(k, n)) / np.sqrt(n)).astype(np.float32), (rng.normal(size=k) * 0.1).astype(np.float32)]


def _copies(arrays: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    W1, b1, W2, b2 = arrays
    norms = np.linalg.norm(W2, axis=0) * np.linalg.norm(W1, axis=1)
    keep = np.sort(np.argsort(norms)[max(1, len(norms) // 10):])
    return {"float16": [x.astype(np.float16) for x in arrays],
            "times3": [(W1 * 3).astype(np.float32), (b1 * 3).astype(np.float32), (W2 / 3).astype(np.float32), b2],
            "pruned": [W1[keep], b1[keep], W2[:, keep], b2],
            "unrelated": _model(99, W1.shape[1], W1.shape[0], W2.shape[0])}


def _float_difference(a: list[np.ndarray], b: list[np.ndarray], X: np.ndarray) -> np.ndarray:
    def rho(W1, b1, W2, b2):
        W1, b1, W2, b2 = (np.asarray(t, dtype=np.float64) for t in (W1, b1, W2, b2))
        return np.maximum(X @ W1.T + b1, 0) @ W2.T + b2

    return rho(*a) - rho(*b)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["float16", "times3", "pruned", "unrelated"])
def test_bounds_are_sound_on_ten_thousand_samples(seed: int, kind: str) -> None:
    """L ≤ U, every one of 10^4 random points of the box has |difference| ≤ U (floating point with a margin far
    below U), and 50 of them exactly; the witness's value is L, exactly."""
    a = _model(seed)
    b = _copies(a)[kind]
    A, B = load(a).network, load(b).network
    box = parse_box("-1,2", A.m) if seed == 2 else None
    d = distance(A, B, box, **UNTIMED, max_regions=40)
    assert d.lower <= d.upper
    lo, hi = np.array([float(x) for x, _ in d.box]), np.array([float(y) for _, y in d.box])
    X = lo + (hi - lo) * np.random.default_rng(seed + 7).random((10_000, A.m))
    sampled = np.abs(_float_difference(a, b, X)).max()
    assert sampled <= float(d.upper) * (1 + 1e-9) + 1e-12
    for x in X[:50]:
        exact = [fmpq(*float(t).as_integer_ratio()) for t in x]
        assert max(abs(v) for v in evaluate_difference(A, B, exact)) <= d.upper
    assert max(abs(v) for v in evaluate_difference(A, B, d.witness)) == d.lower
    assert len(d.witness) == len(d.box) == A.m
    assert all(lo_q <= t <= hi_q for t, (lo_q, hi_q) in zip(d.witness, d.box, strict=True))
    assert check_certificate(distance_certificate(d, RECORDS, (A, B))).valid


def test_equivalent_pair_has_distance_zero() -> None:
    a = _model(3)
    W1, b1, W2, b2 = a
    perm = np.array([3, 1, 0, 2, 4, 5, 6, 7, 9, 8])
    b = [W1[perm] * 2, b1[perm] * 2, W2[:, perm] / 2, b2]  # an H_n image: powers of two keep it exact
    A, B = load(a).network, load(b).network
    d = distance(A, B)
    assert d.upper == d.lower == 0 and d.equivalence is not None
    doc = distance_certificate(d, RECORDS, (A, B))
    report = check_certificate(doc)
    assert report.valid and doc["proof"]["statement"] == "Theorems 3/4"
    forged = copy.deepcopy(doc)
    forged["inputs"][1]["parameters"]["c"] = ["1/3", "0"]
    assert not check_certificate(forged).valid


@functools.cache
def _cached_doc() -> str:
    a = _model(5)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    d = distance(A, B, **UNTIMED, max_regions=40)
    assert len(d.search.root.leaves()) > 4  # a tree, so that splits and leaves can be tampered with
    return json.dumps(distance_certificate(d, RECORDS, (A, B)))


def _doc() -> dict:
    return json.loads(_cached_doc())


def _first(doc: dict, test) -> dict:
    return next(node for node in doc["proof"]["regions"] if test(node))


def _nudge(doc: dict) -> None:
    multipliers = _first(doc, lambda n: any(b[3] for b in n.get("bounds", [])))["bounds"]
    entry = next(b for b in multipliers if b[3])[3][0]
    entry[2] = str(Fraction(entry[2]) * Fraction(1001, 1000))


def _drop_leaf(doc: dict) -> None:
    regions = doc["proof"]["regions"]
    regions.pop(max(i for i, node in enumerate(regions) if "split" not in node))


def _shift_split(doc: dict) -> None:
    """A phase split moved to another neuron: every region below it is another one."""
    node = _first(doc, lambda n: "split" in n)
    node["split"][1] = (node["split"][1] + 1) % 10


def _refined(doc: dict) -> dict:
    """The first node stating a refinement with a multiplier (the cached tree has them: asserted below)."""
    return _first(doc, lambda n: any(r[4] for r in n.get("refine", [])))


def _first_refinement(doc: dict) -> list:
    return next(r for r in _refined(doc)["refine"] if r[4])


def _refinement_to_sibling(doc: dict) -> None:
    """A refinement moved from a region to a node of another branch: its phases are not there."""
    regions = doc["proof"]["regions"]
    source = _refined(doc)
    entry = next(r for r in source["refine"] if r[4])
    source["refine"].remove(entry)
    target = next(n for n in regions if n is not source and "refine" not in n and n is not regions[0])
    target["refine"] = [entry]


MUTATIONS = {
    "upper lowered": lambda d: d["proof"].__setitem__("upper", str(fmpq(*[int(t) for t in (d["proof"]["upper"] + "/1")
                                                                                   .split("/")[:2]]) / 2)),
    "upper raised": lambda d: d["proof"].__setitem__("upper", d["proof"]["upper"] + "1"),
    "lower raised": lambda d: d["proof"].__setitem__("lower", "1000"),
    "scaling changed": lambda d: d["proof"]["pairs"][0].__setitem__(2, "2"),
    "scaling negative": lambda d: d["proof"]["pairs"][0].__setitem__(2, "-1"),
    "pair dropped": lambda d: d["proof"]["pairs"].pop(),
    "pair repeated": lambda d: d["proof"]["pairs"].append(list(d["proof"]["pairs"][0])),
    "pair swapped": lambda d: d["proof"]["pairs"][0].__setitem__(1, d["proof"]["pairs"][1][1]),
    "witness nudged": lambda d: d["proof"]["witness"].__setitem__(0, d["proof"]["witness"][0] + "1"),
    "witness outside the box": lambda d: d["proof"]["witness"].__setitem__(0, "2"),
    "box shrunk": lambda d: d["proof"]["box"].__setitem__(0, ["0", "1/2"]),
    "box inverted": lambda d: d["proof"]["box"].__setitem__(0, ["1", "0"]),
    "input swapped": lambda d: d["inputs"].reverse(),
    "weight changed": lambda d: d["inputs"][1]["parameters"]["M"][0].__setitem__(0, "7"),
    "unknown key": lambda d: d["proof"].__setitem__("multipliers", []),
    "statement": lambda d: d["proof"].__setitem__("statement", "trust me"),
    "multiplier nudged": _nudge,
    "multiplier negative": lambda d: next(b for b in d["proof"]["regions"][0]["bounds"] if b[3])[3][0].__setitem__(
        2, "-1"),
    "multiplier on a made-up constraint": lambda d: d["proof"]["regions"][0]["bounds"][0][3].append(["tA", 0, "1"]) if
    any(e[:2] == ["tA", 0] for e in d["proof"]["regions"][0]["bounds"][0][3]) else
    d["proof"]["regions"][0]["bounds"][0][3].append(["pA", 0, "1"]),
    "bound lowered": lambda d: d["proof"]["regions"][-1]["bounds"][0].__setitem__(2, "0"),
    "leaf dropped": _drop_leaf,
    "split moved": _shift_split,
    "split on a coordinate instead": lambda d: _first(d, lambda n: "split" in n).__setitem__("split", ["x", 0]),
    "region added": lambda d: d["proof"]["regions"].append({}),
    "refinement tightened": lambda d: _first_refinement(d).__setitem__(
        3, str(Fraction(_first_refinement(d)[3]) - Fraction(1, 1000) * (1 if _first_refinement(d)[2] == "upper"
                                                                         else -1))),
    "refinement loosened": lambda d: _first_refinement(d).__setitem__(
        3, str(Fraction(_first_refinement(d)[3]) + Fraction(1, 1000) * (1 if _first_refinement(d)[2] == "upper"
                                                                         else -1))),
    "refinement side flipped": lambda d: _first_refinement(d).__setitem__(
        2, "lower" if _first_refinement(d)[2] == "upper" else "upper"),
    "refinement target moved": lambda d: _first_refinement(d).__setitem__(1, (_first_refinement(d)[1] + 1) % 10),
    "refinement multiplier nudged": lambda d: _first_refinement(d)[4][0].__setitem__(
        2, str(Fraction(_first_refinement(d)[4][0][2]) * Fraction(1001, 1000))),
    "refinement multiplier negative": lambda d: _first_refinement(d)[4][0].__setitem__(2, "-1"),
    "refinement on a chord": lambda d: _first_refinement(d)[4].append(["tA", 0, "1"]),
    "refinement side unknown": lambda d: _first_refinement(d).__setitem__(2, "both"),
    "refinement on the root": lambda d: d["proof"]["regions"][0].__setitem__("refine", [_first_refinement(d)]),
    "refinement to another branch": _refinement_to_sibling,
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_checker_rejects_tampered_distance_certificates(name: str) -> None:
    doc = _doc()
    assert check_certificate(doc).valid
    broken = copy.deepcopy(doc)
    assert broken == doc
    MUTATIONS[name](broken)
    report = check_certificate(json.loads(json.dumps(broken)))
    assert not report.valid, name


def test_the_tree_states_refinements() -> None:
    """The cached tree (which the mutations above tamper with) narrows ranges by its phases."""
    doc = _doc()
    refinements = [r for n in doc["proof"]["regions"] for r in n.get("refine", [])]
    assert any(r[4] for r in refinements) and {r[2] for r in refinements} == {"upper", "lower"}


@pytest.mark.parametrize("seed", range(4))
def test_refinements_hold_on_their_regions(seed: int) -> None:
    """Every refined range of a region with random phases (those of a random point, so it is not empty) contains
    the exact value of its target at every sampled point of the region; and each is narrower than the box's."""
    a = _model(seed, m=4, n=12)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    P = Pair(A, B, align(A, B))
    box = parse_box("-1,1", A.m)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (4000, A.m))
    rows = {s: np.array([[float(x) for x in P.entries[s][i * 5:(i + 1) * 5]] for i in range(len(P.entries[s]) // 5)])
            for s in "ABd"}
    stated = 0
    for trial in range(6):
        z0 = {s: rows[s][:, :4] @ X[trial] + rows[s][:, 4] for s in "AB"}
        keys = [(s, int(i)) for s, i in zip(rng.choice(["A", "B"], 4), rng.choice(12, 4), strict=True)]
        region = Region(box, {key: 1 if z0[key[0]][key[1]] >= 0 else -1 for key in keys})
        bound = bound_region(P, region, objectives=[(0, 1)])
        inside = [x for x in X if all((rows[s][i, :4] @ x + rows[s][i, 4]) * ph > 1e-9
                                      for (s, i), ph in region.phases.items())]
        assert len(inside) >= 5
        for r in bound.refinements:
            stated += 1
            s, i = r.target
            entries = P.entries[s][i * 5:(i + 1) * 5]
            lo, hi = (e[0] for e in extremes(fmpq_mat(1, len(entries), entries), box))
            assert lo < r.value < hi  # narrower than over the box, on its side
            for x in inside[:40]:
                xq = [fmpq(*float(t).as_integer_ratio()) for t in x]
                y = sum((c * t for c, t in zip(entries[:-1], xq, strict=True)), entries[-1])
                assert (y <= r.value) if r.side == "upper" else (y >= r.value)
    assert stated > 0


def test_a_leaf_needs_every_objective() -> None:
    """One region whose bounds omit an objective, U restated as the largest of the rest: rejected for the omission."""
    doc = _doc()
    root = doc["proof"]["regions"][0]
    root.pop("split")
    dropped = max(root["bounds"], key=lambda b: Fraction(b[2]))
    root["bounds"].remove(dropped)
    doc["proof"]["regions"] = [root]
    doc["proof"]["upper"] = str(max(Fraction(b[2]) for b in root["bounds"]))
    report = check_certificate(doc)
    assert not report.valid and "every output and sign" in report.reason


def _one_neuron() -> tuple[Network, Network]:
    q = fmpq
    return (Network.build([[q(1)]], [[q(1), q(-2), q(1, 2)]], [q(1, 4)], [q(0)]),
            Network.build([[q(3, 2)]], [[q(1), q(-1), q(1, 3)]], [q(-1, 4)], [q(1, 8)]))


def test_point_box_and_single_neuron_give_u_equal_to_l() -> None:
    """On a point every neuron is stable, so U is the exact value there; one neuron per network on a box is settled
    by splitting both phases, with exact (small-denominator) multipliers."""
    A, B = _one_neuron()
    point = parse_box("1/3,1/3;-1/2,-1/2;2,2", 3)
    d = distance(A, B, point, **UNTIMED, max_regions=200)
    assert d.upper == d.lower == max(abs(v) for v in evaluate_difference(A, B, [x for x, _ in point]))
    d = distance(A, B, parse_box("-1,1", 3), **UNTIMED, max_regions=200, target=1.0)
    assert d.upper == d.lower > 0
    assert check_certificate(distance_certificate(d, RECORDS, (A, B))).valid
    a = _model(8)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    corner = parse_box("1/4,1/4", A.m)
    d = distance(A, B, corner, **UNTIMED, max_regions=200)
    assert d.upper == d.lower


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(2), Fraction(1, 1000)])
def test_epsilon_verdicts_replay(scale: Fraction) -> None:
    """--epsilon between L and U, below L and above U: each verdict is the one the exact bounds give, the
    certificate replays, and a VIOLATED witness evaluates exactly above ε; a verdict flipped is rejected."""
    a = _model(9)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    plain = distance(A, B, **UNTIMED, max_regions=20)
    eps = fmpq(scale.numerator, scale.denominator) * (plain.lower + plain.upper)
    d = distance(A, B, **UNTIMED, max_regions=200, epsilon=eps)
    assert d.verdict == ("verified" if d.upper <= eps else "violated" if d.lower > eps else "unknown")
    if scale == Fraction(1, 1000):
        assert d.verdict == "violated"
    if scale == Fraction(2):
        assert d.verdict == "verified"
    if d.verdict == "violated":
        assert max(abs(v) for v in evaluate_difference(A, B, d.witness)) > eps
    doc = json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))
    report = check_certificate(doc)
    assert report.valid and any(d.verdict.upper() in fact for fact in report.facts)
    doc["proof"]["verdict"] = "verified" if d.verdict != "verified" else "violated"
    assert not check_certificate(doc).valid


def test_box_and_vnnlib_parsing() -> None:
    assert parse_box(None, 2) == [(0, 1), (0, 1)]
    assert parse_box("-1/2,3", 2) == [(fmpq(-1, 2), 3)] * 2
    assert parse_box("0,1;2,5/2", 2) == [(0, 1), (2, fmpq(5, 2))]
    for bad in ("1,0", "0,1;0,1;0,1", "a,b", "0"):
        with pytest.raises(InputError):
            parse_box(bad, 2)
    text = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(assert (<= X_0 0.5))\n(assert (>= X_0 -0.5))\n" \
           "(assert (<= X_1 1))\n(assert (>= X_1 0))\n(assert (<= Y_0 3))\n"
    assert input_boxes(text, 2).boxes == [[(fmpq(-1, 2), fmpq(1, 2)), (0, 1)]]
    with pytest.raises(InputError):
        input_boxes(text.replace("(assert (>= X_1 0))", ""), 2)


def test_cli_distance(tmp_path, capfd) -> None:
    a = _model(6)
    names = ("0.weight", "0.bias", "2.weight", "2.bias")
    np.savez(tmp_path / "a.npz", **dict(zip(names, a, strict=True)))
    np.savez(tmp_path / "b.npz", **dict(zip(names, _copies(a)["float16"], strict=True)))
    cert = tmp_path / "d.json"
    assert main(["distance", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--regions", "200", "--cert", str(cert),
                 "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["default_box"] and fmpq(*map(int, (out["lower"] + "/1").split("/")[:2])) <= \
        fmpq(*map(int, (out["upper"] + "/1").split("/")[:2]))
    assert main(["check", str(cert), "--inputs", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 0
    assert "sup over the box" in capfd.readouterr().out
    lower = Fraction(out["lower"])
    files = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]
    for eps, code, word in ((lower / 2, 1, "VIOLATED"), (lower * 100, 0, "VERIFIED")):
        assert main(["distance", *files, "--epsilon", str(eps), "--regions", "200", "--cert", str(cert)]) == code
        assert capfd.readouterr().out.startswith(word)
        assert main(["check", str(cert), "--inputs", *files]) == 0
        assert word in capfd.readouterr().out
    for bad in (["--epsilon", "-1"], ["--epsilon", "x"], ["--seconds", "0"], ["--target", "0.5"]):
        assert main(["distance", *files, *bad]) == 2
        assert "error" in capfd.readouterr().err
    (tmp_path / "p.vnnlib").write_text("(assert (<= X_0 1))\n")
    assert main(["distance", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--box", str(tmp_path / "p.vnnlib")]) \
        == 2
    assert "VNN-LIB" in capfd.readouterr().err


def test_reference_with_parameter_files_embeds_them(tmp_path, capfd) -> None:
    """--reference applies to model files; parameter files are embedded, so the certificate replays."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]}')
    b.write_text('{"M": [["1"]], "A": [["1"]], "b": ["1/8"], "c": ["0"]}')
    cert = tmp_path / "d.json"
    assert main(["distance", str(a), str(b), "--cert", str(cert), "--reference"]) == 0
    assert "parameter files are embedded" in capfd.readouterr().err
    assert main(["check", str(cert)]) == 0


@pytest.mark.parametrize("kind", ["float16", "pruned", "times3"])
def test_no_time_for_programs_still_beats_the_interval_rule(kind: str) -> None:
    """With no time to solve a program, the root's bounds come from the pairing's own multipliers: never above the
    symbolic-interval U, and the certificate replays."""
    a = _model(11)
    A, B = load(a).network, load(_copies(a)[kind]).network
    d = distance(A, B, parse_box("-1,1", A.m), deadline=Deadline(0, clock=frozen_clock))
    assert d.search.regions == 1 and d.lower <= d.upper <= d.interval
    assert check_certificate(json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))).valid


def test_empty_regions_are_closed_by_farkas_multipliers() -> None:
    """One bias moved by 1/64: the phases z ≥ 0 and z' ≤ 0 of that pair leave an empty region, closed by a bound ≤ 0
    (a Farkas combination); the search then ends at U/L ≈ 1 within a few regions, and the certificate replays."""
    a = _model(0, m=20, n=64, k=5)
    W1, b1, W2, b2 = a
    bias = b1.copy()
    bias[int(np.argmax(np.linalg.norm(W2, axis=0) * np.linalg.norm(W1, axis=1)))] += np.float32(1 / 64)
    A, B = load(a).network, load([W1, bias, W2, b2]).network
    d = distance(A, B, parse_box("-1,1", 20), **UNTIMED, max_regions=200, target=1.001)
    assert d.search.regions < 50 and d.upper <= d.lower * fmpq(1001, 1000)
    root = d.search.root.effective
    assert any(v <= 0 < root[o] for node in d.search.root.preorder()[1:] for o, v in node.bound.bounds.items())
    doc = json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))
    assert check_certificate(doc).valid


def _float_sign_certificate(sign: object, weight: int) -> dict:
    """Two one-neuron nets whose output weights 2^80 + 2^20 and 2^80 are one float: with the sign 1.0 the replay
    would turn to floating point and accept U = 0 (a red-team finding)."""
    def net(v: int) -> dict:
        return {"M": [[str(v)]], "A": [["1"]], "b": ["0"], "c": ["0"], "shape": {"m": 1, "n": 1, "k": 1}}

    mu = str(2**80)
    return {"format": "certsym-certificate", "version": 1, "kind": "distance_bound",
            "claim": "sup over the box of ||rho(theta1)(x) - rho(theta2)(x)||_inf lies in [lower, upper]",
            "field": {"type": "QQ"},
            "inputs": [{"name": "a", "sha256": "0" * 64, "atoms": [], "parameters": net(weight)},
                       {"name": "b", "sha256": "1" * 64, "atoms": [], "parameters": net(2**80)}],
            "proof": {"box": [["-1", "1"]], "upper": "0", "lower": "0", "pairs": [[0, 0, "1"]], "witness": ["-1"],
                      "statement": "linear relaxations with rational multipliers over a tree of regions",
                      "epsilon": "0", "verdict": "verified",
                      "regions": [{"bounds": [[0, sign, "0", [["d+", 0, mu]]],
                                              [0, -sign, "0", [["d-", 0, mu]]]]}]}}


def test_a_float_sign_is_refused() -> None:
    """The same certificate with the integer sign and equal weights is valid (U = 0 is true); with 1.0, or with the
    weights 2^20 apart, it is rejected."""
    assert check_certificate(_float_sign_certificate(1, 2**80)).valid
    assert not check_certificate(_float_sign_certificate(1, 2**80 + 2**20)).valid
    report = check_certificate(_float_sign_certificate(1.0, 2**80 + 2**20))
    assert not report.valid and "sign" in report.reason


def test_lower_above_upper_is_refused() -> None:
    doc = _float_sign_certificate(1, 2**80)
    doc["proof"]["lower"] = "1"
    report = check_certificate(doc)
    assert not report.valid and "exceeds the upper bound" in report.reason


def test_a_coordinate_split_replays() -> None:
    """The checker's coordinate split: the root's bounds hold on both halves (inherited), so the tree root → two
    halves with no bounds of their own replays with the same U; halves whose interval is a point are refused."""
    doc = _doc()
    root = doc["proof"]["regions"][0]
    doc["proof"]["upper"] = str(max(Fraction(b[2]) for b in root["bounds"]))
    doc["proof"]["regions"] = [{"split": ["x", 0], "bounds": root["bounds"]}, {}, {}]
    assert check_certificate(doc).valid
    doc["proof"]["regions"][1] = {"split": ["x", 0]}
    assert not check_certificate(doc).valid  # a split without its two regions
    doc["proof"]["box"][0] = ["1/2", "1/2"]
    doc["proof"]["regions"] = [{"split": ["x", 0]}, {"bounds": root["bounds"]}, {"bounds": root["bounds"]}]
    assert "a point" in check_certificate(doc).reason


def test_the_cell_walk_crosses_a_kink_to_the_maximum() -> None:
    """D(x) = x + σ(x − 1/2) on [0, 1] (θ_B's one neuron has v = 0): from x = 1/10 the LP of the first cell stops at
    the kink 1/2 (D = 1/2), whose neuron limits it; across it the next cell's LP reaches x = 1, D = 3/2 exactly."""
    from certsym.decide.distance import ascend

    A = load([np.array([[1.0], [1.0]]), np.array([0.0, -0.5]), np.array([[1.0, 1.0]]), np.array([0.0])]).network
    B = load([np.array([[1.0]]), np.array([0.0]), np.array([[0.0]]), np.array([0.0])]).network
    box = parse_box("0,1", 1)
    x = [fmpq(1, 10)]
    y, values = ascend(A, B, box, x, evaluate_difference(A, B, x), no_time_limit())
    assert (y, values) == ([fmpq(1)], [fmpq(3, 2)])
    assert values == evaluate_difference(A, B, y)


@pytest.mark.parametrize("seed", range(6))
def test_the_cell_walk_never_lowers_the_witness(seed: int) -> None:
    """Whatever the walk proposes, the witness it returns is in the box, its values are the exact ones, and its
    ‖D‖∞ is at least the start's."""
    from certsym.decide.distance import ascend

    a = _model(seed)
    b = _copies(a)["float16"]
    A, B = load(a).network, load(b).network
    box = parse_box("-1,1", A.m)
    rng = np.random.default_rng(seed)
    x = [fmpq(*float(t).as_integer_ratio()) for t in rng.uniform(-1, 1, A.m)]
    start = evaluate_difference(A, B, x)
    y, values = ascend(A, B, box, x, start, no_time_limit())
    assert all(lo <= t <= hi for t, (lo, hi) in zip(y, box, strict=True))
    assert values == evaluate_difference(A, B, y)
    assert max(abs(v) for v in values) >= max(abs(v) for v in start)


@pytest.mark.parametrize("scale", [1e200, 1e130])
def test_values_beyond_the_float_range_are_refused_in_one_line(tmp_path, capsys, scale: float) -> None:
    """Weights whose values on the box leave binary64 (1e200: the products overflow; 1e130: above 2^400) get a
    one-line refusal with exit 2, not an internal error from the floating-point search."""
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((5, 3)) * scale, rng.standard_normal(5), rng.standard_normal((2, 5)), np.zeros(2)]
    b = [x * (1 + 1e-3) for x in a]
    paths = []
    for name, arrays in (("a.npz", a), ("b.npz", b)):
        np.savez(tmp_path / name, **dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"), arrays, strict=True)))
        paths.append(str(tmp_path / name))
    assert main(["distance", *paths, "--regions", "20"]) == 2
    err = capsys.readouterr().err
    assert "exceed 2^400" in err and "internal error" not in err and len(err.strip().splitlines()) == 1


def test_values_within_the_float_range_are_bounded() -> None:
    """The same networks at 1e100 stay in range: an enclosure [L, U] with L > 0."""
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((5, 3)) * 1e100, rng.standard_normal(5), rng.standard_normal((2, 5)), np.zeros(2)]
    b = [x * (1 + 1e-3) for x in a]
    d = distance(load(a).network, load(b).network, parse_box("0,1", 3), **UNTIMED, max_regions=200)
    assert 0 < d.lower <= d.upper


def test_the_time_budget_is_shared_and_kept() -> None:
    """A fake clock that moves one second per read: the search stops at the time budget (and says so) with the
    region budget far away, every part (walks, branch and bound, final walks) ends by the deadline, so the whole
    call reads the clock past its end only to see that it has passed; the same clock gives the same search twice."""
    a = _model(5)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    runs = []
    for _ in range(2):
        deadline = Deadline(150, clock=Ticks(1.0))
        d = distance(A, B, deadline=deadline, max_regions=10_000)
        assert d.search.stopped == "the time budget" and 1 < d.search.regions < 10_000
        assert deadline.elapsed() <= 150 + 4, deadline.elapsed()
        runs.append((d.search.regions, d.lower, d.upper))
        assert check_certificate(json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))).valid
    assert runs[0] == runs[1]
    spent = distance(A, B, deadline=Deadline(0, clock=Ticks(1.0)))
    assert spent.search.stopped == "the time budget" and spent.search.regions == 1


def test_a_stop_names_the_limit_that_stopped_it() -> None:
    """The region budget, the target and ε are told apart from the time budget."""
    a = _model(5)
    A, B = load(a).network, load(_copies(a)["float16"]).network
    assert distance(A, B, **UNTIMED, max_regions=5).search.stopped == "the region budget"
    assert distance(A, B, **UNTIMED, target=100.0).search.stopped == "the target ratio"
    assert distance(A, B, **UNTIMED, epsilon=fmpq(0)).search.stopped == "L > ε"

"""``certsym vnnlib``: a VNN-LIB property answered as written, its certificates replayed by the checker with the
property file bound, forged ones refused, and the producer's and the checker's readings of a property equal."""

from __future__ import annotations

import copy
import gzip
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.cli import main
from certsym.io.sources import load
from certsym.io.vnnlib import read_spec
from certsym_check import check
from certsym_check.envelope import check_certificate
from certsym_check.vnnlib import read_property
from tests.decide.test_deep_distance import z3_exceeds

HEAD = ("(vnnlib-version <2.0>)\n"
        "(declare-network f (declare-input X_f real [1, 2]) (declare-output Y_f real [1, 2]))\n"
        "(declare-network g (isomorphic-to f) (declare-input X_g real [1, 2]) (declare-output Y_g real [1, 2]))\n"
        "(assert (>= X_f[0,0] -1)) (assert (<= X_f[0,0] 1)) (assert (>= X_f[0,1] -1)) (assert (<= X_f[0,1] 1))\n"
        "(assert (== X_f[0,0] X_g[0,0])) (assert (== X_f[0,1] X_g[0,1]))\n")


def _band(eps: str) -> str:
    """The equivalence benchmarks' counterexample: some |Y_g[j] − Y_f[j]| > eps."""
    return "(assert (or " + " ".join(f"(> Y_g[0,{j}] (+ Y_f[0,{j}] {eps})) (< Y_g[0,{j}] (- Y_f[0,{j}] {eps}))"
                                     for j in range(2)) + "))\n"


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    """A 2-6-6-2 float32 network f and its float16 rounding g, as npz files."""
    d = tmp_path_factory.mktemp("vnnlib")
    rng = np.random.default_rng(1)
    layers = [(rng.standard_normal((b, a)).astype(np.float32), rng.standard_normal(b).astype(np.float32))
              for a, b in ((2, 6), (6, 6), (6, 2))]

    def save(path: Path, ls: list) -> None:
        np.savez(path, **{f"{2 * i}.{k}": x for i, (W, b) in enumerate(ls) for k, x in (("weight", W), ("bias", b))})

    save(d / "f.npz", layers)
    save(d / "g.npz", [(W.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32))
                       for W, b in layers])
    return d


def _run(d: Path, name: str, text: str, capsys, packed: bool = False) -> tuple[int, str, dict]:
    spec = d / (name + (".vnnlib.gz" if packed else ".vnnlib"))
    spec.write_bytes(gzip.compress(text.encode()) if packed else text.encode())
    cert = d / f"{name}.json"
    code = main(["vnnlib", str(spec), "--net", f"f={d / 'f.npz'}", "--net", f"g={d / 'g.npz'}", "--cert", str(cert),
                 "--seconds", "30"])
    out = capsys.readouterr().out
    return code, out, json.loads(cert.read_text()) if cert.exists() else {}


def _bound(doc: dict, d: Path, spec: Path):
    return check_certificate(doc, [spec.read_bytes(), (d / "f.npz").read_bytes(), (d / "g.npz").read_bytes()])


def test_a_band_the_pair_keeps_is_unsat_and_z3_agrees(pair: Path, capsys) -> None:
    code, out, doc = _run(pair, "unsat", HEAD + _band("0.05"), capsys, packed=True)
    assert code == 0 and "UNSAT" in out and "Y_g[0] − Y_f[0] > 0.05" in out
    report = _bound(doc, pair, pair / "unsat.vnnlib.gz")
    assert report.valid, report.reason
    assert any("property unsat.vnnlib.gz" in line for line in report.bound)
    f, g = (load(str(pair / n)).layered() for n in ("f.npz", "g.npz"))
    box = [(fmpq(-1), fmpq(1))] * 2
    assert not z3_exceeds(f, g, box, fmpq(1, 20)), "z3 finds a point where the networks differ by more than 0.05"


def test_a_band_the_pair_leaves_is_sat_with_an_exact_counterexample(pair: Path, capsys) -> None:
    code, out, doc = _run(pair, "sat", HEAD + _band("0.0001"), capsys)
    assert code == 1 and "SAT: a counterexample" in out
    assert _bound(doc, pair, pair / "sat.vnnlib").valid
    x = [fmpq(*Fraction(v).as_integer_ratio()) for v in doc["proof"]["witness"]]
    f, g = (load(str(pair / n)).layered() for n in ("f.npz", "g.npz"))
    assert max(abs(a - b) for a, b in zip(f(x), g(x), strict=True)) > fmpq(1, 10000)


def test_the_safe_band_template_is_sat_and_the_question_says_why(pair: Path, capsys) -> None:
    """acas_xu_vnnlib2's published template asserts the band itself: read literally, any agreeing point answers it."""
    safe = "(assert (and (<= Y_g[0,0] (+ Y_f[0,0] 0.05)) (>= Y_g[0,0] (- Y_f[0,0] 0.05))))\n"
    code, out, doc = _run(pair, "safe", HEAD + safe, capsys)
    assert code == 1 and "SAT" in out and "the file asserts the safe band, not its violation" in out
    assert _bound(doc, pair, pair / "safe.vnnlib").valid


def _edit_text(doc: dict, old: str, new: str) -> dict:
    forged = copy.deepcopy(doc)
    forged["proof"]["spec"]["text"] = forged["proof"]["spec"]["text"].replace(old, new)
    return forged


def test_forged_vnnlib_certificates_are_refused(pair: Path, capsys) -> None:
    _, _, unsat = _run(pair, "u2", HEAD + _band("0.05"), capsys)
    _, _, sat = _run(pair, "s2", HEAD + _band("0.0001"), capsys)
    upper = Fraction(unsat["proof"]["boxes"][0]["upper"])
    exact = HEAD + _band(f"{float(upper):.20f}")
    cases = [
        (_edit_text(unsat, "0.05", "0.001"), "refutes no atom"),  # a tighter band, not refuted by U
        (_edit_text(unsat, "(<= X_f[0,0] 1)", "(<= X_f[0,0] 2)"), "box differs"),
        (_edit_text(sat, "0.0001", "1"), "no disjunct"),
        (_edit_text(sat, "(== X_f[0,1] X_g[0,1])", "(<= X_f[0,1] X_g[0,1])"), "shared input"),
    ]
    w = copy.deepcopy(sat)
    w["proof"]["witness"][0] = "3"
    cases.append((w, "no box"))
    two = copy.deepcopy(unsat)
    two["proof"]["statement"] = "exact evaluation"
    cases.append((two, "must cite"))
    for forged, words in cases:
        report = check(forged)
        assert not report.valid and words in report.reason, (words, report.reason)
    # the property file given must be the one whose text the certificate holds
    other = pair / "other.vnnlib"
    other.write_text(exact)
    report = _bound(unsat, pair, other)
    assert not report.valid and "SHA-256 differs" in report.reason
    renamed = copy.deepcopy(unsat)
    renamed["proof"]["spec"]["sha256"] = __import__("hashlib").sha256(other.read_bytes()).hexdigest()
    report = _bound(renamed, pair, other)
    assert not report.valid and "text differs" in report.reason


def test_an_atom_at_exactly_the_bound_is_refuted_only_when_strict() -> None:
    from certsym_check.kinds.vnnlib import refutes
    from certsym_check.vnnlib import Atom

    u = Fraction(1, 8)
    diff = {(1, 0): Fraction(1), (0, 0): Fraction(-1)}
    assert refutes(Atom(diff, -u, True), u) and not refutes(Atom(diff, -u, False), u)
    assert not refutes(Atom({(1, 0): Fraction(1)}, Fraction(-100), False), u)  # one network's output alone
    assert refutes(Atom({(1, 0): Fraction(2), (0, 0): Fraction(-2)}, -3 * u, False), u)  # 2U < 3U


@pytest.mark.parametrize("args, words", [
    (["--net", "f=F"], "the property declares the networks f, g"),
    (["--net", "f=F", "--net", "h=G"], "--net gave f, h"),
])
def test_networks_named_wrong_are_refused(pair: Path, args: list, words: str, capsys) -> None:
    spec = pair / "names.vnnlib"
    spec.write_text(HEAD + _band("0.05"))
    args = [a.replace("F", str(pair / "f.npz")).replace("G", str(pair / "g.npz")) for a in args]
    assert main(["vnnlib", str(spec), *args]) == 2
    assert words in capsys.readouterr().err


_NUMBERS = st.sampled_from(["0", "1", "-1", "0.5", "-0.25", "2.0", "1e-1", "3"])
_VARS_IN = [f"X_f[0,{i}]" for i in range(2)]
_VARS_OUT = [f"Y_f[0,{j}]" for j in range(2)] + [f"Y_g[0,{j}]" for j in range(2)]


def _expr(draw, names: list[str], depth: int = 0) -> str:
    kind = draw(st.sampled_from(["num", "var", "var", "+", "-", "neg", "*"] if depth < 2 else ["num", "var"]))
    if kind == "num":
        return draw(_NUMBERS)
    if kind == "var":
        return draw(st.sampled_from(names))
    if kind == "neg":
        return f"(- {_expr(draw, names, depth + 1)})"
    if kind == "*":
        return f"(* {draw(_NUMBERS)} {_expr(draw, names, depth + 1)})"
    return f"({kind} {_expr(draw, names, depth + 1)} {_expr(draw, names, depth + 1)})"


@st.composite
def _output_part(draw) -> str:
    def formula(depth: int) -> str:
        if depth < 2 and draw(st.booleans()):
            head = draw(st.sampled_from(["and", "or"]))
            return f"({head} " + " ".join(formula(depth + 1) for _ in range(draw(st.integers(1, 3)))) + ")"
        op = draw(st.sampled_from(["<=", ">=", "<", ">", "==", "!="]))
        return f"({op} {_expr(draw, _VARS_OUT)} {_expr(draw, _VARS_OUT)})"

    return "".join(f"(assert {formula(0)})\n" for _ in range(draw(st.integers(1, 3))))


@settings(max_examples=60, deadline=None)
@given(_output_part(), st.lists(st.tuples(_NUMBERS, _NUMBERS), min_size=2, max_size=2))
def test_the_producer_and_the_checker_read_a_property_alike(outputs: str, ends) -> None:
    """Random output parts (every operator, nested and/or) and input bounds written either way round: the same
    boxes and the same atoms, or both readers refuse."""
    bounds = "".join(f"(assert (<= {a} X_f[0,{i}]))\n(assert (>= {b} X_f[0,{i}]))\n" for i, (a, b) in enumerate(ends))
    text = HEAD.split("(assert")[0] + bounds + "(assert (== X_f[0,0] X_g[0,0])) (assert (== X_f[0,1] X_g[0,1]))\n" \
        + outputs
    try:
        mine = read_spec(text)
    except Exception as exc:  # noqa: BLE001 - compared with the checker's refusal below
        mine = exc
    try:
        theirs = read_property(text)
    except Exception as exc:  # noqa: BLE001
        theirs = exc
    assert isinstance(mine, Exception) == isinstance(theirs, Exception), (mine, theirs)
    if isinstance(mine, Exception):
        return
    assert [[(Fraction(int(a.p), int(a.q)), Fraction(int(b.p), int(b.q))) for a, b in box] for box in mine.boxes] \
        == theirs.boxes
    mine_atoms = [[({(n, j): Fraction(int(c.p), int(c.q)) for n, j, c in a.terms},
                    Fraction(int(a.constant.p), int(a.constant.q)), a.strict) for a in conj] for conj in mine.outputs]
    their_atoms = [[(a.terms, a.constant, a.strict) for a in conj] for conj in theirs.disjuncts]
    assert mine_atoms == their_atoms


def test_a_benchmark_folder_is_answered_instance_by_instance(pair: Path, capsys) -> None:
    """instances.csv in both network-field forms (a list of (name, path) pairs; one path), a gzipped property, a
    malformed row: VNN-COMP's result words, a summary, certificates that replay."""
    (pair / "vnnlib").mkdir(exist_ok=True)
    (pair / "vnnlib" / "band.vnnlib.gz").write_bytes(gzip.compress((HEAD + _band("0.05")).encode()))
    (pair / "vnnlib" / "tight.vnnlib").write_text(HEAD + _band("0.0001"))
    one = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n" \
        "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n(assert (>= Y_0 1000))\n"
    (pair / "vnnlib" / "one.vnnlib").write_text(one)
    both = "\"[('f', 'f.npz'), ('g', 'g.npz')]\""
    (pair / "instances.csv").write_text(f"{both},vnnlib/band.vnnlib.gz,30\n{both},vnnlib/tight.vnnlib,30\n"
                                        "f.npz,vnnlib/one.vnnlib,5\n\"[('f', 'f.npz')\",vnnlib/one.vnnlib,5\n")
    certs = pair / "certs"
    code = main(["vnnlib", "--instances", str(pair / "instances.csv"), "--cert-dir", str(certs)])
    out = capsys.readouterr().out.splitlines()
    assert code == 3
    words = [line.split("\t")[1] for line in out[:4]]
    assert words == ["unsat", "sat", "unknown", "error"], out
    assert out[-1] == "4 instances: 1 sat, 1 unsat, 1 unknown, 1 error"
    assert "one network's outputs" in out[2] and "list of (name, path) pairs" in out[3]
    for n in (1, 2):
        assert check(json.loads((certs / f"instance_{n}.json").read_text())).valid
    assert not (certs / "instance_3.json").exists()


def test_a_ball_around_a_test_point_is_the_box_the_distance_is_asked_on(pair: Path, capsys) -> None:
    """--center (a float32 .npy read exactly, or exact numbers) with --radius and --clip, and certsym.ball, give
    the same box; the certificate states it; a clip that empties the region and a lone --radius are refused."""
    import certsym

    center = np.array([0.3, 0.75], dtype=np.float32)
    np.save(pair / "x.npy", center)
    box = certsym.ball(center, "1/20", clip=(0, 1))
    exact = [fmpq(*float(c).as_integer_ratio()) for c in center]
    assert box == [(exact[0] - fmpq(1, 20), exact[0] + fmpq(1, 20)), (exact[1] - fmpq(1, 20), exact[1] + fmpq(1, 20))]
    assert certsym.ball([0.98, "1/2"], "0.05", clip=(0, 1))[0][1] == 1
    cert = pair / "ball.json"
    code = main(["distance", str(pair / "f.npz"), str(pair / "g.npz"), "--center", str(pair / "x.npy"), "--radius",
                 "1/20", "--clip", "0,1", "--epsilon", "0.05", "--cert", str(cert), "--regions", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "the L∞ ball of radius 1/20 around x.npy clipped to [0,1]" in out
    doc = json.loads(cert.read_text())
    assert [[Fraction(a), Fraction(b)] for a, b in doc["proof"]["box"]] == \
        [[Fraction(int(a.p), int(a.q)), Fraction(int(b.p), int(b.q))] for a, b in box]
    for args, words in [(["--center", "5,5", "--radius", "0.1", "--clip", "0,1"], "the region is empty"),
                        (["--radius", "0.1"], "go with --center"),
                        (["--center", "0,0,0", "--radius", "0.1"], "has 3 coordinates"),
                        (["--center", "0,0", "--radius", "0.1", "--box", "0,1"], "give one of them")]:
        assert main(["distance", str(pair / "f.npz"), str(pair / "g.npz"), *args]) == 2
        assert words in capsys.readouterr().err


def test_a_batch_of_test_points_is_answered_point_by_point(pair: Path, capsys) -> None:
    """--points X.npy --radius r: one ball per row, one line per point, the counts, a certificate per answered point
    (each replays VALID), exit 0 when every point agrees, 1 when one differs; --cert and --box are refused with it."""
    X = np.array([[0.3, -0.2], [0.9, 0.9], [-0.5, 0.1]], dtype=np.float32)
    np.save(pair / "pts.npy", X)
    certs = pair / "pc"
    base = ["distance", str(pair / "f.npz"), str(pair / "g.npz"), "--points", str(pair / "pts.npy")]
    assert main([*base, "--radius", "1/20", "--top1", "--cert-dir", str(certs), "--regions", "200"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [line for line in out[:3] if line.startswith(("point 0: AGREE", "point 1: AGREE",
                                                                     "point 2: AGREE"))]
    assert out[-1] == "3 points, L∞ radius 1/20: 3 AGREE, 0 DIFFER, 0 UNKNOWN"
    for n in range(3):
        doc = json.loads((certs / f"point_{n}.json").read_text())
        assert check(doc).valid
        lo, hi = (Fraction(v) for v in doc["proof"]["box"][0])
        assert lo == Fraction(float(X[n, 0])) - Fraction(1, 20) and hi == Fraction(float(X[n, 0])) + Fraction(1, 20)
    assert main([*base, "--radius", "0.5", "--top1", "--regions", "200"]) == 1
    assert "DIFFER" in capsys.readouterr().out
    assert main([*base, "--radius", "0.05", "--epsilon", "0.01", "--json", "--regions", "200"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"].endswith("3 VERIFIED, 0 VIOLATED, 0 UNKNOWN")
    for extra, words in [(["--radius", "0.05", "--top1", "--box", "0,1"], "go without it"),
                         (["--top1"], "needs --radius"), (["--radius", "0.05"], "--top1 or --epsilon")]:
        assert main([*base, *extra]) == 2
        assert words in capsys.readouterr().err

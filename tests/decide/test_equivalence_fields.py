"""Equivalence over real number fields Q(√2) and Q(∛2), certified and replayed."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from certsym.certify import InputRecord, equivalence_certificate
from certsym.cli import main
from certsym.decide.equivalence import decide
from certsym.io import load_networks
from certsym_check import check_certificate

RECORDS = (InputRecord("p1", "0" * 64), InputRecord("p2", "0" * 64))


def _pair(d1: dict, d2: dict):
    (t1, t2), _ = load_networks(["p1", "p2"], texts=[json.dumps(d1), json.dumps(d2)])
    return t1, t2


def _verdict_and_check(d1: dict, d2: dict):
    t1, t2 = _pair(d1, d2)
    verdict = decide(t1, t2)
    report = check_certificate(equivalence_certificate(verdict, RECORDS))
    assert report.valid, report.reason
    return verdict


BASE = {"M": [[1, -2], [3, "1/2"]], "A": [[1, 2], [-1, 1]], "b": [0, 1], "c": [0, 1]}


@pytest.mark.parametrize("up, down", [("sqrt(2) + 1", "sqrt(2) - 1"), ("2^(1/3)", "2^(2/3)/2")])
def test_scaled_neuron_is_equivalent(up: str, down: str) -> None:
    """Scaling row 0 by s > 0 and its output column by 1/s is the H_n action (√2+1 and √2−1 are inverse;
    so are ∛2 and ∛4/2)."""
    disguised = {"M": [[down, -2], [f"3*({down})", "1/2"]], "A": [[up, f"2*({up})"], [-1, 1]],
                 "b": [0, 1], "c": [0, 1]}
    verdict = _verdict_and_check(BASE, disguised)
    assert verdict.equivalent
    assert len(verdict.matches) == 2


@pytest.mark.parametrize("field_const", ["sqrt(2)", "2^(1/3)"])
def test_irrational_pair_and_flip(field_const: str) -> None:
    """θ with an irrational bias; θ' flips the neuron and restores the affine part with c (m = 1, so the
    linear term must come from an antisymmetric pair on another hyperplane)."""
    b = field_const
    theta = {"M": [[1]], "A": [[1]], "b": [b], "c": [0]}
    # σ(x + b) = σ(−x − b) + x + b;  x = σ(x) − σ(−x);  so σ(x + b) = σ(−x − b) + σ(x) − σ(−x) + b
    other = {"M": [[1, 1, -1]], "A": [[-1], [1], [-1]], "b": [f"-({b})", 0, 0], "c": [b]}
    verdict = _verdict_and_check(theta, other)
    assert verdict.equivalent
    assert verdict.pairs


@pytest.mark.parametrize("nudge", ["1/1000", "sqrt(2)/10**6"])
def test_not_equivalent_over_sqrt2_has_rational_witness(nudge: str) -> None:
    theta = {"M": [["sqrt(2)", 1]], "A": [[1], [1]], "b": [0, "-sqrt(2)"], "c": [0]}
    other = {"M": [["sqrt(2)", 1]], "A": [[1], [1]], "b": [0, f"-sqrt(2) + {nudge}"], "c": [0]}
    t1, t2 = _pair(theta, other)
    verdict = _verdict_and_check(theta, other)
    assert not verdict.equivalent
    F = t1.field
    assert len(verdict.witness) == t1.m
    assert all(F.is_rational(F(x)) for x in verdict.witness)
    assert t1.evaluate(verdict.witness) != t2.evaluate(verdict.witness)


def test_cli_equiv_over_sqrt2(tmp_path) -> None:
    p1, p2, cert = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    p1.write_text(json.dumps({"M": [["sqrt(2) - 1", 1]], "A": [["sqrt(2) + 1"], [1]], "b": [0, "-sqrt(2)"],
                              "c": [0]}))
    p2.write_text(json.dumps({"M": [[1, 1]], "A": [[1], [1]], "b": [0, "-sqrt(2)"], "c": [0]}))
    assert main(["equiv", str(p1), str(p2), "--cert", str(cert)]) == 0
    assert main(["check", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(p1), str(p2)]) == 0
    assert main(["check", str(cert), "--inputs", str(p2), str(p1)]) == 1


ALGEBRAIC = {"M": [["sqrt(2)*sqrt(3)", "CRootOf(x^3 - 2, 0)"]],
             "A": [["2^(1/3)", 1], ["1/2 + sqrt(3)/5", "root(-8, 3)"]],
             "b": ["sqrt(2+sqrt(3))", 0.25], "c": ["sqrt(4)"]}


@pytest.fixture(scope="module")
def bound_certificate(tmp_path_factory):
    """The files and the certificate of ALGEBRAIC against itself, made once (the number field takes seconds)."""
    tmp_path = tmp_path_factory.mktemp("algebraic")
    p1, p2, cert = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    p1.write_text(json.dumps(ALGEBRAIC))
    p2.write_text(json.dumps(ALGEBRAIC).replace("0.25", '"1/4"'))
    assert main(["equiv", str(p1), str(p2), "--cert", str(cert)]) == 0
    return p1, p2, cert


def test_checker_rereads_algebraic_inputs(bound_certificate) -> None:
    """Radicals, real roots and CRootOf in the files are verified by their defining properties."""
    p1, p2, cert = bound_certificate
    assert main(["check", str(cert), "--inputs", str(p1), str(p2)]) == 0
    atoms = {a["expr"] for a in json.loads(cert.read_text())["inputs"][0]["atoms"]}
    assert {"sqrt(2)", "sqrt(3)", "CRootOf(x**3 - 2, 0)", "root(-8, 3)", "sqrt(4)"} <= atoms  # as written


@pytest.mark.parametrize("atom", ["sqrt(2)", "CRootOf(x**3 - 2, 0)", "2**(1/3)", "root(-8, 3)"])
def test_wrong_atom_value_is_rejected(bound_certificate, atom: str) -> None:
    """Giving an atom the value of another root (−√2, a conjugate, ...) is caught."""
    _, _, cert = bound_certificate
    doc = json.loads(cert.read_text())
    entries = doc["inputs"][0]["atoms"]
    target = next(a for a in entries if a["expr"] == atom)
    target["value"] = [str(-Fraction(x)) for x in target["value"]]
    assert not check_certificate(doc).valid

"""certsym landscape families | critical | point | descent, as a user runs them."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from certsym.cli import main
from certsym_check import check_certificate


def _json(capsys, argv: list[str]) -> tuple[int, object]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_families(capsys) -> None:
    code, rows = _json(capsys, ["landscape", "families", "--json"])
    assert code == 0 and {r["name"] for r in rows} == {"one-misfit", "negative-diagonal", "two-misfit",
                                                        "good-plus-negative"}


def test_critical_json_and_certificates(tmp_path, capsys) -> None:
    cp, hi = tmp_path / "cp.json", tmp_path / "hi.json"
    code, out = _json(capsys, ["landscape", "critical", "--family", "one-misfit", "--k", "7", "--json",
                               "--cert", str(cp), "--inertia-cert", str(hi)])
    assert code == 0
    keys = {"loss", "loss_enclosure", "point", "hessian_negative_eigenvalues", "is_local_minimum", "certified"}
    assert keys <= set(out)
    lo, hi_ = (float(Fraction(x)) for x in out["loss_enclosure"])  # exact "p/q" strings
    assert lo <= float(out["loss"]) <= hi_ and out["is_local_minimum"] and out["certified"]
    assert check_certificate(json.loads(cp.read_text())).valid
    report = check_certificate(json.loads(hi.read_text()))
    assert report.valid and json.loads(hi.read_text())["proof"]["negative"] == 0


def test_point_writes_the_full_matrix(tmp_path, capsys) -> None:
    out = tmp_path / "W.npz"
    assert main(["landscape", "point", "--family", "negative-diagonal", "--k", "5", "-o", str(out)]) == 0
    W = np.load(out)["W"]
    assert W.shape == (5, 5) and np.allclose(W, W[0, 0] * np.eye(5) + W[0, 1] * (1 - np.eye(5)))


def test_descent_is_deterministic(capsys) -> None:
    argv = ["landscape", "descent", "--k", "6", "--quick", "--seed", "4", "--json"]
    first = _json(capsys, argv)
    code, out = first
    assert code == 0 and out["runs"] > 0 and sum(out["lands_in"].values()) == out["runs"]
    assert _json(capsys, argv) == first


@pytest.mark.parametrize("argv", [["landscape", "critical", "--family", "nope", "--k", "6"],
                                  ["landscape", "critical", "--family", "one-misfit", "--k", "2"],
                                  ["landscape", "critical", "--family", "one-misfit", "--k", "10000001"],
                                  ["landscape", "point", "--family", "one-misfit", "--k", "5000"]])
def test_bad_requests_exit_2(capsys, argv) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("certsym: error:")


def test_threshold_json_and_certificate(tmp_path, capsys) -> None:
    cert = tmp_path / "t.json"
    code, out = _json(capsys, ["landscape", "threshold", "--family", "negative-diagonal", "--json", "--cert",
                               str(cert)])
    a, b = (Fraction(x) for x in out["bracket"])
    assert code == 0 and out["certified"] and out["minimum_from_k"] == 6 and 5 < a < b < 6
    assert any(out["negative_below"])
    report = check_certificate(json.loads(cert.read_text()))
    assert report.valid and report.kind == "landscape_threshold"


@pytest.mark.parametrize("argv,message", [(["--family", "misfit-1"], "no isotypic table"),
                                          (["--family", "one-misfit", "--steps", "0"], "--steps"),
                                          (["--family", "wrong"], "unknown family")])
def test_threshold_refuses_with_one_line(capsys, argv, message) -> None:
    assert main(["landscape", "threshold", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1

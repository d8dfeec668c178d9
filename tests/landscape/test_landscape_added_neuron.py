"""One neuron added to a certified critical point (n = k + 1): splits, the zero neuron, their certificates."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import certsym_check as checker
from certsym.certify import added_neuron_certificates
from certsym.cli import main
from certsym.landscape import kernel
from certsym.landscape.added_neuron import slope, split, study
from certsym.landscape.descent import experiment


@pytest.fixture(scope="module")
def k6():
    return study("one-misfit", 6)


def test_every_split_is_a_critical_point(k6) -> None:
    """Positive homogeneity: W_λ is critical for every λ, and F(W_λ) = F(W*)."""
    W = k6.W
    for row in range(6):
        for lam in (0.1, 0.5, 0.8):
            Wl = split(W, row, lam)
            assert np.abs(kernel.gradient(Wl, np.eye(6))).max() < 1e-9
            assert abs(kernel.loss(Wl, np.eye(6)) - kernel.loss(W)) < 1e-12


def test_zero_neuron_expansion_is_exact(k6) -> None:
    """F([W*; εû]) = F(W*) + ε g(û) + ε²‖û‖²/4 for every ε (κ is positively homogeneous)."""
    W = k6.W
    u = np.array([float(x) for x in k6.zero.direction])
    g = slope(W, u)
    for eps in (1e-3, 0.1, 2.0):
        lhs = kernel.loss(np.vstack([W, eps * u]), np.eye(6))
        assert abs(lhs - (kernel.loss(W) + eps * g + eps**2 * (u @ u) / 4)) < 1e-10
    assert g < 0


def test_certified_negative_directions_are_negative(k6) -> None:
    """Each certified direction lowers F to second order, as the full Hessian says."""
    assert [s.row for s in k6.splits] == [0, 5]  # a good row and the misfit row (as the CLI test writes them)
    for s in k6.splits:
        H = kernel.hessian(split(k6.W, s.row), np.eye(6))
        assert s.negative == 5 and s.spectrum == (5, 1, 36)
        assert len(s.directions) == s.negative
        for U in s.directions:
            v = np.array([[float(x) for x in row] for row in U]).ravel()
            assert v @ H @ v < 0


def test_certificates_replay(k6) -> None:
    certs = added_neuron_certificates(k6)
    assert len(certs) == 3
    for c in certs:
        report = checker.check(c)
        assert report, report.reason
        assert any("not a local minimum" in fact for fact in report.facts)


def test_mutated_certificates_are_rejected(k6) -> None:
    certs = added_neuron_certificates(k6)
    split_cert = next(c for c in certs if "directions" in c["proof"])
    zero_cert = next(c for c in certs if "direction" in c["proof"])
    mutants = []
    m = copy.deepcopy(split_cert)
    m["proof"]["negative"] += 1  # one more claimed than directions given
    mutants.append(m)
    m = copy.deepcopy(split_cert)  # the split segment's tangent (w_i, −w_i): eigenvalue 0, not negative
    row = m["proof"]["embedding"]["split"]
    w = [str(x) for x in np.round(k6.W[row] * 2**20).astype(int)]
    U = [["0"] * 6 for _ in range(7)]
    U[row] = w
    U[6] = [str(-int(x)) for x in w]
    m["proof"]["directions"][0] = U
    mutants.append(m)
    m = copy.deepcopy(split_cert)
    m["proof"]["embedding"]["lambda"] = "1"
    mutants.append(m)
    m = copy.deepcopy(split_cert)
    m["proof"]["embedding"]["split"] = True
    mutants.append(m)
    m = copy.deepcopy(zero_cert)
    m["proof"]["direction"] = ["0", "0", "0", "0", "0", "1"]  # parallel to e_6: κ is not expanded there
    mutants.append(m)
    m = copy.deepcopy(zero_cert)
    m["proof"]["direction"] = [str(v) for v in np.round(k6.W[0] * 2**10).astype(int)]  # about w_1: g ≈ 0
    mutants.append(m)
    m = copy.deepcopy(zero_cert)
    m["proof"]["slope"] = ["-1", "-1/2"]  # excludes the true g
    mutants.append(m)
    m = copy.deepcopy(zero_cert)
    m["proof"]["extra"] = 1
    mutants.append(m)
    for bad in mutants:
        assert not checker.check(bad), json.dumps(bad["proof"])[:200]


def test_cli_add_neuron(tmp_path, capfd) -> None:
    assert main(["landscape", "add-neuron", "--family", "one-misfit", "--k", "6", "--certs", str(tmp_path),
                 "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["certified"] and out["n"] == 7 and out["zero_neuron"]["slope"] < 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "one-misfit_k6_split0.json", "one-misfit_k6_split5.json", "one-misfit_k6_split5_escape.json",
        "one-misfit_k6_zero.json"]  # the split misfit row leads to a saddle, certified in its fixed-point space
    assert out["splits"][1]["escape"]["certified_end"] and out["splits"][1]["escape"]["minimum"] is False
    assert main(["check", *map(str, tmp_path.iterdir())]) == 0
    assert main(["landscape", "add-neuron", "--family", "one-misfit", "--k", "99"]) == 2


def test_descent_with_an_added_neuron() -> None:
    e = experiment(6, 3, seed=1, extra=1, max_steps=4000)
    assert len(e.runs) == 3
    assert all(r.W.shape == (7, 6) for r in e.runs)
    assert all(r.lands_in == "global minimum" or r.lands_in.startswith("spurious") for r in e.runs)
    assert kernel.fast_loss(e.runs[0].W) == pytest.approx(kernel.loss(e.runs[0].W), abs=1e-9)

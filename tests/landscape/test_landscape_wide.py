"""Critical points on M(n, k) certified in the fixed-point space of their isotropy (``wide``)."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np
import pytest

import certsym_check as checker
from certsym.certify import wide_critical_point_certificate
from certsym.cli import main
from certsym.landscape import kernel
from certsym.landscape.added_neuron import study
from certsym.landscape.wide import WideError, certify_wide, isotropy_generators, orbits
from certsym_check.kinds import wide as replay


@pytest.fixture(scope="module")
def ends():
    """The spurious end points of descent from the split misfit row: a saddle at k = 6, a minimum at k = 7."""
    return {k: study("one-misfit", k).splits[-1].escape.end for k in (6, 7)}


def test_orbits_match_the_checker() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, k = rng.integers(2, 6, size=2)
        gens = [(list(rng.permutation(n)), list(rng.permutation(k))) for _ in range(rng.integers(0, 3))]
        gens = [([int(x) for x in a], [int(x) for x in b]) for a, b in gens]
        assert orbits(int(n), int(k), gens) == replay.orbits(int(n), int(k), gens)


def test_isotropy_generators_fix_the_point(ends) -> None:
    p = ends[7]
    W = p.W
    generators = isotropy_generators(W)
    assert generators  # a nontrivial isotropy (the trivial one has 56 orbits)
    for rows, cols in generators:
        assert np.abs(W[rows][:, cols] - W).max() < 1e-12
    assert len(p.orbits) == 7  # d, o, the last column of the good block, and two rows (a·1, b)


def test_minimum_and_saddle(ends) -> None:
    """From k = 7 the split misfit saddle leads to a new spurious minimum below F(W*); at k = 6 to a saddle."""
    k7, k6 = ends[7], ends[6]
    assert k7.minimum and k7.smallest_eigenvalue > 0
    assert not k6.minimum
    assert float(k7.loss[0]) < study("one-misfit", 7, descend=False).base.box.loss.mid()
    W = k7.W
    assert np.abs(kernel.gradient(W, np.eye(7))).max() < 1e-9
    assert abs(kernel.loss(W, np.eye(7)) - float(k7.loss[0])) < 1e-9


def test_certificates_replay_and_mutants_are_rejected(ends) -> None:
    good = {k: wide_critical_point_certificate(p) for k, p in ends.items()}
    for cert in good.values():
        report = checker.check(cert)
        assert report, report.reason
    lying = copy.deepcopy(good[6])
    lying["proof"]["minimum"] = True  # a saddle claimed a minimum
    nudged = copy.deepcopy(good[7])
    nudged["proof"]["center"][0] = str(Fraction(nudged["proof"]["center"][0]) + Fraction(1, 10**6))
    loss = copy.deepcopy(good[7])
    loss["proof"]["loss"] = ["0", "1/100"]
    trivial = copy.deepcopy(good[7])
    trivial["proof"]["generators"] = []  # 56 orbits: over the parameter limit
    wrong = copy.deepcopy(good[7])
    wrong["proof"]["generators"][0][0] = [0] * 8
    for bad in (lying, nudged, loss, trivial, wrong):
        assert not checker.check(bad), json.dumps(bad["proof"])[:160]


def test_not_near_a_critical_point() -> None:
    W = np.random.default_rng(1).normal(size=(4, 3))
    with pytest.raises(WideError):
        certify_wide(W)
    with pytest.raises(WideError, match="zero"):
        certify_wide(np.vstack([np.eye(3), np.zeros((1, 3))]))


def test_cli_certify_wide_and_descent(ends, tmp_path, capfd) -> None:
    path = tmp_path / "W.json"
    path.write_text(json.dumps({"W": ends[7].W.tolist()}))
    cert = tmp_path / "c.json"
    assert main(["landscape", "certify", str(path), "--cert", str(cert), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["certified"] and out["minimum"] and (out["n"], out["k"]) == (8, 7)
    assert main(["check", str(cert)]) == 0
    capfd.readouterr()
    assert main(["landscape", "descent", "--k", "6", "--runs", "2", "--extra", "1", "--quick", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["n"] == 7 and out["runs"] == 2
    assert main(["landscape", "descent", "--k", "6", "--runs", "2", "--extra", "9"]) == 2

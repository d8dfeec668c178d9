"""Red-team findings on the H_n matching of ``equivalent`` certificates (the list and the columnar forms): work
that must be charged to the budget, entries bounded before they are read, and rejections that say where."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from certsym.cli import main
from certsym_check import check_certificate

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _save(path: Path, arrays) -> bytes:
    np.savez(path, **dict(zip(KEYS, arrays, strict=True)))
    return path.read_bytes()


@pytest.fixture
def pair(tmp_path: Path, capsys) -> tuple[dict, list[bytes]]:
    """A referenced certificate (columnar matching) for a float32 network and its permuted, rescaled copy."""
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    W2, b2 = rng.standard_normal((3, 6)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    perm, d = np.array([2, 0, 5, 1, 4, 3]), np.float32(2.0) ** np.array([1, -1, 2, 0, -2, 3], dtype=np.float32)
    files = [_save(tmp_path / "a.npz", (W1, b1, W2, b2)),
             _save(tmp_path / "b.npz", (W1[perm] * d[:, None], b1[perm] * d, W2[:, perm] / d, b2))]
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--reference", "--cert", str(cert)]) == 0
    capsys.readouterr()
    doc = json.loads(cert.read_text())
    assert check_certificate(doc, files).valid
    return doc, files


def test_scaling_a_zero_neurons_outputs_by_a_huge_scale_is_charged(tmp_path: Path, pair) -> None:
    """Two dead neurons (zero row, zero outputs) matched with a scale of 100,000 digits: the rows are proportional for
    any λ, and the output columns are compared in rationals, k products of λ each; that work was never charged (30 s
    for a 100 kB certificate and k = 5·10^5); it is now, and the budget refuses it before doing it."""
    doc, _ = pair
    k = 200_000
    zero = _save(tmp_path / "z.npz", (np.zeros((1, 1), np.float32), np.zeros(1, np.float32),
                                      np.zeros((k, 1), np.float32), np.zeros(k, np.float32)))
    for record in doc["inputs"]:
        record["sha256"], record["shape"] = hashlib.sha256(zero).hexdigest(), {"m": 1, "n": 1, "k": k}
    doc["proof"] = {"reduction": [[], []], "merges": [], "pairs": [], "statement": "affine parts cancel",
                    "matching": {"theta1": [0], "theta2": [0], "scale": ["3" * 100_000],
                                 "statement": "H_n invariance"}}
    report = check_certificate(doc, [zero, zero])
    assert not report.valid and "work budget" in report.reason
    doc["proof"]["matching"]["scale"] = ["3"]  # the same claim with a small scale holds
    assert check_certificate(doc, [zero, zero]).valid


@pytest.mark.parametrize("columnar", [True, False])
def test_more_entries_than_neurons_are_refused_before_reading_them(pair, columnar: bool) -> None:
    """A matching pairs each neuron once, so it has at most min(n1, n2) entries: a million entries (the first one
    out of range) are refused for their count, not built into records first (1.6 GB for 5·10^6)."""
    doc, files = pair
    count = 10**6
    doc["proof"]["matching"] = {"theta1": [99] * count, "theta2": [0] * count, "scale": ["1"] * count,
                                "statement": "H_n invariance"}
    if not columnar:
        doc["proof"]["matching"] = [{"theta1": 99, "theta2": 0, "scale": "1", "statement": "H_n invariance"}] * count
    report = check_certificate(doc, files)
    assert not report.valid and "more than the 6 neurons a matching can pair" in report.reason


def test_a_bad_scale_is_rejected_where_it_stands(pair) -> None:
    """A scale that is not an exact rational is rejected with its entry's place."""
    doc, files = pair
    doc["proof"]["matching"]["scale"][2] = " 1/2"
    report = check_certificate(doc, files)
    assert not report.valid and report.reason.startswith("proof.matching (entry 2): ")


def test_a_replay_holds_no_scaling_words_after_it(pair) -> None:
    """The float32 scaling test caches words of 32 bits per row entry while a replay runs (up to 2.2x the rows at
    m = 2^20); nothing stays held once the replay is over."""
    from certsym_check import core

    doc, files = pair
    assert check_certificate(doc, files).valid
    assert core._words.cache_info().currsize == core._exponent_bounds.cache_info().currsize == 0


@pytest.mark.parametrize("scale", ["-2", "-1", "0"])
def test_a_scale_that_is_not_positive_is_rejected(tmp_path: Path, capsys, scale: str) -> None:
    """A matched unit negated and scaled: r_j = λ r_i and v_j λ = v_i hold with λ = −2, but σ(−2z)(−v/2) is not
    σ(z) v, so the matching must refuse every λ ≤ 0 (the certificate rehashed to the changed file)."""
    rng = np.random.default_rng(5)
    W1, b1 = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    W2, b2 = rng.standard_normal((2, 4)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    a = _save(tmp_path / "a.npz", (W1, b1, W2, b2))
    _save(tmp_path / "b.npz", (W1, b1, W2, b2))
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--reference", "--cert", str(cert)]) == 0
    capsys.readouterr()
    doc = json.loads(cert.read_text())
    lam = {"-2": -2.0, "-1": -1.0, "0": -2.0}[scale]  # the rows of θ2 (λ = 0 is claimed against rows at −2)
    W1b, b1b, W2b = W1.copy(), b1.copy(), W2.copy()
    W1b[0], b1b[0], W2b[:, 0] = W1[0] * lam, b1[0] * lam, W2[:, 0] / lam
    b = _save(tmp_path / "b.npz", (W1b, b1b, W2b, b2))
    doc["inputs"][1]["sha256"] = hashlib.sha256(b).hexdigest()
    matching = doc["proof"]["matching"]
    entry = matching["theta1"].index(0)
    assert matching["theta2"][entry] == 0
    matching["scale"][entry] = scale
    report = check_certificate(doc, [a, b])
    assert not report.valid and "λ > 0" in report.reason, report.reason

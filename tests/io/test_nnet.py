"""NNet text files (.nnet: ReluVal, NeuroDiff, Marabou, ACAS Xu), read by the producer and by the checker, each on its
own: every number the exact decimal written, the means and ranges folded into the first and last layers exactly, a
ReLU after every layer but the last; NNet's own evaluation (on inputs inside its bounds, where its clamp is the
identity) agrees; malformed files are refused by both with the reason."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym.io.nnetfile import read_nnet
from certsym_check import check_certificate
from certsym_check.errors import Reject
from certsym_check.readers.nnet import read_nnet as checker_read_nnet


def _text(widths: list[int], seed: int, means: list[str] | None = None, ranges: list[str] | None = None) -> str:
    rng = np.random.default_rng(seed)
    m = widths[0]
    means = means or [f"{v:.3f}" for v in rng.standard_normal(m + 1)]
    ranges = ranges or [f"{v:.2f}" for v in rng.uniform(0.5, 3, m + 1)]
    out = ["// a test network", "// made by the tests", f"{len(widths) - 1},{m},{widths[-1]},{max(widths)},",
           ",".join(map(str, widths)) + ",", "0,", ",".join(["-10.0"] * m) + ",", ",".join(["10.0"] * m) + ",",
           ",".join(means) + ",", ",".join(ranges) + ","]
    for a, b in zip(widths, widths[1:], strict=False):
        out += [",".join(f"{w:.4f}" for w in row) + "," for row in rng.standard_normal((b, a))]
        out += [f"{c:.3f}," for c in rng.standard_normal(b)]
    return "\n".join(out) + "\n"


def _evaluate(text: str, x: np.ndarray) -> np.ndarray:
    """NNet's evaluation in float64 (clamp, normalize, layers, un-normalize), from the text."""
    lines = [line for line in text.splitlines() if line and not line.startswith("//")]
    count, m = (int(v) for v in lines[0].split(",")[:2])
    widths = [int(v) for v in lines[1].split(",") if v]
    nums = [[float(v) for v in line.split(",") if v] for line in lines[3:]]
    lo, hi, means, ranges = (np.array(v) for v in nums[:4])
    at, h = 4, (np.clip(x, lo, hi) - means[:m]) / ranges[:m]
    for ell in range(1, count + 1):
        W = np.array(nums[at:at + widths[ell]])
        b = np.array([v[0] for v in nums[at + widths[ell]:at + 2 * widths[ell]]])
        at += 2 * widths[ell]
        h = W @ h + b
        h = np.maximum(h, 0) if ell < count else h
    return h * ranges[m] + means[m]


@pytest.mark.parametrize("widths", [[2, 3, 1], [5, 8, 8, 5], [3, 4, 4, 4, 2]])
def test_both_readers_read_the_network_nnet_evaluates(tmp_path: Path, widths: list[int]) -> None:
    text = _text(widths, len(widths))
    path = tmp_path / "n.nnet"
    path.write_text(text)
    net = certsym.load(str(path)).layered()
    assert list(net.widths) == widths
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = np.round(rng.uniform(-5, 5, widths[0]), 3)
        got = [float(v) for v in net([fmpq(*Fraction(str(v)).as_integer_ratio()) for v in x])]
        np.testing.assert_allclose(got, _evaluate(text, x), rtol=1e-9, atol=1e-9)
    produced, _ = read_nnet(path)
    checked, found = checker_read_nnet(path.read_bytes())
    assert list(found) == widths
    for (W, b), (V, c) in zip(produced, checked, strict=True):
        assert [Fraction(str(w)) for w in W.ravel().tolist()] == [w for row in V for w in row]
        assert [Fraction(str(v)) for v in b.tolist()] == c


def test_decimals_are_exact_and_the_certificate_binds_the_file(tmp_path: Path, capfd) -> None:
    """A .nnet with means 0 and ranges 1 against the npz of its weights: EQUIVALENT where the decimals are dyadic,
    NOT EQUIVALENT where a decimal (0.1) is not the float32 an npz holds."""
    text = _text([2, 3, 1], 1, ["0", "0", "0"], ["1", "1", "1"])
    dyadic = "\n".join(line if line.startswith("//") or "." not in line else
                       ",".join(f"{round(float(v) * 8) / 8}" for v in line.split(",") if v) + ","
                       for line in text.splitlines()) + "\n"
    lines = [line for line in dyadic.splitlines() if not line.startswith("//")]
    path = tmp_path / "d.nnet"
    path.write_text(dyadic)
    layers, _ = read_nnet(path)
    npz = tmp_path / "d.npz"
    np.savez(npz, **{f"{2 * i}.{k}": np.array([float(v) for v in a.ravel().tolist()], np.float32).reshape(a.shape)
                     for i, (W, b) in enumerate(layers) for k, a in (("weight", W), ("bias", b))})
    cert = tmp_path / "c.json"
    assert main(["equiv", str(path), str(npz), "--cert", str(cert)]) == 0, lines
    assert main(["check", str(cert), "--inputs", str(path), str(npz)]) == 0
    assert "nnet (deep): layer sizes 2-3-1" in capfd.readouterr().out
    lines = path.read_text().splitlines()
    lines[-1] = "0.1,"  # the output bias, a decimal no float is
    (tmp_path / "t.nnet").write_text("\n".join(lines) + "\n")
    layers_t, _ = read_nnet(tmp_path / "t.nnet")
    assert layers_t[-1][1][0] == fmpq(1, 10)
    forged = json.loads(cert.read_text())
    forged["inputs"][0]["parameters"]["layers"][0]["b"][0] = "1/3"
    report = check_certificate(forged, [path.read_bytes(), npz.read_bytes()])
    assert not report.valid


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.replace("1,1,1,", "1,0,1,"), "range of 0|range"),
    (lambda t: t + "1.0,\n", "after the last"),
    (lambda t: t.replace("2,3,1,\n", "2,4,1,\n", 1), ""),
    (lambda t: "\n".join(t.splitlines()[:-2]) + "\n", "ends"),
    (lambda t: t.replace("0,\n", "0,\nx,\n", 1), ""),
])
def test_malformed_nnet_files_are_refused_by_both(tmp_path: Path, edit, words: str) -> None:
    text = edit(_text([2, 3, 1], 2, ["0", "0", "0"], ["1", "1", "1"]))
    path = tmp_path / "bad.nnet"
    path.write_text(text)
    with pytest.raises(InputError, match=words or None):
        read_nnet(path)
    with pytest.raises(Reject):
        checker_read_nnet(path.read_bytes())

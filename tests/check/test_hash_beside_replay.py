"""The SHA-256 of a referenced model file is computed on a thread beside the replay and compared at its end, and
first when anything else fails: a file other than the certificate's is refused on its hash, whether the replay
would fail on it, pass on it, or not read it at all."""

from __future__ import annotations

import json

import numpy as np

from certsym.cli import main
from certsym_check import check_certificate

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _pair(tmp_path):
    rng = np.random.default_rng(7)
    W1, b1 = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    W2, b2 = rng.standard_normal((2, 6)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    perm = rng.permutation(6)
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    np.savez(a, **dict(zip(KEYS, (W1, b1, W2, b2), strict=True)))
    np.savez(b, **dict(zip(KEYS, (W1[perm] * 2, b1[perm] * 2, W2[:, perm] / 2, b2), strict=True)))
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(a), str(b), "--reference", "--cert", str(cert)]) == 0
    return json.loads(cert.read_text()), a, b


def test_the_right_files_are_valid_and_bound(tmp_path) -> None:
    doc, a, b = _pair(tmp_path)
    report = check_certificate(doc, [a.read_bytes(), b.read_bytes()])
    assert report.valid, report.reason
    assert any(doc["inputs"][1]["sha256"][:16] in line for line in report.bound)


def test_a_file_the_replay_accepts_is_refused_on_its_hash(tmp_path) -> None:
    """The same tensors written in another member order: other bytes, the same network, so every step of the
    replay holds; only the final comparison of the SHA-256 refuses it."""
    doc, a, b = _pair(tmp_path)
    with np.load(b) as z:
        tensors = {key: z[key] for key in KEYS}
    other = tmp_path / "reordered.npz"
    np.savez(other, **{key: tensors[key] for key in reversed(KEYS)})
    assert other.read_bytes() != b.read_bytes()
    report = check_certificate(doc, [a.read_bytes(), other.read_bytes()])
    assert not report.valid and "inputs[1]: the SHA-256 of the given file differs" in report.reason
    assert report.bound == []


def test_a_file_the_replay_refuses_is_refused_on_its_hash(tmp_path) -> None:
    """One weight changed in its last bit (the matching fails on it) or bytes that are no model file at all
    (the reader fails on them): the reason is the hash either way."""
    doc, a, b = _pair(tmp_path)
    with np.load(b) as z:
        tensors = {key: z[key].copy() for key in KEYS}
    tensors["0.weight"][0, 0] = np.nextafter(tensors["0.weight"][0, 0], np.float32(np.inf))
    nudged = tmp_path / "nudged.npz"
    np.savez(nudged, **tensors)
    for data in (nudged.read_bytes(), b"PK\x03\x04 not a zip", b""):
        report = check_certificate(doc, [a.read_bytes(), data])
        assert not report.valid and "inputs[1]: the SHA-256 of the given file differs" in report.reason, report.reason

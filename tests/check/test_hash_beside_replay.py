"""The SHA-256 of a referenced model file is computed on a thread beside the replay and compared at its end, and
first when anything else fails: a file other than the certificate's is refused on its hash, whether the replay
would fail on it, pass on it, or not read it at all."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import threading
import zipfile

import numpy as np
import pytest

from certsym.cli import main
from certsym_check import check_certificate, envelope
from certsym_check.readers.files import InputFile

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _pair(tmp_path, n: int = 6, m: int = 3, seed: int = 7):
    """A referenced certificate for a float32 m-n-2 network (files a.npz, b.npz) and its permuted, rescaled copy."""
    rng = np.random.default_rng(seed)
    W1, b1 = rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    W2, b2 = rng.standard_normal((2, n)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    perm = rng.permutation(n)
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


def test_the_bytes_of_a_given_file_are_fixed(tmp_path) -> None:
    """An InputFile's bytes cannot be replaced, and a mutable buffer is copied when given: changing the buffer
    afterwards, in place, changes nothing the checker hashes or parses."""
    doc, a, b = _pair(tmp_path)
    with np.load(b) as z:
        tensors = {key: z[key] for key in KEYS}
    other = tmp_path / "reordered.npz"
    np.savez(other, **{key: tensors[key] for key in reversed(KEYS)})
    reordered = other.read_bytes()
    file = InputFile(a.read_bytes())
    with pytest.raises(AttributeError):
        file.data = reordered
    buffer = bytearray(b.read_bytes())
    files = [InputFile(a.read_bytes()), InputFile(buffer)]
    assert check_certificate(doc, files).valid
    assert len(buffer) == len(reordered)  # the same length: the change below is in place
    buffer[:] = reordered
    assert check_certificate(doc, files).valid  # the bytes given, not the buffer's new ones
    report = check_certificate(doc, [a.read_bytes(), buffer])
    assert not report.valid and "inputs[1]: the SHA-256 of the given file differs" in report.reason


def test_threads_sharing_a_given_file_get_its_digest(tmp_path) -> None:
    """Four threads asking at once for the digests of the same new InputFiles, switching threads as often as
    Python can: each gets the SHA-256 of the bytes (the hash is started once, under a lock, and joined by each)."""
    _, a, b = _pair(tmp_path)
    want = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b)]
    results: list[list[str]] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(50):
            files = [InputFile(a.read_bytes()), InputFile(b.read_bytes())]
            workers = [threading.Thread(target=lambda fs=files: results.append([f.sha256() for f in fs]))
                       for _ in range(4)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
    finally:
        sys.setswitchinterval(interval)
    assert results == [want] * 200


def test_no_thread_to_be_had(tmp_path, monkeypatch) -> None:
    """When no thread can be started, the file is hashed at once: the verdicts are those of the files."""
    doc, a, b = _pair(tmp_path)

    def refuse(self) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    assert check_certificate(doc, [a.read_bytes(), b.read_bytes()]).valid
    report = check_certificate(doc, [b.read_bytes(), a.read_bytes()])
    assert not report.valid and "SHA-256 of the given file differs" in report.reason


def test_data_that_are_not_bytes_are_not_accepted(tmp_path) -> None:
    """A str, or a number, given as a file's data is refused (never hashed as the digest of nothing)."""
    doc, a, _ = _pair(tmp_path)
    doc["inputs"][1]["sha256"] = hashlib.sha256(b"").hexdigest()
    for data in ("", 5):
        with pytest.raises(TypeError):
            InputFile(data)
        assert not check_certificate(doc, [a.read_bytes(), data]).valid


def test_a_file_already_hashed_is_refused_before_the_replay(tmp_path, monkeypatch) -> None:
    """A wrong file whose hash is done when the networks have been read is refused then, without the replay."""
    doc, a, b = _pair(tmp_path)
    replayed = []
    count, verify = envelope.KINDS["equivalent"][0], envelope.replay_of("equivalent")
    monkeypatch.setitem(envelope.KINDS, "equivalent", (count, lambda *args: replayed.append(verify(*args))))
    files = [InputFile(a.read_bytes()), InputFile(a.read_bytes())]
    files[1].sha256()  # done before the replay starts
    report = check_certificate(doc, files)
    assert not report.valid and "inputs[1]: the SHA-256" in report.reason and replayed == []
    assert check_certificate(doc, [a.read_bytes(), b.read_bytes()]).valid and len(replayed) == 1


def test_inputs_that_are_not_regular_files(tmp_path, capsys) -> None:
    """--inputs naming a pipe (opening it would wait for a writer for ever) or a device: one line, exit 2."""
    import os

    from certsym_check.main import main as check_main

    doc, a, _ = _pair(tmp_path)
    cert = tmp_path / "cert.json"
    cert.write_text(json.dumps(doc))
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for other in (str(pipe), os.devnull):
        assert check_main([str(cert), "--inputs", str(a), other]) == 2
        err = capsys.readouterr().err
        assert "not a regular file" in err and len(err.strip().splitlines()) == 1


def _with_crc(data: bytes, member: bytes, crc: int) -> bytes:
    """The archive with ``member``'s recorded CRC-32 (local header and central directory) set to ``crc``."""
    out = bytearray(data)
    for signature, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        start = 0
        while (start := out.find(signature, start)) >= 0:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if out[name_at:name_at + len(member)] == member:
                out[start + at:start + at + 4] = crc.to_bytes(4, "little")
            start += 4
    return bytes(out)


def test_a_large_members_crc_is_settled_before_a_verdict(tmp_path) -> None:
    """The first layer's recorded CRC-32 changed, the certificate rehashed to the changed file: the replay
    passes on the intact weights, and the CRC-32 checked beside it still refuses the file; a weight changed
    instead (the replay fails on it) gives the CRC-32 as the reason too."""
    doc, a, b = _pair(tmp_path, 300, 1024, 11)  # a first layer of more than 1 MiB: its CRC-32 checked beside
    a, b = a.read_bytes(), b.read_bytes()
    assert check_certificate(doc, [a, b]).valid
    with zipfile.ZipFile(io.BytesIO(b)) as z:
        info = z.getinfo("0.weight.npy")
    assert info.file_size > 1 << 20
    bad = _with_crc(b, b"0.weight.npy", info.CRC ^ 1)
    assert bad != b
    doc["inputs"][1]["sha256"] = hashlib.sha256(bad).hexdigest()
    report = check_certificate(doc, [a, bad])
    assert not report.valid and report.reason.startswith("inputs[1]: 0.weight.npy: the member's CRC-32 does not"), \
        report.reason
    at = b.index(b"\x93NUMPY", b.index(b"0.weight.npy")) + 1000  # a byte of the first layer's weights
    damaged = b[:at] + bytes([b[at] ^ 0x40]) + b[at + 1:]
    doc["inputs"][1]["sha256"] = hashlib.sha256(damaged).hexdigest()
    report = check_certificate(doc, [a, damaged])
    assert not report.valid and "CRC-32 does not match" in report.reason, report.reason

"""A file read once: the bytes parsed are the bytes hashed, and a record with a hash still running behaves as one
with the digest written out (equal, and pickled as the digest itself)."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import numpy as np

from certsym.certify.envelope import InputRecord
from certsym.io.filebytes import FileBytes
from certsym.io.sources import load


def test_the_digest_is_the_sha256_of_the_bytes_read(tmp_path: Path) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(bytes(range(256)) * 10_000)
    blob = FileBytes(path)
    assert blob.data == path.read_bytes()
    assert blob.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_record_still_hashing_is_the_record_of_its_digest(tmp_path: Path) -> None:
    path = tmp_path / "net.npz"
    rng = np.random.default_rng(0)
    np.savez(path, **{"0.weight": rng.standard_normal((3, 2), dtype=np.float32), "0.bias": np.zeros(3, np.float32),
                      "2.weight": rng.standard_normal((1, 3), dtype=np.float32), "2.bias": np.zeros(1, np.float32)})
    record = load(path).record
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert record.sha256 == digest
    written = InputRecord(record.name, digest, record.atoms, record.model)
    assert record == written
    copy = pickle.loads(pickle.dumps(record))
    assert copy.digest == digest and isinstance(copy.digest, str)

"""Uncompressed .npz members are read in place (float views of the file's bytes): the CRC-32 that zipfile, and so
numpy.load, checks at the end of a member is checked here too, and compressed members read the same values."""

from __future__ import annotations

import struct
import zipfile

import numpy as np
import pytest

from certsym_check.errors import Reject
from certsym_check.readers.files import read_tensors


def _archive(tmp_path, compressed: bool):
    rng = np.random.default_rng(1)
    # w larger than zipfile's first read (4 KiB), which would otherwise check the CRC itself
    arrays = {"w": rng.standard_normal((50, 70)).astype(np.float32), "b": rng.standard_normal(5).astype(np.float32)}
    path = tmp_path / ("z.npz" if compressed else "s.npz")
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path, arrays


@pytest.mark.parametrize("compressed", [False, True])
def test_members_read_as_numpy_reads_them(tmp_path, compressed) -> None:
    path, arrays = _archive(tmp_path, compressed)
    tensors, names = read_tensors(path.read_bytes(), "npz")
    assert sorted(names) == ["b", "w"]
    for name, want in arrays.items():
        assert tensors[name].shape == want.shape and tensors[name].flat() == want.reshape(-1).tolist()
    assert isinstance(tensors["w"].values, memoryview)  # in place when stored; a view of the inflated bytes else


def test_a_stored_member_with_a_wrong_crc_is_refused_as_numpy_refuses_it(tmp_path) -> None:
    path, _ = _archive(tmp_path, compressed=False)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("w.npy")
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + name_length + extra_length + info.file_size - 3] ^= 1  # one bit of w's entries
    broken = tmp_path / "broken.npz"
    broken.write_bytes(bytes(data))
    with pytest.raises(zipfile.BadZipFile), np.load(broken) as z:
        z["w"]
    with pytest.raises(Reject, match="CRC-32"):
        read_tensors(bytes(data), "npz")

"""The npz reader on the bytes read once (``FileBytes``): stored members become views of those bytes only where
zipfile would read the same bytes; everywhere else zipfile reads the member, with its own refusals. Each case here
was a hole found by attacking that reader (the archive bytes are built by hand)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from certsym.errors import InputError
from certsym.io import models
from certsym.io.filebytes import FileBytes
from certsym_check.errors import Reject
from certsym_check.readers.files import read_tensors


def _npy(a: np.ndarray) -> bytes:
    header = repr({"descr": a.dtype.str, "fortran_order": False, "shape": a.shape}).encode()
    header += b" " * ((-(10 + len(header) + 1)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + a.tobytes()


def _local(name: bytes, data: bytes) -> bytes:
    return struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data),
                       len(name), 0) + name + data


def _central(name: bytes, data: bytes, offset: int) -> bytes:
    return struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0x21, zlib.crc32(data), len(data),
                       len(data), len(name), 0, 0, 0, 0, 0, offset) + name


def _end(entries: int, directory: bytes, at: int, comment: bytes = b"") -> bytes:
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, len(directory), at, len(comment)) + comment


def _both(path: Path) -> tuple:
    """(the in-place reading or its exception, the zipfile reading or its exception)."""
    out = []
    for call in (lambda: models._npz(path, None, FileBytes(path)), lambda: models._npz(path, None)):
        try:
            out.append(call())
        except Exception as exc:  # noqa: BLE001 - any refusal is compared as a refusal
            out.append(exc)
    return tuple(out)


def test_a_member_at_a_negative_offset_is_not_read_from_the_end(tmp_path: Path) -> None:
    """The end record claims the directory 4,096 bytes later than it is: zipfile's correction puts a member's local
    header before the file's start, and zipfile fails its seek. The bytes at that negative index (a member planted
    in the archive comment) must not be read."""
    a, c = _npy(np.ones((1, 2), "<f4")), _npy(np.array([7.0], "<f4"))
    body, planted, shift = _local(b"A.npy", a), _local(b"c.npy", c) + b"Z", 4096
    directory = _central(b"A.npy", a, shift) + _central(b"c.npy", c, shift - len(planted))
    path = tmp_path / "negative.npz"
    path.write_bytes(body + directory + _end(2, directory, len(body) + shift, planted))
    with pytest.raises(Exception):  # noqa: B017, PT011 - numpy.load's own refusal, whatever its type
        np.load(path)["c"]
    in_place, plain = _both(path)
    assert isinstance(in_place, Exception) and isinstance(plain, Exception)


@pytest.mark.parametrize("in_place", [True, False])
def test_an_overlapping_member_is_refused(tmp_path: Path, in_place: bool) -> None:
    """A member whose data contain the next member's local header: newer zipfiles (and so numpy.load) refuse the
    archive, older ones read both members. certsym's readers, the producer's two and the checker's, refuse it
    whatever the version."""
    inner = _local(b"c.npy", _npy(np.array([0.25], "<f4")))
    head = _npy(np.zeros((1, len(inner)), "u1"))[:-len(inner)]
    out = _local(b"A.npy", head + inner)
    directory = _central(b"A.npy", head + inner, 0) + _central(b"c.npy", _npy(np.array([0.25], "<f4")),
                                                                 len(out) - len(inner))
    path = tmp_path / "overlap.npz"
    path.write_bytes(out + directory + _end(2, directory, len(out)))
    with pytest.raises(InputError, match="overlaps the next one"):
        models._npz(path, None, FileBytes(path) if in_place else None)
    with pytest.raises(Reject, match="overlaps the next one"):
        read_tensors(path.read_bytes(), "npz")


@pytest.mark.parametrize("in_place", [True, False])
def test_a_truncated_npy_header_is_refused(tmp_path: Path, in_place: bool) -> None:
    """The header's length field claims 40 bytes more than the member holds: numpy refuses ("EOF: reading array
    header"); an empty array's size check alone would pass."""
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }"
    member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header) + 40) + header
    local = _local(b"A.npy", member)
    directory = _central(b"A.npy", member, 0)
    path = tmp_path / "short.npz"
    path.write_bytes(local + directory + _end(1, directory, len(local)))
    with pytest.raises(ValueError, match="EOF"):
        np.load(path)["A"]
    with pytest.raises(InputError, match="shorter than its length field"):
        models._npz(path, None, FileBytes(path) if in_place else None)

"""Differential tests of the model-file readers against each format's own runtime (docs/FORMATS.md).

Every file here is read three ways: by the checker's reader (``checker/certsym_check``, standard library only), by the
producer's reader (``certsym/io``) and by the format's runtime:

- npz: ``numpy.load``;
- safetensors: ``safetensors.numpy.load`` (``safetensors.torch.load`` for a file with BF16 tensors, which numpy
  cannot hold) and ``safetensors.safe_open``, which must agree;
- torch: ``torch.load(..., weights_only=True)``;
- ONNX: ``onnx.load`` (with its external data) and ``onnx.numpy_helper.to_array``, and onnxruntime's reading of the
  same initializers (a probe model saved beside the file, whose outputs are the initializers themselves, so that the
  comparison is bit-exact and independent of which kernels onnxruntime has).

The rule (``_judge``): when the runtime reads the file as a map of tensors, each project reader either reads the same
tensors, bit for bit (raw bit patterns: -0.0 is not 0.0, NaN payloads count), or refuses the file (``Reject`` from
the checker, ``InputError`` from the producer). When the runtime refuses the file, or reads something else (a decoy
array, a member as raw bytes, tensors without values on the ``meta`` device, initializers that onnxruntime reads
differently from onnx), both project readers refuse it. A project reader refusing a file the runtime reads is allowed
(strictness) and is reported as a ``Strictness`` warning.

One allowance: the checker decodes float16 through ``struct`` into Python floats, which (before Python 3.14) turns
every float16 NaN into the canonical one. A float16 NaN may therefore differ in its payload, and only then, on
condition that the checker refuses the tensor before using it (``Tensor.exact`` raises ``Reject`` on any NaN).

The producer's tensor-map readers ``models._npz`` and ``models._safetensors`` may raise other exceptions for files
they do not read; ``models.read_arrays`` reports every one as an ``InputError`` (checked below), so such an
exception counts as the producer's refusal. Every other reader must refuse with its own error class only.

Generated files (hypothesis) are ones FORMATS.md admits: all three readers must read them and agree. Adversarial
files are hand-built byte-level edits, each with the runtime's verdict asserted first, so that a case is what it
claims to be.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import pickletools
import struct
import sys
import warnings
import zipfile
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import safetensors
import safetensors.numpy as safetensors_numpy
import safetensors.torch as safetensors_torch
import torch
from helpers import Strictness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from certsym.errors import InputError
from certsym.io import models
from certsym.io.filebytes import FileBytes
from certsym.io.onnxfile import read_onnx_chain as producer_read_onnx
from certsym.io.torchfile import read_state_dict as producer_state_dict
from certsym_check.errors import Reject
from certsym_check.readers.files import InputFile, Tensor, read_tensors
from certsym_check.readers.onnx import read_onnx as checker_read_onnx
from certsym_check.readers.torchzip import state_dict as checker_state_dict

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])


# ============================================================================================ bit patterns

WIDTH = {"f2": 2, "bf16": 2, "f4": 4, "f8": 8, "i1": 1, "i2": 2, "i4": 4, "i8": 8, "u1": 1}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
FLOAT = {"f2": np.float16, "f4": np.float32, "f8": np.float64}
NUMPY_CODE = {np.dtype(t): c for t, c in ((np.float16, "f2"), (np.float32, "f4"), (np.float64, "f8"), (np.int8, "i1"),
                                           (np.int16, "i2"), (np.int32, "i4"), (np.int64, "i8"), (np.uint8, "u1"))}
NUMPY_CODE[np.dtype(ml_dtypes.bfloat16)] = "bf16"
TORCH_CODE = {torch.float16: "f2", torch.bfloat16: "bf16", torch.float32: "f4", torch.float64: "f8", torch.int8: "i1",
              torch.int16: "i2", torch.int32: "i4", torch.int64: "i8", torch.uint8: "u1"}
TORCH_DTYPE = {code: dtype for dtype, code in TORCH_CODE.items()}
# Bit patterns at the edges: signed zeros, infinities, NaNs with payloads (quiet and signalling, both signs),
# subnormals, the largest finite value; for ints the extremes.
SPECIAL = {
    "f2": [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFE01, 0x7D55, 0x0001, 0x8001, 0x3C00, 0x7BFF],
    "bf16": [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7F81, 0x7FC0, 0xFFC1, 0x7FAA, 0x0001, 0x8001, 0x3F80, 0x7F7F],
    "f4": [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00000, 0xFFC12345, 0x7FA00000, 1, 0x80000001,
           0x3F800000, 0x7F7FFFFF],
    "f8": [0, 1 << 63, 0x7FF0 << 48, 0xFFF0 << 48, (0x7FF0 << 48) | 1, 0x7FF8 << 48, (0xFFF8 << 48) | 0xABC, 1,
           (1 << 63) | 1, 0x3FF0 << 48, 0x7FEFFFFFFFFFFFFF],
    "i1": [0, 1, 0x7F, 0x80, 0xFF], "i2": [0, 1, 0x7FFF, 0x8000, 0xFFFF], "u1": [0, 1, 0x7F, 0x80, 0xFF],
    "i4": [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], "i8": [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1],
}
_EXPONENT_TOP = {"f2": 1 << 14, "bf16": 1 << 14, "f4": 1 << 30, "f8": 1 << 62}


@dataclass
class Bits:
    """A tensor as its shape, element type and raw bit patterns (unsigned ints, C order, native byte order)."""

    shape: tuple
    code: str
    bits: np.ndarray

    def nan(self) -> np.ndarray:
        if self.code == "bf16":
            return (self.bits & 0x7F80 == 0x7F80) & (self.bits & 0x7F != 0)
        if self.code in FLOAT:
            return np.isnan(self.bits.view(FLOAT[self.code]))
        return np.zeros(self.bits.shape, bool)

    def same(self, other: Bits) -> bool:
        return self.shape == other.shape and self.code == other.code and np.array_equal(self.bits, other.bits)


def finite(b: Bits) -> bool:
    if b.code == "bf16":
        return bool(np.isfinite((b.bits.astype(np.uint32) << 16).view(np.float32)).all())
    return bool(np.isfinite(b.bits.view(FLOAT[b.code])).all()) if b.code in FLOAT else True


def numpy_bits(a: np.ndarray) -> Bits:
    a = np.asarray(a)
    native = a.dtype.newbyteorder("=")
    code = NUMPY_CODE.get(native, native.str)
    flat = np.ascontiguousarray(a.astype(native, copy=False)).reshape(-1)
    return Bits(tuple(a.shape), code, flat.view(UINT[a.dtype.itemsize]) if a.dtype.itemsize in UINT else flat)


def torch_bits(t) -> Bits:
    """Through a same-size integer view (any strides; a size-1 dimension may keep any stride), then numpy."""
    size = t.element_size()
    ints = t.detach().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size])
    raw = np.ascontiguousarray(ints.numpy()).reshape(-1)
    return Bits(tuple(t.shape), TORCH_CODE.get(t.dtype, str(t.dtype)), raw.view(UINT[size]).copy())


def checker_bits(t: Tensor) -> Bits:
    """A checker Tensor's entries (storage order, C or 2-D Fortran) as C-order bit patterns: arrays and memory views
    keep the exact bits; float16 (Python floats) goes back through numpy, exact except for NaN payloads."""
    shape, code = tuple(t.shape), t.code
    values = t.values
    if isinstance(values, array | memoryview):  # an array, or a float32 view of the file's bytes
        kind = values.typecode if isinstance(values, array) else values.format
        raw = np.frombuffer(values, dtype=np.dtype(kind)) if len(values) else np.zeros(0, np.float64)
    else:
        raw = np.array(list(values), dtype=np.float64 if code in FLOAT or code == "bf16" else np.int64)
    if code == "bf16":
        wide = raw.astype(np.float32).view(np.uint32)
        assert not np.any(wide & 0xFFFF), "the checker's bfloat16 values are not bfloat16 values"
        storage = (wide >> 16).astype(np.uint16)
    elif code in FLOAT:
        storage = raw.astype(FLOAT[code]).view(UINT[WIDTH[code]])
    else:
        storage = raw.astype(SIGNED[WIDTH[code]]).view(UINT[WIDTH[code]])
    assert storage.size == math.prod(shape), (shape, storage.size)
    if t.fortran and len(shape) == 2 and storage.size:  # (an empty shape may be one numpy cannot hold)
        storage = np.ascontiguousarray(storage.reshape(shape[::-1]).T).reshape(-1)
    return Bits(shape, code, storage)


def producer_bits(a: np.ndarray, runtime_code: str) -> Bits:
    """A producer array as bit patterns; the producer gives bfloat16 as float32 holding the same values."""
    if runtime_code == "bf16" and a.dtype == np.float32:
        wide = np.ascontiguousarray(a).reshape(-1).view(np.uint32)
        if np.any(wide & 0xFFFF):
            return Bits(tuple(a.shape), "f4", wide)  # not bfloat16 values: the comparison fails
        return Bits(tuple(a.shape), "bf16", (wide >> 16).astype(np.uint16))
    return numpy_bits(a)


def _raises(kind: type[BaseException], fn: Callable, *args) -> bool:
    try:
        fn(*args)
    except kind:
        return True
    return False


# ================================================================================================ verdicts


@dataclass
class Outcome:
    """What one reader made of a file: "read" (tensors), "refused" (detail: why) or, for a runtime, "differs" (it
    read the file as something other than that map of tensors; detail: what)."""

    reader: str
    status: str
    tensors: dict = field(default_factory=dict)  # name -> Bits
    detail: str = ""
    nan_refused: dict = field(default_factory=dict)  # name -> callable: the project refuses the tensor downstream
    lossy: frozenset = frozenset()  # element codes whose NaN payloads this reader cannot hold


def _read(reader: str, tensors: dict, nan_refused: dict | None = None, lossy: frozenset = frozenset()) -> Outcome:
    return Outcome(reader, "read", tensors, "", nan_refused or {}, lossy)


def _refused(reader: str, exc: BaseException | str) -> Outcome:
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return Outcome(reader, "refused", detail=text[:300])


def _differs(reader: str, what: str) -> Outcome:
    return Outcome(reader, "differs", detail=what)


def _agrees(runtime: Bits, ours: Bits, lossy: bool, refused_downstream: Callable[[], bool]) -> tuple[bool, str]:
    """Bit-for-bit agreement, or (``lossy``) NaN against NaN where the bits differ and the tensor is refused before
    use."""
    if ours.shape != runtime.shape or ours.code != runtime.code:
        return False, f"shape/type {ours.shape} {ours.code}, the runtime {runtime.shape} {runtime.code}"
    differ = ours.bits != runtime.bits
    if not differ.any():
        return True, ""
    first = int(np.flatnonzero(differ)[0])
    why = f"entry {first}: bits {int(ours.bits[first]):#x}, the runtime {int(runtime.bits[first]):#x}"
    only_nan = bool(np.all((runtime.nan() & ours.nan())[differ]))
    return lossy and only_nan and refused_downstream(), why


def _judge(label: str, runtime: Outcome, *ours: Outcome) -> None:
    """docs/FORMATS.md's rule against the runtime: read the same, bit for bit, or refuse; refuse what the runtime
    refuses or reads differently. One assertion naming every reader that breaks it."""
    broken = []
    for reading in ours:
        if runtime.status != "read":
            if reading.status != "refused":
                broken.append(f"the {reading.reader} reads the file")
        elif reading.status == "refused":
            warnings.warn(Strictness(f"{label}: the {reading.reader} refuses a file {runtime.reader} reads: "
                                     f"{reading.detail}"), stacklevel=2)
        elif set(reading.tensors) != set(runtime.tensors):
            broken.append(f"the {reading.reader} reads tensors {sorted(reading.tensors)[:8]}, the runtime "
                          f"{sorted(runtime.tensors)[:8]}")
        else:
            for name, want in runtime.tensors.items():
                got = reading.tensors[name]
                ok, why = _agrees(want, got, got.code in reading.lossy, reading.nan_refused.get(name, lambda: False))
                if not ok:
                    broken.append(f"the {reading.reader} reads {name!r} differently from {runtime.reader}: {why}")
    verdict = "" if runtime.status == "read" else f"the runtime {runtime.status} ({runtime.detail}); "
    assert not broken, f"{label}: {verdict}{'; '.join(broken)}"


def _expect(label: str, runtime: Outcome, status: str) -> None:
    """The case is what it claims to be: the runtime's verdict on it."""
    assert runtime.status == status, (
        f"{label}: expected the runtime's verdict {status}, it is {runtime.status} ({runtime.detail})")


def _must_read(label: str, *outcomes: Outcome) -> None:
    for outcome in outcomes:
        assert outcome.status == "read", f"{label}: the {outcome.reader} refuses a file FORMATS.md admits: " \
                                         f"{outcome.detail}"


# ================================================================================================ zip bytes

STORED, DEFLATED, BZIP2, LZMA = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA


def make_zip(members: list[tuple], comment: bytes = b"") -> bytes:
    """A zip of (name, data[, method[, force_zip64]]) members in that order (duplicate names written on purpose)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data, *rest in members:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = rest[0] if rest else STORED
            with z.open(info, "w", force_zip64=bool(rest[1]) if len(rest) > 1 else False) as fh:
                fh.write(data)
        z.comment = comment
    return out.getvalue()


def streamed_zip(members: list[tuple[str, bytes]]) -> bytes:
    """A zip written to an unseekable stream: every member has a data descriptor (flag bit 3)."""

    class Sink(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, chunk) -> int:
            self.data += chunk
            return len(chunk)

    sink = Sink()
    with zipfile.ZipFile(sink, "w") as z:
        for name, data in members:
            with z.open(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), "w") as fh:
                fh.write(data)
    return bytes(sink.data)


def members_of(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(info.filename, z.read(info)) for info in z.infolist()]


def with_zip64_end(data: bytes) -> bytes:
    """The archive with a zip64 end record and its locator before the end record, which then says 0xFFFF."""
    end = len(data) - 22
    _, _, _, count, _, size, offset, _ = struct.unpack("<4sHHHHIIH", data[end:])
    record = struct.pack("<4sQ2H2I4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, offset)
    return (data[:end] + record + struct.pack("<4sIQI", b"PK\x06\x07", 0, end, 1)
            + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))


def patch_central(data: bytes, member: str, offset: int, value: bytes, local: int | None = None) -> bytes:
    """The archive with bytes of ``member``'s central directory entry (and, with ``local``, of its local header at
    that offset instead) overwritten."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack_from("<H", out, at + 28)[0]
        if out[at + 46:at + 46 + length] == member.encode():
            if local is None:
                out[at + offset:at + offset + len(value)] = value
            else:
                start = struct.unpack_from("<I", out, at + 42)[0]
                out[start + local:start + local + len(value)] = value
            return bytes(out)
        at = out.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"no member {member}")


# ====================================================================================================== npz

NPY_CODES = {"f2": "f2", "f4": "f4", "f8": "f8", "i1": "i1", "i2": "i2", "i4": "i4", "i8": "i8", "u1": "u1"}


def npy_bytes(header: str | bytes, body: bytes, version: tuple = (1, 0), pad: bool = True) -> bytes:
    """A .npy file with exactly this header text (padded numpy's way, to a multiple of 64, unless ``pad`` is False)."""
    raw = header.encode("latin1" if version < (3, 0) else "utf-8") if isinstance(header, str) else header
    prefix = 10 if version == (1, 0) else 12
    if pad:
        raw += b" " * (63 - (prefix + len(raw)) % 64) + b"\n"
    length = struct.pack("<H" if version == (1, 0) else "<I", len(raw))
    return b"\x93NUMPY" + bytes(version) + length + raw + body


def npy_header(descr: str, fortran: bool, shape: tuple) -> str:
    return f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape!r}, }}"


def array_of(code: str, shape: tuple, bits: np.ndarray, order: str = "=") -> np.ndarray:
    """The array with these bit patterns (C order) in byte order ``order``: exact, NaN payloads included."""
    native = bits.astype(UINT[WIDTH[code]]).view(np.dtype(NPY_CODES[code])).reshape(shape)
    if order == ">" and WIDTH[code] > 1 and sys.byteorder == "little" or order == "<" and sys.byteorder == "big":
        return native.byteswap().view(native.dtype.newbyteorder())
    return native


def npz_runtime(path: Path) -> Outcome:
    who = "numpy.load"
    try:
        loaded = np.load(path)
    except Exception as exc:
        return _refused(who, exc)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        return _differs(who, f"numpy.load returns a {type(loaded).__name__} {getattr(loaded, 'shape', '')}: it does "
                             "not read the file as an archive")
    with loaded:
        out = {}
        for key in loaded.files:
            try:
                value = loaded[key]
            except Exception as exc:
                return _refused(who, exc)
            if not isinstance(value, np.ndarray):
                return _differs(who, f"the member {key!r} is read as {type(value).__name__}, not as an array")
            out[key] = numpy_bits(value)
    return _read(who, out)


def npz_checker(data: bytes) -> Outcome:
    who = "checker"
    try:
        tensors, _ = read_tensors(data, "npz")
    except Reject as exc:
        return _refused(who, exc)
    return _read(who, {k: checker_bits(t) for k, t in tensors.items()},
                 {k: (lambda t=t: _raises(Reject, t.exact)) for k, t in tensors.items()}, frozenset({"f2"}))


def _producer_call(fn: Callable, *args):
    """The producer's tensor-map reader; an exception other than InputError is a refusal too, since read_arrays
    reports it as an InputError (test_producer_reports_every_reader_exception_as_input_error)."""
    try:
        return fn(*args), None
    except InputError as exc:
        return None, exc
    except Exception as exc:
        return None, f"{type(exc).__name__} (read_arrays: InputError): {exc}"


def npz_producer(path: Path) -> Outcome:
    """The producer's npz reader both ways it runs: from the file (zipfile reads every member), and from the
    bytes read once (``FileBytes``: a stored member's array is a view of them). Both must read the same."""
    who = "producer"
    result, error = _producer_call(models._npz, path, None)
    in_place, in_place_error = _producer_call(models._npz, path, None, FileBytes(path))
    assert (error is None) == (in_place_error is None), (error, in_place_error)
    if error is not None:
        return _refused(who, error)
    assert list(result[0]) == list(in_place[0]) and result[1] == in_place[1]
    for name, read in result[0].items():
        other = in_place[0][name]
        assert (read.dtype, read.shape) == (other.dtype, other.shape)
        assert np.ascontiguousarray(read).tobytes() == np.ascontiguousarray(other).tobytes()
    tensors = result[0]
    return _read(who, {k: numpy_bits(a) for k, a in tensors.items()},
                 {k: (lambda a=a: _raises(InputError, models.exact, a)) for k, a in tensors.items()})


def npz_three(path: Path, data: bytes) -> tuple[Outcome, Outcome, Outcome]:
    path.write_bytes(data)
    return npz_runtime(path), npz_checker(data), npz_producer(path)


_NAMES = st.text(alphabet="abAB01._-/é", max_size=6).filter(lambda s: not s.endswith(".npy"))
_SHAPES = st.lists(st.integers(0, 4), max_size=3).map(tuple)


@st.composite
def bit_patterns(draw, code: str, count: int, finite: bool = False) -> np.ndarray:
    size = 8 * WIDTH[code]
    element = st.one_of(st.sampled_from(SPECIAL[code]), st.integers(0, (1 << size) - 1))
    values = draw(st.lists(element, min_size=count, max_size=count))
    if finite and code in _EXPONENT_TOP:  # clear the exponent's top bit: finite
        values = [v & ~_EXPONENT_TOP[code] for v in values]
    return np.array(values, dtype=UINT[WIDTH[code]])


@dataclass
class NpyMember:
    name: str
    data: bytes
    method: int
    zip64: bool


@st.composite
def npy_members(draw, name: str, many_dims: bool = False) -> NpyMember:
    """A .npy member; ``many_dims``: always Fortran order, 3 or 4 dimensions of 2 or 3 (else at most 3 dimensions of
    0 to 4, Fortran order only up to 2-D)."""
    code = draw(st.sampled_from(sorted(NPY_CODES)))
    shape = draw(st.lists(st.integers(2, 3), min_size=3, max_size=4).map(tuple) if many_dims else _SHAPES)
    bits = draw(bit_patterns(code, math.prod(shape)))
    if many_dims:  # distinct entries, so that C and Fortran order differ
        bits = (bits + np.arange(bits.size, dtype=bits.dtype) * 0x11).astype(bits.dtype)
    order = "|" if WIDTH[code] == 1 else draw(st.sampled_from("<>="))
    arr = array_of(code, shape, bits, order)
    fortran = many_dims or (len(shape) <= 2 and draw(st.booleans()))
    version = draw(st.sampled_from([(1, 0), (2, 0), (3, 0)]))
    if not many_dims and draw(st.booleans()):  # numpy's own writer
        out = io.BytesIO()
        np.lib.format.write_array(out, np.asfortranarray(arr) if fortran else arr, version=version)
        data = out.getvalue()
    else:
        descr = ("|" if WIDTH[code] == 1 else order) + NPY_CODES[code]
        data = npy_bytes(npy_header(descr, fortran, shape), arr.tobytes(order="F" if fortran else "C"), version,
                         pad=draw(st.booleans()))
    return NpyMember(name + ".npy", data, draw(st.sampled_from([STORED, DEFLATED, BZIP2, LZMA])), draw(st.booleans()))


@st.composite
def npz_files(draw, many_dims: bool = False) -> bytes:
    names = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
    members = [draw(npy_members(name, many_dims)) for name in names]
    data = make_zip([(m.name, m.data, m.method, m.zip64) for m in members])
    return with_zip64_end(data) if draw(st.booleans()) else data


@SETTINGS
@given(data=npz_files())
def test_generated_npz_files_read_like_numpy(tmp_path: Path, data: bytes) -> None:
    """npz archives of .npy members: float16/32/64 and ints, little/big/native endian, C or Fortran order (up to 2-D),
    0-size dimensions, .npy versions 1-3 (numpy's writer or a hand-written header), stored, deflated, bzip2 and lzma
    members, zip64 extras and zip64 end records."""
    runtime, checker, producer = npz_three(tmp_path / "g.npz", data)
    _must_read("generated npz", runtime, checker, producer)
    _judge("generated npz", runtime, checker, producer)


@settings(SETTINGS, max_examples=15)
@given(data=npz_files(many_dims=True))
def test_npz_fortran_order_beyond_two_dimensions_reads_like_numpy(tmp_path: Path, data: bytes) -> None:
    """NEW divergence: a Fortran-order member of 3 or more dimensions. numpy reads it in Fortran order; the checker's
    Tensor keeps Fortran order for 2-D tensors only and reads the entries of a 3-D one as if in C order."""
    runtime, checker, producer = npz_three(tmp_path / "f.npz", data)
    _expect("fortran 3-D", runtime, "read")
    _judge("fortran 3-D", runtime, checker, producer)


def _clean_npz() -> bytes:
    return make_zip([("A.npy", npy_bytes(npy_header("<f4", False, (2, 3)), array_of("f4", (2, 3), np.arange(6,
                     dtype=np.uint32) * 0x10001).tobytes())), ("b.npy", _npy(np.array([-0.0, 1.5], "<f8")))])


def _npy(a: np.ndarray, version: tuple | None = None) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, a, version=version)
    return out.getvalue()


_F4_BODY = np.arange(6, dtype="<f4").tobytes()


def _one(header: str | bytes, body: bytes = _F4_BODY, version: tuple = (1, 0), pad: bool = True) -> bytes:
    return make_zip([("a.npy", npy_bytes(header, body, version, pad))])


def _padded_header(total: int, version: tuple = (1, 0), text: str = npy_header("<f4", False, (2, 3))) -> bytes:
    """A header of exactly ``total`` characters: the dict, spaces, a newline."""
    raw = text.encode()
    return raw + b" " * (total - len(raw) - 1) + b"\n"


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("length", [10000, 10001, 65535])
def test_npy_header_over_numpys_limit_is_refused(tmp_path: Path, version: tuple, length: int) -> None:
    """KNOWN (b): numpy refuses a .npy header longer than max_header_size = 10000 characters (numpy.lib.format,
    ``len(header) > max_header_size`` after decoding: latin-1 for versions 1.0 and 2.0, UTF-8 for 3.0); the readers
    at b30b025 allowed 65536 bytes. At 10000 all three read."""
    header = _padded_header(length, version)
    runtime, checker, producer = npz_three(tmp_path / "h.npz", _one(header, version=version, pad=False))
    _expect(f"header {length}", runtime, "read" if length <= 10000 else "refused")
    _judge(f"header of {length} characters, version {version}", runtime, checker, producer)


def _decoy_then_zip() -> bytes:
    return _npy(np.zeros((2, 3), "<f4")) + _clean_npz()


def _safetensors_holding_zip() -> bytes:
    payload = _clean_npz()
    header = json.dumps({"z": {"dtype": "U8", "shape": [len(payload)], "data_offsets": [0, len(payload)]}}).encode()
    return struct.pack("<Q", len(header)) + header + payload


@pytest.mark.parametrize("build", [_decoy_then_zip, lambda: b"junk" + _clean_npz(),
                                   lambda: b"\x80\x02}." + _clean_npz(), _safetensors_holding_zip],
                         ids=["npy_then_zip", "junk_then_zip", "pickle_then_zip", "safetensors_holding_zip"])
def test_npz_that_does_not_start_with_a_local_header_is_refused(tmp_path: Path, build) -> None:
    """KNOWN (a): numpy.load looks at the first bytes. A complete .npy followed by a zip of tensors is read as the
    decoy array; other leading bytes (junk, a pickle, a safetensors header whose buffer is the zip) are refused as
    pickled data. zipfile, and so both readers, find the zip behind them. Both readers must refuse a file that does
    not begin with ``PK\\x03\\x04``."""
    runtime, checker, producer = npz_three(tmp_path / "p.npz", build())
    assert runtime.status in ("differs", "refused"), runtime
    _judge("polyglot", runtime, checker, producer)


def test_npy_version_3_header_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """Found beside (a)-(c): numpy decodes a version 3.0 header as UTF-8 (1.0 and 2.0 as latin-1), so a byte like
    0xff in a comment of a 3.0 header makes numpy refuse the file; the readers at b30b025 decoded every header as
    latin-1 and read it."""
    header = npy_header("<f4", False, (2, 3)).encode() + b" # \xff\n"
    runtime, checker, producer = npz_three(tmp_path / "u.npz", _one(header, version=(3, 0), pad=False))
    _expect("not utf-8", runtime, "refused")
    _judge("version 3.0 header with the byte 0xff", runtime, checker, producer)


@pytest.mark.parametrize("shape, descr, numpy_reads", [((0, 1 << 70), "<f4", False), ((0, 1 << 62, 4), "<f4", False),
                                                       ((0, 1 << 40, 1 << 40), "|u1", False),
                                                       ((0, 1 << 40), "<f4", True)],
                         ids=["0x2^70", "0x2^62x4", "0x2^40x2^40", "0x2^40"])
def test_npy_empty_array_with_huge_dimensions_is_refused_as_numpy_refuses_it(tmp_path: Path, shape, descr,
                                                                            numpy_reads) -> None:
    """NEW divergence: an empty array whose other dimensions are huge. numpy cannot build it (a dimension beyond int64,
    or a byte size beyond intp: "array is too big") and refuses the file; the checker reads an empty Tensor of that
    shape (the producer's numpy raises, which read_arrays reports). (0, 2^40) numpy reads, and so may the readers."""
    data = _one(npy_header(descr, False, shape), b"")
    runtime, checker, producer = npz_three(tmp_path / "z.npz", data)
    _expect(f"shape {shape}", runtime, "read" if numpy_reads else "refused")
    _judge(f"empty array of shape {shape}", runtime, checker, producer)


def _member_edit(data: bytes, old: bytes, new: bytes) -> bytes:
    assert old in data
    return data.replace(old, new, 1)


# label -> (builder of the file's bytes, numpy's verdict, whether both readers must read it)
NPZ_CASES: dict[str, tuple[Callable[[], bytes], str, bool]] = {
    "clean": (_clean_npz, "read", True),
    "zip64_end_record": (lambda: with_zip64_end(_clean_npz()), "read", True),
    "zip64_members": (lambda: make_zip([(n, d, STORED, True) for n, d in members_of(_clean_npz())]), "read", True),
    "bzip2_and_lzma": (lambda: make_zip([(n, d, m) for (n, d), m in zip(members_of(_clean_npz()), (BZIP2, LZMA),
                                                                         strict=True)]), "read", True),
    "data_descriptors": (lambda: streamed_zip(members_of(_clean_npz())), "read", True),
    "versions_2_and_3": (lambda: make_zip([("a.npy", _npy(np.arange(3.0), (2, 0))),
                                           ("b.npy", _npy(np.arange(3.0), (3, 0)))]), "read", True),
    "utf8_comment_in_v3_header": (lambda: _one(npy_header("<f4", False, (2, 3)).encode() + " # é\n".encode(),
                                               version=(3, 0), pad=False), "read", True),
    "latin1_comment_in_v1_header": (lambda: _one(npy_header("<f4", False, (2, 3)).encode() + b" # \xff\n",
                                                 pad=False), "read", False),
    "keys_in_other_order": (lambda: _one("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}"), "read", True),
    "archive_comment": (lambda: make_zip(members_of(_clean_npz()), comment=b"hello"), "read", False),
    "junk_after_archive": (lambda: _clean_npz() + b"junk", "read", False),
    "empty_archive": (lambda: make_zip([]), "read", False),
    # what numpy reads and FORMATS.md refuses (strictness)
    "trailing_bytes_in_member": (lambda: _one(npy_header("<f4", False, (2, 3)), _F4_BODY + b"xx"), "read", False),
    "duplicate_member": (lambda: make_zip([("a.npy", _npy(np.ones(2))), ("a.npy", _npy(np.zeros(2)))]), "read", False),
    "descr_lt_i1": (lambda: _one(npy_header("<i1", False, (3,)), b"\x01\x02\xff"), "read", False),
    "descr_lt_u1": (lambda: _one(npy_header("<u1", False, (3,)), b"\x01\x02\xff"), "read", False),
    "descr_spelled_float32": (lambda: _one(npy_header("float32", False, (2, 3))), "read", False),
    "bool_array": (lambda: make_zip([("a.npy", _npy(np.array([True, False])))]), "read", False),
    "member_without_npy_suffix": (lambda: make_zip([("a", _npy(np.ones(2)))]), "read", False),
    "complex_array": (lambda: make_zip([("a.npy", _npy(np.array([1j])))]), "read", False),
    # what numpy reads as something else
    "member_that_is_not_npy": (lambda: make_zip([("a.npy", b"not an array")]), "differs", False),
    # what numpy refuses
    "object_array": (lambda: make_zip([("a.npy", _npy(np.array([None, 1], dtype=object)))]), "refused", False),
    "header_not_a_dict": (lambda: _one("['descr', 'fortran_order', 'shape']"), "refused", False),
    "fortran_order_int": (lambda: _one("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }"), "refused", False),
    "shape_list": (lambda: _one("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }"), "refused", False),
    "shape_bool": (lambda: _one("{'descr': '<f4', 'fortran_order': False, 'shape': (True, 6), }"), "refused", False),
    "shape_float": (lambda: _one("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3), }"), "refused", False),
    "version_1_1": (lambda: _member_edit(_one(npy_header("<f4", False, (2, 3))), b"NUMPY\x01\x00", b"NUMPY\x01\x01"),
                    "refused", False),
    "header_length_past_member": (lambda: _member_edit(_one(npy_header("<f4", False, (2, 3))), b"NUMPY\x01\x00v\x00",
                                                       b"NUMPY\x01\x00\xff\x00"), "refused", False),
    "body_short": (lambda: _one(npy_header("<f4", False, (2, 3)), _F4_BODY[:-1]), "refused", False),
    "crc_mismatch": (lambda: patch_central(_clean_npz(), "A.npy", 16, b"\0\0\0\0"), "refused", False),
    "local_name_differs": (lambda: patch_central(_clean_npz(), "A.npy", 0, b"B", local=30), "refused", False),
    "encrypted_flag": (lambda: patch_central(_clean_npz(), "A.npy", 8, b"\x01\x00"), "refused", False),
}


def _adversarial(label: str, outcomes: tuple, verdict: str, must_read: bool) -> None:
    """An adversarial case: the runtime's verdict is the one the case claims (so the case is what it says), the
    project's readers read it when they must, and all three agree bit for bit or both project readers refuse."""
    runtime, checker, producer = outcomes
    _expect(label, runtime, verdict)
    if must_read:
        _must_read(label, checker, producer)
    _judge(label, runtime, checker, producer)


@pytest.mark.parametrize("label", list(NPZ_CASES))
def test_adversarial_npz(tmp_path: Path, label: str) -> None:
    build, verdict, must_read = NPZ_CASES[label]
    runtime, checker, producer = npz_three(tmp_path / f"{label}.npz", build())
    _adversarial(label, (runtime, checker, producer), verdict, must_read)


def test_npz_truncations_and_appended_bytes(tmp_path: Path) -> None:
    """Every truncation of a small archive, and bytes put before or after it."""
    data = _clean_npz()
    path = tmp_path / "t.npz"
    variants = [data[:cut] for cut in range(len(data))]
    variants += [prefix + data for prefix in (b"\0", b"PK\x03\x04", b"\x93NUMPY\x01\x00")]
    variants += [data + suffix for suffix in (b"\0", b"PK\x05\x06", data)]
    refused = 0
    for i, variant in enumerate(variants):
        runtime, checker, producer = npz_three(path, variant)
        _judge(f"variant {i}", runtime, checker, producer)
        refused += runtime.status != "read"
    assert refused >= len(data)  # every truncation is refused by numpy


# ============================================================================================== safetensors

SAFE_DTYPE = {"f2": "F16", "bf16": "BF16", "f4": "F32", "f8": "F64", "i1": "I8", "i2": "I16", "i4": "I32", "i8": "I64",
              "u1": "U8"}


def safetensors_bytes(header: dict | bytes, buffer: bytes, ensure_ascii: bool = True, padding: int = 0) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header, ensure_ascii=ensure_ascii).encode()
    raw += b" " * padding
    return struct.pack("<Q", len(raw)) + raw + buffer


def safetensors_runtime(path: Path, data: bytes) -> Outcome:
    """safetensors.numpy.load (safetensors.torch.load when a BF16 tensor is declared) and safe_open, which agree."""
    size = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else 0
    bf16 = b'"BF16"' in data[8:8 + min(size, len(data))]
    framework = "pt" if bf16 else "np"
    who = f"safetensors ({'torch' if bf16 else 'numpy'})"
    convert = torch_bits if bf16 else numpy_bits
    try:
        loaded = (safetensors_torch if bf16 else safetensors_numpy).load(data)
        tensors = {name: convert(value) for name, value in loaded.items()}
        with safetensors.safe_open(str(path), framework=framework) as fh:
            opened = {name: convert(fh.get_tensor(name)) for name in fh.keys()}  # noqa: SIM118 (not a dict)
    except Exception as exc:
        return _refused(who, exc)
    assert set(opened) == set(tensors) and all(opened[n].same(tensors[n]) for n in tensors), "load and safe_open differ"
    return _read(who, tensors)


def safetensors_checker(data: bytes) -> Outcome:
    who = "checker"
    try:
        tensors, _ = read_tensors(data, "safetensors")
    except Reject as exc:
        return _refused(who, exc)
    return _read(who, {k: checker_bits(t) for k, t in tensors.items()},
                 {k: (lambda t=t: _raises(Reject, t.exact)) for k, t in tensors.items()}, frozenset({"f2"}))


def safetensors_producer(path: Path, codes: dict) -> Outcome:
    who = "producer"
    result, error = _producer_call(models._safetensors, path)
    if error is not None:
        return _refused(who, error)
    tensors = result[0]
    return _read(who, {k: producer_bits(a, codes.get(k, "")) for k, a in tensors.items()},
                 {k: (lambda a=a: _raises(InputError, models.exact, a)) for k, a in tensors.items()})


def safetensors_three(path: Path, data: bytes) -> tuple[Outcome, Outcome, Outcome]:
    path.write_bytes(data)
    runtime = safetensors_runtime(path, data)
    return runtime, safetensors_checker(data), safetensors_producer(
        path, {name: b.code for name, b in runtime.tensors.items()})


_SAFE_NAMES = st.text(st.characters(codec="utf-8"), max_size=5).filter(lambda s: s != "__metadata__")


@st.composite
def safetensors_files(draw) -> bytes:
    names = draw(st.lists(_SAFE_NAMES, max_size=4, unique=True))
    entries = {}
    for name in names:
        code = draw(st.sampled_from(sorted(SAFE_DTYPE)))
        shape = draw(_SHAPES)
        entries[name] = (code, shape, draw(bit_patterns(code, math.prod(shape))))
    metadata = draw(st.none() | st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2))
    if draw(st.booleans()):  # the library's writer (which writes no JSON for no tensors and empty metadata)
        metadata = metadata or None
        tensors = {}
        for name, (code, shape, bits) in entries.items():
            base = torch.from_numpy(bits.view(SIGNED[WIDTH[code]]).copy()).view(TORCH_DTYPE[code])
            tensors[name] = base.reshape(shape)
        return safetensors_torch.save(tensors, metadata)
    header: dict = {} if metadata is None else {"__metadata__": metadata}
    buffer = b""
    for name in draw(st.permutations(list(entries))):  # the buffer's order need not be the header's
        code, shape, bits = entries[name]
        raw = bits.astype(np.dtype(UINT[WIDTH[code]]).newbyteorder("<")).tobytes()
        header[name] = {"dtype": SAFE_DTYPE[code], "shape": list(shape), "data_offsets": [len(buffer),
                                                                                          len(buffer) + len(raw)]}
        buffer += raw
    order = draw(st.permutations(list(header)))
    return safetensors_bytes({key: header[key] for key in order}, buffer, draw(st.booleans()),
                             draw(st.integers(0, 9)))


@SETTINGS
@given(data=safetensors_files())
def test_generated_safetensors_files_read_like_safetensors(tmp_path: Path, data: bytes) -> None:
    """F16, BF16, F32, F64, I8-I64 and U8 tensors with 0-size dimensions and edge bit patterns, any header and buffer
    order, optional metadata, ASCII or UTF-8 names, header padding; or the library's own writer."""
    runtime, checker, producer = safetensors_three(tmp_path / "g.safetensors", data)
    _must_read("generated safetensors", runtime, checker, producer)
    _judge("generated safetensors", runtime, checker, producer)


_F32 = np.array([0.0, -0.0, 1.5], "<f4").tobytes()
_ENTRY = b'{"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}'


def _st(header: bytes, buffer: bytes = _F32) -> bytes:
    return struct.pack("<Q", len(header)) + header + buffer


def test_safetensors_name_with_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    """NEW divergence: the JSON escape \\ud800 alone is no character. safetensors (serde_json) refuses the header;
    Python's json reads a str holding a lone surrogate, and both readers read the tensor under that name."""
    runtime, checker, producer = safetensors_three(tmp_path / "s.safetensors", _st(b'{"\\ud800": ' + _ENTRY + b"}"))
    _expect("lone surrogate", runtime, "refused")
    _judge("lone surrogate", runtime, checker, producer)


@pytest.mark.parametrize("header", [b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [-0, 12]}}',
                                    b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}, '
                                    b'"e": {"dtype": "F32", "shape": [-0, 2], "data_offsets": [12, 12]}}'],
                         ids=["offset", "shape"])
def test_safetensors_negative_zero_is_refused(tmp_path: Path, header: bytes) -> None:
    """NEW divergence: serde_json reads -0 as a float, which is no usize, and safetensors refuses the header; Python's
    json reads the int 0 and both readers read the file."""
    runtime, checker, producer = safetensors_three(tmp_path / "z.safetensors", _st(header))
    _expect("-0", runtime, "refused")
    _judge("-0", runtime, checker, producer)


@pytest.mark.parametrize("shape", [[0, 1 << 64], [0, 1 << 63], [0, 1 << 40, 1 << 40]], ids=["2^64", "2^63",
                                                                                            "2^40x2^40"])
def test_safetensors_empty_tensor_with_huge_dimensions_is_refused(tmp_path: Path, shape: list) -> None:
    """NEW divergence: an empty tensor whose other dimensions are huge. safetensors refuses a dimension beyond u64, and
    numpy (through safetensors.numpy) one beyond int64 or a byte size beyond intp; the checker reads an empty Tensor of
    that shape (the producer's numpy raises, which read_arrays reports)."""
    empty = {"dtype": "U8", "shape": shape, "data_offsets": [12, 12]}
    header = json.dumps({"a": json.loads(_ENTRY), "e": empty}).encode()
    runtime, checker, producer = safetensors_three(tmp_path / "h.safetensors", _st(header))
    _expect(f"shape {shape}", runtime, "refused")
    _judge(f"empty tensor of shape {shape}", runtime, checker, producer)


@pytest.mark.parametrize("length", [100_000_000, 100_000_001], ids=["at_limit", "over_limit"])
def test_safetensors_header_over_the_libraries_limit_is_refused(tmp_path: Path, length: int) -> None:
    """NEW divergence: safetensors refuses a header longer than 100,000,000 bytes (MAX_HEADER_SIZE, "header too
    large") before parsing it; the readers parse any header that fits in the file."""
    header = b'{"a": ' + _ENTRY + b"}"
    runtime, checker, producer = safetensors_three(tmp_path / "big.safetensors",
                                                   _st(header + b" " * (length - len(header))))
    _expect(f"header of {length} bytes", runtime, "read" if length <= 100_000_000 else "refused")
    _judge(f"header of {length} bytes", runtime, checker, producer)


def _with_entry(**entries: bytes) -> bytes:
    return b"{" + b", ".join(b'"' + k.encode() + b'": ' + v for k, v in entries.items()) + b"}"


SAFETENSORS_CASES: dict[str, tuple[Callable[[], bytes], str, bool]] = {
    "clean": (lambda: _st(b'{"a": ' + _ENTRY + b"}"), "read", True),
    "padding_spaces": (lambda: _st(b'{"a": ' + _ENTRY + b"}" + b" " * 7), "read", True),
    "leading_whitespace": (lambda: _st(b' \n{"a": ' + _ENTRY + b"}"), "read", False),
    "whitespace_inside": (lambda: _st(b'{ "a" :{"dtype":"F32","shape":[ 3 ],"data_offsets":[0,12]}\t}'), "read", True),
    "escaped_name_and_dtype": (lambda: _st(b'{"\\u0061": {"dtype": "F\\u00332", "shape": [3], '
                                           b'"data_offsets": [0, 12]}}'), "read", True),
    "surrogate_pair_name": (lambda: _st(b'{"\\ud83d\\ude00": ' + _ENTRY + b"}"), "read", True),
    "nul_in_name": (lambda: _st(b'{"\\u0000": ' + _ENTRY + b"}"), "read", True),
    "empty_name": (lambda: _st(b'{"": ' + _ENTRY + b"}"), "read", True),
    "empty_tensor_first": (lambda: _st(_with_entry(a=_ENTRY, e=b'{"dtype": "F32", "shape": [0], '
                                                             b'"data_offsets": [0, 0]}')), "read", True),
    "empty_tensor_last": (lambda: _st(_with_entry(a=_ENTRY, e=b'{"dtype": "F32", "shape": [0, 5], '
                                                            b'"data_offsets": [12, 12]}')), "read", True),
    "only_metadata": (lambda: _st(b'{"__metadata__": {"k": "v"}}', b""), "read", True),
    "empty_header": (lambda: _st(b"{}", b""), "read", True),
    "scalar": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}', _F32[:4]), "read", True),
    # what safetensors reads and FORMATS.md refuses (strictness)
    "metadata_null": (lambda: _st(b'{"__metadata__": null, "a": ' + _ENTRY + b"}"), "read", False),
    "extra_key_in_entry": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12], "x": 1}}'),
                           "read", False),
    "duplicate_name": (lambda: _st(b'{"a": ' + _ENTRY + b', "a": ' + _ENTRY + b"}"), "read", False),
    "unsupported_dtype_u16": (lambda: _st(b'{"a": {"dtype": "U16", "shape": [6], "data_offsets": [0, 12]}}'), "read",
                              False),
    "unsupported_dtype_bool": (lambda: _st(b'{"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}',
                                           b"\x00\x01"), "read", False),
    # what safetensors refuses
    "gap": (lambda: _st(_with_entry(a=b'{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}',
                                    b=b'{"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}')), "refused", False),
    "overlap": (lambda: _st(_with_entry(a=b'{"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}',
                                        b=b'{"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}')), "refused",
                False),
    "empty_inside_another": (lambda: _st(_with_entry(a=_ENTRY, e=b'{"dtype": "F32", "shape": [0], '
                                                               b'"data_offsets": [4, 4]}')), "refused", False),
    "trailing_buffer_bytes": (lambda: _st(b'{"a": ' + _ENTRY + b"}", _F32 + b"\0"), "refused", False),
    "short_buffer": (lambda: _st(b'{"a": ' + _ENTRY + b"}", _F32[:-1]), "refused", False),
    "size_mismatch": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}}'), "refused",
                      False),
    "nul_after_header": (lambda: _st(b'{"a": ' + _ENTRY + b"}\x00"), "refused", False),
    "bom": (lambda: _st(b'\xef\xbb\xbf{"a": ' + _ENTRY + b"}"), "refused", False),
    "not_utf8": (lambda: _st(b'{"\xff": ' + _ENTRY + b"}"), "refused", False),
    "nan_constant": (lambda: _st(b'{"a": ' + _ENTRY + b', "z": NaN}'), "refused", False),
    "float_offset": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12.0]}}'), "refused",
                     False),
    "exponent_offset": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12e0]}}'), "refused",
                        False),
    "three_offsets": (lambda: _st(b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12, 12]}}'), "refused",
                      False),
    "metadata_not_strings": (lambda: _st(b'{"__metadata__": {"k": 1}, "a": ' + _ENTRY + b"}"), "refused", False),
    "metadata_twice": (lambda: _st(b'{"__metadata__": {}, "__metadata__": {}, "a": ' + _ENTRY + b"}"), "refused",
                       False),
    "header_array": (lambda: _st(b"[]", b""), "refused", False),
    "trailing_comma": (lambda: _st(b'{"a": ' + _ENTRY + b",}"), "refused", False),
    "control_character": (lambda: _st(b'{"a\x01": ' + _ENTRY + b"}"), "refused", False),
    "header_length_past_end": (lambda: struct.pack("<Q", 1000) + b'{"a": ' + _ENTRY + b"}" + _F32, "refused", False),
    "header_length_huge": (lambda: struct.pack("<Q", (1 << 64) - 1) + b"{}", "refused", False),
    "empty_file": (lambda: b"", "refused", False),
}


@pytest.mark.parametrize("label", list(SAFETENSORS_CASES))
def test_adversarial_safetensors(tmp_path: Path, label: str) -> None:
    build, verdict, must_read = SAFETENSORS_CASES[label]
    runtime, checker, producer = safetensors_three(tmp_path / f"{label}.safetensors", build())
    _adversarial(label, (runtime, checker, producer), verdict, must_read)


def test_safetensors_truncations_and_appended_bytes(tmp_path: Path) -> None:
    data = _st(_with_entry(a=_ENTRY, b=b'{"dtype": "BF16", "shape": [2], "data_offsets": [12, 16]}'), _F32 + b"\x80\x7f"
               b"\x01\xff")
    variants = [data[:cut] for cut in range(len(data))] + [b"\0" + data, b" " + data, data + b"\0", data + data]
    refused = 0
    for i, variant in enumerate(variants):
        runtime, checker, producer = safetensors_three(tmp_path / "t.safetensors", variant)
        _judge(f"variant {i}", runtime, checker, producer)
        refused += runtime.status != "read"
    assert refused == len(variants)


# ==================================================================================================== torch


def torch_saved(obj) -> bytes:
    out = io.BytesIO()
    torch.save(obj, out)
    return out.getvalue()


def torch_runtime(data: bytes, map_location: str | None = None) -> Outcome:
    who = "torch.load(weights_only=True)"
    try:
        obj = torch.load(io.BytesIO(data), weights_only=True, map_location=map_location)
    except Exception as exc:
        return _refused(who, exc)
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()):
        return _differs(who, f"torch reads a {type(obj).__name__} that is not a state dict")
    elsewhere = [(k, v.device.type) for k, v in obj.items() if v.device.type != "cpu"]
    if elsewhere:
        return _differs(who, f"{elsewhere[0][0]!r} is a tensor on the {elsewhere[0][1]} device, without values here")
    return _read(who, {k: torch_bits(v) for k, v in obj.items()})


def torch_checker(data: bytes) -> Outcome:
    who = "checker"
    try:
        tensors = checker_state_dict(data)
    except Reject as exc:
        return _refused(who, exc)
    return _read(who, {k: checker_bits(t) for k, t in tensors.items()},
                 {k: (lambda t=t: _raises(Reject, t.exact)) for k, t in tensors.items()}, frozenset({"f2"}))


def torch_producer(path: Path, codes: dict) -> Outcome:
    who = "producer"
    try:
        tensors = producer_state_dict(path)
    except InputError as exc:
        return _refused(who, exc)
    return _read(who, {k: producer_bits(a, codes.get(k, "")) for k, a in tensors.items()},
                 {k: (lambda a=a: _raises(InputError, models.exact, a)) for k, a in tensors.items()})


def torch_three(path: Path, data: bytes, map_location: str | None = None) -> tuple[Outcome, Outcome, Outcome]:
    path.write_bytes(data)
    runtime = torch_runtime(data, map_location)
    return runtime, torch_checker(data), torch_producer(path, {k: b.code for k, b in runtime.tensors.items()})


_STORAGE_SWAP = {"HalfStorage": 2, "BFloat16Storage": 2, "FloatStorage": 4, "DoubleStorage": 8, "LongStorage": 8,
                 "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1}


def storage_classes(pkl: bytes) -> dict[str, str]:
    """{storage key: storage class} of a torch.save pickle, following the memo (a class named once is fetched again)."""
    memo: dict = {}
    pushed: list = []
    last = None
    out = {}
    for op, arg, _ in pickletools.genops(pkl):
        name = op.name
        if name == "MARK":
            pushed, last = [], None
        elif name in ("BINUNICODE", "GLOBAL", "BININT", "BININT1", "BININT2", "LONG1"):
            pushed.append(arg)
            last = arg
        elif name in ("BINPUT", "LONG_BINPUT"):
            memo[arg] = last
        elif name in ("BINGET", "LONG_BINGET"):
            last = memo.get(arg)
            pushed.append(last)
        elif name == "TUPLE" and len(pushed) == 5 and pushed[0] == "storage":
            out[pushed[2]] = pushed[1].split(" ")[1]
            last = None
        else:
            last = None
    return out


def big_endian(data: bytes) -> bytes:
    """The archive as a big-endian machine's torch.save writes it: byteorder 'big', every storage byte-swapped."""
    members = members_of(data)
    pkl = next(body for name, body in members if name.endswith("/data.pkl"))
    classes = storage_classes(pkl)
    out = []
    for name, body in members:
        rest = name.partition("/")[2]
        if rest == "byteorder":
            body = b"big"
        elif rest.startswith("data/"):
            width = _STORAGE_SWAP[classes[rest[5:]]]
            if width > 1:
                body = np.frombuffer(body, dtype=UINT[width]).byteswap().tobytes()
        out.append((name, body))
    return make_zip(out)


@st.composite
def torch_archives(draw) -> bytes:
    names = draw(st.lists(st.text(alphabet="ab01._é", min_size=1, max_size=5), min_size=1, max_size=4, unique=True))
    state = {}
    for name in names:
        code = draw(st.sampled_from(sorted(TORCH_DTYPE)))
        shape = draw(_SHAPES)
        bits = draw(bit_patterns(code, math.prod(shape)))
        base = torch.from_numpy(bits.view(SIGNED[WIDTH[code]]).copy()).view(TORCH_DTYPE[code]).reshape(shape)
        kinds = ["plain"] + (["transpose"] if base.dim() >= 2 else []) + (["step"] if base.dim() and shape[-1] >= 2
                                                                           else []) \
            + (["offset", "shared"] if base.numel() >= 2 else []) + (["expand"] if base.dim() == 1 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "transpose":
            base = base.transpose(0, 1)
        elif kind == "step":
            base = base[..., ::2]
        elif kind == "offset":
            base = base.reshape(-1)[1:]
        elif kind == "expand":
            base = base.unsqueeze(0).expand(2, -1)
        elif kind == "shared":
            state[name + "~"] = base.reshape(-1)[::2]
        state[name] = base
    data = torch_saved(state)
    variant = draw(st.sampled_from(["saved", "rezipped", "zip64", "big_endian"]))
    if variant == "rezipped":
        data = make_zip([(n, d, draw(st.sampled_from([STORED, DEFLATED]))) for n, d in members_of(data)])
    elif variant == "zip64":
        data = with_zip64_end(make_zip([(n, d, STORED, draw(st.booleans())) for n, d in members_of(data)]))
    elif variant == "big_endian":
        data = big_endian(data)
    return data


@SETTINGS
@given(data=torch_archives())
def test_generated_torch_archives_read_like_torch(tmp_path: Path, data: bytes) -> None:
    """State dicts of float16, bfloat16, float32, float64 and int tensors (0-size dimensions, edge bit patterns,
    transposed, stepped, offset, expanded and shared views) as torch.save writes them (zip64), re-zipped stored or
    deflated, with zip64 extras and end records, or byte-swapped to big-endian."""
    runtime, checker, producer = torch_three(tmp_path / "g.pt", data)
    _must_read("generated torch", runtime, checker, producer)
    _judge("generated torch", runtime, checker, producer)


def _clean_torch() -> bytes:
    return torch_saved({"w": torch.tensor([[1.5, -0.0, 3.0], [4.0, 5.0, 6.0]]),
                        "b": torch.tensor([1, 2], dtype=torch.int8)})


def _edit_members(data: bytes, edit: Callable[[str, bytes], bytes | None]) -> bytes:
    out = []
    for name, body in members_of(data):
        new = edit(name.partition("/")[2], body)
        if new is not None:
            out.append((name, new))
    return make_zip(out)


def _location(tag: bytes) -> bytes:
    def edit(rest: str, body: bytes) -> bytes:
        if rest != "data.pkl":
            return body
        old = b"X\x03\x00\x00\x00cpu"
        assert body.count(old) >= 1
        return body.replace(old, b"X" + struct.pack("<I", len(tag)) + tag)

    return _edit_members(_clean_torch(), edit)


@pytest.mark.parametrize("tag", [b"meta", b"bogus", b"CPU", b"cpu:0", b"cpu "])
def test_torch_storage_location_torch_does_not_restore_is_refused(tmp_path: Path, tag: bytes) -> None:
    """NEW divergence: the location in a storage's persistent id. torch restores 'cpu' here; 'meta' makes tensors on
    the meta device, which hold no values (read differently); an unknown tag ('bogus', 'CPU', 'cpu:0') is refused
    ("don't know how to restore data location"). Both readers ignore the location and read the storage's bytes."""
    runtime, checker, producer = torch_three(tmp_path / "loc.pt", _location(tag))
    _expect(f"location {tag!r}", runtime, "differs" if tag == b"meta" else "refused")
    _judge(f"location {tag!r}", runtime, checker, producer)


def test_torch_cuda_location_reads_as_torch_reads_it_on_the_cpu(tmp_path: Path) -> None:
    """A checkpoint saved from a GPU ('cuda:0', what most checkpoints say) holds the same values on any machine:
    torch.load refuses it without CUDA unless told map_location='cpu'. The readers read it machine-independently; they
    must then agree with that reading (or refuse)."""
    runtime, checker, producer = torch_three(tmp_path / "cuda.pt", _location(b"cuda:0"), map_location="cpu")
    _expect("cuda:0 mapped to cpu", runtime, "read")
    _judge("cuda:0", runtime, checker, producer)


@pytest.mark.parametrize("version", [None, b"0\n", b"11\n", b"99\n", b"", b"1\n", b"10\n", b"3"],
                         ids=["absent", "0", "11", "99", "empty", "1", "10", "3_without_newline"])
def test_torch_version_record_torch_refuses_is_refused(tmp_path: Path, version: bytes | None) -> None:
    """NEW divergence: torch's reader requires the member P/version and reads only versions 1 to 10 (kMin/kMax
    supported file format version; 'Attempted to read a PyTorch file with version 11'); both readers ignore it."""
    def edit(rest: str, body: bytes) -> bytes | None:
        return (None if version is None else version) if rest == "version" else body

    runtime, checker, producer = torch_three(tmp_path / "v.pt", _edit_members(_clean_torch(), edit))
    reads = version in (b"1\n", b"10\n", b"3")
    _expect(f"version {version!r}", runtime, "read" if reads else "refused")
    if reads:
        _must_read(f"version {version!r}", checker, producer)
    _judge(f"version {version!r}", runtime, checker, producer)


def _flip_storage_byte(data: bytes) -> bytes:
    at = data.index(np.array([1.5, -0.0], "<f4").tobytes())
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]


TORCH_CASES: dict[str, tuple[Callable[[], bytes], str, bool]] = {
    "clean": (_clean_torch, "read", True),
    "rezipped_stored": (lambda: make_zip(members_of(_clean_torch())), "read", True),
    "deflated": (lambda: make_zip([(n, d, DEFLATED) for n, d in members_of(_clean_torch())]), "read", True),
    "zip64_members": (lambda: make_zip([(n, d, STORED, True) for n, d in members_of(_clean_torch())]), "read", True),
    "zip64_end_record": (lambda: with_zip64_end(make_zip(members_of(_clean_torch()))), "read", True),
    "big_endian": (lambda: big_endian(_clean_torch()), "read", True),
    "no_byteorder": (lambda: _edit_members(_clean_torch(), lambda r, b: None if r == "byteorder" else b), "read", True),
    "data_descriptors": (lambda: streamed_zip(members_of(_clean_torch())), "read", False),
    # what torch reads and FORMATS.md refuses (strictness)
    "trailing_byte": (lambda: _clean_torch() + b"\0", "read", False),
    "archive_comment": (lambda: make_zip(members_of(_clean_torch()), comment=b"hi"), "read", False),
    "storage_crc_mismatch": (lambda: _flip_storage_byte(_clean_torch()), "read", False),
    "extra_member": (lambda: make_zip(members_of(_clean_torch()) + [("archive/notes.txt", b"hi")]), "read", False),
    # what torch refuses
    "bzip2_member": (lambda: make_zip([(n, d, BZIP2 if n.endswith(".format_version") else STORED)
                                       for n, d in members_of(_clean_torch())]), "refused", False),
    "junk_before": (lambda: b"junk" + _clean_torch(), "refused", False),
    "npy_before": (lambda: _npy(np.zeros(3)) + _clean_torch(), "refused", False),
    "no_data_pkl": (lambda: _edit_members(_clean_torch(), lambda r, b: None if r == "data.pkl" else b), "refused",
                    False),
    "storage_too_long": (lambda: _edit_members(_clean_torch(), lambda r, b: b + b"\0" * 4 if r == "data/0" else b),
                         "refused", False),
    "storage_missing": (lambda: _edit_members(_clean_torch(), lambda r, b: None if r == "data/0" else b), "refused",
                        False),
    "byteorder_middle": (lambda: _edit_members(_clean_torch(), lambda r, b: b"middle" if r == "byteorder" else b),
                         "refused", False),
    "pickle_protocol_4": (lambda: _edit_members(_clean_torch(), lambda r, b: b"\x80\x04\x95" + struct.pack("<Q", 2)
                                                + b"}." if r == "data.pkl" else b), "refused", False),
    "foreign_global": (lambda: _edit_members(_clean_torch(), lambda r, b: b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00"
                                             b"true\x85R." if r == "data.pkl" else b), "refused", False),
}


@pytest.mark.parametrize("label", list(TORCH_CASES))
def test_adversarial_torch(tmp_path: Path, label: str) -> None:
    build, verdict, must_read = TORCH_CASES[label]
    runtime, checker, producer = torch_three(tmp_path / f"{label}.pt", build())
    _adversarial(label, (runtime, checker, producer), verdict, must_read)


def test_torch_truncations_and_appended_bytes(tmp_path: Path) -> None:
    """Truncations (every 7th, and the last byte or end record cut off), and bytes put before or after the archive."""
    data = _clean_torch()
    cuts = [data[:cut] for cut in range(0, len(data), 7)] + [data[:-1], data[:-22]]
    refused = 0
    for i, variant in enumerate(cuts + [b"\0" + data, b"PK\x03\x04" + data, data + b"PK\x05\x06", data + data]):
        runtime, checker, producer = torch_three(tmp_path / "t.pt", variant)
        _judge(f"variant {i}", runtime, checker, producer)
        refused += i < len(cuts) and runtime.status == "refused"
    assert refused == len(cuts)  # torch refuses every truncation


# ===================================================================================================== ONNX

ONNX_TYPE = {"f4": TensorProto.FLOAT, "f2": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16, "f8": TensorProto.DOUBLE}
ROLES = ("W1", "b1", "W2", "b2")


def _roles(count: int) -> list[str]:
    """W1, b1, W2, b2, … for a chain of count / 2 layers."""
    return [f"{kind}{ell}" for ell in range(1, count // 2 + 1) for kind in ("W", "b")]
_EXAMPLES = itertools.count()


def onnx_initializer(name: str, code: str, dims: tuple, bits: np.ndarray, storage: str, files: dict) -> TensorProto:
    """An initializer with these bit patterns in raw_data, the typed field, or (storage = a location) appended to that
    external data file (``files``: location -> bytearray)."""
    t = TensorProto()
    t.name, t.data_type = name, ONNX_TYPE[code]
    t.dims.extend(dims)
    raw = bits.astype(np.dtype(UINT[WIDTH[code]]).newbyteorder("<")).tobytes()
    if storage == "raw":
        t.raw_data = raw
    elif storage == "typed":
        if code == "f4":
            t.float_data.extend(bits.view(np.float32).tolist())
        elif code == "f8":
            t.double_data.extend(bits.view(np.float64).tolist())
        else:
            t.int32_data.extend(int(b) for b in bits)
    else:
        blob = files.setdefault(storage, bytearray())
        offset = len(blob)
        blob += raw
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", storage), ("offset", str(offset)), ("length", str(len(raw)))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
    return t


def onnx_model(inits: dict[str, TensorProto], kinds: tuple[str, str], code: str, m: int, k: int,
               opset: int = 17, order: list | None = None) -> onnx.ModelProto:
    """x -> L1 -> Relu -> L2 -> y with L = gemm1 (Gemm, transB = 1), gemm0 (Gemm, transB = 0), matmul (MatMul + Add)
    or matmul_swapped (Add(C, MatMul)); ``inits`` maps the roles W1, b1, W2, b2 to initializers."""
    nodes = []
    for layer, (kind, h, out) in enumerate(zip(kinds, ("x", "r"), ("h", "y"), strict=True)):
        weight, bias = inits[ROLES[2 * layer]].name, inits[ROLES[2 * layer + 1]].name
        if kind == "gemm1":
            nodes.append(helper.make_node("Gemm", [h, weight, bias], [out], transB=1))
        elif kind == "gemm0":
            nodes.append(helper.make_node("Gemm", [h, weight, bias], [out]))
        else:
            nodes.append(helper.make_node("MatMul", [h, weight], [f"{out}_mm"]))
            pair = [bias, f"{out}_mm"] if kind == "matmul_swapped" else [f"{out}_mm", bias]
            nodes.append(helper.make_node("Add", pair, [out]))
        if layer == 0:
            nodes.append(helper.make_node("Relu", ["h"], ["r"]))
    if order is not None:
        assert sorted(order) == list(range(len(nodes)))
        nodes = [nodes[i] for i in order]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", ONNX_TYPE[code], ["N", m])],
                              [helper.make_tensor_value_info("y", ONNX_TYPE[code], ["N", k])], list(inits.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def ort_initializers(path: Path) -> dict[str, np.ndarray]:
    """onnxruntime's reading of the model's initializers: a probe model beside it (so that external locations resolve
    alike) with the same initializer protos and those initializers as its outputs (bfloat16 through an exact Cast to
    float, since onnxruntime hands no bfloat16 to numpy)."""
    model = onnx.load(str(path), load_external_data=False)
    nodes, outputs = [], []
    for t in model.graph.initializer:
        if t.data_type == TensorProto.BFLOAT16:
            nodes.append(helper.make_node("Cast", [t.name], [t.name + "~f32"], to=TensorProto.FLOAT))
            outputs.append(helper.make_tensor_value_info(t.name + "~f32", TensorProto.FLOAT, list(t.dims)))
        else:
            outputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    probe = helper.make_model(helper.make_graph(nodes, "probe", [], outputs, list(model.graph.initializer)),
                              opset_imports=[helper.make_opsetid("", 17)])
    probe.ir_version = 8
    probe_path = path.with_name(path.stem + ".probe.onnx")
    probe_path.write_bytes(probe.SerializeToString())
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    session = ort.InferenceSession(str(probe_path), options, providers=["CPUExecutionProvider"])
    values = session.run(None, {})
    out = {}
    for t, value in zip(model.graph.initializer, values, strict=True):
        if t.data_type == TensorProto.BFLOAT16:
            value = (np.asarray(value, np.float32).view(np.uint32) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16)
        out[t.name] = np.asarray(value)
    return out


def onnx_runtime(path: Path, roles: dict[str, tuple[str, bool]]) -> Outcome:
    """onnx.load + numpy_helper.to_array for the initializers, which onnxruntime must read alike; ``roles``: role ->
    (initializer, transposed), W = Bᵀ for a transposed layer."""
    try:
        model = onnx.load(str(path))
        arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    except Exception as exc:
        return _refused("onnx.load", exc)
    try:
        theirs = ort_initializers(path)
    except Exception as exc:
        return _refused("onnxruntime", exc)
    for name, value in arrays.items():
        if not numpy_bits(value).same(numpy_bits(theirs[name])):
            return _differs("onnx", f"onnxruntime reads the initializer {name!r} differently from onnx")
    missing = [name for name, _ in roles.values() if name not in arrays]
    if missing:
        return _differs("onnx", f"the model onnx reads has no initializer {missing[0]!r}: it is another network")
    return _read("onnx.load + onnxruntime", {
        f"{role}={name}": numpy_bits(arrays[name].T if transposed else arrays[name])
        for role, (name, transposed) in roles.items()})


def onnx_checker(path: Path) -> Outcome:
    who = "checker"
    data = path.read_bytes()
    try:
        tensors, names, *_ = checker_read_onnx(data, InputFile(data, str(path)).sibling)
    except Reject as exc:
        return _refused(who, exc)
    keys = [f"{role}={name}" for role, name in zip(_roles(len(names)), names, strict=True)]
    return _read(who, {key: checker_bits(t) for key, t in zip(keys, tensors, strict=True)},
                 {key: (lambda t=t: _raises(Reject, t.exact)) for key, t in zip(keys, tensors, strict=True)},
                 frozenset({"f2"}))


def onnx_producer(path: Path, codes: dict) -> Outcome:
    who = "producer"
    try:
        chain = producer_read_onnx(path)
    except InputError as exc:
        return _refused(who, exc)
    arrays, names = [a for pair in chain.layers for a in pair], chain.names
    keys = [f"{role}={name}" for role, name in zip(_roles(len(names)), names, strict=True)]
    return _read(who, {key: producer_bits(a, codes.get(key, "")) for key, a in zip(keys, arrays, strict=True)})


def onnx_three(path: Path, roles: dict[str, tuple[str, bool]]) -> tuple[Outcome, Outcome, Outcome]:
    runtime = onnx_runtime(path, roles)
    return runtime, onnx_checker(path), onnx_producer(path, {k: b.code for k, b in runtime.tensors.items()})


@dataclass
class OnnxCase:
    folder: Path
    path: Path
    roles: dict


def write_onnx(folder: Path, model: onnx.ModelProto, files: dict, roles: dict) -> OnnxCase:
    folder.mkdir(parents=True)
    for location, blob in files.items():
        (folder / location).parent.mkdir(parents=True, exist_ok=True)
        (folder / location).write_bytes(bytes(blob))
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return OnnxCase(folder, path, roles)


@st.composite
def onnx_files(draw, root: Path) -> OnnxCase:
    code = draw(st.sampled_from(sorted(ONNX_TYPE)))
    m, n, k = draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 3))
    kinds = tuple(draw(st.sampled_from(["gemm1", "gemm0", "matmul", "matmul_swapped"])) for _ in range(2))
    finite = draw(st.booleans())
    # initializer names (from letters that no value name of the chain uses)
    names = draw(st.lists(st.text(alphabet="wbé._0", min_size=1, max_size=4), min_size=4, max_size=4, unique=True))
    files: dict = {}
    inits, roles = {}, {}
    for role, name, dims, transposed in zip(ROLES, names, ((n, m), (n,), (k, n), (k,)),
                                            (kinds[0] != "gemm1", False, kinds[1] != "gemm1", False), strict=True):
        stored = dims[::-1] if transposed else dims
        bits = draw(bit_patterns(code, math.prod(stored), finite))
        storage = draw(st.sampled_from(["raw", "typed", "w.bin", "w.bin", "data/x.bin"]))
        inits[role] = onnx_initializer(name, code, stored, bits, storage, files)
        roles[role] = (name, transposed)
    for location in files:  # the last tensor of a file may leave out its length (the rest of the file), the first
        in_file = [t for t in inits.values() if t.external_data and t.external_data[0].value == location]
        if draw(st.booleans()):
            del in_file[-1].external_data[2]
        if draw(st.booleans()):  # offset 0, the default
            del in_file[0].external_data[1]
    order = draw(st.permutations(range(5 - sum(kind.startswith("gemm") for kind in kinds))))
    model = onnx_model(inits, kinds, code, m, k, draw(st.integers(13, 21)), list(order))
    return write_onnx(root / f"example{next(_EXAMPLES)}", model, files, roles)


@SETTINGS
@given(data=st.data())
def test_generated_onnx_initializers_read_like_onnx_and_onnxruntime(tmp_path: Path, data) -> None:
    """Gemm (transB 0 or 1) or MatMul + Add layers over FLOAT, FLOAT16, BFLOAT16 and DOUBLE initializers (0-size
    dimensions, edge bit patterns) in raw_data, the typed field or external data files (offsets, lengths or the rest
    of the file), nodes in any order. The producer refuses NaN and infinite weights (FORMATS.md); otherwise all read."""
    case = data.draw(onnx_files(tmp_path))
    runtime, checker, producer = onnx_three(case.path, case.roles)
    _must_read("generated onnx", runtime, checker)
    nonfinite = not all(finite(bits) for bits in runtime.tensors.values())
    assert producer.status == ("refused" if nonfinite else "read"), (nonfinite, producer.detail)
    _judge("generated onnx", runtime, checker, producer)


_W1 = np.array([[0.0, -0.0], [1.5, -2.0], [3.0, 4.0]], np.float32)  # (n, m) = (3, 2)
_SMALL = {"W1": _W1, "b1": np.array([0.0, 1.0, -1.0], np.float32), "W2": np.ones((1, 3), np.float32),
          "b2": np.array([0.5], np.float32)}
_SMALL_ROLES = {role: (role, False) for role in ROLES}


def small_onnx(folder: Path, w1_entries: dict | None = None, w1_file: str | None = None, edit=None,
               setup: Callable[[Path], None] | None = None) -> OnnxCase:
    """A Gemm-Relu-Gemm model of float32 initializers; W1 in external data with these entries (the bytes at
    ``w1_file``, the location by default), ``edit`` applied to W1's proto, ``setup`` run on the folder (links)."""
    inits = {role: numpy_helper.from_array(value, role) for role, value in _SMALL.items()}
    files = {}
    if w1_entries is not None:
        t = inits["W1"]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for key, value in w1_entries.items():
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        target = w1_file or w1_entries["location"]
        if setup is None:
            files[target] = bytearray(_W1.astype("<f4").tobytes())
    if edit is not None:
        edit(inits["W1"])
    case = write_onnx(folder, onnx_model(inits, ("gemm1", "gemm1"), "f4", 2, 1), files, _SMALL_ROLES)
    if setup is not None:
        setup(folder)
    return case


@pytest.mark.parametrize("tag", ["*/_ORT_MEM_ADDR_/*", "*/_ORT_NATIVE_ENDIAN_MEM_ADDR_/*"],
                         ids=["KNOWN_c_ort_mem_addr", "NEW_ort_native_endian_mem_addr"])
def test_onnx_external_data_at_a_location_onnxruntime_reserves_is_refused(tmp_path: Path, tag: str) -> None:
    """KNOWN (c) and NEW: onnxruntime reads the location '*/_ORT_MEM_ADDR_/*' (and '*/_ORT_NATIVE_ENDIAN_MEM_ADDR_/*',
    its second in-memory marker) as "offset is a memory address" and refuses it in a model file ("references an ORT
    in-memory address marker"); onnx.load reads the file at that relative path, and so do both readers."""
    case = small_onnx(tmp_path / "m", {"location": tag, "offset": "0", "length": "24"})
    assert onnx.load(str(case.path)).graph.initializer  # onnx reads the file at that path
    runtime, checker, producer = onnx_three(case.path, case.roles)
    _expect(tag, runtime, "refused")
    _judge(tag, runtime, checker, producer)


def _symlinked_file(folder: Path) -> None:
    (folder / "real.bin").write_bytes(_W1.tobytes())
    os.symlink("real.bin", folder / "w.bin")


def _symlinked_folder(folder: Path) -> None:
    (folder / "real").mkdir()
    (folder / "real" / "w.bin").write_bytes(_W1.tobytes())
    os.symlink("real", folder / "d")


def _hard_linked_file(folder: Path) -> None:
    (folder / "real.bin").write_bytes(_W1.tobytes())
    os.link(folder / "real.bin", folder / "w.bin")


@pytest.mark.parametrize("setup, location", [(_symlinked_file, "w.bin"), (_symlinked_folder, "d/w.bin"),
                                             (_hard_linked_file, "w.bin")],
                         ids=["symlinked_file", "symlinked_folder", "hard_linked_file"])
def test_onnx_external_data_through_a_link_is_refused_as_onnx_refuses_it(tmp_path: Path, setup, location) -> None:
    """NEW divergence: onnx.load (onnx >= 1.17's external data checks) refuses external data reached through a
    symbolic link, even one inside the model's folder, and a data file with more than one hard link; both readers
    read it (they refuse only links that lead outside the folder). onnxruntime reads it (same values)."""
    case = small_onnx(tmp_path / "m", {"location": location}, setup=setup)
    runtime, checker, producer = onnx_three(case.path, case.roles)
    _expect(location, runtime, "refused")
    _judge(f"{setup.__name__} {location}", runtime, checker, producer)


@pytest.mark.parametrize("m, onnx_reads", [(1 << 62, False), (1 << 40, True)], ids=["0x2^62", "0x2^40"])
def test_onnx_empty_initializer_with_huge_dimensions_is_refused_as_onnx_refuses_it(tmp_path: Path, m: int,
                                                                                   onnx_reads: bool) -> None:
    """NEW divergence: a network with no hidden unit and 2^62 inputs, W1 of dims (0, 2^62) with empty raw_data.
    onnx.numpy_helper.to_array cannot build that array ("array is too big") and refuses it; the checker reads the
    empty Tensor (the producer's numpy raises, reported as an InputError). (0, 2^40) all three read."""
    inits = {}
    for role, dims in (("W1", (0, m)), ("b1", (0,)), ("W2", (1, 0)), ("b2", (1,))):
        inits[role] = onnx_initializer(role, "f4", dims, np.array([0x3F000000] if role == "b2" else [], np.uint32),
                                       "raw", {})
    case = write_onnx(tmp_path / "m", onnx_model(inits, ("gemm1", "gemm1"), "f4", m, 1), {}, _SMALL_ROLES)
    runtime, checker, producer = onnx_three(case.path, case.roles)
    _expect(f"W1 of dims (0, {m})", runtime, "read" if onnx_reads else "refused")
    _judge(f"W1 of dims (0, {m})", runtime, checker, producer)


def _raw_and_typed(t: TensorProto) -> None:
    t.float_data.extend([9.0] * 6)


def _wide_int32_data(t: TensorProto) -> None:
    t.data_type = TensorProto.FLOAT16
    t.ClearField("raw_data")
    t.int32_data.extend([0x3C00 | 0x10000] * 6)


def _varint(value: int) -> bytes:
    out = b""
    while value > 0x7F:
        out, value = out + bytes([value & 0x7F | 0x80]), value >> 7
    return out + bytes([value])


def _unknown_field(case: OnnxCase) -> None:
    """A varint field 99 that ModelProto does not define, appended (protobuf keeps it as an unknown field)."""
    case.path.write_bytes(case.path.read_bytes() + _varint(99 << 3) + b"\x01")


def _doubled_raw_data(case: OnnxCase) -> None:
    """W1's raw_data field given twice, another value first (protobuf keeps the last one): the tensor's bytes and the
    lengths of the messages around it (initializer in graph, graph in model) rewritten."""
    model = onnx.load(str(case.path))
    tensor = model.graph.initializer[0].SerializeToString()
    graph = model.graph.SerializeToString()
    other = np.full(6, 7.0, np.float32).tobytes()
    doubled = _varint(9 << 3 | 2) + _varint(len(other)) + other + tensor
    inner = _varint(5 << 3 | 2) + _varint(len(tensor)) + tensor
    assert graph.count(inner) == 1
    new_graph = graph.replace(inner, _varint(5 << 3 | 2) + _varint(len(doubled)) + doubled)
    outer = _varint(7 << 3 | 2) + _varint(len(graph)) + graph
    data = case.path.read_bytes()
    assert data.count(outer) == 1
    case.path.write_bytes(data.replace(outer, _varint(7 << 3 | 2) + _varint(len(new_graph)) + new_graph))


def _concatenated(case: OnnxCase) -> None:
    case.path.write_bytes(case.path.read_bytes() * 2)


def _truncated(case: OnnxCase) -> None:
    case.path.write_bytes(case.path.read_bytes()[:-3])


# label -> (model maker (folder -> case), extra edit of the written case, runtime's verdict, readers must read)
ONNX_CASES: dict[str, tuple] = {
    "inline": (lambda d: small_onnx(d), None, "read", True),
    "external": (lambda d: small_onnx(d, {"location": "w.bin"}), None, "read", True),
    "external_offset_length": (lambda d: small_onnx(d, {"location": "w.bin", "offset": "0", "length": "24"}), None,
                               "read", True),
    "external_in_subfolder": (lambda d: small_onnx(d, {"location": "a/b/w.bin"}), None, "read", True),
    "external_odd_names": (lambda d: small_onnx(d, {"location": "* ~é.bin"}), None, "read", True),
    # what onnx and onnxruntime read and FORMATS.md refuses (strictness)
    "external_dot_part": (lambda d: small_onnx(d, {"location": "./w.bin"}, "w.bin"), None, "read", False),
    "external_checksum": (lambda d: small_onnx(d, {"location": "w.bin", "checksum": "0"}), None, "read", False),
    "raw_and_typed": (lambda d: small_onnx(d, edit=_raw_and_typed), None, "read", False),
    "unknown_field": (lambda d: small_onnx(d), _unknown_field, "read", False),
    # protobuf merges: the producer sees what onnx sees, the checker refuses
    "doubled_raw_data": (lambda d: small_onnx(d), _doubled_raw_data, "read", False),
    "concatenated_models": (lambda d: small_onnx(d), _concatenated, "read", False),
    # what onnx or onnxruntime refuse
    "offset_with_plus": (lambda d: small_onnx(d, {"location": "w.bin", "offset": "+0"}), None, "refused", False),
    "outside_the_folder": (lambda d: small_onnx(d, {"location": "../w.bin"}), None, "refused", False),
    "absolute_location": (lambda d: small_onnx(d, {"location": str(d / "w.bin")}, "w.bin"), None, "refused", False),
    "missing_file": (lambda d: small_onnx(d, {"location": "w.bin"}, "other.bin"), None, "refused", False),
    "length_past_the_file": (lambda d: small_onnx(d, {"location": "w.bin", "length": "28"}), None, "refused", False),
    "offset_past_the_file": (lambda d: small_onnx(d, {"location": "w.bin", "offset": "32", "length": "24"}), None,
                             "refused", False),
    # FLOAT16 int32_data beyond 16 bits: numpy_helper keeps the low 16 bits, onnxruntime refuses ("data overflow")
    "wide_int32_data": (lambda d: small_onnx(d, edit=_wide_int32_data), None, "refused", False),
    "truncated": (lambda d: small_onnx(d), _truncated, "refused", False),
}


@pytest.mark.parametrize("label", list(ONNX_CASES))
def test_adversarial_onnx(tmp_path: Path, label: str) -> None:
    make, edit, verdict, must_read = ONNX_CASES[label]
    case = make(tmp_path / label)
    if edit is not None:
        edit(case)
    runtime, checker, producer = onnx_three(case.path, case.roles)
    _adversarial(label, (runtime, checker, producer), verdict, must_read)


def test_onnx_truncations_and_appended_bytes(tmp_path: Path) -> None:
    """Truncations (every 5th byte; a cut between top-level fields leaves a valid, smaller protobuf), and bytes put
    before or after the model."""
    case = small_onnx(tmp_path / "m")
    data = case.path.read_bytes()
    variants = [data[:cut] for cut in range(0, len(data), 5)] + [b"\0" + data, data + b"\0", data + b"\x08\x63"]
    for i, variant in enumerate(variants):
        case.path.write_bytes(variant)
        runtime, checker, producer = onnx_three(case.path, case.roles)
        _judge(f"variant {i}", runtime, checker, producer)


# ================================================================================== the producer's error class


def test_producer_reports_every_reader_exception_as_input_error(tmp_path: Path) -> None:
    """models._npz and models._safetensors raise numpy's own errors for some files (counted as refusals above);
    models.read_arrays, the producer's entry point, turns each into an InputError."""
    npz = tmp_path / "z.npz"
    npz.write_bytes(_one(npy_header("<f4", False, (0, 1 << 70)), b""))
    st_path = tmp_path / "z.safetensors"
    st_path.write_bytes(_st(json.dumps({"a": json.loads(_ENTRY), "e": {"dtype": "U8", "shape": [0, 1 << 64],
                                                                       "data_offsets": [12, 12]}}).encode()))
    assert not isinstance(_producer_call(models._npz, npz, None)[1], InputError | None)
    assert not isinstance(_producer_call(models._safetensors, st_path)[1], InputError | None)
    for path in (npz, st_path):
        with pytest.raises(InputError, match="cannot read the model file"):
            models.read_arrays(path, ["a", "-", "e", "-"])

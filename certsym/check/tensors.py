"""Reading .npz and .safetensors weights with the standard library, exactly (floats are dyadic).

Used to bind a certificate to the model file it was made from. Supported element types: float16/32/64 and
signed integers, little or big endian; nothing is unpickled (object arrays are refused).
"""

from __future__ import annotations

import ast
import io
import json
import math
import struct
import sys
import zipfile
import zlib
from array import array
from fractions import Fraction

from certsym.check.fields import Reject

_NPY = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
        "u4": "I", "u8": "Q"}


_ARRAY = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H", "u4": "I",
          "u8": "Q"}
NARROW = {"f2", "bf16", "f4"}  # at most 24 significant bits: a product of two is exact in binary64


class Tensor:
    """A tensor's entries as Python numbers (floats or ints), row access in either storage order.

    ``shape`` is a tuple of ints; ``values`` the prod(shape) entries in storage order (C order, or
    Fortran order for a 2-D tensor with ``fortran``); ``code`` the element type: f2, bf16, f4, f8 (floats,
    decoded to Python floats), i1, i2, i4, i8, u1 (ints)."""

    def __init__(self, shape: tuple, values, fortran: bool, code: str):
        self.shape, self.values, self.fortran, self.code = shape, values, fortran, code

    def row(self, i: int) -> list:
        rows, cols = self.shape
        return list(self.values[i::rows][:cols]) if self.fortran else list(self.values[i * cols:(i + 1) * cols])

    def at(self, i: int, j: int):
        rows, cols = self.shape
        return self.values[j * rows + i] if self.fortran else self.values[i * cols + j]

    def flat(self) -> list:
        """Entries in C order."""
        if self.fortran and len(self.shape) == 2:
            return [x for i in range(self.shape[0]) for x in self.row(i)]
        return list(self.values)

    def exact(self) -> list:
        """Entries in C order as exact rationals (floats are dyadic)."""
        out = []
        for x in self.flat():
            if isinstance(x, float) and not math.isfinite(x):
                raise Reject("the model file holds a NaN or infinite weight")
            out.append(Fraction(x))
        return out


def _unpack(body: bytes, code: str, big_endian: bool, count: int, name: str):
    size = int(code[1])
    if len(body) != count * size:
        raise Reject(f"{name}: truncated array")
    if code in _ARRAY and array(_ARRAY[code]).itemsize == size:
        values = array(_ARRAY[code])
        values.frombytes(body)
        if big_endian != (sys.byteorder == "big"):
            values.byteswap()
        return values
    fmt = (">" if big_endian else "<") + _NPY[code]
    return [x for (x,) in struct.iter_unpack(fmt, body)]


def _npy(data: bytes, name: str) -> Tensor:
    """A .npy array as numpy writes it (format versions 1–3; the header is exactly descr, fortran_order, shape)."""
    if len(data) < 12 or data[:6] != b"\x93NUMPY" or data[6] not in (1, 2, 3):
        raise Reject(f"{name}: not a .npy array")
    start, size = (10, struct.unpack("<H", data[8:10])[0]) if data[6] == 1 else (12, struct.unpack("<I", data[8:12])[0])
    try:
        header = ast.literal_eval(data[start:start + size].decode("latin1"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise Reject(f"{name}: unreadable .npy header") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"} \
            or type(header["fortran_order"]) is not bool or not isinstance(header["shape"], tuple) \
            or any(type(d) is not int or d < 0 for d in header["shape"]):
        raise Reject(f"{name}: unreadable .npy header")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if not isinstance(descr, str) or descr[1:] not in _NPY or descr[0] not in "<>|=":
        raise Reject(f"{name}: unsupported element type {descr!r}")
    count = math.prod(shape)
    body = data[start + size:]
    width = struct.calcsize("<" + _NPY[descr[1:]])
    values = _unpack(body[:count * width], descr[1:], descr[0] == ">", count, name)
    return Tensor(shape, values, fortran and len(shape) == 2, descr[1:])


_SAFE_CODES = {"F16": "f2", "F32": "f4", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4", "I64": "i8", "U8": "u1"}
_READ_ERRORS = (struct.error, zlib.error, OSError, EOFError, NotImplementedError, zipfile.LargeZipFile, RuntimeError,
                KeyError, ValueError, TypeError, MemoryError)


def read_tensors(data: bytes, fmt: str, wanted: set[str] | None = None, max_bytes: int | None = None
                 ) -> dict[str, Tensor]:
    """{name: Tensor} of an .npz or .safetensors file's bytes: only the ``wanted`` tensors (default all), and
    refusing any whose stored size exceeds ``max_bytes`` before decompressing it. Malformed files are rejected
    with the reason, never with another exception."""
    try:
        if fmt == "npz":
            return _npz(data, wanted, max_bytes)
        if fmt == "safetensors":
            return _safetensors(data, wanted)
    except Reject:
        raise
    except zipfile.BadZipFile:
        raise Reject("the given file is not an .npz archive") from None
    except _READ_ERRORS as exc:
        raise Reject(f"unreadable {fmt} file ({type(exc).__name__})") from None
    raise Reject(f"the checker cannot read {fmt!r} model files (only npz and safetensors)")


def _npz(data: bytes, wanted: set[str] | None, max_bytes: int | None) -> dict[str, Tensor]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = z.namelist()
        if len(set(members)) != len(members):
            raise Reject("the .npz archive has two members with the same name")
        out = {}
        for member in members:
            if not member.endswith(".npy") or (wanted is not None and member[:-4] not in wanted):
                continue
            if max_bytes is not None and z.getinfo(member).file_size > max_bytes:
                raise Reject(f"{member}: larger than the declared shape allows")
            out[member[:-4]] = _npy(z.read(member), member)
        return out


def _no_constant(name: str):
    raise ValueError(f"{name} in a .safetensors header")


def _safetensors(data: bytes, wanted: set[str] | None) -> dict[str, Tensor]:
    if len(data) < 8:
        raise Reject("not a .safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise Reject("the .safetensors header runs past the end of the file")
    header = json.loads(data[8:8 + size], parse_constant=_no_constant)
    if not isinstance(header, dict):
        raise Reject("unreadable .safetensors header")
    buffer = len(data) - 8 - size
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or info.get("dtype") not in _SAFE_CODES:
            raise Reject(f"{name}: unsupported element type")
        shape, offsets, code = info.get("shape"), info.get("data_offsets"), _SAFE_CODES[info["dtype"]]
        if not isinstance(shape, list) or any(type(d) is not int or d < 0 for d in shape) \
                or not isinstance(offsets, list) or len(offsets) != 2 or any(type(o) is not int for o in offsets) \
                or not 0 <= offsets[0] <= offsets[1] <= buffer \
                or offsets[1] - offsets[0] != math.prod(shape) * int(code[1]):
            raise Reject(f"{name}: malformed shape or data offsets")
        if wanted is None or name in wanted:
            begin, end = offsets
            out[name] = Tensor(tuple(shape), _unpack(data[8 + size + begin:8 + size + end], code, False,
                                                     math.prod(shape), name), False, code)
    return out


def model_tensors(data: bytes, model: object, shape: tuple) -> list[Tensor]:
    """The tensors W1, b1, W2, b2 a certificate's "model" entry names, checked against shape (m, n, k)."""
    well_formed = isinstance(model, dict) and set(model) == {"format", "tensors"}
    if not well_formed or not isinstance(model["tensors"], list) or len(model["tensors"]) != 4:
        raise Reject("model must be {format, tensors: [W1, b1, W2, b2]}")
    m, n, k = shape
    names = model["tensors"]
    if not all(isinstance(t, str) for t in names):
        raise Reject("model.tensors must be four names")
    largest = max(n * m, n, k * n, k)
    tensors = read_tensors(data, model["format"], set(names), 8 * largest + (1 << 16))
    out = []
    for name, want in zip(model["tensors"], ((n, m), (n,), (k, n), (k,)), strict=True):
        if not isinstance(name, str) or name not in tensors or tensors[name].shape != want:
            raise Reject(f"tensor {name!r} is missing or does not have the shape {want}")
        out.append(tensors[name])
    return out


def model_entries(data: bytes, model: object, shape: tuple) -> list:
    """The entries A (row by row), b, M (row by row), c of a model file, checked against shape (m, n, k)."""
    return [x for t in model_tensors(data, model, shape) for x in t.exact()]

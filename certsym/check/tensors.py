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
from array import array
from fractions import Fraction

from certsym.check.fields import Reject

_NPY = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
        "u4": "I", "u8": "Q"}


_ARRAY = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H", "u4": "I",
          "u8": "Q"}
NARROW = {"f2", "f4"}  # at most 24 significant bits: a product of two is exact in binary64


class Tensor:
    """A tensor's entries as Python numbers (floats or ints), row access in either storage order."""

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
    if data[:6] != b"\x93NUMPY":
        raise Reject(f"{name}: not a .npy array")
    start, size = (10, struct.unpack("<H", data[8:10])[0]) if data[6] == 1 else (12, struct.unpack("<I", data[8:12])[0])
    try:
        header = ast.literal_eval(data[start:start + size].decode("latin1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], tuple(header["shape"])
    except (ValueError, SyntaxError, KeyError, TypeError):
        raise Reject(f"{name}: unreadable .npy header") from None
    if not isinstance(descr, str) or descr[1:] not in _NPY or descr[0] not in "<>|=":
        raise Reject(f"{name}: unsupported element type {descr!r}")
    count = math.prod(shape)
    body = data[start + size:]
    width = struct.calcsize("<" + _NPY[descr[1:]])
    values = _unpack(body[:count * width], descr[1:], descr[0] == ">", count, name)
    return Tensor(shape, values, bool(fortran) and len(shape) == 2, descr[1:])


_SAFE_CODES = {"F16": "f2", "F32": "f4", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4", "I64": "i8", "U8": "u1"}


def read_tensors(data: bytes, fmt: str) -> dict[str, Tensor]:
    """{name: Tensor} of an .npz or .safetensors file's bytes."""
    if fmt == "npz":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                return {n[:-4]: _npy(z.read(n), n) for n in z.namelist() if n.endswith(".npy")}
        except zipfile.BadZipFile:
            raise Reject("the given file is not an .npz archive") from None
    if fmt == "safetensors":
        (size,) = struct.unpack("<Q", data[:8])
        try:
            header = json.loads(data[8:8 + size])
        except ValueError:
            raise Reject("unreadable .safetensors header") from None
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if info.get("dtype") not in _SAFE_CODES:
                raise Reject(f"{name}: unsupported element type {info.get('dtype')!r}")
            begin, end = info["data_offsets"]
            shape, code = tuple(info["shape"]), _SAFE_CODES[info["dtype"]]
            out[name] = Tensor(shape, _unpack(data[8 + size + begin:8 + size + end], code, False, math.prod(shape),
                                              name), False, code)
        return out
    raise Reject(f"the checker cannot read {fmt!r} model files (only npz and safetensors)")


def model_tensors(data: bytes, model: object, shape: tuple) -> list[Tensor]:
    """The tensors W1, b1, W2, b2 a certificate's "model" entry names, checked against shape (m, n, k)."""
    well_formed = isinstance(model, dict) and set(model) == {"format", "tensors"}
    if not well_formed or not isinstance(model["tensors"], list) or len(model["tensors"]) != 4:
        raise Reject("model must be {format, tensors: [W1, b1, W2, b2]}")
    tensors = read_tensors(data, model["format"])
    m, n, k = shape
    out = []
    for name, want in zip(model["tensors"], ((n, m), (n,), (k, n), (k,)), strict=True):
        if not isinstance(name, str) or name not in tensors or tensors[name].shape != want:
            raise Reject(f"tensor {name!r} is missing or does not have the shape {want}")
        out.append(tensors[name])
    return out


def model_entries(data: bytes, model: object, shape: tuple) -> list:
    """The entries A (row by row), b, M (row by row), c of a model file, checked against shape (m, n, k)."""
    return [x for t in model_tensors(data, model, shape) for x in t.exact()]

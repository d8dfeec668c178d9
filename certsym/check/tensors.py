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
import zipfile
from fractions import Fraction

from certsym.check.fields import Reject

_NPY = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
        "u4": "I", "u8": "Q"}
_SAFETENSORS = {"F16": "<e", "F32": "<f", "F64": "<d", "I8": "<b", "I16": "<h", "I32": "<i", "I64": "<q",
                "U8": "<B"}


def _exact(values) -> list:
    out = []
    for x in values:
        if isinstance(x, float) and not math.isfinite(x):
            raise Reject("the model file holds a NaN or infinite weight")
        out.append(Fraction(x))
    return out


def _npy(data: bytes, name: str) -> tuple[tuple, list]:
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
    fmt = (">" if descr[0] == ">" else "<") + _NPY[descr[1:]]
    count = math.prod(shape)
    body = data[start + size:start + size + count * struct.calcsize(fmt)]
    if len(body) != count * struct.calcsize(fmt):
        raise Reject(f"{name}: truncated array")
    values = _exact(x for (x,) in struct.iter_unpack(fmt, body))
    if fortran and len(shape) == 2:
        rows, cols = shape
        values = [values[j * rows + i] for i in range(rows) for j in range(cols)]
    return shape, values


def read_tensors(data: bytes, fmt: str) -> dict[str, tuple[tuple, list]]:
    """{name: (shape, exact values in C order)} of an .npz or .safetensors file's bytes."""
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
            if info.get("dtype") not in _SAFETENSORS:
                raise Reject(f"{name}: unsupported element type {info.get('dtype')!r}")
            begin, end = info["data_offsets"]
            chunk = data[8 + size + begin:8 + size + end]
            values = _exact(x for (x,) in struct.iter_unpack(_SAFETENSORS[info["dtype"]], chunk))
            if len(values) != math.prod(info["shape"]):
                raise Reject(f"{name}: truncated tensor")
            out[name] = (tuple(info["shape"]), values)
        return out
    raise Reject(f"the checker cannot read {fmt!r} model files (only npz and safetensors)")


def model_entries(data: bytes, model: object, shape: tuple) -> list:
    """The entries A (row by row), b, M (row by row), c of a model file, checked against shape (m, n, k)."""
    well_formed = isinstance(model, dict) and set(model) == {"format", "tensors"}
    if not well_formed or not isinstance(model["tensors"], list) or len(model["tensors"]) != 4:
        raise Reject("model must be {format, tensors: [W1, b1, W2, b2]}")
    tensors = read_tensors(data, model["format"])
    m, n, k = shape
    wanted = zip(model["tensors"], ((n, m), (n,), (k, n), (k,)), strict=True)
    out = []
    for name, want in wanted:
        if name not in tensors or tensors[name][0] != want:
            raise Reject(f"tensor {name!r} is missing or does not have the shape {want}")
        out.append(tensors[name][1])
    W1, b1, W2, b2 = out
    return W1 + b1 + W2 + b2

"""The tensor type every reader produces (the readers' leaf): a tensor's entries as Python numbers in storage order,
and numpy's rule for the sizes a tensor may have."""

from __future__ import annotations

import math
import struct
import sys
from array import array
from fractions import Fraction

from certsym_check.errors import Reject

_INTP_MAX = (1 << 63) - 1
WIDTH = {"f2": 2, "bf16": 2, "f4": 4, "f8": 8, "i1": 1, "i2": 2, "i4": 4, "i8": 8, "u1": 1}  # bytes of an entry
_NPY = {"f2": "e", "f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B"}
_ARRAY = {"f4": "f", "f8": "d", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B"}


class Tensor:
    """A tensor's entries as Python numbers (floats or ints), row access in either storage order.

    ``shape`` is a tuple of ints; ``values`` the prod(shape) entries in storage order (C order, or
    Fortran order for a 2-D tensor with ``fortran``); ``code`` the element type: f2, bf16, f4, f8 (floats,
    decoded to Python floats), i1, i2, i4, i8, u1 (ints)."""

    quantized = ""  # how a dequantized tensor was stored ("int8, per-tensor scale"), else ""
    qaxis: int | None = None  # and its per-channel axis and scales
    qscales: list = []  # noqa: RUF012 - read only: a dequantized tensor gets its own list

    def __init__(self, shape: tuple, values, fortran: bool, code: str):
        self.shape, self.values, self.fortran, self.code = shape, values, fortran, code

    def row(self, i: int) -> list:
        rows, cols = self.shape
        return list(self.values[i::rows][:cols]) if self.fortran else list(self.values[i * cols:(i + 1) * cols])

    def column(self, j: int) -> list:
        rows, cols = self.shape
        return list(self.values[j * rows:(j + 1) * rows]) if self.fortran else list(self.values[j::cols])

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


def numpy_sized(shape: tuple, width: int, name: str) -> None:
    """Refuse a shape numpy cannot hold: the item width times the product of the nonzero dimensions must fit in
    numpy's intp (numpy skips zero dimensions in that product, so an empty array may not have a huge one either)."""
    nbytes = width
    for d in shape:
        if d:
            nbytes *= d
            if nbytes > _INTP_MAX:
                raise Reject(f"{name}: the shape {tuple(shape)[:8]} is too big for numpy (which refuses it)")


def unpack(body: bytes | memoryview, code: str, big_endian: bool, count: int, name: str):
    """The ``count`` entries of type ``code`` in ``body`` as Python numbers (an ``array`` where one fits; for
    float32 in the machine's byte order a float view of ``body`` itself, no copy)."""
    size = WIDTH[code]
    if len(body) != count * size:
        raise Reject(f"{name}: truncated array")
    if code == "bf16":  # the upper half of a float32
        half = array("H")
        half.frombytes(body)
        if big_endian != (sys.byteorder == "big"):
            half.byteswap()
        wide = array("I", (h << 16 for h in half))
        values = array("f")
        values.frombytes(wide.tobytes())
        return values
    if code == "f4" and big_endian == (sys.byteorder == "big") and array("f").itemsize == 4:
        return memoryview(body).cast("B").cast("f")  # read in place: the bytes are the entries
    if code in _ARRAY and array(_ARRAY[code]).itemsize == size:
        values = array(_ARRAY[code])
        values.frombytes(body)
        if big_endian != (sys.byteorder == "big"):
            values.byteswap()
        return values
    fmt = (">" if big_endian else "<") + _NPY[code]
    return [x for (x,) in struct.iter_unpack(fmt, body)]

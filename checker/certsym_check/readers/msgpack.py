"""Flax msgpack files, read here again with the standard library (docs/FORMATS.md, "Flax msgpack").

A decoder for the part of msgpack a Flax file uses (nil, booleans, integers, floats, strings, binaries, arrays,
maps, ext), written for this checker: every length is compared with the bytes that remain before anything is
read, nesting is bounded, a map repeating a key or keyed by anything but a string is refused. The file is one map;
a leaf of ext type 1 is an array [shape, dtype name, little-endian row-major bytes]; tensor names are the keys on
its path joined by "."; Flax's chunked arrays are refused; other leaves are not tensors.
"""

from __future__ import annotations

import math
import struct

from certsym_check.errors import Reject
from certsym_check.readers.tensor import WIDTH, Tensor, numpy_sized, unpack

MAX_DEPTH = 64
MAX_DIMS = 64  # numpy's limit on an array's dimensions: a longer shape is refused before its product
_DTYPES = {b"float16": "f2", b"bfloat16": "bf16", b"float32": "f4", b"float64": "f8", b"int8": "i1",
           b"int16": "i2", b"int32": "i4", b"int64": "i8", b"uint8": "u1"}


class _Ext:
    """An ext value: its type code and payload (a view of the file's bytes)."""

    def __init__(self, code: int, data: memoryview):
        self.code, self.data = code, data


class _Skipped:
    """A long msgpack array, read through and not kept."""


class _Reader:
    def __init__(self, data: bytes | memoryview):
        self.data, self.at = memoryview(data), 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.at + n > len(self.data):
            raise Reject("the msgpack data ends inside a value")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def unsigned(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")

    def value(self, depth: int = 0):
        if depth > MAX_DEPTH:
            raise Reject("the msgpack data is nested too deeply")
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F, depth)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F, depth)
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        if b in (0xC4, 0xC5, 0xC6):
            return bytes(self.take(self.unsigned(1 << (b - 0xC4))))
        if b in (0xC7, 0xC8, 0xC9):
            size = self.unsigned(1 << (b - 0xC7))
            code = struct.unpack(">b", self.take(1))[0]
            return _Ext(code, self.take(size))
        if b in (0xCA, 0xCB):
            return struct.unpack(">f" if b == 0xCA else ">d", self.take(4 if b == 0xCA else 8))[0]
        if 0xCC <= b <= 0xCF:
            return self.unsigned(1 << (b - 0xCC))
        if 0xD0 <= b <= 0xD3:
            n = 1 << (b - 0xD0)
            return int.from_bytes(self.take(n), "big", signed=True)
        if 0xD4 <= b <= 0xD8:
            code = struct.unpack(">b", self.take(1))[0]
            return _Ext(code, self.take(1 << (b - 0xD4)))
        if b in (0xD9, 0xDA, 0xDB):
            return self.text(self.unsigned(1 << (b - 0xD9)))
        if b in (0xDC, 0xDD):
            return self.array(self.unsigned(2 if b == 0xDC else 4), depth)
        if b in (0xDE, 0xDF):
            return self.map(self.unsigned(2 if b == 0xDE else 4), depth)
        raise Reject(f"the byte 0x{b:02x} starts no msgpack value")

    def array(self, count: int, depth: int) -> list:
        """A msgpack array: kept when short (an array leaf's [shape, dtype, bytes], a shape), else read through and
        dropped, since Flax keeps no tensor in a list (so a file of many tiny values holds no memory here)."""
        if count > len(self.data) - self.at:  # each element takes at least one byte
            raise Reject("a msgpack array is longer than the data")
        if count <= MAX_DIMS:
            return [self.value(depth + 1) for _ in range(count)]
        for _ in range(count):
            self.value(depth + 1)
        return _Skipped()

    def text(self, n: int) -> str:
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError:
            raise Reject("a msgpack string is not UTF-8") from None

    def map(self, count: int, depth: int) -> dict:
        if 2 * count > len(self.data) - self.at:
            raise Reject("a msgpack map is longer than the data")
        out: dict = {}
        for _ in range(count):
            key = self.value(depth + 1)
            if not isinstance(key, str):
                raise Reject("a msgpack map has a key that is not a string")
            if key in out:
                raise Reject(f"a msgpack map repeats the key {key[:60]!r}")
            out[key] = self.value(depth + 1)
        return out


def _array(ext: _Ext, name: str, wanted: bool) -> Tensor | None:
    """An ext-1 leaf as a Tensor (None when not ``wanted``: only its form is checked)."""
    inner = _Reader(ext.data)
    tpl = inner.value()
    if inner.at != len(ext.data) or not isinstance(tpl, list) or len(tpl) != 3:
        raise Reject(f"{name[:60]}: an array leaf is not [shape, dtype, bytes]")
    shape, dtype, body = tpl
    if isinstance(dtype, str):
        dtype = dtype.encode()
    if dtype not in _DTYPES or not isinstance(body, bytes) or not isinstance(shape, list) or len(shape) > MAX_DIMS \
            or any(type(d) is not int or d < 0 for d in shape):
        raise Reject(f"{name[:60]}: an array leaf of an unsupported type or with a malformed shape")
    code = _DTYPES[dtype]
    if len(body) != math.prod(shape) * WIDTH[code]:
        raise Reject(f"{name[:60]}: an array leaf's bytes do not fill its shape")
    numpy_sized(tuple(shape), WIDTH[code], name[:60])
    if not wanted:
        return None
    return Tensor(tuple(shape), unpack(body, code, False, math.prod(shape), name), False, code)


def is_map(data: bytes | memoryview) -> bool:
    """Whether ``data`` is, as a whole, one msgpack map (the form of a Flax file)."""
    if not data or not (0x80 <= data[0] <= 0x8F or data[0] in (0xDE, 0xDF)):
        return False
    reader = _Reader(data)
    try:
        reader.value()
    except (Reject, RecursionError):
        return False
    return reader.at == len(reader.data)


def read_msgpack(data: bytes, wanted: set[str] | None) -> tuple[dict[str, Tensor], list[str]]:
    """({name: Tensor} for the ``wanted`` names (default all), every tensor name) of a Flax msgpack file's bytes.
    Cost: linear in the file."""
    reader = _Reader(data)
    tree = reader.value()
    if reader.at != len(reader.data):
        raise Reject("the msgpack file has bytes after its value")
    if not isinstance(tree, dict):
        raise Reject("a Flax msgpack file is one map of parameters")
    out: dict[str, Tensor] = {}
    names: dict[str, None] = {}  # insertion-ordered, with O(1) membership
    stack = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        if "__msgpack_chunked_array__" in node:
            raise Reject("a chunked array (over 1 GiB), which is not read")
        for key, value in node.items():
            name = prefix + key
            if isinstance(value, dict):
                stack.append((value, name + "."))
            elif isinstance(value, _Ext) and value.code == 1:
                if name in names:
                    raise Reject(f"two arrays are both named {name[:60]!r} once the keys are joined by '.'")
                names[name] = None
                t = _array(value, name, wanted is None or name in wanted)
                if t is not None:
                    out[name] = t
    return out, list(names)


def flax_names(names: list[str]) -> list[tuple[str, str | None]] | None:
    """The default rule of a Flax file: with a leading "params." removed from every name (when every name has
    it), exactly Dense_0.kernel … Dense_L.kernel (L ≥ 1) with optional biases of the same indices; the
    (kernel, bias or None) full names in order, or None."""
    strip = bool(names) and all(n.startswith("params.") for n in names)
    short = {(n[len("params."):] if strip else n): n for n in names}
    count = sum(1 for i in range(len(names) + 1) if f"Dense_{i}.kernel" in short)
    wanted = {f"Dense_{i}.{part}" for i in range(count) for part in ("kernel", "bias")}
    if count < 2 or not set(short) <= wanted or any(f"Dense_{i}.kernel" not in short for i in range(count)):
        return None
    return [(short[f"Dense_{i}.kernel"], short.get(f"Dense_{i}.bias")) for i in range(count)]

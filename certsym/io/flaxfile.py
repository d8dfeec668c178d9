"""Flax msgpack files: ``flax.serialization.to_bytes`` (or ``msgpack_serialize``) of a tree of Dense parameters.

docs/FORMATS.md, "Flax msgpack", gives the meaning: the file is one msgpack map (string keys, none repeated); a
leaf of ext type 1 is an array, whose payload is the msgpack array [shape, dtype name, row-major little-endian
bytes]; the tensor names are the keys on the path to each array, joined by "."; leaves of other types (a step
count, a scalar) are not tensors. Flax's chunked arrays (over 1 GiB) are refused, as is a map whose flattened
names collide. A Dense kernel is stored inputs × outputs: the layout is in-out by construction.

The default rule (``flax_chain``): with a leading ``params.`` removed from every name (when every name has it),
exactly Dense_0.kernel, …, Dense_L.kernel (L ≥ 1) with optional biases of the same indices. Cost: one pass over
the file, arrays as views of its bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from certsym.errors import InputError

NDARRAY = 1  # flax.serialization._MsgpackExtType.ndarray
MAX_FILE = 1 << 34
MAX_DIMS = 64  # numpy's own limit on an array's dimensions
_DTYPES = {"float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "float64": "<f8", "int8": "i1", "int16": "<i2",
           "int32": "<i4", "int64": "<i8", "uint8": "u1"}


class _Leaf:
    """A leaf that is not an array (another ext type): not a tensor."""


def _unique(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a map repeats a key")
    if not all(isinstance(k, str) for k in out):
        raise ValueError("a map has a key that is not a string")
    return out


def _array(payload: bytes, bfloat16_to_float32) -> np.ndarray:
    import msgpack  # the models extra

    shape, dtype, body = msgpack.unpackb(payload, raw=False, strict_map_key=True, use_list=True)
    name = dtype.decode("ascii", "replace") if isinstance(dtype, bytes) else dtype
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or any(type(d) is not int or d < 0 for d in shape):
        raise ValueError(f"an array leaf with a malformed shape (a list of at most {MAX_DIMS} non-negative integers)")
    if name not in _DTYPES or not isinstance(body, bytes):
        raise ValueError(f"an array leaf of type {str(name)[:40]!r} (need one of {', '.join(_DTYPES)}, its bytes a "
                         "msgpack bin)")
    dt = np.dtype(_DTYPES[name])
    if len(body) != math.prod(shape) * dt.itemsize:
        raise ValueError(f"an array leaf's {len(body)} bytes do not fill its shape")
    array = np.frombuffer(body, dtype=dt).reshape(shape)
    return np.asarray(bfloat16_to_float32(array)) if name == "bfloat16" else array  # (a 0-d result is an array)


def read_msgpack(path: str | os.PathLike, bfloat16_to_float32) -> dict[str, np.ndarray]:
    """The tensors of a Flax msgpack file by their dotted names (module docstring). InputError for anything
    ambiguous or malformed, or when msgpack is not installed. Cost: one pass over the file."""
    p = Path(path)
    try:
        import msgpack  # the models extra
    except ImportError:
        raise InputError(f"{p}: reading a Flax .msgpack file needs msgpack (pip install 'certsym[models]')") from None
    if p.stat().st_size > MAX_FILE:
        raise InputError(f"{p}: a .msgpack file of more than {MAX_FILE} bytes")
    data = p.read_bytes()

    def ext(code: int, payload: bytes):
        return _array(payload, bfloat16_to_float32) if code == NDARRAY else _Leaf()

    try:
        tree = msgpack.unpackb(data, raw=False, strict_map_key=True, object_pairs_hook=_unique, ext_hook=ext,
                               use_list=True)
    except (ValueError, TypeError, msgpack.UnpackException, msgpack.ExtraData) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InputError(f"{p}: not a Flax msgpack file ({reason})") from None
    except RecursionError:
        raise InputError(f"{p}: not a Flax msgpack file (nested too deeply)") from None
    if not isinstance(tree, dict):
        raise InputError(f"{p}: a Flax msgpack file is one map of parameters, found a {type(tree).__name__}")
    out: dict[str, np.ndarray] = {}
    stack = [(tree, "")]  # iterative: a deep tree is refused by the decoder, never by Python's recursion limit
    while stack:
        node, prefix = stack.pop()
        if "__msgpack_chunked_array__" in node:
            raise InputError(f"{p}: {(prefix[:-1] or 'the tree')[:80]!r} is a chunked array (over 1 GiB), which "
                             "certsym does not read")
        for key, value in node.items():
            name = prefix + key
            if isinstance(value, dict):
                stack.append((value, name + "."))
            elif isinstance(value, np.ndarray):
                if name in out:
                    raise InputError(f"{p}: two arrays are both named {name[:80]!r} once the keys are joined by '.'")
                out[name] = value
    return out


def is_msgpack_map(first: int) -> bool:
    """Whether a msgpack value beginning with this byte is a map (fixmap, map 16, map 32)."""
    return 0x80 <= first <= 0x8F or first in (0xDE, 0xDF)


def flax_chain(names: Sequence[str]) -> list[tuple[str, str | None]] | None:
    """The default rule of a Flax file (module docstring): the (kernel, bias or None) full names of Dense_0 …
    Dense_L in order, or None when the names are not exactly such a chain."""
    strip = bool(names) and all(n.startswith("params.") for n in names)
    short = {(n[len("params."):] if strip else n): n for n in names}
    count = sum(1 for i in range(len(names) + 1) if f"Dense_{i}.kernel" in short)
    wanted = {f"Dense_{i}.{part}" for i in range(count) for part in ("kernel", "bias")}
    if count < 2 or not set(short) <= wanted or any(f"Dense_{i}.kernel" not in short for i in range(count)):
        return None
    return [(short[f"Dense_{i}.kernel"], short.get(f"Dense_{i}.bias")) for i in range(count)]

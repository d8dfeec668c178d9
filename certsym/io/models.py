"""Model files read into exact parameters, by the written meaning of each format (docs/FORMATS.md).

A shallow ReLU network is four tensors: the first layer's weight W1 (n×m) and bias b1 (n), the second layer's
weight W2 (k×n) and bias b2 (k). Formats: .npz, .safetensors, torch archives (.pt, .pth, .bin, .ckpt) and ONNX.
Tensors are chosen by a rule the certificate records: "default" (the file holds exactly 0.weight, 0.bias,
2.weight, 2.bias, or exactly A, b, M, c), "keys" (the user's ``--keys``; other tensors are ignored) or, for
ONNX, "graph" (the initializers its data flow uses). Floating-point weights (float16, bfloat16, float32,
float64) become the exact dyadic rationals they are. Nothing is unpickled by pickle's own rules: torch
archives go through ``certsym.io.torchfile``'s restricted reader. Whatever the text does not give one meaning
is refused with a one-line reason: npz members that do not end in .npy, repeated names, trailing bytes,
safetensors headers with repeated keys or a buffer the tensors do not tile.
Cost: linear in the bytes of the tensors read.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.errors import InputError

FORMATS = {".npz": "npz", ".safetensors": "safetensors", ".pt": "torch", ".pth": "torch", ".bin": "torch",
           ".ckpt": "torch", ".onnx": "onnx"}
SUFFIXES = set(FORMATS)
TORCH_KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")
LETTER_KEYS = ("A", "b", "M", "c")
_ALLOWED = {("f", 2), ("f", 4), ("f", 8), ("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1)}
_SAFE = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8", "U8": "u1"}


def is_model_file(path: str | os.PathLike) -> bool:
    """True for the suffixes of docs/FORMATS.md: .npz, .safetensors, .pt/.pth/.bin/.ckpt and .onnx."""
    return Path(path).suffix.lower() in SUFFIXES


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as the float32 values they denote: the upper half of a float32, exact."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def exact(values) -> list:
    """Exact rationals of a numpy array's entries (floats are dyadic; ints are ints), flattened."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        flat = arr.astype(np.float64).ravel().tolist()  # float16/32 → float64 is exact
        out = []
        for x in flat:
            if x != x or x in (float("inf"), float("-inf")):
                raise InputError("the model holds a NaN or infinite weight")
            num, den = x.as_integer_ratio()
            out.append(fmpq(num, den))
        return out
    if arr.dtype.kind in "iu":
        return [fmpq(int(x)) for x in arr.ravel().tolist()]
    raise InputError(f"unsupported weight type {arr.dtype}")


def _check_dtype(dtype: np.dtype, where: str) -> None:
    if dtype.kind == "O":
        raise InputError(f"{where}: refused: the file holds pickled objects, which certsym never loads")
    if dtype.fields is not None or dtype.shape != () or (dtype.kind, dtype.itemsize) not in _ALLOWED:
        raise InputError(f"{where}: unsupported element type {dtype} (certsym reads float16/32/64, int8-64, uint8)")


def _npz(path: Path, wanted: set[str] | None) -> tuple[dict, list[str]]:
    """docs/FORMATS.md, npz: every member NAME.npy, names distinct, exact sizes; only ``wanted`` members read."""
    with zipfile.ZipFile(path) as z:
        members = z.namelist()
        if len(set(members)) != len(members):
            raise InputError(f"{path}: the archive has two members with the same name")
        odd = next((name for name in members if not name.endswith(".npy")), None)
        if odd is not None:
            raise InputError(f"{path}: the member {odd!r} does not end in .npy (numpy would read it under the name "
                             "of another tensor); certsym refuses the archive")
        names = [name[:-4] for name in members]
        chosen = [(member, name) for member, name in zip(members, names, strict=True)
                  if wanted is None or name in wanted]
        inflated = sum(z.getinfo(member).file_size for member, _ in chosen)
        if inflated > (1 << 28) + 64 * path.stat().st_size:
            raise InputError(f"{path}: the members would inflate to {inflated} bytes from {path.stat().st_size}: "
                             "beyond the bound 2^28 + 64 x the file size (a zip bomb?)")
        out = {}
        for member, name in chosen:
            info = z.getinfo(member)
            with z.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version not in ((1, 0), (2, 0), (3, 0)):
                    raise InputError(f"{path}: {member}: unsupported .npy version {version}")
                read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) \
                    else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = read_header(fh)
                _check_dtype(dtype, f"{path}: {member}")
                size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
                if info.file_size != fh.tell() + size:
                    raise InputError(f"{path}: {member}: the member holds {info.file_size - fh.tell()} data bytes, "
                                     f"its shape {shape} needs {size}")
                body = fh.read(size)
            out[name] = np.frombuffer(body, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        return out, names


def _safetensors(path: Path) -> tuple[dict, list[str]]:
    """docs/FORMATS.md, safetensors: one header, no repeated key, tensors tiling the buffer exactly."""
    data = path.read_bytes()
    if len(data) < 8:
        raise InputError(f"{path}: not a .safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    if size > len(data) - 8:
        raise InputError(f"{path}: the header runs past the end of the file")

    def unique(pairs: list) -> dict:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise InputError(f"{path}: the header repeats a key")
        return out

    try:
        header = json.loads(data[8:8 + size].decode("utf-8"), object_pairs_hook=unique)
    except (UnicodeDecodeError, ValueError):
        raise InputError(f"{path}: unreadable .safetensors header") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: unreadable .safetensors header")
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise InputError(f"{path}: __metadata__ must map strings to strings")
    buffer = memoryview(data)[8 + size:]
    out, spans = {}, []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"} \
                or info["dtype"] not in (*_SAFE, "BF16"):
            raise InputError(f"{path}: tensor {name!r}: unsupported entry (dtype F16, BF16, F32, F64, I8-I64 or U8)")
        shape, offsets = info["shape"], info["data_offsets"]
        dtype = np.dtype("<u2" if info["dtype"] == "BF16" else _SAFE[info["dtype"]])
        if not isinstance(shape, list) or any(type(d) is not int or d < 0 for d in shape) \
                or not isinstance(offsets, list) or len(offsets) != 2 or any(type(o) is not int for o in offsets) \
                or not 0 <= offsets[0] <= offsets[1] <= len(buffer) \
                or offsets[1] - offsets[0] != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise InputError(f"{path}: tensor {name!r}: malformed shape or data offsets")
        spans.append(tuple(offsets))
        array = np.frombuffer(buffer[offsets[0]:offsets[1]], dtype=dtype).reshape(shape)
        out[name] = bfloat16_to_float32(array) if info["dtype"] == "BF16" else array
    position = 0
    for begin, end in sorted(spans):
        if begin != position:
            raise InputError(f"{path}: the tensors overlap or leave a gap in the data buffer")
        position = end
    if position != len(buffer):
        raise InputError(f"{path}: the data buffer has bytes that belong to no tensor")
    return out, list(header)


def _named_tensors(path: Path, fmt: str, wanted: set[str] | None) -> tuple[dict, list[str]]:
    """({name: array} holding at least the ``wanted`` tensors, every tensor name) of a tensor-map file."""
    if fmt == "npz":
        return _npz(path, wanted)
    if fmt == "safetensors":
        return _safetensors(path)
    from certsym.io.torchfile import read_state_dict

    tensors = read_state_dict(path)
    return tensors, list(tensors)


def _select(path: Path, tensors: dict, present: list[str], keys: Sequence[str] | None) -> tuple[list, str]:
    """The four names the selection rule picks ("keys" when given, else "default"), or a one-line error."""
    if keys:
        missing = [k for k in keys if k not in tensors]
        if missing:
            raise InputError(f"{path}: missing {', '.join(missing)} (found {', '.join(sorted(present)) or 'nothing'})")
        return list(keys), "keys"
    choice = next((ks for ks in (TORCH_KEYS, LETTER_KEYS) if set(present) == set(ks)), None)
    if choice is not None:
        return list(choice), "default"
    layers = sorted({m.group(1) for k in present if (m := re.match(r"(\d+)\.weight$", k))}, key=int)
    if len(layers) > 2:
        raise InputError(f"{path}: found {len(layers)} linear layers ({', '.join(x + '.weight' for x in layers)}); "
                         "certsym handles one hidden layer")
    known = next((ks for ks in (TORCH_KEYS, LETTER_KEYS) if set(ks) <= set(present)), None)
    if known is not None:
        extra = sorted(set(present) - set(known))
        raise InputError(f"{path}: found extra tensors ({', '.join(extra)}) besides {', '.join(known)}; certsym reads "
                         "one hidden layer (Linear, ReLU, Linear); choose the four tensors with --keys")
    missing = [k for k in TORCH_KEYS if k not in present]
    raise InputError(f"{path}: missing {', '.join(missing)} (found {', '.join(sorted(present)) or 'nothing'}); "
                     "set the tensor names with --keys W1,b1,W2,b2")


def read_arrays(path: str | os.PathLike, keys: Sequence[str] | None = None) -> tuple[list, dict]:
    """The four tensors (W1, b1, W2, b2) as numpy arrays, layout-checked, with the "model" record that
    certificates carry: {"format", "rule", "tensors"} (and "external" for ONNX). Cost: reading the file."""
    path = Path(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown model format")
    try:
        if fmt == "onnx":
            if keys:
                raise InputError(f"{path}: the tensors of an ONNX model follow from its graph; --keys does not apply")
            from certsym.io.onnxfile import read_onnx

            arrays, names, external = read_onnx(path)
            record = {"format": fmt, "rule": "graph", "tensors": list(names),
                      "external": [{"location": loc, "sha256": digest} for loc, digest in external]}
        else:
            tensors, present = _named_tensors(path, fmt, set(keys or TORCH_KEYS + LETTER_KEYS))
            names, rule = _select(path, tensors, present, keys)
            arrays = [tensors[k] for k in names]
            record = {"format": fmt, "rule": rule, "tensors": names}
            for name, array in zip(names, arrays, strict=True):
                _check_dtype(array.dtype, f"{path}: tensor {name!r}")
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except zipfile.BadZipFile:
        raise InputError(f"{path}: not a zip archive") from None
    except Exception as exc:  # corrupt files raise many types; report them in one line
        raise InputError(f"{path}: cannot read the model file ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    shapes = [a.shape for a in arrays]
    if len(shapes[0]) != 2 or len(shapes[2]) != 2 or len(shapes[1]) != 1 or len(shapes[3]) != 1 \
            or shapes[1][0] != shapes[0][0] or shapes[2][1] != shapes[0][0] or shapes[3][0] != shapes[2][0]:
        raise InputError(f"{path}: mismatched shapes {[tuple(s) for s in shapes]} for (W1, b1, W2, b2); expected "
                         "(n, m), (n,), (k, n), (k,)")
    return arrays, record


def read_model(path: str | os.PathLike, keys: Sequence[str] | None = None) -> dict:
    """The four tensors as exact nested lists: {"A": n×m, "b": n, "M": k×n, "c": k}, with "m" and
    "model" (see ``read_arrays``)."""
    (W1, b1, W2, b2), model = read_arrays(path, keys)
    n, m = W1.shape
    k = W2.shape[0]
    A, M = exact(W1), exact(W2)
    return {"A": [A[i * m:(i + 1) * m] for i in range(n)], "b": exact(b1),
            "M": [M[j * n:(j + 1) * n] for j in range(k)], "c": exact(b2), "m": m, "model": model}

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

import ast
import hashlib
import io
import json
import os
import re
import struct
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.errors import CertsymWarning, InputError
from certsym.io.filebytes import FileBytes, crc32
from certsym.io.flaxfile import flax_chain, is_msgpack_map, read_msgpack
from certsym.io.foreign import foreign_format, zip_names
from certsym.io.hub import MAX_SHARD_BYTES, is_index, read_index, resolve, weights_file
from certsym.io.nnetfile import ACTIVATION_NNET, read_nnet
from certsym.io.nnetfile import READING as NNET_READING
from certsym.io.onnxfile import read_onnx, read_onnx_chain
from certsym.io.quantized import Dequantized
from certsym.io.torchfile import load_torch
from certsym.numbers.floats import all_finite

FORMATS = {".npz": "npz", ".safetensors": "safetensors", ".pt": "torch", ".pth": "torch", ".bin": "torch",
           ".ckpt": "torch", ".onnx": "onnx", ".msgpack": "msgpack", ".nnet": "nnet"}
SUFFIXES = set(FORMATS)
LETTER_KEYS = ("A", "b", "M", "c")
_ALLOWED = {("f", 2), ("f", 4), ("f", 8), ("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1)}
_SAFE = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8", "U8": "u1"}


def is_model_file(path: str | os.PathLike) -> bool:
    """True for a model file by its content (``detect_format``), or by one of the suffixes of docs/FORMATS.md
    when it cannot be read (the reader then says why). A file of a format certsym does not read (Keras, HDF5,
    msgpack, TorchScript: ``certsym.io.foreign``) raises InputError with its recipe. A model directory
    (``certsym.io.hub``) is a model file: the readers read its weights file."""
    if os.path.isdir(path):
        weights_file(path)  # a model directory (certsym.io.hub), or InputError saying why not
        return True
    foreign = foreign_format(path)
    if foreign is not None:
        raise InputError(f"{path}: {foreign}")
    return detect_format(path) is not None or Path(path).suffix.lower() in SUFFIXES


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as the float32 values they denote: the upper half of a float32, exact."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def exact(values) -> list:
    """Exact rationals of a numpy array's entries (floats are dyadic; ints are ints; an object array holds them
    already: an ONNX first layer with its normalization folded), flattened."""
    arr = np.asarray(values)
    if arr.dtype.kind == "O" and all(isinstance(x, fmpq) for x in arr.ravel().tolist()):
        return arr.ravel().tolist()
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise InputError("the model holds a NaN or infinite weight")
        return [fmpq(*x.as_integer_ratio()) for x in arr.astype(np.float64).ravel().tolist()]  # f16/f32 → f64 exact
    if arr.dtype.kind in "iu":
        return [fmpq(int(x)) for x in arr.ravel().tolist()]
    raise InputError(f"unsupported weight type {arr.dtype}")


def _check_dtype(dtype: np.dtype, where: str) -> None:
    if dtype.kind == "O":
        raise InputError(f"{where}: refused: the file holds pickled objects, which certsym never loads")
    if dtype.fields is not None or dtype.shape != () or (dtype.kind, dtype.itemsize) not in _ALLOWED:
        raise InputError(f"{where}: unsupported element type {dtype} (certsym reads float16/32/64, int8-64, uint8)")


_DESCR = {"<f2", "<f4", "<f8", "<i1", "<i2", "<i4", "<i8", "<u1", ">f2", ">f4", ">f8", ">i1", ">i2", ">i4", ">i8",
          ">u1", "|i1", "|u1", "=f2", "=f4", "=f8", "=i2", "=i4", "=i8"}


NPY_HEADER_LIMIT = 10_000  # numpy.lib.format's max_header_size: numpy.load refuses a longer .npy header


def _npy_header(fh, version: tuple, where: str) -> tuple[tuple, bool, np.dtype]:
    """The .npy header as docs/FORMATS.md reads it: a literal dict of exactly descr (one of the listed spellings),
    fortran_order (a bool) and shape (a tuple of ints); numpy's own reader also takes other spellings."""
    (size,) = struct.unpack("<H" if version == (1, 0) else "<I", fh.read(2 if version == (1, 0) else 4))
    if size > NPY_HEADER_LIMIT:  # numpy refuses a header of more characters; a UTF-8 one has at most as many
        raise InputError(f"{where}: .npy header longer than {NPY_HEADER_LIMIT} bytes (numpy refuses it)")
    raw = fh.read(size)
    if len(raw) != size:
        raise InputError(f"{where}: the .npy header is shorter than its length field says ({len(raw)} of {size} "
                         "bytes; numpy refuses it)")
    try:
        text = raw.decode("utf8" if version == (3, 0) else "latin1")
        header = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, UnicodeDecodeError):
        header = None
    if isinstance(header, dict) and header.get("descr") in ("|O", "<O", ">O"):
        raise InputError(f"{where}: refused: the file holds pickled objects, which certsym never loads")
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"} \
            or header["descr"] not in _DESCR or type(header["fortran_order"]) is not bool \
            or not isinstance(header["shape"], tuple) or any(type(d) is not int or d < 0 for d in header["shape"]):
        raise InputError(f"{where}: a .npy header certsym does not read (descr one of {sorted(_DESCR)[:3]}..., "
                         "fortran_order a bool, shape a tuple of ints)")
    return header["shape"], header["fortran_order"], np.dtype(header["descr"])


def _npz(path: Path, wanted, blob: FileBytes | None = None) -> tuple[dict, list[str]]:
    """docs/FORMATS.md, npz: every member NAME.npy, names distinct, exact sizes; only the ``wanted`` members are
    read (a set of names, None for all, or a function of the list of names giving that set). With ``blob`` (the
    file read once) the archive is parsed from its bytes, and a stored member's array is a view of them."""
    if (blob.data[:4] if blob is not None else _head(path, 4)) != b"PK\x03\x04":
        # numpy.load reads anything else as .npy or pickle, not as an archive
        raise InputError(f"{path}: not an .npz archive: it does not begin with a zip local header (numpy.load "
                         "would not read it as one)")
    size = len(blob.data) if blob is not None else path.stat().st_size
    with zipfile.ZipFile(io.BytesIO(blob.data) if blob is not None else path) as z:
        members = z.namelist()
        if len(set(members)) != len(members):
            raise InputError(f"{path}: the archive has two members with the same name")
        odd = next((name for name in members if not name.endswith(".npy") or name[:-4].endswith(".npy")), None)
        if odd is not None:
            raise InputError(f"{path}: the member {odd!r} does not end in .npy, or ends in it twice (numpy would read "
                             "it under the name of another tensor); certsym refuses the archive")
        names = [name[:-4] for name in members]
        if callable(wanted):
            wanted = wanted(names)
        chosen = [(member, name) for member, name in zip(members, names, strict=True)
                  if wanted is None or name in wanted]
        inflated = sum(z.getinfo(member).file_size for member, _ in chosen)
        if inflated > (1 << 28) + 64 * size:
            raise InputError(f"{path}: the members would inflate to {inflated} bytes from {size}: "
                             "beyond the bound 2^28 + 64 x the file size (a zip bomb?)")
        ends = _member_ends(path, z, [z.getinfo(member) for member, _ in chosen], blob)
        out = {}
        for member, name in chosen:
            info = z.getinfo(member)
            stored = _stored_member(blob, info, ends[info.header_offset]) if blob is not None else None
            with io.BytesIO(stored[:NPY_HEADER_LIMIT + 16]) if stored is not None else z.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version not in ((1, 0), (2, 0), (3, 0)):
                    raise InputError(f"{path}: {member}: unsupported .npy version {version}")
                shape, fortran, dtype = _npy_header(fh, version, f"{path}: {member}")
                _check_dtype(dtype, f"{path}: {member}")
                count = int(np.prod(shape, dtype=np.int64))
                start = fh.tell()
                if info.file_size != start + count * dtype.itemsize:
                    raise InputError(f"{path}: {member}: the member holds {info.file_size - start} data bytes, "
                                     f"its shape {shape} needs {count * dtype.itemsize}")
                if stored is None:
                    array = np.frombuffer(fh.read(count * dtype.itemsize), dtype=dtype)
            if stored is not None:
                if crc32(stored) != info.CRC:  # numpy.load's zipfile refuses the member
                    raise InputError(f"{path}: {member}: bad CRC-32 (numpy.load would refuse the archive)")
                array = np.frombuffer(stored, dtype=dtype, count=count, offset=start)
            out[name] = array.reshape(shape, order="F" if fortran else "C")
        return out, names


def _head(path: Path, size: int) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(size)


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader


def _member_ends(path: Path, z: zipfile.ZipFile, chosen: list[zipfile.ZipInfo], blob: FileBytes | None) -> dict:
    """{local header offset: where that member's bytes must end}: the next local header, or the central directory.
    A chosen member whose data run past it overlaps another (or the directory): newer versions of zipfile, and so of
    numpy.load, refuse the archive, older ones read it; certsym refuses it whatever the version."""
    starts = sorted({info.header_offset for info in z.infolist()}) + [z.start_dir]
    ends = dict(zip(starts, starts[1:], strict=False))
    with open(path, "rb") if blob is None else io.BytesIO(blob.data) as raw:
        for info in chosen:
            if info.header_offset < 0:
                continue  # zipfile fails its seek, with its own refusal
            raw.seek(info.header_offset)
            header = raw.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size:
                continue
            fields = _LOCAL_HEADER.unpack(header)
            if info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11] + info.compress_size \
                    > ends[info.header_offset]:
                raise InputError(f"{path}: the member {info.filename!r} overlaps the next one (newer versions of "
                                 "numpy.load refuse the archive)")
    return ends


def _stored_member(blob: FileBytes, info: zipfile.ZipInfo, end: int) -> memoryview | None:
    """The bytes of an uncompressed, unencrypted member, in place, when its local header agrees with the central
    directory as zipfile checks it and its data end by ``end`` (the next local header or the central directory:
    newer zipfiles refuse overlapping members); None otherwise (zipfile then reads the member, with its own
    refusals, as numpy.load does)."""
    data, at = blob.data, info.header_offset
    # only the flags a stored member may carry: a data descriptor (0x8) and UTF-8 names (0x800); a negative offset
    # (an end record that claims too much) makes zipfile fail its seek
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & ~0x808 or at < 0 \
            or at + _LOCAL_HEADER.size > len(data):
        return None
    header = _LOCAL_HEADER.unpack_from(data, at)
    start = at + _LOCAL_HEADER.size + header[10] + header[11]
    try:
        name = data[at + _LOCAL_HEADER.size:at + _LOCAL_HEADER.size + header[10]].decode(
            "utf-8" if header[3] & 0x800 else "cp437")
    except UnicodeDecodeError:
        return None
    if header[0] != b"PK\x03\x04" or name != info.orig_filename or info.compress_size != info.file_size \
            or start + info.file_size > min(len(data), end):
        return None
    return memoryview(data)[start:start + info.file_size]


def _sharded(path: Path) -> tuple[dict, list[dict]]:
    """docs/FORMATS.md, sharded safetensors: the union of the shards' tensors, each shard holding exactly the
    tensors the index's weight map assigns to it; and the record of the shards [{"file", "sha256"}]."""
    weight_map, shards = read_index(path)
    tensors: dict = {}
    record = []
    total = 0
    for shard in shards:
        file = path.parent / shard
        if not file.is_file():
            raise InputError(f"{path}: the shard {shard!r} named in the weight map is not a file beside the index")
        total += file.stat().st_size
        if total > MAX_SHARD_BYTES:
            raise InputError(f"{path}: the shards hold more than the {MAX_SHARD_BYTES} bytes certsym reads")
        data = file.read_bytes()
        held, _ = _safetensors_data(data, file)
        expected = {name for name, where in weight_map.items() if where == shard}
        if set(held) != expected:
            odd = sorted(set(held) ^ expected)
            raise InputError(f"{path}: the shard {shard!r} does not hold exactly the tensors the weight map assigns to "
                             f"it ({', '.join(odd)[:200]})")
        tensors.update(held)
        record.append({"file": shard, "sha256": hashlib.sha256(data).hexdigest()})
    return tensors, record


def _whole_msgpack_map(data: bytes) -> bool:
    """Whether ``data`` is, as a whole, one msgpack map (a Flax file's form); False without msgpack installed."""
    try:
        import msgpack  # the models extra
    except ImportError:
        return False
    try:
        return isinstance(msgpack.unpackb(data, raw=False, strict_map_key=False), dict)
    except Exception:  # noqa: BLE001 - any failure to read it as msgpack means it is not one
        return False


def _safetensors(path: Path, blob: FileBytes | None = None) -> tuple[dict, list[str]]:
    """docs/FORMATS.md, safetensors: one header, no repeated key, tensors tiling the buffer exactly."""
    return _safetensors_data(blob.data if blob is not None else path.read_bytes(), path)


def _safetensors_data(data: bytes, path: Path) -> tuple[dict, list[str]]:
    if data and is_msgpack_map(data[0]) and _whole_msgpack_map(data):
        raise InputError(f"{path}: both a safetensors file and a msgpack map: refused as ambiguous")
    if len(data) < 8:
        raise InputError(f"{path}: not a .safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    if size > 100_000_000:  # the safetensors library's own limit
        raise InputError(f"{path}: the header has {size} bytes, more than the safetensors library reads")
    if size > len(data) - 8:
        raise InputError(f"{path}: the header runs past the end of the file")

    def unique(pairs: list) -> dict:
        out = dict(pairs)
        if len(out) != len(pairs):
            raise InputError(f"{path}: the header repeats a key")
        return out

    def unsigned(text: str) -> int:
        if text.startswith("-"):  # serde reads -0 as a float, and no size is negative
            raise InputError(f"{path}: the header holds the negative number {text[:20]}")
        return int(text)

    try:
        header = json.loads(data[8:8 + size].decode("utf-8"), object_pairs_hook=unique, parse_int=unsigned)
        json.dumps(header, ensure_ascii=False).encode("utf-8")  # a lone surrogate (\ud800) fails here, as in serde
    except (UnicodeError, ValueError):
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


@dataclass(frozen=True)
class Selection:
    """How the four tensors of a tensor-map file are chosen (docs/FORMATS.md, "the selection rule"): ``keys``
    (W1, b1, W2, b2; a bias may be None) or the default rule; ``layout`` "out-in" (torch) or "in-out" (Flax,
    Keras); ``state_key``, the path to the state dict inside a torch checkpoint (None: found by the rule)."""

    keys: tuple[str | None, ...] | None = None
    layout: str = "out-in"
    state_key: tuple[str, ...] | None = None
    activation: str | None = None  # "relu": the user states σ, which a tensor file cannot (the record says so)

    def __post_init__(self) -> None:
        if self.activation not in (None, "relu"):
            raise InputError(f"activation {self.activation!r}: certsym reads ReLU networks only (give 'relu' to state "
                             "that a file's network is one, or leave it out)")

    @property
    def activation_record(self) -> str:
        """The record's "activation" for a tensor file read under this selection."""
        return ACTIVATION_STATED if self.activation == "relu" else ACTIVATION_ASSUMED

    @classmethod
    def of(cls, value: Selection | Sequence[str | None] | None) -> Selection:
        """A Selection from a Selection, four tensor names, or None (the default rule)."""
        if value is None or isinstance(value, Selection):
            return value or cls()
        return cls(keys=parse_keys(value))


def parse_keys(value: str | Sequence[str | None]) -> tuple[str | None, ...]:
    """Tensor names W1,b1,W2,b2 (one hidden layer), or one weight and bias per affine layer W1,b1,…,W_{L+1},b_{L+1}
    for a deep network, from "W1,b1,W2,b2,…" (spaces around names ignored) or a sequence; a bias written "-" (or
    None) is absent and read as 0."""
    names = [x.strip() if isinstance(x, str) else x for x in (value.split(",") if isinstance(value, str) else value)]
    if len(names) < 4 or len(names) % 2 or any(x == "" for x in names):
        raise InputError("--keys expects a weight and a bias per layer, W1,b1,W2,b2[,W3,b3,…] (a bias may be '-' "
                         "for none), e.g. 0.weight,0.bias,2.weight,2.bias")
    out = tuple(None if x in ("-", None) else x for x in names)
    if any(w is None for w in out[::2]):
        raise InputError("--keys: every weight must be named ('-' is for an absent bias)")
    return out


_PREFIXES = ("module.", "_orig_mod.", "model.")  # DataParallel, torch.compile, a Lightning module's self.model
_LAYERS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _strip(name: str) -> str:
    while name.startswith(_PREFIXES):
        name = name[len(next(p for p in _PREFIXES if name.startswith(p))):]
    return name


def _default_names(fmt: str, names: list[str]) -> list[str | None] | None:
    """The default rule of ``fmt`` for one hidden layer: Flax's Dense_0, Dense_1 for msgpack, else
    ``default_choice``."""
    if fmt == "msgpack":
        chain = flax_chain(names)
        return [x for pair in chain for x in pair] if chain is not None and len(chain) == 2 else None
    return default_choice(names)


def default_choice(names: Sequence[str]) -> list[str | None] | None:
    """The default rule (docs/FORMATS.md): with the prefixes module., _orig_mod. and model. removed from every name
    (when every name has one), exactly 0.weight and 2.weight with optional 0.bias and 2.bias, or exactly
    A, b, M, c. Returns the full names picked, None for an absent bias; None when the rule picks nothing."""
    if set(names) == set(LETTER_KEYS) and len(names) == 4:
        return list(LETTER_KEYS)
    stripped = {_strip(n): n for n in names} if all(n.startswith(_PREFIXES) for n in names) else {n: n for n in names}
    if len(stripped) != len(names) or not {"0.weight", "2.weight"} <= set(stripped) <= set(_LAYERS):
        return None
    return [stripped.get(layer) for layer in _LAYERS]


def chain_choice(names: Sequence[str]) -> list[tuple[str, str | None]] | None:
    """The default rule for deep networks (docs/FORMATS.md): with the prefixes removed as for ``default_choice``,
    exactly 0.weight, 2.weight, …, (2L).weight for L ≥ 2 hidden layers, with optional biases of the same
    indices (torch's Sequential(Linear, ReLU, Linear, ReLU, …, Linear)). Returns the (weight, bias or None) full
    names in order, None when the rule picks nothing."""
    stripped = {_strip(n): n for n in names} if all(n.startswith(_PREFIXES) for n in names) else {n: n for n in names}
    if len(stripped) != len(names):
        return None
    count = sum(1 for i in range(0, 2 * len(names) + 2, 2) if f"{i}.weight" in stripped)
    wanted = {f"{i}.{part}" for i in range(0, 2 * count, 2) for part in ("weight", "bias")}
    if count < 3 or not set(stripped) <= wanted or any(f"{i}.weight" not in stripped for i in range(0, 2 * count, 2)):
        return None
    return [(stripped[f"{i}.weight"], stripped.get(f"{i}.bias")) for i in range(0, 2 * count, 2)]


def _is_state_dict(obj: object) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) and isinstance(v, np.ndarray)
                                                       for k, v in obj.items())


def _root(path: Path, tree: object, selection: Selection) -> tuple[dict, dict]:
    """The state dict inside a torch checkpoint and its record {"path", "rule"} (docs/FORMATS.md, "root")."""
    if selection.state_key is not None:
        node = tree
        for key in selection.state_key:
            if not isinstance(node, dict) or key not in node:
                found = f" (found {', '.join(map(str, list(node)[:8]))})" if isinstance(node, dict) else ""
                raise InputError(f"{path}: --state-key {'.'.join(selection.state_key)}: no entry {key!r}{found}")
            node = node[key]
        if not _is_state_dict(node):
            raise InputError(f"{path}: --state-key {'.'.join(selection.state_key)} is not a map of names to tensors")
        return node, {"path": list(selection.state_key), "rule": "state-key"}
    if _is_state_dict(tree):
        return tree, {"path": [], "rule": "auto"}
    if not isinstance(tree, dict):
        raise InputError(f"{path}: the file holds a {type(tree).__name__}, not a state dict")

    def holds_layers(sd: dict) -> bool:
        if selection.keys is not None:
            return all(k in sd for k in selection.keys if k is not None)
        return default_choice(list(sd)) is not None or chain_choice(list(sd)) is not None

    found = [key for key, value in tree.items() if _is_state_dict(value) and holds_layers(value)]
    if len(found) != 1:
        what = "no entry" if not found else f"{len(found)} entries ({', '.join(found)})"
        raise InputError(f"{path}: a checkpoint with {what} holding the layers (top-level keys: "
                         f"{', '.join(map(str, list(tree)[:8]))}); choose one with --state-key")
    if not isinstance(found[0], str):
        raise InputError(f"{path}: the state dict lies under the key {found[0]!r}, not a string; certsym reads string "
                         "keys only")
    return tree[found[0]], {"path": [found[0]], "rule": "auto"}


def _kind(name: str) -> str:
    """The layer kind a tensor name suggests, for error messages."""
    low = name.lower()
    for word, kind in (("running_mean", "BatchNorm"), ("running_var", "BatchNorm"), ("num_batches", "BatchNorm"),
                       ("bn", "BatchNorm"), ("norm", "normalization"), ("conv", "Conv"), ("embed", "Embedding")):
        if word in low:
            return kind
    return ""


def _explain(path: Path, present: list[str], fmt: str = "", tensors: dict | None = None) -> InputError:
    """Why the default rule picked nothing, naming what the file holds (``tensors``, when given, by their shapes
    too: a 1-D ``….weight`` is a normalization layer's scale, not a Linear weight)."""
    if fmt == "msgpack":
        return InputError(f"{path}: the Flax default rule reads exactly Dense_0, Dense_1 (kernel and bias, under "
                          f"params. or not) and found {', '.join(sorted(present))[:300] or 'no array'}; choose the "
                          "tensors with --keys")
    stripped = sorted({_strip(n) for n in present})
    layers = sorted({m.group(1) for k in stripped if (m := re.match(r"(\d+)\.weight$", k))}, key=int)
    kinds = sorted({k for k in map(_kind, present) if k})
    if kinds:
        named = ", ".join(n for n in present if _kind(n))[:200]
        recipe = " (a BatchNorm in eval mode folds into the Linear before it: torch.nn.utils.fusion." \
            "fuse_linear_bn_eval, in floats; then compare folds with certsym distance)" if "BatchNorm" in kinds else ""
        return InputError(f"{path}: found {' and '.join(kinds)} tensors ({named}); certsym reads Linear, ReLU, Linear "
                          f"only{recipe}")
    norms = [n for n in present if n.endswith(".weight") and tensors is not None and tensors.get(n) is not None
             and np.ndim(tensors[n]) == 1]
    if norms:
        return InputError(f"{path}: {', '.join(norms[:4])} {'is' if len(norms) == 1 else 'are'} 1-D: the scale of a "
                          "normalization layer (LayerNorm, or a BatchNorm), not a Linear weight; certsym reads Linear "
                          "and ReLU layers only (a LayerNorm is not piecewise linear; a BatchNorm in eval mode folds "
                          "into the Linear before it: torch.nn.utils.fusion.fuse_linear_bn_eval, in floats; then "
                          "compare folds with certsym distance)")
    if len(layers) > 2 and chain_choice(present) is not None:
        return InputError(f"{path}: found {len(layers)} linear layers ({', '.join(x + '.weight' for x in layers)}), "
                          f"{len(layers) - 1} hidden: this command decides one-hidden-layer networks (certsym equiv "
                          "decides deep ones)")
    if len(layers) > 2:
        return InputError(f"{path}: found {len(layers)} linear layers ({', '.join(x + '.weight' for x in layers)}) "
                          "with other tensors; certsym reads Linear and ReLU layers only")
    if {"0.weight", "2.weight"} <= set(stripped):
        extra = sorted(set(stripped) - set(_LAYERS))
        return InputError(f"{path}: found extra tensors ({', '.join(extra)[:200]}) besides the layers; certsym reads "
                          "one hidden layer (Linear, ReLU, Linear); choose the four tensors with --keys")
    missing = [k for k in ("0.weight", "2.weight") if k not in stripped]
    named = _named_keys(present)
    layers = " → ReLU → ".join(w[:-len(".weight")] for w in (named or "").split(",")[::2])
    chain = "" if named is None else f" (this reads the chain {layers} in this order; a model whose forward adds " \
        "skip connections or other operations computes something else)"
    return InputError(f"{path}: missing {', '.join(missing)} (found {', '.join(sorted(present))[:300] or 'nothing'}); "
                      f"set the tensor names with --keys {named or 'W1,b1,W2,b2'}{chain}")


def _named_keys(present: list[str]) -> str | None:
    """The --keys of a chain of named Linear layers (``fc1.weight, fc1.bias, fc2.weight, …``, in the file's order),
    when every weight has its bias; None otherwise."""
    weights = [n for n in present if n.endswith(".weight")]
    pairs = [(w, w[:-len("weight")] + "bias") for w in weights]
    if len(weights) < 2 or any(b not in present for _, b in pairs):
        return None
    return ",".join(name for pair in pairs for name in pair)


def safetensors_like(head: bytes, size: int) -> bool:
    """The safetensors test on a file's first 9 bytes and its size: a header length that fits, then "{"."""
    return len(head) == 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] <= size - 8


def detect_format(path: str | os.PathLike) -> str | None:
    """The model format of a file by its content (docs/FORMATS.md): a zip archive holding data.pkl is torch, other
    zip archives npz; a little-endian header length followed by "{" is safetensors; a .onnx file is ONNX.
    None for anything else (a JSON parameter file, for instance). Cost: reading a few bytes (and a zip directory)."""
    path = Path(path)
    if not path.is_file():  # a pipe or a device is never opened (reading it could block)
        return None
    if is_index(path):
        return "safetensors-sharded"
    if path.suffix.lower() == ".msgpack":  # Flax: one msgpack map (fixmap, map 16 or map 32)
        with open(path, "rb") as fh:
            head = fh.read(9)
            size = fh.seek(0, 2)
        if head and is_msgpack_map(head[0]) and not safetensors_like(head, size):
            return "msgpack"
        if head and is_msgpack_map(head[0]):
            raise InputError(f"{path}: both a msgpack map and a safetensors header: refused as ambiguous")
        raise InputError(f"{path}: not a Flax msgpack file (it does not begin with a msgpack map)")
    head = b""
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
            size = fh.seek(0, 2)
        if head[:4] == b"PK\x03\x04":
            names = zip_names(path)
            if names is not None:
                return "torch" if any(n.endswith("/data.pkl") for n in names) else "npz"
        elif safetensors_like(head, size):
            return "safetensors"
    except (OSError, zipfile.BadZipFile):
        pass
    suffix = FORMATS.get(path.suffix.lower())
    if suffix == "onnx" or (path.name.lower().endswith(".onnx.gz") and head[:2] == b"\x1f\x8b"):
        return "onnx"  # a gzipped one (VNN-COMP ships them so) is read decompressed
    if suffix == "nnet":
        return "nnet"
    if head[:2] == b"\x80\x02" and suffix == "torch":
        return "torch"  # the legacy format: refused with its own message by the reader
    return None


def _tensor_map(path: Path, fmt: str, selection: Selection, blob: FileBytes | None = None) -> tuple[dict, dict]:
    """(name → array) of a tensor-map file (the state dict of a torch checkpoint), and what the "model" record
    adds for its format: {"root": …} for torch, {"shards": […]} for sharded safetensors, else nothing."""
    if fmt == "npz":
        if selection.keys is None:
            def wanted(names: list[str]) -> set[str]:
                return {k for k in default_choice(names) or () if k is not None}
        else:
            wanted = {k for k in selection.keys if k is not None}
        tensors, names = _npz(path, wanted, blob)
        return {name: tensors.get(name) for name in names}, {}
    if fmt == "safetensors":
        return _safetensors(path, blob)[0], {}
    if fmt == "safetensors-sharded":
        tensors, shards = _sharded(path)
        return tensors, {"shards": shards}
    if fmt == "msgpack":
        return read_msgpack(path, bfloat16_to_float32), {}
    if selection.state_key is not None and fmt != "torch":
        raise InputError(f"{path}: --state-key applies to torch checkpoints only")
    tensors, root = _root(path, load_torch(path), selection)
    return tensors, {"root": root}


# The activation reading every model record states (docs/FORMATS.md): tensor files and state dicts hold no
# activation, so they are read as ReLU networks; an ONNX graph names its Relu node.
ACTIVATION_ASSUMED = "relu, assumed: the file holds no activation"
ACTIVATION_STATED = "relu, stated by the user: the file holds no activation"
ACTIVATION_GRAPH = "relu, the graph's Relu node"


def reading(record: dict | None) -> str | None:
    """The sentence a verdict prints about how a model file was read, or None for a parameter file (whose format
    defines σ = ReLU)."""
    if not record or "activation" not in record:
        return None
    if record["activation"] == ACTIVATION_ASSUMED:
        text = "read as a ReLU network (the file holds no activation)"
    elif record["activation"] == ACTIVATION_STATED:
        text = "a ReLU network, as stated with --activation relu (activation='relu'; the file holds no activation)"
    elif record["activation"] == ACTIVATION_NNET:
        text = NNET_READING
    elif record.get("head"):
        text = (f"a ReLU network (the graph's Relu nodes) ending in a {record['head']}, read as the logits it "
                "normalizes: a top-1 answer is the same for both")
    else:
        text = "a ReLU network (the graph's Relu nodes)"
    if record.get("rule") == "keys" and record["activation"] in (ACTIVATION_ASSUMED, ACTIVATION_STATED):
        text += ("; the chain of the layers the keys name, in that order (the file holds no wiring: a forward with "
                 "skip connections or other operations computes something else)")
    if record.get("quantized") and record.get("format") == "onnx":
        text += (f"; its DequantizeLinear weights ({', '.join(record['quantized'])}) read as the operator outputs "
                 "them, scale·(q − zero point) rounded to the scale's type")
    elif record.get("quantized"):
        text += (f"; its quantized weights ({', '.join(record['quantized'])}) read as the exact values scale·(q − "
                 "zero point)")
    return text


def head_refusal(name: str, head: str) -> str:
    """Why a Softmax-headed file is refused where the values of its outputs matter."""
    return (f"{name}: the graph ends in a {head}, so its outputs are not the logits certsym reads; only top-1 "
            f"questions (certsym distance --top1), which a {head} cannot change, are answered about it")


def read_arrays(path: str | os.PathLike, keys: Selection | Sequence[str | None] | None = None,
                blob: FileBytes | None = None) -> tuple[list, dict]:
    """The four tensors (W1, b1, W2, b2) as numpy arrays, layout-checked, with the "model" record that
    certificates carry: {"format", "rule", "tensors", "layout", "activation"} (and "root" for torch; "external"
    instead of "layout" for ONNX).
    An absent bias is read as zeros. Cost: reading the file."""
    path = Path(resolve(str(path))[0])
    selection = Selection.of(keys)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    fmt = detect_format(path)
    if fmt == "msgpack":  # a Flax Dense kernel is stored inputs × outputs, by construction
        selection = replace(selection, layout="in-out")
    if fmt is None:
        raise InputError(f"{path}: not a model file certsym reads (npz, safetensors, torch zip archive .pt/.pth/.bin/"
                         ".ckpt, ONNX .onnx) nor a JSON parameter file")
    try:
        if fmt == "nnet":
            layers, record = read_nnet(path)
            if len(layers) != 2:
                raise InputError(f"{path}: a network with {len(layers) - 1} hidden layers: this command decides "
                                 "one-hidden-layer networks (certsym equiv decides deep ones)")
            arrays = [a for layer in layers for a in layer]
        elif fmt == "onnx":
            if replace(selection, activation=None) != Selection():
                raise InputError(f"{path}: the tensors of an ONNX model follow from its graph; --keys, --layout and "
                                 "--state-key do not apply")
            chain = read_onnx_chain(path)
            arrays, names, external = read_onnx(path, chain)
            if len(set(names)) != 4:
                raise InputError(f"{path}: one initializer serves as two of W1, b1, W2, b2 ({', '.join(names)}); "
                                 "certsym reads four distinct initializers")
            record = _onnx_record(names, external, chain.head, chain.normalization, chain.scaled, chain.quantized)
            if chain.affine is not None or chain.scaled:
                arrays = [a for layer in chain.exact_layers() for a in layer]
        else:
            if selection.keys is not None and len(selection.keys) != 4:
                raise InputError(f"{path}: --keys names {len(selection.keys) // 2} layers: this command decides "
                                 "one-hidden-layer networks (certsym equiv decides deep ones)")
            tensors, extra = _tensor_map(path, fmt, selection, blob)
            if selection.keys is not None:
                given = [k for k in selection.keys if k is not None]
                if len(set(given)) != len(given):
                    raise InputError(f"{path}: --keys names one tensor twice ({', '.join(given)})")
                missing = [k for k in selection.keys if k is not None and k not in tensors]
                if missing:
                    raise InputError(f"{path}: missing {', '.join(missing)} (found "
                                     f"{', '.join(sorted(tensors))[:300] or 'nothing'})")
                names, rule = list(selection.keys), "keys"
                warn_unread(path, names, list(tensors))
            else:
                names, rule = _default_names(fmt, list(tensors)), "default"
                if names is None:
                    raise _explain(path, list(tensors), fmt, tensors)
            record = {"format": fmt, "rule": rule, "tensors": names, "layout": selection.layout,
                      "activation": selection.activation_record}
            record.update(extra)
            record.update(quantized_field(names, tensors))
            arrays = [None if name is None else tensors[name] for name in names]
            for name, array in zip(names, arrays, strict=True):
                if array is not None:
                    _check_dtype(array.dtype, f"{path}: tensor {name!r}")
                    if not all_finite(array):
                        raise InputError(f"{path}: tensor {name!r} holds a NaN or infinite weight")
                    if array.ndim != (2 if name in (names[0], names[2]) else 1):
                        kind = _kind(name) or ("Conv" if array.ndim in (3, 4, 5) else "")
                        kind = f" ({kind} layer)" if kind else ""
                        raise InputError(f"{path}: tensor {name!r} has shape {tuple(array.shape)}{kind}; a Linear "
                                         "weight is 2-D, a bias 1-D")
            if selection.layout == "in-out":
                arrays[0], arrays[2] = arrays[0].T, arrays[2].T
            for i in (1, 3):  # an absent bias is 0, in the weight's type
                if arrays[i] is None:
                    arrays[i] = np.zeros(arrays[i - 1].shape[0], dtype=arrays[i - 1].dtype)
            _dimensions(path, arrays[0].shape[1], arrays[2].shape[0])
    except InputError:
        raise
    except zipfile.BadZipFile:
        raise InputError(f"{path}: not a zip archive") from None
    except Exception as exc:  # corrupt files raise many types; report them in one line
        raise InputError(f"{path}: cannot read the model file ({type(exc).__name__}: {exc})".splitlines()[0]) from None
    shapes = [a.shape for a in arrays]
    if len(shapes[0]) != 2 or len(shapes[2]) != 2 or len(shapes[1]) != 1 or len(shapes[3]) != 1 \
            or shapes[1][0] != shapes[0][0] or shapes[2][1] != shapes[0][0] or shapes[3][0] != shapes[2][0]:
        hint = " (Flax and Keras store kernels inputs x outputs: try --layout in-out)" \
            if len(shapes[0]) == 2 and len(shapes[2]) == 2 and shapes[0][1] == shapes[2][0] else ""
        raise InputError(f"{path}: mismatched shapes {[tuple(s) for s in shapes]} for (W1, b1, W2, b2); expected "
                         f"(n, m), (n,), (k, n), (k,){hint}")
    return arrays, record


def read_model(path: str | os.PathLike, keys: Selection | Sequence[str | None] | None = None) -> dict:
    """The four tensors as exact nested lists: {"A": n×m, "b": n, "M": k×n, "c": k}, with "m" and
    "model" (see ``read_arrays``)."""
    (W1, b1, W2, b2), model = read_arrays(path, keys)
    n, m = W1.shape
    k = W2.shape[0]
    A, M = exact(W1), exact(W2)
    return {"A": [A[i * m:(i + 1) * m] for i in range(n)], "b": exact(b1),
            "M": [M[j * n:(j + 1) * n] for j in range(k)], "c": exact(b2), "m": m, "model": model}


def read_layers(path: str | os.PathLike, selection: Selection | None = None,
                blob: FileBytes | None = None) -> tuple[list, dict, bool]:
    """The affine layers [(W_1, b_1), …, (W_{L+1}, b_{L+1})] of a model file as numpy arrays (out × in), the
    "model" record, and whether a ReLU follows the last layer (only an ONNX graph can say so): a one-hidden-layer
    file as ``read_arrays`` reads it, a deeper npz, safetensors or torch file by ``chain_choice`` (the default
    rule) or by ``--keys`` naming a weight and a bias per layer, an ONNX file by its graph. Absent biases are zeros.
    ``blob``, the file as the caller read it once (``certsym.io.filebytes``), is parsed instead of the file on disk
    (npz and safetensors), so that what is read is what the caller hashed. Cost: reading the file."""
    path, selection = Path(resolve(str(path))[0]), selection or Selection()
    fmt = detect_format(path) if path.exists() else None
    if fmt == "msgpack":  # a Flax Dense kernel is stored inputs × outputs, by construction
        selection = replace(selection, layout="in-out")
    if fmt == "nnet":
        if replace(selection, activation=None) != Selection():
            raise InputError(f"{path}: the layers of an NNet file follow from its text; --keys, --layout and "
                             "--state-key do not apply")
        return *read_nnet(path), False
    if fmt == "onnx":
        if replace(selection, activation=None) != Selection():
            raise InputError(f"{path}: the tensors of an ONNX model follow from its graph; --keys, --layout and "
                             "--state-key do not apply")
        chain = read_onnx_chain(path)
        if len(set(chain.names)) != len(chain.names):
            raise InputError(f"{path}: one initializer serves as two of the layers' tensors "
                             f"({', '.join(chain.names)}); certsym reads distinct initializers")
        return chain.exact_layers(), _onnx_record(chain.names, chain.external, chain.head, chain.normalization,
                                                  chain.scaled, chain.quantized), chain.output_relu
    if fmt in ("npz", "safetensors", "safetensors-sharded", "torch", "msgpack") and selection.keys is None:
        tensors, extra = _chain_tensors(path, fmt, selection, blob)
        chain = flax_chain(list(tensors)) if fmt == "msgpack" else chain_choice(list(tensors))
        if chain is not None:
            return *_chain_arrays(path, fmt, tensors, chain, selection, extra, "default"), False
    if fmt in ("npz", "safetensors", "safetensors-sharded", "torch", "msgpack") and selection.keys is not None \
            and len(selection.keys) > 4:
        keys = selection.keys
        given = [k for k in keys if k is not None]
        if len(set(given)) != len(given):
            raise InputError(f"{path}: --keys names one tensor twice ({', '.join(given)})")
        tensors, extra = _chain_tensors(path, fmt, selection, blob)
        missing = [k for k in given if tensors.get(k) is None]
        if missing:
            found = ", ".join(sorted(tensors))[:300] or "nothing"
            raise InputError(f"{path}: missing {', '.join(missing)} (found {found})")
        chain = list(zip(keys[::2], keys[1::2], strict=True))
        warn_unread(path, keys, list(tensors))
        return *_chain_arrays(path, fmt, tensors, chain, selection, extra, "keys"), False
    (W1, b1, W2, b2), record = read_arrays(path, selection, blob)
    return [(W1, b1), (W2, b2)], record, False


def _dimensions(path: Path, m: int, k: int) -> None:
    """A network has at least one input and one output (as a parameter file must)."""
    if m < 1 or k < 1:
        raise InputError(f"{path}: the {'input dimension m' if m < 1 else 'output dimension k'} is 0; a network "
                         "has at least one input and one output")


def _chain_tensors(path: Path, fmt: str, selection: Selection, blob: FileBytes | None = None) -> tuple[dict, dict]:
    """``_tensor_map`` for a chain of layers (an npz under the default rule: only the members the chain needs),
    with every failure of a corrupt file in one line."""
    try:
        if fmt == "npz" and selection.keys is None:
            def wanted(names: list[str]) -> set[str]:
                return {k for pair in chain_choice(names) or () for k in pair if k is not None}
            tensors, names = _npz(path, wanted, blob)
            return {name: tensors.get(name) for name in names}, {}
        return _tensor_map(path, fmt, selection, blob)
    except InputError:
        raise
    except Exception as exc:  # corrupt files raise many types; report them in one line
        raise InputError(f"{path}: cannot read the model file ({type(exc).__name__}: {exc})".splitlines()[0]) \
            from None


def _onnx_record(names: list[str], external: list[tuple[str, str]], head: str | None = None,
                 normalization: list[tuple[str, str]] | None = None, scaled: list | None = None,
                 quantized: dict | None = None) -> dict:
    """The "model" record of an ONNX file (docs/FORMATS.md): its tensors follow from the graph; "head" names a
    final Softmax or LogSoftmax, the layers being its logits; "normalization" the Sub, Add, Mul and Div by
    constants before the first layer, [op, initializer] in order, folded into it; "alpha_beta" the Gemm layers
    whose alpha or beta is not 1, [ℓ, alpha, beta] (exact strings)."""
    record = {"format": "onnx", "rule": "graph", "tensors": list(names),
              "external": [{"location": loc, "sha256": digest} for loc, digest in external],
              "activation": ACTIVATION_GRAPH}
    return record | ({"head": head} if head else {}) | \
        ({"normalization": [list(step) for step in normalization]} if normalization else {}) | \
        ({"alpha_beta": scaled} if scaled else {}) | ({"quantized": dict(quantized)} if quantized else {})


def _chain_arrays(path: Path, fmt: str, tensors: dict, chain: list, selection: Selection,
                  extra: dict, rule: str) -> tuple[list, dict]:
    layers, width = [], None
    for ell, (wname, bname) in enumerate(chain, 1):
        W, b = tensors[wname], None if bname is None else tensors[bname]
        for name, array, ndim in ((wname, W, 2), (bname, b, 1)):
            if array is None:
                continue
            _check_dtype(array.dtype, f"{path}: tensor {name!r}")
            if not all_finite(array):
                raise InputError(f"{path}: tensor {name!r} holds a NaN or infinite weight")
            if array.ndim != ndim:
                raise InputError(f"{path}: tensor {name!r} has shape {tuple(array.shape)}; a Linear weight is 2-D, "
                                 "a bias 1-D")
        if selection.layout == "in-out":
            W = W.T
        b = np.zeros(W.shape[0], dtype=W.dtype) if b is None else b
        if b.shape[0] != W.shape[0] or (width is not None and W.shape[1] != width):
            raise InputError(f"{path}: layer {ell} ({wname}) has shape {tuple(W.shape)} and bias {tuple(b.shape)}; "
                             f"expected (out, {width if width is not None else 'in'}) and (out,)")
        layers.append((W, b))
        width = W.shape[0]
    _dimensions(path, layers[0][0].shape[1], layers[-1][0].shape[0])
    names = [x for pair in chain for x in pair]
    record = {"format": fmt, "rule": rule, "tensors": names, "layout": selection.layout,
              "activation": selection.activation_record}
    record.update(extra)
    record.update(quantized_field(names, tensors))
    return layers, record


def warn_unread(path: Path, names: Sequence[str | None], present: Sequence[str]) -> None:
    """A ``CertsymWarning`` when --keys leaves some of the file's tensors unread (another layer, a normalization or
    a projection of a skip connection would then be missing from the network read)."""
    chosen = {n for n in names if n is not None}
    unread = [n for n in present if n not in chosen]
    if unread:
        warnings.warn(CertsymWarning(
            f"{path}: the keys read {len(chosen)} of the file's {len(present)} tensors; {', '.join(unread[:6])}"
            f"{', …' if len(unread) > 6 else ''} {'is' if len(unread) == 1 else 'are'} not read: if the model's "
            "forward uses them, the network certsym reads computes something else"), stacklevel=2)


def quantized_field(names: Sequence[str | None], tensors: dict) -> dict:
    """The record's {"quantized": {name: scheme}} for the chosen tensors that were stored quantized and read as
    their exact values s·(q − z) (``certsym.io.quantized``), or {} when none was."""
    found = {name: tensors[name].scheme for name in names if isinstance(tensors.get(name), Dequantized)}
    return {"quantized": found} if found else {}

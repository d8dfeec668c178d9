"""Model files read with the standard library, exactly (floats are dyadic), by docs/FORMATS.md.

Used to bind a certificate to the files it was made from: .npz and .safetensors here, torch archives in
``torchzip`` and ONNX in ``onnx``; ``model_tensors`` applies the selection rule (default, keys, graph) that
the certificate records. Element types: float16, bfloat16, float32, float64, int8..int64 and uint8, little
or big endian; nothing is unpickled. Every size is compared with its header before the bytes are read.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import math
import struct
import sys
import zipfile
import zlib
from lzma import LZMAError

from certsym_check.budget import charge
from certsym_check.errors import Reject
from certsym_check.inputs import (  # noqa: F401 - InputFile, read_regular and MAX_SIBLING are named here too
    MAX_SIBLING,
    InputFile,
    crc_matches,
    gunzip_bounded,
    read_regular,
    unique_object,
)
from certsym_check.readers.msgpack import flax_names, is_map, read_msgpack
from certsym_check.readers.onnx import read_onnx
from certsym_check.readers.tensor import WIDTH, Tensor, numpy_sized, unpack
from certsym_check.readers.torchzip import read_torch

NARROW = {"f2", "bf16", "f4"}  # at most 24 significant bits: a product of two is exact in binary64
MAX_GUNZIPPED = 1 << 31  # bytes of a decompressed .onnx.gz
MAX_SHARDS = 10_000  # shards of one sharded safetensors file
MAX_INDEX = 1 << 26  # bytes of a sharded safetensors index


_SAFE_CODES = {"F16": "f2", "BF16": "bf16", "F32": "f4", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4",
               "I64": "i8", "U8": "u1"}
_READ_ERRORS = (struct.error, zlib.error, OSError, EOFError, NotImplementedError, zipfile.LargeZipFile, RuntimeError,
                KeyError, ValueError, TypeError, MemoryError, LZMAError)
NPY_HEADER_MAX = 10_000  # numpy.lib.format's max_header_size: numpy.load refuses a longer .npy header
SAFETENSORS_HEADER_MAX = 100_000_000  # the safetensors library refuses a longer header
_INTP_MAX = (1 << 63) - 1


def no_surrogates(text: str, name: str) -> str:
    """The text, if it is Unicode without lone surrogates (which Rust's JSON reader, and so safetensors, refuses)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Reject(f"{name}: a string with a lone surrogate (\\ud800-\\udfff), which safetensors refuses") from None
    return text


def _nonnegative_int(text: str) -> int:
    """A JSON integer of a safetensors header: "-0" is refused (serde reads it as a float), as is any sign."""
    if text.startswith("-"):
        raise Reject(f"a negative number {text[:20]!r} in the .safetensors header")
    return int(text)


def read_tensors(data: bytes, fmt: str, wanted: set[str] | None = None) -> tuple[dict[str, Tensor], list[str]]:
    """({name: Tensor} for the ``wanted`` names (default all), every tensor name of the file) of an .npz or
    .safetensors file's bytes, by docs/FORMATS.md. Malformed or ambiguous files are rejected with the reason,
    never with another exception. Cost: linear in the bytes of the tensors read, which are bounded by their
    own headers before any decompression."""
    try:
        if fmt == "npz":
            return _npz(data, wanted)
        if fmt == "safetensors":
            if is_map(data):
                raise Reject("the file is both a safetensors file and a msgpack map: ambiguous")
            return _safetensors(data, wanted)
        if fmt == "msgpack":
            if _safetensors_like(data):
                raise Reject("the file is both a msgpack map and a safetensors file: ambiguous")
            return read_msgpack(data, wanted)
    except Reject:
        raise
    except zipfile.BadZipFile:
        raise Reject("the given file is not an .npz archive") from None
    except _READ_ERRORS as exc:
        raise Reject(f"unreadable {fmt} file ({type(exc).__name__})") from None
    raise Reject(f"unknown tensor-file format {fmt!r}")


def read_index(file: InputFile) -> tuple[dict[str, str], list[str]]:
    """docs/FORMATS.md, sharded safetensors: the weight map {tensor: shard} of an index file (a JSON object
    {"metadata", "weight_map"} with no repeated key) and its shards, sorted, each a plain file name."""
    if len(file.data) > MAX_INDEX:
        raise Reject(f"a sharded safetensors index of more than {MAX_INDEX} bytes")
    try:
        doc = json.loads(bytes(file.data).decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=unique_object)
    except (UnicodeError, ValueError):
        raise Reject("the sharded safetensors index is not a JSON object without repeated keys") from None
    if not isinstance(doc, dict) or "weight_map" not in doc or not set(doc) <= {"metadata", "weight_map"}:
        raise Reject("a sharded safetensors index is an object with a weight_map (and metadata)")
    weight_map, meta = doc["weight_map"], doc.get("metadata", {})
    if not isinstance(meta, dict) or not isinstance(weight_map, dict) or not weight_map \
            or not all(isinstance(v, str) for v in weight_map.values()):
        raise Reject("the index's weight_map must map tensor names to shard file names, and metadata be an object")
    for text in (*weight_map, *weight_map.values()):
        no_surrogates(text, "the sharded safetensors index")
    shards = sorted(set(weight_map.values()))
    if len(shards) > MAX_SHARDS:
        raise Reject(f"the index names {len(shards)} shards, more than the checker's {MAX_SHARDS}")
    return weight_map, shards


def read_sharded(file: InputFile, model: dict, wanted: set[str] | None) -> tuple[dict[str, Tensor], list[str]]:
    """``read_tensors`` for a sharded safetensors index: the union of its shards' tensors, after checking that the
    record's shards are the index's (each with its SHA-256) and that each shard holds exactly the tensors the
    weight map assigns to it. Cost: one SHA-256 and one read of every shard; at most MAX_SIBLING bytes in all."""
    weight_map, shards = read_index(file)
    recorded = model["shards"]
    if not isinstance(recorded, list) or not all(isinstance(r, dict) and set(r) == {"file", "sha256"}
                                                 for r in recorded):
        raise Reject("model.shards must be a list of {file, sha256}")
    if [r["file"] for r in recorded] != shards:
        raise Reject("the index's shards are not the ones the certificate names")
    out: dict[str, Tensor] = {}
    names: list[str] = []
    total = 0
    for rec in recorded:
        data = file.shard(rec["file"])
        total += len(data)
        if total > MAX_SIBLING:
            raise Reject(f"the shards hold more than the checker's {MAX_SIBLING} bytes")
        if hashlib.sha256(data).hexdigest() != rec["sha256"]:
            raise Reject(f"the SHA-256 of the shard {rec['file'][:60]!r} differs from the certificate's")
        tensors, present = read_tensors(data, "safetensors", wanted)
        if set(present) != {t for t, shard in weight_map.items() if shard == rec["file"]}:
            raise Reject(f"the shard {rec['file'][:60]!r} does not hold exactly the tensors the weight map assigns "
                         "to it")
        out.update(tensors)
        names += present
    return out, names


def model_bytes(file: InputFile, model: object) -> int:
    """The bytes a model file's weights are read from: the file's, or for a sharded safetensors index its shards'
    (from their metadata, nothing read; at most MAX_SIBLING in all). Cost: one stat per shard."""
    if isinstance(model, dict) and model.get("format") == "safetensors-sharded" and isinstance(model.get("shards"),
                                                                                               list):
        _, shards = read_index(file)
        total = 0
        for name in shards:
            total += file.shard_size(name)
            if total > MAX_SIBLING:
                raise Reject(f"the shards hold more than the checker's {MAX_SIBLING} bytes")
        return total
    return len(file.data)


def _safetensors_like(data: bytes) -> bool:
    """The safetensors test: a little-endian header length that fits the file, then "{"."""
    return len(data) >= 9 and data[8:9] == b"{" and struct.unpack("<Q", bytes(data[:8]))[0] <= len(data) - 8


def _npz(data: bytes, wanted: set[str] | None) -> tuple[dict[str, Tensor], list[str]]:
    if data[:4] != b"PK\x03\x04":  # numpy.load reads anything else as .npy or pickle, not as an archive
        raise Reject("the given file is not an .npz archive: it does not begin with a zip local header (numpy.load "
                     "would not read it as one)")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = z.namelist()
        if len(set(members)) != len(members):
            raise Reject("the .npz archive has two members with the same name")
        bad = [name for name in members if not name.endswith(".npy") or name[:-4].endswith(".npy")]
        if bad:
            raise Reject(f"the .npz member {bad[0][:60]!r} does not end in .npy, or ends in it twice (numpy would "
                         "read it under the name of another tensor)")
        names = [name[:-4] for name in members]
        chosen = [member for member, name in zip(members, names, strict=True) if wanted is None or name in wanted]
        inflated = sum(z.getinfo(member).file_size for member in chosen)
        if inflated > inflate_bound(len(data)):
            raise Reject(f"the .npz members would inflate to {inflated} bytes from {len(data)}: beyond the bound "
                         f"2^28 + 64 x the file size")
        _no_overlap(data, z, chosen)
        return {member[:-4]: _npy_member(z, member, data) for member in chosen}, names


def _no_overlap(data: bytes, z: zipfile.ZipFile, chosen: list[str]) -> None:
    """Each member read ends by the next local header, or by the central directory: newer versions of zipfile, and
    so of numpy.load, refuse an archive whose member overlaps another; older ones read it. Rejected whatever the
    version (docs/FORMATS.md). Cost: one local header per member read."""
    starts = sorted({info.header_offset for info in z.infolist()}) + [z.start_dir]
    ends = dict(zip(starts, starts[1:], strict=False))
    for member in chosen:
        info = z.getinfo(member)
        header = data[info.header_offset:info.header_offset + 30] if info.header_offset >= 0 else b""
        if len(header) != 30:
            continue  # zipfile's own reading refuses it
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        if info.header_offset + 30 + name_length + extra_length + info.compress_size > ends[info.header_offset]:
            raise Reject(f"the .npz member {member[:60]!r} overlaps the next one (newer versions of numpy.load "
                         "refuse the archive)")


def inflate_bound(size: int) -> int:
    """The most bytes the members read from an archive of ``size`` bytes may decompress to (docs/FORMATS.md)."""
    return (1 << 28) + 64 * size


def _stored_member(data: bytes, info: zipfile.ZipInfo) -> memoryview | None:
    """The bytes of an uncompressed member as a view into the archive's bytes (no copy), after the checks that
    reading it through zipfile makes: its local header where the directory says, sizes equal, and its CRC-32
    (zipfile raises "Bad CRC-32" at the end of the member, and so numpy.load; a large member's inside a replay on a
    thread, ``inputs.crc_matches``, settled before its verdict). None for compressed members."""
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
        return None
    offset = info.header_offset
    header = data[offset:offset + 30]
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise Reject(f"{info.filename[:60]}: no local header where the zip directory says")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    start = offset + 30 + name_length + extra_length
    view = memoryview(data)[start:start + info.file_size]
    message = f"{info.filename[:60]}: the member's CRC-32 does not match (numpy.load would refuse it)"
    if len(view) != info.file_size:
        raise Reject(message)
    crc_matches(view, info.CRC, message)
    return view


def _npy_member(z: zipfile.ZipFile, member: str, data: bytes) -> Tensor:
    """A .npy member read in two steps: the header (at most 64 KiB), then exactly the bytes its shape
    declares, after comparing them with the size the zip directory states. An uncompressed member's entries
    are read in place (``_stored_member``): the archive's bytes are held anyway, for their SHA-256."""
    info = z.getinfo(member)
    with z.open(info) as fh:
        head = fh.read(12)
        if len(head) < 10 or head[:6] != b"\x93NUMPY" or head[6] not in (1, 2, 3) or head[7] != 0:
            raise Reject(f"{member}: not a .npy array")
        if head[6] == 1:
            start, size = 10, struct.unpack("<H", head[8:10])[0]
        else:
            start, size = 12, struct.unpack("<I", head[8:12])[0]
        if size > NPY_HEADER_MAX:  # numpy counts characters; a UTF-8 header has at most as many as bytes
            raise Reject(f"{member}: .npy header longer than {NPY_HEADER_MAX} bytes (numpy refuses it)")
        head += fh.read(start + size - len(head))
        shape, fortran, code, big = _npy_header(head[start:start + size], member, head[6])
        count = math.prod(shape)
        body_size = count * WIDTH[code]
        numpy_sized(shape, WIDTH[code], member)
        if fortran and len(shape) > 2:
            raise Reject(f"{member}: a Fortran-order array of {len(shape)} dimensions (only 1-D and 2-D are read)")
        if info.file_size != start + size + body_size:
            raise Reject(f"{member}: the member holds {info.file_size - start - size} data bytes, its shape "
                         f"{shape} needs {body_size}")
        stored = _stored_member(data, info)
        body = fh.read(body_size) if stored is None else stored[start + size:]
    values = unpack(body, code, big, count, member)
    return Tensor(shape, values, fortran and len(shape) == 2, code)


def _npy_header(raw: bytes, name: str, version: int) -> tuple[tuple, bool, str, bool]:
    try:
        header = ast.literal_eval(raw.decode("utf8" if version == 3 else "latin1"))  # as numpy decodes each version
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, UnicodeDecodeError):
        raise Reject(f"{name}: unreadable .npy header") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"} \
            or type(header["fortran_order"]) is not bool or not isinstance(header["shape"], tuple) \
            or any(type(d) is not int or d < 0 for d in header["shape"]):
        raise Reject(f"{name}: unreadable .npy header")
    descr = header["descr"]
    if not isinstance(descr, str) or descr[1:] not in _NPY_CODES \
            or descr[:1] not in (("<", ">", "|") if descr[1:] in ("i1", "u1") else ("<", ">", "=")):
        raise Reject(f"{name}: unsupported element type {str(descr)[:20]!r}")
    big = descr[0] == ">" or (descr[0] == "=" and sys.byteorder == "big")
    return header["shape"], header["fortran_order"], descr[1:], big


_NPY_CODES = {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1"}


def _no_constant(name: str):
    raise ValueError(f"{name} in a .safetensors header")


def _safetensors(data: bytes, wanted: set[str] | None) -> tuple[dict[str, Tensor], list[str]]:
    if len(data) < 8:
        raise Reject("not a .safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    if size > SAFETENSORS_HEADER_MAX:
        raise Reject(f"the .safetensors header has {size} bytes, more than the {SAFETENSORS_HEADER_MAX} that "
                     "safetensors reads")
    if size > len(data) - 8:
        raise Reject("the .safetensors header runs past the end of the file")
    header = json.loads(data[8:8 + size].decode("utf-8"), parse_constant=_no_constant, parse_int=_nonnegative_int,
                        object_pairs_hook=unique_object)
    if not isinstance(header, dict):
        raise Reject("unreadable .safetensors header")
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise Reject("__metadata__ must be an object of strings")
    for text in (*header, *meta, *meta.values()):
        no_surrogates(text, "the .safetensors header")
    buffer = len(data) - 8 - size
    spans, out = [], {}
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"} \
                or info["dtype"] not in _SAFE_CODES:
            raise Reject(f"{name[:60]}: unsupported entry (need exactly dtype, shape, data_offsets; a supported dtype)")
        shape, offsets, code = info["shape"], info["data_offsets"], _SAFE_CODES[info["dtype"]]
        if not isinstance(shape, list) or any(type(d) is not int or d < 0 for d in shape) \
                or not isinstance(offsets, list) or len(offsets) != 2 or any(type(o) is not int for o in offsets) \
                or not 0 <= offsets[0] <= offsets[1] <= buffer \
                or offsets[1] - offsets[0] != math.prod(shape) * WIDTH[code]:
            raise Reject(f"{name[:60]}: malformed shape or data offsets")
        numpy_sized(tuple(shape), WIDTH[code], name[:60])
        spans.append(tuple(offsets))
        if wanted is None or name in wanted:
            begin, end = offsets
            out[name] = Tensor(tuple(shape), unpack(memoryview(data)[8 + size + begin:8 + size + end], code,
                                                     False, math.prod(shape), name), False, code)
    position = 0
    for begin, end in sorted(spans):
        if begin != position:
            raise Reject("the .safetensors tensors overlap or leave a gap in the buffer")
        position = end
    if position != buffer:
        raise Reject("the .safetensors buffer has bytes that belong to no tensor")
    return out, list(header)


LETTERS = ("A", "b", "M", "c")
LAYERS = ("0.weight", "0.bias", "2.weight", "2.bias")
PREFIXES = ("module.", "_orig_mod.", "model.")
_RECORD = {"npz": {"format", "rule", "tensors", "layout", "activation"},
           "safetensors": {"format", "rule", "tensors", "layout", "activation"},
           "safetensors-sharded": {"format", "rule", "tensors", "layout", "activation", "shards"},
           "msgpack": {"format", "rule", "tensors", "layout", "activation"},
           "torch": {"format", "rule", "tensors", "layout", "root", "activation"},
           "onnx": {"format", "rule", "tensors", "external", "activation"}}
# What each format's "activation" entry must say (docs/FORMATS.md), and the words VALID prints for it.
_ACTIVATION = {"npz": "relu, assumed: the file holds no activation", "onnx": "relu, the graph's Relu node",
               "nnet": "relu, the format's: after every layer but the last"}
STATED = "relu, stated by the user: the file holds no activation"  # --activation relu (docs/FORMATS.md)
_READING = {"npz": "read as a ReLU network (the file holds no activation)",
            STATED: "a ReLU network, as its producer's user stated (--activation relu; the file holds no activation)",
            "onnx": "a ReLU network (the graph's Relu nodes)",
            "nnet": "a ReLU network (NNet: its means and ranges folded in; the evaluator's clamp of the "
            "inputs to [minimums, maximums] is not, so answers hold on boxes inside them)"}
_RULES = {"npz": ("default", "keys"), "safetensors": ("default", "keys"), "safetensors-sharded": ("default", "keys"),
          "msgpack": ("default", "keys"),
          "torch": ("default", "keys"),
          "onnx": ("graph",)}


def default_names(names: list[str]) -> list[str | None] | None:
    """docs/FORMATS.md's default rule on a file's tensor names: the four full names it picks (None for an absent
    bias), or None when it picks nothing."""
    if len(names) == 4 and set(names) == set(LETTERS):
        return list(LETTERS)
    short = _short_names(names)
    if len(set(short)) != len(short) or not {LAYERS[0], LAYERS[2]} <= set(short) <= set(LAYERS):
        return None
    full = dict(zip(short, names, strict=True))
    return [full.get(layer) for layer in LAYERS]


def _short_names(names: list[str]) -> list[str]:
    short = list(names)
    if all(n.startswith(PREFIXES) for n in names):
        for i, n in enumerate(short):
            while n.startswith(PREFIXES):
                n = n[len(next(p for p in PREFIXES if n.startswith(p))):]
            short[i] = n
    return short


def chain_names(names: list[str]) -> list[str | None] | None:
    """docs/FORMATS.md's default rule for deep networks: exactly 0.weight, 2.weight, …, (2L).weight (L ≥ 2) with
    optional biases of the same indices, after the prefixes; the full names, weight and bias of each layer in
    turn (None for an absent bias), or None."""
    short = _short_names(names)
    if len(set(short)) != len(short):
        return None
    full = dict(zip(short, names, strict=True))
    count = 0
    while f"{2 * count}.weight" in full:
        count += 1
    allowed = {f"{2 * i}.{part}" for i in range(count) for part in ("weight", "bias")}
    if count < 3 or not set(short) <= allowed:
        return None
    return [full.get(f"{2 * i}.{part}") for i in range(count) for part in ("weight", "bias")]


def _state_dict(node: object) -> bool:
    return isinstance(node, dict) and bool(node) and all(isinstance(k, str) and isinstance(v, Tensor)
                                                         for k, v in node.items())


def _torch_root(tree: object, root: object, rule: str, names: list) -> dict[str, Tensor]:
    """The state dict a torch record's root names, re-deriving an automatic root (docs/FORMATS.md, "root")."""
    if not isinstance(root, dict) or set(root) != {"path", "rule"} or root["rule"] not in ("auto", "state-key") \
            or not isinstance(root["path"], list) or not all(isinstance(k, str) for k in root["path"]):
        raise Reject("model.root must be {path: [keys], rule: auto|state-key}")
    if root["rule"] == "auto":
        if _state_dict(tree):
            path = []
        else:
            def holds(sd: dict) -> bool:
                if rule != "default":
                    return all(n in sd for n in names if n is not None)
                return default_names(list(sd)) is not None or chain_names(list(sd)) is not None

            found = [k for k, v in tree.items() if _state_dict(v) and holds(v)] if isinstance(tree, dict) else []
            if len(found) != 1:
                raise Reject(f"the automatic root is not unique ({len(found)} entries hold the layers)")
            path = found
        if root["path"] != path:
            raise Reject(f"the automatic root is {path}, the certificate names {root['path']}")
    node = tree
    for key in root["path"]:
        if not isinstance(node, dict) or key not in node:
            raise Reject(f"the checkpoint has no entry {key[:60]!r} on the root path")
        node = node[key]
    if not _state_dict(node):
        raise Reject("the root is not a map of names to tensors")
    return node


def _tensor_names(file, fmt: str, model: dict, rule: str, names: list) -> tuple[dict | None, list[str], str]:
    """The names present in a tensor-map file, with (torch) the state dict the record's root names and the words
    saying where it lies; ``named`` is None for npz and safetensors, whose chosen tensors are read afterwards."""
    if fmt == "safetensors-sharded":
        return None, read_sharded(file, model, set())[1], ""
    if fmt != "torch":
        return None, read_tensors(file.data, fmt, set())[1], ""
    named = _torch_root(read_torch(file.data), model["root"], rule, names)
    path = model["root"]["path"]
    return named, list(named), f" at {json.dumps(path)} ({model['root']['rule']})" if path else ""


def _chosen(file, fmt: str, model: dict, names: list) -> dict[str, Tensor]:
    """The named tensors of an npz, safetensors or sharded safetensors file."""
    wanted = {t for t in names if t is not None}
    return read_sharded(file, model, wanted)[0] if fmt == "safetensors-sharded" else \
        read_tensors(file.data, fmt, wanted)[0]


def _flax_default(present: list[str], layers: int) -> list[str | None] | None:
    """The names the Flax default rule picks (Dense_0 … Dense_L) when the file holds exactly ``layers`` layers."""
    chain = flax_names(present)
    return [x for pair in chain for x in pair] if chain is not None and len(chain) == layers else None


def _shard_words(model: dict) -> str:
    """The words naming the shards a sharded safetensors index was bound to (after ``read_sharded`` checked
    them), or nothing for another format."""
    if model.get("format") != "safetensors-sharded":
        return ""
    return "".join(f"; shard {r['file']} sha256 {r['sha256'][:12]}" for r in model["shards"])


def _transposed(t: Tensor) -> Tensor:
    """The transpose of a 2-D tensor: the same values, read in the other order."""
    if len(t.shape) != 2:
        raise Reject(f"a weight of shape {t.shape} is not 2-D")
    return Tensor((t.shape[1], t.shape[0]), t.values, not t.fortran, t.code)


def model_tensors(file, model: object, shape: tuple) -> tuple[list[Tensor], str]:
    """The tensors W1, b1, W2, b2 of an input file, chosen by the certificate's "model" record under
    docs/FORMATS.md's selection rule, checked against shape (m, n, k); and a line saying what was bound.
    ``file`` has ``data`` (bytes) and ``sibling(location)`` (bytes of a file next to it, for ONNX external data).
    An absent bias is the zero vector."""
    fmt = model.get("format") if isinstance(model, dict) else None
    if fmt not in _RECORD or _fields(model) != _RECORD[fmt] or model["rule"] not in _RULES[fmt]:
        raise Reject("model must be {format, rule, tensors, layout, activation} (+ root for torch, + shards for "
                     "sharded safetensors; {format, rule: graph, tensors, external, activation} for onnx) with a rule "
                     "of its format")
    kind = "onnx" if fmt == "onnx" else "npz"
    if model["activation"] != _ACTIVATION[kind] and not (kind == "npz" and model["activation"] == STATED):
        raise Reject(f"model.activation must be {_ACTIVATION[kind]!r} for a {fmt} file (docs/FORMATS.md)")
    reading = _READING[STATED if model["activation"] == STATED else kind]
    names, rule = model["tensors"], model["rule"]
    well_formed = isinstance(names, list) and len(names) == 4 and all(
        isinstance(t, str) or (t is None and i in (1, 3) and fmt != "onnx") for i, t in enumerate(names))
    if not well_formed or len({t for t in names if t is not None}) != sum(t is not None for t in names):
        raise Reject("model.tensors must be four distinct names (a bias may be null)")
    layout = model.get("layout", "out-in")
    if layout not in ("out-in", "in-out") or (fmt == "msgpack" and layout != "in-out"):
        raise Reject("model.layout must be out-in or in-out (in-out for a Flax msgpack file)")
    where = extra = ""  # the words after the format: a torch root, ONNX external files
    if fmt == "onnx":
        chain, extra = _onnx_chain(file, model)
        if chain.affine is not None or any(scale != (1, 1) for scale in chain.scales):
            raise Reject("the ONNX graph normalizes its input or scales a Gemm (alpha, beta): such layers are read "
                         "for certificates with embedded layered parameters only")
        if len(chain.tensors) != 4 or chain.output_relu:
            raise Reject(f"the ONNX graph has {len(chain.tensors) // 2 - 1} hidden layers"
                         + (" and an output Relu" if chain.output_relu else "") + "; the certificate's network has "
                         "one hidden layer and none")
        named = dict(zip(names, chain.tensors, strict=True))
    else:
        named, present, where = _tensor_names(file, fmt, model, rule, names)
        picked = _flax_default(present, 2) if fmt == "msgpack" else default_names(present)
        if rule == "default" and picked != names:
            raise Reject(f"the rule 'default' picks {picked} in this file, the certificate names "
                         f"{names}" if picked is not None else
                         f"the file's tensors {sorted(present)[:8]} are not exactly one default set (0.weight, "
                         "2.weight and their biases, or A, b, M, c; Dense_0, Dense_1 for Flax): the rule 'default' "
                         "picks nothing")
        if fmt != "torch":
            named = _chosen(file, fmt, model, names)
            extra = _shard_words(model)
    extra += _quantized_words(model, named, names)
    m, n, k = shape
    out = []
    for i, (name, want) in enumerate(zip(names, ((n, m), (n,), (k, n), (k,)), strict=True)):
        if name is None:
            out.append(Tensor(want, [0] * want[0], False, out[-1].code))
            continue
        if name not in named:
            raise Reject(f"tensor {name!r} is missing")
        t = _transposed(named[name]) if layout == "in-out" and i in (0, 2) else named[name]
        if t.shape != want:
            raise Reject(f"tensor {name!r} does not have the shape {want}")
        out.append(t)
    shapes = ", ".join(f"{name} {'x'.join(map(str, t.shape))}" if name is not None else "no bias (read as 0)"
                       for name, t in zip(names, out, strict=True))
    layout_note = " (stored inputs x outputs)" if layout == "in-out" else ""
    return out, f"{fmt} {rule}{where}{layout_note}: {shapes}{extra}; {reading}"


def _fields(model: dict) -> set:
    """The record's fields, an ONNX record's "head" (Softmax or LogSoftmax), "normalization" and "alpha_beta"
    aside, and a torch or ONNX record's "quantized" (checked against the file by ``_quantized_words``)."""
    optional = {"quantized"} if model.get("format") in ("torch", "onnx") else set()
    if model.get("format") == "onnx" and ("head" in model or "normalization" in model or "alpha_beta" in model):
        if "head" in model and model["head"] not in ("Softmax", "LogSoftmax"):
            raise Reject("model.head must be Softmax or LogSoftmax")
        optional |= {"head", "normalization", "alpha_beta"}
    return set(model) - optional


def _quantized_words(model: dict, named: dict, names: list) -> str:
    """The chosen tensors that the file stores quantized (read as scale·(q − zero point), FORMATS.md), which the
    record's "quantized" must name exactly ({name: how it was stored}; absent when none is); the words VALID
    prints about them."""
    found = {t: named[t].quantized for t in names if t is not None and t in named and named[t].quantized}
    stated = model.get("quantized", {})
    if "quantized" in model and (not isinstance(stated, dict) or not stated):
        raise Reject("model.quantized must be a non-empty map of tensor names to how each was stored")
    if stated != found:
        raise Reject(f"model.quantized names {sorted(stated)[:4]}; the file stores {sorted(found)[:4] or 'none'} "
                     "of the chosen tensors quantized")
    return "; dequantized weights, scale·(q − zero point): " + ", ".join(f"{t} ({how})" for t, how in found.items()) \
        if found else ""


def _gunzipped(data: bytes) -> bytes:
    """A model file's bytes, decompressed when they start with the gzip magic (.onnx.gz), at most MAX_GUNZIPPED."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        out = gunzip_bounded(data, MAX_GUNZIPPED)
    except (OSError, EOFError, zlib.error):
        raise Reject("the gzipped model file does not decompress") from None
    if out is None:
        raise Reject(f"beyond the checker's bounds: the model file decompresses to more than {MAX_GUNZIPPED:,} bytes")
    return out


def _onnx_chain(file, model: dict):
    """The chain an ONNX file computes, after checking that its initializers and external data files (by SHA-256)
    are the ones the record names; and the words naming the external files."""
    chain = read_onnx(_gunzipped(file.data), file.sibling)
    hashes = [{"location": loc, "sha256": hashlib.sha256(file.sibling(loc)).hexdigest()} for loc in chain.locations]
    if chain.names != model["tensors"] or model["external"] != hashes:
        raise Reject("the graph's initializers or external data files are not the ones the certificate names")
    if chain.head != model.get("head"):
        raise Reject(f"the graph ends in {chain.head or 'no Softmax'}; the certificate's record says "
                     f"{model.get('head') or 'none'}")
    if chain.normalization != model.get("normalization", []):
        raise Reject("the graph's normalization before its first layer is not the one the certificate's record names")
    scaled = [[ell, str(a), str(b)] for ell, (a, b) in enumerate(chain.scales, 1) if (a, b) != (1, 1)]
    if scaled != model.get("alpha_beta", []):
        raise Reject("the graph's Gemm alpha and beta are not the ones the certificate's record names")
    head = f"; a final {chain.head}, read as the logits it normalizes (top-1 only)" if chain.head else ""
    return chain, "".join(f"; external {e['location']} sha256 {e['sha256'][:12]}" for e in hashes) + head


def _onnx_layered(file, model: dict, widths: tuple, output_relu: bool) -> tuple[list, str]:
    """``layered_entries`` for an ONNX file: its graph decides the layers and whether a Relu ends it."""
    if model["activation"] != _ACTIVATION["onnx"]:
        raise Reject(f"model.activation must be {_ACTIVATION['onnx']!r} for an onnx file (docs/FORMATS.md)")
    names = model["tensors"]
    if not isinstance(names, list) or len(names) != 2 * (len(widths) - 1) \
            or not all(isinstance(t, str) for t in names) or len(set(names)) != len(names):
        raise Reject("model.tensors must name a distinct weight and bias for every layer")
    chain, extra = _onnx_chain(file, model)
    extra += _quantized_words(model, dict(zip(chain.names, chain.tensors, strict=True)), names)
    if chain.output_relu != output_relu:
        raise Reject(f"the ONNX graph {'ends' if chain.output_relu else 'does not end'} in a Relu; the certificate's "
                     f"network {'does' if output_relu else 'does not'}")
    out, shown = [], []
    for ell in range(1, len(widths)):
        W, b = chain.tensors[2 * ell - 2], chain.tensors[2 * ell - 1]
        if W.shape != (widths[ell], widths[ell - 1]):
            raise Reject(f"ONNX layer {ell} ({names[2 * ell - 2]!r}) does not have the shape "
                         f"{(widths[ell], widths[ell - 1])}")
        entries, bias = W.exact(), b.exact()
        alpha, beta = chain.scales[ell - 1]
        if (alpha, beta) != (1, 1):  # a Gemm's alpha W and beta C
            charge(8 * (len(entries) + len(bias)) + 1, "a Gemm's alpha and beta")
            entries, bias = [alpha * w for w in entries], [beta * v for v in bias]
        if ell == 1 and chain.affine is not None:  # W diag(s) and b + W t: the normalization folded, exactly
            scale, shift = chain.affine
            cols = W.shape[1]
            rows = [entries[i * cols:(i + 1) * cols] for i in range(W.shape[0])]
            charge(8 * W.shape[0] * cols + 1, "the normalization folded into the first layer")  # two rational ops each
            entries = [w * c for row in rows for w, c in zip(row, scale, strict=True)]
            bias = [v + sum(w * t for w, t in zip(row, shift, strict=True)) for v, row in zip(bias, rows, strict=True)]
        out += entries + bias
        shown.append(f"{names[2 * ell - 2]} {W.shape[0]}x{W.shape[1]}, {names[2 * ell - 1]} {b.shape[0]}")
    relu = "; a Relu after the last layer" if output_relu else ""
    norm = f"; the input normalized by {', '.join(f'{op} {name}' for op, name in chain.normalization)}, folded " \
        "into the first layer" if chain.normalization else ""
    return out, f"onnx graph (deep): {'; '.join(shown)}{extra}{norm}{relu}; {_READING['onnx']}"


def _nnet_layered(file, model: dict, widths: tuple, output_relu: bool) -> tuple[list, str]:
    """``layered_entries`` for an NNet file (``readers.nnet``): its text decides the layers, a ReLU after each but
    the last; the normalization folded in."""
    from certsym_check.readers.nnet import read_nnet

    if model != {"format": "nnet", "rule": "file", "activation": _ACTIVATION["nnet"]} or output_relu:
        raise Reject("an NNet file's model record is {format: nnet, rule: file, activation: "
                     f"{_ACTIVATION['nnet']!r}}}, for a network without an output ReLU")
    layers, found = read_nnet(file.data, tuple(widths))
    out = [x for W, b in layers for x in (*(y for row in W for y in row), *b)]
    return out, f"nnet (deep): layer sizes {'-'.join(map(str, found))}; {_READING['nnet']}"


def model_entries(file, model: object, shape: tuple) -> tuple[list, str]:
    """The entries A (row by row), b, M (row by row), c of a model file, checked against shape (m, n, k), and
    the line saying what was bound (an NNet file of one hidden layer by its layered reading: the same order)."""
    if isinstance(model, dict) and model.get("format") == "nnet":
        return _nnet_layered(file, model, shape, False)
    tensors, bound = model_tensors(file, model, shape)
    return [x for t in tensors for x in t.exact()], bound


def layered_entries(file, model: object, widths: tuple, output_relu: bool) -> tuple[list, str]:
    """The entries of every layer (W_ℓ row by row, then b_ℓ, for ℓ = 1..L+1) of a model file holding a network of
    the given widths (m, n_1, …, n_L, k) and output ReLU, chosen by docs/FORMATS.md's default rule for deep
    networks or an ONNX file's graph, and the line saying what was bound. A one-hidden-layer file is read as
    ``model_entries`` reads it. Only an ONNX graph can end in a Relu: a tensor file holds no activation."""
    fmt = model.get("format") if isinstance(model, dict) else None
    if fmt == "onnx" and _fields(model) == _RECORD[fmt] and model["rule"] == "graph":
        return _onnx_layered(file, model, widths, output_relu)
    if fmt == "nnet":
        return _nnet_layered(file, model, widths, output_relu)
    if output_relu:
        raise Reject("a tensor file holds no activation: it cannot be a network ending in a ReLU")
    if len(widths) == 3:
        return model_entries(file, model, widths)
    tensors, bound = layered_tensors(file, model, widths)
    return [x for W, b in tensors for x in (*W.exact(), *b.exact())], bound


def layered_tensors(file, model: object, widths: tuple) -> tuple[list[tuple[Tensor, Tensor]], str]:
    """The tensors (W_ℓ, b_ℓ) of every layer of a tensor file (npz, safetensors, torch, msgpack) holding a deep
    network of the given widths, chosen by docs/FORMATS.md's deep default rule or named (rule "keys"), W_ℓ read
    outputs × inputs (an absent bias is the zero vector); and the line saying what was bound."""
    fmt = model.get("format") if isinstance(model, dict) else None
    if fmt not in ("npz", "safetensors", "safetensors-sharded", "torch", "msgpack") or _fields(model) != _RECORD[fmt] \
            or model["rule"] not in _RULES[fmt]:
        raise Reject("a deep network's model record is {format, rule: default or keys, tensors, layout, activation} "
                     "(+ root for torch, + shards for sharded safetensors), for an npz, safetensors or torch file, or "
                     "{format: onnx, rule: graph, "
                     "tensors, external, activation}")
    if model["activation"] not in (_ACTIVATION["npz"], STATED):
        raise Reject(f"model.activation must be {_ACTIVATION['npz']!r} (or, stated by the user, {STATED!r}) for a "
                     f"{fmt} file (docs/FORMATS.md)")
    names, layout = model["tensors"], model["layout"]
    if layout not in ("out-in", "in-out") or (fmt == "msgpack" and layout != "in-out"):
        raise Reject("model.layout must be out-in or in-out (in-out for a Flax msgpack file)")
    if not isinstance(names, list) or len(names) != 2 * (len(widths) - 1) or not all(
            isinstance(t, str) or (t is None and i % 2) for i, t in enumerate(names)):
        raise Reject("model.tensors must name a weight and a bias (or null) for every layer")
    rule = model["rule"]
    given = [t for t in names if t is not None]
    if len(set(given)) != len(given):
        raise Reject("model.tensors names one tensor twice")
    named, present, where = _tensor_names(file, fmt, model, rule, names)
    picked = _flax_default(present, len(widths) - 1) if fmt == "msgpack" else chain_names(present)
    if rule == "default" and picked != names:
        raise Reject(f"the deep default rule picks {picked} in this file, the certificate names {names}")
    missing = [t for t in given if t not in present]
    if missing:
        raise Reject(f"tensor {missing[0]!r} is missing")
    if fmt != "torch":
        named = _chosen(file, fmt, model, names)
    out, shown = [], []
    where += _shard_words(model) + _quantized_words(model, named, names)
    for ell in range(1, len(widths)):
        wname, bname = names[2 * ell - 2], names[2 * ell - 1]
        rows, cols = widths[ell], widths[ell - 1]
        W = _transposed(named[wname]) if layout == "in-out" else named[wname]
        if W.shape != (rows, cols):
            raise Reject(f"tensor {wname!r} does not have the shape {(rows, cols)}")
        if bname is None:
            b = Tensor((rows,), [0] * rows, False, W.code)
        else:
            b = named[bname]
            if b.shape != (rows,):
                raise Reject(f"tensor {bname!r} does not have the shape {(rows,)}")
        out.append((W, b))
        shown.append(f"{wname} {rows}x{cols}, " + (f"{bname} {rows}" if bname else "no bias (read as 0)"))
    layout_note = " (stored inputs x outputs)" if layout == "in-out" else ""
    reading = _READING[STATED if model["activation"] == STATED else "npz"]
    return out, f"{fmt} {rule} (deep){where}{layout_note}: {'; '.join(shown)}; {reading}"

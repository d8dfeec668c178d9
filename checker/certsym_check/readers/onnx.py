"""Reading an ONNX model file for the checker: the protobuf wire format parsed by hand, standard library only.

The meaning is docs/FORMATS.md, section "ONNX". A ``ModelProto`` is accepted when:

- its wire data is well formed: varints of at most 10 bytes (below 2^64), lengths inside the enclosing
  message, field numbers 1 … 2^29 − 1, no groups, every known field with its declared wire type (repeated
  numbers packed or not), int32 and enum values canonical, parsed strings UTF-8, and no non-repeated field
  twice (protobuf would merge or overwrite it silently);
- its IR version is 3 … 14 and its opset imports are one entry, domain ``""`` or ``ai.onnx``, version 7 … 28
  (before 7, Add and Gemm broadcast only on request and Relu has other attributes; after 28 the operators
  are not defined yet); there are no functions, training info, device configurations, sparse initializers
  or quantization annotations;
- the graph has exactly one input that is not an initializer (x) and exactly one output (y), every value is
  defined once, and the nodes form the chain

    x → [Flatten(axis=1) | Reshape(h, s) | Identity | N]* → L_1 → ([Identity]* → Relu → [Identity]* → L_ℓ)+
      → [Identity]* → [Relu → [Identity]*] → y,
    L = Gemm(h, B, C; alpha, beta finite, transA=0, transB∈{0,1}) | Add(MatMul(h, B), C) | Add(MatMul(B, h), C)
    N = Sub(h, c) | Div(h, c) | Add(h, c) | Add(c, h) | Mul(h, c) | Mul(c, h), c an initializer of the weights'
        element type holding one value or one per input in the value's shape (leading 1s aside)

  (Add in either operand order, directly after its MatMul), optionally ended by a Softmax or LogSoftmax over the
  last axis (the head: the layers are its logits, recorded as "head"), every node on it, every intermediate value used
  once and not a graph output, B, C and s initializers, and every initializer used (node order is free:
  the data flow decides);
- the nodes' domain is ``""`` or ``ai.onnx``, no overload, and no attribute other than the ones above (each
  once, with its declared type); ``allowzero`` only from opset 14;
- the weight and bias initializers share one element type (FLOAT, FLOAT16, BFLOAT16 from opset 13, DOUBLE), each B_ℓ is
  (out, in) or (in, out) and C_ℓ (out,), and each layer reads the width the previous one gives; a Reshape
  target is INT64 [−1, m] or [0, m];
- each initializer's data is exactly one of raw_data (little-endian), the typed field (float_data,
  int32_data holding 16-bit patterns, double_data, int64_data) or external data (keys location, offset,
  length; location a relative path without ``..``, ``.``, empty parts, ``\\`` or ``:``), with exactly
  prod(dims) entries;
- declared types do not contradict the data flow: x and y declare tensor types of the weights' element type,
  a declared chain value has it too, a declared initializer is declared as stored (tensor types only), and
  x's declared shape fits the chain where its dimensions are known.

Fields that cannot change the computation (names, doc strings, producer, domain and version of the model,
metadata, declared shapes of values other than x) are checked for wire type and repetition and otherwise
skipped; unknown fields of a ValueInfoProto are skipped; any other unknown field is refused. Weights W are
(out, in) after the transposition rules (W = B for Gemm with transB = 1, else Bᵀ, given as a Fortran-order
view of B, not a copy). Cost: linear in the size of the file and of the external data read; the nesting
depth of what is parsed is fixed (model → graph → node → attribute; graph → tensor → entry; graph → value
→ type → tensor type → shape → dim), so there is no deep recursion.
"""

from __future__ import annotations

import math
import re
import struct
import sys
from array import array
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

from certsym_check.errors import Reject
from certsym_check.readers.tensor import Tensor, numpy_sized

MIN_OPSET, MAX_OPSET = 7, 28  # the default-domain opsets whose Gemm, MatMul, Add, Relu, … this reader knows
MIN_IR, MAX_IR = 3, 14  # IR versions with opset imports, up to the newest this reader knows
BFLOAT16_OPSET = 13  # the first default-domain opset with the BFLOAT16 element type
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_BIG = sys.byteorder == "big"

# element types: ONNX code -> (Tensor code, bytes per element)
_WEIGHT_TYPES = {1: ("f4", 4), 10: ("f2", 2), 16: ("bf16", 2), 11: ("f8", 8)}
_INT64 = 7
_BFLOAT16 = 16
MAX_NORMALIZE = 16  # normalization steps before the first layer
LARGEST = {"f4": 3.4028234663852886e38, "f2": 65504.0, "bf16": 3.3895313892515355e38,
           "f8": 1.7976931348623157e308}  # the largest finite value of each element type
_TYPE_NAMES = {1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING",
               9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
               15: "COMPLEX128", 16: "BFLOAT16"}
_TYPED_FIELD = {1: "float_data", 10: "int32_data", 16: "int32_data", 11: "double_data", 7: "int64_data",
                3: "int32_data", 2: "int32_data"}
_INTEGERS = {3: ("int8", -128, 127), 2: ("uint8", 0, 255)}  # DequantizeLinear's x and zero point
_SCALES = {1: ("f4", "<f", "float32"), 10: ("f2", "<e", "float16")}  # its scale, and so its output, types
DQ_OPSET, AXIS_OPSET, HALF_SCALE_OPSET = 10, 13, 19  # DequantizeLinear; per axis; FLOAT16 scales
_DATA_FIELDS = ("float_data", "int32_data", "int64_data", "double_data")

# ---------------------------------------------------------------------------------------------------------
# The wire format.
#
# A schema maps a field number to (name, kind, repeated). Kinds and the wire types they accept:
#   int, int32, enum: varint;  str, bytes, msg:<schema>, skip: length-delimited;  skipint: varint;
#   f32: fixed32;  varints: varint or packed;  fixed32s: fixed32 or packed;  fixed64s: fixed64 or packed;
#   refuse: any occurrence refuses the file.
# Unknown field numbers are refused, except in the schemas named in _SKIP_UNKNOWN.

_SCHEMAS: dict[str, dict[int, tuple[str, str, bool]]] = {
    "model": {1: ("ir_version", "int", False), 2: ("producer_name", "skip", False),
              3: ("producer_version", "skip", False), 4: ("domain", "skip", False),
              5: ("model_version", "skipint", False), 6: ("doc_string", "skip", False),
              7: ("graph", "msg:graph", False), 8: ("opset_import", "msg:opset", True),
              14: ("metadata_props", "msg:entry", True), 20: ("training_info", "refuse", True),
              25: ("functions", "refuse", True), 26: ("configuration", "refuse", True)},
    "opset": {1: ("domain", "str", False), 2: ("version", "int", False)},
    "graph": {1: ("node", "msg:node", True), 2: ("name", "skip", False), 5: ("initializer", "msg:tensor", True),
              10: ("doc_string", "skip", False), 11: ("input", "msg:value", True),
              12: ("output", "msg:value", True), 13: ("value_info", "msg:value", True),
              14: ("quantization_annotation", "refuse", True), 15: ("sparse_initializer", "refuse", True),
              16: ("metadata_props", "msg:entry", True)},
    "node": {1: ("input", "str", True), 2: ("output", "str", True), 3: ("name", "skip", False),
             4: ("op_type", "str", False), 5: ("attribute", "msg:attribute", True),
             6: ("doc_string", "skip", False), 7: ("domain", "str", False), 8: ("overload", "str", False),
             9: ("metadata_props", "msg:entry", True), 10: ("device_configurations", "refuse", True)},
    "attribute": {1: ("name", "str", False), 2: ("f", "f32", False), 3: ("i", "int", False),
                  13: ("doc_string", "skip", False), 20: ("type", "enum", False),
                  21: ("ref_attr_name", "refuse", False),
                  **{number: (name, "refuse", True) for number, name in (
                      (4, "s"), (5, "t"), (6, "g"), (7, "floats"), (8, "ints"), (9, "strings"), (10, "tensors"),
                      (11, "graphs"), (14, "tp"), (15, "type_protos"), (22, "sparse_tensor"),
                      (23, "sparse_tensors"))}},
    "value": {1: ("name", "str", False), 2: ("type", "msg:type", False), 3: ("doc_string", "skip", False),
              4: ("metadata_props", "msg:entry", True)},
    "type": {1: ("tensor_type", "msg:tensor_type", False), 4: ("sequence_type", "refuse", False),
             5: ("map_type", "refuse", False), 6: ("denotation", "skip", False), 7: ("opaque_type", "refuse", False),
             8: ("sparse_tensor_type", "refuse", False), 9: ("optional_type", "refuse", False)},
    "tensor_type": {1: ("elem_type", "int32", False), 2: ("shape", "msg:shape", False)},
    "shape": {1: ("dim", "msg:dim", True)},
    "dim": {1: ("dim_value", "int", False), 2: ("dim_param", "str", False), 3: ("denotation", "skip", False)},
    "tensor": {1: ("dims", "varints", True), 2: ("data_type", "int32", False), 3: ("segment", "refuse", False),
               4: ("float_data", "fixed32s", True), 5: ("int32_data", "varints", True),
               6: ("string_data", "refuse", True), 7: ("int64_data", "varints", True), 8: ("name", "str", False),
               9: ("raw_data", "bytes", False), 10: ("double_data", "fixed64s", True),
               11: ("uint64_data", "refuse", True), 12: ("doc_string", "skip", False),
               13: ("external_data", "msg:entry", True), 14: ("data_location", "enum", False),
               16: ("metadata_props", "msg:entry", True)},
    "entry": {1: ("key", "str", False), 2: ("value", "str", False)},
}
_SKIP_UNKNOWN = {"value"}  # what a value declares besides its name and type does not change the computation
_WIRES = {"int": (_VARINT,), "int32": (_VARINT,), "enum": (_VARINT,), "skipint": (_VARINT,), "str": (_LEN,),
          "bytes": (_LEN,), "skip": (_LEN,), "f32": (_I32,), "varints": (_VARINT, _LEN),
          "fixed32s": (_I32, _LEN), "fixed64s": (_I64, _LEN)}


def _q(text: str) -> str:
    """A name for a one-line reason: quoted, and cut after 60 characters."""
    return repr(text) if len(text) <= 60 else repr(text[:57]) + "…"


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The unsigned varint at pos (at most 10 bytes, below 2^64) and the position after it."""
    result = shift = 0
    for i in range(10):
        if pos >= end:
            raise Reject("malformed ONNX file: truncated varint")
        byte = data[pos]
        pos += 1
        if i == 9 and byte > 1:
            raise Reject("malformed ONNX file: varint longer than 64 bits")
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise Reject("malformed ONNX file: varint longer than 10 bytes")  # unreachable: byte 10 is at most 1


def _fields(data: bytes, start: int, end: int, what: str):
    """(number, wire type, value) of each field in data[start:end]; value is an int for a varint, and the
    span (begin, end) for fixed32, fixed64 and length-delimited fields."""
    pos = start
    while pos < end:
        key, pos = _varint(data, pos, end)
        number, wire = key >> 3, key & 7
        if not 1 <= number <= 0x1FFFFFFF:
            raise Reject(f"malformed ONNX file: invalid field number in {what}")
        if wire == _VARINT:
            value, pos = _varint(data, pos, end)
        elif wire in (_I64, _I32, _LEN):
            if wire == _LEN:
                size, pos = _varint(data, pos, end)
            else:
                size = 8 if wire == _I64 else 4
            if size > end - pos:
                raise Reject(f"malformed ONNX file: a field of {what} runs past its end")
            value = (pos, pos + size)
            pos += size
        else:
            raise Reject(f"malformed ONNX file: wire type {wire} (group or invalid) in {what}")
        yield number, wire, value


def _parse(data: bytes, start: int, end: int, schema: str) -> dict:
    """The fields of one message as {name: value} ({name: [values]} for repeated fields); skipped fields
    are checked for wire type and repetition only. Nested messages of the schema are parsed in turn."""
    fields = _SCHEMAS[schema]
    out: dict = {}
    for number, wire, value in _fields(data, start, end, schema):
        if number not in fields:
            if schema in _SKIP_UNKNOWN:
                continue
            raise Reject(f"ONNX {schema} has an unknown field {number}, which could change its meaning")
        name, kind, repeated = fields[number]
        if kind == "refuse":
            raise Reject(f"ONNX {schema}.{name} is not supported (refused)")
        wires = (_LEN,) if kind.startswith("msg:") else _WIRES[kind]
        if wire not in wires:
            raise Reject(f"malformed ONNX file: {schema}.{name} has wire type {wire}")
        if not repeated and name in out:
            raise Reject(f"ONNX {schema}.{name} occurs twice (protobuf would merge it silently)")
        if kind.startswith("msg:"):
            item = _parse(data, value[0], value[1], kind[4:])
        elif kind == "str":
            try:
                item = data[value[0]:value[1]].decode("utf-8")
            except UnicodeDecodeError:
                raise Reject(f"ONNX {schema}.{name} is not UTF-8") from None
        elif kind == "int":
            item = value - (1 << 64) if value >= 1 << 63 else value
        elif kind in ("int32", "enum"):
            item = _int32(value, f"{schema}.{name}")
        elif kind == "f32":
            (item,) = struct.unpack_from("<f", data, value[0])
        elif kind in ("varints", "fixed32s", "fixed64s"):
            item = (wire, value)  # decoded when needed (see _varints, _fixed)
        else:  # bytes, skip, skipint
            item = value
        if repeated:
            out.setdefault(name, []).append(item)
        else:
            out[name] = item
    return out


def _int32(value: int, what: str) -> int:
    """A varint read as protobuf int32, refusing values protobuf would truncate."""
    if value < 1 << 31:
        return value
    if value >= (1 << 64) - (1 << 31):
        return value - (1 << 64)
    raise Reject(f"malformed ONNX file: {what} is not a 32-bit integer")


def _varints(data: bytes, pieces: list) -> list[int]:
    """The unsigned values of a repeated varint field, packed or not (in order)."""
    out = []
    for wire, value in pieces:
        if wire == _VARINT:
            out.append(value)
            continue
        pos, end = value
        while pos < end:
            item, pos = _varint(data, pos, end)
            out.append(item)
    return out


def _int64s(data: bytes, pieces: list) -> list[int]:
    """The values of a repeated int64 field, packed or not."""
    return [v - (1 << 64) if v >= 1 << 63 else v for v in _varints(data, pieces)]


_VARINT16 = re.compile(rb"[\x80-\xff]{0,2}[\x00-\x7f]")  # a varint of at most 3 bytes
_TABLE16: dict[bytes, int] = {}


def _patterns16(data: bytes, pieces: list) -> list[int] | None:
    """A fast path of _varints for 16-bit patterns (float16 and bfloat16 in int32_data): the values, or None
    when some entry is not a shortest-form varint below 2^16 (then _varints decides, exactly)."""
    if not _TABLE16:
        for value in range(1 << 16):
            low, mid, high = value & 0x7F, value >> 7 & 0x7F, value >> 14
            _TABLE16[bytes((low,)) if value < 0x80 else bytes((low | 0x80, mid)) if value < 0x4000
                     else bytes((low | 0x80, mid | 0x80, high))] = value
    out: list[int] = []
    for wire, value in pieces:
        if wire == _VARINT:
            if value > 0xFFFF:
                return None
            out.append(value)
            continue
        chunk = data[value[0]:value[1]]
        parts = _VARINT16.findall(chunk)
        if b"".join(parts) != chunk:  # findall skipped a byte: some varint is longer than 3 bytes
            return None
        try:
            out.extend(map(_TABLE16.__getitem__, parts))
        except KeyError:
            return None
    return out


def _fixed(data: bytes, pieces: list, size: int, what: str) -> bytes:
    """The bytes of a repeated fixed32/fixed64 field, packed or not (in order)."""
    chunks = []
    for _wire, (begin, end) in pieces:
        if (end - begin) % size:
            raise Reject(f"malformed ONNX file: packed {what} is not a whole number of entries")
        chunks.append(data[begin:end])
    return b"".join(chunks)


# ---------------------------------------------------------------------------------------------------------
# Values.


def _floats(raw: bytes | memoryview, code: str) -> object:
    """Little-endian floats of element type code (f2, bf16, f4, f8) as Python floats."""
    if code == "f2":
        return [x for (x,) in struct.iter_unpack("<e", raw)]
    if code == "bf16":
        raw = bytes(raw)
        wide = bytearray(2 * len(raw))  # bfloat16 b is the float32 with bits b << 16
        wide[2::4] = raw[0::2]
        wide[3::4] = raw[1::2]
        raw = bytes(wide)
    values = array("d" if code == "f8" else "f")
    values.frombytes(raw)
    if _BIG:
        values.byteswap()
    return values


def _int64_values(raw: bytes | memoryview) -> list[int]:
    return [x for (x,) in struct.iter_unpack("<q", raw)]


_LOCATION_PART = re.compile(r"[^\\:\x00]+")
ORT_RESERVED = ("_MEM_ADDR_", "*/_ORT")  # onnxruntime reads */_ORT_MEM_ADDR_/* (and its native-endian twin) as memory
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")


class _Reader:
    """Reads initializer data: inline, or through ``external`` with each location fetched once."""

    def __init__(self, data: bytes, external: Callable[[str], bytes] | None, initializers: dict | None = None):
        self.data, self.external, self.initializers = data, external, initializers or {}
        self.files: dict[str, bytes] = {}
        self.locations: list[str] = []

    def check(self, tensor: dict, name: str) -> tuple[str, object]:
        """Where an initializer's data is, checked without reading it: ("raw", span), (typed field, pieces),
        ("external", (location, offset, length or None)) or ("empty", None); exactly one of raw_data, the
        typed field and external data (none only for an empty tensor)."""
        data_type = tensor.get("data_type", 0)
        typed = _TYPED_FIELD[data_type]
        for field in _DATA_FIELDS:
            if field != typed and field in tensor:
                raise Reject(f"initializer {_q(name)}: {field} for a {_TYPE_NAMES[data_type]} tensor")
        where = tensor.get("data_location", 0)
        if where not in (0, 1):
            raise Reject(f"initializer {_q(name)}: unknown data_location {where}")
        if where == 0 and "external_data" in tensor:
            raise Reject(f"initializer {_q(name)}: external_data without data_location = EXTERNAL")
        sources = [s for s in ("raw_data", typed) if s in tensor] + (["external data"] if where == 1 else [])
        if len(sources) > 1:
            raise Reject(f"initializer {_q(name)}: data given twice ({' and '.join(sources)})")
        if not sources:
            if math.prod(tensor["dims"]):
                raise Reject(f"initializer {_q(name)}: no data")
            return "empty", None
        if where == 0:
            return ("raw", tensor["raw_data"]) if "raw_data" in tensor else (typed, tensor[typed])
        keys: dict[str, str] = {}
        for entry in tensor.get("external_data", []):
            key = entry.get("key", "")
            if key not in ("location", "offset", "length"):
                raise Reject(f"initializer {_q(name)}: unknown external data key {_q(key)}")
            if key in keys:
                raise Reject(f"initializer {_q(name)}: external data key {_q(key)} given twice")
            keys[key] = entry.get("value", "")
        location = keys.get("location")
        if location is None:
            raise Reject(f"initializer {_q(name)}: external data without a location")
        parts = location.split("/")
        if any(tag in location for tag in ORT_RESERVED):
            raise Reject(f"initializer {_q(name)}: external data location {_q(location)}: onnxruntime reserves "
                         "*/_ORT_MEM_ADDR_/* and */_ORT_NATIVE_ENDIAN_MEM_ADDR_/* (for data in memory) and does not "
                         "read them as files")
        if location.startswith("/") or any(p in ("", ".", "..") or not _LOCATION_PART.fullmatch(p) for p in parts):
            raise Reject(f"initializer {_q(name)}: external data location {_q(location)} is not a plain relative path "
                         "inside the model's folder")
        for key in ("offset", "length"):
            if key in keys and not _DECIMAL.fullmatch(keys[key]):
                raise Reject(f"initializer {_q(name)}: external data {key} {_q(keys[key])} is not a decimal number")
        length = int(keys["length"]) if "length" in keys else None
        return "external", (location, int(keys.get("offset", "0")), length)

    def _file(self, location: str) -> bytes:
        if location not in self.files:
            if self.external is None:
                raise Reject(f"the ONNX model has external data ({_q(location)}) and no way to read it was given")
            try:
                body = self.external(location)
            except OSError as exc:
                raise Reject(f"cannot read the ONNX external data file {_q(location)} ({type(exc).__name__})") from None
            if not isinstance(body, (bytes, bytearray, memoryview)):
                raise Reject(f"the ONNX external data file {_q(location)} was not read as bytes")
            self.files[location] = bytes(body)
            self.locations.append(location)
        return self.files[location]

    def raw(self, tensor: dict, name: str, itemsize: int) -> tuple[str, object]:
        """("raw", little-endian bytes of exactly prod(dims) entries) or (typed field, its pieces)."""
        numpy_sized(tuple(tensor["dims"]), itemsize, f"initializer {_q(name)}")
        size = math.prod(tensor["dims"]) * itemsize
        source, where = self.check(tensor, name)
        if source == "empty":
            return "raw", b""
        if source == "raw":
            begin, end = where
            if end - begin != size:
                raise Reject(f"initializer {_q(name)}: raw_data has {end - begin} bytes, its shape needs {size}")
            return "raw", memoryview(self.data)[begin:end]
        if source != "external":
            return source, where
        location, offset, length = where
        body = self._file(location)
        if length is None:
            length = len(body) - offset
        if offset > len(body) or length != size or offset + length > len(body):
            raise Reject(f"initializer {_q(name)}: external data ({offset}, {length}) does not hold the "
                         f"{size} bytes its shape needs inside {_q(location)} ({len(body)} bytes)")
        return "raw", memoryview(body)[offset:offset + length]

    def integers(self, tensor: dict, name: str) -> list[int]:
        """The values of an INT8 or UINT8 initializer (raw bytes, or int32_data), in range."""
        kind, lo, hi = _INTEGERS[tensor["data_type"]]
        count = math.prod(tensor["dims"])
        source, body = self.raw(tensor, name, 1)
        if source == "raw":
            values = list(array("b" if kind == "int8" else "B", bytes(body)))
        else:
            values = [_int32(v, f"initializer {_q(name)}") for v in _varints(self.data, body)]
        if len(values) != count or any(not lo <= v <= hi for v in values):
            raise Reject(f"initializer {_q(name)}: {len(values)} {kind} values in {lo}..{hi} expected {count}")
        return values

    def dequantized(self, tensor: dict, name: str) -> list[float]:
        """A DequantizeLinear's output (``take_dequantized``): s·(q − z) for each entry, exact, rounded once to the
        scale's type (struct's rounding to nearest, ties to even), as the operator outputs it."""
        x, scale, zero, axis = tensor["_dq"]
        q = self.integers(self.initializers[x], x)
        _, fmt, _ = _SCALES[self.initializers[scale]["data_type"]]
        floats = self.weights(self.initializers[scale], scale)
        if not all(math.isfinite(v) for v in floats):
            raise Reject(f"DequantizeLinear {_q(name)}: a scale that is not finite")
        scales = [Fraction(v) for v in floats]
        zeros = self.integers(self.initializers[zero], zero) if zero is not None else [0] * len(scales)
        if any(v <= 0 for v in scales):  # (Fraction refuses infinities and NaN: the file is refused)
            raise Reject(f"DequantizeLinear {_q(name)}: a scale that is not a positive finite number")
        dims = tensor["dims"]
        inner = math.prod(dims[axis + 1:]) if axis is not None else 1
        out = []
        for index, value in enumerate(q):
            c = (index // inner) % len(scales) if axis is not None else 0
            exact = scales[c] * (value - zeros[c])  # at most 24 + 9 significant bits: exact as a float
            try:
                out.append(struct.unpack(fmt, struct.pack(fmt, float(exact)))[0])
            except OverflowError:
                raise Reject(f"DequantizeLinear {_q(name)}: s·(q − z) beyond the scale's type") from None
        return out

    def weights(self, tensor: dict, name: str) -> object:
        """The values of a FLOAT/FLOAT16/BFLOAT16/DOUBLE initializer in C order, as Python floats; of a
        DequantizeLinear's output, the values it outputs (``dequantized``)."""
        if "_dq" in tensor:
            return self.dequantized(tensor, name)
        code, itemsize = _WEIGHT_TYPES[tensor["data_type"]]
        count = math.prod(tensor["dims"])
        source, body = self.raw(tensor, name, itemsize)
        if source == "int32_data":
            patterns = _patterns16(self.data, body)
            if patterns is None:
                patterns = _varints(self.data, body)
                if any(p > 0xFFFF for p in patterns):
                    raise Reject(f"initializer {_q(name)}: int32_data holds a value that is not a 16-bit pattern")
            if len(patterns) != count:
                raise Reject(f"initializer {_q(name)}: int32_data has {len(patterns)} entries, its shape needs {count}")
            words = array("H", patterns)
            if _BIG:
                words.byteswap()
            body = words.tobytes()
        elif source != "raw":
            body = _fixed(self.data, body, itemsize, source)
            if len(body) != count * itemsize:
                raise Reject(f"initializer {_q(name)}: {source} has {len(body) // itemsize} entries, its shape needs "
                             f"{count}")
        return _floats(body, code)

    def int64s(self, tensor: dict, name: str) -> list[int]:
        """The values of an INT64 initializer."""
        count = math.prod(tensor["dims"])
        source, body = self.raw(tensor, name, 8)
        values = _int64_values(body) if source == "raw" else _int64s(self.data, body)
        if len(values) != count:
            raise Reject(f"initializer {_q(name)}: int64_data has {len(values)} entries, its shape needs {count}")
        return values


# ---------------------------------------------------------------------------------------------------------
# The graph.

_ATTRIBUTE_TYPES = {"alpha": 1, "beta": 1, "transA": 2, "transB": 2, "axis": 2, "allowzero": 2, "seed": 2,
                    "ratio": 1, "to": 2, "block_size": 2}  # FLOAT 1, INT 2
_ATTRIBUTES = {"Gemm": {"alpha", "beta", "transA", "transB"}, "Flatten": {"axis"}, "Reshape": {"allowzero"},
               "MatMul": set(), "Add": set(), "Relu": set(), "Identity": set(), "Softmax": {"axis"},
               "LogSoftmax": {"axis"}, "Sub": set(), "Mul": set(), "Div": set(), "Dropout": {"seed", "ratio"},
               "Cast": {"to"}, "DequantizeLinear": {"axis", "block_size"}}
IDENTITIES = ("Identity", "Dropout", "Cast")  # Dropout at inference (one input), Cast to the value's own type
NORMALIZE = ("Sub", "Add", "Mul", "Div")  # by a constant before the first linear layer (folded into it exactly)
HEADS = ("Softmax", "LogSoftmax")  # a final normalization, read as its logits (certificates of top-1 claims only)
_DEFAULTS = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "axis": 1, "allowzero": 0, "seed": 0,
             "ratio": 0.5, "to": 0, "block_size": 0}


def _attributes(node: dict, opset: int) -> dict:
    """{name: value} of a node's attributes (defaults filled in), refusing any the chain does not allow."""
    op = node["op_type"]
    allowed = _ATTRIBUTES[op] - ({"allowzero"} if opset < 14 else set()) - \
        ({"ratio"} if op == "Dropout" and opset >= 12 else set())  # an input from opset 12
    out: dict = {}
    for attribute in node.get("attribute", []):
        name = attribute.get("name", "")
        if name not in allowed:
            raise Reject(f"ONNX {op} node with attribute {_q(name)} (refused)")
        if name in out:
            raise Reject(f"ONNX {op} node with attribute {_q(name)} twice")
        if attribute.get("type") != _ATTRIBUTE_TYPES[name]:
            raise Reject(f"ONNX {op} attribute {_q(name)} has type {attribute.get('type')}")
        if ("i" if _ATTRIBUTE_TYPES[name] == 1 else "f") in attribute:
            raise Reject(f"ONNX {op} attribute {_q(name)} holds a value of another type")
        out[name] = attribute.get("f", 0.0) if _ATTRIBUTE_TYPES[name] == 1 else attribute.get("i", 0)
    if op in HEADS and "axis" not in out:
        out["axis"] = -1 if opset >= 13 else 1  # the operator's default axis changed at opset 13
    return {name: out.get(name, _DEFAULTS[name]) for name in _ATTRIBUTES[op]}


def take_dequantized(graph: dict, opset: int, initializers: dict) -> dict[str, str]:
    """FORMATS.md, "Quantized weights": each DequantizeLinear (default domain) of initializers only, x INT8 or UINT8
    with a FLOAT (or, from opset 19, FLOAT16) scale, per tensor (a scale of shape [] or [1]) or along one axis
    (opset 13 and later), block_size 0, becomes a virtual initializer named by its output (of the scale's type and
    x's shape) and leaves the graph's nodes; a QuantizeLinear anywhere, or a DequantizeLinear of anything else,
    refuses the file. A declared type or shape of the output must agree. Returns {output: how it was stored}."""
    kept, found = [], {}
    declared = {v.get("name", ""): v for v in graph.get("value_info", [])}
    names = [v.get("name", "") for v in graph.get("value_info", [])]
    inputs = {v.get("name", "") for v in graph.get("input", [])}
    for node in graph.get("node", []):
        op = node.get("op_type", "")
        if op == "QuantizeLinear":
            raise Reject("ONNX QuantizeLinear: the graph rounds its values to integers (activation quantization), "
                         "which is not a ReLU network")
        if op != "DequantizeLinear" or node.get("domain", "") not in ("", "ai.onnx"):
            kept.append(node)
            continue
        ins, outs = node.get("input", []), node.get("output", [])
        if opset < DQ_OPSET or len(ins) not in (2, 3) or len(outs) != 1 or not outs[0]:
            raise Reject("ONNX DequantizeLinear with other than (x, scale[, zero point]) and one output, or before "
                         "opset 10")
        attribute_names = {a.get("name", "") for a in node.get("attribute", [])}
        if ("axis" in attribute_names and opset < AXIS_OPSET) or ("block_size" in attribute_names and opset < 21):
            raise Reject("ONNX DequantizeLinear with an attribute its opset does not define (axis from 13, block_size "
                         "from 21)")
        if any(name not in initializers or "_dq" in initializers[name] for name in ins):
            raise Reject("ONNX DequantizeLinear of a value that is not an initializer (activation quantization): "
                         "not a ReLU network")
        attributes = _attributes(node, opset)
        x, scale = initializers[ins[0]], initializers[ins[1]]
        zero = initializers[ins[2]] if len(ins) == 3 else None
        if x.get("data_type", 0) not in _INTEGERS or scale.get("data_type", 0) not in _SCALES \
                or (scale["data_type"] == 10 and opset < HALF_SCALE_OPSET) \
                or (zero is not None and (zero.get("data_type", 0) != x["data_type"] or zero["dims"] != scale["dims"])):
            raise Reject("ONNX DequantizeLinear other than INT8 or UINT8 x (and zero point of its type and the scale's "
                         "shape) with a FLOAT scale (FLOAT16 from opset 19)")
        if attributes["block_size"] != 0:
            raise Reject("ONNX DequantizeLinear with a block size (blocked quantization is not read)")
        dims, sdims, axis = x["dims"], scale["dims"], None
        if sdims not in ([], [1]):
            axis = attributes["axis"] + len(dims) if attributes["axis"] < 0 else attributes["axis"]
            if opset < AXIS_OPSET or len(sdims) != 1 or not 0 <= axis < len(dims) or sdims[0] != dims[axis]:
                raise Reject("ONNX DequantizeLinear whose scale is neither a scalar nor one per index of its axis")
        out = outs[0]
        if out in initializers or out in inputs or names.count(out) > 1:
            raise Reject(f"ONNX value {_q(out)} is defined or declared twice")
        if out in declared:
            stated = _declared(declared[out], out)
            shape = stated[1] if stated is not None else None
            if stated is not None and (stated[0] != scale["data_type"] or (shape is not None and (len(shape) != len(
                    dims) or any(a is not None and a != b for a, b in zip(shape, dims, strict=True))))):
                raise Reject(f"ONNX value {_q(out)} is declared with another type or shape than its DequantizeLinear "
                             "gives")
        kind, _, _ = _INTEGERS[x["data_type"]]
        initializers[out] = {"data_type": scale["data_type"], "dims": list(dims),
                             "_dq": (ins[0], ins[1], ins[2] if zero is not None else None, axis)}
        found[out] = f"{kind}, {'per-tensor' if axis is None else f'per-axis (axis {axis})'} scale, the operator's " \
            f"{_SCALES[scale['data_type']][2]} output"
    graph["node"] = kept
    return found


def _opset(model: dict) -> int:
    imports = model.get("opset_import", [])
    if len(imports) != 1 or imports[0].get("domain", "") not in ("", "ai.onnx"):
        raise Reject("the ONNX model must import exactly one opset, the default domain (\"\" or ai.onnx)")
    version = imports[0].get("version", 0)
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise Reject(f"ONNX opset {version} is not supported (only {MIN_OPSET} to {MAX_OPSET})")
    return version


def _chain(graph: dict, opset: int, initializers: dict) -> tuple[list, list, list, list, bool, str | None, list,
                                                                list, list]:
    """Walks the data flow from x to y, checking that every node is on the chain and every value is used once.
    Returns the layers [(B, C, transposed)], at least two (transposed: W = Bᵀ), the Reshape targets, the steps
    that change shapes [(op, Reshape target or None)], the chain's values [x, …, y] and whether a Relu follows
    the last layer, the head (a final Softmax or LogSoftmax) or None, the normalization before the first
    layer [(Sub | Add | Mul | Div, constant)], each layer's (alpha, beta) (a Gemm's; 1, 1 otherwise), and the
    element types the Casts name."""
    inputs = [v.get("name", "") for v in graph.get("input", [])]
    outputs = [v.get("name", "") for v in graph.get("output", [])]
    if len(set(inputs)) != len(inputs):
        raise Reject("the ONNX graph lists an input twice")
    free = [name for name in inputs if name not in initializers]
    if len(free) != 1 or len(outputs) != 1:
        raise Reject(f"the ONNX graph must have one input that is not an initializer and one output (found "
                     f"{len(free)} and {len(outputs)})")
    (x,), (y,) = free, outputs
    if not x:
        raise Reject("the ONNX graph input has no name")
    nodes = graph.get("node", [])
    defined = set(initializers) | {x}
    users: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        if node.get("domain", "") not in ("", "ai.onnx") or node.get("overload", ""):
            raise Reject(f"ONNX node in domain {_q(node.get('domain', ''))} (only the default domain is allowed)")
        outs = node.get("output", [])
        if len(outs) != 1 or not outs[0]:
            raise Reject(f"ONNX node {_q(node.get('op_type', ''))} with {len(outs)} outputs (the chain needs one)")
        if outs[0] in defined:
            raise Reject(f"ONNX value {_q(outs[0])} is defined twice")
        defined.add(outs[0])
        for name in node.get("input", []):
            users.setdefault(name, []).append(index)
    layers: list = []
    targets: list = []
    steps: list = []
    norms: list = []
    casts: list = []
    scales: dict = {}  # layer index -> a Gemm's (alpha, beta)
    values = [x]
    state, current, seen, pending, pending_transposed, head = "pre", x, set(), None, True, None
    while current != y:
        uses = users.get(current, [])
        if len(uses) != 1:
            raise Reject(f"ONNX value {_q(current)} is used {len(uses)} times; the graph must be one chain from its "
                         "input to its output")
        index = uses[0]
        if index in seen:
            raise Reject("the ONNX graph has a cycle")
        seen.add(index)
        node = nodes[index]
        op, ins = node.get("op_type", ""), node.get("input", [])
        if op not in _ATTRIBUTES:
            raise Reject(f"ONNX node {_q(op)} (only Gemm, MatMul, Add, Relu, Flatten, Reshape, Identity, Dropout, "
                         "Cast, Sub, Mul, Div and a final Softmax or LogSoftmax)")
        attributes = _attributes(node, opset)
        expected = {"Identity": 1, "Relu": 1, "Flatten": 1, "Reshape": 2, "MatMul": 2, "Add": 2, "Gemm": 3,
                    "Softmax": 1, "LogSoftmax": 1, "Sub": 2, "Mul": 2, "Div": 2, "Dropout": 1, "Cast": 1}[op]
        # MatMul(W, h): the weight first, read only of a value declared 1-D (``_check_input_shape``)
        weight_first = op == "MatMul" and len(ins) == 2 and ins[1] == current != ins[0]
        if len(ins) != expected or (op not in ("Add", "Mul") and ins[0] != current and not weight_first):
            raise Reject(f"ONNX {op} node with {len(ins)} inputs; expected the chain value {_q(current)} first and "
                         f"{expected - 1} initializer(s)")
        others = [name for name in ins if name != current]
        if len(others) != expected - 1 or any(name not in initializers for name in others):
            raise Reject(f"ONNX {op} node: its inputs other than {_q(current)} must be initializers")
        if state == "add":
            if op != "Add":
                raise Reject(f"ONNX MatMul followed by {op}, not by Add of its bias")
            layers.append((pending, others[0], pending_transposed))
            state = "linear"
        elif op in IDENTITIES:
            if op == "Cast":
                casts.append(attributes["to"])
        elif op in NORMALIZE and state == "pre":
            norms.append((op, others[0]))
            steps.append(("Norm", others[0]))
        elif op in ("Flatten", "Reshape"):
            if state != "pre":
                raise Reject(f"ONNX {op} node after the first linear layer")
            if op == "Flatten" and attributes["axis"] != 1:
                raise Reject(f"ONNX Flatten with axis {attributes['axis']} (only 1)")
            if op == "Reshape":
                if attributes["allowzero"] != 0:
                    raise Reject("ONNX Reshape with allowzero = 1 (only 0)")
                targets.append(others[0])
            steps.append((op, others[0] if op == "Reshape" else None))
        elif op == "Relu":
            if state != "linear":
                raise Reject("ONNX Relu that does not follow a linear layer (one Relu after each)")
            state = "relu"
        elif op in HEADS:
            if state != "linear" or node["output"][0] != y:
                raise Reject(f"ONNX {op} that is not the last node after the last linear layer")
            head, state = op, "head"
            steps.append(("Head", attributes["axis"]))
        elif op in ("Gemm", "MatMul"):
            if state not in ("pre", "relu"):
                raise Reject("ONNX linear layer where the chain does not allow one (two linear layers need a Relu "
                             "between them)")
            steps.append(("MatMulW" if weight_first else op, None))
            if op == "MatMul":
                pending, pending_transposed, state = others[0], not weight_first, "add"
            else:
                if not (math.isfinite(attributes["alpha"]) and math.isfinite(attributes["beta"])) \
                        or attributes["transA"] != 0 or attributes["transB"] not in (0, 1):
                    raise Reject(f"ONNX Gemm with alpha = {attributes['alpha']}, beta = {attributes['beta']}, "
                                 f"transA = {attributes['transA']}, transB = {attributes['transB']} (only finite "
                                 "alpha and beta, transA 0, transB 0 or 1)")
                layers.append((others[0], others[1], attributes["transB"] == 0))
                scales[len(layers) - 1] = (attributes["alpha"], attributes["beta"])
                state = "linear"
        else:  # Add outside a MatMul + Add pair
            raise Reject("ONNX Add that does not follow a MatMul")
        current = node["output"][0]
        values.append(current)
    if state not in ("linear", "relu", "head") or len(layers) < 2:
        raise Reject("the ONNX graph output is not the end of a chain Linear, Relu, Linear, …, Linear (and "
                     "optionally Relu)")
    if users.get(y):
        raise Reject(f"ONNX graph output {_q(y)} is also used by a node")
    if len(seen) != len(nodes):
        off = next(node.get("op_type", "") for i, node in enumerate(nodes) if i not in seen)
        raise Reject(f"ONNX node {_q(off)} is not on the chain from input to output")
    used = {name for layer in layers for name in layer[:2]} | set(targets) | {name for _, name in norms}
    used |= {n for name in used if "_dq" in initializers.get(name, {}) for n in initializers[name]["_dq"][:3] if n}
    unused = sorted(name for name in set(initializers) - used if "_dq" not in initializers[name])
    if unused:
        raise Reject(f"ONNX initializer {_q(unused[0])} is not used by the network")
    return layers, targets, steps, values, state == "relu", head, norms, \
        [scales.get(i, (1.0, 1.0)) for i in range(len(layers))], casts


def _declared(value: dict, name: str) -> tuple[int, list | None] | None:
    """(element type, dims) a ValueInfoProto declares, or None when it declares no type; dims is None when no
    shape is declared, and holds None for a symbolic or absent dimension."""
    if "type" not in value:
        return None
    if "tensor_type" not in value["type"]:
        raise Reject(f"ONNX value {_q(name)} is declared with a type that is not a tensor")
    tensor = value["type"]["tensor_type"]
    if "shape" not in tensor:
        return tensor.get("elem_type", 0), None
    dims = []
    for dim in tensor["shape"].get("dim", []):
        if "dim_value" in dim and "dim_param" in dim:
            raise Reject(f"ONNX value {_q(name)} declares a dimension twice (dim_value and dim_param)")
        size = dim.get("dim_value")
        if size is not None and size < 0:
            raise Reject(f"ONNX value {_q(name)} declares a negative dimension")
        dims.append(size)
    return tensor.get("elem_type", 0), dims


def _check_declarations(graph: dict, initializers: dict, values: list, elem_type: int) -> list | None:
    """Refuses declared types that contradict the data flow: graph inputs and outputs declare a tensor type,
    x, y and every declared chain value have the weights' element type, and a declared initializer is declared
    as it is stored.
    Returns the dims x declares (None when no shape is declared)."""
    chain = set(values)
    declared_x = None
    for group in ("input", "output", "value_info"):
        for value in graph.get(group, []):
            name = value.get("name", "")
            declared = _declared(value, name)
            if declared is None:
                if group != "value_info":
                    raise Reject(f"ONNX graph {group} {_q(name)} declares no type")
                continue
            elem, dims = declared
            if name in chain:
                if elem != elem_type:
                    raise Reject(f"ONNX value {_q(name)} is declared {_TYPE_NAMES.get(elem, elem)}, the weights are "
                                 f"{_TYPE_NAMES[elem_type]}")
                if group == "input":
                    declared_x = dims
            elif name in initializers:
                stored = initializers[name]
                if elem != stored.get("data_type", 0) or dims is not None and (
                        len(dims) != len(stored["dims"])
                        or any(d is not None and d != e for d, e in zip(dims, stored["dims"], strict=True))):
                    raise Reject(f"ONNX initializer {_q(name)} is declared with another type or shape than it has")
    return declared_x


def _stripped(dims: list) -> list:
    """A shape without its leading 1s or unknown dimensions: what broadcasting aligns from the right."""
    start = 0
    while start < len(dims) and dims[start] in (1, None):
        start += 1
    return list(dims[start:])


def _check_input_shape(dims: list | None, steps: list, widths: tuple, targets: dict, constants: dict) -> None:
    """Refuses a declared input shape that the chain cannot take, from its known dimensions (None: unknown);
    widths = (m, n, k), targets = {Reshape target: its two values}, constants = {normalization constant: its
    dims}."""

    def known(ds: list) -> int | None:  # the product, capped: above 2^64 it equals no int64 dimension
        if any(d is None for d in ds):
            return None
        if 0 in ds:
            return 0
        product = 1
        for d in ds:
            product = min(product * d, 1 << 65)
        return product

    shape, layer = dims, 0
    for op, target in steps:
        if op == "Flatten":
            if shape is not None and not shape:
                raise Reject("ONNX Flatten(axis=1) of a scalar input")
            shape = [None, None] if shape is None else [shape[0], known(shape[1:])]
        elif op == "Reshape":
            first, width = targets[target]
            if first == 0:
                if shape is not None and not shape:
                    raise Reject("ONNX Reshape of a scalar input with target [0, m]")
                lead = None if shape is None else shape[0]
                rest = None if shape is None else known(shape[1:])
                if rest is not None and rest != width and lead != 0:  # fits no non-empty batch
                    raise Reject(f"ONNX Reshape [0, {width}] does not fit the declared input shape")
                shape = [lead, width]
            else:
                if shape is not None and None not in shape:
                    remainder = 1
                    for d in shape:
                        remainder = remainder * d % width
                    if remainder:
                        raise Reject(f"ONNX Reshape [-1, {width}] does not fit the declared input shape")
                shape = [None, width]
        elif op == "Norm":
            dims = constants[target]
            if dims and (shape is None or len(dims) > len(shape)):
                raise Reject(f"ONNX normalization constant of shape {dims} against a value of declared shape {shape}: "
                             "broadcasting would raise the value's rank")
            count = math.prod(dims)
            if count != 1 and (shape is None or count != widths[0] or _stripped(dims) != _stripped(shape)):
                raise Reject(f"ONNX normalization constant of shape {dims} against a value of declared shape "
                             f"{shape}: a scalar, or one value per input in the value's own shape (leading 1s "
                             "aside), is read")
        elif op == "Head":
            if target != -1 and (shape is None or target != len(shape) - 1):
                raise Reject(f"ONNX head over axis {target}, not the last axis of the logits"
                             + (" (their rank is not declared)" if shape is None else ""))
        else:
            width, out = widths[layer], widths[layer + 1]
            layer += 1
            if op == "MatMulW" and (shape is None or len(shape) != 1):
                # W (out, in) times a column [in, 1] is (out, 1), and Add then broadcasts the bias (out,) into an
                # (out, out) matrix: MatMul(W, h) is the layer W h + b only for h known to be 1-D
                raise Reject("ONNX MatMul(W, x) (the weight first) of a value not declared 1-D")
            if shape is None:
                continue
            if op == "Gemm" and len(shape) != 2 or not shape or shape[-1] not in (None, width):
                raise Reject(f"ONNX {op} cannot take the declared input shape (it needs width {width})")
            shape = [shape[0], out] if op == "Gemm" else shape[:-1] + [out]


class Chain(NamedTuple):
    """What an ONNX file computes: ``tensors`` W_1 (n_1, m), b_1, …, W_{L+1}, b_{L+1} as Tensor objects (W with
    shape (out, in) after the transB / MatMul transposition rules, a Fortran-order view of B where a transpose
    is needed, never a copy); ``names`` the initializer names in that order; ``locations`` the external-data
    locations read (in order of first use, without repeats; [] when none); ``output_relu``: a Relu follows the
    last layer."""

    tensors: list[Tensor]
    names: list[str]
    locations: list[str]
    output_relu: bool
    head: str | None = None  # a final Softmax or LogSoftmax: the tensors are its logits
    normalization: list = []  # [op, constant] before the first layer, in order  # noqa: RUF012 - a NamedTuple default
    affine: tuple | None = None  # their composition, x ↦ s ⊙ x + t: (s, t) exact, of length m
    scales: list = []  # each layer's (alpha, beta), exact: a Gemm's, 1 otherwise  # noqa: RUF012 - a default


def read_onnx(data: bytes, external: Callable[[str], bytes] | None = None) -> Chain:
    """The chain of affine layers an ONNX model computes, L ≥ 1 hidden layers with a Relu after each and optionally
    after the last (the module docstring). `external(location)` returns the bytes of an external data file (the
    caller resolves the path and hashes it); when it is None and the model has external data,
    Reject("... external data ...").

    Data is read in the order Reshape targets, then each layer's weight and bias. Malformed or unsupported files
    raise Reject with a one-line reason and no other exception. Cost: linear in len(data) plus the external data
    read."""
    if not isinstance(data, bytes):
        data = bytes(data)
    model = _parse(data, 0, len(data), "model")
    if not MIN_IR <= model.get("ir_version", 0) <= MAX_IR:
        raise Reject(f"ONNX IR version {model.get('ir_version', 0)} is not supported (only {MIN_IR} to {MAX_IR})")
    opset = _opset(model)
    if "graph" not in model:
        raise Reject("the ONNX model has no graph")
    graph = model["graph"]
    initializers: dict[str, dict] = {}
    for tensor in graph.get("initializer", []):
        name = tensor.get("name", "")
        if not name:
            raise Reject("an ONNX initializer has no name")
        if name in initializers:
            raise Reject(f"two ONNX initializers are named {_q(name)}")
        if tensor.get("data_type", 0) == _BFLOAT16 and opset < BFLOAT16_OPSET:
            # BFLOAT16 is a tensor type of the default domain from opset 13 (docs/FORMATS.md): onnxruntime refuses
            # such a graph below, and so does the producer
            raise Reject(f"initializer {_q(name)} is BFLOAT16, which ONNX allows from opset {BFLOAT16_OPSET} (the "
                         f"model imports opset {opset})")
        dims = _int64s(data, tensor.get("dims", []))
        if any(d < 0 for d in dims):
            raise Reject(f"initializer {_q(name)} has a negative dimension")
        tensor["dims"] = dims
        initializers[name] = tensor
    quantized = take_dequantized(graph, opset, initializers)
    layers, targets, steps, values, output_relu, head, norms, scales, casts = _chain(graph, opset, initializers)

    names = [name for B, C, _ in layers for name in (B, C)]
    types = {initializers[name].get("data_type", 0) for name in names}
    if len(types) != 1 or next(iter(types)) not in _WEIGHT_TYPES:
        found = ", ".join(sorted(_TYPE_NAMES.get(t, str(t)) for t in types))
        raise Reject(f"the ONNX weights must share one element type FLOAT, FLOAT16, BFLOAT16 or DOUBLE (found {found})")
    shapes, widths = [], []
    for B, C, transposed in layers:
        dims_b, dims_c = initializers[B]["dims"], initializers[C]["dims"]
        if len(dims_b) != 2:
            raise Reject(f"ONNX weight {_q(B)} has {len(dims_b)} dimensions, not 2")
        rows, cols = dims_b[::-1] if transposed else dims_b
        if dims_c != [rows]:
            raise Reject(f"ONNX bias {_q(C)} does not have the shape ({rows},)")
        if widths and cols != widths[-1]:
            raise Reject(f"ONNX layers do not fit: layer {len(shapes)} has {widths[-1]} outputs, layer "
                         f"{len(shapes) + 1} {cols} inputs")
        widths += [cols, rows] if not widths else [rows]
        shapes.append((rows, cols))
    m = widths[0]
    declared_x = _check_declarations(graph, initializers, values, next(iter(types)))

    for target in targets:
        if initializers[target].get("data_type", 0) != _INT64 or initializers[target]["dims"] != [2]:
            raise Reject(f"ONNX Reshape target {_q(target)} is not an INT64 vector of length 2")
    if any(to != next(iter(types)) for to in casts):
        raise Reject("ONNX Cast to another element type than the weights' (only a Cast to the value's own type, an "
                     "identity, is read)")
    for _, name in norms:
        if initializers[name].get("data_type", 0) != next(iter(types)):
            raise Reject(f"ONNX normalization constant {_q(name)} has another element type than the weights")
    reader = _Reader(data, external, initializers)
    order = list(dict.fromkeys(targets + names + [name for _, name in norms]))
    order = [n for name in order for n in (initializers[name]["_dq"][:3] if "_dq" in initializers[name] else [name])
             if n]
    for name in order:  # every data source is checked before any external file is read
        reader.check(initializers[name], name)
    reshapes: dict[str, list[int]] = {}
    for target in dict.fromkeys(targets):
        tensor = initializers[target]
        shape = reader.int64s(tensor, target)
        if shape not in ([-1, m], [0, m]) or shape == [-1, 0]:
            raise Reject(f"ONNX Reshape target {_q(target)} is {shape}, not [-1, {m}] or [0, {m}]")
        reshapes[target] = shape
    constants = {name: initializers[name]["dims"] for _, name in norms}
    _check_input_shape(declared_x, steps, tuple(widths), reshapes, constants)
    tensors = []
    for (B, C, transposed), (rows, cols) in zip(layers, shapes, strict=True):
        code = _WEIGHT_TYPES[initializers[B]["data_type"]][0]
        tensors.append(Tensor((rows, cols), reader.weights(initializers[B], B), transposed, code))
        tensors.append(Tensor((rows,), reader.weights(initializers[C], C), False, code))
        for name, t in ((B, tensors[-2]), (C, tensors[-1])):
            t.quantized = quantized.get(name, "")
    top = Fraction(LARGEST[_WEIGHT_TYPES[next(iter(types))][0]])
    for (alpha, beta), W, C in zip(scales, tensors[::2], tensors[1::2], strict=True):
        for factor, t in ((alpha, W), (beta, C)):
            if factor != 1.0 and abs(Fraction(factor)) * Fraction(max(map(abs, t.values), default=0.0)) > top:
                raise Reject("ONNX Gemm whose alpha·B or beta·C leaves the element type's finite values")
    affine = None
    if norms:
        if len(norms) > MAX_NORMALIZE:
            raise Reject(f"ONNX input normalized in {len(norms)} steps (at most {MAX_NORMALIZE})")
        scale, shift = [Fraction(1)] * m, [Fraction(0)] * m
        for op, name in norms:
            code = _WEIGHT_TYPES[initializers[name]["data_type"]][0]
            dims = initializers[name]["dims"]
            values = Tensor((math.prod(dims),), reader.weights(initializers[name], name), False, code).exact()
            values = values * m if len(values) == 1 else values
            if op == "Div" and not all(values):
                raise Reject(f"ONNX Div by a constant {_q(name)} holding 0")
            if op in ("Sub", "Add"):
                shift = [t - c if op == "Sub" else t + c for t, c in zip(shift, values, strict=True)]
            elif op == "Mul":
                scale = [a * c for a, c in zip(scale, values, strict=True)]
                shift = [t * c for t, c in zip(shift, values, strict=True)]
            else:
                scale = [a / c for a, c in zip(scale, values, strict=True)]
                shift = [t / c for t, c in zip(shift, values, strict=True)]
            if any(abs(v) > top for v in (*scale, *shift)):
                raise Reject("ONNX normalization whose composed scale or shift leaves the element type's finite "
                             "values")
        affine = (scale, shift)
    return Chain(tensors, names, reader.locations, output_relu, head, [list(n) for n in norms], affine,
                 [(Fraction(a), Fraction(b)) for a, b in scales])

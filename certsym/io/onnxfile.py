"""The producer's strict ONNX reader: the affine layers of a ReLU network, as docs/FORMATS.md ("ONNX") says.

An accepted file is a binary ``ModelProto`` whose only opset import is the default domain (``""`` or
``ai.onnx``), with no model functions, training info or sparse initializers, and whose graph has exactly one
input that is not an initializer (x) and exactly one output (y). The data flow from x to y, followed by value
names (never by counting node types), is the chain

    x → [Flatten(axis=1) | Reshape(·, s) | Identity | N]* → L_1 → ([Identity]* → Relu → [Identity]* → L_ℓ)+
      → [Identity]* → [Relu → [Identity]*] → y

(L ≥ 1 hidden layers, each linear layer but the last followed by one Relu, and optionally one Relu after the last,
which is kept: the output ReLU) with L = Gemm(h, B, C) (finite alpha and beta, read exactly as the layer alpha W,
beta C; transA = 0, transB 0 or 1), or
MatMul(h, B) or MatMul(B, h) followed by Add of its result and C in either operand order; B and C are initializers.
N is an input normalization by a constant initializer c (Sub(h, c), Div(h, c), Add or Mul with c on either side;
c a scalar or one value per input in the value's own shape, leading 1s aside), folded into the first layer exactly
(``Chain.affine``, ``Chain.exact_layers``).
MatMul(B, h), the weight first, is read only where h is declared 1-D (the graph input declared [m], with no
Flatten or Reshape before): of a column [m, 1] the Add would broadcast the bias into a matrix. Every node of
the graph is on the chain, and every intermediate value is used by exactly one node and is not a graph output. An
attribute that is not listed (for example Gemm's ``broadcast``, or an attribute with a second value field) refuses
the file, since it could change the computation. The weights are W = B (Gemm, transB = 1; MatMul(B, h)), W = Bᵀ
(Gemm, transB = 0; MatMul(h, B)); each bias has shape exactly (rows of its W,), and each layer reads the width the
previous one gives.
The weights and biases share one element type (FLOAT, FLOAT16, BFLOAT16 or DOUBLE); their data come from exactly
one of ``raw_data`` (little-endian) and the typed field (``float_data``, ``int32_data`` holding 16-bit patterns,
``double_data``), or from external data (keys ``location``, ``offset``, ``length`` only; a relative location
inside the model's folder, without ``..``). A Reshape target s is an INT64 initializer [-1, m] or [0, m], with
``allowzero`` absent or 0.

Beyond the text of FORMATS.md, this reader also refuses what would make the file invalid or ambiguous as ONNX
(each is reported by what was found): protobuf fields unknown to the installed onnx package; a default-domain
opset outside 7..28 (before 7 Gemm and Add broadcast differently, and onnxruntime guarantees 7 and up; after 28
the operators are not defined yet), below 13 for BFLOAT16 weights, below 14 when ``allowzero`` is written; an IR
version outside 3..14; device configurations and quantization annotations; strings that are not UTF-8; declared
types or shapes of x, y, intermediate values or initializer inputs that contradict the chain; initializers that
the chain does not use; ``int32_data`` entries outside 0..65535; a ``location`` with an empty, ``.`` or ``..``
part, a backslash, a colon or NUL, or resolving (through symlinks) outside the model's folder; ``offset`` and
``length`` that are not canonical decimals; absent ``length`` unless the rest of the file from ``offset`` is
exactly the tensor; NaN or infinite weights. Node order is free: the data flow decides.

Not detected here, because protobuf hides it from onnx: a non-repeated field that occurs twice (protobuf
merges such repeats silently: the last scalar wins, messages are merged), both members of a oneof (say
``dim_value`` and ``dim_param``; the last wins), and a typed data field that occurs with zero entries beside
``raw_data`` (an empty repeated field looks absent). The independent checker (``checker/certsym_check``, a
standard-library reader of the raw bytes) refuses them.

Cost: linear in the size of the model file and of the external data files read (each is read and hashed
once); the graph walk is linear in the number of nodes.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from flint import fmpq

from certsym.errors import InputError
from certsym.io.filebytes import gunzip_bounded
from certsym.io.quantized import dequantize

# TensorProto.DataType values used here.
_FLOAT, _INT64, _FLOAT16, _DOUBLE, _BFLOAT16, _UINT8, _INT8 = 1, 7, 10, 11, 16, 2, 3
_WEIGHT_TYPES = {_FLOAT: "FLOAT", _FLOAT16: "FLOAT16", _BFLOAT16: "BFLOAT16", _DOUBLE: "DOUBLE"}
_TYPE_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
               8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
               15: "COMPLEX128", 16: "BFLOAT16"}
_RAW_DTYPE = {_FLOAT: "<f4", _FLOAT16: "<f2", _BFLOAT16: "<u2", _DOUBLE: "<f8", _INT64: "<i8", _INT8: "<i1",
              _UINT8: "<u1"}
_TYPED_FIELD = {_FLOAT: "float_data", _FLOAT16: "int32_data", _BFLOAT16: "int32_data", _DOUBLE: "double_data",
                _INT64: "int64_data", _INT8: "int32_data", _UINT8: "int32_data"}
_QUANTIZED = {_INT8: "int8", _UINT8: "uint8"}  # DequantizeLinear's integer types read here
_DQ_SCALES = {_FLOAT: np.float32, _FLOAT16: np.float16}  # and its scale types: the output's type
_DATA_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL

# AttributeProto.AttributeType values, the value field each uses, and every other value field.
_ATTR_FLOAT, _ATTR_INT = 1, 2
_ATTR_FIELD = {_ATTR_FLOAT: "f", _ATTR_INT: "i"}
_ATTR_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH", 6: "FLOATS", 7: "INTS",
               8: "STRINGS", 9: "TENSORS", 10: "GRAPHS", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS", 13: "TYPE_PROTO",
               14: "TYPE_PROTOS"}
_SCALAR_ATTR_FIELDS = ("f", "i", "s", "t", "g", "sparse_tensor", "tp")
_LIST_ATTR_FIELDS = ("floats", "ints", "strings", "tensors", "graphs", "sparse_tensors", "type_protos")

# The operators of the chain: number of inputs, allowed attributes (name → (type, default)).
_ARITY = {"Gemm": 3, "MatMul": 2, "Add": 2, "Relu": 1, "Identity": 1, "Flatten": 1, "Reshape": 2, "Softmax": 1,
          "LogSoftmax": 1, "Sub": 2, "Mul": 2, "Div": 2, "Dropout": 1, "Cast": 1}
_DQ = "DequantizeLinear"  # of initializers only: a constant weight, read as the values the operator outputs
IDENTITIES = ("Identity", "Dropout", "Cast")  # Dropout at inference, Cast to the value's own element type
NORMALIZE = ("Sub", "Add", "Mul", "Div")  # by a constant, before the first linear layer: folded into it exactly
HEADS = ("Softmax", "LogSoftmax")  # a head read as the logits it normalizes: top-1 questions only
_ATTRIBUTES: dict[str, dict[str, tuple[int, float | int]]] = {
    "Gemm": {"alpha": (_ATTR_FLOAT, 1.0), "beta": (_ATTR_FLOAT, 1.0), "transA": (_ATTR_INT, 0),
             "transB": (_ATTR_INT, 0)},
    "Flatten": {"axis": (_ATTR_INT, 1)},
    "Reshape": {"allowzero": (_ATTR_INT, 0)},
    "Softmax": {"axis": (_ATTR_INT, -1)},  # the default before opset 13 is 1 (``attributes``)
    "Dropout": {"seed": (_ATTR_INT, 0), "ratio": (_ATTR_FLOAT, 0.5)},  # one input: no training_mode, inference
    "Cast": {"to": (_ATTR_INT, 0)},  # checked to be the value's own element type (``read``)
    "LogSoftmax": {"axis": (_ATTR_INT, -1)},
    "DequantizeLinear": {"axis": (_ATTR_INT, 1), "block_size": (_ATTR_INT, 0)},
}
_DEFAULT_DOMAINS = ("", "ai.onnx")
_MIN_OPSET, _MAX_OPSET = 7, 28  # default-domain opsets whose Gemm, MatMul, Add, Relu, Flatten, Reshape are known here
_MIN_IR, _MAX_IR = 3, 14  # IR versions with opset imports, up to the newest known here
_LOCATION_PART = re.compile(r"[^\\:\x00]+")  # no backslash, no colon, no NUL
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")
_CHAIN = ("x → [Flatten|Reshape|Identity]* → L → ([Identity]* → Relu → [Identity]* → L)+ → [Identity]* → "
          "[Relu → [Identity]*] → y, L = Gemm or MatMul+Add")

# Where the walk is: before the first linear layer, after a linear layer, after the Relu that follows it.
_PRE, _LINEAR, _RELU = 0, 1, 2
_STAGE_EXPECT = ("Flatten, Reshape, Identity, Sub, Add, Mul or Div by a constant, Gemm or MatMul",
                 "Identity, Relu or the graph output",
                 "Identity, Gemm, MatMul or the graph output")

_Shape = list[int | None] | None  # a declared shape: None = unknown rank, None entries = unknown dims


@dataclass
class _Layer:
    label: str  # the node(s), for messages
    weight: str  # B
    bias: str  # C
    transposed: bool  # W = Bᵀ (Gemm transB = 0, MatMul) rather than W = B
    gemm: bool  # Gemm (input of rank 2) rather than MatMul + Add (rank 1 or more)
    mid: str | None = None  # MatMul + Add: the MatMul's output
    weight_first: bool = False  # MatMul(W, h) of a 1-D h: W = B as stored
    alpha: float = 1.0  # Gemm: W scaled by alpha and the bias by beta (exactly: binary32 attributes)
    beta: float = 1.0


@dataclass
class _Step:
    kind: str  # "identity", "flatten", "reshape", "linear", "relu"
    label: str
    out: str
    arg: Any = None  # reshape: the target initializer's name; linear: the layer index


def _q(name: str) -> str:
    """A value or node name quoted for a one-line message."""
    return repr(name if len(name) <= 60 else name[:57] + "...")


def _num(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value == int(value) else repr(value)


def _hint(op: str, stage: int) -> str:
    """Why an operator found at a stage of the walk does not fit there."""
    if op in ("Flatten", "Reshape"):
        return " (shape nodes come only before the first linear layer)"
    if op == "Add":
        return " (Add only right after MatMul)"
    if op in ("Gemm", "MatMul"):
        return " (two linear layers need a Relu between them)"
    if op == "Relu":
        return " (certsym reads one Relu after each linear layer)" if stage == _RELU else ""
    return ""


MAX_GUNZIPPED = 1 << 31  # bytes of a decompressed .onnx.gz (the checker reads as many)
MAX_NORMALIZE = 16  # normalization steps before the first layer
_LARGEST = {_FLOAT: 3.4028234663852886e38, _FLOAT16: 65504.0, _BFLOAT16: 3.3895313892515355e38,
            _DOUBLE: 1.7976931348623157e308}  # the largest finite value of each element type


def _gunzipped(path: Path, fail: Callable[[str], NoReturn]) -> bytes:
    """The decompressed bytes of a gzipped model file, at most MAX_GUNZIPPED of them."""
    try:
        with open(path, "rb") as raw:
            data = gunzip_bounded(raw, MAX_GUNZIPPED)
    except (OSError, EOFError, zlib.error) as exc:
        fail(f"not a readable gzip file ({exc})")
    if data is None:
        fail(f"decompresses to more than {MAX_GUNZIPPED:,} bytes")
    return data


def _lead_stripped(dims: list) -> list:
    """A shape without its leading 1s (or unknown dimensions): what broadcasting aligns from the right."""
    start = next((i for i, d in enumerate(dims) if d not in (1, None)), len(dims))
    return list(dims[start:])


def _shape_text(dims: Any) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _declared_text(shape: list[int | None]) -> str:
    return _shape_text(["?" if d is None else d for d in shape])


class _Reader:
    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        self.files: dict[str, bytes] = {}  # external location → contents (read once)
        self.external: list[tuple[str, str]] = []
        self.quantized: dict[str, str] = {}  # a DequantizeLinear output read as a weight → how it was stored

    def fail(self, message: str) -> NoReturn:
        raise InputError(f"{self.label}: {message}")

    # -- the model ------------------------------------------------------------------------------------------

    def load(self) -> Any:
        try:
            import onnx  # optional: the models extra
        except ImportError:
            raise InputError("reading ONNX needs the 'onnx' package (pip install 'certsym[models]')") from None
        if not self.path.exists():
            self.fail("no such file")
        if not self.path.is_file():
            self.fail("not a regular file")
        try:
            with open(self.path, "rb") as fh:
                packed = fh.read(2) == b"\x1f\x8b"
            if packed:  # a gzipped file (.onnx.gz): its decompressed bytes, external data beside it as usual
                model = onnx.load_model_from_string(_gunzipped(self.path, self.fail))
            else:
                model = onnx.load(str(self.path), format="protobuf", load_external_data=False)
        except Exception as exc:
            detail = str(exc).splitlines()[0] if str(exc) else ""
            self.fail(f"not a binary ONNX ModelProto ({type(exc).__name__}: {detail})")
        size = model.ByteSize()
        model.DiscardUnknownFields()
        if model.ByteSize() != size:
            self.fail("holds protobuf fields that onnx does not know (a newer ONNX version, or not an ONNX file); "
                      "certsym does not guess their meaning")
        return model

    def check_model(self, model: Any) -> int:
        """Model-level rules; returns the default-domain opset version."""
        if not model.HasField("graph"):
            self.fail("has no graph (not an ONNX model, or a truncated file)")
        if len(model.functions):
            self.fail(f"defines {len(model.functions)} model-local function(s); certsym reads only the standard "
                      "operators of the default domain")
        if len(model.training_info):
            self.fail("holds training info; certsym reads inference graphs only")
        if len(model.graph.sparse_initializer):
            self.fail("holds sparse initializers; certsym reads dense initializers only")
        if len(model.configuration) or any(len(node.device_configurations) for node in model.graph.node):
            self.fail("holds device configurations (a multi-device graph); certsym reads single-device graphs only")
        if len(model.graph.quantization_annotation):
            self.fail("holds quantization annotations; certsym reads unquantized graphs only")
        self.check_text(model)
        for node in model.graph.node:
            if node.domain not in _DEFAULT_DOMAINS:
                self.fail(f"found node {node.op_type} {_q(node.name)} of the custom domain {_q(node.domain)}; "
                          "certsym reads only the default domain")
        imports = list(model.opset_import)
        if not imports:
            self.fail("has no opset import; expected the default domain ('' or 'ai.onnx')")
        others = [imp.domain for imp in imports if imp.domain not in _DEFAULT_DOMAINS]
        if others:
            self.fail(f"imports the opset of domain {_q(others[0])}; certsym reads only the default domain "
                      "('' or 'ai.onnx')")
        if len(imports) > 1:
            self.fail(f"imports the default domain {len(imports)} times; expected once")
        version = self.opset = imports[0].version
        if version < _MIN_OPSET:
            self.fail(f"uses opset {version} of the default domain; certsym reads opset {_MIN_OPSET} and later (Gemm "
                      "and Add broadcast differently before)")
        import onnx  # optional: the models extra (load has imported it)

        newest = min(_MAX_OPSET, onnx.defs.onnx_opset_version())
        if version > newest:
            self.fail(f"uses opset {version} of the default domain, newer than certsym knows ({newest}); certsym "
                      "does not guess what it means")
        newest_ir = min(_MAX_IR, onnx.IR_VERSION)
        if not _MIN_IR <= model.ir_version <= newest_ir:
            self.fail(f"has IR version {model.ir_version}; certsym reads IR versions {_MIN_IR} (the first with opset "
                      f"imports) to {newest_ir}")
        return version

    def check_text(self, model: Any) -> None:
        """Every string the reader uses is valid UTF-8 (protobuf hands back bytes for a proto2 string that is not)."""
        graph = model.graph
        texts: list[Any] = [imp.domain for imp in model.opset_import]
        for node in graph.node:
            texts += [node.op_type, node.name, node.domain, node.overload, *node.input, *node.output]
            texts += [attr.name for attr in node.attribute] + [attr.ref_attr_name for attr in node.attribute]
        for tensor in graph.initializer:
            texts.append(tensor.name)
            for entry in tensor.external_data:
                texts += [entry.key, entry.value]
        texts += [info.name for info in (*graph.input, *graph.output, *graph.value_info)]
        for dims in (info.type.tensor_type.shape.dim for info in (*graph.input, *graph.output, *graph.value_info)):
            texts += [d.dim_param for d in dims]
        bad = next((t for t in texts if not isinstance(t, str)), None)
        if bad is not None:
            self.fail(f"holds the name {bad!r}, which is not UTF-8 text")

    # -- the graph ------------------------------------------------------------------------------------------

    def index(self, graph: Any) -> None:
        self.graph = graph
        self.inits: dict[str, Any] = {}
        for tensor in graph.initializer:
            if not tensor.name:
                self.fail("has an initializer without a name")
            if tensor.name in self.inits:
                self.fail(f"has two initializers named {_q(tensor.name)}")
            self.inits[tensor.name] = tensor
        names = [vi.name for vi in graph.input]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            self.fail(f"lists the graph input {_q(dup)} twice")
        free = [vi for vi in graph.input if vi.name not in self.inits]
        if len(free) != 1:
            found = ", ".join(_q(vi.name) for vi in free) or "none"
            self.fail(f"has {len(free)} graph inputs that are not initializers ({found}); expected exactly one, x")
        self.x_info = free[0]
        self.x = free[0].name
        if not self.x:
            self.fail("has a graph input without a name")
        self.init_inputs = {vi.name: vi for vi in graph.input if vi.name in self.inits}
        if len(graph.output) != 1:
            found = ", ".join(_q(vi.name) for vi in graph.output) or "none"
            self.fail(f"has {len(graph.output)} graph outputs ({found}); expected exactly one, y")
        self.y_info = graph.output[0]
        self.y = self.y_info.name
        if self.y == self.x:
            self.fail(f"returns its input {_q(self.x)} as its output; expected a network between them")

        self.nodes = list(graph.node)
        self.dequantized: dict[str, tuple] = {}  # a DequantizeLinear's output → (label, x, scale, zero point, axis)
        self.take_dequantized()
        self.labels = [self.node_label(node, i) for i, node in enumerate(self.nodes)]
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[tuple[int, int]]] = {}
        self.allowzero_written = False
        for i, node in enumerate(self.nodes):
            self.check_node(i, node)
            for pos, name in enumerate(node.input):
                self.consumers.setdefault(name, []).append((i, pos))
            out = node.output[0]
            if out in self.producer:
                self.fail(f"the value {_q(out)} is the output of both {self.labels[self.producer[out]]} and "
                          f"{self.labels[i]}")
            if out in self.inits:
                self.fail(f"the value {_q(out)} is both an initializer and the output of {self.labels[i]}")
            if out == self.x:
                self.fail(f"the graph input {_q(out)} is also the output of {self.labels[i]}")
            self.producer[out] = i

    def take_dequantized(self) -> None:
        """FORMATS.md, "Quantized weights": every DequantizeLinear reads initializers only (a quantized constant
        weight, x of INT8 or UINT8 with a FLOAT or FLOAT16 scale, per tensor or along one axis) and its output
        becomes a virtual initializer of the scale's type, whose values (``tensor``) are s·(q − z) rounded to that
        type, as the operator outputs them. A QuantizeLinear, or a DequantizeLinear of anything else, quantizes the
        network's values: refused."""
        kept = []
        for i, node in enumerate(self.nodes):
            label = self.node_label(node, i)
            if node.op_type == "QuantizeLinear" and node.domain in _DEFAULT_DOMAINS:
                self.fail(f"found {label}: it rounds the network's values to integers (activation quantization), so "
                          "the graph is not a ReLU network; certsym reads DequantizeLinear of constant weights only")
            if node.op_type != _DQ or node.domain not in _DEFAULT_DOMAINS:
                kept.append(node)
                continue
            if self.opset < 10:
                self.fail(f"{label} under opset {self.opset}; DequantizeLinear exists from opset 10")
            if len(node.input) not in (2, 3) or any(not n for n in node.input) or len(node.output) != 1 \
                    or not node.output[0]:
                self.fail(f"{label} has inputs ({', '.join(_q(n) for n in node.input)}) and outputs "
                          f"({', '.join(_q(n) for n in node.output)}); expected x, x_scale[, x_zero_point] and one "
                          "output")
            for name in node.input:
                if name not in self.inits or name in self.dequantized:
                    self.fail(f"{label} reads {_q(name)}, which is not an initializer: a dequantized value of the "
                              "network (activation quantization) is not a ReLU network; certsym reads "
                              "DequantizeLinear of constant weights only")
            values = self._dq_attributes(i, node, label)
            x, scale = self.inits[node.input[0]], self.inits[node.input[1]]
            if x.data_type not in _QUANTIZED:
                self.fail(f"{label} dequantizes {_TYPE_NAMES.get(x.data_type, x.data_type)}; certsym reads INT8 and "
                          "UINT8 weights")
            if scale.data_type not in _DQ_SCALES or (scale.data_type == _FLOAT16 and self.opset < 19):
                self.fail(f"{label} has a scale of {_TYPE_NAMES.get(scale.data_type, scale.data_type)}; certsym reads "
                          "FLOAT scales (FLOAT16 from opset 19)")
            zero = self.inits[node.input[2]] if len(node.input) == 3 else None
            if zero is not None and zero.data_type != x.data_type:
                self.fail(f"{label}'s zero point is {_TYPE_NAMES.get(zero.data_type)}, its x "
                          f"{_TYPE_NAMES.get(x.data_type)}; ONNX requires one type")
            xdims, sdims = self.dims(node.input[0]), self.dims(node.input[1])
            if zero is not None and self.dims(node.input[2]) != sdims:
                self.fail(f"{label}'s zero point and scale have different shapes")
            if sdims in ([], [1]):  # a scalar, or one element (onnxruntime reads it per tensor)
                axis = None
            elif len(sdims) == 1 and self.opset >= 13 and -len(xdims) <= values["axis"] < len(xdims) \
                    and sdims[0] == xdims[values["axis"] % len(xdims)]:
                axis = values["axis"] % len(xdims)
            else:
                self.fail(f"{label} has a scale of shape {_shape_text(sdims)} for x of shape {_shape_text(xdims)} "
                          f"(axis {values['axis']}); certsym reads a scalar scale, or one per index of the axis "
                          "(opset 13 and later)")
            out = node.output[0]
            if out in self.inits:
                self.fail(f"the value {_q(out)} is both an initializer and the output of {label}")
            infos = [info for info in self.graph.value_info if info.name == node.output[0]]
            if len(infos) > 1:
                self.fail(f"declares the value {_q(node.output[0])} {len(infos)} times; onnxruntime refuses that")
            if node.output[0] in {vi.name for vi in self.graph.input}:
                self.fail(f"the value {_q(node.output[0])} is both a graph input and the output of {label}")
            declared = infos[0] if infos else None
            if declared is not None and declared.type.WhichOneof("value") is not None:
                self.agree(self.declared(declared, "the value", scale.data_type, f"{label} outputs"), xdims,
                           "the value", node.output[0])
            virtual = type(scale)()
            virtual.name, virtual.data_type = out, scale.data_type
            virtual.dims.extend(xdims)
            self.inits[out] = virtual
            self.dequantized[out] = (label, *node.input[:2], node.input[2] if zero is not None else None, axis)
        self.nodes = kept

    def _dq_attributes(self, i: int, node: Any, label: str) -> dict:
        self.labels = {i: label}
        values = self.attributes(i, node)
        for name, since in (("axis", 13), ("block_size", 21)):
            if self.opset < since and any(attr.name == name for attr in node.attribute):
                self.fail(f"{label} has the attribute {name}, which DequantizeLinear has from opset {since} (the "
                          f"model imports {self.opset})")
        if values["block_size"] != 0:
            self.fail(f"{label} has block_size = {values['block_size']}; certsym reads per-tensor and per-axis "
                      "quantization only")
        return values

    @staticmethod
    def node_label(node: Any, i: int) -> str:
        return f"{node.op_type} {_q(node.name)}" if node.name else f"{node.op_type} (node {i})"

    def check_node(self, i: int, node: Any) -> None:
        label = self.labels[i]
        if node.domain not in _DEFAULT_DOMAINS:
            self.fail(f"found node {node.op_type} {_q(node.name)} of the custom domain {_q(node.domain)}; "
                      "certsym reads only the default domain")
        if node.op_type not in _ARITY:
            self.fail(f"found node {label}; expected only Flatten, Reshape, Identity, Gemm, MatMul, Add and Relu "
                      "(with Dropout, a Cast to the value's own type, Sub, Mul and Div by constants before the first "
                      f"layer, and a final Softmax or LogSoftmax), as {_CHAIN}")
        if node.overload:
            self.fail(f"{label} names the overload {_q(node.overload)}; certsym reads standard operators only")
        arity = _ARITY[node.op_type]
        if node.op_type == "Gemm" and (len(node.input) == 2 or (len(node.input) == 3 and not node.input[2])):
            self.fail(f"{label} has no bias C; certsym reads a bias in both layers")
        if len(node.input) != arity or any(not name for name in node.input):
            self.fail(f"{label} has the inputs ({', '.join(_q(n) for n in node.input)}); expected {arity} named inputs")
        if len(node.output) != 1 or not node.output[0]:
            self.fail(f"{label} has {len(node.output)} output(s) ({', '.join(_q(n) for n in node.output)}); "
                      "expected one")
        self.attributes(i, node)

    def attributes(self, i: int, node: Any) -> dict[str, float | int]:
        """The node's attributes with their defaults; any attribute not listed refuses the file."""
        label = self.labels[i]
        allowed = _ATTRIBUTES.get(node.op_type, {})
        values = {name: default for name, (_, default) in allowed.items()}
        seen: set[str] = set()
        for attr in node.attribute:
            if attr.name not in allowed:
                self.fail(f"{label} has the attribute {_q(attr.name)}; certsym reads "
                          + (", ".join(allowed) + " only" if allowed else "none on this operator"))
            if attr.name in seen:
                self.fail(f"{label} has the attribute {_q(attr.name)} twice")
            seen.add(attr.name)
            kind, _ = allowed[attr.name]
            field = _ATTR_FIELD[kind]
            if attr.HasField("ref_attr_name"):
                self.fail(f"{label}'s attribute {attr.name} refers to a function attribute; certsym reads "
                          "literal values only")
            if attr.type != kind:
                self.fail(f"{label}'s attribute {attr.name} has type {_ATTR_NAMES.get(attr.type, attr.type)}; "
                          f"expected {_ATTR_NAMES[kind]}")
            extra = [f for f in _SCALAR_ATTR_FIELDS if f != field and attr.HasField(f)]
            extra += [f for f in _LIST_ATTR_FIELDS if len(getattr(attr, f))]
            if extra:
                self.fail(f"{label}'s attribute {attr.name} also sets the field {extra[0]}; expected only {field}")
            values[attr.name] = getattr(attr, field)
        if node.op_type == "Gemm":
            for name in ("alpha", "beta"):
                if not math.isfinite(values[name]):
                    self.fail(f"{label} has {name} = {_num(values[name])}; certsym reads finite values")
            if values["transA"] != 0:
                self.fail(f"{label} has transA = {values['transA']}; certsym reads transA = 0 only")
            if values["transB"] not in (0, 1):
                self.fail(f"{label} has transB = {values['transB']}; certsym reads transB = 0 or 1")
        elif node.op_type in HEADS and "axis" not in seen and self.opset < 13:
            values["axis"] = 1  # the default before opset 13, on the input coerced to 2-D
        elif node.op_type == "Dropout" and "ratio" in seen and self.opset >= 12:
            self.fail(f"{label} has the attribute ratio, an input from opset 12 (the model imports {self.opset})")
        elif node.op_type == "Flatten" and values["axis"] != 1:
            self.fail(f"{label} has axis = {values['axis']}; certsym reads axis = 1 only")
        elif node.op_type == "Reshape":
            if values["allowzero"] != 0:
                self.fail(f"{label} has allowzero = {values['allowzero']}; certsym reads allowzero absent or 0")
            if "allowzero" in seen:
                self.allowzero_written = True
        return values

    # -- the chain ------------------------------------------------------------------------------------------

    def uses_text(self, uses: list[tuple[int, int]]) -> str:
        return ", ".join(self.labels[i] for i, _ in uses)

    def initializer_input(self, i: int, pos: int, role: str) -> str:
        """The name of input ``pos`` of node ``i``, which must be an initializer."""
        name = self.nodes[i].input[pos]
        if name not in self.inits:
            source = (f"the output of {self.labels[self.producer[name]]}" if name in self.producer
                      else "the graph input x" if name == self.x else "not defined in the graph")
            self.fail(f"{self.labels[i]} reads its {role} {_q(name)}, which is {source}; expected an initializer")
        self.uses.append(name)
        return name

    def walk(self) -> None:
        """Follow the data flow from x to y by value names; fills steps, layers, uses and output_relu."""
        self.steps: list[_Step] = []
        self.casts: list[tuple[str, int]] = []  # (node, the element type it casts to)
        self.layers: list[_Layer] = []
        self.head: str | None = None
        self.uses: list[str] = []  # initializer names in order of first use along the chain
        visited: set[int] = set()
        v, stage = self.x, _PRE
        while True:
            uses = self.consumers.get(v, [])
            if v == self.y:
                if uses:
                    self.fail(f"the graph output {_q(v)} is also used by {self.uses_text(uses)}")
                if stage == _PRE or len(self.layers) < 2:
                    self.fail(f"the graph output {_q(v)} is the value {self.stage_text(stage)}; expected {_CHAIN}")
                break
            what = "the graph input" if v == self.x else "the value"
            if not uses:
                if stage == _RELU:
                    self.fail(f"the Relu output {_q(v)} is not used by the next linear layer (nor by any node) "
                              f"and is not the graph output {_q(self.y)}")
                self.fail(f"{what} {_q(v)} ({self.stage_text(stage)}) is not used by any node and is not the graph "
                          f"output {_q(self.y)}")
            if len(uses) > 1:
                ops = [self.nodes[i].op_type for i, _ in uses]
                if stage == _LINEAR and "Relu" in ops and ("Gemm" in ops or "MatMul" in ops):
                    j = next(i for i, _ in uses if self.nodes[i].op_type in ("Gemm", "MatMul"))
                    self.fail(f"{self.labels[j]} reads {_q(v)}, the output of linear layer {len(self.layers)} "
                              "before the Relu; the Relu output is not used by the next linear layer")
                self.fail(f"{what} {_q(v)} is used {len(uses)} times (by {self.uses_text(uses)}); certsym reads a "
                          "chain in which every value is used once")
            i, pos = uses[0]
            if i in visited:  # cannot happen with unique producers; kept as a guard against loops
                self.fail(f"the data flow loops at {self.labels[i]}")
            visited.add(i)
            node, label = self.nodes[i], self.labels[i]
            op = node.op_type
            if pos != 0 and op not in ("Add", "MatMul", "Mul"):
                self.fail(f"{label} reads {_q(v)} as its input {pos}; the chain's value must be input 0")
            out = node.output[0]
            if op in IDENTITIES:
                self.steps.append(_Step("identity", label, out))
                if op == "Cast":
                    self.casts.append((label, self.attributes(i, node)["to"]))
            elif op in ("Flatten", "Reshape") and stage == _PRE:
                target = self.initializer_input(i, 1, "target shape") if op == "Reshape" else None
                self.steps.append(_Step(op.lower(), label, out, target))
            elif op in NORMALIZE and stage == _PRE:
                constant = self.initializer_input(i, 1 - pos, "constant")
                self.steps.append(_Step("normalize", label, out, (op, constant)))
            elif op in ("Gemm", "MatMul") and stage in (_PRE, _RELU):
                out = self.linear(i, visited, pos)
                self.steps.append(_Step("linear", label, out, len(self.layers) - 1))
                stage = _LINEAR
            elif op == "Relu" and stage == _LINEAR:
                self.steps.append(_Step("relu", label, out))
                stage = _RELU
            elif op in HEADS and stage == _LINEAR and out == self.y and self.layers:
                # the logits' normalization, last: read as the logits, for the questions it cannot change
                self.head = op
                self.steps.append(_Step("head", label, out, self.attributes(i, node)["axis"]))
            else:
                self.fail(f"found {label} {self.stage_text(stage)}; expected {_STAGE_EXPECT[stage]}{_hint(op, stage)}")
            v = out
        self.output_relu = stage == _RELU
        if len(visited) != len(self.nodes):
            off = [self.labels[i] for i in range(len(self.nodes)) if i not in visited]
            self.fail(f"{len(off)} node(s) are not on the data flow from x to y ({', '.join(off[:3])}"
                      f"{', ...' if len(off) > 3 else ''}); every node must be on the chain")
        used = set(self.uses)
        used |= {n for out in used & set(self.dequantized) for n in self.dequantized[out][1:4] if n is not None}
        unused = [name for name in self.inits if name not in used and name not in self.dequantized]
        if unused:
            self.fail(f"the initializer {_q(unused[0])} is not used by the chain"
                      + (f" (nor {len(unused) - 1} other(s))" if len(unused) > 1 else "")
                      + "; certsym reads files whose every initializer defines the network")

    def stage_text(self, stage: int) -> str:
        """Where the walk is, for messages."""
        if stage == _PRE:
            return "before the first linear layer"
        return f"after {'the Relu after ' if stage == _RELU else ''}linear layer {len(self.layers)}"

    def linear(self, i: int, visited: set[int], pos: int = 0) -> str:
        """A linear layer starting at node ``i`` (Gemm, or MatMul and its Add), which reads the chain's value as its
        input ``pos`` (1: MatMul(W, h), weight first); returns its output value."""
        node, label = self.nodes[i], self.labels[i]
        if node.op_type == "Gemm":
            values = self.attributes(i, node)
            weight = self.initializer_input(i, 1, "weight B")
            bias = self.initializer_input(i, 2, "bias C")
            self.layers.append(_Layer(label, weight, bias, transposed=values["transB"] == 0, gemm=True,
                                      alpha=float(values["alpha"]), beta=float(values["beta"])))
            return node.output[0]
        weight = self.initializer_input(i, 1 - pos, "weight A" if pos else "weight B")
        t = node.output[0]
        uses = self.consumers.get(t, [])
        if t == self.y:
            self.fail(f"{label}'s output is the graph output; expected an Add of the bias after it")
        if len(uses) != 1:
            self.fail(f"{label}'s output {_q(t)} is used {len(uses)} times"
                      + (f" (by {self.uses_text(uses)})" if uses else "") + "; expected once, by an Add of the bias")
        j, side = uses[0]
        if self.nodes[j].op_type != "Add":
            self.fail(f"{label} is followed by {self.labels[j]}; expected an Add of the bias (MatMul + Add)")
        visited.add(j)
        bias = self.initializer_input(j, 1 - side, "bias")
        self.layers.append(_Layer(f"{label} + {self.labels[j]}", weight, bias, transposed=not pos, gemm=False, mid=t,
                                  weight_first=bool(pos)))
        return self.nodes[j].output[0]

    # -- shapes and types from the initializers' dims -------------------------------------------------------

    def dims(self, name: str) -> list[int]:
        dims = list(self.inits[name].dims)
        if any(d < 0 for d in dims):
            self.fail(f"the initializer {_q(name)} has negative dims {_shape_text(dims)}")
        return dims

    def check_weights(self, version: int) -> tuple[int, list[int]]:
        """Element type and shapes of the layers' initializers; returns (type, widths m, n_1, …, n_L, k)."""
        names = [name for layer in self.layers for name in (layer.weight, layer.bias)]
        types = [self.inits[name].data_type for name in names]
        for name, dt in zip(names, types, strict=True):
            if dt not in _WEIGHT_TYPES:
                self.fail(f"the initializer {_q(name)} has element type {_TYPE_NAMES.get(dt, dt)}; certsym reads "
                          "FLOAT, FLOAT16, BFLOAT16 or DOUBLE weights")
        if len(set(types)) != 1:
            j = next(j for j, dt in enumerate(types) if dt != types[0])
            self.fail(f"the initializers have element types {_WEIGHT_TYPES[types[0]]} ({_q(names[0])}) and "
                      f"{_WEIGHT_TYPES[types[j]]} ({_q(names[j])}); certsym reads one element type for all weights")
        dtype = types[0]
        if dtype == _BFLOAT16 and version < 13:
            self.fail(f"has BFLOAT16 weights under opset {version}; the operators accept BFLOAT16 from opset 13")
        if self.allowzero_written and version < 14:
            self.fail(f"writes Reshape's allowzero under opset {version}; it exists from opset 14")
        widths: list[int] = []
        for ell, layer in enumerate(self.layers, 1):
            w, b = self.dims(layer.weight), self.dims(layer.bias)
            if len(w) != 2:
                self.fail(f"layer {ell}'s weight {_q(layer.weight)} has shape {_shape_text(w)}; expected a matrix")
            rows, cols = (w[1], w[0]) if layer.transposed else (w[0], w[1])
            if b != [rows]:
                self.fail(f"layer {ell}'s bias {_q(layer.bias)} has shape {_shape_text(b)}; expected ({rows},) for "
                          f"the weight {_q(layer.weight)} of shape {_shape_text(w)} in {layer.label}")
            if widths and cols != widths[-1]:
                self.fail(f"layer {ell} {layer.label} reads {cols} values, but layer {ell - 1} "
                          f"{self.layers[ell - 2].label} gives {widths[-1]}")
            widths += [cols, rows] if not widths else [rows]
        return dtype, widths

    def declared(self, info: Any, what: str, dtype: int, source: str = "the weights are") -> _Shape:
        """The declared shape of a value, after checking that its declared type is a tensor of ``dtype``."""
        kind = info.type.WhichOneof("value")
        if kind != "tensor_type":
            self.fail(f"{what} {_q(info.name)} is declared as {kind or 'nothing'}; expected a tensor of "
                      f"{_TYPE_NAMES[dtype]}")
        tensor = info.type.tensor_type
        if tensor.elem_type != dtype:
            self.fail(f"{what} {_q(info.name)} is declared {_TYPE_NAMES.get(tensor.elem_type, tensor.elem_type)}, "
                      f"but {source} {_TYPE_NAMES[dtype]}")
        if not tensor.HasField("shape"):
            return None
        dims: list[int | None] = []
        for d in tensor.shape.dim:
            if d.WhichOneof("value") == "dim_value":
                if d.dim_value < 0:
                    self.fail(f"{what} {_q(info.name)} has the negative dimension {d.dim_value}")
                dims.append(d.dim_value)
            else:
                dims.append(None)
        return dims

    def agree(self, declared: _Shape, inferred: _Shape, what: str, name: str) -> None:
        if declared is None or inferred is None:
            return
        bad = len(declared) != len(inferred) or any(
            a is not None and b is not None and a != b for a, b in zip(declared, inferred, strict=True))
        if bad:
            self.fail(f"{what} {_q(name)} is declared with shape {_declared_text(declared)}, but the chain gives "
                      f"{_declared_text(inferred)}")

    def check_declarations(self, dtype: int, widths: list[int], targets: dict[str, int]) -> None:
        """Declared types and shapes of x, y, intermediate values and initializer inputs agree with the chain."""
        for name, info in self.init_inputs.items():
            tensor = self.inits[name]
            if tensor.data_type in _WEIGHT_TYPES or tensor.data_type in (_INT64, *_QUANTIZED):
                declared = self.declared(info, "the graph input", tensor.data_type, "the initializer is")
                self.agree(declared, self.dims(name), "the graph input", name)
        value_info = {info.name: info for info in self.graph.value_info}
        m = widths[0]
        shape = self.declared(self.x_info, "the graph input", dtype)
        origin = "" if shape is None else f" (the graph input {_q(self.x)} is declared {_declared_text(shape)})"
        for step in self.steps:
            label = step.label
            if step.kind == "flatten":
                if shape is not None:
                    if not shape:
                        self.fail(f"{label} flattens a scalar{origin}; axis 1 needs rank 1 or more")
                    rest = shape[1:]
                    shape = [shape[0], math.prod(rest) if None not in rest else None]  # type: ignore[arg-type]
            elif step.kind == "reshape":
                first = targets[step.arg]
                if first == -1:
                    if shape is not None and None not in shape:
                        total = math.prod(shape)  # type: ignore[arg-type]
                        if total % m:
                            self.fail(f"{label} reshapes {total} values into rows of {m}{origin}")
                        shape = [total // m, m]
                    else:
                        shape = [None, m]
                else:
                    if shape is not None:
                        if not shape:
                            self.fail(f"{label} copies dimension 0 of a scalar{origin}")
                        rest = shape[1:]
                        # the rows hold prod(rest) values each; only an empty batch (dimension 0 known to be 0)
                        # fits any row width, so known trailing dimensions that do not make m refuse the file
                        if None not in rest and math.prod(rest) != m and shape[0] != 0:  # type: ignore[arg-type]
                            self.fail(f"{label} reshapes shape {_declared_text(shape)} into ({shape[0]}, {m}){origin}")
                        shape = [shape[0], m]
                    else:
                        shape = [None, m]
            elif step.kind == "linear":
                layer = self.layers[step.arg]
                width, out = widths[step.arg], widths[step.arg + 1]
                gemm = layer.gemm
                if layer.weight_first and (shape is None or len(shape) != 1):
                    # W (out, in) times a column [in, 1] is (out, 1), to which Add broadcasts a bias (out,) as an
                    # (out, out) matrix: only a value known to be 1-D makes MatMul(W, h) the layer W h + b
                    self.fail(f"{layer.label} multiplies the weight by the value (MatMul(W, x)); certsym reads that "
                              "only of a value declared 1-D" + (f"{origin}" if shape is not None else
                                                                f" (the graph input {_q(self.x)} has no declared "
                                                                "shape)"))
                if shape is not None:
                    if (gemm and len(shape) != 2) or not shape:
                        self.fail(f"{layer.label} reads a value of rank {len(shape)}{origin}; expected "
                                  + ("rank 2" if gemm else "rank 1 or more"))
                    if shape[-1] is not None and shape[-1] != width:
                        self.fail(f"{layer.label} reads rows of {shape[-1]} values{origin}; its weight takes {width}")
                    shape = shape[:-1] + [out]
                if layer.mid in value_info:  # the MatMul's output has the shape of the Add's
                    self.agree(self.declared(value_info[layer.mid], "the value", dtype), shape, "the value", layer.mid)
            elif step.kind == "normalize":
                op, constant = step.arg
                dims = self.dims(constant)
                if dims and (shape is None or len(dims) > len(shape)):
                    self.fail(f"{label} takes a constant {_q(constant)} of shape {_shape_text(dims)} against a value "
                              f"{'of undeclared rank' if shape is None else 'of rank ' + str(len(shape))}{origin}; "
                              "broadcasting would raise the value's rank (a constant of rank 0 fits any value)")
                if math.prod(dims) != 1 and (shape is None or math.prod(dims) != m or
                                             _lead_stripped(dims) != _lead_stripped(shape)):
                    self.fail(f"{label} takes a constant {_q(constant)} of shape {_shape_text(dims)} against a value "
                              f"declared {'of unknown shape' if shape is None else _declared_text(shape)}{origin}; "
                              f"certsym reads a scalar, or one value per input coordinate ({m}) in the value's own "
                              "shape (leading 1s aside), which broadcasting leaves unchanged")
            elif step.kind == "head" and step.arg not in (-1, None if shape is None else len(shape) - 1):
                self.fail(f"{label} normalizes axis {step.arg}" + (f" of a value of rank {len(shape)}" if shape else
                                                                     " of a value of unknown rank") +
                          "; certsym reads a head over the last axis, the logits")
            if step.out in value_info and step.out != self.y:
                self.agree(self.declared(value_info[step.out], "the value", dtype), shape, "the value", step.out)
        self.agree(self.declared(self.y_info, "the graph output", dtype), shape, "the graph output", self.y)

    # -- data -----------------------------------------------------------------------------------------------

    def tensor(self, name: str) -> np.ndarray:
        """The initializer's values, with its dims, in the file's element type (BFLOAT16 as exact float32); a
        DequantizeLinear's output as the values it outputs (``dequantize``)."""
        if name in self.dequantized:
            return self.dequantize(name)
        t = self.inits[name]
        dt = t.data_type
        dims = self.dims(name)
        count = math.prod(dims)
        itemsize = int(_RAW_DTYPE[dt][-1])
        nbytes = count * itemsize
        if t.HasField("segment"):
            self.fail(f"the initializer {_q(name)} is a segment of a tensor; certsym reads whole tensors")
        present = [f for f in _DATA_FIELDS if len(getattr(t, f))]
        has_raw = t.HasField("raw_data")
        if t.data_location == _EXTERNAL:
            if has_raw or present:
                self.fail(f"the initializer {_q(name)} has external data and also "
                          f"{'raw_data' if has_raw else present[0]}; certsym reads exactly one source")
            raw: Any = self.external_bytes(name, t, nbytes)
        else:
            if len(t.external_data):
                self.fail(f"the initializer {_q(name)} has external_data entries but data_location is not EXTERNAL")
            typed = _TYPED_FIELD[dt]
            others = [f for f in present if f != typed]
            if others:
                self.fail(f"the initializer {_q(name)} ({_TYPE_NAMES[dt]}) has data in {others[0]}; certsym reads "
                          f"raw_data or {typed}")
            if has_raw and present:
                self.fail(f"the initializer {_q(name)} has both raw_data and {typed}; certsym reads exactly one")
            if has_raw:
                raw = t.raw_data
                if len(raw) != nbytes:
                    self.fail(f"the initializer {_q(name)} has {len(raw)} bytes of raw_data; its dims "
                              f"{_shape_text(dims)} need {nbytes}")
            else:
                values = getattr(t, typed)
                if len(values) != count:
                    self.fail(f"the initializer {_q(name)} has {len(values)} entries in {typed}; its dims "
                              f"{_shape_text(dims)} need {count}")
                return self.typed(name, dt, values, count).reshape(dims)
        arr = np.frombuffer(raw, dtype=_RAW_DTYPE[dt], count=count)
        if dt == _BFLOAT16:
            return (arr.astype(np.uint32) << 16).view(np.float32).reshape(dims)
        return arr.astype(arr.dtype.newbyteorder("="), copy=False).reshape(dims)

    def dequantize(self, name: str) -> np.ndarray:
        """A DequantizeLinear's output: s·(q − z), exact (``certsym.io.quantized``), rounded to the scale's type
        (FLOAT or FLOAT16) as the operator outputs it: one correctly rounded product, since q − z is exact in that
        type. Cost O(entries)."""
        label, x, scale, zero, axis = self.dequantized[name]
        q, s = self.tensor(x), self.tensor(scale)
        z = self.tensor(zero) if zero is not None else np.zeros(s.shape, dtype=q.dtype)
        kind = _QUANTIZED[self.inits[x].data_type]
        try:  # the checks: a positive finite scale, a zero point in range (the exact values themselves unused)
            dequantize(q, s.reshape(()) if axis is None else s, z.reshape(()) if axis is None else z, axis, kind,
                       label)
        except InputError as exc:
            self.fail(str(exc))
        ftype = _DQ_SCALES[self.inits[scale].data_type]
        shape = [1] * q.ndim
        if axis is not None:
            shape[axis] = -1
        with np.errstate(over="ignore"):
            out = (q.astype(np.int64) - z.astype(np.int64).reshape(shape if axis is not None else ())).astype(ftype) \
                * s.astype(ftype).reshape(shape if axis is not None else ())
        if not np.isfinite(out).all():
            self.fail(f"{label} outputs an infinite value (s·(q − z) beyond {np.dtype(ftype).name})")
        self.quantized[name] = f"{kind}, {'per-tensor' if axis is None else f'per-axis (axis {axis})'} scale, " \
            f"the operator's {np.dtype(ftype).name} output"
        self.uses.extend(n for n in (x, scale, zero) if n is not None)
        return out

    def typed(self, name: str, dt: int, values: Any, count: int) -> np.ndarray:
        if dt in _QUANTIZED:
            ints = np.fromiter(values, dtype=np.int64, count=count)
            lo, hi = (-128, 127) if dt == _INT8 else (0, 255)
            if count and (ints.min() < lo or ints.max() > hi):
                self.fail(f"the initializer {_q(name)} holds a value outside {lo}..{hi} in int32_data")
            return ints.astype(np.int8 if dt == _INT8 else np.uint8)
        if dt == _FLOAT:
            return np.fromiter(values, dtype=np.float32, count=count)
        if dt == _DOUBLE:
            return np.fromiter(values, dtype=np.float64, count=count)
        if dt == _INT64:
            return np.fromiter(values, dtype=np.int64, count=count)
        bits = np.fromiter(values, dtype=np.int64, count=count)
        if count and (bits.min() < 0 or bits.max() > 0xFFFF):
            bad = int(bits[(bits < 0) | (bits > 0xFFFF)][0])
            self.fail(f"the initializer {_q(name)} holds {bad} in int32_data; 16-bit patterns are 0..65535")
        if dt == _FLOAT16:
            return bits.astype(np.uint16).view(np.float16)
        return (bits.astype(np.uint32) << 16).view(np.float32)

    def external_bytes(self, name: str, t: Any, nbytes: int) -> memoryview:
        entries: dict[str, str] = {}
        for entry in t.external_data:
            if entry.key not in ("location", "offset", "length"):
                self.fail(f"the initializer {_q(name)} has the external-data key {_q(entry.key)}; certsym reads "
                          "location, offset and length only")
            if entry.key in entries:
                self.fail(f"the initializer {_q(name)} has the external-data key {entry.key} twice")
            entries[entry.key] = entry.value
        if "location" not in entries:
            self.fail(f"the initializer {_q(name)} has external data without a location")
        location = entries["location"]
        data = self.external_file(name, location)
        offset = self.decimal(name, "offset", entries.get("offset", "0"))
        if offset > len(data):
            self.fail(f"the initializer {_q(name)} starts at offset {offset} of {_q(location)}, which has "
                      f"{len(data)} bytes")
        length = self.decimal(name, "length", entries["length"]) if "length" in entries else len(data) - offset
        if offset + length > len(data):
            self.fail(f"the initializer {_q(name)} reads bytes {offset}..{offset + length} of {_q(location)}, which "
                      f"has {len(data)} bytes")
        if length != nbytes:
            self.fail(f"the initializer {_q(name)} has {length} bytes of external data"
                      + ("" if "length" in entries else " (to the end of the file, no length given)")
                      + f"; its dims {_shape_text(list(t.dims))} need {nbytes}")
        return memoryview(data)[offset:offset + length]

    def decimal(self, name: str, key: str, text: str) -> int:
        if not _DECIMAL.fullmatch(text):
            self.fail(f"the initializer {_q(name)} has external-data {key} {_q(text)}; expected a decimal number "
                      "without sign or leading zeros")
        return int(text)

    def external_file(self, name: str, location: str) -> bytes:
        if location in self.files:
            return self.files[location]
        parts = location.split("/")
        if "_MEM_ADDR_" in location or location.startswith("*/_ORT"):  # onnxruntime's tags for data in memory
            self.fail(f"the initializer {_q(name)} has the external location {_q(location)}, which onnxruntime "
                      "reserves for data in memory; certsym refuses it")
        if any(part in ("", ".", "..") or not _LOCATION_PART.fullmatch(part) for part in parts):
            self.fail(f"the initializer {_q(name)} has the external location {_q(location)}; certsym reads plain "
                      "relative paths inside the model's folder: '/'-separated names, none empty, '.' or '..', "
                      "without '\\' or ':'")
        folder = self.path.parent
        file = folder / location
        try:
            inside = file.resolve().is_relative_to(folder.resolve())
        except (OSError, RuntimeError):
            inside = False
        if not inside:
            self.fail(f"the external location {_q(location)} of {_q(name)} leads outside the model's folder")
        if not file.is_file():
            self.fail(f"the external data file {_q(location)} of {_q(name)} is missing (or not a regular file)")
        if any((folder / "/".join(parts[:i + 1])).is_symlink() for i in range(len(parts))):
            self.fail(f"the external data file {_q(location)} of {_q(name)} is reached through a symbolic link, "
                      "which onnx refuses")
        if file.stat().st_nlink > 1:
            self.fail(f"the external data file {_q(location)} of {_q(name)} has more than one hard link, which onnx "
                      "refuses")
        try:
            data = file.read_bytes()
        except OSError as exc:
            self.fail(f"cannot read the external data file {_q(location)} ({type(exc).__name__})")
        self.files[location] = data
        self.external.append((location, hashlib.sha256(data).hexdigest()))
        return data

    # -- all together ---------------------------------------------------------------------------------------

    def read(self) -> Chain:
        model = self.load()
        version = self.check_model(model)
        self.index(model.graph)
        self.walk()
        dtype, widths = self.check_weights(version)
        m = widths[0]
        targets = dict.fromkeys(step.arg for step in self.steps if step.kind == "reshape")
        for target in targets:
            t = self.inits[target]
            if t.data_type != _INT64 or self.dims(target) != [2]:
                self.fail(f"the Reshape target {_q(target)} is {_TYPE_NAMES.get(t.data_type, t.data_type)} of shape "
                          f"{_shape_text(list(t.dims))}; expected INT64 [-1, {m}] or [0, {m}]")
        for label, to in self.casts:
            if to != dtype:
                self.fail(f"{label} casts to {_TYPE_NAMES.get(to, to)}; the value is {_WEIGHT_TYPES[dtype]}, and "
                          "certsym reads a Cast only to the value's own element type (an identity)")
        self.declared(self.x_info, "the graph input", dtype)  # types first, before reading any data
        self.declared(self.y_info, "the graph output", dtype)
        values = {name: self.tensor(name) for name in dict.fromkeys(self.uses)}  # in order of first use
        firsts: dict[str, int] = {}
        for target in targets:
            first, width = (int(v) for v in values[target])
            if first not in (-1, 0) or width != m:
                self.fail(f"the Reshape target {_q(target)} is [{first}, {width}]; expected [-1, {m}] or [0, {m}]")
            if first == -1 and m == 0:
                self.fail(f"the Reshape target {_q(target)} is [-1, 0], whose -1 is undefined")
            firsts[target] = first
        self.check_declarations(dtype, widths, firsts)
        layers, names = [], []
        for layer in self.layers:
            w = values[layer.weight]
            layers.append((w.T if layer.transposed else w, values[layer.bias]))
            names += [layer.weight, layer.bias]
        for name, arr in zip(names, (a for pair in layers for a in pair), strict=True):
            if not np.isfinite(arr).all():
                self.fail(f"the initializer {_q(name)} holds a NaN or infinite value; certsym refuses them")
        top = fmpq(*_LARGEST[dtype].as_integer_ratio())
        for layer, (W, b) in zip(self.layers, layers, strict=True):
            for factor, arr in ((layer.alpha, W), (layer.beta, b)):
                if factor != 1.0 and abs(fmpq(*factor.as_integer_ratio())) * \
                        fmpq(*float(np.abs(np.asarray(arr, dtype=np.float64)).max(initial=0)).as_integer_ratio()) > top:
                    self.fail(f"{layer.label}: alpha·B or beta·C leaves the finite values of {_WEIGHT_TYPES[dtype]} "
                              "(onnxruntime would compute infinities)")
        return Chain(layers, names, self.external, self.output_relu, self.head, *self.normalization(values, dtype, m),
                     scales=[(layer.alpha, layer.beta) for layer in self.layers],
                     quantized={n: self.quantized[n] for n in names if n in self.quantized})

    def normalization(self, values: dict, dtype: int, m: int) -> tuple[list, tuple | None]:
        """The normalization steps [(op, constant name)] and their composition, the input read as x ↦ s ⊙ x + t
        exactly (s, t of length m), or None when there is none."""
        steps = [step for step in self.steps if step.kind == "normalize"]
        if not steps:
            return [], None
        if len(steps) > MAX_NORMALIZE:
            self.fail(f"normalizes its input in {len(steps)} steps; certsym reads at most {MAX_NORMALIZE}")
        top = fmpq(*_LARGEST[dtype].as_integer_ratio())
        scale, shift = [fmpq(1)] * m, [fmpq(0)] * m
        for step in steps:
            op, name = step.arg
            if self.inits[name].data_type != dtype:
                self.fail(f"{step.label} takes the constant {_q(name)} of element type "
                          f"{_TYPE_NAMES.get(self.inits[name].data_type)}; the value is {_WEIGHT_TYPES[dtype]} "
                          "(ONNX requires one type)")
            array = values[name]
            if not np.isfinite(array).all():
                self.fail(f"the initializer {_q(name)} holds a NaN or infinite value; certsym refuses them")
            c = [fmpq(*float(v).as_integer_ratio()) for v in np.asarray(array, dtype=np.float64).ravel().tolist()]
            c = c * m if len(c) == 1 else c
            if op == "Div" and any(v == 0 for v in c):
                self.fail(f"{step.label} divides by 0")
            if op in ("Sub", "Add"):
                shift = [t - v if op == "Sub" else t + v for t, v in zip(shift, c, strict=True)]
            else:
                scale = [a * v if op == "Mul" else a / v for a, v in zip(scale, c, strict=True)]
                shift = [t * v if op == "Mul" else t / v for t, v in zip(shift, c, strict=True)]
            if any(abs(v) > top for v in (*scale, *shift)):
                self.fail(f"{step.label}: the normalization's composed scale or shift leaves the finite values of "
                          f"{_WEIGHT_TYPES[dtype]} (onnxruntime would compute infinities)")
        return [(step.arg[0], step.arg[1]) for step in steps], (scale, shift)


@dataclass
class Chain:
    """What an ONNX file computes: ``layers`` [(W_ℓ (out, in), b_ℓ)] in the file's element type (bfloat16 as
    exact float32; W may be a transposed, read-only view of the file's bytes), ``names`` the initializer names
    (weight and bias of each layer in turn), ``external`` [(location, sha256 hex)] for every external data file
    read (in order of first use, without repeats), ``output_relu``: whether a Relu follows the last layer, and
    ``head``: the Softmax or LogSoftmax after it, if any (the layers are then its logits)."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    names: list[str]
    external: list[tuple[str, str]]
    output_relu: bool
    head: str | None = None  # "Softmax" or "LogSoftmax" after the last layer: ``layers`` are its logits
    normalization: list[tuple[str, str]] = field(default_factory=list)  # (op, constant) before the first layer
    affine: tuple[list[fmpq], list[fmpq]] | None = None  # their composition x ↦ s ⊙ x + t, exactly
    scales: list[tuple[float, float]] = field(default_factory=list)  # each layer's Gemm (alpha, beta); 1 otherwise
    quantized: dict[str, str] = field(default_factory=dict)  # DequantizeLinear outputs read as weights → scheme

    @property
    def scaled(self) -> list[list]:
        """The layers whose Gemm has alpha or beta other than 1: [ℓ (from 1), alpha, beta] as exact strings."""
        return [[ell, str(fmpq(*a.as_integer_ratio())), str(fmpq(*b.as_integer_ratio()))]
                for ell, (a, b) in enumerate(self.scales, 1) if (a, b) != (1.0, 1.0)]

    def exact_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``layers`` as the network computes them, exactly: a Gemm's alpha W and beta C, and the normalization
        folded into the first layer (W diag(s), b + W t), as object arrays of rationals where either applies (the
        other layers as they are). Cost O(n_ℓ n_{ℓ−1}) exact products for each such layer."""
        out = []
        for ell, (W, b) in enumerate(self.layers):
            alpha, beta = self.scales[ell] if self.scales else (1.0, 1.0)
            if (alpha, beta) == (1.0, 1.0) and (ell > 0 or self.affine is None):
                out.append((W, b))
                continue
            a, c = fmpq(*alpha.as_integer_ratio()), fmpq(*beta.as_integer_ratio())
            rows = [[a * fmpq(*float(w).as_integer_ratio()) for w in row]
                    for row in np.asarray(W, dtype=np.float64).tolist()]
            bias = [c * fmpq(*float(v).as_integer_ratio()) for v in np.asarray(b, dtype=np.float64).tolist()]
            if ell == 0 and self.affine is not None:
                scale, shift = self.affine
                bias = [sum((w * t for w, t in zip(row, shift, strict=True)), v) for row, v in zip(rows, bias,
                                                                                                   strict=True)]
                rows = [[w * s for w, s in zip(row, scale, strict=True)] for row in rows]
            W2 = np.empty((len(rows), W.shape[1]), dtype=object)
            for i, row in enumerate(rows):
                W2[i, :] = row
            b2 = np.empty(len(bias), dtype=object)
            b2[:] = bias
            out.append((W2, b2))
        return out


def read_onnx_chain(path: str | os.PathLike) -> Chain:
    """The chain of affine layers an ONNX file computes, with ReLU between them and optionally after the last
    (docs/FORMATS.md, "ONNX"). Every refusal is an ``InputError`` whose one-line message starts with the path.
    Cost: linear in the file sizes."""
    label = os.fspath(path)
    label = label if isinstance(label, str) else label.decode(errors="replace")
    reader = _Reader(Path(label), label)
    try:
        return reader.read()
    except InputError:
        raise
    except Exception as exc:  # anything onnx, protobuf, numpy or the file system raise: one line, with the path
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"{label}: cannot read the ONNX file ({type(exc).__name__}: {detail})") from None


def read_onnx(path: str | os.PathLike,
              chain: Chain | None = None) -> tuple[list[np.ndarray], list[str], list[tuple[str, str]]]:
    """A one-hidden-layer ONNX network without an output ReLU (``read_onnx_chain``, refusing any other):
    (arrays, names, external) with arrays = [W1 (n, m), b1 (n,), W2 (k, n), b2 (k,)], names the four initializer
    names and external as in ``Chain`` (``read_onnx_chain`` gives the head too; ``chain``, when the caller has it
    already, is not read again). Cost: linear in the file sizes."""
    chain = chain or read_onnx_chain(path)
    if len(chain.layers) != 2 or chain.output_relu:
        what = f"{len(chain.layers) - 1} hidden layers" + (" and an output ReLU" if chain.output_relu else "")
        raise InputError(f"{os.fspath(path)}: a network with {what}: this command decides one-hidden-layer networks "
                         "without an output ReLU (certsym equiv decides deep ones)")
    (W1, b1), (W2, b2) = chain.layers
    return [W1, b1, W2, b2], chain.names, chain.external

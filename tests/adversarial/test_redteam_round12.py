"""Red team round 12: quantized weights (docs/FORMATS.md, "Quantized weights"), read by the producer
(``certsym.io.quantized``, ``certsym.io.torchfile``, ``certsym.io.onnxfile``) and by the checker
(``certsym_check.readers.quantized``, ``readers.torchzip``, ``readers.onnx``).

Holes found, each closed and kept as a regression test (it asserts the behaviour the fix gives):
- torch dynamic quantized Linear (``_packed_params``) with a per-channel weight along axis 1: torch's Linear applies
  the scales per output row (axis 0) whatever the axis says, both readers apply them per column. The weights differ
  by factors of up to 8 in the test below, and ``certsym check --inputs`` prints VALID for an equivalence
  certificate between such a file and a float file holding the weights certsym read (torch computes a different
  function from the two files);
- the same packed Linear with per-channel scales that are not float32 values (≤ 44 significant bits): torch's
  Linear rounds them to float32 when it packs the weight (the reason FORMATS.md gives for refusing such per-tensor
  scales), both readers keep the double scale;
- packed Linears that torch's dynamic Linear cannot load or run (a quint8 weight, a quint8 ``_packed_params.dtype``,
  a float64 bias) are read by both readers;
- files that ``torch.load`` refuses are read by both readers: per-channel scales and zero points of which one is a
  list and the other a tensor (torch converts the lists only when both are lists), a quantized tensor (or a
  Parameter of one) with requires_grad True;
- the producer reads what the checker refuses: a quantized tensor as per-channel scales (torch refuses it too),
  ``_rebuild_parameter`` hooks that are not an OrderedDict (None, a plain dict, a list), a quantized tensor holding
  1.0 as a dynamic Linear's output scale;
- ONNX, the producer reads what the checker refuses: a DequantizeLinear whose scale is another DequantizeLinear's
  output (FORMATS.md: inputs all initializers); a DequantizeLinear output declared twice in value_info (the producer
  checks the first declaration, the checker and onnxruntime the last; onnxruntime refuses the file); an INT8/UINT8
  initializer listed as a graph input with another type or shape (onnxruntime refuses the file);
- ONNX, the checker reads what the producer and onnxruntime refuse: a DequantizeLinear output also listed as a graph
  input (onnxruntime: "Duplicate definition");
- ONNX, both readers read what onnxruntime refuses: DequantizeLinear attributes its opset does not define (axis
  before opset 13, block_size before opset 21);
- ONNX, ``certsym_check.readers.onnx.read_onnx`` raises ValueError / OverflowError (not Reject) on a NaN or infinite
  DequantizeLinear scale (``certsym.check`` reports it as a malformed certificate).
Everything else here is an attack both readers refuse, or read alike and as torch / onnxruntime compute, kept as
regressions.
"""

from __future__ import annotations

import io
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import certsym
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym.io.torchfile import load_torch
from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx
from certsym_check.readers.torchzip import read_torch

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise RuntimeError(f"precondition failed: {what}")


# ------------------------------------------------------------------------------------- a pickle writer for torch


class G:
    """A global (GLOBAL module name)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class Call:
    """func(*args) (REDUCE)."""

    def __init__(self, func: G, args: tuple):
        self.func, self.args = func, args


class Pid:
    """A persistent id (BINPERSID)."""

    def __init__(self, pid: tuple):
        self.pid = pid


class OD:
    """collections.OrderedDict() with its items."""

    def __init__(self, items=()):
        self.items = list(items)


def _emit(v) -> bytes:
    if v is None:
        return b"N"
    if v is True or v is False:
        return b"\x88" if v else b"\x89"
    if isinstance(v, int):
        if -2**31 <= v < 2**31:
            return b"J" + struct.pack("<i", v)
        n = (v.bit_length() + 8) // 8
        return b"\x8a" + bytes([n]) + v.to_bytes(n, "little", signed=True)
    if isinstance(v, float):
        return b"G" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return b"X" + struct.pack("<I", len(b)) + b
    if isinstance(v, tuple):
        return b"(" + b"".join(map(_emit, v)) + b"t"
    if isinstance(v, list):
        return b"]" + (b"(" + b"".join(map(_emit, v)) + b"e" if v else b"")
    if isinstance(v, dict):
        return b"}" + (b"(" + b"".join(_emit(k) + _emit(x) for k, x in v.items()) + b"u" if v else b"")
    if isinstance(v, OD):
        body = b"".join(_emit(k) + _emit(x) for k, x in v.items)
        return b"ccollections\nOrderedDict\n)R" + (b"(" + body + b"u" if v.items else b"")
    if isinstance(v, G):
        return b"c" + v.module.encode() + b"\n" + v.name.encode() + b"\n"
    if isinstance(v, Call):
        return _emit(v.func) + _emit(v.args) + b"R"
    if isinstance(v, Pid):
        return _emit(v.pid) + b"Q"
    raise TypeError(v)


def _archive(root, storages: dict[str, bytes], metadata: OD | None = None) -> bytes:
    """A torch.save zip archive of ``root`` (with an OrderedDict's BUILD ``{'_metadata': metadata}``)."""
    pkl = b"\x80\x02" + _emit(root) + (_emit({"_metadata": metadata}) + b"b" if metadata is not None else b"") + b"."
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, data in storages.items():
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")
    return out.getvalue()


QINT8, QUINT8 = G("torch", "QInt8Storage"), G("torch", "QUInt8Storage")
FLOATS, DOUBLES, LONGS = G("torch", "FloatStorage"), G("torch", "DoubleStorage"), G("torch", "LongStorage")
REBUILD_Q, REBUILD = G("torch._utils", "_rebuild_qtensor"), G("torch._utils", "_rebuild_tensor_v2")
PARAMETER = G("torch._utils", "_rebuild_parameter")
PER_TENSOR, PER_CHANNEL = G("torch", "per_tensor_affine"), G("torch", "per_channel_affine")
QI8, QU8 = G("torch", "qint8"), G("torch", "quint8")


def _contiguous(size: tuple) -> tuple:
    stride, acc = [], 1
    for d in reversed(size):
        stride.insert(0, acc)
        acc *= d
    return tuple(stride)


def _q(key: str, size: tuple, params, stype: G = QINT8, stride: tuple | None = None, offset: int = 0,
       numel: int | None = None, requires_grad: bool = False) -> Call:
    numel = int(np.prod(size)) if numel is None else numel
    return Call(REBUILD_Q, (Pid(("storage", stype, key, "cpu", numel)), offset, size,
                            _contiguous(size) if stride is None else stride, params, requires_grad, OD()))


def _t(stype: G, key: str, size: tuple) -> Call:
    return Call(REBUILD, (Pid(("storage", stype, key, "cpu", int(np.prod(size)))), 0, size, _contiguous(size), False,
                          OD()))


def _f32(values) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


# A dynamic quantized 4-3-2 Linear/ReLU/Linear state dict as torch writes it (with its _metadata versions), layer 0's
# packed entry replaced by the attack.
_METADATA = OD([("", {"version": 1}), ("0", {"version": 4}), ("0._packed_params", {"version": 3}),
                ("1", {"version": 1}), ("2", {"version": 4}), ("2._packed_params", {"version": 3})])
_BASE = {"one": _f32(1.0), "zero": np.array(0, np.int64).tobytes(), "b0": _f32([0.1, -0.2, 0.3]),
         "w2": np.array([[1, 2, 3], [4, 5, 6]], np.int8).tobytes(), "b2": _f32([0.5, -0.5])}


def _packed(weight: Call, storages: dict[str, bytes], bias=None, dtype: G = QI8, scale=None) -> bytes:
    bias = _t(FLOATS, "b0", (3,)) if bias is None else bias
    sd = OD([("0.scale", _t(FLOATS, "one", ()) if scale is None else scale), ("0.zero_point", _t(LONGS, "zero", ())),
             ("0._packed_params.dtype", dtype), ("0._packed_params._packed_params", (weight, bias)),
             ("2.scale", _t(FLOATS, "one", ())), ("2.zero_point", _t(LONGS, "zero", ())),
             ("2._packed_params.dtype", QI8),
             ("2._packed_params._packed_params", (_q("w2", (2, 3), (PER_TENSOR, 0.25, 0)), _t(FLOATS, "b2", (2,))))])
    return _archive(sd, {**_BASE, **storages}, _METADATA)


def _producer(data: bytes, tmp_path: Path) -> dict | None:
    """The producer's reading {name: float64 values in C order}, or None when it refuses the file."""
    path = tmp_path / "attack.pt"
    path.write_bytes(data)
    try:
        tree = load_torch(path)
    except InputError:
        return None
    return {k: np.asarray(v, dtype=np.float64).ravel().tolist() for k, v in tree.items()}


def _checker(data: bytes) -> dict | None:
    try:
        tree = read_torch(data)
    except Reject:
        return None
    return {k: [float(x) for x in v.flat()] for k, v in tree.items()}


def _torch_load(data: bytes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(io.BytesIO(data), weights_only=True)


def _dynamic_module():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear})


def _module_weight(data: bytes) -> list[float]:
    """Layer 0's weight as torch's dynamic quantized Linear holds it once the file is loaded into it (dequantized,
    float32), in C order."""
    module = _dynamic_module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module.load_state_dict(_torch_load(data))
        return module[0].weight().dequantize().numpy().astype(np.float64).ravel().tolist()


def _f32_list(values: list[float]) -> list[float]:
    return np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float64).tolist()


# ============================================================================ HOLES: torch dynamic quantized Linear


def test_packed_per_channel_weight_along_axis_1_is_read_as_torch_computes_it(tmp_path: Path) -> None:
    ints = np.arange(-6, 6, dtype=np.int8) * 7
    scales = [0.5, 0.25, 0.125, 1.0]
    data = _packed(_q("w", (3, 4), (PER_CHANNEL, scales, [0, 0, 0, 0], 1)), {"w": ints.tobytes()})
    torch_w = _module_weight(data)
    file_tensor = _torch_load(data)["0._packed_params._packed_params"][0].dequantize().numpy().ravel().tolist()
    _require(torch_w != file_tensor, "torch's Linear reads the weight otherwise than the tensor's own dequantize()")
    # B: a float file holding the tensor's values, scale·(q − z) along axis 1; torch computes another function
    a, b = tmp_path / "int8.pt", tmp_path / "float.pt"
    a.write_bytes(data)
    floats = {"0.weight": torch.tensor(ints.reshape(3, 4) * np.array(scales), dtype=torch.float32),
              "0.bias": torch.tensor([0.1, -0.2, 0.3]), "2.weight": torch.tensor([[1, 2, 3], [4, 5, 6]]) * 0.25,
              "2.bias": torch.tensor([0.5, -0.5])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(floats, b)
        module, plain = _dynamic_module(), torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                                                torch.nn.Linear(3, 2))
        module.load_state_dict(_torch_load(data))
        plain.load_state_dict(floats)
        x = torch.tensor([[0.0, 1.0, 0.0, 0.0]])  # quantized exactly by the dynamic Linear
        _require(not torch.allclose(module(x), plain(x), atol=0.5), "torch computes different functions")
    try:
        verdict = certsym.equivalent(a, b)
    except InputError:
        verdict = None
    if verdict is not None and verdict.equivalent:
        report = certsym.check(verdict.certificate(), inputs=[a, b])
        assert not report, "VALID equivalent for two files torch computes as different networks"
    ours, theirs = _producer(data, tmp_path), _checker(data)
    assert ours is None or _f32_list(ours["0.weight"]) == torch_w, "the producer reads other weights than torch runs"
    assert theirs is None or _f32_list(theirs["0.weight"]) == torch_w, "the checker reads other weights than torch"


def test_packed_per_channel_scales_wider_than_float32(tmp_path: Path) -> None:
    wide = 1 + 2**-24 + 2**-40  # 41 significant bits: accepted (≤ 44); rounds to float32 1 + 2^-23
    data = _packed(_q("w", (3, 4), (PER_CHANNEL, [wide, 0.25, 0.125], [0, 0, 0], 0)),
                   {"w": np.full(12, 3, np.int8).tobytes()})
    torch_w = _module_weight(data)
    _require(torch_w[0] == float(np.float32(3 * float(np.float32(wide)))) != float(np.float32(3 * wide)),
             "torch's Linear multiplies by the scale rounded to float32")
    ours, theirs = _producer(data, tmp_path), _checker(data)
    assert ours is None or _f32_list(ours["0.weight"]) == torch_w, "the producer reads other weights than torch runs"
    assert theirs is None or _f32_list(theirs["0.weight"]) == torch_w, "the checker reads other weights than torch"


def _unloadable(case: str) -> bytes:
    ints = {"w": np.arange(12, dtype=np.int8).tobytes()}
    if case == "quint8 weight":
        return _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1), stype=QUINT8), ints)
    if case == "quint8 dtype":
        return _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1)), ints, dtype=QU8)
    return _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1)), {**ints, "bd": np.array([0.1, 0.2, 0.3]).tobytes()},
                   bias=_t(DOUBLES, "bd", (3,)))


@pytest.mark.parametrize("case", ["quint8 weight", "quint8 dtype", "float64 bias"])
def test_packed_linear_that_torch_cannot_load_or_run(tmp_path: Path, case: str) -> None:
    data = _unloadable(case)
    module = _dynamic_module()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module.load_state_dict(_torch_load(data))
            module(torch.ones(1, 4))
        torch_runs = True
    except (RuntimeError, KeyError):
        torch_runs = False
    _require(not torch_runs, f"torch's dynamic Linear refuses the {case}")
    assert _producer(data, tmp_path) is None, "the producer reads a packed Linear torch cannot run"
    assert _checker(data) is None, "the checker reads a packed Linear torch cannot run"


def _torch_refuses(case: str) -> bytes:
    q = {"0": np.array([3, -5, 7, 127], np.int8).tobytes()}
    s, z = {"s": np.array([0.5, 0.25]).tobytes()}, {"z": np.array([0, 1], np.int64).tobytes()}
    if case == "list scales, tensor zero points":
        return _archive(OD([("w", _q("0", (2, 2), (PER_CHANNEL, [0.5, 0.25], _t(LONGS, "z", (2,)), 0)))]), {**q, **z})
    if case == "tensor scales, list zero points":
        return _archive(OD([("w", _q("0", (2, 2), (PER_CHANNEL, _t(DOUBLES, "s", (2,)), [0, 1], 0)))]), {**q, **s})
    if case == "requires_grad True":
        return _archive(OD([("w", _q("0", (2, 2), (PER_TENSOR, 0.5, 1), requires_grad=True))]), q)
    return _archive(OD([("w", Call(PARAMETER, (_q("0", (2, 2), (PER_TENSOR, 0.5, 1)), True, OD())))]), q)


@pytest.mark.parametrize("case", ["list scales, tensor zero points", "tensor scales, list zero points",
                                  "requires_grad True", "Parameter requiring grad"])
def test_quantized_tensors_that_torch_load_refuses(tmp_path: Path, case: str) -> None:
    data = _torch_refuses(case)
    try:
        _torch_load(data)
        loads = True
    except Exception:  # noqa: BLE001 - whatever torch raises
        loads = False
    _require(not loads, f"torch.load refuses {case}")
    assert _producer(data, tmp_path) is None, "the producer reads a file torch.load refuses"
    assert _checker(data) is None, "the checker reads a file torch.load refuses"


def test_quantized_tensor_as_per_channel_scales(tmp_path: Path) -> None:
    scales = _q("s", (2,), (PER_TENSOR, 0.25, 0))  # reads as [0.25, 0.5]
    data = _archive(OD([("w", _q("0", (2, 2), (PER_CHANNEL, scales, _t(LONGS, "z", (2,)), 0)))]),
                    {"0": np.array([3, -5, 7, 127], np.int8).tobytes(), "s": np.array([1, 2], np.int8).tobytes(),
                     "z": np.array([0, 1], np.int64).tobytes()})
    assert _producer(data, tmp_path) == _checker(data), "the readers disagree"


@pytest.mark.parametrize("hooks", [None, {}, []], ids=["None", "dict", "list"])
def test_rebuild_parameter_hooks_that_are_not_an_ordered_dict(tmp_path: Path, hooks) -> None:
    data = _archive(OD([("w", Call(PARAMETER, (_q("0", (2, 2), (PER_TENSOR, 0.5, 1)), False, hooks)))]),
                    {"0": np.array([3, -5, 7, 127], np.int8).tobytes()})
    assert _producer(data, tmp_path) == _checker(data), "the readers disagree"


def test_quantized_tensor_as_a_dynamic_linears_output_scale(tmp_path: Path) -> None:
    data = _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1)), {"w": np.arange(12, dtype=np.int8).tobytes(),
                                                             "sq": np.array([2], np.int8).tobytes()},
                   scale=_q("sq", (), (PER_TENSOR, 0.5, 0)))
    assert _producer(data, tmp_path) == _checker(data), "the readers disagree"


# ============================================================================ HOLES: ONNX DequantizeLinear


def _model(nodes, inits, opset: int = 17, inputs=None, value_info=(), ir: int = 8):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
                              inits, value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir
    return model


def _qdq(s1: float = 0.0123, z1: int | None = 3, opset: int = 17, attrs: dict | None = None, dq_out: str = "W1",
         scale_dtype=np.float32):
    """A 4-6-3 network, W1 = DequantizeLinear(W1q, s1[, z1]) (int8, per tensor); the other weights float."""
    rng = np.random.default_rng(7)
    ftype = scale_dtype
    arrays = {"W1q": rng.integers(-128, 128, (6, 4)).astype(np.int8), "s1": np.array(s1, dtype=ftype)}
    if z1 is not None:
        arrays["z1"] = np.array(z1, dtype=np.int8)
    arrays |= {"W2": rng.normal(size=(3, 6)).astype(ftype), "b1": rng.normal(size=6).astype(ftype),
               "b2": rng.normal(size=3).astype(ftype)}
    nodes = [helper.make_node("DequantizeLinear", ["W1q", "s1"] + (["z1"] if z1 is not None else []), [dq_out],
                              **(attrs or {})),
             helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    return nodes, [numpy_helper.from_array(a, n) for n, a in arrays.items()]


def _onnx_readers(model, tmp_path: Path):
    """(producer, checker): each the layers' weights and biases as float lists, or "refused"."""
    path = tmp_path / "attack.onnx"
    path.write_bytes(model.SerializeToString())
    try:
        chain = read_onnx_chain(path)
        ours = [np.asarray(a, dtype=np.float64).ravel().tolist() for layer in chain.layers for a in layer]
    except InputError:
        ours = "refused"
    try:
        theirs = [[float(x) for x in t.flat()] for t in read_onnx(path.read_bytes()).tensors]
    except Reject:
        theirs = "refused"
    return ours, theirs


def _ort_loads(model) -> bool:
    try:
        ort.InferenceSession(model.SerializeToString())
    except Exception:  # noqa: BLE001 - any refusal of onnxruntime's
        return False
    return True


def test_dequantize_linear_of_a_dequantized_scale(tmp_path: Path) -> None:
    nodes, inits = _qdq()
    inits = [i for i in inits if i.name != "s1"]
    inits += [numpy_helper.from_array(np.array(3, np.int8), "cq"), numpy_helper.from_array(np.float32(2**-7), "cs")]
    nodes = [helper.make_node("DequantizeLinear", ["cq", "cs"], ["c"]),
             helper.make_node("DequantizeLinear", ["W1q", "c", "z1"], ["W1"]),
             helper.make_node("Mul", ["x", "c"], ["xs"]),  # c used on the chain too: every initializer is used
             helper.make_node("Gemm", ["xs", "W1", "b1"], ["h"], transB=1), *nodes[2:]]
    model = _model(nodes, inits)
    _require(_ort_loads(model), "onnxruntime runs the graph")
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs, "the readers disagree"


def test_dequantize_linear_output_declared_twice(tmp_path: Path) -> None:
    nodes, inits = _qdq()
    model = _model(nodes, inits, value_info=[helper.make_tensor_value_info("W1", TensorProto.FLOAT, [6, 4]),
                                             helper.make_tensor_value_info("W1", TensorProto.FLOAT16, [6, 4])])
    _require(not _ort_loads(model), "onnxruntime refuses the file")
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs == "refused"


@pytest.mark.parametrize("declared", [("W1q", TensorProto.FLOAT, [6, 4]), ("W1q", TensorProto.INT8, [4, 6]),
                                      ("z1", TensorProto.UINT8, [])], ids=["W1q FLOAT", "W1q shape", "z1 UINT8"])
def test_quantized_initializer_declared_as_another_graph_input(tmp_path: Path, declared) -> None:
    nodes, inits = _qdq()
    model = _model(nodes, inits, inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4]),
                                         helper.make_tensor_value_info(*declared)])
    _require(not _ort_loads(model), "onnxruntime refuses the file")
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs == "refused"


def test_dequantize_linear_output_that_is_also_a_graph_input(tmp_path: Path) -> None:
    nodes, inits = _qdq()
    model = _model(nodes, inits, inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4]),
                                         helper.make_tensor_value_info("W1", TensorProto.FLOAT, [6, 4])])
    _require(not _ort_loads(model), "onnxruntime refuses the file")
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs == "refused"


@pytest.mark.parametrize("opset,attrs", [(10, {"axis": 1}), (12, {"axis": 0}), (13, {"block_size": 0}),
                                         (19, {"block_size": 0})])
def test_dequantize_linear_attribute_before_its_opset(tmp_path: Path, opset: int, attrs: dict) -> None:
    nodes, inits = _qdq(opset=opset, attrs=attrs)
    model = _model(nodes, inits, opset=opset)
    _require(not _ort_loads(model), "onnxruntime refuses the file")
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs == "refused"


@pytest.mark.parametrize("scale,dtype,opset", [(float("nan"), np.float32, 17), (float("inf"), np.float32, 17)],
                         ids=["nan", "inf"])
def test_checker_refuses_a_nan_or_infinite_scale_with_reject(scale: float, dtype, opset: int) -> None:
    nodes, inits = _qdq(s1=scale, opset=opset, scale_dtype=dtype)
    data = _model(nodes, inits, opset=opset).SerializeToString()
    try:
        read_onnx(data)
    except Reject:
        return
    except Exception as exc:  # noqa: BLE001 - the hole: any other exception
        raise AssertionError(f"read_onnx raised {type(exc).__name__}, not Reject") from None
    raise AssertionError("read_onnx read a NaN or infinite scale")


# ============================================================================ regressions: ONNX


def _ort_dequantize(arrays: dict, ins: list[str], axis: int | None, opset: int, out_type: int) -> np.ndarray:
    graph = helper.make_graph([helper.make_node("DequantizeLinear", ins, ["o"], **({} if axis is None else
                                                                                    {"axis": axis}))],
                              "d", [], [helper.make_tensor_value_info("o", out_type, None)],
                              [numpy_helper.from_array(arrays[n], n) for n in ins])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return ort.InferenceSession(model.SerializeToString()).run(None, {})[0]


def test_onnx_dequantized_weights_are_onnxruntimes_values_bit_for_bit(tmp_path: Path) -> None:
    """A seeded sweep: int8/uint8, FLOAT and FLOAT16 scales (tiny, subnormal ones included), per tensor and per axis
    (negative axes too), zero point given or omitted; both readers read W1 as onnxruntime's DequantizeLinear outputs
    it, to the bit."""
    rng = np.random.default_rng(12)
    for trial in range(24):
        dtype = (np.int8, np.uint8)[trial % 2]
        half = trial % 4 >= 2
        ftype, opset = (np.float16, 19) if half else (np.float32, 17)
        q = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, (6, 4)).astype(dtype)
        axis = None if trial % 3 == 0 else int(rng.choice([0, 1, -1, -2]))
        shape = () if axis is None else (q.shape[axis],)
        exponent = rng.uniform(-22 if half else -140, 4)
        s = (2.0**exponent * rng.uniform(1, 2, size=shape)).astype(ftype)
        arrays = {"W1q": q, "s1": s}
        if trial % 5:
            arrays["z1"] = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, size=shape).astype(dtype)
        ins = list(arrays)
        rest = {"b1": rng.normal(size=6).astype(ftype), "W2": rng.normal(size=(3, 6)).astype(ftype),
                "b2": rng.normal(size=3).astype(ftype)}
        elem = TensorProto.FLOAT16 if half else TensorProto.FLOAT
        nodes = [helper.make_node("DequantizeLinear", ins, ["W1"], **({} if axis is None else {"axis": axis})),
                 helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, [None, 4])],
                                  [helper.make_tensor_value_info("y", elem, [None, 3])],
                                  [numpy_helper.from_array(a, n) for n, a in (arrays | rest).items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 9
        expected = _ort_dequantize(arrays, ins, axis, opset, elem).astype(np.float64).ravel().tolist()
        ours, theirs = _onnx_readers(model, tmp_path)
        if not np.all(np.isfinite(expected)) or 0.0 in np.asarray(s, dtype=np.float64):
            assert ours == theirs == "refused", trial
            continue
        assert ours != "refused" and ours[0] == theirs[0] == expected, trial


@pytest.mark.parametrize("case", ["scale 0", "scale negative", "product overflows float32", "int32_data out of range",
                                  "zero point of another type", "zero point of another shape", "opset 9",
                                  "per-axis at opset 12", "FLOAT16 scale at opset 18", "block_size 1",
                                  "QuantizeLinear in a custom domain", "DequantizeLinear in a custom domain",
                                  "output named as the graph input", "output named as an initializer",
                                  "empty zero point name", "a 2-D scale", "scale along a wrong axis"])
def test_onnx_attacks_both_readers_refuse(tmp_path: Path, case: str) -> None:
    opset, attrs, s1, z1, extra = 17, None, 0.0123, 3, None
    if case == "scale 0":
        s1 = 0.0
    elif case == "scale negative":
        s1 = -0.5
    elif case == "product overflows float32":
        s1 = 3e38
    elif case == "opset 9":
        opset = 9
    elif case == "block_size 1":
        opset, attrs = 21, {"block_size": 1}
    nodes, inits = _qdq(s1=s1, z1=z1, opset=opset, attrs=attrs)
    by = {t.name: t for t in inits}
    if case == "int32_data out of range":
        t = onnx.TensorProto(name="W1q", data_type=TensorProto.INT8, dims=[6, 4])
        t.int32_data.extend([200] + [1] * 23)
        by["W1q"] = t
    elif case == "zero point of another type":
        by["z1"] = numpy_helper.from_array(np.array(3, np.uint8), "z1")
    elif case == "zero point of another shape":
        by["z1"] = numpy_helper.from_array(np.array([3], np.int8), "z1")
    elif case == "per-axis at opset 12":
        opset, attrs = 12, None
        by["s1"] = numpy_helper.from_array(np.full(6, 0.5, np.float32), "s1")
        by["z1"] = numpy_helper.from_array(np.zeros(6, np.int8), "z1")
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["W1"])
    elif case == "FLOAT16 scale at opset 18":
        opset = 18
        by["s1"] = numpy_helper.from_array(np.array(0.5, np.float16), "s1")
    elif case == "QuantizeLinear in a custom domain":
        nodes.append(helper.make_node("QuantizeLinear", ["y", "s1", "z1"], ["yq"], domain="com.microsoft"))
    elif case == "DequantizeLinear in a custom domain":
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["W1"], domain="com.microsoft")
    elif case == "output named as the graph input":
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["x"])
        nodes[1] = helper.make_node("Gemm", ["x", "x", "b1"], ["h"], transB=1)
        extra = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])]
    elif case == "output named as an initializer":
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["b1"])
    elif case == "empty zero point name":
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", ""], ["W1"])
        del by["z1"]
    elif case == "a 2-D scale":
        by["s1"] = numpy_helper.from_array(np.full((6, 1), 0.5, np.float32), "s1")
        by["z1"] = numpy_helper.from_array(np.zeros((6, 1), np.int8), "z1")
    elif case == "scale along a wrong axis":
        by["s1"] = numpy_helper.from_array(np.full(6, 0.5, np.float32), "s1")
        by["z1"] = numpy_helper.from_array(np.zeros(6, np.int8), "z1")
        nodes[0] = helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["W1"], axis=1)
    model = _model(nodes, list(by.values()), opset=opset, inputs=extra)
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours == theirs == "refused"


def test_onnx_dequantized_output_used_twice_and_as_a_bias(tmp_path: Path) -> None:
    """One DequantizeLinear output as the weight of both layers, another (zero point = x itself) as a bias: both
    readers read them alike."""
    nodes, inits = _qdq()
    inits = [i for i in inits if i.name not in ("W2", "b2", "b1")]
    inits += [numpy_helper.from_array(np.array([5, -3, 7, 100, -128, 127], np.int8), "bq"),
              numpy_helper.from_array(np.array([0.5, 0.25, 1, 2, 3, 0.125], np.float32), "bs"),
              numpy_helper.from_array(np.ones(4, np.float32), "b2")]
    nodes[1:1] = [helper.make_node("DequantizeLinear", ["bq", "bs"], ["b1"], axis=0)]
    nodes[-1] = helper.make_node("Gemm", ["r", "W1", "b2"], ["y"])  # W1 (6, 4) again, untransposed: 6 → 4
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    ours, theirs = _onnx_readers(model, tmp_path)
    assert ours != "refused" and ours == theirs
    assert ours[1] == [2.5, -0.75, 7.0, 200.0, -384.0, 15.875]


# ============================================================================ regressions: torch


def _pt(params, stype: G = QINT8) -> bytes:
    return _archive(OD([("w", _q("0", (2, 2), params, stype=stype))]), {"0": np.array([3, -5, 7, 127], np.int8)
                                                                          .tobytes()})


_REFUSED_TORCH = {
    "bool zero point": lambda: _pt((PER_TENSOR, 0.5, True)),
    "int scale": lambda: _pt((PER_TENSOR, 1, 0)),
    "zero point out of range": lambda: _pt((PER_TENSOR, 0.5, 200)),
    "uint8 zero point -1": lambda: _pt((PER_TENSOR, 0.5, -1), QUINT8),
    "huge zero point": lambda: _pt((PER_TENSOR, 0.5, 2**70)),
    "scale 0": lambda: _pt((PER_TENSOR, 0.0, 0)),
    "scale -0.0": lambda: _pt((PER_TENSOR, -0.0, 0)),
    "scale negative": lambda: _pt((PER_TENSOR, -0.5, 0)),
    "scale inf": lambda: _pt((PER_TENSOR, float("inf"), 0)),
    "scale nan": lambda: _pt((PER_TENSOR, float("nan"), 0)),
    "scale beyond float32": lambda: _pt((PER_TENSOR, 1e39, 0)),
    "scale not a float32": lambda: _pt((PER_TENSOR, 0.1, 0)),
    "scale a double subnormal": lambda: _pt((PER_TENSOR, 1e-310, 0)),
    "per-tensor extra item": lambda: _pt((PER_TENSOR, 0.5, 1, 0)),
    "per-channel extra item": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 1], 0, 0)),
    "negative axis": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 1], -1)),
    "axis out of range": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 1], 2)),
    "bool axis": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 1], True)),
    "one scale for two channels": lambda: _pt((PER_CHANNEL, [0.5], [0], 0)),
    "scales as a tuple": lambda: _pt((PER_CHANNEL, (0.5, 0.25), (0, 1), 0)),
    "53-bit per-channel scale": lambda: _pt((PER_CHANNEL, [0.1, 0.25], [0, 1], 0)),
    "per-channel zero point out of range": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 300], 0)),
    "huge per-channel zero point": lambda: _pt((PER_CHANNEL, [0.5, 0.25], [0, 2**70], 0)),
    "float32 scales tensor": lambda: _archive(
        OD([("w", _q("0", (2, 2), (PER_CHANNEL, _t(FLOATS, "s", (2,)), _t(LONGS, "z", (2,)), 0)))]),
        {"0": bytes(4), "s": _f32([0.5, 0.25]), "z": np.array([0, 1], np.int64).tobytes()}),
    "scheme in a list": lambda: _pt([PER_TENSOR, 0.5, 1]),
    "per_channel_affine_float_qparams": lambda: _pt((G("torch", "per_channel_affine_float_qparams"), [0.5, 0.25],
                                                     [0.0, 1.0], 0)),
    "QInt8Storage read by _rebuild_tensor_v2": lambda: _archive(OD([("w", _t(QINT8, "0", (2, 2)))]), {"0": bytes(4)}),
    "_rebuild_qtensor on a CharStorage": lambda: _pt((PER_TENSOR, 0.5, 1), G("torch", "CharStorage")),
    "QInt32Storage": lambda: _pt((PER_TENSOR, 0.5, 1), G("torch", "QInt32Storage")),
    "qint8 outside _packed_params.dtype": lambda: _archive(OD([("w", _q("0", (2, 2), (PER_TENSOR, 0.5, 1))),
                                                               ("l", [QI8])]), {"0": bytes(4)}),
    "packed tuple of 3": lambda: _packed_variant("three"),
    "packed weight and 0.weight": lambda: _packed_variant("weight"),
    "packed weight and 0.bias (bias None)": lambda: _packed_variant("bias"),
    "packed without its dtype": lambda: _packed_variant("no dtype"),
    "packed float weight": lambda: _packed_variant("float weight"),
    "static output scale": lambda: _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1)),
                                           {"w": bytes(12), "s05": _f32(0.5)}, scale=_t(FLOATS, "s05", ())),
    "QuantStub beside the packed layers": lambda: _packed_variant("stub"),
}


def _packed_variant(case: str) -> bytes:
    w = _q("w", (3, 4), (PER_TENSOR, 0.5, 1))
    st = {**_BASE, "w": bytes(12), "f": _f32(np.zeros(12))}
    items = [("0._packed_params.dtype", QI8), ("0._packed_params._packed_params", (w, _t(FLOATS, "b0", (3,))))]
    if case == "three":
        items[1] = ("0._packed_params._packed_params", (w, _t(FLOATS, "b0", (3,)), None))
    elif case == "weight":
        items.append(("0.weight", _t(FLOATS, "f", (3, 4))))
    elif case == "bias":
        items = [items[0], ("0._packed_params._packed_params", (w, None)), ("0.bias", _t(FLOATS, "b0", (3,)))]
    elif case == "no dtype":
        items = items[1:]
    elif case == "float weight":
        items[1] = ("0._packed_params._packed_params", (_t(FLOATS, "f", (3, 4)), _t(FLOATS, "b0", (3,))))
    elif case == "stub":
        items += [("quant.scale", _t(FLOATS, "one", ())), ("quant.zero_point", _t(LONGS, "zero", ()))]
    return _archive(OD(items), st, _METADATA)


@pytest.mark.parametrize("case", list(_REFUSED_TORCH))
def test_torch_attacks_both_readers_refuse(tmp_path: Path, case: str) -> None:
    data = _REFUSED_TORCH[case]()
    assert _producer(data, tmp_path) is None
    assert _checker(data) is None


def _views() -> dict[str, tuple[Call, dict]]:
    ints = (np.arange(-6, 6, dtype=np.int8) * 7).tobytes()
    f32 = float(np.float32(0.0173))
    return {
        "contiguous": (_q("w", (3, 4), (PER_TENSOR, f32, 17)), {"w": ints}),
        "transposed view": (_q("w", (3, 4), (PER_TENSOR, 0.5, 1), stride=(1, 3)), {"w": ints}),
        "offset": (_q("w", (3, 4), (PER_TENSOR, 0.5, -128), offset=2, numel=14),
                   {"w": np.arange(14, dtype=np.int8).tobytes()}),
        "expanded (stride 0)": (_q("w", (3, 4), (PER_TENSOR, 0.5, 1), stride=(0, 1), numel=4),
                                {"w": np.array([1, 2, 3, 4], np.int8).tobytes()}),
        "per-channel, zero points": (_q("w", (3, 4), (PER_CHANNEL, _f32_list([0.01, 0.02, 0.3]), [5, -7, 127], 0)),
                                     {"w": ints}),
        "per-channel, transposed view": (_q("w", (3, 4), (PER_CHANNEL, [0.5, 0.25, 0.125], [1, 2, 3], 0),
                                            stride=(1, 3)), {"w": ints}),
        "subnormal scales": (_q("w", (3, 4), (PER_CHANNEL, _f32_list([1e-45, 1e-40, 1.0]), [0, 0, 0], 0)), {"w": ints}),
        "large scale": (_q("w", (3, 4), (PER_TENSOR, float(np.float32(1e36)), 0)), {"w": ints}),
    }


@pytest.mark.parametrize("case", list(_views()))
def test_packed_linears_read_as_torchs_dynamic_linear_holds_them(tmp_path: Path, case: str) -> None:
    """Strided, offset and expanded views, per-channel zero points along axis 0, subnormal scales: both readers
    read the weight torch's dynamic Linear holds once the file is loaded into it, and the tensor's own
    dequantize(), rounded to float32."""
    saved = _dynamic_module().state_dict()
    _require("0.scale" in saved and "0.zero_point" in saved, "a dynamic Linear saves its unused scale and zero point")
    weight, storages = _views()[case]
    data = _packed(weight, storages)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tensor = _torch_load(data)["0._packed_params._packed_params"][0].dequantize().numpy().ravel().tolist()
    torch_w = _module_weight(data)
    ours, theirs = _producer(data, tmp_path), _checker(data)
    assert ours is not None and theirs is not None
    assert ours["0.weight"] == theirs["0.weight"]
    assert _f32_list(ours["0.weight"]) == torch_w == tensor
    assert list(ours) == list(theirs) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_a_shared_packed_tuple_and_parameter_wrapped_scales(tmp_path: Path) -> None:
    """One memoized (weight, bias) tuple under two layers, and per-channel scales wrapped in _rebuild_parameter: both
    readers read the same tensors, as torch.load does."""
    ints = (np.arange(-6, 6, dtype=np.int8) * 7).tobytes()
    scales = Call(PARAMETER, (_t(DOUBLES, "s", (3,)), False, OD()))
    w = _q("w", (3, 4), (PER_CHANNEL, scales, _t(LONGS, "z", (3,)), 0))
    pair = (w, _t(FLOATS, "b0", (3,)))
    body = b"\x80\x02" + b"ccollections\nOrderedDict\n)R(" + _emit("0._packed_params.dtype") + _emit(QI8) + \
        _emit("0._packed_params._packed_params") + _emit(pair) + b"q\x07" + _emit("1._packed_params.dtype") + \
        _emit(QI8) + _emit("1._packed_params._packed_params") + b"h\x07u."  # BINPUT 7 … BINGET 7: one tuple
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", body)
        for key, value in {"w": ints, "s": np.array([0.5, 0.25, 0.125]).tobytes(),
                           "z": np.array([0, 1, 2], np.int64).tobytes(), "b0": _BASE["b0"]}.items():
            z.writestr(f"archive/data/{key}", value)
        z.writestr("archive/version", "3\n")
    data = out.getvalue()
    loaded = _torch_load(data)
    expected = loaded["1._packed_params._packed_params"][0].dequantize().numpy().astype(np.float64).ravel().tolist()
    ours, theirs = _producer(data, tmp_path), _checker(data)
    assert ours is not None and ours == theirs
    assert list(ours) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert ours["0.weight"] == ours["1.weight"] == expected


def test_the_clean_packed_file_reads_alike_in_both_readers(tmp_path: Path) -> None:
    """The file the attacks above start from: both readers read it, as torch's dynamic Linear holds it."""
    data = _packed(_q("w", (3, 4), (PER_TENSOR, 0.5, 1)), {"w": np.arange(12, dtype=np.int8).tobytes()})
    ours, theirs = _producer(data, tmp_path), _checker(data)
    assert ours is not None and ours == theirs and _f32_list(ours["0.weight"]) == _module_weight(data)
    assert ours["2.weight"] == [0.25, 0.5, 0.75, 1.0, 1.25, 1.5]

"""The checker's own ONNX reader (checker/certsym_check/readers/onnx.py), against onnx + onnxruntime.

Accepted graphs are evaluated by onnxruntime at random points and compared with W2·relu(W1 x + b1) + b2
computed exactly from the Tensors the reader returns; refused graphs must raise Reject and nothing else,
including every prefix and a few hundred byte mutations of a valid file.
"""

from __future__ import annotations

import random
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnx  # onnx, onnxruntime and torch are in the test extra: a missing install fails, it is not skipped
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx

M, N, K = 6, 5, 2
F32, F16, BF16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE
NAMES = ["W1", "b1", "W2", "b2"]
TOLERANCE = {F32: 1e-5, F64: 1e-12, F16: 2e-2, BF16: 1e-5}  # bfloat16 is run as the same values in float32


def _weights(seed: int = 0) -> list[np.ndarray]:
    """W1 (N, M), b1 (N,), W2 (K, N), b2 (K,) in float64."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in ((N, M), (N,), (K, N), (K,))]


def _rounded(array: np.ndarray, elem: int) -> np.ndarray:
    """The array rounded to elem's precision, as float64 (bfloat16: float32 with the low 16 bits cleared)."""
    if elem == BF16:
        bits = array.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32).astype(np.float64)
    return array.astype(helper.tensor_dtype_to_np_dtype(elem)).astype(np.float64)


def _tensor(name: str, array: np.ndarray, elem: int, raw: bool) -> TensorProto:
    """An initializer of element type elem with raw_data or the typed field."""
    values = _rounded(array, elem)
    if elem == BF16:
        bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        if raw:
            return helper.make_tensor(name, BF16, values.shape, bits.tobytes(), raw=True)
        return helper.make_tensor(name, BF16, values.shape, values.astype(np.float32).ravel().tolist())
    if raw:
        return numpy_helper.from_array(values.astype(helper.tensor_dtype_to_np_dtype(elem)), name)
    return helper.make_tensor(name, elem, values.shape, values.astype(helper.tensor_dtype_to_np_dtype(elem)).ravel())


def _model(nodes: list, inits: list, elem: int = F32, in_shape: tuple = (None, M), outputs: tuple = ("y",),
           opset: int = 17, inputs: tuple = ("x",)) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info(x, elem, list(in_shape)) for x in inputs],
                              [helper.make_tensor_value_info(y, elem, None) for y in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _gemm_nodes(trans_b: int = 1, first: str = "x") -> list:
    return [helper.make_node("Gemm", [first, "W1", "b1"], ["h"], transB=trans_b),
            helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=trans_b)]


def _gemm(weights: list | None = None, elem: int = F32, raw: bool = True, trans_b: int = 1, **attrs) -> bytes:
    """Gemm, Relu, Gemm; with trans_b = 0 the stored B are the transposed weights."""
    W1, b1, W2, b2 = weights if weights is not None else _weights()
    if not trans_b:
        W1, W2 = W1.T, W2.T
    inits = [_tensor(name, a, elem, raw) for name, a in zip(NAMES, (W1, b1, W2, b2), strict=True)]
    nodes = _gemm_nodes(trans_b)
    for key, value in attrs.items():  # replace or add attributes of the first Gemm
        kept = [a for a in nodes[0].attribute if a.name != key]
        nodes[0].ClearField("attribute")
        nodes[0].attribute.extend(kept + [helper.make_attribute(key, value)])
    return _model(nodes, inits, elem).SerializeToString()


def _matmul_nodes(swap: bool = False) -> list:
    def add(a: str, c: str, out: str):
        return helper.make_node("Add", [c, a] if swap else [a, c], [out])

    return [helper.make_node("MatMul", ["x", "W1"], ["h0"]), add("h0", "b1", "h"),
            helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["y0"]),
            add("y0", "b2", "y")]


def _matmul_inits(elem: int = F32, raw: bool = True) -> list:
    W1, b1, W2, b2 = _weights()
    return [_tensor(name, a, elem, raw) for name, a in zip(NAMES, (W1.T, b1, W2.T, b2), strict=True)]


def _exact(tensors: list, x: list[Fraction]) -> list[Fraction]:
    W1, b1, W2, b2 = tensors
    A, b, Mx, c = (t.exact() for t in tensors)
    (n, m), k = W1.shape, W2.shape[0]
    h = [max(Fraction(0), sum((A[i * m + j] * x[j] for j in range(m)), b[i])) for i in range(n)]
    return [sum((Mx[i * n + j] * h[j] for j in range(n)), c[i]) for i in range(k)]


def _scale(tensors: list, x: list[float]) -> float:
    """A bound on the magnitude of every term, for a relative tolerance."""
    W1, b1, W2, b2 = (np.abs(np.array(t.flat(), dtype=np.float64)) for t in tensors)
    W1, W2 = W1.reshape(tensors[0].shape), W2.reshape(tensors[2].shape)
    return float(np.max(W2 @ (W1 @ np.abs(x) + b1) + b2)) + 1.0


def _check(data: bytes, elem: int = F32, in_shape: tuple = (M,), reference: bytes | None = None,
           external=None, batch: bool = True) -> tuple[list, list, list]:
    """read_onnx(data) agrees with onnxruntime on `reference` (default: data itself) at random points."""
    tensors, names, locations, *_ = read_onnx(data, external)
    assert [t.shape for t in tensors] == [(N, M), (N,), (K, N), (K,)]
    run_elem = F32 if elem == BF16 else elem
    session = ort.InferenceSession(reference or data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    points = rng.standard_normal((8, *((1,) if batch else ()), *in_shape))
    points = points.astype(helper.tensor_dtype_to_np_dtype(run_elem))
    for point in points:  # one at a time: torch.onnx.export fixes the batch size to 1
        (out,) = session.run(None, {session.get_inputs()[0].name: point})
        out = out.reshape(K)
        x = [float(v) for v in point.ravel()]
        want = _exact(tensors, [Fraction(v) for v in x])
        scale = _scale(tensors, x)
        for w, g in zip(want, out.tolist(), strict=True):
            assert abs(float(w) - g) <= TOLERANCE[elem] * scale, (w, g)
    return tensors, names, locations


# ------------------------------------------------------------------------------------------------ accepted


def test_gemm_trans_b_1_torch_style() -> None:
    tensors, names, locations = _check(_gemm())
    assert names == NAMES and locations == []
    assert not tensors[0].fortran and tensors[0].code == "f4"
    W1 = _weights()[0].astype(np.float32)
    assert tensors[0].row(2) == W1[2].tolist()


def test_gemm_trans_b_0_is_a_fortran_view() -> None:
    tensors, names, _ = _check(_gemm(trans_b=0))
    assert tensors[0].fortran and tensors[2].fortran and tensors[0].shape == (N, M)
    W1 = _weights()[0].astype(np.float32)
    assert tensors[0].row(3) == W1[3].tolist() and tensors[0].at(1, 4) == float(W1[1, 4])
    assert tensors[0].flat() == W1.ravel().tolist()


@pytest.mark.parametrize("swap", [False, True])
def test_matmul_add_both_orders(swap: bool) -> None:
    tensors, names, _ = _check(_model(_matmul_nodes(swap), _matmul_inits()).SerializeToString())
    assert names == NAMES and tensors[0].fortran


@pytest.mark.parametrize("front", ["flatten", "reshape-1", "reshape0", "both"])
def test_flatten_and_reshape_in_front(front: str) -> None:
    nodes = _gemm_nodes(first="f")
    inits = [_tensor(name, a, F32, True) for name, a in zip(NAMES, _weights(), strict=True)]
    flatten = helper.make_node("Flatten", ["x"], ["f"], axis=1)
    if front == "flatten":
        pre = [flatten]
    else:
        target = -1 if front != "reshape0" else 0
        inits.append(numpy_helper.from_array(np.array([target, M], dtype=np.int64), "s"))
        pre = [helper.make_node("Reshape", ["x", "s"], ["f"])]
        if front == "both":
            pre = [helper.make_node("Flatten", ["x"], ["f0"]), helper.make_node("Reshape", ["f0", "s"], ["f"])]
    _, names, _ = _check(_model(pre + nodes, inits, in_shape=(None, 2, 3)).SerializeToString(), in_shape=(2, 3))
    assert names == NAMES


def test_identity_nodes_everywhere() -> None:
    ident = helper.make_node
    nodes = [ident("Identity", ["x"], ["x1"]), ident("Identity", ["x1"], ["x2"]),
             helper.make_node("MatMul", ["x2", "W1"], ["h0"]), helper.make_node("Add", ["b1", "h0"], ["h"]),
             ident("Identity", ["h"], ["h1"]), helper.make_node("Relu", ["h1"], ["r"]),
             ident("Identity", ["r"], ["r1"]),
             helper.make_node("Gemm", ["r1", "W2", "b2"], ["y0"], transB=0), ident("Identity", ["y0"], ["y"])]
    W1, b1, W2, b2 = _weights()
    inits = [_tensor(name, a, F32, True) for name, a in zip(NAMES, (W1.T, b1, W2.T, b2), strict=True)]
    assert _check(_model(nodes, inits).SerializeToString())[1] == NAMES


def test_rank_one_input_value_info_and_node_order() -> None:
    model = _model(_matmul_nodes()[::-1], _matmul_inits(), in_shape=(M,))  # nodes listed backwards
    model.graph.value_info.extend([helper.make_tensor_value_info("h", F32, ["batch", N]),
                                   helper.make_tensor_value_info("W1", F32, [M, N]),
                                   helper.make_tensor_value_info("unrelated", TensorProto.INT8, [])])
    model.graph.input.append(helper.make_tensor_value_info("b1", F32, [None]))  # an initializer as an input
    model.metadata_props.add().key = "author"
    _, names, _ = _check(model.SerializeToString(), batch=False)
    assert names == NAMES


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("elem", [F32, F16, BF16, F64])
def test_element_types_raw_and_typed(elem: int, raw: bool) -> None:
    data = _gemm(elem=elem, raw=raw)
    model = onnx.load_from_string(data)
    assert len(model.graph.initializer) == 4
    assert all(t.HasField("raw_data") == raw for t in model.graph.initializer)
    reference = None
    if elem == BF16:  # onnxruntime has no bfloat16 Gemm on CPU: run the same values in float32
        reference = _gemm([_rounded(a, BF16) for a in _weights()], elem=F32)
        # ... and check the decoded values against onnx's own reading
        for t, init in zip(read_onnx(data)[0], model.graph.initializer, strict=True):
            assert t.flat() == numpy_helper.to_array(init).astype(np.float64).ravel().tolist()
    tensors, _, _ = _check(data, elem, reference=reference)
    assert {t.code for t in tensors} == {{F32: "f4", F16: "f2", BF16: "bf16", F64: "f8"}[elem]}
    assert all(isinstance(v, float) for t in tensors for v in t.flat())


@pytest.mark.parametrize("one_file", [True, False])
def test_external_data(tmp_path: Path, one_file: bool) -> None:
    model = onnx.load_from_string(_gemm(trans_b=0))
    path = tmp_path / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=one_file,
                    location="weights.bin", size_threshold=0)
    data = path.read_bytes()
    calls: list[str] = []

    def external(location: str) -> bytes:
        calls.append(location)
        return (tmp_path / location).read_bytes()

    _, names, locations = _check(data, reference=_gemm(trans_b=0), external=external)
    assert locations == calls and len(set(calls)) == len(calls)
    assert locations == (["weights.bin"] if one_file else NAMES)
    with pytest.raises(Reject, match="external data"):
        read_onnx(data)


def test_torch_export_is_accepted() -> None:
    import io

    import torch  # the TorchScript exporter (dynamo=False) needs only onnx, which the test extra holds

    net = torch.nn.Sequential(torch.nn.Linear(M, N), torch.nn.ReLU(), torch.nn.Linear(N, K))
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(1, M),), buffer, dynamo=False)
    tensors, names, _ = _check(buffer.getvalue())
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert tensors[0].flat() == net[0].weight.detach().numpy().ravel().tolist()


# ------------------------------------------------------------------------------------------------ refused


def _refused(data: bytes | onnx.ModelProto, match: str | None = None, external=None) -> None:
    if not isinstance(data, bytes):
        data = data.SerializeToString()
    with pytest.raises(Reject, match=match):
        read_onnx(data, external)


def _inits(weights: list | None = None) -> list:
    return [_tensor(name, a, F32, True) for name, a in zip(NAMES, weights or _weights(), strict=True)]


@pytest.mark.parametrize("attrs", [{"alpha": float("inf")}, {"beta": float("nan")}, {"transA": 1}, {"transB": 2},
                                   {"foo": 1}])
def test_gemm_attributes_refused(attrs: dict) -> None:
    _refused(_gemm(**attrs), "Gemm")


def _nodes_refused(nodes: list, match: str | None = None, inits: list | None = None, **kw) -> None:
    _refused(_model(nodes, inits if inits is not None else _inits(), **kw), match)


def test_wrong_chains_refused() -> None:
    W1, b1, W2, b2 = _weights()
    g, relu = helper.make_node, helper.make_node
    # Gemm -> Gemm -> Relu and Relu -> Gemm -> Gemm
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), g("Gemm", ["h", "W2", "b2"], ["z"], transB=1),
                    relu("Relu", ["z"], ["y"])])
    _nodes_refused([relu("Relu", ["x"], ["z"]), g("Gemm", ["z", "W1", "b1"], ["h"], transB=1),
                    g("Gemm", ["h", "W2", "b2"], ["y"], transB=1)])
    # the second Gemm reads the pre-activation: the Relu output is unused
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), relu("Relu", ["h"], ["r"]),
                    g("Gemm", ["h", "W2", "b2"], ["y"], transB=1)], "used 2 times")
    # an extra node, unused
    _nodes_refused(_gemm_nodes() + [g("Identity", ["W1"], ["z"])], "not on the chain")
    # two outputs, or the pre-activation as a second output
    _nodes_refused(_gemm_nodes(), "one output", outputs=("y", "h"))
    # Sigmoid instead of Relu
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), g("Sigmoid", ["h"], ["r"]),
                    g("Gemm", ["r", "W2", "b2"], ["y"], transB=1)], "Sigmoid")
    # no Relu, two Relus, Identity between MatMul and Add, Add without MatMul, weights on the left
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), g("Gemm", ["h", "W2", "b2"], ["y"], transB=1)])
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), relu("Relu", ["h"], ["r"]),
                    relu("Relu", ["r"], ["r2"]), g("Gemm", ["r2", "W2", "b2"], ["y"], transB=1)])
    nodes = _matmul_nodes()
    nodes[0:1] = [g("MatMul", ["x", "W1"], ["h00"]), g("Identity", ["h00"], ["h0"])]
    _refused(_model(nodes, _matmul_inits()), "followed by Identity")
    _nodes_refused([g("Add", ["x", "b1"], ["h"])] + _gemm_nodes()[1:])
    nodes = _matmul_nodes()
    nodes[0] = g("MatMul", ["W1", "x"], ["h0"])
    _refused(_model(nodes, _matmul_inits()))
    # a Gemm without its bias, a bias shaped (1, n), a Flatten after the first layer
    _nodes_refused([g("Gemm", ["x", "W1"], ["h"], transB=1)] + _gemm_nodes()[1:], "inputs")
    row = numpy_helper.from_array(b1[None, :].astype(np.float32), "b1")
    _nodes_refused(_gemm_nodes(), "bias", inits=[_inits()[0], row] + _inits()[2:])
    _nodes_refused([g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), g("Flatten", ["h"], ["f"]),
                    relu("Relu", ["f"], ["r"]), g("Gemm", ["r", "W2", "b2"], ["y"], transB=1)], "Flatten")
    # an unused initializer, mismatched layers, a value defined twice, a graph input used twice
    _nodes_refused(_gemm_nodes(), "not used", inits=_inits() + [numpy_helper.from_array(b1, "spare")])
    _nodes_refused(_gemm_nodes(), "do not fit", inits=_inits([W1, b1, np.ones((K, N + 1)), b2]))
    _nodes_refused(_gemm_nodes()[:2] + [g("Gemm", ["r", "W2", "b2"], ["h"], transB=1)], "defined twice")
    _nodes_refused(_gemm_nodes(), "one input", inputs=("x", "x2"))


@pytest.mark.parametrize("front", ["flatten axis 2", "reshape [1, m]", "reshape [-1, m] float", "allowzero",
                                   "reshape after relu"])
def test_shape_nodes_refused(front: str) -> None:
    s = np.array([1, M] if front == "reshape [1, m]" else [-1, M], dtype=np.int64)
    inits = _inits() + [numpy_helper.from_array(s.astype(np.float32) if "float" in front else s, "s")]
    attrs = {"allowzero": 1} if front == "allowzero" else {}
    pre = [helper.make_node("Reshape", ["x", "s"], ["f"], **attrs)]
    if front == "flatten axis 2":
        pre, inits = [helper.make_node("Flatten", ["x"], ["f"], axis=2)], inits[:4]
    nodes = pre + _gemm_nodes(first="f")
    if front == "reshape after relu":
        nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r0"]),
                 helper.make_node("Reshape", ["r0", "s"], ["r"]), _gemm_nodes()[2]]
        inits[-1] = numpy_helper.from_array(np.array([-1, N], dtype=np.int64), "s")
    _nodes_refused(nodes, inits=inits)


def test_domains_and_opsets_refused() -> None:
    nodes = _gemm_nodes()
    nodes[1].domain = "com.microsoft"
    _nodes_refused(nodes, "domain")
    model = _model(_gemm_nodes(), _inits())
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    _refused(model, "opset")
    _refused(_model(_gemm_nodes(), _inits(), opset=6), "opset 6")
    model = _model(_gemm_nodes(), _inits())
    model.opset_import[0].domain = "ai.onnx"
    nodes = _gemm_nodes()
    nodes[1].domain = "ai.onnx"
    model.graph.ClearField("node")
    model.graph.node.extend(nodes)
    assert read_onnx(model.SerializeToString())[1] == NAMES  # the default domain's other spelling
    model.functions.add().name = "f"
    _refused(model, "functions")
    model = _model(_gemm_nodes(), _inits())
    model.graph.sparse_initializer.add()
    _refused(model, "sparse_initializer")
    model = _model(_gemm_nodes(), _inits())
    model.training_info.add()
    _refused(model, "training_info")


def test_declarations_refused() -> None:
    model = _model(_gemm_nodes(), _inits())
    model.graph.input[0].type.tensor_type.elem_type = F64  # x declared double, weights float
    _refused(model, "declared DOUBLE")
    model = _model(_gemm_nodes(), _inits())
    model.graph.output[0].ClearField("type")
    _refused(model, "declares no type")
    model = _model(_gemm_nodes(), _inits())
    model.graph.value_info.append(helper.make_tensor_value_info("r", F64, [None, N]))
    _refused(model, "declared DOUBLE")
    model = _model(_gemm_nodes(), _inits())
    model.graph.value_info.append(helper.make_tensor_sequence_value_info("r", F32, [None, N]))
    _refused(model, "sequence_type")
    model = _model(_gemm_nodes(), _inits())
    model.graph.input.append(helper.make_tensor_value_info("W1", F32, [N, M + 1]))
    _refused(model, "declared with another type or shape")
    _refused(_model(_gemm_nodes(), _inits(), in_shape=(None, M + 1)), "width")  # x does not fit W1
    _refused(_model(_gemm_nodes(), _inits(), in_shape=(M,)), "Gemm cannot take")  # Gemm needs a matrix
    _refused(_model(_matmul_nodes(), _matmul_inits(), in_shape=(2, 3, M + 1)), "MatMul cannot take")
    inits = _inits() + [numpy_helper.from_array(np.array([0, M], dtype=np.int64), "s")]
    nodes = [helper.make_node("Reshape", ["x", "s"], ["f"])] + _gemm_nodes(first="f")
    _refused(_model(nodes, inits, in_shape=(None, 2, 4)), "Reshape")
    model = _model(_gemm_nodes(), _inits())
    model.ir_version = 2
    _refused(model, "IR version")
    model.ClearField("ir_version")
    _refused(model, "IR version")


def test_initializer_data_refused() -> None:
    inits = _inits()
    inits[1].float_data.extend([1.0] * N)  # raw_data and float_data
    _nodes_refused(_gemm_nodes(), "twice", inits=inits)
    _nodes_refused(_gemm_nodes(), "named", inits=_inits() + [_inits()[1]])  # two initializers named b1
    inits = _inits()
    inits[1].raw_data = inits[1].raw_data[:-4]
    _nodes_refused(_gemm_nodes(), "raw_data", inits=inits)
    inits = _inits()
    inits[2].ClearField("raw_data")
    _nodes_refused(_gemm_nodes(), "no data", inits=inits)
    inits = _inits()
    inits[2].double_data.extend([0.0] * (N * K))
    inits[2].ClearField("raw_data")
    _nodes_refused(_gemm_nodes(), "double_data", inits=inits)
    inits = [_tensor(name, a, F16, False) for name, a in zip(NAMES, _weights(), strict=True)]
    inits[1].int32_data[0] = 1 << 20
    _nodes_refused(_gemm_nodes(), "16-bit", inits=inits, elem=F16)
    mixed = _inits()
    mixed[3] = _tensor("b2", _weights()[3], F64, True)
    _nodes_refused(_gemm_nodes(), "element type", inits=mixed)
    ints = [numpy_helper.from_array(a.astype(np.int32), n) for a, n in zip(_weights(), NAMES, strict=True)]
    _nodes_refused(_gemm_nodes(), "element type", inits=ints)
    inits = _inits()
    inits[0].segment.begin = 0
    _nodes_refused(_gemm_nodes(), "segment", inits=inits)
    inits = _inits()
    inits[0].dims[0] = -N
    _nodes_refused(_gemm_nodes(), "negative", inits=inits)


def test_attribute_details_refused() -> None:
    nodes = _gemm_nodes()
    nodes[0].attribute[0].ref_attr_name = "t"
    _nodes_refused(nodes, "ref_attr_name")
    nodes = _gemm_nodes()
    nodes[0].attribute.append(helper.make_attribute("transB", 1))  # transB twice
    _nodes_refused(nodes, "twice")
    nodes = _gemm_nodes()
    nodes[0].attribute[0].f = 1.0  # an INT attribute holding a float too
    _nodes_refused(nodes, "another type")
    nodes = _gemm_nodes()
    nodes[1].attribute.append(helper.make_attribute("alpha", 1.0))  # Relu has no attributes
    _nodes_refused(nodes, "Relu")
    nodes = _gemm_nodes()
    nodes[0].attribute.append(helper.make_attribute("alpha", [1.0]))  # FLOATS, not FLOAT
    _nodes_refused(nodes)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key, out = number << 3 | wire, bytearray()
    while key >= 0x80:
        out.append(key & 0x7F | 0x80)
        key >>= 7
    out.append(key)
    if wire == 2:
        size = len(payload)
        while size >= 0x80:
            out.append(size & 0x7F | 0x80)
            size >>= 7
        out.append(size)
    return bytes(out) + payload


def _varint(value: int, overlong: bool = False) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    if overlong:  # the same value with one more, empty, byte: protobuf accepts it
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


def _spliced(elem: int, b1: bytes) -> bytes:
    """A Gemm model whose initializer b1 is the given TensorProto bytes, written as they are."""
    model = _model(_gemm_nodes(), [_tensor(name, a, elem, True) for name, a in zip(NAMES, _weights(), strict=True)],
                   elem)
    del model.graph.initializer[1]
    graph = model.graph.SerializeToString() + _field(5, 2, b1)
    model.ClearField("graph")
    return model.SerializeToString() + _field(7, 2, graph)


def test_packed_unpacked_and_overlong_encodings() -> None:
    b1 = _rounded(_weights()[1], F16)
    bits = b1.astype(np.float16).view(np.uint16).tolist()
    head = _field(1, 0, _varint(N)) + _field(8, 2, b"b1")
    mixed = head + _field(2, 0, _varint(F16)) + _field(5, 2, b"".join(_varint(v, True) for v in bits[:2])) \
        + b"".join(_field(5, 0, _varint(v)) for v in bits[2:])  # a packed chunk of overlong varints, then unpacked
    b1_32 = _rounded(_weights()[1], F32)
    unpacked = head + _field(2, 0, _varint(F32)) + b"".join(_field(4, 5, np.float32(v).tobytes()) for v in b1_32)
    for elem, b1_bytes, want in ((F16, mixed, b1), (F32, unpacked, b1_32)):
        data = _spliced(elem, b1_bytes)
        protobuf = numpy_helper.to_array(onnx.load_from_string(data).graph.initializer[-1])
        assert read_onnx(data)[0][1].flat() == protobuf.astype(np.float64).tolist() == want.tolist()
    _refused(_spliced(F16, mixed + _field(5, 0, _varint(0))), "entries")  # one entry too many


def test_wire_format_refusals() -> None:
    data = _gemm()
    assert read_onnx(data + _field(2, 2, b"producer"))[1] == NAMES  # a skipped field
    _refused(data + _field(2, 2, b"a") + _field(2, 2, b"b"), "twice")  # a non-repeated field twice
    _refused(data + _field(7, 2, b""), "graph")  # a second graph: protobuf would merge it
    _refused(data + _field(99, 2, b""), "unknown field")
    _refused(data + _field(1, 2, b""), "wire type")  # ir_version length-delimited
    _refused(data + _field(2, 3, b""), "wire type")  # a group
    _refused(data + b"\x08" + b"\xff" * 10 + b"\x01", "varint")
    _refused(data + b"\x08" + b"\xff" * 9 + b"\x02", "64 bits")
    assert read_onnx(data + _field(2, 2, b"\xff\xfe"))[1] == NAMES  # a skipped string is not interpreted
    _refused(_field(7, 2, _field(1, 2, _field(4, 2, b"\xff\xfe"))), "UTF-8")  # but an op_type is
    _refused(b"\x00\x00", "field number")


def test_every_prefix_refused() -> None:
    data = _gemm(_weights(2)[:1] + [np.zeros(N)] + [np.ones((K, N)), np.zeros(K)])
    assert read_onnx(data)[1] == NAMES  # the whole file is accepted
    for size in range(len(data)):
        with pytest.raises(Reject):
            read_onnx(data[:size])


def test_random_mutations_never_crash() -> None:
    data = _gemm()
    rng = random.Random(7)
    accepted = 0
    for _ in range(400):
        mutant = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(mutant))
            choice = rng.random()
            if choice < 0.7:
                mutant[position] = rng.randrange(256)
            elif choice < 0.85:
                del mutant[position]
            else:
                mutant.insert(position, rng.randrange(256))
        try:
            tensors, names, locations, *_ = read_onnx(bytes(mutant))
        except Reject:
            continue
        accepted += 1
        n, m = tensors[0].shape
        assert tensors[1].shape == (n,) and tensors[2].shape[1] == n and tensors[3].shape == tensors[2].shape[:1]
        assert len(names) == 4 and locations == []
        for t in tensors:
            t.flat()
    assert 0 < accepted < 400  # the checks on the accepted mutants above did run


def _external_model(tmp_path: Path, **entries: str) -> tuple[bytes, object]:
    model = onnx.load_from_string(_gemm())
    (tmp_path / "w.bin").write_bytes(b"".join(t.raw_data for t in model.graph.initializer))
    offset = 0
    for t in model.graph.initializer:
        size = len(t.raw_data)
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        values = {"location": "w.bin", "offset": str(offset), "length": str(size)}
        if t.name == "W2":
            values = {**values, **entries}
        for key, value in values.items():
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        offset += size
    return model.SerializeToString(), lambda location: (tmp_path / location).read_bytes()


def test_external_data_refused(tmp_path: Path) -> None:
    data, external = _external_model(tmp_path)
    assert read_onnx(data, external)[2] == ["w.bin"]
    (tmp_path / "sub").mkdir()
    for location in ("../w.bin", "sub/../w.bin", "/w.bin", "C:\\w.bin", ""):
        data, external = _external_model(tmp_path / "sub", location=location)
        _refused(data, "location", external)
    data, external = _external_model(tmp_path, checksum="0" * 40)
    _refused(data, "checksum", external)
    data, external = _external_model(tmp_path, offset="1000000")
    _refused(data, "does not hold", external)
    data, external = _external_model(tmp_path, length="8")
    _refused(data, "does not hold", external)
    data, external = _external_model(tmp_path, offset="+4")
    _refused(data, "decimal", external)
    data, external = _external_model(tmp_path, location="missing.bin")
    _refused(data, "cannot read", external)
    model = onnx.load_from_string(data)
    model.graph.initializer[0].raw_data = b"\0" * (4 * N * M)  # external and raw_data
    _refused(model, "twice", external)


@pytest.mark.parametrize("hidden,output_relu", [((5, 4), False), ((4, 4, 3), True), ((3,), True)])
def test_deep_chains_agree_with_the_producer_and_onnxruntime(tmp_path: Path, hidden: tuple, output_relu: bool) -> None:
    """A torch export of Linear → ReLU → … → Linear (→ ReLU): the checker reads the same layers and final Relu as
    the producer, and their exact forward pass is onnxruntime's output up to float32 rounding."""
    from certsym.io.onnxfile import read_onnx_chain
    from tests.helpers import export_onnx, torch_chain

    widths = [3, *hidden, 2]
    path = export_onnx(torch_chain(widths, output_relu, 7), tmp_path / "deep.onnx", 3)
    chain = read_onnx(path.read_bytes())
    ours = read_onnx_chain(path)
    assert chain.output_relu is ours.output_relu is output_relu and chain.names == ours.names
    assert [t.shape for t in chain.tensors] == [a.shape for pair in ours.layers for a in pair]
    for t, a in zip(chain.tensors, (a for pair in ours.layers for a in pair), strict=True):
        assert t.exact() == [Fraction(float(v)) for v in np.asarray(a, np.float64).ravel()]
    x = [Fraction(int(v), 8) for v in np.random.default_rng(8).integers(-16, 16, 3)]
    h = x
    for ell in range(len(widths) - 1):
        W, b = chain.tensors[2 * ell].exact(), chain.tensors[2 * ell + 1].exact()
        rows, cols = chain.tensors[2 * ell].shape
        h = [sum((W[r * cols + c] * h[c] for c in range(cols)), b[r]) for r in range(rows)]
        if ell < len(widths) - 2 or output_relu:
            h = [max(v, Fraction(0)) for v in h]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": np.array([[float(v) for v in x]], np.float32)})[0][0]
    np.testing.assert_allclose(got, [float(v) for v in h], rtol=1e-5, atol=1e-5)

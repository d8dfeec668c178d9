"""The strict ONNX reader (certsym.io.onnxfile): accepted graphs agree with onnxruntime, and every other file is
refused with a one-line message that starts with the path and says what was found."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx  # onnx, onnxruntime and torch are in the test extra: a missing install fails, it is not skipped
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx, read_onnx_chain

ort.set_default_logger_severity(3)

NP = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64}
TOL = {TensorProto.FLOAT: 1e-4, TensorProto.FLOAT16: 3e-2, TensorProto.DOUBLE: 1e-12, TensorProto.BFLOAT16: 1e-4}
M, N, K = 3, 5, 2


def weights(seed: int = 0, m: int = M, n: int = N, k: int = K) -> list[np.ndarray]:
    """W1 (n, m), b1, W2 (k, n), b2 in float64, with values exact in every 16-bit format (8 significant bits)."""
    rng = np.random.default_rng(seed)
    return [np.round(rng.standard_normal(shape) * 64) / 64 for shape in ((n, m), (n,), (k, n), (k,))]


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """The bfloat16 patterns of float32 values that bfloat16 holds exactly."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    assert not (bits & 0xFFFF).any()
    return (bits >> 16).astype(np.uint16)


def tensor(a: np.ndarray, name: str, dtype: int = TensorProto.FLOAT, typed: bool = False) -> TensorProto:
    """An initializer: raw_data (default) or the typed field."""
    if dtype == TensorProto.BFLOAT16:
        bits = bf16_bits(a)
        t = helper.make_tensor(name, dtype, a.shape, bits.tobytes(), raw=True)
        if typed:
            t.ClearField("raw_data")
            t.int32_data.extend(int(v) for v in bits.ravel())
        return t
    arr = np.asarray(a, dtype=NP[dtype])
    if not typed:
        return numpy_helper.from_array(arr, name)
    t = TensorProto(name=name, data_type=dtype, dims=arr.shape)
    if dtype == TensorProto.FLOAT:
        t.float_data.extend(arr.ravel().tolist())
    elif dtype == TensorProto.DOUBLE:
        t.double_data.extend(arr.ravel().tolist())
    else:
        t.int32_data.extend(int(v) for v in arr.ravel().view(np.uint16))
    return t


def model(nodes: list, inits: list, dtype: int = TensorProto.FLOAT, x_shape: list | None = None,
          y_shape: list | None = None, outputs: list[str] | None = None, opset: int = 17,
          inputs: list[str] | None = None) -> onnx.ModelProto:
    x_shape = [None, M] if x_shape is None else x_shape
    y_shape = [None, K] if y_shape is None else y_shape
    ins = [helper.make_tensor_value_info(name, dtype, x_shape) for name in inputs or ["x"]]
    outs = [helper.make_tensor_value_info(name, dtype, y_shape if name == "y" else None) for name in outputs or ["y"]]
    graph = helper.make_graph(nodes, "mlp", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def gemm_nodes(trans1: int = 1, trans2: int = 1, **first: float | int) -> list:
    return [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], name="g1", transB=trans1, **first),
            helper.make_node("Relu", ["h"], ["r"], name="relu"),
            helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], name="g2", transB=trans2)]


def gemm_inits(ws: list[np.ndarray], dtype: int = TensorProto.FLOAT, trans1: int = 1, trans2: int = 1,
               typed: bool = False) -> list:
    W1, b1, W2, b2 = ws
    return [tensor(W1 if trans1 else W1.T, "W1", dtype, typed), tensor(b1, "b1", dtype, typed),
            tensor(W2 if trans2 else W2.T, "W2", dtype, typed), tensor(b2, "b2", dtype, typed)]


def save(tmp_path: Path, m: onnx.ModelProto, name: str = "m.onnx", **kwargs) -> Path:
    path = tmp_path / name
    onnx.save_model(m, str(path), **kwargs)
    return path


def reference(arrays: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """W2 relu(W1 x + b1) + b2 for each row of x, in float64."""
    W1, b1, W2, b2 = (np.asarray(a, dtype=np.float64) for a in arrays)
    return np.maximum(x @ W1.T + b1, 0) @ W2.T + b2


def run_ort(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def agrees_with_ort(path: Path, arrays: list[np.ndarray], x_shape: tuple[int, ...], dtype: int,
                    ort_path: Path | None = None, seed: int = 1) -> None:
    """onnxruntime's output at random points equals the network read from the file, up to rounding."""
    x = np.random.default_rng(seed).standard_normal(x_shape)
    x = np.round(x * 16) / 16  # exact in every format
    xin = x.astype(np.float32 if dtype == TensorProto.BFLOAT16 else NP[dtype])
    got = run_ort(ort_path or path, xin).astype(np.float64).reshape(-1, K)
    want = reference(arrays, x.reshape(-1, M))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * (1 + np.abs(want).max()))


def same_values(arrays: list[np.ndarray], ws: list[np.ndarray], dtype: int) -> None:
    """The arrays hold exactly the written values, in the file's element type (bfloat16 as float32)."""
    for got, want in zip(arrays, ws, strict=True):
        assert got.shape == want.shape
        if dtype == TensorProto.BFLOAT16:
            assert got.dtype == np.float32
            assert np.array_equal(bf16_bits(got), bf16_bits(want.astype(np.float32)))
        else:
            assert got.dtype == NP[dtype]
            assert np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                                  np.ascontiguousarray(want.astype(NP[dtype])).view(np.uint8))


# -- accepted graphs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans1,trans2", [(1, 1), (0, 0), (1, 0), (0, 1)])
def test_gemm_transposes(tmp_path: Path, trans1: int, trans2: int) -> None:
    ws = weights(trans1 + 2 * trans2)
    path = save(tmp_path, model(gemm_nodes(trans1, trans2), gemm_inits(ws, trans1=trans1, trans2=trans2)))
    arrays, names, external = read_onnx(path)
    assert names == ["W1", "b1", "W2", "b2"] and external == []
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (7, M), TensorProto.FLOAT)


def test_gemm_with_explicit_default_attributes(tmp_path: Path) -> None:
    nodes = gemm_nodes(alpha=1.0, beta=1.0, transA=0)
    path = save(tmp_path, model(nodes, gemm_inits(weights())))
    agrees_with_ort(path, read_onnx(path)[0], (4, M), TensorProto.FLOAT)


@pytest.mark.parametrize("order", ["result first", "bias first"])
def test_matmul_add(tmp_path: Path, order: str) -> None:
    ws = weights(3)
    W1, b1, W2, b2 = ws

    def add(t: str, c: str, out: str) -> onnx.NodeProto:
        return helper.make_node("Add", [t, c] if order == "result first" else [c, t], [out])

    nodes = [helper.make_node("MatMul", ["x", "W1t"], ["t1"]), add("t1", "b1", "h"),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "W2t"], ["t2"]),
             add("t2", "b2", "y")]
    inits = [tensor(W1.T, "W1t"), tensor(b1, "b1"), tensor(W2.T, "W2t"), tensor(b2, "b2")]
    path = save(tmp_path, model(nodes, inits))
    arrays, names, _ = read_onnx(path)
    assert names == ["W1t", "b1", "W2t", "b2"]
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (6, M), TensorProto.FLOAT)


def test_matmul_rank_one_input_and_mixed_layers(tmp_path: Path) -> None:
    W1, b1, W2, b2 = ws = weights(4)
    nodes = [helper.make_node("MatMul", ["x", "W1t"], ["t1"]), helper.make_node("Add", ["b1", "t1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["r", "W2t"], ["t2"]),
             helper.make_node("Add", ["t2", "b2"], ["y"])]
    inits = [tensor(W1.T, "W1t"), tensor(b1, "b1"), tensor(W2.T, "W2t"), tensor(b2, "b2")]
    path = save(tmp_path, model(nodes, inits, x_shape=[M], y_shape=[K]))
    arrays = read_onnx(path)[0]
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (M,), TensorProto.FLOAT)
    mixed = [helper.make_node("MatMul", ["x", "W1t"], ["t1"]), helper.make_node("Add", ["t1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    path = save(tmp_path, model(mixed, [tensor(W1.T, "W1t"), tensor(b1, "b1"), tensor(W2, "W2"), tensor(b2, "b2")]),
                "mixed.onnx")
    agrees_with_ort(path, read_onnx(path)[0], (5, M), TensorProto.FLOAT)


def test_flatten_reshape_identity_in_front(tmp_path: Path) -> None:
    ws = weights(5)
    shape0 = numpy_helper.from_array(np.array([0, M], dtype=np.int64), "s0")
    shape1 = numpy_helper.from_array(np.array([-1, M], dtype=np.int64), "s1")
    nodes = [helper.make_node("Identity", ["x"], ["i0"]), helper.make_node("Flatten", ["i0"], ["f"], axis=1),
             helper.make_node("Reshape", ["f", "s1"], ["r1"]), helper.make_node("Reshape", ["r1", "s0"], ["r0"]),
             helper.make_node("Flatten", ["r0"], ["f2"]), helper.make_node("Identity", ["f2"], ["i1"]),
             helper.make_node("Gemm", ["i1", "W1", "b1"], ["h"], transB=1), helper.make_node("Identity", ["h"], ["i2"]),
             helper.make_node("Relu", ["i2"], ["r"]), helper.make_node("Identity", ["r"], ["i3"]),
             helper.make_node("Gemm", ["i3", "W2", "b2"], ["z"], transB=1), helper.make_node("Identity", ["z"], ["i4"]),
             helper.make_node("Identity", ["i4"], ["y"])]
    path = save(tmp_path, model(nodes, [shape0, shape1, *gemm_inits(ws)], x_shape=[None, 1, M, 1]))
    arrays, names, _ = read_onnx(path)
    assert names == ["W1", "b1", "W2", "b2"]
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (4, 1, M, 1), TensorProto.FLOAT)


def test_unsorted_nodes_and_initializers_listed_as_inputs(tmp_path: Path) -> None:
    """The data flow is followed by names, not by node order; a graph input naming an initializer takes its value."""
    ws = weights(6)
    inits = gemm_inits(ws)
    m = model(gemm_nodes()[::-1], inits)
    m.graph.input.extend(helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims)) for t in inits)
    path = save(tmp_path, m)
    arrays = read_onnx(path)[0]
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (3, M), TensorProto.FLOAT)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16])
@pytest.mark.parametrize("typed", [False, True], ids=["raw_data", "typed"])
def test_element_types_and_data_fields(tmp_path: Path, dtype: int, typed: bool) -> None:
    ws = weights(7)
    inits = gemm_inits(ws, dtype, typed=typed)
    field = "raw_data" if not typed else {TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data"}.get(
        dtype, "int32_data")
    assert all(t.HasField("raw_data") if field == "raw_data" else len(getattr(t, field)) for t in inits)
    path = save(tmp_path, model(gemm_nodes(), inits, dtype))
    arrays, _, _ = read_onnx(path)
    same_values(arrays, ws, dtype)
    if dtype == TensorProto.BFLOAT16:  # onnxruntime's CPU kernels have no bfloat16 Gemm: compare with float32
        ort_path = save(tmp_path, model(gemm_nodes(), gemm_inits(ws)), "f32.onnx")
        agrees_with_ort(path, arrays, (5, M), dtype, ort_path=ort_path)
    else:
        agrees_with_ort(path, arrays, (5, M), dtype)


def merged(path: Path) -> Path:
    """The model with its external data loaded into the file (onnxruntime's shape inference cannot read an external
    Reshape target)."""
    out = path.with_name(path.stem + "-merged.onnx")
    onnx.save_model(onnx.load(str(path), load_external_data=True), str(out))
    return out


def test_external_data(tmp_path: Path) -> None:
    ws = weights(8)
    path = save(tmp_path, model(gemm_nodes(), gemm_inits(ws)), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    arrays, names, external = read_onnx(path)
    assert names == ["W1", "b1", "W2", "b2"]
    digest = hashlib.sha256((tmp_path / "weights.bin").read_bytes()).hexdigest()
    assert external == [("weights.bin", digest)]
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (4, M), TensorProto.FLOAT)

    sub = tmp_path / "sub"
    sub.mkdir()
    shape = numpy_helper.from_array(np.array([-1, M], dtype=np.int64), "s")
    nodes = [helper.make_node("Reshape", ["x", "s"], ["xr"]), helper.make_node("Gemm", ["xr", "W1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    path = save(sub, model(nodes, [shape, *gemm_inits(ws, trans1=0)]), save_as_external_data=True,
                all_tensors_to_one_file=False, size_threshold=0)
    arrays, names, external = read_onnx(path)
    assert [loc for loc, _ in external] == ["s", "W1", "b1", "W2", "b2"]  # one file each, in order of first use
    assert all(h == hashlib.sha256((sub / loc).read_bytes()).hexdigest() for loc, h in external)
    same_values(arrays, ws, TensorProto.FLOAT)
    agrees_with_ort(path, arrays, (4, M), TensorProto.FLOAT, ort_path=merged(path))


def test_torch_export(tmp_path: Path) -> None:
    import torch  # the TorchScript exporter (dynamo=False) of torch < 2.14 needs only onnx, which the test extra holds

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    path = tmp_path / "torch.onnx"
    torch.onnx.export(net, (torch.zeros(1, 3),), str(path), dynamo=False, input_names=["x"], output_names=["y"])
    arrays, names, external = read_onnx(path)
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"] and external == []
    state = net.state_dict()
    for got, key in zip(arrays, names, strict=True):
        assert np.array_equal(got, state[key].numpy())
    x = np.random.default_rng(2).standard_normal((1, 3)).astype(np.float32)
    np.testing.assert_allclose(run_ort(path, x), reference(arrays, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net(torch.from_numpy(x)).detach().numpy(), reference(arrays, x), rtol=1e-5, atol=1e-5)


def chain_forward(layers: list, x: np.ndarray, output_relu: bool) -> np.ndarray:
    """The chain of affine layers with ReLU between them (and after the last with output_relu), in float64."""
    h = np.asarray(x, dtype=np.float64)
    for ell, (W, b) in enumerate(layers):
        h = h @ np.asarray(W, dtype=np.float64).T + np.asarray(b, dtype=np.float64)
        if ell < len(layers) - 1 or output_relu:
            h = np.maximum(h, 0)
    return h


@pytest.mark.parametrize("hidden,output_relu", [((5, 4), False), ((6, 5, 4), False), ((4, 3), True), ((5,), True)])
def test_torch_export_of_a_deep_chain(tmp_path: Path, hidden: tuple[int, ...], output_relu: bool) -> None:
    import torch  # the TorchScript exporter (dynamo=False) of torch < 2.14 needs only onnx, which the test extra holds

    from tests.helpers import export_onnx, torch_chain

    widths = [3, *hidden, 2]
    net = torch_chain(widths, output_relu, len(hidden))
    path = export_onnx(net, tmp_path / "deep.onnx", 3)
    chain = read_onnx_chain(path)
    assert chain.output_relu is output_relu and chain.external == []
    assert [W.shape for W, _ in chain.layers] == [(widths[i + 1], widths[i]) for i in range(len(widths) - 1)]
    state = net.state_dict()
    assert chain.names == [f"{2 * i}.{part}" for i in range(len(widths) - 1) for part in ("weight", "bias")]
    for got, key in zip((a for pair in chain.layers for a in pair), chain.names, strict=True):
        assert np.array_equal(got, state[key].numpy())
    x = np.random.default_rng(3).standard_normal((1, 3)).astype(np.float32)
    want = chain_forward(chain.layers, x, output_relu)
    np.testing.assert_allclose(run_ort(path, x), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net(torch.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)
    if len(hidden) > 1 or output_relu:  # the one-hidden-layer reading refuses the chain, naming what it holds
        with pytest.raises(InputError, match="certsym equiv decides deep ones"):
            read_onnx(path)


def test_a_deep_chain_of_matmul_add_with_identities(tmp_path: Path) -> None:
    ws = weights(4)
    W3 = np.round(np.random.default_rng(5).standard_normal((K, K)) * 64) / 64
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["t1"]), helper.make_node("Add", ["b1", "t1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["r1"]), helper.make_node("Identity", ["r1"], ["i1"]),
             helper.make_node("Gemm", ["i1", "W2", "b2"], ["h2"], transB=1), helper.make_node("Relu", ["h2"], ["r2"]),
             helper.make_node("MatMul", ["r2", "W3"], ["t3"]), helper.make_node("Add", ["t3", "b3"], ["h3"]),
             helper.make_node("Relu", ["h3"], ["y"])]
    inits = [tensor(ws[0].T, "W1"), tensor(ws[1], "b1"), tensor(ws[2], "W2"), tensor(ws[3], "b2"),
             tensor(W3.T, "W3"), tensor(ws[3], "b3")]
    path = save(tmp_path, model(nodes, inits))
    chain = read_onnx_chain(path)
    assert chain.output_relu and chain.names == ["W1", "b1", "W2", "b2", "W3", "b3"]
    x = np.round(np.random.default_rng(6).standard_normal((5, M)) * 16) / 16
    np.testing.assert_allclose(run_ort(path, x.astype(np.float32)), chain_forward(chain.layers, x, True),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("change,words", [
    ("relu twice", ("Relu", "after the Relu after linear layer 1", "one Relu after each linear layer")),
    ("one layer", ("the graph output", "after linear layer 1")),
    ("widths", ("layer 2", "reads 4 values", "gives 5")),
])
def test_deep_chain_refusals(tmp_path: Path, change: str, words: tuple[str, ...]) -> None:
    ws = weights()
    if change == "relu twice":
        nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("Relu", ["r"], ["rr"]), helper.make_node("Gemm", ["rr", "W2", "b2"], ["y"], transB=1)]
        m = model(nodes, gemm_inits(ws))
    elif change == "one layer":
        nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["y"], transB=1)]
        m = model(nodes, gemm_inits(ws)[:2], y_shape=[None, N])
    else:
        W2 = np.ones((K, 4))
        m = model(gemm_nodes(), [tensor(ws[0], "W1"), tensor(ws[1], "b1"), tensor(W2, "W2"), tensor(ws[3], "b2")])
    with pytest.raises(InputError) as info:
        read_onnx_chain(save(tmp_path, m))
    for word in words:
        assert word in str(info.value), info.value


# -- refusals ----------------------------------------------------------------------------------------------------


def refused(path: Path, *words: str) -> str:
    """The file is refused with a one-line message that starts with the path and holds every word."""
    with pytest.raises(InputError) as info:
        read_onnx(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    for word in words:
        assert word in message, message
    return message


def refuse_model(tmp_path: Path, m: onnx.ModelProto, *words: str) -> str:
    return refused(save(tmp_path, m), *words)


@pytest.mark.parametrize("attribute,words", [
    ({"alpha": float("inf")}, ("Gemm 'g1'", "alpha", "finite")),
    ({"beta": float("nan")}, ("Gemm 'g1'", "beta", "finite")),
    ({"transA": 1}, ("transA = 1",)),
    ({"broadcast": 1}, ("attribute 'broadcast'",)),
])
def test_gemm_attributes(tmp_path: Path, attribute: dict, words: tuple[str, ...]) -> None:
    refuse_model(tmp_path, model(gemm_nodes(**attribute), gemm_inits(weights())), *words)


def test_gemm_attribute_with_wrong_type_or_second_field(tmp_path: Path) -> None:
    nodes = gemm_nodes()
    nodes[0].attribute[0].type = onnx.AttributeProto.FLOAT  # transB written as FLOAT
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "transB", "expected INT")
    nodes = gemm_nodes()
    nodes[0].attribute[0].f = 3.0  # transB = 1 with a float beside it
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "also sets the field f")
    nodes = gemm_nodes(trans1=2)
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "transB = 2")


def test_layer_order(tmp_path: Path) -> None:
    W1, b1, W2, b2 = weights()
    inits = [tensor(W1, "W1"), tensor(b1, "b1"), tensor(np.eye(N), "W2"), tensor(b1, "b2")]
    two_gemms = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1, name="g1"),
                 helper.make_node("Gemm", ["h", "W2", "b2"], ["z"], transB=1, name="g2"),
                 helper.make_node("Relu", ["z"], ["y"])]
    refuse_model(tmp_path, model(two_gemms, inits, y_shape=[None, N]), "Gemm 'g2'", "after linear layer 1",
                 "Relu between")
    relu_first = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                  helper.make_node("Gemm", ["r", "W1", "b1"], ["h"], transB=1),
                  helper.make_node("Gemm", ["h", "W2", "b2"], ["y"], transB=1)]
    refuse_model(tmp_path, model(relu_first, gemm_inits(weights())), "Relu 'relu'", "before the first linear layer")
    three = [*gemm_nodes()[:2], helper.make_node("Gemm", ["r", "W2", "b2"], ["z"], transB=1),
             helper.make_node("Relu", ["z"], ["y"])]
    refuse_model(tmp_path, model(three, gemm_inits(weights())), "1 hidden layers and an output ReLU",
                 "certsym equiv decides deep ones")  # a chain with an output ReLU, which the shallow reading refuses


def test_second_layer_reads_the_preactivation(tmp_path: Path) -> None:
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1, name="g1"),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("Gemm", ["h", "W2", "b2"], ["y"], transB=1,
                                                                     name="g2")]
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "Gemm 'g2'", "before the Relu",
                 "the Relu output is not used by the next linear layer")


def test_extra_unused_node_and_initializer(tmp_path: Path) -> None:
    nodes = [*gemm_nodes(), helper.make_node("Relu", ["W1"], ["junk"], name="stray")]
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "Relu 'stray'", "not on the data flow")
    inits = [*gemm_inits(weights()), tensor(np.zeros(3), "spare")]
    refuse_model(tmp_path, model(gemm_nodes(), inits), "'spare'", "not used")


def test_outputs_and_inputs(tmp_path: Path) -> None:
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), outputs=["y", "h"]), "2 graph outputs",
                 "'y', 'h'")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), inputs=["x", "x2"]), "2 graph inputs")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.graph.ClearField("output")
    refuse_model(tmp_path, m, "0 graph outputs")


def test_sigmoid_and_custom_domain(tmp_path: Path) -> None:
    nodes = gemm_nodes()
    nodes[1] = helper.make_node("Sigmoid", ["h"], ["r"], name="act")
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "found node Sigmoid 'act'; expected")
    nodes = gemm_nodes()
    nodes[1] = helper.make_node("Relu", ["h"], ["r"], name="act", domain="com.example")
    m = model(nodes, gemm_inits(weights()))
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    refuse_model(tmp_path, m, "custom domain 'com.example'")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    refuse_model(tmp_path, m, "domain 'com.example'")


def test_model_level_refusals(tmp_path: Path) -> None:
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.functions.append(onnx.FunctionProto(name="f", domain="local"))
    refuse_model(tmp_path, m, "function")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.graph.sparse_initializer.append(onnx.SparseTensorProto())
    refuse_model(tmp_path, m, "sparse")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.training_info.append(onnx.TrainingInfoProto())
    refuse_model(tmp_path, m, "training")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), opset=6), "opset 6")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), opset=29), "opset 29", "newer")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.ir_version = 15
    refuse_model(tmp_path, m, "IR version 15")
    m.ir_version = 2
    refuse_model(tmp_path, m, "IR version 2")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.graph.quantization_annotation.add(tensor_name="W1")
    refuse_model(tmp_path, m, "quantization annotations")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.graph.node[1].name = "relu"
    data = m.SerializeToString().replace(b"relu", b"r\xffl\xfe")
    (tmp_path / "utf8.onnx").write_bytes(data)
    refused(tmp_path / "utf8.onnx", "not UTF-8")
    m = model(gemm_nodes(), gemm_inits(weights()))
    m.ClearField("opset_import")
    refuse_model(tmp_path, m, "no opset import")


def test_initializer_data_fields(tmp_path: Path) -> None:
    inits = gemm_inits(weights())
    inits[0].float_data.extend([0.0] * (M * N))
    refuse_model(tmp_path, model(gemm_nodes(), inits), "'W1'", "both raw_data and float_data")
    inits = gemm_inits(weights())
    inits[1].double_data.append(1.0)
    refuse_model(tmp_path, model(gemm_nodes(), inits), "'b1'", "double_data")
    inits = gemm_inits(weights())
    inits[1].raw_data = inits[1].raw_data[:-4]
    refuse_model(tmp_path, model(gemm_nodes(), inits), "'b1'", "16 bytes", "need 20")
    inits = gemm_inits(weights(), TensorProto.FLOAT16, typed=True)
    inits[3].int32_data[0] = 70000
    refuse_model(tmp_path, model(gemm_nodes(), inits, TensorProto.FLOAT16), "70000", "0..65535")
    inits = gemm_inits(weights(), typed=True)
    inits[2].ClearField("float_data")
    refuse_model(tmp_path, model(gemm_nodes(), inits), "'W2'", "0 entries in float_data")


def test_duplicate_names(tmp_path: Path) -> None:
    inits = [*gemm_inits(weights()), tensor(np.zeros(N), "b1")]
    refuse_model(tmp_path, model(gemm_nodes(), inits), "two initializers named 'b1'")
    nodes = [*gemm_nodes(), helper.make_node("Identity", ["x"], ["h"])]
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "'h' is the output of both")


def test_values_and_shapes(tmp_path: Path) -> None:
    W1, b1, W2, b2 = weights()
    inits = gemm_inits([W1, b1.reshape(1, N), W2, b2])
    refuse_model(tmp_path, model(gemm_nodes(), inits), "bias 'b1' has shape (1, 5)", "expected (5,)")
    inits = gemm_inits([W1, b1, W2[:, :4], b2])
    refuse_model(tmp_path, model(gemm_nodes(), inits), "reads 4 values", "gives 5")
    inits = gemm_inits(weights())
    inits[2] = tensor(W2, "W2", TensorProto.DOUBLE)
    refuse_model(tmp_path, model(gemm_nodes(), inits), "element types FLOAT", "DOUBLE ('W2')")
    W1n = W1.copy()
    W1n[0, 0] = np.nan
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits([W1n, b1, W2, b2])), "'W1'", "NaN")
    m = model(gemm_nodes(), gemm_inits(weights()), dtype=TensorProto.DOUBLE)
    for t, a in zip(m.graph.initializer, gemm_inits(weights()), strict=True):
        t.CopyFrom(a)
    refuse_model(tmp_path, m, "the graph input 'x' is declared DOUBLE", "weights are FLOAT")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), x_shape=[1, 4]), "Gemm 'g1' reads rows of 4",
                 "'x' is declared (1, 4)", "takes 3")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(weights()), x_shape=[1, 1, 3]), "rank 3", "rank 2")


def test_shape_nodes(tmp_path: Path) -> None:
    def front(node: onnx.NodeProto, target: np.ndarray | None = None) -> onnx.ModelProto:
        nodes = [node, *gemm_nodes()]
        nodes[1].input[0] = node.output[0]
        inits = gemm_inits(weights()) + ([numpy_helper.from_array(target, "s")] if target is not None else [])
        return model(nodes, inits, x_shape=[None, 1, M])

    refuse_model(tmp_path, front(helper.make_node("Flatten", ["x"], ["f"], axis=2)), "axis = 2")
    refuse_model(tmp_path, front(helper.make_node("Reshape", ["x", "s"], ["f"]), np.array([1, M])), "[1, 3]",
                 "expected [-1, 3] or [0, 3]")
    refuse_model(tmp_path, front(helper.make_node("Reshape", ["x", "s"], ["f"]), np.array([-1, 4])), "[-1, 4]")
    refuse_model(tmp_path, front(helper.make_node("Reshape", ["x", "s"], ["f"]), np.array([-1, M], np.int32)),
                 "INT32")
    refuse_model(tmp_path, front(helper.make_node("Reshape", ["x", "s"], ["f"], allowzero=1), np.array([0, M])),
                 "allowzero = 1")
    nodes = gemm_nodes()
    nodes[1:2] = [helper.make_node("Relu", ["h"], ["r0"]), helper.make_node("Flatten", ["r0"], ["r"], name="late")]
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())), "Flatten 'late'", "only before the first linear")


def test_weights_from_nodes_and_matmul_without_add(tmp_path: Path) -> None:
    W1, b1, W2, b2 = weights()
    nodes = [helper.make_node("Constant", [], ["W1"], value=tensor(W1, "c")), *gemm_nodes()]
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())[1:]), "found node Constant")
    nodes = [helper.make_node("MatMul", ["x", "W1t"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    inits = [tensor(W1.T, "W1t"), tensor(W2, "W2"), tensor(b2, "b2")]
    refuse_model(tmp_path, model(nodes, inits), "MatMul 'mm' is followed by Relu", "Add of the bias")
    nodes = gemm_nodes()
    nodes[0].input.pop()
    refuse_model(tmp_path, model(nodes, gemm_inits(weights())[:1] + gemm_inits(weights())[2:]), "no bias C")


def test_corrupt_and_truncated_files(tmp_path: Path) -> None:
    data = model(gemm_nodes(), gemm_inits(weights())).SerializeToString()
    for seed in range(5):
        path = tmp_path / f"random{seed}.onnx"
        path.write_bytes(np.random.default_rng(seed).bytes(2000))
        refused(path)
    for cut in range(0, len(data), 7):  # every proper prefix is refused (here: no field after opset_import)
        path = tmp_path / "cut.onnx"
        path.write_bytes(data[:cut])
        refused(path)
    refused(tmp_path / "missing.onnx", "no such file")
    text = tmp_path / "text.onnx"
    text.write_text(str(model(gemm_nodes(), gemm_inits(weights()))))  # the text format is not read
    refused(text)
    unknown = tmp_path / "unknown.onnx"
    unknown.write_bytes(data + bytes([0xF8, 0x07, 0x05]))  # field 127, varint 5
    refused(unknown, "protobuf fields that onnx does not know")


def external_model(tmp_path: Path, edit: Callable[[TensorProto], None]) -> Path:
    """A model whose W1 is external data in w.bin (45 floats: 60 bytes at offset 0, then 4 spare bytes)."""
    inits = gemm_inits(weights())
    w1 = inits[0]
    (tmp_path / "w.bin").write_bytes(w1.raw_data + b"\0\0\0\0")
    w1.ClearField("raw_data")
    w1.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", "60")):
        w1.external_data.add(key=key, value=value)
    edit(w1)
    return save(tmp_path, model(gemm_nodes(), inits))


def set_entry(key: str, value: str) -> Callable[[TensorProto], None]:
    def edit(t: TensorProto) -> None:
        for entry in t.external_data:
            if entry.key == key:
                entry.value = value
                return
        t.external_data.add(key=key, value=value)
    return edit


def test_external_data_refusals(tmp_path: Path) -> None:
    arrays, _, external = read_onnx(external_model(tmp_path, lambda t: None))
    assert [loc for loc, _ in external] == ["w.bin"]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"")
    cases = [
        (set_entry("location", "../w.bin"), ("'../w.bin'", "'..'")),
        (set_entry("location", "sub/../w.bin"), ("'sub/../w.bin'",)),
        (set_entry("location", "/etc/passwd"), ("relative",)),
        (set_entry("location", "sub\\w.bin"), ("'/'",)),
        (set_entry("location", "./w.bin"), ("'.'",)),
        (set_entry("location", "sub//w.bin"), ("none empty",)),
        (set_entry("location", "c:w.bin"), ("':'",)),
        (set_entry("length", "060"), ("leading zeros",)),
        (set_entry("location", "nothere.bin"), ("missing",)),
        (set_entry("checksum", "abc"), ("key 'checksum'",)),
        (set_entry("offset", "8"), ("bytes 8..68", "64 bytes")),
        (set_entry("offset", "+0"), ("decimal",)),
        (set_entry("length", "56"), ("56 bytes", "need 60")),
        (lambda t: t.external_data.add(key="offset", value="0"), ("offset twice",)),
        (lambda t: t.external_data.pop(2), ("64 bytes", "no length given")),  # the rest of the file is 64 bytes
        (lambda t: t.float_data.append(1.0), ("external data and also float_data",)),
        (lambda t: setattr(t, "data_location", TensorProto.DEFAULT), ("not EXTERNAL",)),
    ]
    for edit, words in cases:
        refused(external_model(tmp_path, edit), *words)
    assert hasattr(os, "symlink")  # every platform the project runs on
    outside = tmp_path.parent / f"{tmp_path.name}-outside.bin"
    outside.write_bytes((tmp_path / "w.bin").read_bytes())
    (tmp_path / "link.bin").symlink_to(outside)
    refused(external_model(tmp_path, set_entry("location", "link.bin")), "outside the model's folder")


def test_opset_and_declarations(tmp_path: Path) -> None:
    ws = weights()
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(ws, TensorProto.BFLOAT16), TensorProto.BFLOAT16, opset=12),
                 "BFLOAT16", "opset 12")
    nodes = [helper.make_node("Reshape", ["x", "s"], ["xr"], allowzero=0), *gemm_nodes()]
    nodes[1].input[0] = "xr"
    inits = [numpy_helper.from_array(np.array([0, M], dtype=np.int64), "s"), *gemm_inits(ws)]
    refuse_model(tmp_path, model(nodes, inits, opset=13), "allowzero", "opset 13")
    path = save(tmp_path, model(nodes, inits, opset=14), "ok.onnx")
    agrees_with_ort(path, read_onnx(path)[0], (3, M), TensorProto.FLOAT)
    m = model(gemm_nodes(), gemm_inits(ws))
    m.graph.value_info.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [None, N + 1]))
    refuse_model(tmp_path, m, "the value 'r' is declared with shape (?, 6)", "the chain gives (?, 5)")
    m = model(gemm_nodes(), gemm_inits(ws))
    m.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.DOUBLE, None))
    refuse_model(tmp_path, m, "the value 'h' is declared DOUBLE")
    refuse_model(tmp_path, model(gemm_nodes(), gemm_inits(ws), y_shape=[None, 3]), "graph output 'y'", "(?, 3)")


def test_dynamo_export(tmp_path: Path) -> None:
    """torch's default exporter (dynamo=True, which needs onnxscript, in the test and models extras) writes a graph
    certsym reads as the module it came from: EQUIVALENT, and the weights bit for bit."""
    import warnings

    import torch

    import certsym

    torch.manual_seed(5)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    path = tmp_path / "dynamo.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, 4),), str(path), dynamo=True, verbose=False)
    arrays, _, _ = read_onnx(path)
    weights = [p.detach().numpy() for p in net.parameters()]
    assert all(np.array_equal(a, w) for a, w in zip(arrays, weights, strict=True))
    assert certsym.equivalent(path, net).status == "equivalent"

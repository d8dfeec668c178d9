"""ONNX files that multiply the weight by the value, MatMul(W, x) with a 1-D x (ERAN's and VeryDiff's files): read
by the producer and by the checker, each on its own, as the layer W x + b, and refused by both where the value is
not known to be 1-D, since of a column [m, 1] the Add broadcasts the bias into an (out, out) matrix (onnxruntime
shows it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx as checker_read_onnx

WIDTHS = (3, 5, 4, 2)


def _layers(seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [((np.round(rng.standard_normal((b, a)) * 64) / 64).astype(np.float32),
             (np.round(rng.standard_normal(b) * 64) / 64).astype(np.float32))
            for a, b in zip(WIDTHS, WIDTHS[1:], strict=False)]


def _weight_first(path: Path, layers, x_shape: list | None, bias_first: bool = False) -> Path:
    """x → MatMul(W_1, x) + b_1 → Relu → … → MatMul(W_L, ·) + b_L → y, as ERAN writes it."""
    nodes, inits, value = [], [], "x"
    for ell, (W, b) in enumerate(layers):
        nodes.append(helper.make_node("MatMul", [f"W{ell}", value], [f"m{ell}"]))
        nodes.append(helper.make_node("Add", [f"B{ell}", f"m{ell}"] if bias_first else [f"m{ell}", f"B{ell}"],
                                      [f"h{ell}" if ell < len(layers) - 1 else "y"]))
        inits += [numpy_helper.from_array(W, f"W{ell}"), numpy_helper.from_array(b, f"B{ell}")]
        if ell < len(layers) - 1:
            nodes.append(helper.make_node("Relu", [f"h{ell}"], [f"r{ell}"]))
            value = f"r{ell}"
    graph = helper.make_graph(nodes, "eran", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    return path


def _forward(layers, x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float64)
    for ell, (W, b) in enumerate(layers):
        h = W.astype(np.float64) @ h + b
        h = np.maximum(h, 0) if ell < len(layers) - 1 else h
    return h


@pytest.mark.parametrize("bias_first", [False, True])
def test_weight_first_chains_read_as_their_layers_by_both_readers(tmp_path: Path, bias_first: bool) -> None:
    layers = _layers()
    path = _weight_first(tmp_path / "eran.onnx", layers, [WIDTHS[0]], bias_first)
    chain = read_onnx_chain(path)
    assert [(W.shape, b.shape) for W, b in chain.layers] == [(W.shape, b.shape) for W, b in layers]
    assert all(np.array_equal(W, V) and np.array_equal(b, c) for (W, b), (V, c) in zip(chain.layers, layers,
                                                                                          strict=True))
    checked = checker_read_onnx(path.read_bytes())
    assert [t.shape for t in checked.tensors] == [s for W, b in layers for s in (W.shape, b.shape)]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.array([0.5, -0.25, 1.0], dtype=np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], _forward(layers, x), rtol=1e-5, atol=1e-5)


def test_a_weight_first_file_is_equivalent_to_its_arrays_and_the_certificate_binds_it(tmp_path: Path, capfd) -> None:
    layers = _layers(3)
    path = _weight_first(tmp_path / "eran.onnx", layers, [WIDTHS[0]])
    npz = tmp_path / "arrays.npz"
    np.savez(npz, **{f"{2 * ell}.{kind}": a for ell, (W, b) in enumerate(layers)
                     for kind, a in (("weight", W), ("bias", b))})
    cert = tmp_path / "c.json"
    assert main(["equiv", str(path), str(npz), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(path), str(npz)]) == 0
    assert "VALID deep_equivalent" in capfd.readouterr().out


@pytest.mark.parametrize("x_shape", [[WIDTHS[0], 1], None, [1, WIDTHS[0]]])
def test_weight_first_is_refused_unless_the_value_is_declared_one_dimensional(tmp_path: Path,
                                                                              x_shape: list | None) -> None:
    layers = _layers()
    path = _weight_first(tmp_path / "column.onnx", layers, x_shape)
    with pytest.raises(InputError, match="declared 1-D|declared shape"):
        read_onnx_chain(path)
    with pytest.raises(Reject, match="not declared 1-D|cannot take"):
        checker_read_onnx(path.read_bytes())


def test_a_column_input_is_a_different_computation(tmp_path: Path) -> None:
    """Why a column is refused: onnxruntime broadcasts the bias of MatMul(W, x) + b over an [m, 1] column into an
    (out, out) matrix, not the layer W x + b."""
    layers = _layers()[:1]
    W, b = layers[0]
    nodes = [helper.make_node("MatMul", ["W0", "x"], ["m0"]), helper.make_node("Add", ["m0", "B0"], ["y"])]
    graph = helper.make_graph(nodes, "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [WIDTHS[0], 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(W, "W0"), numpy_helper.from_array(b, "B0")])
    path = tmp_path / "one.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((WIDTHS[0], 1), np.float32)})[0]
    assert out.shape == (WIDTHS[1], WIDTHS[1])

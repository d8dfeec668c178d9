"""ONNX files that normalize their input before the first layer (VNN-COMP's ACAS Xu files start with Sub and Div):
Sub, Add, Mul and Div by a constant initializer, read by the producer and by the checker, each on its own, and
folded into the first layer exactly (1/σ of a float is rational); onnxruntime computes the same function (up to its
float rounding); a constant that would change the value's shape, a division by 0 and a constant on the wrong side of
Sub or Div are refused by both."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from flint import fmpq
from onnx import TensorProto, helper, numpy_helper

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym_check import check_certificate
from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx as checker_read_onnx

M = 5


def _file(path: Path, prefix: list, x_shape: list, seed: int = 0) -> Path:
    """x → prefix (op, constant, constant first?) → MatMul + Add → Relu → MatMul + Add → Relu → MatMul + Add."""
    rng = np.random.default_rng(seed)
    widths = (M, 6, 4, 3)
    inits, nodes, value = [], [], "x"
    for s, (op, constant, first) in enumerate(prefix):
        inits.append(numpy_helper.from_array(np.asarray(constant, dtype=np.float32), f"c{s}"))
        nodes.append(helper.make_node(op, [f"c{s}", value] if first else [value, f"c{s}"], [f"n{s}"]))
        value = f"n{s}"
    if len(x_shape) != 2:
        inits.append(numpy_helper.from_array(np.array([-1, M], dtype=np.int64), "shape"))
        nodes.append(helper.make_node("Reshape", [value, "shape"], ["flat"]))
        value = "flat"
    for ell, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        W = (np.round(rng.standard_normal((a, b)) * 32) / 32).astype(np.float32)
        c = (np.round(rng.standard_normal(b) * 32) / 32).astype(np.float32)
        inits += [numpy_helper.from_array(W, f"W{ell}"), numpy_helper.from_array(c, f"b{ell}")]
        last = ell == len(widths) - 2
        nodes += [helper.make_node("MatMul", [value, f"W{ell}"], [f"m{ell}"]),
                  helper.make_node("Add", [f"m{ell}", f"b{ell}"], ["y" if last else f"h{ell}"])]
        if not last:
            nodes.append(helper.make_node("Relu", [f"h{ell}"], [f"r{ell}"]))
            value = f"r{ell}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), str(path))
    return path


ACAS = [("Sub", [[0.5, 0.1, 0.2, 0.3, 0.4]], False), ("Div", [[3.0, 0.7, 1.5, 2.5, 0.1]], False)]


@pytest.mark.parametrize("prefix, x_shape", [
    (ACAS, [1, M]),
    ([("Mul", 2.0, True), ("Add", [0.25] * M, True)], [1, M]),
    ([("Sub", np.full((1, 1, 1, M), 0.5), False), ("Div", np.float32(3.0), False)], [1, 1, 1, M]),
    ([("Add", [-1.0] * M, False), ("Mul", [1, 2, 4, 8, 16], False), ("Div", [0.5] * M, False)], [1, M]),
])
def test_a_normalized_input_is_folded_exactly_and_agrees_with_onnxruntime(tmp_path: Path, prefix, x_shape) -> None:
    path = _file(tmp_path / "n.onnx", prefix, x_shape)
    net = certsym.load(str(path)).layered()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.standard_normal(M).astype(np.float32)
        want = session.run(None, {"x": x.reshape(x_shape)})[0].ravel()
        got = [float(v) for v in net([fmpq(*float(v).as_integer_ratio()) for v in x])]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    chain = checker_read_onnx(path.read_bytes())
    assert [op for op, _ in chain.normalization] == [op for op, _, _ in prefix]
    produced = read_onnx_chain(path)
    assert [tuple(map(Fraction, map(str, v))) for v in produced.affine] == [tuple(v) for v in chain.affine]


def test_the_certificate_binds_the_file_and_its_normalization(tmp_path: Path, capfd) -> None:
    path = _file(tmp_path / "acas.onnx", ACAS, [1, M])
    plain = _file(tmp_path / "plain.onnx", [], [1, M])
    cert = tmp_path / "c.json"
    assert main(["equiv", str(path), str(path), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(path), str(path)]) == 0
    assert "the input normalized by Sub c0, Div c1, folded into the first layer" in capfd.readouterr().out
    assert main(["equiv", str(path), str(plain)]) == 1  # the normalization changes the function
    doc = json.loads(cert.read_text())
    forged = json.loads(json.dumps(doc))
    forged["inputs"][0]["model"]["normalization"] = [["Sub", "c0"]]
    report = check_certificate(forged, [path.read_bytes(), path.read_bytes()])
    assert not report.valid and "normalization" in report.reason
    moved = json.loads(json.dumps(doc))
    w = moved["inputs"][0]["parameters"]["layers"][0]["W"]
    w[0][0] = str(Fraction(w[0][0]) + 1)
    report = check_certificate(moved, [path.read_bytes(), path.read_bytes()])
    assert not report.valid and "differ" in report.reason


@pytest.mark.parametrize("prefix, x_shape, words", [
    ([("Sub", np.full((M, 1), 0.5), False)], [1, M], "shape"),  # broadcasts [1, M] to [M, M]
    ([("Div", [1.0, 0.0, 1.0, 1.0, 1.0], False)], [1, M], "0"),
    ([("Sub", [0.5] * M, True)], [1, M], "input"),  # c − x: the value must be input 0
    ([("Div", 2.0, True)], [1, M], "input|first"),
])
def test_normalizations_that_change_the_shape_or_divide_by_zero_are_refused_by_both(tmp_path: Path, prefix, x_shape,
                                                                                      words: str) -> None:
    path = _file(tmp_path / "bad.onnx", prefix, x_shape)
    with pytest.raises(InputError, match=words):
        read_onnx_chain(path)
    with pytest.raises(Reject):
        checker_read_onnx(path.read_bytes())


def test_a_gzipped_onnx_file_reads_as_its_contents_and_binds_as_itself(tmp_path: Path, capfd) -> None:
    """VNN-COMP ships .onnx.gz: read decompressed by both readers; the certificate records the gzipped file's
    SHA-256, and the checker binds that file (decompressing it itself), not the plain one."""
    import gzip

    plain = _file(tmp_path / "a.onnx", ACAS, [1, M])
    packed = tmp_path / "a.onnx.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    cert = tmp_path / "gz.json"
    assert main(["equiv", str(packed), str(plain), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(packed), str(plain)]) == 0
    assert main(["check", str(cert), "--inputs", str(plain), str(plain)]) == 1
    assert "differs from the certificate's" in capfd.readouterr().out
    (tmp_path / "bad.onnx.gz").write_bytes(b"\x1f\x8b" + b"junk" * 10)
    assert main(["equiv", str(tmp_path / "bad.onnx.gz"), str(plain)]) == 2
    assert "gzip" in capfd.readouterr().err


def test_gemm_alpha_and_beta_scale_the_layer_exactly_in_both_readers(tmp_path: Path, capfd) -> None:
    """Y = alpha·A·B + beta·C: read as the layer alpha W, beta C (exact), as onnxruntime computes it; the record
    names the scaled layers and the checker binds the file by scaling them itself."""
    rng = np.random.default_rng(4)
    W1 = (np.round(rng.standard_normal((4, 3)) * 16) / 16).astype(np.float32)
    W2 = (np.round(rng.standard_normal((2, 4)) * 16) / 16).astype(np.float32)
    b1, b2 = np.float32([0.5, -0.25, 1, 0]), np.float32([0.125, -1])
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["a1"], transB=1, alpha=0.5, beta=3.0),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "W2", "b2"], ["y"], transB=1, alpha=-0.375)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], inits)
    path = tmp_path / "gemm.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    net = certsym.load(str(path)).layered()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for x in np.random.default_rng(5).standard_normal((5, 3)).astype(np.float32):
        want = session.run(None, {"x": x.reshape(1, 3)})[0].ravel()
        got = [float(v) for v in net([fmpq(*float(v).as_integer_ratio()) for v in x])]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert checker_read_onnx(path.read_bytes()).scales == [(Fraction(1, 2), Fraction(3)), (Fraction(-3, 8), 1)]
    cert = tmp_path / "g.json"
    assert main(["equiv", str(path), str(path), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(path), str(path)]) == 0
    doc = json.loads(cert.read_text())
    assert doc["inputs"][0]["model"]["alpha_beta"] == [[1, "1/2", "3"], [2, "-3/8", "1"]]
    forged = json.loads(cert.read_text())
    forged["inputs"][0]["model"]["alpha_beta"] = [[1, "1/2", "3"]]
    report = check_certificate(forged, [path.read_bytes(), path.read_bytes()])
    assert not report.valid and "alpha and beta" in report.reason


@pytest.mark.parametrize("node, ok", [
    (helper.make_node("Dropout", ["v", ], ["w"]), True),
    (helper.make_node("Dropout", ["v"], ["w"], seed=3), True),
    (helper.make_node("Cast", ["v"], ["w"], to=TensorProto.FLOAT), True),
    (helper.make_node("Cast", ["v"], ["w"], to=TensorProto.DOUBLE), False),  # another function: rounding
    (helper.make_node("Dropout", ["v"], ["w", "mask"]), False),
])
def test_dropout_and_a_cast_to_the_same_type_are_identities_in_both_readers(tmp_path: Path, node, ok: bool) -> None:
    """At inference a Dropout passes its input on, and a Cast to the value's own element type is the identity:
    both readers read the chain as without them, as onnxruntime computes it; anything else is refused by both."""
    rng = np.random.default_rng(8)
    W1, W2 = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    b1, b2 = np.float32([0.5, -0.25, 1, 0]), np.float32([0.125, -1])
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["a1"], transB=1), helper.make_node("Relu", ["a1"], ["v"]),
             node, helper.make_node("Gemm", ["w", "W2", "b2"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], inits)
    path = tmp_path / "d.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    if not ok:
        with pytest.raises(InputError):
            read_onnx_chain(path)
        with pytest.raises(Reject):
            checker_read_onnx(path.read_bytes())
        return
    net = certsym.load(str(path)).layered()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.float32([[0.5, -1.0, 2.0]])
    np.testing.assert_allclose([float(v) for v in net([fmpq(*float(v).as_integer_ratio()) for v in x[0]])],
                               session.run(None, {"x": x})[0][0], rtol=1e-5, atol=1e-5)
    assert len(checker_read_onnx(path.read_bytes()).tensors) == 4

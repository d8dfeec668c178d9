"""ONNX graphs that end in a Softmax or LogSoftmax (VNN-COMP's LHC classifiers, a torch Sequential ending in
Softmax(-1)): both readers read the layers as the logits and record the head; a top-1 question, which the head
cannot change, is answered and certified; every question where the output values matter is refused with the
reason; the checker refuses a head on any other kind of certificate, and a record that does not state the head the
file has."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym_check import check
from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx as checker_read_onnx

M, N, K = 3, 6, 4


def _weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(np.round(rng.standard_normal(shape) * 64) / 64).astype(np.float32) for shape in ((N, M), (N,), (K, N),
                                                                                            (K,))]


def _headed(path: Path, ws: list[np.ndarray], head: str = "Softmax", opset: int = 13, axis: int | None = None) -> Path:
    W1, b1, W2, b2 = ws
    attrs = {} if axis is None else {"axis": axis}
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["z"], transB=1),
             helper.make_node(head, ["z"], ["y"], **attrs)]
    inits = [numpy_helper.from_array(a, name) for a, name in zip(ws, ("W1", "b1", "W2", "b2"), strict=True)]
    graph = helper.make_graph(nodes, "clf", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, M])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, K])], inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def _logits(path: Path, ws: list[np.ndarray]) -> str:
    np.savez(path, **{"0.weight": ws[0], "0.bias": ws[1], "2.weight": ws[2], "2.bias": ws[3]})
    return str(path)


@pytest.mark.parametrize("head, opset, axis", [("Softmax", 13, None), ("Softmax", 11, None), ("LogSoftmax", 17, 1),
                                               ("Softmax", 17, -1)])
def test_both_readers_read_the_logits_and_the_head(tmp_path: Path, head: str, opset: int, axis: int | None) -> None:
    ws = _weights()
    path = _headed(tmp_path / "clf.onnx", ws, head, opset, axis)
    chain = read_onnx_chain(path)
    assert chain.head == head and np.array_equal(chain.layers[1][0], ws[2])
    assert checker_read_onnx(path.read_bytes()).head == head
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((1, M)).astype(np.float32)
    logits = np.maximum(x @ ws[0].T + ws[1], 0) @ ws[2].T + ws[3]
    assert int(session.run(None, {"x": x})[0].argmax()) == int(logits.argmax())


def test_a_head_over_another_axis_is_refused_by_both(tmp_path: Path) -> None:
    path = _headed(tmp_path / "clf.onnx", _weights(), "Softmax", 13, 0)
    with pytest.raises(InputError, match="last axis"):
        read_onnx_chain(path)
    with pytest.raises(Reject, match="not the last axis"):
        checker_read_onnx(path.read_bytes())


def test_top1_is_answered_and_certified_and_values_are_refused(tmp_path: Path, capfd) -> None:
    ws = _weights(2)
    headed, logits = _headed(tmp_path / "clf.onnx", ws), _logits(tmp_path / "logits.npz", ws)
    cert = tmp_path / "t.json"
    assert main(["distance", str(headed), logits, "--top1", "--box", "-1,1", "--cert", str(cert)]) == 0
    out = capfd.readouterr().out
    assert out.startswith("AGREE") and "ending in a Softmax, read as the logits" in out
    assert main(["check", str(cert), "--inputs", str(headed), logits]) == 0
    assert "read as the logits it normalizes (top-1 only)" in capfd.readouterr().out
    for command in (["equiv", str(headed), logits], ["distance", str(headed), logits, "--epsilon", "1"],
                    ["canon", str(headed)]):
        assert main(command) == 2
        err = capfd.readouterr().err
        assert "ends in a Softmax" in err and err.count("\n") == 1
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["model"].pop("head")
    (tmp_path / "forged.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "forged.json"), "--inputs", str(headed), logits]) != 0
    assert "the certificate's record says none" in capfd.readouterr().out


def test_a_head_on_a_claim_about_values_is_refused_by_the_checker(tmp_path: Path, capfd) -> None:
    """An equivalence certificate whose input record claims a Softmax head: refused before anything is read."""
    ws = _weights(3)
    a, b = _logits(tmp_path / "a.npz", ws), _logits(tmp_path / "b.npz", ws)
    cert = tmp_path / "e.json"
    assert main(["equiv", a, b, "--cert", str(cert)]) == 0
    capfd.readouterr()
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["model"]["head"] = "Softmax"
    report = check(doc)
    assert not report.valid and "for top-1 claims only, not for equivalent" in report.reason

"""Quantized weights (docs/FORMATS.md, "Quantized weights"): torch's quantized tensors and dynamic quantized Linear
state dicts read by both readers as the exact values scale·(q − z), which torch's own dequantize() rounds to
float32; static quantization (activations rounded to 8 bits) refused by both; the record's "quantized" bound."""

from __future__ import annotations

import copy
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import certsym
from certsym.errors import InputError
from certsym.io.quantized import dequantize, significant_bits
from certsym.io.torchfile import load_torch
from certsym_check.errors import Reject
from certsym_check.readers.torchzip import read_torch


def _quiet():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")
    return ctx


def _mlp(seed: int, m: int = 6, n: int = 10, k: int = 3) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(m, n), torch.nn.ReLU(), torch.nn.Linear(n, k))


def _dynamic(net: torch.nn.Module, dtype=torch.qint8) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=dtype)


def _save(obj, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(obj, path)
    return path


def _weights(sd: dict) -> dict:
    """The dequantized weights and biases of a dynamic quantized Sequential's state dict, as torch computes them."""
    out = {}
    for key, value in sd.items():
        if key.endswith("_packed_params._packed_params"):
            prefix = key[:-len("_packed_params._packed_params")]
            out[prefix + "weight"] = value[0].dequantize().numpy()
            out[prefix + "bias"] = value[1].detach().numpy()
    return out


def test_a_dynamic_quantized_state_dict_reads_as_its_exact_weights(tmp_path: Path) -> None:
    """Both readers map _packed_params to weight and bias; each weight is s·(q − z) exactly, and rounded to float32
    it is torch's own dequantize()."""
    sd = _dynamic(_mlp(0)).state_dict()
    path = _save(sd, tmp_path / "q.pt")
    ours = load_torch(path)
    theirs = read_torch(path.read_bytes())
    assert list(ours) == list(theirs) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for key, expected in _weights(sd).items():
        assert np.array_equal(ours[key].astype(expected.dtype), expected), key
        assert theirs[key].flat() == np.asarray(ours[key], dtype=np.float64).ravel().tolist(), key
    q = sd["0._packed_params._packed_params"][0]
    exact = (q.int_repr().numpy().astype(np.int64) - q.q_zero_point()) * q.q_scale()
    assert np.array_equal(ours["0.weight"], exact) and ours["0.weight"].scheme == "int8, per-tensor scale"
    assert theirs["0.weight"].quantized == "int8, per-tensor scale" and not theirs["0.bias"].quantized


@pytest.mark.parametrize("dtype,kind", [(torch.qint8, "int8"), (torch.quint8, "uint8")])
def test_quantized_tensors_per_tensor_and_per_channel(tmp_path: Path, dtype, kind: str) -> None:
    """torch.quantize_per_tensor and quantize_per_channel (float32 scales, any axis) read by both readers as torch
    dequantizes them (rounded to float32), the per-channel scheme named with its axis."""
    torch.manual_seed(1)
    w = torch.randn(7, 5)
    lo = -128 if kind == "int8" else 0
    scales = (torch.rand(5) * 0.02 + 0.001).double()  # float32 values, as torch's observers compute them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tensors = {"t": torch.quantize_per_tensor(w, float(np.float32(0.0173)), lo + 9, dtype),
                   "c": torch.quantize_per_channel(w, scales, torch.randint(lo, lo + 20, (5,)), 1, dtype)}
    path = _save(tensors, tmp_path / "t.pt")
    ours, theirs = load_torch(path), read_torch(path.read_bytes())
    for key, t in tensors.items():
        assert np.array_equal(ours[key].astype(np.float32), t.dequantize().numpy()), key
        assert theirs[key].flat() == ours[key].ravel().tolist()
    assert ours["c"].scheme == theirs["c"].quantized == f"{kind}, per-channel (axis 1) scale"


def test_static_quantization_is_refused_by_both_readers(tmp_path: Path) -> None:
    """A static quantized Linear rounds its outputs to 8 bits (its scale and zero point): not a ReLU network."""
    sd = _dynamic(_mlp(2)).state_dict()
    sd["0.scale"] = torch.tensor(0.05)
    sd["0.zero_point"] = torch.tensor(64)
    path = _save(sd, tmp_path / "static.pt")
    with pytest.raises(InputError, match="static quantized layer"):
        load_torch(path)
    with pytest.raises(Reject, match="static quantized layer"):
        read_torch(path.read_bytes())
    stub = _dynamic(_mlp(2)).state_dict()
    stub["quant.scale"], stub["quant.zero_point"] = torch.tensor(1.0), torch.tensor(0)
    path = _save(stub, tmp_path / "stub.pt")
    with pytest.raises(InputError, match="static quantized model"):
        load_torch(path)
    with pytest.raises(Reject, match="static quantized model"):
        read_torch(path.read_bytes())


def test_scales_torch_would_read_differently_are_refused_by_both(tmp_path: Path) -> None:
    """A per-channel scale of more than 44 significant bits (its products are not binary64 numbers), and a
    per-tensor scale that is not a float32 (torch dequantizes with it rounded to float32)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.randn(3, 2), 0.0173, 0, torch.qint8)
    path = _save({"w": q}, tmp_path / "t.pt")
    with pytest.raises(InputError, match="not a float32"):
        load_torch(path)
    with pytest.raises(Reject, match="not a float32"):
        read_torch(path.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_channel(torch.randn(3, 2), torch.tensor([0.1, 0.2, 0.3], dtype=torch.double),
                                       torch.zeros(3, dtype=torch.long), 0, torch.qint8)
    path = _save({"w": q}, tmp_path / "wide.pt")
    with pytest.raises(InputError, match="more than 44 significant bits"):
        load_torch(path)
    with pytest.raises(Reject, match="more than 44 significant bits"):
        read_torch(path.read_bytes())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-128, 127), min_size=1, max_size=12), st.floats(1e-6, 10.0),
       st.integers(-128, 127))
def test_dequantize_is_exact(qs: list[int], scale: float, zero: int) -> None:
    """s·(q − z) in binary64 equals the exact rational product, for a float32 scale (≤ 24 significant bits)."""
    from fractions import Fraction

    s = float(np.float32(scale))
    assert significant_bits(s) <= 24
    out = dequantize(np.array(qs, dtype=np.int8), s, zero, None, "int8", "t")
    assert [Fraction(x) for x in out.tolist()] == [Fraction(s) * (q - zero) for q in qs]


def test_an_int8_copy_is_compared_and_its_certificate_binds_the_file(tmp_path: Path) -> None:
    """An MLP against its dynamic int8 copy: a distance certificate replayed VALID with the files bound, saying the
    weights were dequantized; a record whose "quantized" is dropped or altered is refused."""
    net = _mlp(3)
    a = _save(net.state_dict(), tmp_path / "float.pt")
    b = _save(_dynamic(net).state_dict(), tmp_path / "int8.pt")
    d = certsym.distance(a, b, seconds=None, regions=20)
    assert 0 < d.lower <= d.upper
    doc = d.certificate()
    report = certsym.check(doc, inputs=[a, b])
    assert report, report.reason
    assert "dequantized weights, scale·(q − zero point): 0.weight (int8, per-tensor scale), 2.weight (int8, " \
        "per-tensor scale)" in str(report)
    assert "quantized weights (0.weight, 2.weight) read as the exact values" in str(certsym.equivalent(a, b))
    for edit in ({"0.weight": "int8, per-tensor scale"}, None):
        forged = copy.deepcopy(doc)
        if edit is None:
            del forged["inputs"][1]["model"]["quantized"]
        else:
            forged["inputs"][1]["model"]["quantized"] = edit
        assert not certsym.check(json.loads(json.dumps(forged)), inputs=[a, b])


def test_the_ball_and_batch_forms_on_an_mlp_and_its_fp16_and_int8_copies(tmp_path: Path) -> None:
    """certsym distance --points on an MLP against its float16 and int8 copies: each point answered, and one
    bundle (the --cert-dir folder) replayed VALID by one certsym check call with the files bound."""
    from certsym.cli import main

    net = _mlp(4, m=4, n=8, k=3)
    a = _save(net.state_dict(), tmp_path / "f32.pt")
    half = _save({k: v.half() for k, v in net.state_dict().items()}, tmp_path / "f16.pt")
    int8 = _save(_dynamic(net).state_dict(), tmp_path / "int8.pt")
    points = tmp_path / "x.npy"
    np.save(points, np.random.default_rng(0).uniform(0, 1, (3, 4)).astype(np.float32))
    for copy_path in (half, int8):
        bundle = tmp_path / f"certs_{copy_path.stem}"
        out = io.StringIO()
        from contextlib import redirect_stdout
        with redirect_stdout(out):
            code = main(["distance", str(a), str(copy_path), "--points", str(points), "--radius", "0.01",
                         "--top1", "--regions", "50", "--cert-dir", str(bundle)])
        summary = out.getvalue().splitlines()[-1]
        assert summary == "3 points, L∞ radius 0.01: 3 AGREE, 0 DIFFER, 0 UNKNOWN" and code == 0, out.getvalue()
        written = sorted(bundle.glob("*.json"))
        assert written
        with redirect_stdout(io.StringIO()) as replay:
            assert main(["check", str(bundle), "--inputs", str(a), str(copy_path)]) == 0, replay.getvalue()


# ---------------------------------------------------------------- ONNX DequantizeLinear


def _qdq_model(path: Path, *, opset: int = 17, activation: bool = False, quantize: bool = False) -> dict:
    """A 4-6-3 ReLU network whose weights are DequantizeLinear of int8 (per tensor) and uint8 (per axis 0)
    initializers, float32 biases; with ``activation`` the first layer's output is dequantized too (a QDQ pair on
    an activation), with ``quantize`` a QuantizeLinear node is added on it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    arrays = {"W1q": rng.integers(-128, 128, (6, 4)).astype(np.int8), "s1": np.array(0.0123, dtype=np.float32),
              "z1": np.array(3, dtype=np.int8), "W2q": rng.integers(0, 256, (3, 6)).astype(np.uint8),
              "s2": (rng.random(3) * 0.02 + 0.001).astype(np.float32), "z2": rng.integers(100, 150, 3).astype(np.uint8),
              "b1": rng.normal(size=6).astype(np.float32), "b2": rng.normal(size=3).astype(np.float32)}
    nodes = [helper.make_node("DequantizeLinear", ["W1q", "s1", "z1"], ["W1"]),
             helper.make_node("DequantizeLinear", ["W2q", "s2", "z2"], ["W2"], axis=0),
             helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r2" if activation or quantize else "r", "W2", "b2"], ["y"], transB=1)]
    if quantize:
        nodes += [helper.make_node("QuantizeLinear", ["r", "s1", "z1"], ["rq"]),
                  helper.make_node("DequantizeLinear", ["rq", "s1", "z1"], ["r2"])]
    elif activation:
        nodes.append(helper.make_node("DequantizeLinear", ["r", "s1"], ["r2"]))
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
                              [numpy_helper.from_array(a, name) for name, a in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return arrays


def _ort_dequantized(arrays: dict, q: str, s: str, z: str, axis: int) -> np.ndarray:
    """onnxruntime's own DequantizeLinear of those initializers."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("DequantizeLinear", [q, s, z], ["o"], axis=axis)], "d", [],
                              [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(arrays[n], n) for n in (q, s, z)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString()).run(None, {})[0]


def test_an_onnx_qdq_model_reads_as_the_weights_onnxruntime_dequantizes(tmp_path: Path) -> None:
    """Both readers read DequantizeLinear weights as the float32 values onnxruntime's operator outputs (per tensor
    and per axis, int8 and uint8), the network computes what onnxruntime computes, and a certificate binds the file
    with its "quantized" record; the record altered is refused."""
    import onnxruntime as ort

    from certsym.io.onnxfile import read_onnx_chain
    from certsym_check.readers.onnx import read_onnx

    path = tmp_path / "qdq.onnx"
    arrays = _qdq_model(path)
    ours, theirs = read_onnx_chain(path), read_onnx(path.read_bytes())
    for ell, (q, s, z, axis) in enumerate((("W1q", "s1", "z1", 1), ("W2q", "s2", "z2", 0))):
        expected = _ort_dequantized(arrays, q, s, z, axis)
        assert np.array_equal(ours.layers[ell][0], expected)
        assert theirs.tensors[2 * ell].flat() == expected.astype(np.float64).ravel().tolist()
    assert ours.quantized == {"W1": "int8, per-tensor scale, the operator's float32 output",
                              "W2": "uint8, per-axis (axis 0) scale, the operator's float32 output"}
    x = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    h = np.maximum(x.astype(np.float64) @ ours.layers[0][0].T.astype(np.float64) + ours.layers[0][1], 0)
    y = h @ ours.layers[1][0].T.astype(np.float64) + ours.layers[1][1]
    np.testing.assert_allclose(ort.InferenceSession(str(path)).run(None, {"x": x})[0], y, rtol=1e-5, atol=1e-5)
    d = certsym.distance(path, path, regions=2)
    doc = d.certificate()
    report = certsym.check(doc, inputs=[path, path])
    assert report and "W2 (uint8, per-axis (axis 0) scale, the operator's float32 output)" in str(report)
    forged = copy.deepcopy(doc)
    forged["inputs"][0]["model"]["quantized"]["W1"] = "uint8, per-tensor scale, the operator's float32 output"
    assert not certsym.check(forged, inputs=[path, path])


@pytest.mark.parametrize("form,words", [("activation", "not an initializer"), ("quantize", "QuantizeLinear")])
def test_activation_quantization_in_onnx_is_refused_by_both(tmp_path: Path, form: str, words: str) -> None:
    from certsym.io.onnxfile import read_onnx_chain
    from certsym_check.readers.onnx import read_onnx

    path = tmp_path / f"{form}.onnx"
    _qdq_model(path, **{form: True})
    with pytest.raises(InputError, match=words):
        read_onnx_chain(path)
    with pytest.raises(Reject, match="activation quantization|QuantizeLinear"):
        read_onnx(path.read_bytes())


def test_per_axis_dequantization_needs_opset_13_in_both(tmp_path: Path) -> None:
    from certsym.io.onnxfile import read_onnx_chain
    from certsym_check.readers.onnx import read_onnx

    path = tmp_path / "old.onnx"
    _qdq_model(path, opset=12)
    with pytest.raises(InputError, match="opset 13"):
        read_onnx_chain(path)
    with pytest.raises(Reject, match="axis from 13"):
        read_onnx(path.read_bytes())


def test_the_batch_form_in_python_on_the_int8_copy(tmp_path: Path) -> None:
    """certsym.points: the same question per point from Python (points as a float32 array), certificates replayed
    VALID with the files bound, and the same answers as the CLI's --points."""
    net = _mlp(4, m=4, n=8, k=3)
    a = _save(net.state_dict(), tmp_path / "f32.pt")
    int8 = _save(_dynamic(net).state_dict(), tmp_path / "int8.pt")
    X = np.random.default_rng(0).uniform(0, 1, (3, 4)).astype(np.float32)
    r = certsym.points(a, int8, X, 0.01, clip=(0, 1), top1=True, regions=50, certificates=True)
    assert r and r.summary("0.01") == "3 points, L∞ radius 0.01: 3 AGREE, 0 DIFFER, 0 UNKNOWN"
    assert all(a_.certificate is not None and certsym.check(a_.certificate, inputs=[a, int8]) for a_ in r.answers)
    eps = certsym.points(a, int8, X[0], 0.01, epsilon="1e-9", regions=20)  # one point: a copy 10^-3 away
    assert not eps and eps.counts() == {"holds": 0, "fails": 1, "unknown": 0} and eps.answers[0].word == "VIOLATED"

"""Red team round 8: ONNX Softmax/LogSoftmax heads and deep top-1 by symbolic margins."""

from __future__ import annotations

import copy
import itertools
import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym_check import check
from certsym_check.budget import metered
from certsym_check.errors import Reject
from certsym_check.kinds import symbolic
from certsym_check.readers.onnx import read_onnx as checker_read_onnx


def _weights(widths: list[int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a, b in itertools.pairwise(widths):
        out.append((np.round(rng.standard_normal((b, a)) * 64) / 64).astype(np.float32))
        out.append((np.round(rng.standard_normal((b,)) * 64) / 64).astype(np.float32))
    return out


def _headed(path: Path, ws: list[np.ndarray], head: str = "Softmax", opset: int = 13, axis: int | None = None,
            xshape: list | None = None, gemm: bool = True) -> str:
    nodes, inits, cur = [], [], "x"
    layers = len(ws) // 2
    for ell in range(layers):
        W, b = ws[2 * ell], ws[2 * ell + 1]
        if gemm:
            nodes.append(helper.make_node("Gemm", [cur, f"W{ell}", f"b{ell}"], [f"z{ell}"], transB=1))
            inits.append(numpy_helper.from_array(W, f"W{ell}"))
        else:
            nodes.append(helper.make_node("MatMul", [cur, f"W{ell}"], [f"p{ell}"]))
            nodes.append(helper.make_node("Add", [f"p{ell}", f"b{ell}"], [f"z{ell}"]))
            inits.append(numpy_helper.from_array(np.ascontiguousarray(W.T), f"W{ell}"))
        inits.append(numpy_helper.from_array(b, f"b{ell}"))
        cur = f"z{ell}"
        if ell < layers - 1:
            nodes.append(helper.make_node("Relu", [cur], [f"r{ell}"]))
            cur = f"r{ell}"
    nodes.append(helper.make_node(head, [cur], ["y"], **({} if axis is None else {"axis": axis})))
    m = ws[0].shape[1]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape or [1, m])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return str(path)


def _npz(path: Path, ws: list[np.ndarray]) -> str:
    np.savez(path, **{f"{2 * ell}.{part}": ws[2 * ell + j] for ell in range(len(ws) // 2)
                      for j, part in enumerate(("weight", "bias"))})
    return str(path)


def test_no_view_of_a_headed_model_answers_a_value_question(tmp_path: Path) -> None:
    """The hole round 8 found (a public ``Model.logits()`` view made certsym.equivalent answer about a
    Softmax-headed file) is closed: a loaded headed model refuses every value question; only its explicit
    ``logits_network()``, a network object without the file's record, can be compared, and then the verdict and its
    certificate are about that network, not the file."""
    ws = _weights([3, 6, 4])
    headed, logits = _headed(tmp_path / "h.onnx", ws), _npz(tmp_path / "l.npz", ws)
    model = certsym.load(headed)
    assert not hasattr(model, "logits")
    for question in (certsym.equivalent, certsym.distance):
        with pytest.raises(InputError, match="ends in a Softmax"):
            question(model, logits)
    net = model.logits_network()
    verdict = certsym.equivalent([np.asarray(ws[0]), ws[1], ws[2], ws[3]], logits)
    assert verdict and net.n == 6
    assert "head" not in json.dumps(verdict.certificate()["inputs"][0])


@pytest.mark.parametrize("widths, other_shift", [([3, 6, 4], 0.0), ([3, 5, 5, 4], 0.015625)])
def test_head_records_that_differ_from_the_file_are_refused(tmp_path: Path, widths: list[int],
                                                            other_shift: float) -> None:
    ws = _weights(widths, 1)
    other = [w.copy() for w in ws]
    other[-1] = other[-1] + np.float32(other_shift)
    headed, logits = _headed(tmp_path / "h.onnx", ws), _npz(tmp_path / "l.npz", other)
    cert = certsym.top1(certsym.load(headed), logits, box=[(0, 0.125)] * 3).certificate()
    if len(widths) > 3:
        assert cert["proof"]["statement"] == "halvings of the box and symbolic margins"
    assert check(cert, [headed, logits]).valid
    for mutation in ("LogSoftmax", None, "softmax", "drop"):
        doc = copy.deepcopy(cert)
        if mutation == "drop":
            doc["inputs"][0]["model"].pop("head")
        else:
            doc["inputs"][0]["model"]["head"] = mutation
        report = check(doc, [headed, logits])
        assert not report.valid and report.reason


@pytest.mark.parametrize("command", [["eval", "H", "--at", "0,0,0"], ["minimal", "H"], ["canon", "H"],
                                     ["equiv", "L", "H"], ["distance", "H", "L"],
                                     ["distance", "H", "L", "--epsilon", "1"], ["stabilizer", "H"], ["affine", "H"],
                                     ["identifiable", "H"], ["counterexample", "H"], ["fibre", "H"],
                                     ["perturb", "H", "--eps", "0.1"]])
@pytest.mark.parametrize("head", ["Softmax", "LogSoftmax"])
def test_every_value_command_refuses_a_headed_file(tmp_path: Path, capfd, command: list[str], head: str) -> None:
    ws = _weights([3, 6, 4])
    files = {"H": _headed(tmp_path / "h.onnx", ws, head), "L": _npz(tmp_path / "l.npz", ws)}
    assert main([files.get(a, a) for a in command]) == 2
    err = capfd.readouterr().err
    assert f"ends in a {head}" in err and err.count("\n") == 1


def test_opset_11_default_axis_on_rank_3_logits_is_refused_and_last_axis_agrees_with_onnxruntime(
        tmp_path: Path) -> None:
    """Before opset 13 the default axis 1 coerces [1, 2, k] to [1, 2k]: not the last axis, both readers refuse;
    an explicit axis -1 (coerced to [2, k]) is the last-axis softmax, as onnxruntime computes."""
    ws = _weights([3, 5, 4], 2)
    bad = _headed(tmp_path / "bad.onnx", ws, opset=11, xshape=[1, 2, 3], gemm=False)
    with pytest.raises(InputError):
        read_onnx_chain(bad)
    with pytest.raises(Reject):
        checker_read_onnx(Path(bad).read_bytes())
    good = _headed(tmp_path / "good.onnx", ws, opset=11, axis=-1, xshape=[1, 2, 3], gemm=False)
    assert read_onnx_chain(good).head == "Softmax" and checker_read_onnx(Path(good).read_bytes()).head == "Softmax"
    x = np.random.default_rng(0).standard_normal((1, 2, 3)).astype(np.float32)
    y = ort.InferenceSession(good, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    z = np.maximum(x @ ws[0].T + ws[1], 0) @ ws[2].T + ws[3]
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    assert np.allclose(y, e / e.sum(axis=-1, keepdims=True), atol=1e-5)


def _evaluate(W: list, b: list, x: list) -> list:
    h = x
    for ell, (Wl, bl) in enumerate(zip(W, b, strict=True)):
        a = [sum(w * v for w, v in zip(row, h, strict=True)) + c for row, c in zip(Wl, bl, strict=True)]
        h = a if ell == len(W) - 1 else [max(v, 0) for v in a]
    return h


def test_symbolic_margins_never_lead_where_another_output_ties_or_wins() -> None:
    """Random small networks with weights near the 2^-64 grid, huge ones, boxes off the grid and degenerate
    coordinates: wherever ``symbolic.leads`` says class c leads, c is the unique largest output at every corner and
    at sampled points."""
    r = random.Random(8)
    leading = 0
    for _ in range(400):
        m = r.randint(1, 3)
        widths = [m] + [r.randint(1, 3) for _ in range(r.randint(1, 3))] + [r.randint(2, 3)]
        scale = r.choice([[0], [-70, -66, -64], [30, 40], [-3, 0, 3], [-64, 0]])

        def num(scale: list = scale) -> Fraction:
            tiny = Fraction(r.randint(-3, 3), 2 ** 80) if r.random() < 0.3 else 0
            return Fraction(r.randint(-9, 9)) * Fraction(2) ** r.choice(scale) + tiny

        W = [[[num() for _ in range(a)] for _ in range(b)] for a, b in itertools.pairwise(widths)]
        b = [[num() for _ in range(n)] for n in widths[1:]]
        box = []
        for _ in range(m):
            lo = Fraction(r.randint(-8, 8), r.choice([1, 3, 2 ** 70]))
            box.append((lo, lo + r.choice([0, Fraction(1, 2 ** 70), Fraction(1, 3), 1])))
        for c in range(widths[-1]):
            with metered():
                if not symbolic.leads(W, b, box, c):
                    continue
            leading += 1
            points = [list(p) for p in itertools.product(*box)]
            points += [[lo + (hi - lo) * Fraction(r.randint(0, 16), 16) for lo, hi in box] for _ in range(8)]
            for x in points:
                y = _evaluate(W, b, x)
                assert all(y[j] < y[c] for j in range(len(y)) if j != c), (widths, box, c, x)
    assert leading > 50

"""Red team, round six: ONNX MatMul(W, x) with the weight first (both readers) and the VNN-LIB input-region reader.

Holes found, each fixed and kept as a regression test:

- VNN-LIB: the reader walks the S-expression recursively (``_mentions_output``, ``_dnf``, ``_text``), so a
  property nested a thousand deep (a 10 KB file) raises RecursionError instead of InputError or its box.
- VNN-LIB: ``and`` builds the product of its running disjuncts and the next part before comparing the count with
  MAX_BOXES: two conjuncts of 512 disjuncts each (a 500-byte file) build 262,144 conjunctions (tens of MB) before
  the refusal; at 2^12 each it is 16.7 million (gigabytes, tens of seconds).
- VNN-LIB: a variable is read by the digits after ``X_``, so ``X_01`` and ``X_١`` (an Arabic-Indic digit, which
  ``\\d`` matches) are read as the input X_1, though SMT-LIB names them as other constants: their bounds narrow X_1.
- ONNX (not new in this change): a graph input declared [N, 2] (first dimension unknown) followed by
  Reshape(x, [0, 3]), which fits no non-empty input, is accepted by the producer and refused by the checker: the
  producer checks a Reshape [0, m] only when every declared dimension is known.

The rest guard what held: weight-first MatMul read as W x + b only of a value declared 1-D, refused by both readers
of a column, an undeclared shape, a value made 2-D before, a non-initializer weight, and a MatMul of the value with
itself; VNN-LIB boxes equal to the stated region on random and/or formulas.
"""

from __future__ import annotations

import itertools
import random
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from flint import fmpq
from onnx import TensorProto, helper, numpy_helper

from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym.io.vnnlib import MAX_BOXES, input_boxes
from certsym_check.errors import Reject
from certsym_check.readers.onnx import read_onnx as checker_read_onnx

W1 = np.array([[1, 2, 0], [0, 1, -1], [1, 1, 1]], np.float32)
B1 = np.array([0.5, -0.5, 1], np.float32)
W2 = np.array([[1, -1, 0.5], [0.25, 0, 2]], np.float32)
B2 = np.array([-1, 0.75], np.float32)


# -- ONNX helpers ----------------------------------------------------------------------------------------------


def _save(path: Path, nodes, inits, x_shape, value_info=(), opset: int = 14) -> Path:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
                              value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save_model(model, str(path))
    return path


def _inits(*pairs) -> list:
    return [numpy_helper.from_array(a, name) for name, a in pairs]


def _tail() -> list:
    """h → Relu → MatMul(W2, ·) + B2 → y."""
    return [helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["W2", "r"], ["t2"]),
            helper.make_node("Add", ["t2", "B2"], ["y"])]


def _weight_first(path: Path, x_shape, pre=(), value: str = "x", opset: int = 14) -> Path:
    nodes = [*pre, helper.make_node("MatMul", ["W1", value], ["t"]), helper.make_node("Add", ["B1", "t"], ["h"]),
             *_tail()]
    return _save(path, nodes, _inits(("W1", W1), ("B1", B1), ("W2", W2), ("B2", B2)), x_shape, opset=opset)


def _both(path: Path) -> tuple[object, object]:
    """(producer's Chain or 'refused', checker's Chain or 'refused'); any other exception propagates."""
    try:
        produced: object = read_onnx_chain(path)
    except InputError:
        produced = "refused"
    try:
        checked: object = checker_read_onnx(path.read_bytes())
    except Reject:
        checked = "refused"
    return produced, checked


def _forward(x: np.ndarray) -> np.ndarray:
    h = np.maximum(W1.astype(np.float64) @ x + B1, 0)
    return W2.astype(np.float64) @ h + B2


# -- ONNX: weight first ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("x_shape", [[3], ["N"], [None]])
@pytest.mark.parametrize("opset", [7, 13, 17])
def test_weight_first_of_a_declared_1d_input_is_w_x_plus_b_in_both_readers(tmp_path: Path, x_shape, opset) -> None:
    path = _weight_first(tmp_path / "m.onnx", x_shape, opset=opset)
    produced, checked = _both(path)
    assert produced != "refused" and checked != "refused"
    assert [(W.shape, b.shape) for W, b in produced.layers] == [((3, 3), (3,)), ((2, 3), (2,))]
    for (W, b), (V, c) in zip(produced.layers, [(W1, B1), (W2, B2)], strict=True):
        assert np.array_equal(W, V) and np.array_equal(b, c)
    assert [t.shape for t in checked.tensors] == [(3, 3), (3,), (2, 3), (2,)]
    assert checked.names == produced.names == ["W1", "B1", "W2", "B2"]


def test_weight_first_matches_onnxruntime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = _weight_first(tmp_path / "m.onnx", ["N"])
    chain = read_onnx_chain(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(6)
    for _ in range(20):
        x = rng.standard_normal(3).astype(np.float32)
        h = x.astype(np.float64)
        for ell, (W, b) in enumerate(chain.layers):
            h = W.astype(np.float64) @ h + b
            h = np.maximum(h, 0) if ell == 0 else h
        np.testing.assert_allclose(session.run(None, {"x": x})[0], h, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(h, _forward(x), rtol=1e-12)


def test_a_shared_weight_first_weight_is_read_in_both_layers(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["W1", "x"], ["t"]), helper.make_node("Add", ["t", "B1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["W1", "r"], ["t2"]),
             helper.make_node("Add", ["t2", "B2"], ["y"])]
    path = _save(tmp_path / "m.onnx", nodes, _inits(("W1", W1), ("B1", B1), ("B2", B1.copy())), [3])
    produced, checked = _both(path)
    assert produced != "refused" and checked != "refused"
    assert all(np.array_equal(W, W1) for W, _ in produced.layers)
    assert checked.names == ["W1", "B1", "W1", "B2"]


@pytest.mark.parametrize("case", ["column", "row", "undeclared", "scalar", "flatten", "reshape", "identity_column",
                                  "gemm_before", "rank3"])
def test_weight_first_of_a_value_not_known_1d_is_refused_by_both(tmp_path: Path, case: str) -> None:
    shapes = {"column": [3, 1], "row": [1, 3], "undeclared": None, "scalar": [], "flatten": [3],
              "reshape": ["N"], "identity_column": [3, 1], "gemm_before": [1, 3], "rank3": [1, 1, 3]}
    path = tmp_path / "m.onnx"
    if case == "flatten":
        _weight_first(path, [1], pre=[helper.make_node("Flatten", ["x"], ["f"], axis=1)], value="f")
    elif case == "reshape":
        pre = [helper.make_node("Reshape", ["x", "s"], ["f"])]
        nodes = [*pre, helper.make_node("MatMul", ["W1", "f"], ["t"]), helper.make_node("Add", ["B1", "t"], ["h"]),
                 *_tail()]
        _save(path, nodes, _inits(("s", np.array([-1, 3], np.int64)), ("W1", W1), ("B1", B1), ("W2", W2),
                                  ("B2", B2)), ["N"])
    elif case == "identity_column":
        _weight_first(path, [3, 1], pre=[helper.make_node("Identity", ["x"], ["i"])], value="i")
    elif case == "gemm_before":
        nodes = [helper.make_node("Gemm", ["x", "W1", "B1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("MatMul", ["W2", "r"], ["t2"]), helper.make_node("Add", ["t2", "B2"], ["y"])]
        _save(path, nodes, _inits(("W1", W1), ("B1", B1), ("W2", W2), ("B2", B2)), [1, 3])
    else:
        _weight_first(path, shapes[case])
    assert _both(path) == ("refused", "refused")


@pytest.mark.parametrize("case", ["value_twice", "weight_twice", "weight_is_a_node_output", "weight_is_x"])
def test_weight_first_matmuls_that_are_not_a_layer_are_refused_by_both(tmp_path: Path, case: str) -> None:
    inits = _inits(("W1", W1), ("B1", B1), ("W2", W2), ("B2", B2))
    first = {"value_twice": ["x", "x"], "weight_twice": ["W1", "W1"], "weight_is_a_node_output": ["c", "x"],
             "weight_is_x": ["x", "W1"]}[case]
    nodes = [helper.make_node("MatMul", first, ["t"]), helper.make_node("Add", ["t", "B1"], ["h"]), *_tail()]
    if case == "weight_is_a_node_output":
        nodes.insert(0, helper.make_node("Identity", ["W1"], ["c"]))
    if case == "weight_twice":
        inits.append(numpy_helper.from_array(np.zeros(3, np.float32), "unused"))
    if case == "weight_is_x":  # x first, W1 (3, 3) then read transposed: a layer, but of Wᵀ; check both agree
        path = _save(tmp_path / "m.onnx", nodes, inits, [3])
        produced, checked = _both(path)
        assert produced != "refused" and checked != "refused"
        assert np.array_equal(produced.layers[0][0], W1.T)
        return
    path = _save(tmp_path / "m.onnx", nodes, inits, [3])
    assert _both(path) == ("refused", "refused")


def test_a_second_weight_first_layer_after_a_1d_first_layer_is_read_by_both(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["x", "W1t"], ["t"]), helper.make_node("Add", ["t", "B1"], ["h"]), *_tail()]
    path = _save(tmp_path / "m.onnx", nodes, _inits(("W1t", W1.T.copy()), ("B1", B1), ("W2", W2), ("B2", B2)), [3])
    produced, checked = _both(path)
    assert produced != "refused" and checked != "refused"
    assert np.array_equal(produced.layers[0][0], W1) and np.array_equal(produced.layers[1][0], W2)


@pytest.mark.parametrize("case", ["gemm_row", "flatten_1", "reshape_batch"])
def test_weight_first_after_a_2d_value_in_a_later_layer_is_refused_by_both(tmp_path: Path, case: str) -> None:
    """The first layer makes a 2-D value (Gemm of [1, 3], or x made [b, 3] before a row-first MatMul); a second,
    weight-first layer would then broadcast its bias."""
    inits = _inits(("W1t", W1.T.copy()), ("B1", B1), ("W2", W2), ("B2", B2))
    if case == "gemm_row":
        nodes = [helper.make_node("Gemm", ["x", "W1t", "B1"], ["h"]), *_tail()]
        x_shape = [1, 3]
    elif case == "flatten_1":
        nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=1), helper.make_node("MatMul", ["f", "W1t"], ["t"]),
                 helper.make_node("Add", ["t", "B1"], ["h"]), *_tail()]
        x_shape = [1, 3]
    else:
        inits.append(numpy_helper.from_array(np.array([-1, 3], np.int64), "s"))
        nodes = [helper.make_node("Reshape", ["x", "s"], ["f"]), helper.make_node("MatMul", ["f", "W1t"], ["t"]),
                 helper.make_node("Add", ["t", "B1"], ["h"]), *_tail()]
        x_shape = [3]
    path = _save(tmp_path / "m.onnx", nodes, inits, x_shape)
    assert _both(path) == ("refused", "refused")


def test_reshape_keep_batch_that_fits_no_input_is_judged_alike_by_both(tmp_path: Path) -> None:
    """[N, 2] reshaped to [N, 3] fits only N = 0 (onnxruntime fails on any other input)."""
    inits = _inits(("s", np.array([0, 3], np.int64)), ("W1t", W1.T.copy()), ("B1", B1), ("W2t", W2.T.copy()),
                   ("B2", B2))
    nodes = [helper.make_node("Reshape", ["x", "s"], ["f"]), helper.make_node("MatMul", ["f", "W1t"], ["t"]),
             helper.make_node("Add", ["t", "B1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2t", "B2"], ["y"])]
    path = _save(tmp_path / "m.onnx", nodes, inits, ["N", 2])
    produced, checked = _both(path)
    assert checked == "refused"
    assert produced == "refused"


# -- VNN-LIB --------------------------------------------------------------------------------------------------

_BOUNDS = "(declare-const X_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n"


@pytest.mark.parametrize("head", ["and", "or"])
def test_deeply_nested_connectives_give_the_box_or_an_input_error(head: str) -> None:
    depth = 3000
    text = _BOUNDS + "(assert " + f"({head} " * depth + "(<= X_0 0.5)" + ")" * depth + ")"
    try:
        prop = input_boxes(text, 1)
    except InputError:
        return
    assert prop.boxes == [[(fmpq(0), fmpq(1, 2))]]


def _disjuncts(k: int) -> str:
    """An 'and' of k binary 'or's: 2^k disjuncts in ~27 k characters."""
    return "(and " + " ".join("(or (<= X_0 1) (<= X_0 2))" for _ in range(k)) + ")"


def test_a_product_beyond_max_boxes_is_refused_before_it_is_built() -> None:
    k = 9  # 512 disjuncts each, below MAX_BOXES; their product, 262,144, is above
    assert 2 ** k <= MAX_BOXES < 4 ** k
    text = "(assert (>= X_0 0))\n" + f"(assert {_disjuncts(k)})\n" * 2
    assert len(text) < 1000
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="disjuncts"):
            input_boxes(text, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak} bytes to refuse a {len(text)}-byte property"


def test_a_wide_disjunction_beyond_max_boxes_is_refused() -> None:
    text = _BOUNDS + "(assert (or " + " ".join("(<= X_0 1)" for _ in range(MAX_BOXES + 1)) + "))"
    with pytest.raises(InputError, match="disjuncts"):
        input_boxes(text, 1)
    text = "(assert (>= X_0 0))\n" + f"(assert {_disjuncts(13)})"  # 8192 > MAX_BOXES inside one 'and'
    with pytest.raises(InputError, match="disjuncts"):
        input_boxes(text, 1)


def test_a_variable_with_a_leading_zero_is_not_input_one() -> None:
    text = ("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const X_01 Real)\n"
            "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
            "(assert (<= X_01 0.5))\n")
    try:
        prop = input_boxes(text, 2)
    except InputError:
        return
    assert prop.boxes == [[(fmpq(0), fmpq(1)), (fmpq(0), fmpq(1))]]


def test_a_variable_with_a_non_ascii_digit_is_not_input_one() -> None:
    text = ("(declare-const X_0 Real)\n(declare-const X_1 Real)\n"
            "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_\u0661 1))\n")
    with pytest.raises(InputError):
        input_boxes(text, 2)


@pytest.mark.parametrize(("atom", "box"), [
    ("(<= 0.25 X_0)", (fmpq(1, 4), fmpq(1))), ("(>= 0.25 X_0)", (fmpq(0), fmpq(1, 4))),
    ("(>= X_0 (- -0.25))", (fmpq(1, 4), fmpq(1))), ("(<= (- 0.5) X_0)", (fmpq(0), fmpq(1))),
    ("(<= X_0 (- 1 0.75))", (fmpq(0), fmpq(1, 4))), ("(<= X_0 3e-1)", (fmpq(0), fmpq(3, 10))),
    ("(<= X_0 (- (- 0.5)))", (fmpq(0), fmpq(1, 2))), ("(<= (* -2 X_0) -0.5)", (fmpq(1, 4), fmpq(1))),
])
def test_constants_on_either_side_and_negation_give_the_stated_bound(atom: str, box) -> None:
    assert input_boxes(_BOUNDS + f"(assert {atom})", 1).boxes == [[box]]


@pytest.mark.parametrize("atom", ["(< X_0 0.5)", "(> X_0 0.5)", "(< 0.5 X_0)", "(> 0.5 X_0)",
                                  "(or (<= X_0 0.5) (< X_0 0.7))", "(<= X_0 X_0)", "(<= 1 2)", "(= X_0 0.5)",
                                  "(not (<= X_0 0.5))", "(<= X_0 1/3)", "(<= (* X_0 X_0) 1)"])
def test_strict_and_malformed_input_atoms_are_refused(atom: str) -> None:
    with pytest.raises(InputError):
        input_boxes(_BOUNDS + f"(assert {atom})", 1)


_VALUES = [fmpq(k, 4) for k in range(-2, 7)]


def _atom(rng: random.Random):
    i, c, op = rng.randrange(2), rng.choice(_VALUES), rng.choice(["<=", ">="])
    text = str(c.p) if c.q == 1 else str(float(c))
    if c < 0 and rng.random() < 0.5:
        text = f"(- {str(-c.p) if c.q == 1 else str(float(-c))})"
    holds = (lambda x: x[i] <= c) if op == "<=" else (lambda x: x[i] >= c)
    if rng.random() < 0.5:
        return f"({op} X_{i} {text})", holds
    return f"({'>=' if op == '<=' else '<='} {text} X_{i})", holds


def _formula(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.3:
        return _atom(rng)
    head = rng.choice(["and", "or"])
    kids = [_formula(rng, depth - 1) for _ in range(rng.randrange(1, 4))]
    text = f"({head} " + " ".join(t for t, _ in kids) + ")"
    if head == "and":
        return text, lambda x: all(f(x) for _, f in kids)
    return text, lambda x: any(f(x) for _, f in kids)


def test_random_and_or_regions_are_the_union_of_the_boxes() -> None:
    grid = [fmpq(k, 8) for k in range(-12, 24)]
    read = 0
    for seed in range(300):
        rng = random.Random(seed)
        forms = [("(>= X_0 -1)", lambda x: x[0] >= -1), ("(<= X_0 2)", lambda x: x[0] <= 2),
                 ("(>= X_1 -1)", lambda x: x[1] >= -1), ("(<= X_1 2)", lambda x: x[1] <= 2)]
        forms += [_formula(rng, 3) for _ in range(rng.randrange(1, 3))]
        rng.shuffle(forms)
        text = "(declare-const X_0 Real)\n(declare-const X_1 Real)\n" + "\n".join(f"(assert {t})" for t, _ in forms)
        try:
            prop = input_boxes(text, 2)
        except InputError:
            continue
        read += 1
        for x in itertools.product(grid, grid):
            stated = all(f(x) for _, f in forms)
            boxed = any(all(lo <= x[q] <= hi for q, (lo, hi) in enumerate(box)) for box in prop.boxes)
            assert stated == boxed, (text, x)
    assert read > 100

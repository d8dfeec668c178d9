"""Red team round 13: the stated activation (``activation='relu'`` / ``--activation relu``), config.json's activation,
``certsym report``, the near-miss words (``certsym.decide.nearmiss.changes``), ``str()`` of a verdict with its
default witness box, and ``seconds=``.

Holes found, each closed and kept as a regression test asserting the behaviour of the fix:
- arrays of np.longdouble given to the Python API are rounded to binary64 as they are read
  (``certsym.io.models.exact``): two networks that differ are EQUIVALENT, with a certificate the checker finds VALID
  and a distance of 0;
- ``changes`` compares int64 weights as floats: a weight changed beyond 2^53 is "the same", and the words claim a
  pruned copy;
- ``equivalent(..., seconds=10**400)`` raises OverflowError, not InputError;
- ``str()`` of a NOT EQUIVALENT verdict whose exact outputs lie beyond binary64's range raises OverflowError (one
  hidden layer and deep); ``certsym equiv`` prints an internal error;
- ``certsym equiv --box`` with an end beyond binary64's range: an internal error (OverflowError);
- one hidden layer beyond 200,000 weights: the witness lies outside [0, 1]^m, a point inside it differs, and the
  verdict says nothing about the box;
- deep networks: the witness is neither sought in [0, 1]^m or in ``--box`` nor said to lie outside it (``--box`` is
  silently ignored);
- ``activation='relu'`` with ``keys=``: the reading drops the words FORMATS.md says every verdict carries about the
  chain the keys read (the file holds no wiring);
- ``certsym.load(model, activation='gelu')`` returns the model without checking the value;
- config.json nested deeply: RecursionError in the producer (an internal error) and in the checker (a traceback from
  ``certsym check --inputs DIR``);
- ``certsym report``: certificates of an earlier page stay in ``<stem>_certificates/`` (the page's replay command then
  fails); ``-o`` naming an input file overwrites it (the linked certificates no longer replay); the replay command on
  the page is neither shell-quoted nor correct when the page is written in another folder; a page name such as
  ``javascript:….html`` makes every link on the page a javascript: URL; a verdict card (a deep top-1 AGREE) shown
  without its certificate and without saying so; ``--epsilon 1e400`` an internal error; a VIOLATED card showing
  ``[0.01, 0.01]`` against ε = 0.01; the time budget does not reach the equivalence decision.
Everything else here was handled and is kept as a regression.
"""

from __future__ import annotations

import contextlib
import copy
import html
import io
import json
import re
import shlex
import sys
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import certsym
from certsym.cli import main
from certsym.decide.deadline import Deadline
from certsym.decide.nearmiss import changes
from certsym.errors import InputError
from certsym_check import check
from certsym_check.errors import Reject
from certsym_check.inputs import model_directory_file
from certsym_check.main import main as checker_main

STATED = "relu, stated by the user: the file holds no activation"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def no_figure(monkeypatch):
    """The report without its figure (matplotlib unimportable): the page, cards and certificates are the same."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def _shallow(seed: int = 0, m: int = 3, n: int = 4, k: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32), np.zeros(k, np.float32)]


def _npz(path: Path, arrays: list[np.ndarray]) -> Path:
    np.savez(path, **dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"), arrays, strict=True)))
    return path


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """A float32 network and the same with its first layer rounded to float16."""
    arrays = _shallow()
    rounded = [arrays[0].astype(np.float16).astype(np.float32), *arrays[1:]]
    return _npz(tmp_path / "a.npz", arrays), _npz(tmp_path / "b.npz", rounded)


def _deep_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two 2-2-2-1 networks equal on [0, 1]^2 (the neuron relu(x1 + x2 − 3) is 0 there) and different outside it."""
    f = np.float32
    a = {"0.weight": np.array([[1, 1], [1, -1]], f), "0.bias": np.array([-3, 0], f), "2.weight": np.eye(2, dtype=f),
         "2.bias": np.zeros(2, f), "4.weight": np.array([[1, 1]], f), "4.bias": np.array([0], f)}
    b = dict(a, **{"4.weight": np.array([[2, 1]], f)})
    np.savez(tmp_path / "da.npz", **a)
    np.savez(tmp_path / "db.npz", **b)
    return tmp_path / "da.npz", tmp_path / "db.npz"


def _page_command(page: Path) -> str:
    found = re.search(r"<code>([^<]*)</code>", page.read_text(encoding="utf-8"))
    assert found, "the page names no replay command"
    return html.unescape(found.group(1))


# ----------------------------------------------------------------------------------------- exactness of arrays


def test_longdouble_arrays_are_read_exactly_or_refused() -> None:
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("np.longdouble is binary64 on this platform")
    theta = [a.astype(np.longdouble) for a in _shallow()]
    other = [a.copy() for a in theta]
    other[0][0, 0] += np.longdouble(2) ** -60  # a different weight, the same after rounding to binary64
    assert other[0][0, 0] != theta[0][0, 0]
    try:
        verdict = certsym.equivalent(theta, other)
    except InputError:
        return  # refused: fine
    assert verdict.status == "not_equivalent"


def test_changes_does_not_call_a_changed_int64_weight_the_same() -> None:
    theta1 = [np.array([[2**53 + 1, 3]], np.int64), np.array([1], np.int64), np.array([[1]], np.int64),
              np.array([0], np.int64)]
    theta2 = [np.array([[2**53, 0]], np.int64), *theta1[1:]]  # one weight set to 0, another changed
    assert not any("every other weight the same" in line for line in changes(theta1, theta2))


def test_changes_names_only_edits_that_happened() -> None:
    """Regression: float arrays, NaN, shapes that differ, a rounding of only some tensors."""
    theta = [np.array([[0.1, 0.2], [0.3, -0.7]]), np.array([0.5, -0.25]), np.array([[1.5, -2.0]]), np.array([0.1])]
    pruned = [theta[0].copy(), *theta[1:]]
    pruned[0][0, 1] = 0
    assert changes(theta, pruned) == ["θ2 is θ1 with 1 weight set to 0 and every other weight the same (a pruned copy)"]
    pruned[1] = theta[1] + 1e-9
    assert changes(theta, pruned) == []
    half = [a.astype(np.float16).astype(np.float64) for a in theta]
    assert changes(theta, half)[0].startswith("θ2 is θ1 rounded to float16")
    assert changes(theta, [half[0], *theta[1:]]) == []  # only one tensor rounded: no claim about θ2
    assert changes(theta, [theta[0].T, *theta[1:]]) == []
    nan = [np.array([[np.nan, 1.0]]), np.array([0.0]), np.array([[1.0]]), np.array([0.0])]
    assert changes(nan, [np.array([[np.nan, 2.0]]), *nan[1:]]) == []
    scaled = [*theta[:2], theta[2] * 4, theta[3] * 4]
    assert changes(theta, scaled) == ["θ2 is θ1 with its output layer scaled by 4"]


# ------------------------------------------------------------------------------------------------- seconds=


def test_a_huge_integer_budget_is_an_input_error_or_no_limit() -> None:
    theta = _shallow()
    with contextlib.suppress(InputError):  # refused in one line, or read as no time limit: both fine
        certsym.equivalent(theta, theta, seconds=10**400)


@pytest.mark.parametrize("seconds", [True, float("nan"), -1, -1e-300, "5", [1]])
def test_bad_budgets_are_input_errors(seconds) -> None:
    theta = _shallow()
    with pytest.raises(InputError, match="a time budget is a number of seconds"):
        certsym.equivalent(theta, theta, seconds=seconds)


# --------------------------------------------------------------------------------- str() of a verdict, equiv


@pytest.mark.parametrize("deep", [False, True])
def test_str_of_a_verdict_with_huge_outputs(tmp_path: Path, deep: bool) -> None:
    for name, v in (("p1.json", "1"), ("p2.json", "2")):
        doc = {"layers": [{"W": [["1e200"]], "b": ["0"]}, {"W": [["1e200"]], "b": ["0"]}, {"W": [[v]], "b": ["1/3"]}]} \
            if deep else {"A": [["1e200"], ["1"]], "b": ["0", "0"], "M": [["1e200", v]], "c": ["1/3"]}
        (tmp_path / name).write_text(json.dumps(doc))
    verdict = certsym.equivalent(tmp_path / "p1.json", tmp_path / "p2.json")
    assert str(verdict).startswith("NOT EQUIVALENT")


def test_equiv_box_beyond_binary64_is_not_an_internal_error(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    code, _, err = _run("equiv", str(a), str(b), "--box", "2,1e400")
    assert code in (1, 2) and "internal error" not in err


def test_a_large_pair_says_when_its_witness_is_outside_the_default_box() -> None:
    m, n = 200, 500  # 2 x 100,501 weights: past EMBED_LIMIT
    W1, b1, W2, b2 = _shallow(0, m, n, 1)
    W1[0] = 0
    W1[0, :2], b1[0] = 1, -1.5  # neuron 0: relu(x0 + x1 − 1.5), active at (1, 1, 0, …)
    V2 = W2.copy()
    V2[0, 0] *= 2
    verdict = certsym.equivalent([W1, b1, W2, b2], [W1, b1, V2, b2])
    assert verdict.status == "not_equivalent"
    inside = all(0 <= x <= 1 for x in verdict.witness)
    assert inside or "outside" in str(verdict)


@pytest.mark.parametrize("box", [None, "0.5,1"])
def test_a_deep_witness_is_sought_in_the_box_or_said_to_lie_outside(tmp_path: Path, box: str | None) -> None:
    da, db = _deep_pair(tmp_path)
    if box is not None:  # a pair that differs everywhere, whose witness is the origin
        rng = np.random.default_rng(1)
        for path in (da, db):
            np.savez(path, **{f"{2 * i}.{p}": rng.standard_normal((2, 2) if p == "weight" else 2).astype(np.float32)
                              for i in range(3) for p in ("weight", "bias")})
    code, out, _ = _run("equiv", str(da), str(db), "--json", *(["--box", box] if box else []))
    assert code == 1
    lo, hi = (fmpq(0), fmpq(1)) if box is None else (fmpq(1, 2), fmpq(1))
    witness = [fmpq(*map(int, (t.split("/") + ["1"])[:2])) for t in json.loads(out)["witness"]]
    text = _run("equiv", str(da), str(db), *(["--box", box] if box else []))[1]
    assert all(lo <= x <= hi for x in witness) or "outside" in text


# ------------------------------------------------------------------------------------------- the stated ReLU


def test_the_stated_activation_keeps_the_words_about_the_chain_of_keys(tmp_path: Path) -> None:
    arrays = _shallow()
    np.savez(tmp_path / "named.npz", **dict(zip(("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"), arrays,
                                                 strict=True)))
    keys = "fc1.weight,fc1.bias,fc2.weight,fc2.bias"
    assert "the chain of the layers the keys name" in certsym.load(tmp_path / "named.npz", keys=keys).reading
    stated = certsym.load(tmp_path / "named.npz", keys=keys, activation="relu").reading
    assert "stated" in stated and "the chain of the layers the keys name" in stated


def test_load_of_a_model_checks_the_activation(tmp_path: Path) -> None:
    model = certsym.load(_pair(tmp_path)[0])
    with pytest.raises(InputError, match="certsym reads ReLU networks only"):
        certsym.load(model, activation="gelu")


def _onnx(path: Path, arrays: list[np.ndarray]) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(a, name) for a, name in zip(arrays, ("W1", "b1", "W2", "b2"), strict=True)]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1)]
    m, k = arrays[0].shape[1], arrays[2].shape[0]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


_NNET = """// a network
2,3,2,4,
3,4,2,
0,
-10,-10,-10,
10,10,10,
0,0,0,0,
1,1,1,1,
0.5,-0.25,1,
1,1,-1,
0.5,0.5,0.5,
-1,1,0.25,
0.5,
0,
-1,
1,
1,-1,1,-1,
0.5,0.5,0.5,0.5,
0,
0,
"""


@pytest.mark.parametrize("fmt", ["onnx", "nnet", "npz", "torch"])
def test_the_checker_reads_the_stated_activation_for_tensor_files_only(tmp_path: Path, fmt: str) -> None:
    """Regression: "stated" (or any other string) in the record of an ONNX or NNet file is refused; a tensor file
    accepts exactly the two strings FORMATS.md gives."""
    arrays = _shallow()
    if fmt == "onnx":
        path = _onnx(tmp_path / "n.onnx", arrays)
    elif fmt == "nnet":
        path = tmp_path / "n.nnet"
        path.write_text(_NNET)
    elif fmt == "npz":
        path = _npz(tmp_path / "n.npz", arrays)
    else:
        torch = pytest.importorskip("torch")
        path = tmp_path / "n.pt"
        torch.save({k: torch.tensor(a) for k, a in zip(("0.weight", "0.bias", "2.weight", "2.bias"), arrays,
                                                        strict=True)}, path)
    doc = certsym.equivalent(certsym.load(path, activation="relu"), path).certificate()
    assert check(doc, [path, path])
    accepted = [STATED, "relu, assumed: the file holds no activation"] if fmt in ("npz", "torch") else []
    for act in (STATED, "relu, assumed: the file holds no activation", STATED + " ", "relu", STATED.upper(), None,
                [STATED], {"relu": STATED}):
        forged = copy.deepcopy(doc)
        forged["inputs"][0]["model"]["activation"] = act
        assert bool(check(forged, [path, path])) == (act in accepted), act


def test_the_checker_refuses_a_model_record_on_a_parameter_file(tmp_path: Path) -> None:
    """Regression: a parameter file's input given a tensor file's record with the stated activation."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"A": [[1, 2], [3, -1]], "b": [0, 1], "M": [[1, -1]], "c": [0]}))
    doc = certsym.equivalent(path, path).certificate()
    assert check(doc, [path, path])
    forged = copy.deepcopy(doc)
    forged["inputs"][0]["model"] = {"format": "npz", "rule": "default", "tensors": ["A", "b", "M", "c"],
                                    "layout": "out-in", "activation": STATED}
    assert not check(forged, [path, path])
    forged = copy.deepcopy(doc)
    forged["inputs"][0]["activation"] = STATED
    assert not check(forged, [path, path])


@pytest.mark.parametrize("fmt", ["npz", "nnet", "onnx"])
def test_a_quantized_entry_where_the_file_stores_none_is_refused(tmp_path: Path, fmt: str) -> None:
    """Regression: "quantized" in the record of a format that cannot hold it, or of a file that holds none."""
    if fmt == "nnet":
        path = tmp_path / "n.nnet"
        path.write_text(_NNET)
    elif fmt == "onnx":
        path = _onnx(tmp_path / "n.onnx", _shallow())
    else:
        path = _npz(tmp_path / "n.npz", _shallow())
    doc = certsym.equivalent(path, path).certificate()
    for quantized in ({"0.weight": "int8, per-tensor scale"}, {"W1": "int8, per-tensor scale, the operator's "
                                                                     "float32 output"}, {}):
        forged = copy.deepcopy(doc)
        forged["inputs"][0]["model"]["quantized"] = quantized
        assert not check(forged, [path, path])


# ------------------------------------------------------------------------------------------------ config.json


def _directory(tmp_path: Path, config: bytes) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_bytes(config)
    safetensors = pytest.importorskip("safetensors.numpy")
    safetensors.save_file(dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"), _shallow(), strict=True)),
                          str(folder / "model.safetensors"))
    return folder


@pytest.mark.parametrize("config,accepted", [
    (b'{"hidden_act": "gelu", "hidden_act": "relu"}', True),  # json's reading (and transformers'): the last
    (b'{"hidden_act": "relu", "hidden_act": "gelu"}', False),
    (b'\xef\xbb\xbf{"hidden_act": "gelu"}', False),
    ('{"hidden_act": "gelu"}'.encode("utf-16"), False),
    (b'{"hidden_act": "ReLU"}', False),
    (b'{"hidden_act": "relu6"}', False),
    (b'{"hidden_act": ["relu"]}', False),
    (b'{"hidden_act": null}', False),
    (b'{"hidden_act": NaN}', False),
    (b'{"hidden_\\u0061ct": "gelu"}', False),
    (b'{"hidden_act": "rel\\u0075"}', True),
    (b'{"text_config": {"hidden_act": "gelu"}}', True),  # FORMATS.md: the top level only
    (b'{"activation": "gelu", "hidden_act": "relu"}', True),  # the first key present, in FORMATS.md's order
    (b'[{"hidden_act": "gelu"}]', False),
    (b'{"hidden_act": "relu"} x', False),
    (b'{"x": ' + b"1" * 5000 + b"}", False),
    (b"", False),
])
def test_producer_and_checker_read_config_json_alike(tmp_path: Path, config: bytes, accepted: bool) -> None:
    """Regression: tricky config.json files are accepted or refused by both readers alike."""
    folder = _directory(tmp_path, config)
    try:
        certsym.load(folder)
        producer = True
    except InputError:
        producer = False
    try:
        model_directory_file(str(folder))
        checker = True
    except Reject:
        checker = False
    assert producer == checker == accepted


_DEEP_JSON = b'{"hidden_act": "relu", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def test_a_deeply_nested_config_json_is_refused_by_the_producer(tmp_path: Path) -> None:
    folder = _directory(tmp_path, _DEEP_JSON)
    with pytest.raises(InputError):
        certsym.load(folder)


def test_a_deeply_nested_config_json_is_refused_by_the_checker(tmp_path: Path) -> None:
    folder = _directory(tmp_path, _DEEP_JSON)
    cert = tmp_path / "c.json"
    cert.write_text(json.dumps(certsym.equivalent(_shallow(), _shallow()).certificate()))
    with pytest.raises(Reject):
        model_directory_file(str(folder))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert checker_main([str(cert), "--inputs", str(folder), str(folder)]) == 2


# ---------------------------------------------------------------------------------------------- certsym report


def test_a_report_folder_holds_only_the_certificates_of_its_page(tmp_path: Path, no_figure) -> None:
    a, b = _pair(tmp_path)
    page = tmp_path / "r.html"
    assert _run("report", str(a), str(a), "-o", str(page), "--regions", "3")[0] == 0  # three certificates
    code, out, _ = _run("report", str(a), str(b), "-o", str(page), "--regions", "3")
    assert code == 0 and "(2 certificates" in out  # top-1 UNKNOWN within 3 regions
    linked = set(re.findall(r"href='(?:\./)?r_certificates/([^']+)'", page.read_text()))
    assert {p.name for p in (tmp_path / "r_certificates").glob("*.json")} == linked
    assert _run("check", str(tmp_path / "r_certificates"), "--inputs", str(a), str(b))[0] == 0


def test_a_report_never_overwrites_its_inputs(tmp_path: Path, no_figure) -> None:
    first, second = tmp_path / "p.html", tmp_path / "q.json"  # a parameter file may have any name
    first.write_text(json.dumps({"A": [[1, 2], [3, -1]], "b": [0, 1], "M": [[1, -1]], "c": [0]}))
    second.write_text(json.dumps({"A": [[1, 2], [3, -1]], "b": [0, 1], "M": [[1, -2]], "c": [0]}))
    before = first.read_bytes()
    _run("report", str(first), str(second), "-o", str(first), "--regions", "3")
    assert first.read_bytes() == before


def test_the_replay_command_quotes_file_names(tmp_path: Path, monkeypatch, no_figure) -> None:
    monkeypatch.chdir(tmp_path)
    a, b = _pair(tmp_path)
    a.rename(tmp_path / "a b.npz")
    assert _run("report", "a b.npz", "b.npz", "-o", "r.html", "--regions", "3")[0] == 0
    words = shlex.split(_page_command(tmp_path / "r.html"))
    assert words[words.index("--inputs") + 1:] == ["a b.npz", "b.npz"]


def test_the_replay_command_works_where_the_report_was_made(tmp_path: Path, monkeypatch, no_figure) -> None:
    monkeypatch.chdir(tmp_path)
    _pair(tmp_path)
    (tmp_path / "out").mkdir()
    assert _run("report", "a.npz", "b.npz", "-o", "out/r.html", "--regions", "3")[0] == 0
    words = shlex.split(_page_command(tmp_path / "out" / "r.html"))
    assert words[:2] == ["certsym", "check"]
    assert _run(*words[1:])[0] == 0


def test_the_page_links_are_relative_paths_not_urls(tmp_path: Path, no_figure) -> None:
    a, b = _pair(tmp_path)
    page = tmp_path / "javascript:alert(document.domain);x=y.html"
    assert _run("report", str(a), str(a), "-o", str(page), "--regions", "3")[0] == 0
    targets = re.findall(r"(?:href|src)='([^']*)'", page.read_text())
    assert targets and all(urllib.parse.urlsplit(html.unescape(t)).scheme == "" for t in targets), targets


def test_the_page_escapes_file_names(tmp_path: Path, no_figure) -> None:
    """Regression: a file name with markup is shown as text, in the table and in the replay command."""
    a, _ = _pair(tmp_path)
    hostile = a.rename(tmp_path / "<img src=x onerror=alert(1)>'\".npz")
    page = tmp_path / "r.html"
    assert _run("report", str(hostile), str(hostile), "-o", str(page), "--regions", "3")[0] == 0
    text = page.read_text()
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;&#x27;&quot;.npz" in text


def test_every_verdict_card_has_its_certificate_or_says_it_has_none(tmp_path: Path, no_figure) -> None:
    da, db = _deep_pair(tmp_path)
    page = tmp_path / "r.html"
    assert _run("report", str(da), str(db), "-o", str(page), "--regions", "3")[0] == 0
    text = page.read_text()
    assert "AGREE" in text
    assert "r_certificates/top1.json" in text or re.search(r"No certificate for[^<]*top-1", text)


def test_a_huge_epsilon_is_not_an_internal_error(tmp_path: Path, no_figure) -> None:
    a, b = _pair(tmp_path)
    code, _, err = _run("report", str(a), str(b), "-o", str(tmp_path / "r.html"), "--regions", "3", "--epsilon",
                        "1e400")
    assert "internal error" not in err and code in (0, 2)


def test_a_violated_card_shows_a_lower_bound_above_epsilon(tmp_path: Path, no_figure) -> None:
    for name, c in (("e1.json", "100000001/10000000000"), ("e2.json", "0")):
        (tmp_path / name).write_text(json.dumps({"A": [["0"]], "b": ["0"], "M": [["0"]], "c": [c]}))
    page = tmp_path / "r.html"
    assert _run("report", str(tmp_path / "e1.json"), str(tmp_path / "e2.json"), "-o", str(page), "--regions", "3",
                "--epsilon", "0.01")[0] == 0
    text = page.read_text()
    assert "VIOLATED" in text
    lower = re.search(r"sup ‖f1 − f2‖∞ ∈ \[([^,]+), ", text).group(1)
    assert float(lower) > 0.01


def test_the_report_budget_bounds_the_equivalence_decision(tmp_path: Path, no_figure) -> None:
    from certsym.workflows.report import pair_report
    from tests.api.test_api_deep import _chain as chain  # equal only on the image of layer 1: phase splitting decides

    assert certsym.equivalent(chain([1.0, 0.0], 0.0), chain([0.0, 0.0], 1.0), seconds=0).undecided
    A, B = (certsym.load(p) for p in (chain([1.0, 0.0], 0.0).state_dict(), chain([0.0, 0.0], 1.0).state_dict()))
    r = pair_report(A, B, [(fmpq(0), fmpq(1))], "[0, 1]", tmp_path / "r.html", deadline=Deadline(0.0), regions=2)
    assert r.equivalence.undecided and "time budget" in r.equivalence.reason


@pytest.mark.parametrize("argv,words", [
    (["--seconds", "nan"], "--seconds"), (["--regions", "0"], "--regions"), (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "inf"], "--epsilon"), (["--center", "0.5", "--radius", "0.1"], "--center"),
    (["--center", "0.5,0.5,0.5", "--radius", "-1"], "radius"), (["--box", "1,0"], "--box"),
    (["-o", "OUT/.html"], "HTML page"), (["-o", "OUT/dir.html"], "Is a directory"),
])
def test_bad_report_arguments_are_one_line_errors(tmp_path: Path, no_figure, argv: list[str], words: str) -> None:
    """Regression: exit 2 and one line on stderr."""
    a, b = _pair(tmp_path)
    (tmp_path / "dir.html").mkdir()
    argv = [x.replace("OUT", str(tmp_path)) for x in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "r.html")]
    code, _, err = _run("report", str(a), str(b), "--regions", "3", *argv)
    assert code == 2 and words in err and err.count("\n") == 1 and "internal error" not in err, err

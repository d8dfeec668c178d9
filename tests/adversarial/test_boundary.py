"""The boundary between the bytes a user holds and a verdict: forgeries through model files, resource attacks
on the checker, and the checker's process. This file grows with every new format (docs/FORMATS.md).

Each attack is a regression case of an attack that once worked: it must now end quickly with a clean rejection
(or, for a true claim, a correct VALID), never a traceback, a hang or an exhausted memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import HANG_GUARD, REPO, cpu_budget, out_of_cpu

from certsym.cli import main
from certsym.errors import InputError
from certsym.io.models import read_arrays
from certsym_check import check_certificate

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _mlp(seed: int, n: int = 5, m: int = 3, k: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in ((n, m), (n,), (k, n), (k,))]


def _npz(path: Path, arrays, **extra) -> Path:
    np.savez(path, **dict(zip(KEYS, arrays, strict=True)), **extra)
    return path


def _alias(path: Path, real: list[np.ndarray], shadow: np.ndarray) -> Path:
    """An archive with both `0.weight.npy` (the real W1) and a member `0.weight` (another array)."""
    _npz(path, real)
    other = path.with_suffix(".shadow.npy")
    np.save(other, shadow)
    with zipfile.ZipFile(path, "a") as z:
        z.write(other, "0.weight")
    return path


# --- forgeries through the files -------------------------------------------------------------------------------


def test_npz_member_aliasing_is_refused_by_producer_and_checker(tmp_path: Path, capfd) -> None:
    a = _mlp(0)
    b = [a[0] * 2] + a[1:]  # a different function
    ref = _npz(tmp_path / "ref.npz", a)
    forged = _alias(tmp_path / "forged.npz", b, a[0])
    with pytest.raises(InputError, match="does not end in .npy"):
        read_arrays(forged)
    # a certificate made for the honest pair, replayed against the aliased archive of the same name
    honest = _npz(tmp_path / "honest.npz", a)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(ref), str(honest), "--reference", "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    doc["inputs"][1]["sha256"] = __import__("hashlib").sha256(forged.read_bytes()).hexdigest()
    report = check_certificate(doc, [ref.read_bytes(), forged.read_bytes()])
    assert not report.valid and "does not end in .npy" in report.reason


def test_decoy_tensors_need_the_keys_rule_and_are_printed(tmp_path: Path, capfd) -> None:
    a = _mlp(1)
    ema = [x * 3 for x in a]
    both = _npz(tmp_path / "both.npz", a, **{f"ema.{k}": v for k, v in zip(KEYS, ema, strict=True)})
    plain = _npz(tmp_path / "plain.npz", ema)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(plain), str(both)]) == 2  # the default rule picks nothing: extra tensors
    assert "--keys" in capfd.readouterr().err
    keys = ",".join(f"ema.{k}" for k in KEYS)
    assert main(["--keys", keys, "equiv", str(both), str(both), "--reference", "--cert", str(cert)]) == 0
    capfd.readouterr()
    assert main(["check", str(cert), "--inputs", str(both), str(both)]) == 0
    out = capfd.readouterr().out
    assert "npz keys: ema.0.weight 5x3, ema.0.bias 5, ema.2.weight 2x5, ema.2.bias 2" in out
    # the same certificate relabelled as if the default rule had picked the decoys
    doc = json.loads(cert.read_text())
    for rec in doc["inputs"]:
        rec["model"]["rule"] = "default"
    report = check_certificate(doc, [both.read_bytes(), both.read_bytes()])
    assert not report.valid and "not exactly one default set" in report.reason


def test_default_rule_names_are_re_derived(tmp_path: Path) -> None:
    a = _mlp(2)
    f = _npz(tmp_path / "a.npz", a)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(f), str(f), "--reference", "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["model"]["tensors"] = ["2.weight", "2.bias", "0.weight", "0.bias"]
    report = check_certificate(doc, [f.read_bytes(), f.read_bytes()])
    assert not report.valid


def test_duplicate_json_keys_in_a_certificate(tmp_path: Path, capfd) -> None:
    a = _mlp(3)
    f = _npz(tmp_path / "a.npz", a)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(f), str(f), "--path", "general", "--cert", str(cert)]) == 0
    text = cert.read_text()
    twice = text.replace('"kind": "equivalent",', '"kind": "equivalent", "kind": "equivalent",', 1)
    assert twice != text
    cert.write_text(twice)
    capfd.readouterr()
    assert main(["check", str(cert)]) == 1
    assert "occurs twice" in capfd.readouterr().out


def test_valid_says_what_was_bound(tmp_path: Path, capfd) -> None:
    a = _mlp(4)
    f = _npz(tmp_path / "a.npz", a)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(f), str(f), "--path", "general", "--cert", str(cert)]) == 0
    capfd.readouterr()
    assert main(["check", str(cert)]) == 0
    assert "inputs not bound to files (embedded parameters only)" in capfd.readouterr().out
    assert main(["check", str(cert), "--inputs", str(f), str(f)]) == 0
    out = capfd.readouterr().out
    assert "inputs[1] " in out and "equal to the embedded parameters): npz default: 0.weight 5x3" in out


def test_a_referenced_certificate_without_its_files_cannot_be_checked(tmp_path: Path, capfd) -> None:
    f = _npz(tmp_path / "a.npz", _mlp(5))
    cert = tmp_path / "c.json"
    assert main(["equiv", str(f), str(f), "--reference", "--cert", str(cert)]) == 0
    capfd.readouterr()
    assert main(["check", str(cert)]) == 2
    assert "CANNOT CHECK" in capfd.readouterr().out


# --- resource attacks: each ends within seconds under a 4 GB address-space limit ---------------------------------

_PRELUDE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from certsym_check import check_certificate
CLAIMS = {"identifiable": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit",
          "minimal_form": "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)",
          "equivalent": "rho(theta1) = rho(theta2)"}
QQ = {"type": "QQ"}
def doc(kind, inputs, proof, field=QQ):
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind], "field": field,
            "inputs": [{"name": "x", "sha256": "0" * 64, "atoms": a, "parameters": p} for p, a in inputs],
            "proof": proof}
def run(d, files=None):
    rep = check_certificate(d, files)
    print("VALID" if rep.valid else "REJECTED: " + rep.reason)
def net(M, A, b, c, m):
    return {"M": M, "A": A, "b": b, "c": c, "shape": {"m": m, "n": len(A), "k": len(M)}}
"""

_ATTACKS = {
    "identifiable with n = 0 and m = 10^9": """
P = {"M": [[]], "A": [], "b": [], "c": ["0"], "shape": {"m": 10**9 - 1, "n": 0, "k": 1}}
run(doc("identifiable", [(P, [])], {"nonzero_v": [], "nonzero_a": [], "statement": "Theorem 1",
    "zero_factor": {"rows": [], "pivots": [], "free": [], "R": []}}))""",
    "kernel enumeration over 2^24 masks": """
n = 25
P = net([[str(2 ** i) for i in range(n)]], [["1"]] * n, [str(i) for i in range(n)], ["0"], 1)
R = [[str(2 ** f) for f in range(1, n)]]
run(doc("identifiable", [(P, [])], {"nonzero_v": [0] * n, "nonzero_a": [0] * n, "statement": "Theorem 1",
    "zero_factor": {"rows": [0], "pivots": [0], "free": list(range(1, n)), "R": R}}))""",
    "degree-64 polynomial with 1000-digit coefficients": """
big = "1" + "0" * 999
F = {"type": "number_field", "minpoly": ["-" + big] + [big] * 63 + ["1"], "interval": ["0", "1"], "generator": "a"}
P = net([[["1"]]], [[["1"]]], [["0"]], [["0"]], 1)
run(doc("minimal_form", [(P, [])], {"steps": [], "minimal": P}, F))""",
    "sign bisection at degree 256 with 4000-bit rationals": """
F = {"type": "number_field", "minpoly": ["-2"] + ["0"] * 255 + ["1"], "interval": ["1", "2"], "generator": "a"}
x = ["%d/%d" % (3 ** 2500 + i, 2 ** 4000) for i in range(256)]
P = net([[x]], [[["1"]]], [["0"]], [["0"]], 1)
run(doc("minimal_form", [(P, [])], {"steps": [], "minimal": P}, F))""",
    "sign bisection at degree 64 near zero": """
F = {"type": "number_field", "minpoly": ["-2"] + ["0"] * 63 + ["1"], "interval": ["1", "2"], "generator": "a"}
N = 2 << (4000 * 64)  # alpha = 2^(1/64) to 4000 bits: r = floor(alpha 2^4000) by integer Newton
r = 1 << 4001
while (s := (63 * r + N // r ** 63) // 64) < r:
    r = s
x = ["-%d/%d" % (r, 1 << 4000), "1"]
P = net([[x]], [[["1"]]], [["0"]], [["0"]], 1)
run(doc("minimal_form", [(P, [])], {"steps": [], "minimal": P}, F))""",
    "CRootOf of degree 400 given as a product": """
poly = "*".join("(x - %d)" % i for i in range(1, 401))
P = net([["1"]], [["1"]], ["0"], ["0"], 1)
run(doc("minimal_form", [(P, [{"expr": "CRootOf(%s, 0)" % poly, "value": "1"}])], {"steps": [], "minimal": P}))""",
    "10^5 merge steps between zero rows": """
m = 5000
zero = ["0"] * m
P = net([["1", "0"]], [zero, zero], ["0", "0"], ["0"], m)
step = {"step": "merge", "into": 0, "from": 1, "lambda": "1", "statement": "merge lemma"}
run(doc("minimal_form", [(P, [])], {"steps": [step] * 10**5, "minimal": P}))""",
}


def _isolated(body: str, cpu: float = 30) -> str:
    """The outcome line of ``body`` run in a fresh interpreter under a 4 GB address-space limit, given ``cpu``
    seconds of its own CPU time (a busy machine does not use it up): "TIMEOUT" when it runs out."""
    try:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(_PRELUDE) + textwrap.dedent(body)],
                             capture_output=True, text=True, timeout=HANG_GUARD, preexec_fn=cpu_budget(cpu, None))
    except subprocess.TimeoutExpired:
        return "HUNG"
    if out_of_cpu(out.returncode):
        return "TIMEOUT"
    if out.returncode != 0 or "Traceback" in out.stderr:
        return "CRASH: " + out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "CRASH"
    return out.stdout.strip()


# The expected verdict of each attack: every claim is false but the first, which is true (the fibre of θ is {θ}).
_VERDICTS = {name: "VALID" if name == "identifiable with n = 0 and m = 10^9" else "REJECTED" for name in _ATTACKS}


@pytest.mark.parametrize("name", sorted(_ATTACKS))
def test_resource_attack_ends_cleanly(name: str) -> None:
    outcome = _isolated(_ATTACKS[name])
    assert outcome.startswith(("VALID", "REJECTED")), f"{name}: {outcome}"
    assert outcome.startswith(_VERDICTS[name]), f"{name}: {outcome}"


def _referenced_doc(tmp_path: Path, a: Path, b: Path) -> dict:
    cert = tmp_path / "ref.json"
    assert main(["equiv", str(a), str(b), "--reference", "--cert", str(cert)]) == 0
    return json.loads(cert.read_text())


def test_npz_zip_bomb_is_refused_before_inflating(tmp_path: Path) -> None:
    n, m = 6000, 12800  # W1 of float64 zeros: 614 MB inflated, about 0.6 MB deflated
    arrays = [np.zeros((n, m)), np.zeros(n), np.zeros((1, n)), np.zeros(1)]
    small = _npz(tmp_path / "small.npz", [np.zeros((2, 2)), np.zeros(2), np.zeros((1, 2)), np.zeros(1)])
    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        for key, array in zip(KEYS, arrays, strict=True):
            with z.open(key + ".npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, array)
    doc = _referenced_doc(tmp_path, small, small)
    doc["inputs"][1]["shape"] = {"m": m, "n": n, "k": 1}
    doc["inputs"][1]["sha256"] = __import__("hashlib").sha256(bomb.read_bytes()).hexdigest()
    body = f"""
doc = json.load(open({str(tmp_path / 'd.json')!r}))
run(doc, [open({str(small)!r}, "rb").read(), open({str(bomb)!r}, "rb").read()])"""
    (tmp_path / "d.json").write_text(json.dumps(doc))
    outcome = _isolated(body)
    # refused from the certificate's shape before the file is opened: 77 million weights from 0.6 MB
    assert outcome.startswith("REJECTED") and "one weight per byte of the file" in outcome, outcome
    from certsym_check.errors import Reject
    from certsym_check.readers.files import read_tensors

    with pytest.raises(Reject, match="inflate"):  # and the reader itself refuses it before inflating
        read_tensors(bomb.read_bytes(), "npz")


def test_corrupt_lzma_member_rejects_that_certificate_only(tmp_path: Path) -> None:
    a = _mlp(6)
    good = _npz(tmp_path / "good.npz", a)
    corrupt = tmp_path / "corrupt.npz"
    with zipfile.ZipFile(corrupt, "w", zipfile.ZIP_LZMA) as z:
        for key, array in zip(KEYS, a, strict=True):
            with z.open(key + ".npy", "w") as fh:
                np.lib.format.write_array(fh, array)
    data = bytearray(corrupt.read_bytes())
    start = data.index(b"0.weight.npy") + len("0.weight.npy") + 20
    data[start:start + 40] = bytes(40)
    doc = _referenced_doc(tmp_path, good, good)
    doc["inputs"][1]["sha256"] = __import__("hashlib").sha256(bytes(data)).hexdigest()
    report = check_certificate(doc, [good.read_bytes(), bytes(data)])
    assert not report.valid and not report.cannot_check
    assert check_certificate(_referenced_doc(tmp_path, good, good), [good.read_bytes()] * 2).valid


# --- the checker's process ------------------------------------------------------------------------------------------


def test_certsym_check_imports_neither_sympy_nor_flint_nor_numpy(tmp_path: Path) -> None:
    f = _npz(tmp_path / "a.npz", _mlp(7))
    cert = tmp_path / "c.json"
    assert main(["equiv", str(f), str(f), "--reference", "--cert", str(cert)]) == 0
    landscape = sorted((REPO / "certificates" / "landscape").glob("*.json"))[0]
    code = textwrap.dedent(f"""
        import sys
        from importlib.metadata import entry_points
        (script,) = [e for e in entry_points(group="console_scripts") if e.name == "certsym"]
        run = script.load()
        sys.argv = ["certsym", "check", {str(cert)!r}, "--inputs", {str(f)!r}, {str(f)!r}]
        try:
            run()
        except SystemExit as exc:
            code = exc.code
        first = sorted(m for m in ("sympy", "flint", "numpy", "mpmath") if m in sys.modules)
        sys.argv = ["certsym", "check", {str(landscape)!r}]
        try:
            run()
        except SystemExit as exc:
            code2 = exc.code
        second = sorted(m for m in ("sympy", "flint", "numpy") if m in sys.modules)
        print("RESULT", code, first, code2, second)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT"))
    assert line == "RESULT 0 [] 0 []", out.stdout + out.stderr


# --- ONNX: the graph's data flow, not a count of layers -------------------------------------------------------------


def _onnx(path: Path, nodes: list, arrays: list[np.ndarray], m: int = 3, k: int = 2, **save) -> Path:
    import onnx  # in the test extra: a missing install fails here, it is not skipped
    from onnx import TensorProto, helper, numpy_helper

    names = ("W1", "b1", "W2", "b2")
    inits = [numpy_helper.from_array(a, name) for a, name in zip(arrays, names, strict=True)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, m])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, k])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save_model(model, str(path), **save)
    return path


def _node(op: str, inputs: list[str], outputs: list[str], **attrs):
    from onnx import helper

    return helper.make_node(op, inputs, outputs, **attrs)


def _gemm_graphs() -> dict[str, list]:
    """The five graphs that an earlier reader took for Linear-ReLU-Linear, each computing another function."""
    g, r = _node, _node
    return {
        "Gemm(alpha=2)": [g("Gemm", ["x", "W1", "b1"], ["h"], transB=1, alpha=2.0), r("Relu", ["h"], ["a"]),
                          g("Gemm", ["a", "W2", "b2"], ["y"], transB=1)],
        "Gemm(beta=0.5)": [g("Gemm", ["x", "W1", "b1"], ["h"], transB=1, beta=0.5), r("Relu", ["h"], ["a"]),
                           g("Gemm", ["a", "W2", "b2"], ["y"], transB=1)],
        "Gemm, Gemm, Relu": [g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), g("Gemm", ["h", "W2", "b2"], ["z"],
                                                                              transB=1), r("Relu", ["z"], ["y"])],
        "Relu, Gemm, Gemm": [r("Relu", ["x"], ["a"]), g("Gemm", ["a", "W1", "b1"], ["h"], transB=1),
                             g("Gemm", ["h", "W2", "b2"], ["y"], transB=1)],
        "Relu output unused": [g("Gemm", ["x", "W1", "b1"], ["h"], transB=1), r("Relu", ["h"], ["a"]),
                               g("Gemm", ["h", "W2", "b2"], ["y"], transB=1)],
    }


def _runtime(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort  # in the test extra: a missing install fails here, it is not skipped

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_onnx_graphs_that_compute_other_functions(tmp_path: Path, capfd) -> None:
    arrays = _mlp(8, n=4, m=3, k=2)
    ref = _npz(tmp_path / "ref.npz", arrays)
    x = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    W1, b1, W2, b2 = arrays
    mlp = np.maximum(x @ W1.T + b1, 0) @ W2.T + b2
    for i, (name, nodes) in enumerate(_gemm_graphs().items()):
        model = _onnx(tmp_path / f"g{i}.onnx", nodes, arrays)
        assert not np.allclose(_runtime(model, x), mlp, atol=1e-5), name  # onnxruntime: another function
        code = main(["equiv", str(ref), str(model)])
        assert code in (1, 2), name  # refused (2), or read as what it computes: NOT EQUIVALENT (1)
        capfd.readouterr()


@pytest.mark.parametrize("layout", ["Gemm(transB=1)", "MatMul + Add", "external data"])
def test_onnx_torch_style_graphs_are_equivalent_and_replay(tmp_path: Path, capfd, layout: str) -> None:
    arrays = _mlp(9, n=4, m=3, k=2)
    W1, b1, W2, b2 = arrays
    ref = _npz(tmp_path / "ref.npz", arrays)
    if layout == "MatMul + Add":
        nodes = [_node("MatMul", ["x", "W1"], ["h0"]), _node("Add", ["h0", "b1"], ["h"]), _node("Relu", ["h"], ["a"]),
                 _node("MatMul", ["a", "W2"], ["y0"]), _node("Add", ["b2", "y0"], ["y"])]
        stored = [W1.T.copy(), b1, W2.T.copy(), b2]
    else:
        nodes = [_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), _node("Relu", ["h"], ["a"]),
                 _node("Gemm", ["a", "W2", "b2"], ["y"], transB=1)]
        stored = arrays
    save = {"save_as_external_data": True, "all_tensors_to_one_file": True, "location": "model.onnx.data",
            "size_threshold": 0} if layout == "external data" else {}
    model = _onnx(tmp_path / "model.onnx", nodes, stored, **save)
    x = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
    assert np.allclose(_runtime(model, x), np.maximum(x @ W1.T + b1, 0) @ W2.T + b2, atol=1e-5)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(ref), str(model), "--reference", "--cert", str(cert)]) == 0
    capfd.readouterr()
    assert main(["check", str(cert), "--inputs", str(ref), str(model)]) == 0
    out = capfd.readouterr().out
    assert "onnx graph: W1 4x3" in out
    if layout == "external data":
        assert "external model.onnx.data sha256" in out
        data = tmp_path / "model.onnx.data"
        raw = bytearray(data.read_bytes())
        raw[0] ^= 1  # one bit of W1 changed outside the .onnx file
        data.write_bytes(bytes(raw))
        assert main(["check", str(cert), "--inputs", str(ref), str(model)]) == 1
        data.unlink()
        capfd.readouterr()
        assert main(["check", str(cert), "--inputs", str(ref), str(model)]) == 2
        assert "CANNOT CHECK" in capfd.readouterr().out


# --- landscape certificates: the family is the checker's own reading of the certified point -----------------------


def _family_certificates() -> list[Path]:
    """The committed landscape certificates built on a critical_point box (wide_critical_point names no family)."""
    out = []
    for path in sorted((REPO / "certificates" / "landscape").glob("*.json")):
        proof = json.loads(path.read_text())["proof"]
        if "family" in proof.get("critical_point", proof):
            out.append(path)
    return out


def test_the_family_certificates_are_found() -> None:
    """The parametrization below is not empty: every committed landscape certificate but the wide ones is on it."""
    found = _family_certificates()
    every = sorted((REPO / "certificates" / "landscape").glob("*.json"))
    assert found
    assert found == [p for p in every if json.loads(p.read_text())["kind"] != "wide_critical_point"]


@pytest.mark.parametrize("path", _family_certificates(), ids=lambda p: p.stem)
def test_a_relabelled_family_is_rejected(path: Path) -> None:
    doc = json.loads(path.read_text())
    report = check_certificate(doc)
    assert report.valid and any(line.startswith("family ") for line in report.facts)
    box = doc["proof"].get("critical_point", doc["proof"])
    box["family"] = "two-misfit" if box["family"] != "two-misfit" else "one-misfit"
    relabelled = check_certificate(doc)
    assert not relabelled.valid and "belongs to" in relabelled.reason

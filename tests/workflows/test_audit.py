"""certsym audit: collecting files (directories, globs), proposal hashes, classes confirmed by exact decisions,
certificates that replay, the JSON output, progress lines, and the runners (in-process, processes, Dask)."""

from __future__ import annotations

import json
import socket
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

import certsym
from certsym.api import Model
from certsym.certify import InputRecord
from certsym.cli import main
from certsym.decide import phases
from certsym.decide.dyadic import DyadicNetwork
from certsym.errors import InputError
from certsym.reproduce.examples import EXAMPLES
from certsym.workflows.audit import (
    Job,
    audit,
    canonical_proposal,
    collect_paths,
    fast_proposal,
    float32_bits,
    propose,
)

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")
F32 = np.float32


def _net(seed: int, n: int = 6, m: int = 3, k: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, m)).astype(F32), rng.standard_normal(n).astype(F32),
            rng.standard_normal((k, n)).astype(F32), rng.standard_normal(k).astype(F32)]


def _disguise(arrays: list[np.ndarray], seed: int) -> list[np.ndarray]:
    """The same function: units permuted and rescaled by powers of two, one unit split into two positively
    proportional halves, a unit with v = 0 and a unit with a = 0, b < 0 added."""
    W1, b1, W2, b2 = arrays
    rng = np.random.default_rng(seed)
    n, m = W1.shape
    perm, d = rng.permutation(n), F32(2.0) ** rng.integers(-3, 4, n).astype(F32)
    A, b, V = W1[perm] * d[:, None], b1[perm] * d, W2[:, perm] / d
    A, b, V = np.vstack([A, 4 * A[:1]]), np.append(b, 4 * b[0]), np.hstack([V, V[:, :1] / 8])
    V[:, 0] /= 2
    A = np.vstack([A, rng.standard_normal((1, m)).astype(F32), np.zeros((1, m), F32)])
    b = np.append(b, F32([0.5, -1.0]))
    V = np.hstack([V, np.zeros((V.shape[0], 1), F32), rng.standard_normal((V.shape[0], 1)).astype(F32)])
    return [A, b, V, b2.copy()]


def _save(path: Path, arrays) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **dict(zip(KEYS, arrays, strict=True)))
    return str(path)


def _exact(x) -> str:
    return str(fmpq(*float(x).as_integer_ratio()))


def _save_json(path: Path, arrays) -> str:
    W1, b1, W2, b2 = arrays
    data = {"M": [[_exact(x) for x in row] for row in W2], "A": [[_exact(x) for x in row] for row in W1],
            "b": [_exact(x) for x in b1], "c": [_exact(x) for x in b2]}
    path.write_text(json.dumps(data))
    return str(path)


def _run(args: list[str], capfd, code: int = 0) -> dict:
    assert main(["audit", *args, "--json"]) == code
    return json.loads(capfd.readouterr().out)


def _groups(out: dict) -> list[list[str]]:
    return sorted(sorted(Path(p).stem for p in c["members"]) for c in out["classes"])


def _replay_all(out: dict) -> int:
    """Replay every certificate against the files it names (the member and the member it is against), and check
    that the certificates of a class form a tree rooted at its representative; the number replayed."""
    count = 0
    for cls in out["classes"]:
        assert set(cls["certificates"]) == set(cls["against"]) == set(cls["members"]) - {cls["representative"]}
        for member in cls["certificates"]:
            path, seen = member, set()
            while path != cls["representative"]:  # every chain of certificates ends at the representative
                assert path not in seen and path in cls["members"]
                seen.add(path)
                path = cls["against"][path]
        for member, cert in cls["certificates"].items():
            report = certsym.check(cert, [cls["against"][member], member])
            assert report, (cert, report)
            count += 1
    return count


# -- collection ------------------------------------------------------------------------------------------------
def test_directories_are_searched_and_globs_expanded(tmp_path: Path, capfd) -> None:
    zoo = tmp_path / "zoo"
    a = _save(zoo / "a.npz", _net(0))
    b = _save(zoo / "sub" / "b.npz", _disguise(_net(0), 1))
    c = _save(zoo / "sub" / "deeper" / "c.npz", _net(2))
    p = _save_json(zoo / "sub" / "p.json", _net(3))
    _save(zoo / ".hidden" / "h.npz", _net(0))
    (zoo / "config.json").write_text('{"architectures": ["Sequential"]}')  # not a parameter file: passed over
    (zoo / "README.md").write_text("a zoo")
    plain = zoo / "sub" / "weights"  # a model file by content, without a suffix
    plain.write_bytes(Path(c).read_bytes())
    files, missing = collect_paths([str(zoo)])
    assert files == [a, b, p, str(plain), c] and missing == {}
    files, missing = collect_paths([f"{zoo}/**/*.npz", a, str(zoo / "nothing"), f"{zoo}/*.onnx"])
    assert files == [a, b, c]  # the matches sorted; a only once
    assert set(missing) == {str(zoo / "nothing"), f"{zoo}/*.onnx"}
    assert collect_paths([f"{zoo}/su?/[bx].npz", f"{zoo}/sub"])[0] == [b, p, str(plain), c]
    out = _run([f"{zoo}/**/*.npz", str(zoo / "sub" / "*.json"), "--workers", "1"], capfd)
    assert _groups(out) == [["a", "b"], ["c"], ["p"]] and out["unreadable"] == {}


def test_unreadable_files_are_reported(tmp_path: Path, capfd) -> None:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "broken.npz").write_bytes(b"PK\x03\x04 not really")
    _save(tmp_path / "zoo" / "ok.npz", _net(0))
    out = _run([str(tmp_path / "bad.json"), str(tmp_path / "zoo"), str(tmp_path / "none.npz"),
                str(tmp_path / "*.pt"), "--workers", "1"], capfd, code=2)
    assert _groups(out) == [["ok"]]
    assert set(out["unreadable"]) == {str(tmp_path / x) for x in ("bad.json", "zoo/broken.npz", "none.npz", "*.pt")}
    assert all(isinstance(r, str) and r and not r.startswith(str(tmp_path)) for r in out["unreadable"].values())
    assert main(["audit", str(tmp_path / "bad.json"), "--workers", "1"]) == 2
    assert "unreadable: " in capfd.readouterr().out


# -- proposal hashes -------------------------------------------------------------------------------------------
def test_float32_bits_rounds_as_ieee() -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-46, 40, 3000),
                             [3.4028235677973366e38, 3.4028236e38, 1.401298464324817e-45, 7.006492321624085e-46,
                              7.1e-46, -1e-50, 0.0, 1.1754942e-38, 1.1754943508222875e-38]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = (values.astype(F32) + F32(0)).view(np.uint32)
    for x, bits in zip(values.tolist(), expected.tolist(), strict=True):
        assert float32_bits(fmpq(*x.as_integer_ratio())) == bits, x
    a = (rng.standard_normal(3000) * 2.0 ** rng.integers(-70, 70, 3000)).astype(F32)
    b = (rng.standard_normal(3000) * 2.0 ** rng.integers(-70, 70, 3000)).astype(F32)
    with np.errstate(over="ignore", under="ignore"):
        q = (a / b + F32(0)).view(np.uint32)  # the fast path's normalization
    for x, y, bits in zip(a.tolist(), b.tolist(), q.tolist(), strict=True):
        assert float32_bits(fmpq(*x.as_integer_ratio()) / fmpq(*y.as_integer_ratio())) == bits


def _canonical(arrays) -> str:
    return canonical_proposal(Model("x", InputRecord("x", ""), list(arrays)).network)


def test_proposal_depends_on_the_function_only() -> None:
    """Both routes give one hash per function, through every disguise and reduction case: antiparallel units with
    and without a kink, merged units, units that merge to zero, extreme exponents (normalized rows that overflow
    and underflow in float32), bias-shifted and dead units; the affine part is left out."""
    rng = np.random.default_rng(7)
    hashes = set()
    for seed in range(30):
        arrays = _net(seed, n=int(rng.integers(1, 7)), m=int(rng.integers(1, 4)), k=int(rng.integers(1, 3)))
        W1, b1, W2, b2 = arrays
        n, m = W1.shape
        i = int(rng.integers(n))
        extra = [(-W1[i], -b1[i], W2[:, i] * F32(rng.choice([1, -1, 2]))),  # antiparallel: linear pair or a kink
                 (2 * W1[i], 2 * b1[i], -W2[:, i] / 2),                        # merges with unit i to zero
                 (np.zeros(m, F32), F32(0.75), W2[:, i]),                        # bias shift into c
                 (W1[i] * F32(2.0**60), b1[i] * F32(2.0**60), W2[:, i] * F32(2.0**-61))]  # merge, extreme scale
        tiny = np.zeros(m, F32)
        tiny[0], tiny[-1] = F32(2.0**100), F32(2.0**-100)  # r/a_p underflows (or is 1) in float32
        extra.append((tiny, F32(2.0**-120), W2[:, i]))
        take = [e for e in extra if rng.random() < 0.6]
        if take:
            W1 = np.vstack([W1, *[e[0][None, :] for e in take]])
            b1 = np.append(b1, [e[1] for e in take]).astype(F32)
            W2 = np.hstack([W2, *[e[2][:, None] for e in take]])
        arrays = [W1, b1, W2, b2]
        fast = fast_proposal(DyadicNetwork.from_arrays(*arrays))
        assert fast == _canonical(arrays)
        assert fast == fast_proposal(DyadicNetwork.from_arrays(*_disguise(arrays, seed)))
        assert fast == fast_proposal(DyadicNetwork.from_arrays(W1, b1, W2, b2 + 1))  # affine part left out
        hashes.add(fast)
    assert len(hashes) == 30


def test_a_rounding_collision_is_split_by_a_decision(tmp_path: Path, capfd) -> None:
    """σ(x + fl(1/3))·3 and σ(3x + 1): their normalized rows round to the same float32 bits and their kinks are
    both 3, so they share a proposal, but their kinks lie at different points."""
    def net(a, b, v):
        return [np.array(a, F32).reshape(-1, 1), np.array(b, F32), np.array([v], F32), np.zeros(1, F32)]

    third = float(F32(1 / 3))
    X, Y, both = net([1], [third], [3]), net([3], [1], [1]), net([1, 3], [third, 1], [3, 1])
    assert fast_proposal(DyadicNetwork.from_arrays(*X)) == fast_proposal(DyadicNetwork.from_arrays(*Y))
    assert fast_proposal(DyadicNetwork.from_arrays(*both)) == _canonical(both)  # two exact planes, one plane id
    paths = [_save(tmp_path / "x.npz", X), _save(tmp_path / "y.npz", Y), _save(tmp_path / "x2.npz", _disguise(X, 1))]
    out = _run([*paths, "--workers", "1", "--cert-dir", str(tmp_path / "c")], capfd)
    assert _groups(out) == [["x", "x2"], ["y"]] and len({c["hash"] for c in out["classes"]}) == 1
    assert _replay_all(out) == 1


# -- classes, certificates, JSON -------------------------------------------------------------------------------
def _zoo(tmp_path: Path) -> dict[str, str]:
    """Two bases with disguised members, and an affine twin of base 0 (same hyperplanes and kinks, another
    output bias: the same proposal, a different function) with a member of its own."""
    files = {}
    for base in (0, 1):
        files[f"b{base}_0"] = _save(tmp_path / f"b{base}_0.npz", _net(base))
        for j in (1, 2):
            files[f"b{base}_{j}"] = _save(tmp_path / "members" / f"b{base}_{j}.npz", _disguise(_net(base), 10 * j))
    W1, b1, W2, b2 = _net(0)
    twin = [W1, b1, W2, b2 + F32(1)]
    files["twin_0"] = _save(tmp_path / "twin_0.npz", twin)
    files["twin_1"] = _save(tmp_path / "members" / "twin_1.npz", _disguise(twin, 5))
    return files


@pytest.mark.parametrize("workers", ["1", "2"])
def test_classes_are_confirmed_and_certified(tmp_path: Path, capfd, workers: str) -> None:
    _zoo(tmp_path / "zoo")
    out = _run([str(tmp_path / "zoo"), "--workers", workers, "--cert-dir", str(tmp_path / "certs")], capfd)
    assert _groups(out) == [["b0_0", "b0_1", "b0_2"], ["b1_0", "b1_1", "b1_2"], ["twin_0", "twin_1"]]
    by_stem = {Path(c["representative"]).stem: c for c in out["classes"]}
    assert by_stem["b0_0"]["hash"] == by_stem["twin_0"]["hash"] != by_stem["b1_0"]["hash"]  # split by a decision
    assert by_stem["b0_0"]["shape"] == {"m": 3, "n": 6, "k": 2}
    assert _replay_all(out) == 5
    assert sorted(str(p) for p in (tmp_path / "certs").iterdir()) == sorted(
        cert for c in out["classes"] for cert in c["certificates"].values())
    capfd.readouterr()
    assert main(["check", "--quiet", "--named-inputs", str(tmp_path / "certs")]) == 0
    assert capfd.readouterr().out.count(": VALID equivalent") == 5  # the whole audit re-checked in one command
    cert = json.loads(Path(next(iter(by_stem["b0_0"]["certificates"].values()))).read_text())
    assert len(cert["inputs"]) == 2
    assert all("shape" in x and "parameters" not in x for x in cert["inputs"])  # referenced, not embedded


def test_json_schema_and_text_output(tmp_path: Path, capfd) -> None:
    _zoo(tmp_path / "zoo")
    out = _run([str(tmp_path / "zoo"), "--workers", "1", "--cert-dir", str(tmp_path / "c")], capfd)
    assert set(out) == {"classes", "unreadable", "deep_pairs", "engine", "near_misses"} and out["unreadable"] == {}
    assert out["deep_pairs"] == [] and out["engine"] == "this process"
    assert len(out["classes"]) == 3
    for cls in out["classes"]:
        assert set(cls) == {"hash", "shape", "members", "representative", "certificates", "against", "hidden"}
        assert set(cls["hidden"]) == set(cls["members"])  # each member's own width: 6, 7 with a split unit, …
        assert len(cls["hash"]) == 64 and int(cls["hash"], 16) >= 0
        assert set(cls["shape"]) == {"m", "n", "k"} and all(isinstance(v, int) for v in cls["shape"].values())
        assert cls["representative"] in cls["members"] and isinstance(cls["certificates"], dict)
    assert main(["audit", str(tmp_path / "zoo"), "--workers", "1"]) == 0
    text = capfd.readouterr().out
    assert text.startswith("8 networks, 3 distinct functions (on this process)\n") and "m=3 n=6 k=2" in text
    assert "9 hidden units as stored" in text  # a disguised member: a split unit and two dead ones
    assert "(representative)" in text and "(certificate " not in text


def test_float_and_json_inputs_mixed(tmp_path: Path, capfd) -> None:
    """Parameter files, float64 model files and float32 model files of one function form one class (a float
    network is chosen as representative); number-field networks equal to a rational one join it; irrational
    functions are grouped by a decision over their common field."""
    arrays = _net(4)
    js = _save_json(tmp_path / "a_json.json", _disguise(arrays, 3))
    f32 = _save(tmp_path / "b_f32.npz", arrays)
    wide = [x.astype(np.float64) for x in _disguise(arrays, 4)]
    # a dead unit (v = 0) whose weights only float64 holds: the general route, the same function
    wide[0] = np.vstack([wide[0], wide[0][:1] * (1 + 2.0**-40)])
    wide[1] = np.append(wide[1], 7.0)
    wide[2] = np.hstack([wide[2], np.zeros((2, 1))])
    f64 = _save(tmp_path / "c_f64.npz", wide)
    assert propose(js, Job()).hash == propose(f32, Job()).hash == propose(f64, Job()).hash
    assert propose(f32, Job()).fast and not propose(f64, Job()).fast and not propose(js, Job()).fast
    (tmp_path / "d_sqrt.json").write_text(json.dumps({"M": [["sqrt(2)"]], "A": [["sqrt(2)"]], "b": [0], "c": [0]}))
    (tmp_path / "e_two.json").write_text(json.dumps({"M": [[2]], "A": [[1]], "b": [0], "c": [0]}))
    (tmp_path / "f_irr.json").write_text(json.dumps({"M": [[1]], "A": [["sqrt(2)"]], "b": [1], "c": [0]}))
    (tmp_path / "g_irr.json").write_text(json.dumps({"M": [["1/2"]], "A": [["2*sqrt(2)"]], "b": [2], "c": [0]}))
    (tmp_path / "h_irr.json").write_text(json.dumps({"M": [[1]], "A": [["sqrt(3)"]], "b": [1], "c": [0]}))
    for name in ("E1", "E4"):
        for i, d in enumerate(EXAMPLES[name]):
            (tmp_path / f"{name}_{i}.json").write_text(json.dumps(d))
    out = _run([str(tmp_path), "--workers", "1", "--cert-dir", str(tmp_path / "certs")], capfd)
    assert _groups(out) == [["E1_0", "E1_1"], ["E4_0", "E4_1"], ["a_json", "b_f32", "c_f64"], ["d_sqrt", "e_two"],
                            ["f_irr", "g_irr"], ["h_irr"]]
    rep = next(c["representative"] for c in out["classes"] if f32 in c["members"])
    assert rep == f32
    assert _replay_all(out) == 6


def test_a_representative_that_cannot_be_read_is_replaced(tmp_path: Path, monkeypatch) -> None:
    import certsym.workflows.audit as module

    files = _zoo(tmp_path / "zoo")
    real = module._load

    def flaky(path: str, job: Job):
        if path == files["b0_0"]:
            raise InputError(f"{path}: gone")
        return real(path, job)

    monkeypatch.setattr(module, "_load", flaky)
    result = audit([str(tmp_path / "zoo")], Job(), workers=1, cert_dir=str(tmp_path / "c"))
    assert result.unreadable == {files["b0_0"]: "gone"}
    groups = sorted(sorted(Path(p).stem for p in c.members) for c in result.classes)
    assert groups == [["b0_1", "b0_2"], ["b1_0", "b1_1", "b1_2"], ["twin_0", "twin_1"]]
    assert len(list((tmp_path / "c").iterdir())) == 4  # one per member that is not a representative


def test_a_representative_lost_between_the_steps_is_replaced(tmp_path: Path, monkeypatch) -> None:
    """Two blocks in this process; b0_0 is read in its block (and b0_1 certified against it) but is gone when the
    second step reads it again: b0_1's certificate is withdrawn and the other classes are decided afresh."""
    import certsym.workflows.audit as module

    files = _zoo(tmp_path / "zoo")
    real, calls = module._load, []

    def flaky(path: str, job: Job):
        calls.append(path)
        if path == files["b0_0"] and calls.count(path) > 1:
            raise InputError(f"{path}: gone")
        return real(path, job)

    monkeypatch.setattr(module, "_load", flaky)
    monkeypatch.setattr(module, "_blocks", lambda items, count: [items[:4], items[4:]])
    result = audit([str(tmp_path / "zoo")], Job(), workers=1, cert_dir=str(tmp_path / "c"))
    assert calls.count(files["b0_0"]) >= 2 and result.unreadable == {files["b0_0"]: "gone"}
    out = result.to_json()
    assert _groups(out) == [["b0_1", "b0_2"], ["b1_0", "b1_1", "b1_2"], ["twin_0", "twin_1"]]
    assert sorted(str(p) for p in (tmp_path / "c").iterdir()) == sorted(
        cert for c in out["classes"] for cert in c["certificates"].values())
    assert _replay_all(out) == 4


def test_networks_not_held_in_memory_are_joined_in_the_second_step(tmp_path: Path, monkeypatch, capfd) -> None:
    """With no room to hold networks, each file starts a class of its block and the second step joins them: the
    same classes and certificates, by more decisions."""
    import certsym.workflows.audit as module

    _zoo(tmp_path / "zoo")
    monkeypatch.setattr(module, "HELD_WEIGHTS", 0)
    out = _run([str(tmp_path / "zoo"), "--workers", "1", "--cert-dir", str(tmp_path / "c")], capfd)
    assert _groups(out) == [["b0_0", "b0_1", "b0_2"], ["b1_0", "b1_1", "b1_2"], ["twin_0", "twin_1"]]
    assert all(set(c["against"].values()) == {c["representative"]} for c in out["classes"])
    assert _replay_all(out) == 5


# -- progress, runners, errors ---------------------------------------------------------------------------------
def test_progress_lines_when_stderr_is_not_a_tty(tmp_path: Path, capfd) -> None:
    _zoo(tmp_path / "zoo")
    assert main(["audit", str(tmp_path / "zoo"), "--workers", "1"]) == 0
    err = capfd.readouterr().err.splitlines()
    assert err == ["audit: 8/8 files read"]  # one block: every member decided as it is read, each file read once
    assert main(["audit", str(tmp_path / "zoo"), "--workers", "2"]) == 0
    err = capfd.readouterr().err.splitlines()
    # two blocks: only the classes of the second block are decided again, against the first's
    decisions = [line for line in err if line.endswith(" decisions")]
    assert "audit: 8/8 files read" in err and decisions and all(line.startswith("audit: ") for line in err)
    assert int(decisions[-1].split()[1].split("/")[1]) == 4  # b0_2, twin_1, b1_1 to the first block; twin_1 to twin_0
    audit([str(tmp_path / "zoo")], Job(), workers=1)  # the function prints nothing
    assert capfd.readouterr() == ("", "")


def test_paper_examples_on_a_process_pool(tmp_path: Path, capfd) -> None:
    paths = []
    for name in ("E1", "E4", "E5"):
        for i, d in enumerate(EXAMPLES[name]):
            (tmp_path / f"{name}_{i}.json").write_text(json.dumps(d))
            paths.append(str(tmp_path / f"{name}_{i}.json"))
    (tmp_path / "x.json").write_text(json.dumps({"M": [[1]], "A": [[1]], "b": [5], "c": [0]}))
    out = _run([*paths, str(tmp_path / "x.json"), "--workers", "2", "--cert-dir", str(tmp_path / "certs")], capfd)
    assert _groups(out) == [["E1_0", "E1_1"], ["E4_0", "E4_1"], ["E5_0", "E5_1"], ["x"]]
    assert _replay_all(out) == 3
    certs = sorted(str(p) for p in (tmp_path / "certs").glob("*.json"))
    assert main(["check", "--quiet", *certs]) == 0


def test_dask_local_cluster(tmp_path: Path, capfd) -> None:
    """--dask local:1 starts a LocalCluster of one worker process (a few seconds)."""
    import dask.distributed  # noqa: F401  (in the test extra: a missing install fails here, it is not skipped)

    files = _zoo(tmp_path / "zoo")
    out = _run([f"{tmp_path}/zoo/**/*.npz", "--dask", "local:1", "--cert-dir", str(tmp_path / "c")], capfd)
    assert _groups(out) == [["b0_0", "b0_1", "b0_2"], ["b1_0", "b1_1", "b1_2"], ["twin_0", "twin_1"]]
    assert _replay_all(out) == 5 and len(files) == 8


def test_dask_scheduler_address(tmp_path: Path, capfd) -> None:
    from dask import distributed  # in the test extra: a missing install fails here, it is not skipped

    _zoo(tmp_path / "zoo")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        out = _run([str(tmp_path / "zoo"), "--dask", cluster.scheduler_address], capfd)
    assert len(out["classes"]) == 3


def test_dask_errors_are_one_line(tmp_path: Path, capfd, monkeypatch) -> None:
    path = _save(tmp_path / "a.npz", _net(0))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["audit", path, "--dask", f"tcp://127.0.0.1:{port}"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("certsym: error: --dask tcp://127.0.0.1:") and "cannot reach" in err and err.count("\n") == 1
    assert main(["audit", path, "--dask", "local:zero"]) == 2
    assert "local:N" in capfd.readouterr().err
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if dask were not installed
    assert main(["audit", path, "--dask", "local"]) == 2
    assert capfd.readouterr().err == ("certsym: error: --dask needs dask.distributed "
                                       "(pip install 'dask[distributed]')\n")
    assert main(["audit", path, "--workers", "0"]) == 2


# -- deep networks ---------------------------------------------------------------------------------------------
def _layered(path: Path, layers: list, output_relu: bool = False) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"layers": [{"W": [[str(x) for x in row] for row in W], "b": [str(x) for x in b]}
                                           for W, b in layers], "output_relu": output_relu}))
    return str(path)


def test_deep_networks_are_classed_by_the_block_lemma_and_pairs_of_classes_decided(tmp_path: Path, capfd,
                                                                                   monkeypatch) -> None:
    """θ2 and an H-disguise of it form one class, with a deep_equivalent certificate; θ1 (θ2 plus a neuron
    σ(σ(x) − σ(x + 1)), 0 on the image of layer 1 but not on the orthant) computes the same function in a class of
    its own, and phase splitting shows the pair equal (undecided when its budget is spent), never different; θ3
    (another output bias) is separated from both by a witness."""
    zoo = tmp_path / "deep"
    l1 = ([[1], [1]], [0, 1])
    _layered(zoo / "t1.json", [l1, ([[1, 0], [0, 1], [1, -1]], [0, 0, 0]), ([[1, 1, 1]], [0])])
    _layered(zoo / "t2.json", [l1, ([[1, 0], [0, 1]], [0, 0]), ([[1, 1]], [0])])
    _layered(zoo / "t2h.json", [([[2], [1]], [2, 0]), ([[0, 1], ["1/2", 0]], [0, 0]), ([[1, 1]], [0])])
    _layered(zoo / "t3.json", [l1, ([[1, 0], [0, 1]], [0, 0]), ([[1, 1]], [1])])
    out = _run([str(zoo), "--cert-dir", str(tmp_path / "c")], capfd)
    assert _groups(out) == [["t1"], ["t2", "t2h"], ["t3"]]
    by_stem = {Path(c["representative"]).stem: i for i, c in enumerate(out["classes"])}
    assert out["classes"][by_stem["t2"]]["widths"] == [1, 2, 2, 1]
    assert _replay_all(out) == 1
    status = {tuple(sorted(Path(out["classes"][i]["representative"]).stem for i in p["classes"])): p["status"]
              for p in out["deep_pairs"]}
    assert status == {("t1", "t2"): "equivalent", ("t1", "t3"): "not_equivalent", ("t2", "t3"): "not_equivalent"}
    assert main(["audit", str(zoo)]) == 0
    text = capfd.readouterr().out
    assert text.startswith("4 networks, 3 classes (on ") and "widths 1-2-2-1" in text
    assert "1 pair(s) of classes realize one function (phase splitting" in text
    monkeypatch.setattr(phases, "MAX_NODES", 1)
    assert main(["audit", str(zoo)]) == 0
    assert "1 pair(s) of classes are not decided and may realize one function" in capfd.readouterr().out


# -- files that go away or change between the two steps, and odd files in a search (red-team regressions) ----------
def _two_blocks_with(tmp_path: Path, monkeypatch, on_second_read) -> tuple[dict, object]:
    """The zoo in two blocks in this process, ``on_second_read(path)`` called when a file is read a second time."""
    import certsym.workflows.audit as module

    files = _zoo(tmp_path / "zoo")
    real, calls = module._load, {}

    def load(path: str, job: Job):
        calls[path] = calls.get(path, 0) + 1
        if calls[path] > 1:
            on_second_read(path, files)
        return real(path, job)

    monkeypatch.setattr(module, "_load", load)
    monkeypatch.setattr(module, "_blocks", lambda items, count: [items[:4], items[4:]])
    return files, audit([str(tmp_path / "zoo")], Job(), workers=1, cert_dir=str(tmp_path / "c"))


def test_a_block_class_whose_first_file_goes_away_keeps_its_members(tmp_path: Path, monkeypatch) -> None:
    """b1_1 starts a class of the second block (b1_2 certified against it), then is gone in the second step: b1_2
    is decided again, against b1_0, and neither vanishes nor keeps a certificate against a missing file."""
    def gone(path, files):
        if path == files["b1_1"]:
            raise InputError(f"{path}: gone")

    files, result = _two_blocks_with(tmp_path, monkeypatch, gone)
    out = result.to_json()
    assert result.unreadable == {files["b1_1"]: "gone"}
    assert _groups(out) == [["b0_0", "b0_1", "b0_2"], ["b1_0", "b1_2"], ["twin_0", "twin_1"]]
    cls = next(c for c in out["classes"] if c["representative"] == files["b1_0"])
    assert cls["against"] == {files["b1_2"]: files["b1_0"]}
    assert sorted(str(p) for p in (tmp_path / "c").iterdir()) == sorted(
        cert for c in out["classes"] for cert in c["certificates"].values())
    assert _replay_all(out) == 4


def test_a_file_that_changed_between_the_steps_is_not_decided(tmp_path: Path, monkeypatch) -> None:
    """b1_1 is overwritten with another function after the first step: it is reported as changed, and b1_2 (which
    the first step certified against the old b1_1) is decided again."""
    def overwrite(path, files):
        if path == files["b1_1"]:
            W1, b1, W2, b2 = _net(1)
            _save(Path(path), [W1, b1, W2, b2 + F32(3)])

    files, result = _two_blocks_with(tmp_path, monkeypatch, overwrite)
    assert list(result.unreadable) == [files["b1_1"]] and "changed during the audit" in result.unreadable[files["b1_1"]]
    assert _groups(result.to_json()) == [["b0_0", "b0_1", "b0_2"], ["b1_0", "b1_2"], ["twin_0", "twin_1"]]


def test_odd_files_in_a_search_are_listed_not_fatal(tmp_path: Path) -> None:
    """A pipe (never opened), an HDF5 file (another framework), a network without inputs, a stale sharded index
    and, with --cert-dir, a file name that is not UTF-8: each is listed as unreadable, the rest is audited."""
    import os
    import subprocess

    from safetensors.numpy import save_file

    zoo = tmp_path / "zoo"
    _save(zoo / "a.npz", _net(0))
    _save(zoo / "b.npz", _disguise(_net(0), 1))
    os.mkfifo(zoo / "pipe.npz")
    (zoo / "legacy.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    W1, b1, W2, b2 = _net(2)
    _save(zoo / "m0.npz", [W1[:, :0], b1, W2, b2])
    save_file(dict(zip(KEYS, [np.ascontiguousarray(x) for x in _net(3)], strict=True)), str(zoo / "c.safetensors"))
    (zoo / "stale.safetensors.index.json").write_text(json.dumps({"weight_map": {"0.weight": "c.safetensors"}}))
    odd = os.fsencode(str(zoo)) + b"/odd\xff.npz"
    with open(odd, "wb") as fh:
        np.savez(fh, **dict(zip(KEYS, _net(4), strict=True)))
    proc = subprocess.run([sys.executable, "-m", "certsym", "audit", str(zoo), "--json", "--cert-dir",
                           str(tmp_path / "certs")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    out = json.loads(proc.stdout)
    bad = {Path(p).name: why for p, why in out["unreadable"].items()}
    assert set(bad) == {"pipe.npz", "legacy.h5", "m0.npz", "stale.safetensors.index.json", "odd\udcff.npz"}, bad
    assert "not a regular file" in bad["pipe.npz"] or "not a model file" in bad["pipe.npz"]
    assert "HDF5" in bad["legacy.h5"] and "input dimension m is 0" in bad["m0.npz"]
    assert "not valid UTF-8" in bad["odd\udcff.npz"]
    assert _groups(out) == [["a", "b"], ["c"]]  # the stale index's shard is audited on its own


def test_lone_networks_a_few_ulps_from_a_class_are_named(tmp_path: Path, capfd) -> None:
    """A copy with one input weight moved by one ulp, and one with another output bias, each a class of its own
    (decided exactly), are named as near misses of the class they almost join; an unrelated network is not."""
    W1, b1, W2, b2 = _net(0)
    _save(tmp_path / "zoo" / "a.npz", [W1, b1, W2, b2])
    _save(tmp_path / "zoo" / "b.npz", _disguise([W1, b1, W2, b2], 3))
    moved = W1.copy()
    for _ in range(8):  # eight ulps: a quotient of the normalized row cannot round it away
        moved[2, 1] = np.nextafter(moved[2, 1], F32(np.inf))
    _save(tmp_path / "zoo" / "c_ulp.npz", [moved, b1, W2, b2])
    _save(tmp_path / "zoo" / "d_bias.npz", [W1, b1, W2, b2 + F32(1)])
    _save(tmp_path / "zoo" / "e_other.npz", _net(9))
    out = _run([str(tmp_path / "zoo"), "--workers", "1"], capfd)
    assert _groups(out) == [["a", "b"], ["c_ulp"], ["d_bias"], ["e_other"]]
    assert out["near_misses"] and all(x["member"] != x["representative"] for x in out["near_misses"])
    near = {Path(x["member"]).stem: x for x in out["near_misses"]}
    assert set(near) == {"c_ulp", "d_bias"}
    assert near["c_ulp"]["neurons"] - near["c_ulp"]["partnered"] == 1 and 0 < near["c_ulp"]["ulps"] <= 16
    assert near["d_bias"]["partnered"] == near["d_bias"]["neurons"]
    assert Path(near["c_ulp"]["representative"]).stem == "a"
    assert main(["audit", str(tmp_path / "zoo"), "--workers", "1"]) == 0
    text = capfd.readouterr().out
    assert "near miss: " in text and "c_ulp.npz is not in class 0" in text and "1 of its 6 neurons" in text

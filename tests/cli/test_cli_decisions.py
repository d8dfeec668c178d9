"""The minimal / canon / equiv / check commands on every MATH.md example, in both directions."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from certsym.cli import main
from certsym.reproduce.examples import EXAMPLES

NAMES = list(EXAMPLES)


def _files(tmp_path: Path, name: str) -> tuple[Path, Path]:
    paths = []
    for i, d in enumerate(EXAMPLES[name]):
        p = tmp_path / f"p{i}.json"
        p.write_text(json.dumps(d))
        paths.append(p)
    return paths[0], paths[1]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("reverse", [False, True])
def test_equiv_and_check_both_directions(tmp_path: Path, name: str, reverse: bool) -> None:
    p1, p2 = _files(tmp_path, name)
    if reverse:
        p1, p2 = p2, p1
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(p1), str(p2), "--cert", str(cert)]) == 0
    assert json.loads(cert.read_text())["kind"] == "equivalent"
    assert main(["check", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(p1), str(p2)]) == 0  # the files bind, irrational ones too


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("reverse", [False, True])
def test_changed_constant_is_not_equivalent(tmp_path: Path, name: str, reverse: bool, capfd) -> None:
    p1, p2 = _files(tmp_path, name)
    changed = copy.deepcopy(EXAMPLES[name][1])
    changed["c"][0] = f"({changed['c'][0]}) + 1/3"
    p2.write_text(json.dumps(changed))
    if reverse:
        p1, p2 = p2, p1
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(p1), str(p2), "--cert", str(cert), "--json"]) == 1
    out = json.loads(capfd.readouterr().out)
    assert out["equivalent"] is False and out["path"] == "general" and out["witness"]
    assert json.loads(cert.read_text())["kind"] == "not_equivalent"
    assert main(["check", str(cert)]) == 0


def test_shape_mismatch_is_exit_2(tmp_path: Path, capfd) -> None:
    p1, _ = _files(tmp_path, "E1")
    p2 = tmp_path / "m2.json"
    p2.write_text(json.dumps(EXAMPLES["E6"][0]))
    assert main(["equiv", str(p1), str(p2)]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "input dimensions differ" in err


@pytest.mark.parametrize("name", NAMES)
def test_minimal_output_is_equivalent_and_minimal(tmp_path: Path, name: str) -> None:
    p1, _ = _files(tmp_path, name)
    out, cert = tmp_path / "min.json", tmp_path / "min.cert.json"
    assert main(["minimal", str(p1), "-o", str(out), "--cert", str(cert)]) == 0
    assert main(["equiv", str(p1), str(out)]) == 0
    assert main(["check", str(cert)]) == 0
    again = tmp_path / "again.json"
    assert main(["minimal", str(out), "-o", str(again)]) == 0
    assert json.loads(again.read_text()) == json.loads(out.read_text())  # idempotent, over Q(√2) too


def test_minimal_trace_names_the_moves(tmp_path: Path, capfd) -> None:
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"M": [[1, 5, 2, 0]], "A": [[1], [0], [2], [3]], "b": [0, 2, 0, 1], "c": [0]}))
    assert main(["minimal", str(p), "--trace", "-o", str(tmp_path / "o.json")]) == 0
    trace = capfd.readouterr().out
    assert "bias shifting" in trace and "merge lemma" in trace and "zeroing lemma" in trace
    reduced = json.loads((tmp_path / "o.json").read_text())
    assert reduced["M"] == [["5", "0", "0", "0"]] and reduced["c"] == ["10"]


@pytest.mark.parametrize("name", NAMES)
def test_canon_hashes_agree_on_equivalent_examples(tmp_path: Path, name: str, capfd) -> None:
    p1, p2 = _files(tmp_path, name)
    hashes = []
    for p in (p1, p2):
        assert main(["canon", str(p), "--json"]) == 0
        data = json.loads(capfd.readouterr().out)
        assert {"hash", "kinks", "linear", "constant"} <= set(data)
        hashes.append(data["hash"])
    assert hashes[0] == hashes[1]


def test_a_negative_box_is_read_as_a_value(tmp_path, capfd) -> None:
    """``--box -1,1`` used to be an argparse error (a value that begins with "-")."""
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"M": [["1", "-1"]], "A": [["1"], ["-1"]], "b": ["0", "0"], "c": ["0"]}))  # |x|
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]}))  # relu(x)
    assert main(["distance", str(a), str(b), "--box", "-1,1", "--regions", "200", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["upper"] == out["lower"] == "1"  # |x| − relu(x) = relu(−x), 1 at x = −1
    assert main(["distance", str(a), str(b), "--box=-2,1", "--regions", "200", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["lower"] == "2"


def test_stabilizer_counts_its_generators_in_words(tmp_path, capfd) -> None:
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"M": [["1", "1"]], "A": [["1"], ["1"]], "b": ["0", "0"], "c": ["0"]}))
    assert main(["stabilizer", str(p)]) == 0
    out = capfd.readouterr().out
    assert "1 generating transposition, at most C(n − n', 2) = 1 by Theorem 2" in out and "transpositions" not in out


def test_minimal_to_a_file_says_what_it_wrote(tmp_path, capfd) -> None:
    p, out = tmp_path / "p.json", tmp_path / "o.json"
    p.write_text(json.dumps({"M": [[1, 5, 2, 0]], "A": [[1], [0], [2], [3]], "b": [0, 2, 0, 1], "c": [0]}))
    assert main(["minimal", str(p), "-o", str(out)]) == 0
    assert capfd.readouterr().out == (f"θ_min written to {out}: 4 → 1 neuron (1 zeroed, 1 folded into c by bias "
                                      "shifting, 1 merged)\n")


def test_equiv_box_prefers_a_witness_inside_it(tmp_path, capfd) -> None:
    """With --box the witness lies in the box when the networks differ there (found by a float search, verified
    exactly, and certified); when they agree on the whole box, certsym says that the witness lies outside."""
    import json

    import numpy as np

    rng = np.random.default_rng(5)
    W1, b1 = rng.standard_normal((12, 40)).astype(np.float32), rng.standard_normal(12).astype(np.float32)
    W2, b2 = rng.standard_normal((3, 12)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    keys = ("0.weight", "0.bias", "2.weight", "2.bias")
    np.savez(tmp_path / "a.npz", **dict(zip(keys, (W1, b1, W2, b2), strict=True)))
    moved = W1.copy()
    moved[3, 7] = np.nextafter(moved[3, 7], np.float32(9))
    np.savez(tmp_path / "b.npz", **dict(zip(keys, (moved, b1, W2, b2), strict=True)))
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--box", "0,1", "--cert", str(cert)]) == 1
    capfd.readouterr()
    from fractions import Fraction

    x = [Fraction(t) for t in json.loads(cert.read_text())["proof"]["witness"]]
    assert len(x) == 40 and all(0 <= t <= 1 for t in x)
    assert main(["check", str(cert), "--quiet"]) == 0
    # a unit that only fires left of x_1 = -2: the networks agree on [0, 1]^40
    A = np.vstack([W1, -np.eye(1, 40, dtype=np.float32)])
    np.savez(tmp_path / "c.npz", **dict(zip(keys, (A, np.append(b1, np.float32(-2)),
                                                 np.hstack([W2, np.ones((3, 1), np.float32)]), b2), strict=True)))
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "c.npz"), "--box", "0,1"]) == 1
    assert "no point of --box where they differ was found" in capfd.readouterr().out


def _float16_pair(tmp_path: Path) -> tuple[str, str]:
    """A seeded float32 network of 6-16-3 and its float16 copy, as .npz files."""
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((16, 6), (16,), (3, 16), (3,))]
    keys = ("0.weight", "0.bias", "2.weight", "2.bias")
    paths = []
    for name, values in (("a", arrays), ("b", [x.astype(np.float16) for x in arrays])):
        np.savez(tmp_path / f"{name}.npz", **dict(zip(keys, values, strict=True)))
        paths.append(str(tmp_path / f"{name}.npz"))
    return paths[0], paths[1]


def test_a_region_budget_alone_makes_the_run_reproducible(tmp_path: Path, capfd) -> None:
    """--regions N without --seconds: no time limit, so two runs (in processes with different string hashing) write
    the same certificate byte for byte, and the tree stops at the region budget; budgets below 1 are refused."""
    a, b = _float16_pair(tmp_path)
    certs = []
    for hashing in ("1", "2"):
        cert = tmp_path / f"d{hashing}.json"
        run = subprocess.run([sys.executable, "-m", "certsym", "distance", a, b, "--box=-1,1", "--target", "1",
                              "--regions", "9", "--cert", str(cert), "--json"], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": hashing})
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        assert (out["regions"], out["stopped"]) == (9, "the region budget")  # 3 s of time would give ~300 regions
        certs.append(cert.read_bytes())
    assert certs[0] == certs[1]
    assert main(["check", str(tmp_path / "d1.json")]) == 0
    for bad in (["--regions", "0"], ["--regions", "-3"], ["--seconds", "0"], ["--target", "0.5"]):
        assert main(["distance", a, b, *bad]) == 2
        assert capfd.readouterr().err.startswith("certsym: error: --")

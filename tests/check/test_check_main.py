"""certsym_check.main and certsym.check(): usage errors are exit 2, and the API never raises on bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import TESTS

import certsym
from certsym_check.main import main

VALID = TESTS / "certificates" / "valid"


def _certificate(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An equivalence certificate for two npz files, and the files."""
    import numpy as np

    from certsym.cli import main as certsym_main

    w1, b1, w2, b2 = np.array([[1.0], [2.0]], "<f4"), np.zeros(2, "<f4"), np.array([[1.0, 1.0]], "<f4"), \
        np.zeros(1, "<f4")
    np.savez(tmp_path / "a.npz", **{"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2})
    np.savez(tmp_path / "b.npz", **{"0.weight": w1[::-1].copy(), "0.bias": b1, "2.weight": w2, "2.bias": b2})
    cert = tmp_path / "c.json"
    assert certsym_main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--cert", str(cert)]) == 0
    assert len(json.loads(cert.read_text())["inputs"]) == 2
    return cert, tmp_path / "a.npz", tmp_path / "b.npz"


def test_a_wrong_number_of_inputs_is_a_usage_error(tmp_path, capsys):
    cert, a, b = _certificate(tmp_path)
    assert main([str(cert), "--inputs", str(a), str(b)]) == 0
    capsys.readouterr()
    assert main([str(cert), "--inputs", str(a)]) == 2
    out = capsys.readouterr()
    assert "1 input file given; the certificate has 2 inputs" in out.err and "INVALID" not in out.out


def test_the_api_reports_an_unreadable_input_instead_of_raising(tmp_path):
    cert, a, b = _certificate(tmp_path)
    rep = certsym.check(str(cert), inputs=[a, tmp_path / "missing.npz"])
    assert not rep.valid and rep.cannot_check and "cannot read the input file" in rep.reason
    rep = certsym.check(str(cert), inputs=[a, tmp_path])  # a folder
    assert not rep.valid and "cannot read the input file" in rep.reason
    assert certsym.check(str(cert), inputs=[a, b]).valid


def test_the_api_reports_a_wrong_number_of_inputs(tmp_path):
    cert, a, _ = _certificate(tmp_path)
    rep = certsym.check(str(cert), inputs=[a])
    assert not rep.valid and rep.usage and rep.cannot_check


def test_valid_output_states_the_work_used(tmp_path, capsys):
    shutil.copy(VALID / "equivalent_E5.json", tmp_path / "e5.json")
    assert main([str(tmp_path / "e5.json")]) == 0
    out = capsys.readouterr().out
    assert "VALID equivalent" in out and "units of exact arithmetic" in out


def test_named_inputs_bind_the_files_a_certificate_names(tmp_path, capsys, monkeypatch):
    """--named-inputs reads the files at the names recorded in the certificate (relative to the current
    directory), binds them as --inputs does, and refuses what is not a readable regular file without blocking."""
    import os

    cert, a, b = _certificate(tmp_path)
    assert main([str(cert), "--named-inputs"]) == 0
    out = capsys.readouterr().out
    assert f"given file 0: {a} (named in the certificate)" in out and f"given file 1: {b} (named in the" in out
    assert main([str(cert), "--named-inputs", "--inputs", str(a), str(b)]) == 2
    assert "exclude each other" in capsys.readouterr().err
    doc = json.loads(cert.read_text())
    doc["inputs"][1]["name"] = "b_copy.npz"  # relative to the current directory
    shutil.copy(b, tmp_path / "b_copy.npz")
    relative = tmp_path / "relative.json"
    relative.write_text(json.dumps(doc))
    monkeypatch.chdir(tmp_path)
    assert main([str(relative), "--named-inputs", "--quiet"]) == 0
    capsys.readouterr()
    (tmp_path / "b_copy.npz").write_bytes(a.read_bytes())  # another file under the name: its SHA-256 differs
    assert main([str(relative), "--named-inputs", "--quiet"]) == 1
    assert "INVALID" in capsys.readouterr().out
    (tmp_path / "b_copy.npz").unlink()
    os.mkfifo(tmp_path / "b_copy.npz")  # a pipe with no writer: refused by its metadata, never opened
    assert main([str(relative), "--named-inputs", "--quiet"]) == 2
    assert "is not a regular file" in capsys.readouterr().out
    (tmp_path / "b_copy.npz").unlink()
    assert main([str(relative), "--named-inputs", "--quiet"]) == 2
    assert "CANNOT CHECK" in capsys.readouterr().out


def test_an_unbound_replay_says_so_and_require_files_refuses_it(tmp_path, capfd) -> None:
    """With no file given, VALID is about the embedded parameters only, and the headline says so; --require-files
    makes such a replay exit 2, while the same certificate bound to its files exits 0."""
    import json

    from certsym.cli import main as certsym_main

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]}))
    b.write_text(json.dumps({"M": [["2"]], "A": [["1/2"]], "b": ["0"], "c": ["0"]}))
    cert = tmp_path / "c.json"
    assert certsym_main(["equiv", str(a), str(b), "--cert", str(cert)]) == 0
    capfd.readouterr()
    assert certsym_main(["check", str(cert)]) == 0
    assert "VALID equivalent about the embedded parameters (no file bound)" in capfd.readouterr().out
    assert certsym_main(["check", str(cert), "--require-files"]) == 2
    assert "--require-files asks for files bound to it" in capfd.readouterr().out
    assert certsym_main(["check", str(cert), "--require-files", "--inputs", str(a), str(b)]) == 0
    out = capfd.readouterr().out
    assert "VALID equivalent:" in out and "no file bound" not in out

"""The checker accepts every certificate of the valid corpus and rejects every broken one."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, TESTS

from certsym.cli import main
from certsym_check import check_certificate

ROOT = REPO
CORPUS = TESTS / "certificates"
VALID = sorted((CORPUS / "valid").glob("*.json"))
INVALID = sorted((CORPUS / "invalid").glob("*.json"))
REQUIRED_ATTACKS = {"sign_flip", "wrong_permutation", "zero_scaling", "negative_scaling", "dropped_pair",
                    "duplicated_pair", "nudged_witness", "swapped_input", "wrong_version", "unknown_step",
                    "extra_neuron"}


def test_corpus_is_complete() -> None:
    assert {p.stem for p in INVALID} >= REQUIRED_ATTACKS
    kinds = {json.loads(p.read_text())["kind"] for p in VALID}
    assert kinds == {"equivalent", "not_equivalent", "minimal_form", "stabilizer", "affine", "not_affine",
                     "identifiable", "not_identifiable"}
    broken_kinds = {json.loads(p.read_text())["kind"] for p in INVALID}
    assert kinds <= broken_kinds  # every kind has broken certificates too


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_certificate_accepted(path: Path) -> None:
    report = check_certificate(json.loads(path.read_text()))
    assert report.valid, report.reason


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_broken_certificate_rejected(path: Path) -> None:
    report = check_certificate(json.loads(path.read_text()))
    assert not report.valid
    assert report.reason


def test_corpus_matches_current_code() -> None:
    """Regenerating the valid corpus with today's code gives the committed files."""
    sys.path.insert(0, str(CORPUS))
    try:
        import generate
    finally:
        sys.path.pop(0)
    generated = generate.valid_certificates()
    assert generated and set(generated) == {p.stem for p in VALID}
    for name, doc in generated.items():
        assert json.loads((CORPUS / "valid" / f"{name}.json").read_text()) == doc, name


def _write_pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    p1, p2 = tmp_path / "p1.json", tmp_path / "p2.json"
    p1.write_text('{"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [0]}')
    p2.write_text('{"M": [[1, 2]], "A": [[2], ["1/2"]], "b": [-2, 0], "c": [0]}')
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(p1), str(p2), "--cert", str(cert)]) == 0
    return p1, p2, cert


def test_inputs_bound_by_hash(tmp_path: Path, capfd) -> None:
    p1, p2, cert = _write_pair(tmp_path)
    assert main(["check", str(cert), "--inputs", str(p1), str(p2)]) == 0
    assert main(["check", str(cert), "--inputs", str(p2), str(p1)]) == 1
    assert "SHA-256" in capfd.readouterr().out
    p1.write_text(p1.read_text().replace("[0]}", "[0] }"))  # same numbers, different bytes
    assert main(["check", str(cert), "--inputs", str(p1), str(p2)]) == 1


def test_checker_exit_codes(tmp_path: Path) -> None:
    _, _, cert = _write_pair(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")

    def run(*args: str) -> int:
        return subprocess.run([sys.executable, "-m", "certsym_check", *args], capture_output=True).returncode

    assert run(str(cert)) == 0
    assert run(str(INVALID[0])) == 1
    assert run(str(bad)) == 2
    assert run(str(tmp_path / "missing.json")) == 2


FORBIDDEN = ("flint", "sympy", "numpy", "networkx", "mpmath")
INTERVALS = "kinds/landscape.py"  # the landscape replay may use mpmath's interval arithmetic, and only it


def test_checker_is_independent() -> None:
    """checker/certsym_check imports only the standard library and certsym_check itself (AST scan); the landscape
    module may also import mpmath (interval arithmetic)."""
    stdlib = set(sys.stdlib_module_names)
    base = ROOT / "checker" / "certsym_check"
    paths = sorted(base.rglob("*.py"))
    assert {"__init__.py", INTERVALS} <= {path.relative_to(base).as_posix() for path in paths}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: relative import"
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if path.relative_to(base).as_posix() == INTERVALS and top == "mpmath":
                    continue
                assert top not in FORBIDDEN, f"{path.name} imports {name}"
                assert top in stdlib or top in ("__future__", "certsym_check"), f"{path.name} imports {name}"


def test_schema_describes_the_valid_corpus() -> None:
    import jsonschema  # in the test extra; only this test needs it
    schema = json.loads((ROOT / "certificates" / "schema.json").read_text())
    for path in VALID:
        jsonschema.validate(json.loads(path.read_text()), schema)


def test_checker_and_producer_agree_on_kinds_and_claims() -> None:
    """The checker keeps its own copy of the claims (it imports nothing from certsym); they must agree."""
    from certsym.certify import CLAIMS, FORMAT, VERSION
    from certsym_check import envelope, kinds

    assert envelope.CLAIMS == CLAIMS and set(kinds.KINDS) == set(CLAIMS)
    schema = json.loads((ROOT / "certificates" / "schema.json").read_text())
    assert set(schema["properties"]["kind"]["enum"]) == set(CLAIMS)  # the schema lists every kind
    assert (envelope.FORMAT, envelope.VERSION) == (FORMAT, VERSION)

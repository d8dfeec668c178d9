"""checker/TRUST.md states, per certificate kind, the checker modules an auditor must read to trust a VALID verdict
of that kind: each kind's replay is run in a fresh interpreter (``python -c``: import certsym_check, replay a
certificate of the kind, list the certsym_check modules in ``sys.modules``) and the modules loaded, with their line
counts, must be the ones TRUST.md lists. An embedded ``equivalent`` certificate's replay loads at most 2,500 lines.

The certificates replayed are committed ones (certificates/, tests/certificates/valid/); the five kinds without a
committed certificate are made here from committed ones (an equivalence proof restated as a distance or top-1
agreement proof) or written by hand (two disagreements at a witness)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from certsym_check.envelope import CLAIMS
from certsym_check.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "checker" / "certsym_check"
TRUST = ROOT / "checker" / "TRUST.md"
EQUIVALENCE_LINES = 2_500  # issue 46: the embedded equivalence replay's trust base

COMMITTED = {
    "equivalent": "certificates/worked_examples/E2_equiv.json",
    "not_equivalent": "certificates/thm3_4_classification/E2_nudged.json",
    "minimal_form": "certificates/worked_examples/E2_minimal.json",
    "stabilizer": "certificates/thm2_stabilizer/E1.json",
    "affine": "certificates/prop14_affine/E4.json",
    "not_affine": "certificates/prop14_affine/E5.json",
    "identifiable": "certificates/thm1_generic_identifiability/E1.json",
    "not_identifiable": "certificates/cor9_non_identifiability/E5_converse_fails.json",
    "critical_point": "certificates/landscape/one-misfit_k6_critical_point.json",
    "hessian_inertia": "certificates/landscape/good-plus-negative_k10.json",
    "landscape_threshold": "certificates/landscape/one-misfit_real_k_threshold.json",
    "added_neuron": "certificates/landscape/one-misfit_k7_plus_one_zero_neuron.json",
    "wide_critical_point": "certificates/landscape/misfit_pair_n8_k7_minimum.json",
    "deep_equivalent": "certificates/deep/moves_d1_to_d4.json",
    "deep_not_equivalent": "certificates/deep/one_weight_moved.json",
    "deep_distance_bound": "certificates/deep/last_layers_differ_distance.json",
    "vnnlib_unsat": "certificates/vnnlib/band_0.3_unsat.json",
    "vnnlib_sat": "certificates/vnnlib/band_0.2_sat.json",
}

REPLAY = """
import json, sys
import certsym_check
report = certsym_check.check(json.loads(sys.stdin.read()))
assert report.valid, report.reason
ours = [m for name, m in list(sys.modules.items()) if name == "certsym_check" or name.startswith("certsym_check.")]
print(json.dumps(sorted(m.__file__ for m in ours if getattr(m, "__file__", None))))
"""


def _load(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def _restated(kind: str, source: str, proof: dict) -> dict:
    """A committed certificate's inputs with a proof of another kind."""
    doc = copy.deepcopy(_load(source))
    doc.update(kind=kind, claim=CLAIMS[kind], proof=proof)
    return doc


def _shallow(M: list, c: list) -> dict:
    return {"name": "net", "sha256": "0" * 64, "atoms": [],
            "parameters": {"A": [["1"]], "b": ["0"], "M": M, "c": c, "shape": {"m": 1, "n": 1, "k": 2}}}


def _deep(W: list, b: list) -> dict:
    return {"name": "net", "sha256": "0" * 64, "atoms": [],
            "parameters": {"layers": [{"W": [["1"]], "b": ["0"]}, {"W": W, "b": b}], "m": 1, "output_relu": False}}


def _disagreement(kind: str, inputs: list, proof: dict) -> dict:
    """f1 = (relu(x), 1/2) and f2 = (1/2, relu(x)): at x = 1 the largest outputs are 0 and 1."""
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind],
            "field": {"type": "QQ"}, "inputs": inputs,
            "proof": {"box": [["0", "1"]], "witness": ["1"], "classes": [0, 1], **proof}}


def certificate(kind: str) -> dict:
    """A VALID certificate of ``kind`` (committed, or made from committed ones)."""
    if kind in COMMITTED:
        return _load(COMMITTED[kind])
    shallow = _load(COMMITTED["equivalent"])
    box = [["0", "1"]] * shallow["inputs"][0]["parameters"]["shape"]["m"]
    if kind == "distance_bound":
        return _restated(kind, COMMITTED["equivalent"], {"box": box, "upper": "0", "lower": "0",
                                                          "equivalence": shallow["proof"], "statement": "Theorems 3/4"})
    if kind == "top1_agreement":
        return _restated(kind, COMMITTED["equivalent"], {"box": box, "equivalence": shallow["proof"],
                                                          "statement": "Theorems 3/4"})
    if kind == "deep_top1_agreement":
        deep = _load(COMMITTED["deep_equivalent"])
        return _restated(kind, COMMITTED["deep_equivalent"], {
            "box": [["0", "1"]] * deep["inputs"][0]["parameters"]["m"], "equivalence": deep["proof"],
            "statement": deep["proof"]["statement"]})
    if kind == "top1_disagreement":
        return _disagreement(kind, [_shallow([["1"], ["0"]], ["0", "1/2"]), _shallow([["0"], ["1"]], ["1/2", "0"])],
                             {})
    if kind == "deep_top1_disagreement":
        return _disagreement(kind, [_deep([["1"], ["0"]], ["0", "1/2"]), _deep([["0"], ["1"]], ["1/2", "0"])],
                             {"statement": "exact evaluation"})
    raise AssertionError(f"no certificate of kind {kind!r} to replay: add one to COMMITTED")


def lines(module: str) -> int:
    return (PACKAGE / module).read_text(encoding="utf-8").count("\n")


def loaded(kind: str) -> list[str]:
    """The certsym_check modules (paths in the package) a fresh interpreter holds after replaying ``kind``."""
    run = subprocess.run([sys.executable, "-c", REPLAY], input=json.dumps(certificate(kind)), capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return sorted(Path(f).resolve().relative_to(PACKAGE.resolve()).as_posix() for f in json.loads(run.stdout))


_MODULE = re.compile(r"`([\w/]+\.py)` \(([\d,]+)\)")


def stated() -> tuple[dict[str, int], dict[str, tuple[list[tuple[str, int]], int]]]:
    """TRUST.md's base (module -> lines) and, per kind, its further modules and the total it states."""
    text = TRUST.read_text(encoding="utf-8")
    base_line = next(line for line in text.splitlines() if line.startswith("Every replay:"))
    base = {m: int(n.replace(",", "")) for m, n in _MODULE.findall(base_line)}
    kinds = {}
    for line in text.splitlines():
        row = re.fullmatch(r"\| `(\w+)` \| (.*) \| ([\d,]+) \|", line)
        if row:
            kinds[row[1]] = ([(m, int(n.replace(",", ""))) for m, n in _MODULE.findall(row[2])],
                             int(row[3].replace(",", "")))
    return base, kinds


def row(kind: str, modules: list[str], base: set[str]) -> str:
    """The TRUST.md row for ``kind`` (what the failure message proposes)."""
    extra = [m for m in modules if m not in base]
    cells = ", ".join(f"`{m}` ({lines(m):,})" for m in extra) or "none"
    return f"| `{kind}` | {cells} | {sum(lines(m) for m in modules):,} |"


def test_trust_md_has_a_row_per_kind_and_the_modules_line_counts() -> None:
    base, kinds = stated()
    assert set(kinds) == set(KINDS)
    text = TRUST.read_text(encoding="utf-8")
    counts = [(m, int(n.replace(",", ""))) for m, n in _MODULE.findall(text)]
    wrong = {m: (n, lines(m)) for m, n in counts if n != lines(m)}
    assert not wrong, f"TRUST.md's line counts (stated, actual): {wrong}"
    total = re.search(r"^Every replay: .* = ([\d,]+) lines$", text, re.M)
    assert total and int(total[1].replace(",", "")) == sum(base.values())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_modules_a_replay_loads_are_the_ones_trust_md_lists(kind: str) -> None:
    modules = loaded(kind)
    base, kinds = stated()
    extra, total = kinds[kind]
    expected = row(kind, modules, set(base))
    assert set(base) <= set(modules), f"a module of every replay's base is not loaded: {set(base) - set(modules)}"
    assert sorted([*base, *(m for m, _ in extra)]) == modules, f"TRUST.md's row should read\n{expected}"
    assert all(lines(m) == n for m, n in extra) and total == sum(lines(m) for m in modules), \
        f"TRUST.md's row should read\n{expected}"


def test_an_embedded_equivalence_replay_loads_at_most_2500_lines() -> None:
    total = sum(lines(m) for m in loaded("equivalent"))
    assert total <= EQUIVALENCE_LINES, f"{total:,} lines of checker code loaded to replay an equivalence certificate"

"""Every committed certificate under certificates/ replays with the independent checker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import REPO

from certsym_check import check_certificate

ROOT = REPO / "certificates"
COMMITTED = sorted(p for p in ROOT.rglob("*.json") if p.name != "schema.json")


def test_a_curated_set_is_committed() -> None:
    kinds = {json.loads(p.read_text())["kind"] for p in COMMITTED}
    assert len(COMMITTED) >= 20
    assert kinds == {"equivalent", "not_equivalent", "minimal_form", "stabilizer", "affine", "not_affine",
                     "identifiable", "not_identifiable", "critical_point", "hessian_inertia", "landscape_threshold",
                     "added_neuron", "wide_critical_point", "deep_equivalent", "deep_not_equivalent",
                     "deep_distance_bound", "vnnlib_unsat", "vnnlib_sat"}


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_committed_certificate_replays(path: Path) -> None:
    report = check_certificate(json.loads(path.read_text()))
    assert report.valid, report.reason


def test_committed_certificates_match_the_schema() -> None:
    import jsonschema  # in the test extra; only this test needs it

    schema = json.loads((ROOT / "schema.json").read_text())
    for path in COMMITTED:
        jsonschema.validate(json.loads(path.read_text()), schema)

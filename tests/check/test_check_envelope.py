"""certsym_check.envelope: check_certificate refuses, with a reason, every envelope that is not exactly right.

The base documents are the valid corpus (tests/certificates/valid), each first confirmed VALID; then one thing is
changed at a time: the kind, the format or version, the claim, a missing or an extra key (at the top and in an
input record), the number of inputs in the certificate, and the number of input files given. Every such document
must come back not valid, with a one-line reason naming what is wrong, and with nothing reported as bound.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from helpers import TESTS

from certsym_check import check_certificate
from certsym_check.core import Report
from certsym_check.envelope import CLAIMS
from certsym_check.kinds import KINDS

VALID = sorted((TESTS / "certificates" / "valid").glob("*.json"))
TOP_KEYS = ["format", "version", "kind", "claim", "field", "inputs", "proof"]


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _rejected(doc: object, reason: str, files: list | None = None) -> Report:
    report = check_certificate(doc, files)
    assert not report.valid and not report
    assert reason in report.reason, report.reason
    assert "\n" not in report.reason
    assert report.bound == [] and report.facts == []
    return report


@pytest.fixture(scope="module", params=VALID, ids=lambda p: p.stem)
def base(request) -> dict:
    """A certificate of the valid corpus, confirmed VALID before any change is made to it."""
    doc = _load(request.param)
    report = check_certificate(doc)
    assert report.valid, report.reason
    return doc


def test_corpus_is_present() -> None:
    """The base documents exist and cover single-input and two-input kinds."""
    counts = {len(_load(p)["inputs"]) for p in VALID}
    assert len(VALID) >= 10 and counts == {1, 2}


def test_unknown_kind(base: dict) -> None:
    """A kind not in the checker's registry (or not a string) is refused as unknown (the claim is left as it was)."""
    unknown = ["equivalence", "EQUIVALENT", ""]
    assert not set(unknown) & set(KINDS)
    for kind in [*unknown, 7, None, ["equivalent"]]:
        doc = copy.deepcopy(base)
        doc["kind"] = kind
        _rejected(doc, "unknown kind")


@pytest.mark.parametrize("version", [0, 2, -1, "1", 1.0, True, None])
def test_wrong_version(base: dict, version: object) -> None:
    """Only the integer 1 is this format's version: 0, 2, the string "1", 1.0 and True are refused."""
    doc = copy.deepcopy(base)
    doc["version"] = version
    _rejected(doc, "unsupported format/version")


def test_wrong_format(base: dict) -> None:
    """The format string must be exactly certsym-certificate."""
    for fmt in ("certsym-certificates", "Certsym-Certificate", "", None):
        doc = copy.deepcopy(base)
        doc["format"] = fmt
        _rejected(doc, "unsupported format/version")


def test_claim_must_match_the_kind(base: dict) -> None:
    """The claim of any other kind, a claim with one character changed, and a missing claim text are refused; and
    so is a certificate whose kind is changed to another registered kind while its claim is kept."""
    own = base["claim"]
    others = [c for k, c in CLAIMS.items() if k != base["kind"] and c != own]
    for claim in others[:3] + [own + " ", own[:-1], own + "!", "", None]:
        doc = copy.deepcopy(base)
        doc["claim"] = claim
        _rejected(doc, "the claim does not match the kind")
    other_kind = next(k for k in KINDS if k != base["kind"] and k in CLAIMS and CLAIMS[k] != own)
    doc = copy.deepcopy(base)
    doc["kind"] = other_kind
    _rejected(doc, "the claim does not match the kind")


@pytest.mark.parametrize("key", TOP_KEYS)
def test_missing_key(base: dict, key: str) -> None:
    """Each of the seven top-level keys is required; its absence is named."""
    doc = copy.deepcopy(base)
    del doc[key]
    _rejected(doc, f"missing keys ['{key}']")


@pytest.mark.parametrize("key", ["comment", "signature", "Version"])
def test_extra_key(base: dict, key: str) -> None:
    """A key beyond the seven is refused and named (no silently ignored fields)."""
    doc = copy.deepcopy(base)
    doc[key] = "anything"
    _rejected(doc, f"unknown keys ['{key}']")


def test_input_record_keys(base: dict) -> None:
    """An input record with a key removed or one added is refused, naming the record."""
    doc = copy.deepcopy(base)
    del doc["inputs"][0]["sha256"]
    _rejected(doc, "inputs[0]")
    doc = copy.deepcopy(base)
    doc["inputs"][-1]["comment"] = "x"
    _rejected(doc, f"inputs[{len(base['inputs']) - 1}]: unknown keys ['comment']")
    doc = copy.deepcopy(base)
    doc["inputs"][0]["sha256"] = "0" * 63
    _rejected(doc, "sha256 64 lowercase hex digits")


def test_wrong_number_of_inputs_in_the_certificate(base: dict) -> None:
    """The kind fixes how many inputs the certificate holds: one dropped, one repeated, none, or inputs not a list,
    are refused with the expected length named."""
    count = len(base["inputs"])
    variants = [base["inputs"][:-1], base["inputs"] + base["inputs"][:1], [], {"0": base["inputs"][0]}]
    for inputs in variants:
        doc = copy.deepcopy(base)
        doc["inputs"] = copy.deepcopy(inputs)
        _rejected(doc, f"inputs must be a list of length {count}")


def test_wrong_number_of_input_files(base: dict) -> None:
    """Input files given in another number than the certificate's inputs: a usage error that cannot be checked
    (neither valid nor invalid); the right number of files with other bytes: refused on the SHA-256."""
    count = len(base["inputs"])
    for n_files in sorted({max(count - 1, 1), count + 1, count + 2} - {count}):  # no files at all: not bound
        report = check_certificate(base, [b"{}"] * n_files)
        assert not report.valid and report.cannot_check and report.usage
        assert f"the certificate has {count} input" in report.reason
    _rejected(base, "SHA-256 of the given file differs", [b"{}"] * count)


def test_not_an_object() -> None:
    """A certificate that is not a JSON object at all is refused, not an exception."""
    for doc in ([], "certificate", 3, None):
        _rejected(doc, "certificate must be an object")

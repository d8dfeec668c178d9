"""Certificates of VNN-LIB properties (certificates/FORMAT.md, "vnnlib_unsat" / "vnnlib_sat"): the property's text
with the SHA-256 of its file, which the checker reads itself, and the networks it names, embedded.

``vnnlib_unsat``: for every input box of the property, a ``deep_distance_bound`` proof on that box (f the first
network, g the second), from whose U the checker refutes one atom of every disjunct of the output part.
``vnnlib_sat``: an exact input in one of the property's boxes at which every atom of one disjunct holds. Cost:
linear in the certificate's size."""

from __future__ import annotations

from certsym.certify.deep import _input, deep_distance_certificate
from certsym.certify.envelope import InputRecord, document
from certsym.core.deep import LayeredNetwork
from certsym.decide.deep_distance import DeepDistance
from certsym.numbers import QQ


def spec_json(name: str, sha256: str, text: str) -> dict:
    """The property as a certificate holds it: its file's name and SHA-256, and its text (gunzipped)."""
    return {"name": name, "sha256": sha256, "text": text}


def vnnlib_unsat_certificate(spec: dict, distances: list[DeepDistance], records: tuple[InputRecord, ...],
                             nets: tuple[LayeredNetwork, ...]) -> dict:
    """``vnnlib_unsat``: one deep distance proof per box of the property, in its order."""
    proofs = [deep_distance_certificate(d, records, nets)["proof"] for d in distances]
    inputs = [_input(QQ, rec, net) for rec, net in zip(records, nets, strict=True)]
    return document("vnnlib_unsat", QQ, inputs, {"spec": spec, "boxes": proofs,
                                                  "statement": "distance bounds refute every disjunct"})


def vnnlib_sat_certificate(spec: dict, witness: list, records: tuple[InputRecord, ...],
                           nets: tuple[LayeredNetwork, ...]) -> dict:
    """``vnnlib_sat``: the exact counterexample x (every network reads it)."""
    inputs = [_input(QQ, rec, net) for rec, net in zip(records, nets, strict=True)]
    return document("vnnlib_sat", QQ, inputs, {"spec": spec, "witness": [str(x) for x in witness],
                                                "statement": "exact evaluation"})

"""Certificates of Theorems 3/4 (``equivalent``, ``not_equivalent``), of the minimal form (``minimal_form``) and of
Proposition 14 (``affine``, ``not_affine``). Cost: linear in the certificate's size."""

from __future__ import annotations

from functools import partial

from certsym.certify.envelope import (
    InputRecord,
    document,
    envelope,
    input_json,
    number_json,
    pairs_json,
    parameters_json,
    steps_json,
)
from certsym.core.reduction import Reduction
from certsym.decide.affine import AffineVerdict
from certsym.decide.dyadic import DyadicNetwork, FastVerdict
from certsym.decide.equivalence import Verdict, match_columns
from certsym.numbers import QQ, Field


def minimal_form_certificate(red: Reduction, record: InputRecord) -> dict:
    """Moves 1–3 take θ to θ_min, and θ_min is minimal."""
    F = red.original.field
    proof = {"steps": steps_json(F, red.steps), "minimal": parameters_json(red.minimal)}
    return envelope("minimal_form", F, [(record, red.original)], proof)


def affine_certificate(v: AffineVerdict, record: InputRecord) -> dict:
    """Proposition 14 both ways: reduction + pairs + the affine map, or a midpoint witness."""
    theta = v.reduction.original
    F = theta.field

    def enc(x):
        return number_json(F, x)

    if v.affine:
        proof = {"steps": steps_json(F, v.reduction.steps), "pairs": pairs_json(F, v.pairs),
                 "linear": [[enc(x) for x in row] for row in v.linear], "constant": [enc(x) for x in v.constant],
                 "statement": "Proposition 14"}
        return envelope("affine", F, [(record, theta)], proof)
    x, y = v.points
    mid = [(s + t) / 2 for s, t in zip(x, y, strict=True)]
    proof = {"x": [enc(F(t)) for t in x], "y": [enc(F(t)) for t in y],
             "values": [[enc(z) for z in theta(pt)] for pt in (x, y, mid)], "statement": "exact evaluation"}
    return envelope("not_affine", F, [(record, theta)], proof)


def equivalence_proof(v: Verdict, F: Field | None = None, columnar: bool = False) -> dict:
    """The ``equivalent`` proof of Theorems 3/4 (certificates/FORMAT.md): both reductions, the H_n matching (a list of
    records, or with ``columnar`` one object of three lists), the cross merges and the antisymmetric pairs. Cost:
    linear in the evidence."""
    F = F or v.theta1.field
    # over Q, number_json is str: called directly, without its test per number (10^5 matches and more)
    enc = str if F is QQ else partial(number_json, F)
    return {
        "reduction": [steps_json(F, v.red1.steps), steps_json(F, v.red2.steps)],
        "matching": matching_json(v.matches, enc) if columnar else [
            {"theta1": mt.i, "theta2": mt.j, "scale": enc(mt.lam), "statement": "H_n invariance"}
            for mt in v.matches
        ],
        "merges": [
            {"into": mg.into, "from": mg.source, "lambda": enc(mg.lam), "statement": "merge lemma"}
            for mg in v.merges
        ],
        "pairs": pairs_json(F, v.pairs),
        "statement": "affine parts cancel",
    }


def matching_json(matches: list, enc) -> dict:
    """The H_n matching in columns (certificates/FORMAT.md, ``equivalent``): entry s of the three lists is the record
    {"theta1", "theta2", "scale"}. Each scale object is encoded once: the fast path shares one object among the
    matches of equal scale (``certsym.decide.dyadic._Rows.ratios``), and a rational's hash costs more than its text.
    Cost: linear in the matches."""
    first, second, lams = match_columns(matches)
    text: dict[int, str] = {}
    scales = []
    for lam in lams:
        key = id(lam)
        scales.append(text[key] if key in text else text.setdefault(key, enc(lam)))
    return {"theta1": list(first), "theta2": list(second), "scale": scales, "statement": "H_n invariance"}


def fast_equivalence_certificate(v: FastVerdict, nets: tuple[DyadicNetwork, DyadicNetwork],
                                 records: tuple[InputRecord, InputRecord], embed: bool) -> dict:
    """EQUIVALENT or NOT EQUIVALENT from the fast path (``certsym.decide.dyadic``): the same proofs as the general
    path's. The inputs are embedded when ``embed``, else referenced by SHA-256 (the checker then needs the files)."""
    inputs = [input_json(QQ, rec, net.to_network() if embed else None, (net.m, net.n, net.k))
              for rec, net in zip(records, nets, strict=True)]
    if v.equivalent:
        return document("equivalent", QQ, inputs, equivalence_proof(v, QQ, columnar=True))
    proof = {"witness": [str(x) for x in v.witness], "values": [[str(y) for y in vals] for vals in v.values],
             "statement": "exact evaluation"}
    return document("not_equivalent", QQ, inputs, proof)


def equivalence_certificate(v: Verdict, records: tuple[InputRecord, InputRecord]) -> dict:
    """EQUIVALENT (Theorems 3/4 form) or NOT EQUIVALENT (witness), from a ``Verdict``."""
    F = v.theta1.field
    inputs = [(records[0], v.theta1), (records[1], v.theta2)]

    def enc(x):
        return number_json(F, x)

    if not v.equivalent:
        proof = {
            "witness": [enc(F(x)) for x in v.witness],
            "values": [[enc(y) for y in v.values[0]], [enc(y) for y in v.values[1]]],
            "statement": "exact evaluation",
        }
        return envelope("not_equivalent", F, inputs, proof)
    proof = equivalence_proof(v)
    return envelope("equivalent", F, inputs, proof)

"""Certificates of top-1 agreement (``top1_agreement``) and disagreement (``top1_disagreement``). Cost: linear in
the certificate's size."""

from __future__ import annotations

from typing import Any

from certsym.certify.distance import RELAXATION_STATEMENT, box_inputs, regions_json
from certsym.certify.envelope import InputRecord, document
from certsym.certify.equivalence import equivalence_proof
from certsym.core.network import Network
from certsym.decide.top1 import ShallowTop1
from certsym.errors import InputError
from certsym.numbers import QQ


def top1_certificate(r: ShallowTop1, records: tuple[InputRecord, InputRecord], nets: tuple[Network, Network],
                     embed: bool = True) -> dict:
    """``top1_agreement`` (the tree of regions with per-leaf margins, or the equivalence proof) or
    ``top1_disagreement`` (the witness and both classes). An unknown answer has no certificate: InputError."""
    if r.verdict == "unknown":
        raise InputError("top-1 agreement is unknown within the budget: no certificate written")
    witness = list(r.witness) if r.witness is not None else []
    inputs = box_inputs(records, nets, embed, witness + [d for _, _, d in r.pairs], r.box)
    proof: dict[str, Any] = {"box": [[str(lo), str(hi)] for lo, hi in r.box]}
    if r.verdict == "differ":
        proof |= {"witness": [str(x) for x in witness], "classes": list(r.classes)}
        return document("top1_disagreement", QQ, inputs, proof)
    if r.equivalence is not None:
        proof |= {"equivalence": equivalence_proof(r.equivalence), "statement": "Theorems 3/4"}
    else:
        proof |= {"pairs": [[i, j, str(d)] for i, j, d in r.pairs], "regions": regions_json(r.root),
                  "statement": RELAXATION_STATEMENT}
    return document("top1_agreement", QQ, inputs, proof)

"""Certificates of deep networks (MATH.md Part III): ``deep_equivalent`` (the moves D1–D4 on each network, the
alignment of hidden layers 1..L−1 and Part I's proof for the top blocks: the block lemma) and
``deep_not_equivalent`` (a witness and both exact outputs) and ``deep_distance_bound`` (the box, the alignment,
[L, U] and the witness). Cost: linear in the certificate's size."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from certsym.certify.envelope import InputRecord, document, number_json
from certsym.certify.equivalence import equivalence_proof
from certsym.core.deep import LayeredNetwork
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, DeepVerdict
from certsym.decide.deep_dyadic import DyadicLayers
from certsym.decide.dyadic import FastVerdict
from certsym.errors import InputError
from certsym.numbers import QQ, Field

if TYPE_CHECKING:  # the bounds' modules are imported by the commands that compute bounds, not by every writer
    from certsym.decide.deep_distance import DeepDistance


def layered_json(net: LayeredNetwork, encode=None) -> dict[str, Any]:
    """The layered parameter JSON of ``net`` (docs/FORMATS.md): {"layers": [{"W", "b"}, …], "m", "output_relu"},
    entries as exact strings (or ``encode(x)``)."""
    s = encode or net.field.to_string
    return {"layers": [{"W": [[s(x) for x in row] for row in layer.W], "b": [s(x) for x in layer.b]}
                       for layer in net.layers], "m": net.m, "output_relu": net.output_relu}


TENSOR_FILES = ("npz", "safetensors", "safetensors-sharded", "torch", "msgpack")  # what a deep input may reference


def _input(F: Field, rec: InputRecord, net, embed: bool = True) -> dict:
    """One "inputs" entry: the layers embedded, or (``embed`` false, a tensor file of at least two hidden layers)
    referenced by its SHA-256, widths and output ReLU (certificates/FORMAT.md, "Inputs"); a DyadicLayers network is
    made exact to be embedded."""
    entry = {"name": rec.name, "sha256": rec.sha256,
             "atoms": [{"expr": text, "value": number_json(F, value)} for text, value in rec.atoms],
             **({"model": rec.model} if rec.model else {})}
    if not embed and not rec.atoms and (rec.model or {}).get("format") in TENSOR_FILES and len(net.widths) > 3 \
            and not net.output_relu:
        return {**entry, "widths": list(net.widths), "output_relu": False}
    if isinstance(net, DyadicLayers):
        net = net.exact()
    return {**entry, "parameters": layered_json(net, str if F is QQ else lambda x: number_json(F, x))}


def _steps(F: Field, steps: list[dict]) -> list[dict]:
    return [{**s, "lambda": number_json(F, s["lambda"])} if "lambda" in s else dict(s) for s in steps]


def _equivalent_proof(F: Field, v: DeepVerdict) -> dict:
    if v.phases is not None:
        return {"phases": [[node[0], [str(u) for u in node[1]]] if len(node) > 1 else list(node) for node in v.phases],
                "statement": "phase splitting"}
    return {"reduction": [_steps(F, red.steps) for red in v.reductions],
            "alignment": [[[i, j, number_json(F, d)] for i, j, d in layer] for layer in v.alignment],
            "block": equivalence_proof(v.block, F, columnar=isinstance(v.block, FastVerdict)),
            "statement": "block lemma"}


def deep_certificate(v: DeepVerdict, records: tuple[InputRecord, InputRecord], embed: bool = True) -> dict:
    """``deep_equivalent`` or ``deep_not_equivalent`` from a DeepVerdict (an UNDECIDED verdict has none); model files
    referenced by SHA-256 instead of embedded when ``embed`` is false (certificates/FORMAT.md, "Inputs")."""
    F = v.theta1.field
    inputs = [_input(F, rec, net, embed) for rec, net in zip(records, (v.theta1, v.theta2), strict=True)]
    if v.status == EQUIVALENT:
        return document("deep_equivalent", F, inputs, _equivalent_proof(F, v))
    if v.status == NOT_EQUIVALENT:
        proof = {"witness": [number_json(F, x) for x in v.witness],
                 "values": [[number_json(F, y) for y in vals] for vals in v.values], "statement": "exact evaluation"}
        return document("deep_not_equivalent", F, inputs, proof)
    raise InputError(f"UNDECIDED has no certificate ({v.reason})")


def deep_distance_certificate(d: DeepDistance, records: tuple[InputRecord, InputRecord],
                              nets: tuple[LayeredNetwork, LayeredNetwork], epsilon=None) -> dict:
    """``deep_distance_bound``: the box, the alignment (or null), U, and L with its witness, and the tree of halvings
    with each leaf's bound when the box was split; or for a pair the block lemma shows equivalent its deep_equivalent
    proof and L = U = 0; both networks embedded (certificates/FORMAT.md).
    With ``epsilon``, the verdict against it as well."""
    inputs = [_input(QQ, rec, net) for rec, net in zip(records, nets, strict=True)]
    box = [[str(lo), str(hi)] for lo, hi in d.box]
    if d.equivalence is not None:
        equivalence = _equivalent_proof(QQ, d.equivalence)
        proof = {"box": box, "upper": "0", "lower": "0", "equivalence": equivalence,
                 "statement": equivalence["statement"]}
    else:
        alignment = None if d.alignment is None else [[[i, j, str(s)] for i, j, s in layer]
                                                      for layer in d.alignment]
        proof = {"box": box, "alignment": alignment, "upper": str(d.upper), "lower": str(d.lower),
                 "witness": [str(x) for x in d.witness], "statement": "interval differences and exact evaluation"}
        if d.tree:
            proof |= {"tree": [[x if isinstance(x, (str, int)) else str(x) for x in node] for node in d.tree],
                      "statement": "halvings of the box, interval differences and exact evaluation"}
        if d.method == "symbolic":
            proof["statement"] = "halvings of the box, symbolic differences in fixed point and exact evaluation"
        elif d.method == "zonotope":
            proof |= {"statement": "halvings of the box, zonotopes in fixed point and exact evaluation",
                      "columns": d.columns}
    if epsilon is not None:
        from certsym.decide.distance import epsilon_verdict

        proof |= {"epsilon": str(epsilon), "verdict": epsilon_verdict(d.lower, d.upper, epsilon)}
    return document("deep_distance_bound", QQ, inputs, proof)


def deep_top1_certificate(r, records: tuple[InputRecord, InputRecord],
                          nets: tuple[LayeredNetwork, LayeredNetwork]) -> dict:
    """``deep_top1_agreement`` (the box and the preorder tree of halvings and leaf classes, or the block lemma's
    proof) or ``deep_top1_disagreement`` (the witness and both classes); both networks embedded
    (certificates/FORMAT.md, ``certsym.decide.deep_top1``)."""
    if r.verdict not in ("agree", "differ"):
        raise InputError("an UNKNOWN top-1 verdict has no certificate")
    inputs = [_input(QQ, rec, net) for rec, net in zip(records, nets, strict=True)]
    box = [[str(lo), str(hi)] for lo, hi in r.box]
    if r.verdict == "differ":
        return document("deep_top1_disagreement", QQ, inputs, {
            "box": box, "witness": [str(x) for x in r.witness], "classes": list(r.classes),
            "statement": "exact evaluation"})
    if r.equivalence is not None:
        equivalence = _equivalent_proof(QQ, r.equivalence)
        proof = {"box": box, "equivalence": equivalence, "statement": equivalence["statement"]}
    else:
        proof = {"box": box, "tree": [[kind, value] for kind, value in r.tree],
                 "statement": "halvings of the box and symbolic margins" if r.method == "symbolic" else
                 "halvings of the box and interval margins"}
    return document("deep_top1_agreement", QQ, inputs, proof)

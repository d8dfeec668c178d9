"""Certificates of distance bounds (``distance_bound``). Cost: linear in the certificate's size."""

from __future__ import annotations

from typing import Any

from certsym.certify.envelope import InputRecord, document, input_json
from certsym.certify.equivalence import equivalence_proof
from certsym.core.network import Network
from certsym.errors import InputError
from certsym.numbers import QQ

DISTANCE_DENOMINATOR_BITS = 1 << 16  # the checker's bound on a distance_bound certificate's distinct denominators


def distance_certificate(d, records: tuple[InputRecord, InputRecord], nets: tuple[Network, Network],
                         embed: bool = True) -> dict:
    """``distance_bound``: the box, the alignment, U, and L with its witness (or, for an exactly equivalent pair,
    the equivalence proof and L = U = 0). Inputs embedded, or referenced by SHA-256 when ``embed`` is False."""
    inputs = box_inputs(records, nets, embed, [d.upper, d.lower, *d.witness, *(s for _, _, s in d.pairs)], d.box)
    proof: dict[str, Any] = {"box": [[str(lo), str(hi)] for lo, hi in d.box], "upper": str(d.upper),
                             "lower": str(d.lower)}
    if d.equivalence is not None:
        proof |= {"equivalence": equivalence_proof(d.equivalence), "statement": "Theorems 3/4"}
    elif d.search is None:
        proof |= {"pairs": [[i, j, str(s)] for i, j, s in d.pairs], "witness": [str(x) for x in d.witness],
                  "statement": "symbolic intervals and exact evaluation"}
    else:
        proof |= {"pairs": [[i, j, str(s)] for i, j, s in d.pairs], "witness": [str(x) for x in d.witness],
                  "regions": regions_json(d.search.root), "statement": RELAXATION_STATEMENT}
    if d.epsilon is not None:
        proof |= {"epsilon": str(d.epsilon), "verdict": d.verdict}
    return document("distance_bound", QQ, inputs, proof)


def box_inputs(records: tuple[InputRecord, InputRecord], nets: tuple[Network, Network], embed: bool,
               numbers: list, box: list) -> list:
    """The inputs of a certificate about two networks on a box, after the checker's bound on the distinct
    denominators of its numbers (certificates/FORMAT.md, Bounds). Raises InputError beyond it."""
    numbers = [x for lo, hi in box for x in (lo, hi)] + list(numbers) + \
        [x for net in nets for row in (*net.A, *net.M, net.b, net.c) for x in row]
    denominators = {int(x.q) for x in numbers}
    if sum(q.bit_length() for q in denominators) > DISTANCE_DENOMINATOR_BITS:
        raise InputError(f"the distinct denominators of the certificate's numbers exceed "
                         f"{DISTANCE_DENOMINATOR_BITS} bits in all, beyond what the checker replays "
                         "(certificates/FORMAT.md, Bounds); no certificate written")
    return [input_json(QQ, rec, net if embed else None, (net.m, net.n, net.k))
            for rec, net in zip(records, nets, strict=True)]


RELAXATION_STATEMENT = "linear relaxations with rational multipliers over a tree of regions"


def regions_json(root) -> list:
    """The branch-and-bound tree in preorder (certificates/FORMAT.md, Linear relaxations): each node's split, the
    refinements and bounds computed on it (the objective, its bound, its multipliers) and a top-1 leaf's class.
    Cost: linear in the tree and its multipliers."""
    out = []
    for node in root.preorder():
        entry: dict[str, Any] = {}
        if node.children:
            entry["split"] = list(node.split)
        if node.bound is not None and node.bound.refinements:
            entry["refine"] = [[*r.target, r.side, str(r.value), [[tag, idx, str(mu)] for (tag, idx), mu in
                                                                 sorted(r.multipliers.items())]]
                               for r in node.bound.refinements]
        if node.bound is not None and node.bound.bounds:
            entry["bounds"] = [[*o, str(value), [[tag, idx, str(mu)] for (tag, idx), mu in
                                                sorted(node.bound.multipliers[o].items())]]
                               for o, value in sorted(node.bound.bounds.items())]
        if node.shift and not node.children:
            entry["shift"] = True
        elif node.label is not None and not node.children:
            entry["class"] = node.label
        out.append(entry)
    return out

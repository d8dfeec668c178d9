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
    numbers = [x for lo, hi in d.box for x in (lo, hi)] + [d.upper, d.lower] + list(d.witness) + \
        [s for _, _, s in d.pairs] + [x for net in nets for row in (*net.A, *net.M, net.b, net.c) for x in row]
    denominators = {int(x.q) for x in numbers}
    if sum(q.bit_length() for q in denominators) > DISTANCE_DENOMINATOR_BITS:
        raise InputError(f"the distinct denominators of the distance certificate's numbers exceed "
                         f"{DISTANCE_DENOMINATOR_BITS} bits in all, beyond what the checker replays "
                         "(certificates/FORMAT.md, Bounds); no certificate written")
    inputs = [input_json(QQ, rec, net if embed else None, (net.m, net.n, net.k))
              for rec, net in zip(records, nets, strict=True)]
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


RELAXATION_STATEMENT = "linear relaxations with rational multipliers over a tree of regions"


def regions_json(root) -> list:
    """The branch-and-bound tree in preorder (certificates/FORMAT.md, Linear relaxations): each node's split and the
    bounds computed on it, each with its multipliers. Cost: linear in the tree and its multipliers."""
    out = []
    for node in root.preorder():
        entry: dict[str, Any] = {}
        if node.children:
            entry["split"] = list(node.split)
        if node.bound is not None and node.bound.bounds:
            entry["bounds"] = [[t, s, str(value), [[tag, idx, str(mu)] for (tag, idx), mu in
                                                  sorted(node.bound.multipliers[(t, s)].items())]]
                               for (t, s), value in sorted(node.bound.bounds.items())]
        out.append(entry)
    return out

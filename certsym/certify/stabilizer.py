"""Certificates of Theorem 2 (``stabilizer``). Cost: linear in the certificate's size."""

from __future__ import annotations

from certsym.certify.envelope import InputRecord, envelope, number_json
from certsym.core.network import Network
from certsym.decide.stabilizer import Stabilizer


def stabilizer_certificate(theta: Network, groups: tuple[Stabilizer, Stabilizer], record: InputRecord) -> dict:
    """Theorem 2, for θ and for (A, b): the partition into classes and zero neurons, the generators."""
    F = theta.field

    def group(g: Stabilizer) -> dict:
        return {
            "zero": list(g.zero),
            "classes": [list(c) for c in g.classes],
            "generators": [{"swap": [t.i, t.j], "scale": [number_json(F, t.d_i), number_json(F, t.d_j)]}
                           for t in g.generators],
            "finite_order": str(g.finite_order),
            "type": g.type,
        }

    proof = {"theta": group(groups[0]), "rows": group(groups[1]), "statement": "Theorem 2"}
    return envelope("stabilizer", F, [(record, theta)], proof)

"""Certificates of the landscape (``critical_point``, ``hessian_inertia``, ``wide_critical_point``,
``added_neuron``): Krawczyk boxes, inertia probes and descent directions. Cost: linear in the certificate's size."""

from __future__ import annotations

from fractions import Fraction

from certsym.certify.envelope import document
from certsym.landscape.certify import certificate_inertia, irreps_of
from certsym.numbers import QQ, rational_from_arb


def box_json(c) -> dict:
    box = c.box
    return {"family": c.family.name, "sizes": list(box.layout.sizes), "names": list(box.layout.names),
            **_box_proof(box), "statement": "Krawczyk"}


def critical_point_certificate(c) -> dict:
    """Krawczyk: a unique critical point of the restricted loss in the box, with the loss enclosure."""
    return document("critical_point", QQ, [], box_json(c))


def hessian_inertia_certificate(c, inertia) -> dict:
    """The certified point and, per probe (a Young subgroup's fixed-point space), the congruence Q certifying the
    signs of the compressed Hessian; the isotypic blocks and the total number of negative eigenvalues."""
    probes = [{"parts": p["parts"], "fixed": p["fixed"], "Q": [[str(x) for x in row] for row in p["Q"]]}
              for p in inertia.probes]
    proof = {"critical_point": box_json(c), "irreps": irreps_of(c, inertia.method), "probes": probes,
             "negative": inertia.negative, "statement": "isotypic decomposition and Sylvester's law of inertia"}
    return document("hessian_inertia", QQ, [], proof)


def _box_proof(box, loss: bool = True) -> dict:
    out = {"center": [str(x) for x in box.center], "radius": str(box.radius),
           "preconditioner": [[str(x) for x in row] for row in box.preconditioner]}
    if loss:
        out["loss"] = [str(rational_from_arb(box.loss.lower())), str(rational_from_arb(box.loss.upper()))]
    return out


def threshold_certificate(t) -> dict:
    """``landscape_threshold``: the bracket [a, b], the branch box certified for every k in it, and at each end the
    point's box with the congruences Q of every probe and their negative counts (``certify.Threshold``)."""
    def end(point) -> dict:
        return {**_box_proof(point.box), "Q": [[[str(x) for x in row] for row in p["Q"]] for p in point.inertia.probes],
                "negative": point.negative}

    a, b = t.bracket
    return document("landscape_threshold", QQ, [], {
        "family": t.family.name, "fixed": [int(s) for s in t.branch.layout.sizes[1:]], "bracket": [str(a), str(b)],
        "branch": _box_proof(t.branch, loss=False), "below": end(t.below), "above": end(t.above),
        "statement": "Krawczyk over an interval of k, and the signs of every compressed Hessian at both ends"})


def wide_critical_point_certificate(p) -> dict:
    """``wide_critical_point``: the generators, the Krawczyk box in orbit coordinates, the loss, the minimum claim."""
    return document("wide_critical_point", QQ, [], {
        "shape": list(p.shape), "generators": [[list(a), list(b)] for a, b in p.generators],
        **_box_proof(p, loss=False), "loss": [str(x) for x in p.loss],
        "minimum": p.minimum, "statement": "Krawczyk and symmetric criticality"})


def added_neuron_certificates(a) -> list[dict]:
    """``added_neuron``: per split row, the certified point, the row, λ = 1/2 and the negative directions, with the
    base point's hessian_inertia proof when the k − 1 directions make the inertia exact; and the zero neuron's
    direction with g(û) to about 15 digits around the float value (the checker encloses it)."""
    box = box_json(a.base)
    replayable = certificate_inertia(a.base) if a.base.certified else None
    base = (hessian_inertia_certificate(a.base, replayable)["proof"]
            if replayable is not None and replayable.negative is not None else None)
    out = []
    for s in a.splits:
        if s.negative:
            proof = {"critical_point": box, "embedding": {"split": s.row, "lambda": "1/2"},
                     "directions": [[[str(x) for x in row] for row in U] for U in s.directions],
                     "negative": s.negative, "statement": "positive homogeneity and Courant-Fischer"}
            if base is not None and s.negative == len(a.W) - 1:
                proof["base_inertia"] = base
            out.append(document("added_neuron", QQ, [], proof))
    if a.zero.slope < 0:
        g = Fraction(a.zero.slope).limit_denominator(10**15)
        margin = abs(g) / 1000
        out.append(document("added_neuron", QQ, [], {
            "critical_point": box, "embedding": {"zero": True},
            "direction": [str(x) for x in a.zero.direction],
            "slope": [str(g - margin), str(min(g + margin, Fraction(0)))], "statement": "positive homogeneity"}))
    return out

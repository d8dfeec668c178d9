"""Certificates: the JSON documents that ``certsym_check`` replays (format in certificates/FORMAT.md).

    {"format": "certsym-certificate", "version": 1, "kind": ..., "claim": ..., "field": ...,
     "inputs": [{"name", "sha256", "parameters"}], "proof": {...}}

Numbers are strings: over Q "p/q"; over Q(α) a list of coefficient strings (lowest degree first)
of a polynomial in α. The field is {"type": "QQ"} or {"type": "number_field", "minpoly": [...],
"interval": [lo, hi], "generator": "..."} (α the unique root of minpoly in [lo, hi]).
Building a certificate costs time linear in its size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from certsym.affine import AffineVerdict
from certsym.configurations import ConfigurationEvidence
from certsym.decide.stabilizer import Stabilizer
from certsym.dyadic import DyadicNetwork, FastVerdict
from certsym.equivalence import Verdict
from certsym.errors import InputError
from certsym.identifiability import Identifiability
from certsym.io.params import network_to_json
from certsym.network import Network
from certsym.numbers import QQ, Field, NumberField, Scalar, rational_from_arb
from certsym.reduction import Reduction, Step

FORMAT = "certsym-certificate"
VERSION = 1

CLAIMS = {
    "equivalent": "rho(theta1) = rho(theta2)",
    "not_equivalent": "rho(theta1) != rho(theta2)",
    "minimal_form": "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)",
    "affine": "rho(theta1) is the affine map x -> L x + C given",
    "not_affine": "rho(theta1) is not affine",
    "identifiable": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit",
    "not_identifiable": "theta' realizes rho(theta1) and lies outside the H_n-orbit of theta1",
    "stabilizer": "Stab_H_n(theta) and Stab_H_n(A,b) are the products of symmetric groups and H_n' stated",
    "critical_point": "the restricted loss has exactly one critical point in the box, a critical point of F on M(k,k), "
                      "with F in the interval given",
    "distance_bound": "sup over the box of ||rho(theta1)(x) - rho(theta2)(x)||_inf lies in [lower, upper]",
    "hessian_inertia": "the Hessian of F at the certified critical point has no zero eigenvalue and the number of "
                       "negative eigenvalues given",
    "wide_critical_point": "F on M(n,k) has exactly one critical point in the box of the fixed-point space of the "
                           "group generated, with F in the interval given (and, if stated, positive definite Hessian)",
    "added_neuron": "the certified critical point with one neuron added (a split row or a zero row) is not a local "
                    "minimum of F on M(k+1,k)",
}


@dataclass(frozen=True)
class InputRecord:
    """Where a parameter came from: a display name, the SHA-256 of the file's bytes, and the
    radicals and roots written in the file with their values (so the checker can re-read it)."""

    name: str
    sha256: str
    atoms: tuple[tuple[str, Scalar], ...] = ()
    model: dict | None = None  # model files: the format and the tensor names read


def field_json(F: Field) -> dict[str, Any]:
    """The "field" entry: {"type": "QQ"} or the number field's minimal polynomial and isolating interval."""
    if isinstance(F, NumberField):
        coeffs = [str(c) for c in F.minpoly.coeffs()]
        bits = sum(abs(int(c.split("/")[0])).bit_length() + (int(c.split("/")[1]).bit_length() if "/" in c else 1)
                   for c in coeffs)
        if len(coeffs) - 1 > 64 or bits > 1 << 14:  # the checker's bounds (certificates/FORMAT.md, "Bounds")
            raise InputError(f"the number field Q({F.expr}) has degree {len(coeffs) - 1} and {bits} coefficient bits: "
                             "beyond what the checker replays (degree 64, 16384 bits); no certificate written")
        return {
            "type": "number_field",
            "minpoly": coeffs,
            "interval": [str(F.lo), str(F.hi)],
            "generator": F.expr,
        }
    return {"type": "QQ"}


def number_json(F: Field, x: Scalar) -> str | list[str]:
    """An exact number: "p/q" over Q, or coefficient strings (lowest degree first) over Q(α)."""
    if isinstance(F, NumberField):
        coeffs = F(x).poly.coeffs()
        return [str(c) for c in coeffs] if coeffs else ["0"]
    return str(x)


def parameters_json(net: Network) -> dict[str, Any]:
    """θ with every entry encoded exactly (number_json); shape always included."""
    return network_to_json(net, lambda x: number_json(net.field, x))


def _input_json(F: Field, rec: InputRecord, net: Network | None, shape: tuple[int, int, int] | None) -> dict:
    """One "inputs" entry: the parameters embedded, or (``net`` None) the model file referenced by its
    SHA-256 and shape only; the checker then reads the file itself."""
    entry = {"name": rec.name, "sha256": rec.sha256,
             "atoms": [{"expr": text, "value": number_json(F, value)} for text, value in rec.atoms],
             **({"model": rec.model} if rec.model else {})}
    if net is None:
        m, n, k = shape
        return {**entry, "shape": {"m": m, "n": n, "k": k}}
    return {**entry, "parameters": parameters_json(net)}


def _envelope(kind: str, F: Field, inputs: list[tuple[InputRecord, Network]], proof: dict) -> dict:
    return _document(kind, F, [_input_json(F, rec, net, None) for rec, net in inputs], proof)


def _document(kind: str, F: Field, inputs: list[dict], proof: dict) -> dict:
    return {"format": FORMAT, "version": VERSION, "kind": kind, "claim": CLAIMS[kind], "field": field_json(F),
            "inputs": inputs, "proof": proof}


def steps_json(F: Field, steps: list[Step]) -> list[dict[str, Any]]:
    """Reduction steps (moves 1–3) as certificate steps, each citing its lemma."""
    out = []
    for s in steps:
        if s.kind == "merge":
            out.append({"step": "merge", "into": s.neuron, "from": s.source,
                        "lambda": number_json(F, s.lam), "statement": s.statement})
        else:
            out.append({"step": s.kind, "neuron": s.neuron, "statement": s.statement})
    return out


def minimal_form_certificate(red: Reduction, record: InputRecord) -> dict:
    """Moves 1–3 take θ to θ_min, and θ_min is minimal."""
    F = red.original.field
    proof = {"steps": steps_json(F, red.steps), "minimal": parameters_json(red.minimal)}
    return _envelope("minimal_form", F, [(record, red.original)], proof)


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
    return _envelope("stabilizer", F, [(record, theta)], proof)


def _pairs_json(F: Field, pairs) -> list[dict]:
    return [
        {
            "i": p.i,
            "j": p.j,
            "lambda": number_json(F, p.lam),
            "linear": [[number_json(F, x) for x in row] for row in p.linear],
            "constant": [number_json(F, x) for x in p.constant],
            "statement": "sigma(z) - sigma(-z) = z",
        }
        for p in pairs
    ]


def affine_certificate(v: AffineVerdict, record: InputRecord) -> dict:
    """Proposition 14 both ways: reduction + pairs + the affine map, or a midpoint witness."""
    theta = v.reduction.original
    F = theta.field

    def enc(x):
        return number_json(F, x)

    if v.affine:
        proof = {"steps": steps_json(F, v.reduction.steps), "pairs": _pairs_json(F, v.pairs),
                 "linear": [[enc(x) for x in row] for row in v.linear], "constant": [enc(x) for x in v.constant],
                 "statement": "Proposition 14"}
        return _envelope("affine", F, [(record, theta)], proof)
    x, y = v.points
    mid = [(s + t) / 2 for s, t in zip(x, y, strict=True)]
    proof = {"x": [enc(F(t)) for t in x], "y": [enc(F(t)) for t in y],
             "values": [[enc(z) for z in theta(pt)] for pt in (x, y, mid)], "statement": "exact evaluation"}
    return _envelope("not_affine", F, [(record, theta)], proof)


def _within_checker_bounds(theta: Network, ev) -> None:
    """Refuse to write an identifiable certificate the checker would refuse to replay (certificates/FORMAT.md,
    "Bounds"): nobody could check it."""
    from certsym_check import theorem1 as B

    products = theta.k * theta.m * theta.n
    if isinstance(ev, ConfigurationEvidence):
        p, d = len(ev.planes), len(ev.doubled_minor)
        problem = B.configuration_bounds(products, p, d, theta.m, getattr(theta.field, "degree", 1))
    elif ev.split is not None:
        problem = B.split_bounds(products, theta.n, ev.split) if theta.field is QQ else \
            "the meet-in-the-middle form is accepted over QQ only"
    else:
        problem = B.kernel_bounds(products, len(ev.pivots), len(ev.free), theta.k * theta.m)
    if problem:
        raise InputError(f"the verdict holds, but its certificate would exceed the checker's bounds ({problem}); no "
                         "certificate written")


def identifiability_certificate(v: Identifiability, record: InputRecord) -> dict:
    """Theorem 1 (identifiable: each condition's evidence: a rank minor and a kernel enumeration, a
    meet-in-the-middle split, or the refuted configurations of MATH.md's antiparallel decision) or Corollary 9
    (an explicit θ' in the fibre, with the equivalence proof and the orbit separation the checker recomputes)."""
    theta = v.theta
    F = theta.field

    def enc(x):
        return number_json(F, x)

    if not v.identifiable:
        proof = {"counterexample": parameters_json(v.counterexample),
                 "equivalence": _equivalence_proof(v.equivalence), "statement": "Corollary 9"}
        return _envelope("not_identifiable", F, [(record, theta)], proof)
    proof = {"nonzero_v": [next(j for j, x in enumerate(nu.v) if x != 0) for nu in theta.neurons()],
             "nonzero_a": [next(q for q, x in enumerate(nu.a) if x != 0) for nu in theta.neurons()]}
    ev = v.evidence
    _within_checker_bounds(theta, ev)
    if isinstance(ev, ConfigurationEvidence):
        proof |= {"hyperplanes": ev.planes, "doubled_minor": ev.doubled_minor,
                  "configurations": [[[rows, cols] for rows, cols in layer] for layer in ev.minors],
                  "statement": "Theorem 1 (antiparallel rows)"}
    elif ev.split is not None:
        proof |= {"zero_factor": {"split": ev.split}, "statement": "Theorem 1"}
    else:
        proof |= {"zero_factor": {"rows": ev.rows, "pivots": ev.pivots, "free": ev.free,
                                  "R": [[enc(x) for x in row] for row in ev.R]}, "statement": "Theorem 1"}
    return _envelope("identifiable", F, [(record, theta)], proof)


def _equivalence_proof(v: Verdict, F: Field | None = None) -> dict:
    F = F or v.theta1.field

    def enc(x):
        return number_json(F, x)

    return {
        "reduction": [steps_json(F, v.red1.steps), steps_json(F, v.red2.steps)],
        "matching": [
            {"theta1": mt.i, "theta2": mt.j, "scale": enc(mt.lam), "statement": "H_n invariance"}
            for mt in v.matches
        ],
        "merges": [
            {"into": mg.into, "from": mg.source, "lambda": enc(mg.lam), "statement": "merge lemma"}
            for mg in v.merges
        ],
        "pairs": _pairs_json(F, v.pairs),
        "statement": "affine parts cancel",
    }


def fast_equivalence_certificate(v: FastVerdict, nets: tuple[DyadicNetwork, DyadicNetwork],
                                 records: tuple[InputRecord, InputRecord], embed: bool) -> dict:
    """EQUIVALENT or NOT EQUIVALENT from the fast path (``certsym.dyadic``): the same proofs as the general path's.
    The inputs are embedded when ``embed``, else referenced by SHA-256 (the checker then needs the files)."""
    inputs = [_input_json(QQ, rec, net.to_network() if embed else None, (net.m, net.n, net.k))
              for rec, net in zip(records, nets, strict=True)]
    if v.equivalent:
        return _document("equivalent", QQ, inputs, _equivalence_proof(v, QQ))
    proof = {"witness": [str(x) for x in v.witness], "values": [[str(y) for y in vals] for vals in v.values],
             "statement": "exact evaluation"}
    return _document("not_equivalent", QQ, inputs, proof)


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
        return _envelope("not_equivalent", F, inputs, proof)
    proof = _equivalence_proof(v)
    return _envelope("equivalent", F, inputs, proof)


def _box_json(c) -> dict:
    box = c.box
    lo, hi = box.loss.lower(), box.loss.upper()
    return {"family": c.family.name, "sizes": list(box.layout.sizes), "names": list(box.layout.names),
            "center": [str(x) for x in box.center], "radius": str(box.radius),
            "preconditioner": [[str(x) for x in row] for row in box.preconditioner],
            "loss": [str(rational_from_arb(lo)), str(rational_from_arb(hi))], "statement": "Krawczyk"}


def critical_point_certificate(c) -> dict:
    """Krawczyk: a unique critical point of the restricted loss in the box, with the loss enclosure."""
    return _document("critical_point", QQ, [], _box_json(c))


def hessian_inertia_certificate(c, inertia) -> dict:
    """The certified point and, per probe (a Young subgroup's fixed-point space), the congruence Q certifying the
    signs of the compressed Hessian; the isotypic blocks and the total number of negative eigenvalues."""
    from certsym.landscape.certify import irreps_of

    probes = [{"parts": p["parts"], "fixed": p["fixed"], "Q": [[str(x) for x in row] for row in p["Q"]]}
              for p in inertia.probes]
    proof = {"critical_point": _box_json(c), "irreps": irreps_of(c, inertia.method), "probes": probes,
             "negative": inertia.negative, "statement": "isotypic decomposition and Sylvester's law of inertia"}
    return _document("hessian_inertia", QQ, [], proof)


def wide_critical_point_certificate(p) -> dict:
    """``wide_critical_point``: the generators, the Krawczyk box in orbit coordinates, the loss, the minimum claim."""
    return _document("wide_critical_point", QQ, [], {
        "shape": list(p.shape), "generators": [[list(a), list(b)] for a, b in p.generators],
        "center": [str(x) for x in p.center], "radius": str(p.radius),
        "preconditioner": [[str(x) for x in row] for row in p.preconditioner], "loss": [str(x) for x in p.loss],
        "minimum": p.minimum, "statement": "Krawczyk and symmetric criticality"})


def added_neuron_certificates(a) -> list[dict]:
    """``added_neuron``: per split row, the certified point, the row, λ = 1/2 and the negative directions, with the
    base point's hessian_inertia proof when the k − 1 directions make the inertia exact; and the zero neuron's
    direction with g(û) to about 15 digits around the float value (the checker encloses it)."""
    from fractions import Fraction

    from certsym.landscape.certify import certificate_inertia

    box = _box_json(a.base)
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
            out.append(_document("added_neuron", QQ, [], proof))
    if a.zero.slope < 0:
        g = Fraction(a.zero.slope).limit_denominator(10**15)
        margin = abs(g) / 1000
        out.append(_document("added_neuron", QQ, [], {
            "critical_point": box, "embedding": {"zero": True},
            "direction": [str(x) for x in a.zero.direction],
            "slope": [str(g - margin), str(min(g + margin, Fraction(0)))], "statement": "positive homogeneity"}))
    return out


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
    inputs = [_input_json(QQ, rec, net if embed else None, (net.m, net.n, net.k))
              for rec, net in zip(records, nets, strict=True)]
    proof: dict[str, Any] = {"box": [[str(lo), str(hi)] for lo, hi in d.box], "upper": str(d.upper),
                             "lower": str(d.lower)}
    if d.equivalence is not None:
        proof |= {"equivalence": _equivalence_proof(d.equivalence), "statement": "Theorems 3/4"}
    else:
        proof |= {"pairs": [[i, j, str(s)] for i, j, s in d.pairs], "witness": [str(x) for x in d.witness],
                  "statement": "symbolic intervals and exact evaluation"}
    return _document("distance_bound", QQ, inputs, proof)

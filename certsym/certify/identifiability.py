"""Certificates of Theorem 1 (``identifiable``) and Corollary 9 (``not_identifiable``), refused when the checker
would refuse to replay them. Cost: linear in the certificate's size."""

from __future__ import annotations

from certsym.certify.envelope import InputRecord, envelope, number_json, parameters_json
from certsym.certify.equivalence import equivalence_proof
from certsym.core.network import Network
from certsym.decide.configurations import ConfigurationEvidence
from certsym.decide.identifiability import Identifiability
from certsym.errors import InputError
from certsym.numbers import QQ


def _within_checker_bounds(theta: Network, ev) -> None:
    """Refuse to write an identifiable certificate the checker would refuse to replay (certificates/FORMAT.md,
    "Bounds"): nobody could check it."""
    # the checker's own bounds, read where they are stated; imported here, not with the module: the command line
    # imports every certificate writer, and the checker's kinds bring mpmath (start-up time)
    from certsym_check.kinds import identifiable as B

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


def identifiability_certificate(v: Identifiability, record: InputRecord, embed: bool = True) -> dict:
    """Theorem 1 (identifiable: each condition's evidence: a rank minor and a kernel enumeration, a
    meet-in-the-middle split, or the refuted configurations of MATH.md's antiparallel decision) or Corollary 9
    (an explicit θ' in the fibre, with the equivalence proof and the orbit separation the checker recomputes).
    θ is embedded, or with ``embed`` False its model file referenced by SHA-256."""
    theta = v.theta
    F = theta.field

    def enc(x):
        return number_json(F, x)

    if not v.identifiable:
        proof = {"counterexample": parameters_json(v.counterexample),
                 "equivalence": equivalence_proof(v.equivalence), "statement": "Corollary 9"}
        return envelope("not_identifiable", F, [(record, theta)], proof, embed)
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
    return envelope("identifiable", F, [(record, theta)], proof, embed)

"""Corollary 9, as certsym formalizes it: Stab_{H_n}(A, b) ≠ 1 implies a fibre strictly larger than H_n·θ,
with an explicit θ' (certified equivalent, and outside the orbit by the normalized-neuron invariant). Its
converse fails: the clamp E5 has a trivial stabilizer and independent rows but two orbits in its fibre.

Every NOT IDENTIFIABLE verdict is compared with outside oracles: its θ' must realize ρ(θ) (breakpoint or
restriction oracle) and lie outside H_n·θ (an orbit key computed in certsym/reproduce/oracle.py).
Instances: seeded networks over Q and Q(√2) given a rescaled copy of a neuron or a zero row (nontrivial
Stab(A, b)), which must yield a certified counterexample; E5, whose counterexample must be exactly MATH.md's
second parameter; and the converse-failure family on integer grids Ω(1,2,1), Ω(2,3,1) and Ω(1,2,2).
"""

from __future__ import annotations

import random

from certsym.certify import identifiability_certificate
from certsym.core.canonical import canonical_form
from certsym.core.network import Network, Neuron
from certsym.decide.identifiability import converse_failures, decide_identifiable
from certsym.decide.stabilizer import stabilizer
from certsym.reproduce import Context
from certsym.reproduce.families import RECORD, random_network, scalar, seeded_fields
from certsym.reproduce.oracle import orbit_key, same_function
from certsym.reproduce.worked_examples import load_pair

STATEMENT = "Corollary 9 (non-identifiability; converse fails)"
SLUG = "cor9_non_identifiability"
SECONDS = (1, 1)  # about this long on a 2-core machine: the representative run, --full



def _compare(ctx: Context, name: str, verdict) -> None:
    """certsym's NOT against the oracles: θ' realizes ρ(θ) and its orbit key differs from θ's."""
    theta, other = verdict.theta, verdict.counterexample
    witnessed = other is not None and same_function(theta, other) and orbit_key(theta) != orbit_key(other)
    ctx.compare(STATEMENT, SLUG, name, not verdict.identifiable, witnessed, "restriction oracle + orbit key",
                identifiability_certificate(verdict, RECORD))


def run(ctx: Context) -> None:
    rng = random.Random(9)
    for field_name, F, r in seeded_fields():
        for t in range(4 if ctx.quick else 30):
            base = random_network(rng, rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 2), F, r)
            neurons = base.neurons()
            nu = neurons[rng.randrange(base.n)]
            if t % 2:
                d = abs(scalar(rng, F, r))
                neurons.append(Neuron(tuple(d * x for x in nu.a), d * nu.b, tuple(scalar(rng, F, r) for _ in nu.v)))
            else:
                neurons.append(Neuron((F.zero,) * base.m, F.zero, tuple(scalar(rng, F, r) for _ in nu.v)))
            theta = Network.from_neurons(neurons, base.c, F, base.m)
            verdict = decide_identifiable(theta)
            if stabilizer(theta, of_rows=True).is_trivial:
                ctx.record(STATEMENT, SLUG, f"stab_{field_name}_{t}_planted", False)
            _compare(ctx, f"stab_{field_name}_{t}", verdict)
    theta, partner = load_pair("E5")
    verdict = decide_identifiable(theta)
    ok = stabilizer(theta, of_rows=True).is_trivial and verdict.counterexample == partner
    ok = ok and canonical_form(theta) == canonical_form(partner)
    ctx.record(STATEMENT, SLUG, "E5_converse_fails", ok, identifiability_certificate(verdict, RECORD))
    for shape in ((1, 2, 1), (2, 3, 1), (1, 2, 2)):
        limit = 2 if ctx.quick else 6
        for t, verdict in enumerate(converse_failures(*shape, 1, limit)):
            if not stabilizer(verdict.theta, of_rows=True).is_trivial:
                ctx.record(STATEMENT, SLUG, f"converse_{'_'.join(map(str, shape))}_{t}_trivial", False)
            _compare(ctx, f"converse_{'_'.join(map(str, shape))}_{t}", verdict)

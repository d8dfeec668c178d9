"""The minimal form is unique up to H_n (MATH.md, "minimal form"): moves 1–3 are confluent, so whatever order
they are applied in, θ_min lands in one H_n-orbit; and the H_n action commutes with reduction.

Every instance is compared with an outside oracle: a separate implementation of moves 1–3 written here, applied
in a random order (two seeds per instance), whose result must have the same orbit key (certsym/reproduce/oracle.py)
as certsym's θ_min; and θ_min must realize ρ(θ) (breakpoint or restriction oracle). Instances: seeded disguised
networks (dead, constant, split and flipped neurons) over Q and Q(√2), and their images under a random H_n
element, whose θ_min must lie in the same orbit.
"""

from __future__ import annotations

import random

from flint import fmpq

from certsym.certify import minimal_form_certificate
from certsym.core.group import HElement
from certsym.core.network import Network, Neuron
from certsym.core.reduction import reduce
from certsym.reproduce import Context
from certsym.reproduce.families import RECORD, disguise, random_network, seeded_fields
from certsym.reproduce.oracle import orbit_key, same_function

STATEMENT = "Minimal form unique up to H_n (moves 1-3 confluent)"
SLUG = "minimal_form_uniqueness"
SECONDS = (1, 2)  # about this long on a 2-core machine: the representative run, --full



def _positive_ratio(r: tuple, s: tuple):
    """λ > 0 with s = λ r, or None (r, s nonzero)."""
    p = next(q for q, x in enumerate(r) if x != 0)
    lam = s[p] / r[p]
    return lam if lam > 0 and all(y == lam * x for x, y in zip(r, s, strict=True)) else None


def reduce_in_random_order(theta: Network, rng: random.Random) -> Network:
    """Moves 1–3 (zeroing, bias shifting, merging), each time one applicable move chosen at random, until none
    applies. Written independently of certsym.core.reduction. Cost O(n³ (m + k)) per run."""
    F, m, k = theta.field, theta.m, theta.k
    neurons, c = theta.neurons(), list(theta.c)
    zero = Neuron((F.zero,) * m, F.zero, (F.zero,) * k)

    def is_zero(nu: Neuron) -> bool:
        return nu == zero or (all(x == 0 for x in nu.a) and nu.b == 0 and all(x == 0 for x in nu.v))

    while True:
        moves = []
        for i, nu in enumerate(neurons):
            if is_zero(nu):
                continue
            if all(x == 0 for x in nu.v) or (all(x == 0 for x in nu.a) and nu.b <= 0):
                moves.append(("zero", i, None, None))
            elif all(x == 0 for x in nu.a):
                moves.append(("shift", i, None, None))
        live = [i for i, nu in enumerate(neurons) if not is_zero(nu) and any(x != 0 for x in nu.a)
                and any(x != 0 for x in nu.v)]
        for i in live:
            for j in live:
                if i != j:
                    lam = _positive_ratio((*neurons[i].a, neurons[i].b), (*neurons[j].a, neurons[j].b))
                    if lam is not None:
                        moves.append(("merge", j, i, lam))
        if not moves:
            return Network.from_neurons(neurons, c, F, m)
        kind, i, target, lam = rng.choice(moves)
        nu = neurons[i]
        if kind == "shift":
            c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
        elif kind == "merge":  # v_t σ(z) + v_i σ(λ z) = (v_t + λ v_i) σ(z)
            t = neurons[target]
            neurons[target] = Neuron(t.a, t.b, tuple(x + lam * y for x, y in zip(t.v, nu.v, strict=True)))
        neurons[i] = zero


def run(ctx: Context) -> None:
    rng = random.Random(41)
    for field_name, F, r in seeded_fields():
        for t in range(4 if ctx.quick else 30):
            base = random_network(rng, rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 2), F, r)
            theta = disguise(rng, base)
            red = reduce(theta)
            cert = minimal_form_certificate(red, RECORD)
            key = orbit_key(red.minimal)
            for seed in range(2):
                other = reduce_in_random_order(theta, random.Random(1000 * t + seed))
                ctx.compare(STATEMENT, SLUG, f"{field_name}_{t}_order{seed}", True, orbit_key(other) == key,
                            "moves 1-3 in random order + orbit key", cert if seed == 0 else None)
            ctx.compare(STATEMENT, SLUG, f"{field_name}_{t}_realizes", True, same_function(theta, red.minimal),
                        "breakpoint or restriction oracle")
            perm = list(range(theta.n))
            rng.shuffle(perm)
            h = HElement.make(perm, [F(fmpq(rng.randint(1, 9), rng.randint(1, 9))) for _ in range(theta.n)])
            moved = reduce(h.act(theta)).minimal
            ctx.compare(STATEMENT, SLUG, f"{field_name}_{t}_h_action", True, orbit_key(moved) == key, "orbit key")

"""Theorem 1 (identifiability), as certsym decides it: with all v_i ≠ 0, a_i ≠ 0 and pairwise independent rows,
the fibre of θ in Ω(m,n,k) is ⊔_F H_n·θ^F over the zero factors F (Σ_F v_i a_i^T = 0); these conditions hold on
a dense Zariski-open set (sufficient, not necessary: |x| is identifiable with antiparallel rows, and the
identifiable set is not open). MATH.md's configurations decide the antiparallel case.

Every verdict is compared with outside oracles (certsym/reproduce/oracle.py), none sharing certsym's code:
- a brute-force implementation of MATH.md's decision with sympy ranks (both kinds of disagreement counted);
- for NOT IDENTIFIABLE, the counterexample θ' must realize ρ(θ) (breakpoint or restriction oracle) and lie
  outside the orbit (orbit key);
- for IDENTIFIABLE θ in Ω(1,2,1) with entries in {−1, 0, 1}, the fibre is the orbit: no member of the grid
  with entries in {−2, …, 2} realizes ρ(θ) outside H_2·θ.
Instances: the MATH.md examples, the audit's probes (|x| + σ(x − 1), |x1| + |x2|, |x1| e1 + |x2| e2 with
k = 2, an 18-neuron m = 1 network with a two-neuron zero factor), perturbations within 10^-6 of the
non-identifiable examples (density), seeded random θ over Q and Q(√2) (genericity), seeded random θ with
antiparallel pairs, and (full mode) the exhaustive grids Ω(1,2,1), Ω(1,2,2), Ω(2,2,1) and Ω(1,3,1) over
{−1, 0, 1} with c = 0 (c does not enter the decision). Refusals are counted, never dropped.
"""

from __future__ import annotations

import random

from flint import fmpq

from certsym.certify import identifiability_certificate
from certsym.core.network import Network, Neuron
from certsym.decide.identifiability import Undecided, decide_identifiable, perturb
from certsym.reproduce import Context
from certsym.reproduce.families import RECORD, random_network, scalar, seeded_fields
from certsym.reproduce.oracle import (
    FunctionIndex,
    fibre_in_grid,
    grid_networks,
    identifiable_by_definition,
    orbit_key,
    same_function,
)
from certsym.reproduce.worked_examples import load_pair

STATEMENT = "Theorem 1 (identifiability)"
SLUG = "thm1_generic_identifiability"
SECONDS = (1, 15)  # about this long on a 2-core machine: the representative run, --full

EXAMPLES = ("E1", "E2", "E3a", "E3b", "E4", "E5", "E6")
BRUTE_FORCE = "MATH.md decision by brute force (sympy)"
GRIDS = ((1, 2, 1), (1, 2, 2), (2, 2, 1), (1, 3, 1))


def probes() -> dict[str, Network]:
    """The audit's probes."""
    rng = random.Random(18)

    def q() -> fmpq:
        return fmpq(rng.randint(1, 10**6), rng.randint(1, 997))

    return {
        "abs_x_plus_relu_x_minus_1": Network.build([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1], [0]),
        "abs_x1_plus_abs_x2_k1": Network.build([[1, 1, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]], [0] * 4, [0]),
        "abs_x1_e1_plus_abs_x2_e2_k2": Network.build([[1, 1, 0, 0], [0, 0, 1, 1]],
                                                     [[1, 0], [-1, 0], [0, 1], [0, -1]], [0] * 4, [0, 0]),
        "n18_two_neuron_zero_factor": Network.build([[1, -1] + [q() for _ in range(16)]],
                                                    [[1], [1]] + [[q()] for _ in range(16)],
                                                    [0, -1] + [q() for _ in range(16)], [0]),
    }


def _antiparallel(rng: random.Random, F, root) -> Network:
    """A random θ with one to three antiparallel pairs of nonzero kink among single neurons."""
    m, k = rng.randint(1, 3), rng.randint(1, 2)
    neurons = []
    for _ in range(rng.randint(1, min(m, 2) + 1)):
        a = tuple(scalar(rng, F, root, 3) for _ in range(m))
        b, lam = scalar(rng, F, root, 3), F(fmpq(rng.randint(1, 3), rng.randint(1, 3)))
        neurons.append(Neuron(a, b, tuple(scalar(rng, F, root, 3) for _ in range(k))))
        neurons.append(Neuron(tuple(-lam * x for x in a), -lam * b, tuple(scalar(rng, F, root, 3) for _ in range(k))))
    for _ in range(rng.randint(0, 2)):
        neurons.append(Neuron(tuple(scalar(rng, F, root, 3) for _ in range(m)), scalar(rng, F, root, 3),
                              tuple(scalar(rng, F, root, 3) for _ in range(k))))
    rng.shuffle(neurons)
    return Network.from_neurons(neurons, [F.zero] * k, F, m)


def _decide(ctx: Context, name: str, theta: Network, certify: bool = True):
    """certsym's verdict against the brute-force decision and, for NOT, against the witness oracles."""
    try:
        verdict = decide_identifiable(theta)
    except Undecided as exc:
        ctx.refuse(STATEMENT, name, str(exc))
        return None
    cert = identifiability_certificate(verdict, RECORD) if certify else None
    if theta.n <= 8:
        ctx.compare(STATEMENT, SLUG, name, verdict.identifiable, identifiable_by_definition(theta), BRUTE_FORCE, cert)
        cert = None
    if not verdict.identifiable:
        other = verdict.counterexample
        ctx.compare(STATEMENT, SLUG, f"{name}_witness", True,
                    same_function(theta, other) and orbit_key(other) != orbit_key(theta),
                    "restriction oracle + orbit key", cert)
    elif cert is not None:
        ctx.record(STATEMENT, SLUG, name, True, cert)
    return verdict


def run(ctx: Context) -> None:
    for name in EXAMPLES:
        theta, _ = load_pair(name)
        verdict = _decide(ctx, name, theta)
        if verdict is not None and not verdict.identifiable:
            _decide(ctx, f"{name}_perturbed_1e-6", perturb(theta, theta.field(fmpq(1, 10**6))).theta)
    for name, theta in probes().items():
        _decide(ctx, name, theta)
    rng = random.Random(1)
    for field_name, F, r in seeded_fields():
        for t in range(4 if ctx.quick else 40):
            m, n, k = rng.randint(1, 3), rng.randint(1, 7), rng.randint(1, 2)
            # genericity is a statement about measure: draw from a wide range so that coincidences have
            # negligible probability
            verdict = _decide(ctx, f"random_{field_name}_{t}", random_network(rng, m, n, k, F, r, height=10**6))
            if verdict is not None and not verdict.identifiable:
                ctx.record(STATEMENT, SLUG, f"random_{field_name}_{t}_generic", False)
        for t in range(6 if ctx.quick else 60):
            _decide(ctx, f"antiparallel_{field_name}_{t}", _antiparallel(rng, F, r))
    index = FunctionIndex.from_grid(1, 2, 1, values=range(-2, 3))
    step = 13 if ctx.quick else 1
    for idx, theta in enumerate(grid_networks(1, 2, 1)):
        if idx % step:
            continue
        verdict = _decide(ctx, f"grid_1_2_1_{idx}", theta, certify=idx % 97 == 0)
        if verdict is not None and verdict.identifiable:  # the fibre is the orbit
            ctx.compare(STATEMENT, SLUG, f"grid_1_2_1_{idx}_fibre", True, not fibre_in_grid(theta, index, limit=1),
                        "brute-force fibre in the grid {-2..2}")
    for shape in GRIDS[1:] if not ctx.quick else ():
        for idx, theta in enumerate(grid_networks(*shape)):
            _decide(ctx, f"grid_{'_'.join(map(str, shape))}_{idx}", theta, certify=idx % 997 == 0)

"""Proposition 14, as certsym formalizes it: ρ(θ) is affine iff after moves 1–3 the remaining neurons split
into antisymmetric pairs; then ρ(θ)(x) = Σ_pairs v (a·x + b) + c.

Instances: E4 (x ↦ x) and E5 (the clamp, not affine); seeded affine networks built from antisymmetric
pairs, split halves, dead and constant neurons over Q and Q(√2), which must be recognized with the right
affine map (checked by exact evaluation at rational points), and the same networks with one live kink
added, which must not; and the grid Ω(1,2,1), compared with the m = 1 oracle (affine iff collinear values).
"""

from __future__ import annotations

import random

from flint import fmpq

from certsym.affine import decide_affine
from certsym.certificate import affine_certificate
from certsym.network import Network, Neuron
from paper_checks import Context
from paper_checks.families import RECORD, grid, scalar, seeded_fields
from paper_checks.oracle import probe_points
from paper_checks.worked_examples import load_pair

STATEMENT = "Proposition 14 (affine networks)"
SLUG = "prop14_affine"


def _affine_network(rng: random.Random, F, root) -> Network:
    m, k = rng.randint(1, 3), rng.randint(1, 2)
    neurons = []
    for _ in range(rng.randint(1, 3)):
        a = [scalar(rng, F, root) for _ in range(m)]
        b, lam = scalar(rng, F, root), F(fmpq(rng.randint(1, 5), rng.randint(1, 5)))
        v = [scalar(rng, F, root) for _ in range(k)]
        neurons.append(Neuron(tuple(a), b, tuple(x / 2 for x in v)))
        neurons.append(Neuron(tuple(3 * x for x in a), 3 * b, tuple(x / 6 for x in v)))  # the other half, split
        neurons.append(Neuron(tuple(-lam * x for x in a), -lam * b, tuple(-x / lam for x in v)))
    neurons.append(Neuron(tuple(scalar(rng, F, root) for _ in range(m)), F.one, (F.zero,) * k))
    neurons.append(Neuron((F.zero,) * m, F(2), tuple(scalar(rng, F, root) for _ in range(k))))
    rng.shuffle(neurons)
    return Network.from_neurons(neurons, [scalar(rng, F, root) for _ in range(k)], F, m)


def _affine_by_oracle(t: Network) -> bool:
    pts = probe_points(t)
    vals = [t.evaluate([x])[0] for x in pts]
    slope = (vals[1] - vals[0]) / (pts[1] - pts[0])
    return all(vals[i] == vals[0] + slope * (pts[i] - pts[0]) for i in range(len(pts)))


def run(ctx: Context) -> None:
    for name, which, want in (("E4", 1, True), ("E5", 0, False)):
        theta = load_pair(name)[which]
        verdict = decide_affine(theta)
        ctx.record(STATEMENT, SLUG, name, verdict.affine is want, affine_certificate(verdict, RECORD))
    rng = random.Random(14)
    for field_name, F, r in seeded_fields():
        for t in range(4 if ctx.quick else 30):
            theta = _affine_network(rng, F, r)
            verdict = decide_affine(theta)
            x = [F(fmpq(rng.randint(-9, 9), rng.randint(1, 4))) for _ in range(theta.m)]
            exact = [sum((L[q] * x[q] for q in range(theta.m)), C) for L, C in
                     zip(verdict.linear, verdict.constant, strict=True)] if verdict.affine else None
            ctx.record(STATEMENT, SLUG, f"affine_{field_name}_{t}", verdict.affine and theta(x) == exact,
                       affine_certificate(verdict, RECORD))
            a = [F.one] + [F.zero] * (theta.m - 1)
            kinked = Network.build([list(row) + [F.one] for row in theta.M], list(theta.A) + [a],
                                   list(theta.b) + [F.zero], theta.c, F, theta.m)
            verdict = decide_affine(kinked)
            ctx.record(STATEMENT, SLUG, f"kinked_{field_name}_{t}", not verdict.affine,
                       affine_certificate(verdict, RECORD))
    nets = list(grid(1, 2, 1))
    for idx in range(0, len(nets), 29 if ctx.quick else 3):
        t = nets[idx]
        verdict = decide_affine(t)
        cert = affine_certificate(verdict, RECORD) if idx % 87 == 0 else None
        ctx.record(STATEMENT, SLUG, f"grid_{idx}", verdict.affine is _affine_by_oracle(t), cert)

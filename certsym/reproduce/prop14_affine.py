"""Proposition 14, as certsym formalizes it: ρ(θ) is affine iff after moves 1–3 the remaining neurons split
into antisymmetric pairs; then ρ(θ)(x) = Σ_pairs v (a·x + b) + c.

Every verdict is compared with an outside oracle: ρ(θ) is affine iff it equals the affine map A interpolating
it at the m + 1 affinely independent points x0, x0 + e_1, …, x0 + e_m, decided by the breakpoint oracle (m = 1)
or the restriction oracle (m ≥ 2) against a network realizing A (pairs σ(x_q) − σ(−x_q) = x_q). An AFFINE
verdict's map must also agree with ρ(θ) at those m + 1 points. Instances: E4 (x ↦ x) and E5 (the clamp, not
affine); seeded affine networks built from antisymmetric pairs, split halves, dead and constant neurons over Q
and Q(√2), and the same networks with one live kink added; and the grid Ω(1,2,1).
"""

from __future__ import annotations

import random

from flint import fmpq

from certsym.certify import affine_certificate
from certsym.core.network import Network, Neuron
from certsym.decide.affine import decide_affine
from certsym.reproduce import Context
from certsym.reproduce.families import RECORD, grid, scalar, seeded_fields
from certsym.reproduce.oracle import same_function, same_function_m1
from certsym.reproduce.worked_examples import load_pair

STATEMENT = "Proposition 14 (affine networks)"
SLUG = "prop14_affine"
SECONDS = (1, 2)  # about this long on a 2-core machine: the representative run, --full



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


def _affine_network_of(F, m: int, L: list, C: list) -> Network:
    """x ↦ L x + C realized by the pairs σ(x_q) − σ(−x_q) = x_q."""
    neurons = []
    for q in range(m):
        e = tuple(F.one if j == q else F.zero for j in range(m))
        col = tuple(row[q] for row in L)
        neurons += [Neuron(e, F.zero, col), Neuron(tuple(-x for x in e), F.zero, tuple(-x for x in col))]
    return Network.from_neurons(neurons, list(C), F, m)


def _points(F, m: int) -> list[list]:
    """m + 1 affinely independent rational points: x0 and x0 + e_q."""
    x0 = [F(fmpq(q + 1, 3)) for q in range(m)]
    return [x0] + [[x + (F.one if j == q else F.zero) for j, x in enumerate(x0)] for q in range(m)]


def _oracle(t: Network) -> bool:
    """Is ρ(t) affine? It equals its interpolant at m + 1 affinely independent points iff it is."""
    F, m = t.field, t.m
    pts = _points(F, m)
    values = [t.evaluate(x) for x in pts]
    L = [[values[q + 1][j] - values[0][j] for q in range(m)] for j in range(t.k)]
    C = [values[0][j] - sum((L[j][q] * pts[0][q] for q in range(m)), F.zero) for j in range(t.k)]
    other = _affine_network_of(F, m, L, C)
    return same_function_m1(t, other)[0] if m == 1 else same_function(t, other)


def _compare(ctx: Context, name: str, theta: Network, cert_every: bool = True) -> bool:
    verdict = decide_affine(theta)
    affine = verdict.affine
    if affine:  # the stated map agrees with ρ(θ) at m + 1 affinely independent points
        affine = all(theta.evaluate(x) == [sum((Lj[q] * x[q] for q in range(theta.m)), Cj) for Lj, Cj in
                                           zip(verdict.linear, verdict.constant, strict=True)]
                     for x in _points(theta.field, theta.m))
    ctx.compare(STATEMENT, SLUG, name, affine, _oracle(theta), "interpolant + restriction oracle",
                affine_certificate(verdict, RECORD) if cert_every else None)
    return verdict.affine


def run(ctx: Context) -> None:
    for name, which, want in (("E4", 1, True), ("E5", 0, False)):
        if _compare(ctx, name, load_pair(name)[which]) is not want:
            ctx.record(STATEMENT, SLUG, f"{name}_expected", False)
    rng = random.Random(14)
    for field_name, F, r in seeded_fields():
        for t in range(4 if ctx.quick else 30):
            theta = _affine_network(rng, F, r)
            if not _compare(ctx, f"affine_{field_name}_{t}", theta):
                ctx.record(STATEMENT, SLUG, f"affine_{field_name}_{t}_expected", False)
            a = [F.one] + [F.zero] * (theta.m - 1)
            kinked = Network.build([list(row) + [F.one] for row in theta.M], list(theta.A) + [a],
                                   list(theta.b) + [F.zero], theta.c, F, theta.m)
            if _compare(ctx, f"kinked_{field_name}_{t}", kinked):
                ctx.record(STATEMENT, SLUG, f"kinked_{field_name}_{t}_expected", False)
    nets = list(grid(1, 2, 1))
    for idx in range(0, len(nets), 29 if ctx.quick else 3):
        _compare(ctx, f"grid_{idx}", nets[idx], idx % 87 == 0)

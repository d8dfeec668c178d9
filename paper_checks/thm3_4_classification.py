"""Theorems 3/4 (complete classification), as certsym formalizes it: ρ(θ1) = ρ(θ2) iff θ1 ⊖ θ2 reduces by
moves 1–3 to antisymmetric pairs whose affine parts cancel; otherwise a rational point separates them.

Instances: the MATH.md pairs (equivalent) and each pair with a constant moved (not equivalent); seeded
disguises (H_n element, split, flip restored by a pair, dead and constant neurons) over Q and over Q(√2),
each also nudged; and the grid Ω(1,2,1) with entries in {−1, 0, 1}, where the verdict is compared with the
outside m = 1 breakpoint oracle (and certified for a sample of pairs).
"""

from __future__ import annotations

import random
from collections import defaultdict

from certsym.certificate import equivalence_certificate
from certsym.equivalence import decide
from certsym.numbers import QQ
from paper_checks import Context
from paper_checks.examples import EXAMPLES
from paper_checks.families import RECORD, disguise, grid, nudge, random_network, seeded_fields
from paper_checks.oracle import same_function_m1
from paper_checks.worked_examples import load_pair

STATEMENT = "Theorems 3/4 (classification)"
SLUG = "thm3_4_classification"


def _certify(ctx: Context, name: str, t1, t2, expect: bool) -> None:
    verdict = decide(t1, t2)
    agrees = verdict.equivalent is expect
    if t1.m == 1:  # the outside oracle agrees too
        agrees = agrees and same_function_m1(t1, t2)[0] is expect
    ctx.record(STATEMENT, SLUG, name, agrees, equivalence_certificate(verdict, (RECORD, RECORD)))


def run(ctx: Context) -> None:
    for name in EXAMPLES:
        t1, t2 = load_pair(name)
        short = name.split()[0]
        _certify(ctx, f"{short}_equivalent", t1, t2, True)
        _certify(ctx, f"{short}_nudged", t1, nudge(t2), False)
    rng = random.Random(34)
    count = 4 if ctx.quick else 60
    for field_name, F, r in seeded_fields():
        for t in range(count):
            m, n, k = rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 2)
            theta = random_network(rng, m, n, k, F, r)
            other = disguise(rng, theta)
            _certify(ctx, f"random_{field_name}_{t}_disguise", theta, other, True)
            _certify(ctx, f"random_{field_name}_{t}_nudged", theta, nudge(other), False)
    # exhaustive grid: kink-invariant classes against the oracle; certified pairs on a sample
    classes = defaultdict(list)
    nets = list(grid(1, 2, 1))
    for t in nets:
        classes[fingerprint(t)].append(t)
    step = 97 if ctx.quick else 7
    for idx in range(0, len(nets), step):
        t1 = nets[idx]
        same = classes[fingerprint(t1)]
        t2 = same[idx % len(same)]
        _certify(ctx, f"grid_{idx}_same", t1, t2, True)
        t3 = nets[(idx * 31 + 5) % len(nets)]
        _certify(ctx, f"grid_{idx}_other", t1, t3, same_function_m1(t1, t3)[0])


_PROBES = [QQ(x) / 2 for x in range(-6, 7)]  # contains every breakpoint −b/a for a, b ∈ {−1, 0, 1} and beyond


def fingerprint(t) -> tuple:
    """Values on a grid that determines a univariate network with entries in {−1, 0, 1} (oracle.py)."""
    return tuple(t.evaluate([x])[0] for x in _PROBES)

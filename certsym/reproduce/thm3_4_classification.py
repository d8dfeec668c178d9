"""Theorems 3/4 (complete classification), as certsym formalizes it: ρ(θ1) = ρ(θ2) iff θ1 ⊖ θ2 reduces by
moves 1–3 to antisymmetric pairs whose affine parts cancel; otherwise a rational point separates them.

Every verdict is compared with an outside oracle that shares no code with certsym's decision: the m = 1
breakpoint oracle, the restriction oracle for m ≥ 2 (certsym/reproduce/oracle.py), and z3 over the reals on a
sample when z3-solver is installed. Instances: the MATH.md pairs (equivalent) and each pair with a constant
moved; seeded disguises (H_n element, split, flip restored by a pair, dead and constant neurons) over Q and
over Q(√2), each also changed in one of four ways (the constant; for m ≥ 2 one kink, the linear part through an
added antisymmetric pair, and one weight by the tiny algebraic amount (3 − 2√2)^8 ≈ 7.5·10^-7); and the grid
Ω(1,2,1) with entries in {−1, 0, 1}.
"""

from __future__ import annotations

import random
from collections import defaultdict

from certsym.certify import equivalence_certificate
from certsym.core.network import Network, Neuron
from certsym.decide.equivalence import decide
from certsym.numbers import QQ
from certsym.reproduce import Context
from certsym.reproduce.examples import EXAMPLES
from certsym.reproduce.families import RECORD, disguise, grid, nudge, random_network, seeded_fields
from certsym.reproduce.oracle import same_function, same_function_m1
from certsym.reproduce.worked_examples import load_pair

STATEMENT = "Theorems 3/4 (classification)"
SLUG = "thm3_4_classification"
SECONDS = (1, 6)  # about this long on a 2-core machine: the representative run, --full



def _z3():
    try:
        import z3  # noqa: F401  # optional: the bench extra

        from certsym.reproduce.z3_oracle import z3_verdict  # it needs z3
    except ImportError:
        return None
    return z3_verdict


def _certify(ctx: Context, name: str, t1: Network, t2: Network, expect: bool, z3_sample: bool = False) -> None:
    verdict = decide(t1, t2)
    cert = equivalence_certificate(verdict, (RECORD, RECORD))
    oracle = "breakpoint oracle" if t1.m == 1 else "restriction oracle"
    truth = same_function_m1(t1, t2)[0] if t1.m == 1 else same_function(t1, t2)
    ctx.compare(STATEMENT, SLUG, name, verdict.equivalent, truth, oracle, cert)
    if truth is not expect:  # the instance's construction and the oracle disagree: a broken instance
        ctx.record(STATEMENT, SLUG, f"{name}_construction", False)
    z3_verdict = _z3() if z3_sample and t1.field is QQ else None  # z3 reads rationals only
    if z3_verdict is not None:
        answer = z3_verdict(t1, t2, timeout_s=20.0)
        ctx.compare(STATEMENT, SLUG, f"{name}_z3", verdict.equivalent, None if answer == "unknown" else
                    answer == "equal", "z3")


def _changed(rng: random.Random, theta: Network, how: str, tiny) -> Network:
    """θ with one thing changed, so that its function differs: a kink, the linear part, or a tiny weight."""
    F, m = theta.field, theta.m
    neurons, c = theta.neurons(), list(theta.c)
    live = [i for i, nu in enumerate(neurons) if any(x != 0 for x in nu.a) and any(x != 0 for x in nu.v)]
    if how == "linear" or not live:  # v σ(a·x) − v σ(−a·x) = v a·x: a new linear term, no kink
        a = tuple(F(rng.randint(-3, 3) or 1) for _ in range(m))
        v = tuple(F(rng.randint(1, 3)) for _ in range(theta.k))
        neurons += [Neuron(a, F.zero, v), Neuron(tuple(-x for x in a), F.zero, tuple(-x for x in v))]
    else:
        i = rng.choice(live)
        nu = neurons[i]
        factor = tiny if how == "tiny" else F(2)
        neurons[i] = Neuron(nu.a, nu.b, tuple(x + factor * x for x in nu.v) if how == "tiny" else
                            tuple(factor * x for x in nu.v))
    return Network.from_neurons(neurons, c, F, m)


def run(ctx: Context) -> None:
    for name in EXAMPLES:
        t1, t2 = load_pair(name)
        short = name.split()[0]
        _certify(ctx, f"{short}_equivalent", t1, t2, True, z3_sample=True)
        _certify(ctx, f"{short}_nudged", t1, nudge(t2), False, z3_sample=True)
    rng = random.Random(34)
    count = 4 if ctx.quick else 60
    for field_name, F, r in seeded_fields():
        tiny = (3 - 2 * r) ** 8 if r is not None else F(1) / F(10**6)
        for t in range(count):
            m, n, k = rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 2)
            theta = random_network(rng, m, n, k, F, r)
            other = disguise(rng, theta)
            sample = t % 10 == 0
            _certify(ctx, f"random_{field_name}_{t}_disguise", theta, other, True, sample)
            _certify(ctx, f"random_{field_name}_{t}_nudged", theta, nudge(other), False, sample)
            if m >= 2 or t % 3 == 0:
                for how in ("kink", "linear", "tiny"):
                    _certify(ctx, f"random_{field_name}_{t}_{how}", theta, _changed(rng, other, how, tiny), False,
                             sample)
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

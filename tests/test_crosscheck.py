"""Outside cross-checks of equivalence verdicts that do not rely on certsym's reasoning.

- m = 1: the exact breakpoint oracle (paper_checks/oracle.py: values at all breakpoints and beyond).
- m ≤ 2: z3 over the reals deciding ∃x f1(x) ≠ f2(x) (z3-solver is a benchmark extra; these tests are
  skipped without it). A small sample runs by default; ``pytest -m crosscheck_full`` runs the full set.
"""

from __future__ import annotations

import random

import pytest

from certsym.equivalence import decide
from certsym.network import Network
from certsym.numbers import QQ
from paper_checks.families import disguise, nudge, random_network
from paper_checks.oracle import same_function_m1


def _pairs(seed: int, count: int, m_max: int):
    """Small pairs (θ with n <= 3; its disguise has at most n + 5 neurons) and their nudged versions."""
    rng = random.Random(seed)
    for _ in range(count):
        m, n, k = rng.randint(1, m_max), rng.randint(1, 3), rng.randint(1, 2)
        theta = random_network(rng, m, n, k, QQ)
        other = disguise(rng, theta)
        yield theta, other
        yield theta, nudge(other)


def test_m1_oracle_sample() -> None:
    for t1, t2 in _pairs(11, 40, 1):
        assert decide(t1, t2).equivalent is same_function_m1(t1, t2)[0]


def _z3_equal(t1: Network, t2: Network) -> bool:
    z3 = pytest.importorskip("z3")
    xs = [z3.Real(f"x{q}") for q in range(t1.m)]

    def realize(net: Network):
        out = []
        for j in range(net.k):
            terms = [z3.RealVal(str(net.c[j]))]
            for i in range(net.n):
                z = sum((z3.RealVal(str(a)) * x for a, x in zip(net.A[i], xs, strict=True)), z3.RealVal(str(net.b[i])))
                terms.append(z3.RealVal(str(net.M[j][i])) * z3.If(z > 0, z, 0))
            out.append(z3.Sum(terms))
        return out

    solver = z3.Solver()
    solver.set("timeout", 60_000)
    solver.add(z3.Or([a != b for a, b in zip(realize(t1), realize(t2), strict=True)]))
    result = solver.check()
    assert result != z3.unknown, "z3 did not decide"
    return result == z3.unsat


def test_z3_sample_m2() -> None:
    for t1, t2 in _pairs(12, 3, 2):
        assert decide(t1, t2).equivalent is _z3_equal(t1, t2)


@pytest.mark.crosscheck_full
def test_z3_full_m2() -> None:
    for t1, t2 in _pairs(13, 40, 2):
        assert decide(t1, t2).equivalent is _z3_equal(t1, t2)

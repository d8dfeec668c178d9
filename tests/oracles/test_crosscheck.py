"""Outside cross-checks of equivalence verdicts that do not rely on certsym's reasoning.

- m = 1: the exact breakpoint oracle (certsym/reproduce/oracle.py: values at all breakpoints and beyond).
- m ≤ 2: z3 over the reals deciding ∃x f1(x) ≠ f2(x) (z3-solver is a benchmark extra; these tests are
  skipped without it). A small sample runs by default; ``pytest -m crosscheck_full`` runs the full set.
"""

from __future__ import annotations

import random

import pytest
from helpers import Z3_RLIMIT

from certsym.core.network import Network
from certsym.decide.equivalence import decide
from certsym.numbers import QQ
from certsym.reproduce.families import disguise, nudge, random_network
from certsym.reproduce.oracle import same_function_m1
from certsym.reproduce.z3_oracle import z3_verdict


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
    pytest.importorskip("z3")
    verdict = z3_verdict(t1, t2, rlimit=Z3_RLIMIT)
    assert verdict != "unknown", "z3 ran out of its resource count"
    return verdict == "equal"


def test_z3_sample_m2() -> None:
    for t1, t2 in _pairs(12, 3, 2):
        assert decide(t1, t2).equivalent is _z3_equal(t1, t2)


@pytest.mark.crosscheck_full
def test_z3_full_m2() -> None:
    for t1, t2 in _pairs(13, 40, 2):
        assert decide(t1, t2).equivalent is _z3_equal(t1, t2)

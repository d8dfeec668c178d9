"""certsym.decide.zerofactor against brute force: every subset F of the neurons of a tiny network (n ≤ 8).

A zero factor is, as the module docstring states, a nonempty F ⊆ {1..n} with Σ_{i∈F} v_i a_i^T = 0 (a k×m
matrix). The oracle enumerates all 2^n − 1 subsets with its own arithmetic (Python Fractions, and pairs
(p, q) standing for p + q√2 over Q(√2)), so it shares no code with the kernel, residues or meet-in-the-middle.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy
from flint import fmpq
from helpers import field_of
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.network import Network
from certsym.decide.zerofactor import (
    Residues,
    SearchTooLarge,
    kernel,
    kernel_zero_factors,
    meet_in_the_middle,
    search,
    small_zero_factor,
    vectors,
)
from certsym.numbers import QQ

BIG = 1 << 20

# An exact scalar of the oracle: (p, q) means p + q√2 (q = 0 over Q).
Pair = tuple[Fraction, Fraction]


def _mul(x: Pair, y: Pair) -> Pair:
    return x[0] * y[0] + 2 * x[1] * y[1], x[0] * y[1] + x[1] * y[0]


def _add(x: Pair, y: Pair) -> Pair:
    return x[0] + y[0], x[1] + y[1]


class Spec:
    """A network given by its neurons' (a_i, v_i) as oracle scalars (biases are irrelevant to zero factors)."""

    def __init__(self, rows: list[list[Pair]], outs: list[list[Pair]], b: list[int], sqrt2: bool):
        self.rows, self.outs, self.b, self.sqrt2 = rows, outs, b, sqrt2
        self.n, self.m, self.k = len(rows), len(rows[0]), len(outs[0])

    def network(self) -> Network:
        if self.sqrt2:
            F, (s,) = field_of("sqrt(2)")

            def conv(x: Pair):
                return F(fmpq(x[0].numerator, x[0].denominator)) + F(fmpq(x[1].numerator, x[1].denominator)) * s
        else:
            F = QQ

            def conv(x: Pair):
                assert x[1] == 0
                return fmpq(x[0].numerator, x[0].denominator)
        M = [[conv(self.outs[i][j]) for i in range(self.n)] for j in range(self.k)]
        return Network.build(M, [[conv(x) for x in row] for row in self.rows], [F(t) for t in self.b],
                             [F(0)] * self.k, F)

    def is_zero_factor(self, subset) -> bool:
        """Σ_{i∈F} v_i a_i^T = 0, entry by entry, with the oracle's arithmetic."""
        zero = (Fraction(0), Fraction(0))
        for j in range(self.k):
            for t in range(self.m):
                total = zero
                for i in subset:
                    total = _add(total, _mul(self.outs[i][j], self.rows[i][t]))
                if total != zero:
                    return False
        return bool(subset)

    def zero_factors(self) -> set[frozenset[int]]:
        """All zero factors, by enumerating every nonempty subset."""
        return {frozenset(F) for size in range(1, self.n + 1) for F in itertools.combinations(range(self.n), size)
                if self.is_zero_factor(F)}


RATIONAL = [(Fraction(x), Fraction(0)) for x in (-2, -1, 1, 2)] + [(Fraction(1, 2), Fraction(0))]
IRRATIONAL = [(Fraction(0), Fraction(1)), (Fraction(1), Fraction(-1)), (Fraction(-1), Fraction(0))]


@st.composite
def specs(draw, max_n: int = 8, sqrt2: bool | None = None) -> Spec:
    """Tiny networks with nonzero a_i, v_i; often with a planted zero factor F (common v on F, the last row minus
    the sum of the others), sometimes with a neuron copied with its row negated (a zero pair)."""
    sqrt2 = draw(st.booleans()) if sqrt2 is None else sqrt2
    scalars = st.sampled_from(RATIONAL + (IRRATIONAL if sqrt2 else []))
    n, m, k = draw(st.integers(1, max_n)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    nonzero_vec = st.lists(scalars, min_size=m, max_size=m)
    rows = [draw(nonzero_vec) for _ in range(n)]
    outs = [draw(st.lists(scalars, min_size=k, max_size=k)) for _ in range(n)]
    plant = draw(st.sampled_from(["none", "subset", "pair"]))
    if plant == "subset" and n >= 2:
        F = sorted(draw(st.sets(st.integers(0, n - 1), min_size=2, max_size=n)))
        for i in F:
            outs[i] = list(outs[F[0]])
        last = [(Fraction(0), Fraction(0))] * m
        for i in F[:-1]:
            last = [_add(x, y) for x, y in zip(last, rows[i], strict=True)]
        if any(x != (0, 0) for x in last):  # a_i must stay nonzero
            rows[F[-1]] = [(-x[0], -x[1]) for x in last]
    elif plant == "pair" and n >= 2:
        i, j = draw(st.permutations(range(n)))[:2]
        rows[j], outs[j] = [(-x[0], -x[1]) for x in rows[i]], list(outs[i])
    b = [draw(st.integers(-2, 2)) for _ in range(n)]
    return Spec(rows, outs, b, sqrt2)


def test_vectors_are_vec_of_v_a_transposed() -> None:
    """vectors(θ) lists w_i = vec(v_i a_i^T) row-major over (output j, input q)."""
    spec = Spec([[(Fraction(1), Fraction(0)), (Fraction(2), Fraction(0))],
                 [(Fraction(-1), Fraction(0)), (Fraction(1, 2), Fraction(0))]],
                [[(Fraction(3), Fraction(0)), (Fraction(-1), Fraction(0))],
                 [(Fraction(2), Fraction(0)), (Fraction(0), Fraction(0))]], [0, 0], False)
    w = vectors(spec.network())
    assert w == [[3, 6, -1, -2], [-2, 1, 0, 0]]


@settings(max_examples=60, deadline=None)
@given(specs())
def test_kernel_enumeration_finds_exactly_the_zero_factors(spec: Spec) -> None:
    """kernel_zero_factors lists every zero factor once and nothing else; the kernel it walks has dimension
    n − rank(W) (sympy) and each free direction, completed by x_P = −R x_free, is in ker W."""
    theta = spec.network()
    ker = kernel(theta)
    W, pivots, free, Rf = ker
    found = list(kernel_zero_factors(theta, ker))
    assert len(found) == len({frozenset(f) for f in found})
    assert {frozenset(f) for f in found} == spec.zero_factors()
    assert sorted(pivots + free) == list(range(theta.n))
    if theta.field is QQ:  # sympy rank over Q; over Q(√2) the factor sets above are the check
        rank = sympy.Matrix([[sympy.Rational(int(x.p), int(x.q)) for x in row] for row in W]).rank()
        assert len(free) == theta.n - rank
    F = theta.field
    for b, f in enumerate(free):
        x = [F.zero] * theta.n
        x[f] = F.one
        for t, p in enumerate(pivots):
            x[p] = -Rf[t][b]
        assert all(sum((row[i] * x[i] for i in range(theta.n)), F.zero) == 0 for row in W)


@settings(max_examples=60, deadline=None)
@given(specs(), st.integers(0, 8))
def test_meet_in_the_middle_finds_exactly_the_zero_factors(spec: Spec, split: int) -> None:
    """For any split point, meet_in_the_middle yields every zero factor (sorted index lists) and nothing else."""
    theta = spec.network()
    residues = Residues(theta)
    assert residues.values is not None and len(residues.values) == theta.n
    found = list(meet_in_the_middle(theta, residues, min(split, theta.n)))
    assert all(f == sorted(f) for f in found)
    assert len(found) == len({frozenset(f) for f in found})
    assert {frozenset(f) for f in found} == spec.zero_factors()


@settings(max_examples=60, deadline=None)
@given(specs())
def test_small_zero_factor_agrees_with_brute_force_on_sizes_two_and_three(spec: Spec) -> None:
    """small_zero_factor returns a zero factor of two or three distinct neurons, and None exactly when no zero
    factor of size 2 or 3 exists."""
    theta = spec.network()
    got = small_zero_factor(theta, Residues(theta))
    small = {f for f in spec.zero_factors() if len(f) in (2, 3)}
    assert (got is None) == (not small)
    assert got is None or (len(set(got)) == len(got) in (2, 3) and spec.is_zero_factor(got))


@settings(max_examples=60, deadline=None)
@given(specs())
def test_search_agrees_with_brute_force(spec: Spec) -> None:
    """search returns a zero factor when one exists, and evidence of none exactly when brute force finds none; a
    rank-form evidence names a nonsingular n×n minor of W (sympy determinant), a kernel-form one a kernel of
    dimension len(free) = n − rank(W)."""
    theta = spec.network()
    factor, evidence = search(theta, BIG)
    expected = spec.zero_factors()
    assert (factor is None) == (not expected)
    assert (evidence is None) == (factor is not None)
    assert factor is None or frozenset(factor) in expected
    if evidence is not None and evidence.split is None and not evidence.free and theta.field is QQ:
        W = kernel(theta)[0]
        minor = sympy.Matrix([[sympy.Rational(int(W[r][c].p), int(W[r][c].q)) for c in evidence.pivots]
                              for r in evidence.rows])
        assert minor.shape == (theta.n, theta.n) and minor.det() != 0


@settings(max_examples=30, deadline=None)
@given(specs(sqrt2=True, max_n=6))
def test_search_over_the_number_field(spec: Spec) -> None:
    """Over Q(√2) the kernel form is preferred; its verdict agrees with brute force (Fraction pairs p + q√2)."""
    theta = spec.network()
    factor, evidence = search(theta, BIG)
    expected = spec.zero_factors()
    assert (factor is None) == (not expected)
    assert factor is None or frozenset(factor) in expected
    assert evidence is None or evidence.split is None


def _scalar_spec(products: list[int]) -> Spec:
    """m = k = 1 with v_i = 1 and a_i = products[i]."""
    one = (Fraction(1), Fraction(0))
    return Spec([[(Fraction(p), Fraction(0))] for p in products], [[one] for _ in products], [0] * len(products),
                False)


def test_a_large_zero_factor_is_found_and_a_budget_is_enforced() -> None:
    """v_i a_i = 1, 2, 4, −7 (m = k = 1): the only zero factor is all four neurons, beyond pairs and triples; the
    search finds it with a budget, and refuses with SearchTooLarge when the budget is 0."""
    spec = _scalar_spec([1, 2, 4, -7])
    assert spec.zero_factors() == {frozenset(range(4))}
    theta = spec.network()
    assert small_zero_factor(theta, Residues(theta)) is None
    assert search(theta, BIG)[0] == [0, 1, 2, 3]
    with pytest.raises(SearchTooLarge, match="over the limit 0"):
        search(theta, 0)


def test_independent_vectors_need_no_search() -> None:
    """Linearly independent vectors (m = 2, k = 1, rows e1, e2): no zero factor, rank evidence, even with budget 0."""
    one, zero = (Fraction(1), Fraction(0)), (Fraction(0), Fraction(0))
    spec = Spec([[one, zero], [zero, one]], [[one], [one]], [0, 0], False)
    assert spec.zero_factors() == set()
    theta = spec.network()
    factor, evidence = search(theta, 0)
    assert factor is None and evidence is not None and evidence.free == [] and evidence.search_size == 0
    W = kernel(theta)[0]
    minor = sympy.Matrix([[sympy.Rational(int(W[r][c].p), int(W[r][c].q)) for c in evidence.pivots]
                          for r in evidence.rows])
    assert minor.shape == (2, 2) and minor.det() != 0

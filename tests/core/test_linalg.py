"""certsym.core.linalg (rref, independent_rows) against sympy's exact Matrix.rref / Matrix.rank.

Over Q the producer calls python-flint (fmpq_mat.rref, nmod_mat modulo 2^61 − 1); sympy shares none of that code,
so it is the independent oracle. The pure-Python Gauss–Jordan branch is reached through a second RationalField
instance (``F is QQ`` is then false) and through a real number field Q(√2).
"""

from __future__ import annotations

import sympy
from flint import fmpq
from helpers import field_of, small_rationals
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.linalg import PRIME, independent_rows, rref
from certsym.numbers import QQ, RationalField

OTHER_QQ = RationalField()  # equal to Q, but not ``QQ``: linalg takes its generic elimination on it


def _sym(x: fmpq) -> sympy.Rational:
    return sympy.Rational(int(x.p), int(x.q))


def _to_sympy(rows: list[list[fmpq]], ncols: int) -> sympy.Matrix:
    return sympy.Matrix(len(rows), ncols, [_sym(x) for row in rows for x in row])


@st.composite
def matrices(draw, max_rows: int = 6, max_cols: int = 6) -> list[list[fmpq]]:
    """A small rational matrix, often rank-deficient: some rows are combinations of earlier ones."""
    nrows, ncols = draw(st.integers(1, max_rows)), draw(st.integers(1, max_cols))
    rows: list[list[fmpq]] = []
    for _ in range(nrows):
        if rows and draw(st.booleans()):
            c1, c2 = draw(small_rationals), draw(small_rationals)
            r1, r2 = draw(st.sampled_from(rows)), draw(st.sampled_from(rows))
            rows.append([c1 * x + c2 * y for x, y in zip(r1, r2, strict=True)])
        else:
            rows.append([draw(st.just(fmpq(0)) | small_rationals) for _ in range(ncols)])
    return rows


def _assert_rref_matches_sympy(result: tuple, oracle: sympy.Matrix) -> None:
    R, pivots = result
    expected, expected_pivots = oracle.rref()
    rank = len(expected_pivots)
    assert list(pivots) == list(expected_pivots)
    assert len(R) == rank
    for t in range(rank):
        assert [_sym(x) for x in R[t]] == list(expected.row(t))


@settings(max_examples=60, deadline=None)
@given(matrices())
def test_rref_over_q_equals_sympy(rows: list[list[fmpq]]) -> None:
    """rref over QQ (flint) gives exactly sympy's reduced row echelon form: nonzero rows and pivot columns."""
    oracle = _to_sympy(rows, len(rows[0]))
    _assert_rref_matches_sympy(rref(QQ, rows), oracle)


@settings(max_examples=40, deadline=None)
@given(matrices())
def test_generic_elimination_equals_sympy(rows: list[list[fmpq]]) -> None:
    """The field-generic Gauss–Jordan branch (taken for any field object other than QQ) agrees with sympy too,
    and does not modify its input."""
    copy = [list(r) for r in rows]
    oracle = _to_sympy(rows, len(rows[0]))
    _assert_rref_matches_sympy(rref(OTHER_QQ, rows), oracle)
    assert rows == copy


@settings(max_examples=60, deadline=None)
@given(matrices(), st.booleans())
def test_independent_rows_is_a_maximal_independent_set(rows: list[list[fmpq]], generic: bool) -> None:
    """independent_rows returns distinct row indices whose rows are linearly independent (sympy rank = count) and
    span all rows (count = sympy's rank of the whole matrix)."""
    F = OTHER_QQ if generic else QQ
    ncols = len(rows[0])
    chosen = independent_rows(F, rows)
    rank = _to_sympy(rows, ncols).rank()
    assert len(chosen) == len(set(chosen)) == rank
    assert all(0 <= i < len(rows) for i in chosen)
    assert _to_sympy([rows[i] for i in chosen], ncols).rank() == rank


def test_rank_lost_modulo_the_prime_is_recovered_exactly() -> None:
    """Rows independent over Q but dependent modulo 2^61 − 1 (an entry divisible by it): the modular shortcut must
    fall back to exact elimination and still return every row; a denominator divisible by the prime as well."""
    rows = [[fmpq(1), fmpq(1)], [fmpq(1), fmpq(1 + PRIME)]]
    assert _to_sympy(rows, 2).rank() == 2
    assert sorted(independent_rows(QQ, rows)) == [0, 1]
    rows = [[fmpq(1, PRIME), fmpq(0), fmpq(1)], [fmpq(0), fmpq(1), fmpq(1)], [fmpq(1, PRIME), fmpq(1), fmpq(2)]]
    assert _to_sympy(rows, 3).rank() == 2
    chosen = independent_rows(QQ, rows)
    assert len(chosen) == 2 and _to_sympy([rows[i] for i in chosen], 3).rank() == 2


def test_empty_and_zero_matrices() -> None:
    """Degenerate inputs: no rows, and an all-zero matrix, have rank 0 (no pivots, no independent rows)."""
    assert independent_rows(QQ, []) == []
    assert rref(QQ, []) == ([], [])
    zero = [[fmpq(0)] * 3 for _ in range(2)]
    for F in (QQ, OTHER_QQ):
        assert rref(F, zero) == ([], [])
        assert independent_rows(F, zero) == []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.tuples(small_rationals, small_rationals), min_size=3, max_size=3), min_size=1,
                max_size=4),
       st.booleans())
def test_number_field_rref_and_rank_equal_sympy(entries: list, dependent: bool) -> None:
    """Over Q(√2), rref and independent_rows agree with sympy on the same matrix written with sympy.sqrt(2):
    a + b√2 entries, with an optional row that is a Q(√2)-combination of the others."""
    F, (s,) = field_of("sqrt(2)")
    alpha = sympy.sympify(F.expr)
    rows = [[F(a) + F(b) * s for a, b in row] for row in entries]
    if dependent:
        rows.append([x * (1 + s) - y for x, y in zip(rows[0], rows[-1], strict=True)])

    def to_sym(x) -> sympy.Expr:
        return sum((_sym(c) * alpha**i for i, c in enumerate(F.coefficients(x))), sympy.Integer(0))

    oracle = sympy.Matrix([[to_sym(x) for x in row] for row in rows])
    R, pivots = rref(F, rows)
    expected, expected_pivots = oracle.rref(simplify=True)
    assert list(pivots) == list(expected_pivots)
    assert len(R) == len(expected_pivots)
    for t, row in enumerate(R):
        assert all(sympy.simplify(to_sym(x) - y) == 0 for x, y in zip(row, expected.row(t), strict=True))
    chosen = independent_rows(F, rows)
    rank = oracle.rank(simplify=True)
    assert len(chosen) == len(set(chosen)) == rank
    assert sympy.Matrix([list(oracle.row(i)) for i in chosen]).rank(simplify=True) == rank

"""The exact readings of float arrays: the finiteness test and exact sums, against Fraction arithmetic (which shares
no code with them)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.numbers import floats
from certsym.numbers.floats import all_finite, exact_row_sums

FLOAT64 = st.floats(allow_nan=False, allow_infinity=False)  # subnormals, ±0 and the largest included


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4).flatmap(lambda r: st.lists(st.lists(FLOAT64, min_size=0, max_size=12).map(tuple),
                                                    min_size=r, max_size=r)).filter(
    lambda rows: len({len(row) for row in rows}) == 1))
def test_exact_row_sums_are_the_rational_sums(rows) -> None:
    got = exact_row_sums(np.array(rows, dtype=np.float64).reshape(len(rows), len(rows[0])))
    for row, total in zip(rows, got, strict=True):
        want = sum((Fraction(x) for x in row), Fraction(0))
        assert total == fmpq(want.numerator, want.denominator)


def test_exact_row_sums_across_passes(monkeypatch) -> None:
    """More terms than one pass of binary64 bin sums holds exactly: the passes' rationals add up."""
    monkeypatch.setattr(floats, "_TERMS", 3)
    values = np.array([[2.0**52 + 1, 2.0**52 + 1, 2.0**-1074, -3.5, 1e308, 1e308, -1e308, 0.1]])
    want = sum((Fraction(x) for x in values[0].tolist()), Fraction(0))
    assert exact_row_sums(values) == [fmpq(want.numerator, want.denominator)]


@given(st.sampled_from([16, 32, 64]).flatmap(
    lambda w: st.tuples(st.just(w), st.lists(st.floats(width=w), max_size=20))))
def test_all_finite_is_numpy_isfinite(case) -> None:
    """Both ways of deciding: a finite sum, and (NaN, ±inf, or finite entries whose sum overflows) min and max."""
    width, values = case
    array = np.array(values, dtype={16: np.float16, 32: np.float32, 64: np.float64}[width])
    assert all_finite(array) == bool(np.isfinite(array).all())
    if len(values) % 2 == 0:
        assert all_finite(array.reshape(2, -1)) == bool(np.isfinite(array).all())


def test_all_finite_when_the_sum_overflows() -> None:
    big = np.full(4, np.finfo(np.float32).max, dtype=np.float32)
    assert all_finite(big)
    assert not all_finite(np.r_[big, np.float32(np.inf)])

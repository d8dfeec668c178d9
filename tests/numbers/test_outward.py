"""Rounding a stated bound outward to a short dyadic (``certsym.numbers.outward``): never on the wrong side, short,
close, and the identity on short numbers. Checked against Fraction arithmetic."""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq
from hypothesis import given
from hypothesis import strategies as st

from certsym.numbers import outward
from certsym.numbers.rational import MIN_EXPONENT, SHORT_BITS

numerators = st.integers(min_value=-(2**5000), max_value=2**5000)
denominators = st.integers(min_value=1, max_value=2**5000)


@given(numerators, denominators, st.booleans(), st.sampled_from([8, 64, 256]))
def test_outward_is_on_the_safe_side_short_and_close(num: int, den: int, up: bool, bits: int) -> None:
    x = Fraction(num, den)
    y = outward(fmpq(num, den), up, bits)
    r = Fraction(int(y.p), int(y.q))
    assert r >= x if up else r <= x
    q = r.denominator
    assert q & (q - 1) == 0 or r == x, "a rounded bound is a dyadic"
    assert q.bit_length() <= -MIN_EXPONENT + 1
    if max(abs(num).bit_length(), den.bit_length()) <= bits:
        assert r == x
    elif abs(x) >= Fraction(1, 2 ** (-MIN_EXPONENT - bits)):
        assert abs(r - x) <= abs(x) / 2 ** (bits - 3), "within a few units of the last of ``bits`` places"
        assert abs(r.numerator).bit_length() <= bits + 1 + max(0, abs(num).bit_length() - den.bit_length())
    else:
        assert abs(r) <= Fraction(1, 2 ** -MIN_EXPONENT) * 2 ** bits  # a tiny bound becomes a few 2^MIN_EXPONENT


def test_outward_examples() -> None:
    third = fmpq(1, 3 * 2**100)
    assert outward(fmpq(1, 3), True) == fmpq(1, 3)
    up, down = outward(third, True), outward(third, False)
    assert down < third < up and up - down == fmpq(1, 2 ** (100 + SHORT_BITS))
    assert outward(fmpq(1, 10**1300), True) == fmpq(1, 2**-MIN_EXPONENT)
    assert outward(fmpq(1, 10**1300), False) == 0
    assert outward(-third, True) == -down


@given(st.integers(min_value=0, max_value=2**200), st.integers(min_value=1, max_value=2**200), st.booleans())
def test_outward_dyadic_always_gives_a_power_of_two_denominator(num: int, den: int, up: bool) -> None:
    x = fmpq(num, den)
    y = outward(x, up, 40, dyadic=True)
    assert y >= x if up else y <= x
    q = int(y.q)
    assert q & (q - 1) == 0
    if den & (den - 1) == 0 and max(num.bit_length(), den.bit_length()) <= 40:
        assert y == x

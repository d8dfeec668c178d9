"""certsym_check.fields: the integer Sturm chain counts real roots exactly (against sympy's count_roots)."""

from __future__ import annotations

from fractions import Fraction

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym_check.fields import sign_changes_at, sturm

X = sympy.Symbol("x")


@st.composite
def _squarefree(draw):
    """A squarefree integer polynomial of degree 1..8, often with a negative leading coefficient and with factors
    whose pseudo-division skips steps (sparse coefficients), and an interval with rational ends."""
    degree = draw(st.integers(1, 8))
    coeffs = draw(st.lists(st.integers(-9, 9) if draw(st.booleans()) else st.sampled_from([-3, -1, 0, 0, 0, 1, 2]),
                           min_size=degree + 1, max_size=degree + 1))
    if coeffs[-1] == 0:
        coeffs[-1] = draw(st.sampled_from([-2, -1, 1, 3]))
    poly = sympy.Poly(list(reversed(coeffs)), X)
    poly = sympy.Poly(sympy.quo(poly, sympy.gcd(poly, poly.diff(X))), X)  # its squarefree part, same roots
    lo = Fraction(draw(st.integers(-40, 40)), draw(st.integers(1, 7)))
    hi = lo + Fraction(draw(st.integers(1, 80)), draw(st.integers(1, 7)))
    return [int(c) for c in reversed(poly.all_coeffs())], lo, hi


@settings(max_examples=400, deadline=None)
@given(_squarefree())
def test_sturm_counts_the_real_roots_in_an_interval(case):
    coeffs, lo, hi = case
    if len(coeffs) < 2:  # a constant squarefree part: no roots anywhere
        coeffs = [-1, 1]
    poly = sympy.Poly(list(reversed(coeffs)), X)
    ends = [sympy.Rational(lo.numerator, lo.denominator), sympy.Rational(hi.numerator, hi.denominator)]
    on_an_end = any(poly.eval(e) == 0 for e in ends)
    chain = sturm([Fraction(c) for c in coeffs], "test")
    assert len(chain[-1]) == 1  # squarefree: the last element is a nonzero constant
    count = sign_changes_at(chain, lo) - sign_changes_at(chain, hi)
    # Sturm's theorem counts the roots in (lo, hi]; sympy's count_roots counts those in [lo, hi]
    expected = poly.count_roots(*ends) - (poly.eval(ends[0]) == 0)
    assert count == expected, (coeffs, lo, hi, on_an_end)


def test_the_skipped_steps_of_a_pseudo_division_keep_the_signs():
    """−(x − 3)(x² − 3): the chain's third element comes from a division whose second step is skipped; with the
    signs of lc^δ instead of lc^steps it counted no root below 3."""
    chain = sturm([Fraction(c) for c in (-9, 3, 3, -1)], "test")
    assert sign_changes_at(chain, Fraction(-10)) - sign_changes_at(chain, Fraction(3)) == 3
    assert sign_changes_at(chain, Fraction(-10)) - sign_changes_at(chain, Fraction(2)) == 2

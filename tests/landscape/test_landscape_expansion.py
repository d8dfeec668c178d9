"""The exact series of the landscape families (``expansion``) and the series calculus under it (``powerseries``)."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.cli import main
from certsym.landscape.expansion import agreement, expand
from certsym.landscape.families import FAMILIES, continue_in_k
from certsym.landscape.powerseries import (
    NeedsRoot,
    RationalFunctions,
    Series,
    SeriesBackend,
    SeriesError,
    working_order,
)
from certsym.landscape.series import fit

t = sympy.Symbol("t")
K = RationalFunctions(["P"])
B = SeriesBackend(K, {"P": math.pi}, order=8)
N = 7  # coefficients compared

small = st.fractions(min_value=-3, max_value=3, max_denominator=5)
polys = st.lists(small, min_size=1, max_size=4)


def _series(coeffs: list[Fraction], v: int = 0) -> Series:
    return Series(K, v, [K(c) for c in coeffs], 10**9)


def _expr(coeffs: list[Fraction], v: int = 0) -> sympy.Expr:
    return sum(sympy.Rational(c.numerator, c.denominator) * t ** (v + i) for i, c in enumerate(coeffs))


def _agree(s: Series, expr: sympy.Expr, upto: int) -> None:
    """Every coefficient of t^0 … t^(upto − 1) (and any of negative power) agrees with sympy's: the zeros below the
    valuation, and all of them for a zero series, are compared too."""
    reference = sympy.series(expr, t, 0, upto).removeO()
    assert s.prec >= upto
    low = min(s.v, 0) if not s.is_zero else 0
    for j in range(low, upto):
        assert sympy.simplify(s.coefficient(j).as_expr() - reference.coeff(t, j)) == 0, (j, s, reference)


@settings(max_examples=20, deadline=None)
@given(polys, polys)
def test_quotient_matches_sympy(p, q) -> None:
    q = [Fraction(1) + abs(q[0]), *q[1:]]
    with working_order(N):
        _agree(_series(p) / _series(q), _expr(p) / _expr(q), N)


@settings(max_examples=20, deadline=None)
@given(polys, st.integers(min_value=0, max_value=2))
def test_square_root_matches_sympy(p, v) -> None:
    # (c t^v)² (1 + t p(t)): an even valuation and a square leading coefficient
    c = Fraction(3, 2)
    coeffs = [c * c, *[c * c * a for a in p]]
    with working_order(N):
        root = B.sqrt(_series(coeffs, 2 * v))
    _agree(root, sympy.sqrt(_expr(coeffs, 2 * v)), N)


@settings(max_examples=20, deadline=None)
@given(polys, st.sampled_from([0, 1]))
def test_arctangent_matches_sympy(p, at) -> None:
    coeffs = [Fraction(at), *p]  # atan at 0 or at 1 (π/4 + …)
    with working_order(N):
        s = B.atan(_series(coeffs))
    expr = sympy.atan(_expr(coeffs))
    reference = sympy.series(expr, t, 0, N).removeO()
    for j in range(N):
        assert sympy.simplify(s.coefficient(j).as_expr() - reference.coeff(t, j)) == 0


def test_series_refuse_what_they_cannot_expand() -> None:
    with working_order(4), pytest.raises(SeriesError, match="odd valuation"):
        B.sqrt(_series([Fraction(1)], 1))
    with working_order(4), pytest.raises(SeriesError, match="not a square"):
        B.sqrt(Series(K, 0, [K.gens[0] + 1], 10**9))  # π + 1
    F2 = RationalFunctions(["P"], root=2)
    with working_order(4), pytest.raises(SeriesError, match="not a square"):
        SeriesBackend(F2, {"P": math.pi}).sqrt(Series.constant(F2, 3))  # √3 in Q(√2, π)
    with working_order(4), pytest.raises(SeriesError, match="leading value"):
        B.atan(_series([Fraction(2)]))
    with pytest.raises(SeriesError, match="not determined"):
        Series(K, 0, [K(1)], 3).coefficient(3)


def test_precision_is_tracked_through_cancellation() -> None:
    # (t^-4 + 1 + O(t^2)) − t^-4 is known only to O(t^2); times t^-4 only to O(t^-2)
    a = Series(K, -4, [K(1), K(0), K(0), K(0), K(1), K(0)], 2)
    d = a - Series.monomial(K, 1, -4)
    assert d.v == 0 and d.prec == 2
    assert (d * Series.monomial(K, 1, -4)).prec == -2


@settings(max_examples=30, deadline=None)
@given(st.lists(small, min_size=3, max_size=3))
def test_rational_functions_agree_with_sympy(c) -> None:
    F = RationalFunctions(["P", "x"])
    P, x = F.gens
    a = (P + c[0] * x) / (x + 2)
    b = (P * x + c[1]) / (P + 1) + c[2]
    Ps, xs = sympy.symbols("P x")
    ea = (Ps + sympy.nsimplify(c[0]) * xs) / (xs + 2)
    eb = (Ps * xs + sympy.nsimplify(c[1])) / (Ps + 1) + sympy.nsimplify(c[2])
    for got, want in ((a * b, ea * eb), (a - b, ea - eb), (a / (b + 7), ea / (eb + 7))):
        assert sympy.simplify(got.as_expr() - want.subs(Ps, sympy.pi)) == 0
    assert (a - a) == 0 and (a * 0).n.is_zero()


@pytest.fixture(scope="module")
def one_misfit():
    return expand("one-misfit", 2)


def test_one_misfit_series_matches_the_critical_points(one_misfit) -> None:
    """The derived series summed at large k equal the numerically computed critical point to O(t^{v+3})."""
    fam = FAMILIES["one-misfit"]
    points = continue_in_k(fam, [10**4, 10**5, 10**6])[1:]
    assert [p.k for p in points] == [10**5, 10**6] and one_misfit.parameters
    for p in points:
        tt = p.k**-0.5
        x = dict(zip(p.result.layout.names, p.result.x, strict=True))
        for s in one_misfit.parameters:
            approx = float(s.evaluate(tt))
            assert abs(approx - x[s.name]) < 50 * tt ** (s.valuation + 3), (s.name, p.k)


def test_one_misfit_critical_value_agrees_with_the_fit(one_misfit) -> None:
    """k·F = (1/2 − 2/π²) + c₁ t + …: the derived coefficients equal the least-squares fits (to their accuracy,
    ≥ 8 digits for the first three), including c₁ = −0.1095038107… fitted from k = 10^4 … 10^12."""
    rows = [r for r in agreement(one_misfit, fit("one-misfit")) if r.name == "k*F"]
    assert [r.power for r in rows] == [0, 1, 2]
    assert all(r.agrees(8) for r in rows)
    assert abs(rows[0].value - (0.5 - 2 / math.pi**2)) < 1e-15
    assert abs(rows[1].value + 0.1095038107) < 1e-10
    fitted = [r for r in agreement(one_misfit, fit("one-misfit")) if r.fit is not None]
    assert len(fitted) > len(rows)
    assert all(r.difference <= 2 * r.uncertainty + 1e-15 for r in fitted)


def test_negative_diagonal_series() -> None:
    e = expand("negative-diagonal", 3)
    rows = {(r.name, r.power): r for r in agreement(e, fit("negative-diagonal"))}
    assert rows[("F", 0)].agrees(8) and rows[("F", 1)].agrees(8) and rows[("F", 2)].agrees(8)
    assert abs(rows[("F", 1)].value + 0.4244131816) < 1e-10
    assert sympy.simplify(e.loss.coefficients[0] - (sympy.Rational(1, 2) - 1 / sympy.pi)) == 0
    accurate = [r for r in rows.values() if r.fit is not None and r.uncertainty < 1e-9]
    assert {("F", 0), ("F", 1), ("F", 2)} <= {(r.name, r.power) for r in accurate}
    assert all(r.agrees(6) for r in accurate)


def test_square_roots_join_the_field() -> None:
    """Q(√2)(P, x): R² = 2, denominators made free of R, the zero test exact."""
    F = RationalFunctions(["P", "x"], root=2)
    P, R, x = F.gens
    assert R * R == 2 and (R * R * R - 2 * R) == 0
    assert 1 / (1 + R) == R - 1
    a = (x + R) / (P - R)
    assert sympy.simplify(a.as_expr() - (sympy.Symbol("x") + sympy.sqrt(2)) / (sympy.pi - sympy.sqrt(2))) == 0
    assert abs(a.evaluate({"P": math.pi, "x": 0.5}) - (0.5 + math.sqrt(2)) / (math.pi - math.sqrt(2))) < 1e-12
    with working_order(4), pytest.raises(NeedsRoot) as info:
        B.sqrt(_series([Fraction(8)]))
    assert info.value.M == 2


def test_two_misfit_series_needs_the_square_root_of_two() -> None:
    """k·F(two-misfit) = 2(1/2 − 2/π²) − 64/(3π⁴) t + …: twice one-misfit's first two terms (the fits agree)."""
    e = expand("two-misfit", 1)
    rows = [r for r in agreement(e, fit("two-misfit")) if r.name == "k*F"]
    assert [r.power for r in rows] == [0, 1]
    assert all(r.agrees(8) for r in rows)
    assert sympy.simplify(e.loss.coefficients[0] - (1 - 4 / sympy.pi**2)) == 0
    assert sympy.simplify(e.loss.coefficients[1] + sympy.Rational(64, 3) / sympy.pi**4) == 0


def test_cli_series(capsys) -> None:
    assert main(["landscape", "series", "--family", "negative-diagonal", "--order", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    loss = next(s for s in out["series"] if s["name"] == "F")
    assert [c["power"] for c in loss["coefficients"]] == [0, 1, 2]
    assert sympy.N(sympy.sympify(loss["coefficients"][1]["exact"])) == pytest.approx(-4 / (3 * math.pi))
    assert out["fits"]
    assert main(["landscape", "series", "--family", "nope"]) == 2
    assert main(["landscape", "series", "--family", "one-misfit", "--order", "99"]) == 2

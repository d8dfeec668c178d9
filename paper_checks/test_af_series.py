"""Arjevani & Field (2020): the families of critical points are power series in k^(-1/2), and not all spurious
minima are alike, in the form of ../docs/MATH.md (Part II, "What the second paper reports"):

    Along each family the critical point and the critical value are power series in t = k^(-1/2), derived
    order by order from the restricted critical-point equations (coefficients in Q(π)). For one-misfit the
    critical value decays like a·k^(-1): k·F = (1/2 − 2/π²) − 32/(3π⁴) t + O(t²), a = 1/2 − 2/π² ≈ 0.297, and
    the misfit neuron tends to −e_k (d2 → −1); with M misfit neurons k·F → M(1/2 − 2/π²). For negative-diagonal
    (W = aI + b(11^T − I), a → −1) the critical value tends to the strictly positive constant 1/2 − 1/π:
    F = (1/2 − 1/π) − 4/(3π) t + O(t²). Some spurious minima have a loss decaying like k^(-1), others a loss
    bounded away from 0.

Checked through ``certsym landscape series --json`` (the exact coefficients, compared with MATH.md's closed forms
by sympy, exactly) and ``certsym landscape critical --json --inertia-cert`` at k = 10^4 and 10^6 (t = 1/100 and
1/1000, exact rationals): each certified enclosure of the critical value lies within 2 t³ of the series truncated
after t², and the enclosures show a certified local minimum whose loss is below 3·10^-7 (one-misfit, k = 10^6)
beside one whose loss exceeds 0.18 (negative-diagonal, k = 10^6). The inertia certificates of those minima are
replayed VALID (the series themselves carry no certificate: they are exact symbolic derivations).
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from paper_checks.support import landscape, replay

PI = sp.pi
A = sp.Rational(1, 2) - 2 / PI**2  # one misfit neuron's share of k·F


def _series(capsys, tmp_path, family: str, order: int) -> dict[str, list]:
    code, out, _ = landscape(capsys, tmp_path, "series", "--family", family, "--order", str(order), "--no-fit")
    assert code == 0 and out["t"] == "k^(-1/2)"
    return {s["name"]: [(c["power"], sp.sympify(c["exact"])) for c in s["coefficients"]] for s in out["series"]}


def _is(x, y) -> bool:
    return sp.simplify(x - y) == 0


def _enclosure(capsys, tmp_path, family: str, k: int) -> tuple[Fraction, Fraction]:
    """The certified enclosure of F at the family's critical point for this k: a local minimum, its inertia
    certificate replayed."""
    code, out, files = landscape(capsys, tmp_path, "critical", "--family", family, "--k", str(k),
                                 inertia_cert=f"{family}_{k}.json")
    assert code == 0 and out["certified"] and out["is_local_minimum"]
    replay(files["--inertia-cert"])
    lo, hi = (Fraction(x) for x in out["loss_enclosure"])
    return lo, hi


def _within(value: Fraction, series, t: sp.Rational, bound) -> bool:
    """|value − Σ c_p t^p| ≤ bound, decided at 50 digits (π is the one irrational number in it)."""
    gap = sp.Rational(value.numerator, value.denominator) - sum(c * t**p for p, c in series)
    return bool(abs(gap).evalf(50) <= bound)


def test_one_misfit_series_and_its_critical_values(capsys, tmp_path) -> None:
    s = _series(capsys, tmp_path, "one-misfit", 2)
    (p0, a0), (p1, a1), (p2, a2) = s["k*F"]
    assert (p0, p1, p2) == (0, 1, 2) and _is(a0, A) and _is(a1, -32 / (3 * PI**4))
    assert s["d1"][0] == (0, 1) and s["d2"][0] == (0, -1)  # k − 1 neurons → e_i, the misfit → −e_k
    assert s["c12"][0] == (2, 2)  # the misfit row's other entries: 2 t² = 2/k
    for k, t in ((10**4, sp.Rational(1, 100)), (10**6, sp.Rational(1, 1000))):
        lo, hi = _enclosure(capsys, tmp_path, "one-misfit", k)
        assert _within(k * lo, s["k*F"], t, 2 * t**3) and _within(k * hi, s["k*F"], t, 2 * t**3)
    assert hi < Fraction(3, 10**7)  # k = 10^6: a spurious minimum whose loss decays like a/k


def test_negative_diagonal_tends_to_a_positive_constant(capsys, tmp_path) -> None:
    s = _series(capsys, tmp_path, "negative-diagonal", 2)
    (p0, f0), (p1, f1), _ = s["F"]
    assert (p0, p1) == (0, 1) and _is(f0, sp.Rational(1, 2) - 1 / PI) and _is(f1, -4 / (3 * PI))
    assert s["d1"][0] == (0, -1) and s["o1"][0] == (2, 2)  # a → −1, b = 2/k + …
    for k, t in ((10**4, sp.Rational(1, 100)), (10**6, sp.Rational(1, 1000))):
        lo, hi = _enclosure(capsys, tmp_path, "negative-diagonal", k)
        assert _within(lo, s["F"], t, 2 * t**3) and _within(hi, s["F"], t, 2 * t**3)
    assert lo > Fraction(18, 100)  # k = 10^6: a spurious minimum whose loss stays above a positive constant


def test_two_misfit_neurons_cost_twice_one(capsys, tmp_path) -> None:
    """k·F → 2(1/2 − 2/π²): within t of it at k = 10^4 and 10^6 (the series of two-misfit, in Q(π, √2), is
    left to ``certsym reproduce --full``: about 15 s)."""
    for k, t in ((10**4, sp.Rational(1, 100)), (10**6, sp.Rational(1, 1000))):
        lo, hi = _enclosure(capsys, tmp_path, "two-misfit", k)
        assert _within(k * lo, [(0, 2 * A)], t, t) and _within(k * hi, [(0, 2 * A)], t, t)

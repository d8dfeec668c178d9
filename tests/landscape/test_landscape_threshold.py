"""The real threshold k*: the producer's bracket (``certify.threshold``), its ``landscape_threshold`` certificate
replayed by the independent checker, and tampered certificates the checker must refuse."""

from __future__ import annotations

import copy
import json

import mpmath
import pytest
from flint import arb, ctx, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import threshold_certificate
from certsym.landscape import restricted
from certsym.landscape.certify import Threshold, at_real_k, branch_box, crossing, threshold
from certsym.landscape.dual import Dual, DualBackend
from certsym.landscape.families import family
from certsym_check import check_certificate
from certsym_check.kinds import landscape as replay
from tests.helpers import edited

FAMILIES = ["one-misfit", "negative-diagonal", "two-misfit", "misfit-3"]


@pytest.fixture(scope="module")
def made() -> dict[str, tuple[Threshold, dict]]:
    out = {}
    for name in FAMILIES:
        _, t = threshold(name)
        out[name] = (t, json.loads(json.dumps(threshold_certificate(t))))
    return out


@pytest.mark.parametrize("name,k,low", [("one-misfit", 6, 5.5855), ("negative-diagonal", 6, 5.7638),
                                        ("two-misfit", 8, 7.5611), ("misfit-3", 10, 9.3231)])
def test_threshold_brackets_are_certified_and_replay(made, name: str, k: int, low: float) -> None:
    t, cert = made[name]
    a, b = t.bracket
    assert k - 1 < a < b < k and 0 < b - a <= fmpq(1, 2**24) and low < float(a) < low + 1e-4
    assert any(t.below.negative) and not any(t.above.negative)
    report = check_certificate(cert)
    assert report.valid, report.reason
    assert f"k* in ({float(a):.9f}"[:16] in report.facts[0] and "negative eigenvalue" in report.facts[0]


def test_no_threshold_for_a_layout_without_table() -> None:
    assert threshold("misfit-1") == (None, None)


def _plus(q: str, d: fmpq) -> str:
    return str(fmpq(*map(int, q.split("/"))) + d if "/" in q else fmpq(int(q)) + d)


@pytest.mark.parametrize("path,value,reason", [
    (("proof", "family"), "two-misfit", "belongs to 'one-misfit', not"),
    (("proof", "fixed"), [2], ""),
    (("proof", "fixed"), [True], "positive integers"),
    (("proof", "statement"), "Krawczyk", "must cite"),
    (("proof", "bracket"), lambda ab: [ab[1], ab[0]], "a < b"),
    (("proof", "bracket", 1), lambda b: _plus(b, fmpq(1)), "inside [n, n + 1]"),
    (("proof", "bracket", 1), lambda b: _plus(b, fmpq(1, 2**10)), ""),
    (("proof", "bracket", 0), lambda a: _plus(a, fmpq(-1, 2**12)), ""),
    (("proof", "bracket", 0), "1/" + "7" * 1300, "bits"),
    (("proof", "branch", "radius"), lambda r: _plus(r, -fmpq(*map(int, r.split("/"))) / 2), ""),
    (("proof", "branch", "center", 0), lambda c: _plus(c, fmpq(1, 2**20)), ""),
    (("proof", "below", "center", 0), lambda c: _plus(c, fmpq(1, 2**18)), "inside the branch box"),
    (("proof", "below", "negative"), lambda n: [0] * len(n), "negative eigenvalues are"),
    (("proof", "above", "negative"), lambda n: [1] + n[1:], "negative eigenvalues are"),
    (("proof", "below", "Q"), lambda Q: Q[:-1], "must be a list of length"),
    (("proof", "below", "Q", 1, 0), lambda row: ["0"] * len(row), "Gershgorin"),
    (("proof", "above", "loss", 0), lambda lo: _plus(lo, fmpq(1, 10**6)), "loss interval"),
    (("proof", "above"), lambda end: end, ""),  # replaced below by the other end
])
def test_tampered_thresholds_are_rejected(made, path, value, reason) -> None:
    _, cert = made["one-misfit"]
    doc = edited(cert, path, value)
    if path == ("proof", "above"):
        doc["proof"]["above"], doc["proof"]["below"] = cert["proof"]["below"], cert["proof"]["above"]
    report = check_certificate(doc)
    assert not report.valid and reason in report.reason


@pytest.mark.parametrize("fixed,bracket", [([1, 1], None), ([1, 10**8], ["200000011/2", "100000006"]),
                                           ([], ["5/2", "3"]), ([3], ["13/2", "7"]), ([1], ["7/2", "4"])])
def test_layouts_without_an_isotypic_table_are_refused_with_the_reason(made, fixed, bracket) -> None:
    """Found by review: these used to end in a TypeError inside the full-Hessian fallback (and an integer block of
    10^8 there would have built a list of that length)."""
    doc = copy.deepcopy(made["one-misfit"][1])
    doc["proof"]["fixed"] = fixed
    if bracket:
        doc["proof"]["bracket"] = bracket
    report = check_certificate(doc)
    assert not report.valid and "no isotypic table" in report.reason


def test_a_huge_stated_count_is_refused_with_the_reason(made) -> None:
    """Found by review: the message printed the stated list, and an integer of 5,000 digits has no text form."""
    doc = edited(made["one-misfit"][1], ("proof", "below", "negative"), lambda n: [*n[:-1], 10**5000])
    report = check_certificate(doc)
    assert not report.valid and "not the certificate's" in report.reason


def test_a_bracket_without_a_sign_change_is_rejected() -> None:
    """Two certified points below k*, a branch box over them: every step verifies, but the claim is false."""
    t = crossing("one-misfit", 5, 6)
    a = t.bracket[0]
    lo, _ = at_real_k("one-misfit", a - fmpq(1, 2**24))
    hi = t.below
    branch = branch_box("one-misfit", lo.k, hi.k, [lo.box, hi.box])
    assert branch is not None and any(lo.negative) and any(hi.negative)
    doc = json.loads(json.dumps(threshold_certificate(Threshold(t.family, (lo.k, hi.k), lo, hi, branch))))
    report = check_certificate(doc)
    assert not report.valid and "no sign change" in report.reason


def test_dual_derivative_of_the_gradient_agrees_with_the_checkers_mixed_partial() -> None:
    """∂g/∂k at a point by the producer's dual numbers and by the checker's jet in k (independent code)."""
    fam = family("two-misfit")
    k = fmpq(15, 2)
    layout = fam.layout(float(k))
    x = [fmpq(*float(v).as_integer_ratio()) for v in fam.start(float(k))]
    with ctx.workprec(320):
        dual = restricted.gradient(layout, [arb(v) for v in x], DualBackend(320),
                                   [Dual(arb(k - 2), 1), Dual(arb(2))])
    from fractions import Fraction

    with replay.working_precision():
        jet = replay.loss_jet([Fraction(11, 2), 2], [replay.enclose(Fraction(int(v.p), int(v.q))) for v in x],
                              k=replay.enclose(Fraction(15, 2)))
        for i, d in enumerate(dual):
            mixed = jet.h[i][len(x)]
            assert abs(float(d.d.mid()) - float(mixed.mid)) <= 1e-12 * max(1.0, abs(float(mixed.mid)))


@settings(max_examples=60, deadline=None)
@given(st.fractions(1, 10), st.fractions(-3, 3), st.fractions(1, 5), st.fractions(-2, 2))
def test_dual_numbers_enclose_the_derivative(k, c1, c2, c3) -> None:
    """f(k) = √(k² + c2) · atan2(k, c2 + c3²) / (k + 11) − c1 k³ + 1/k: the dual's derivative part encloses f′(k)
    (mpmath's numerical derivative at 60 digits, an independent computation)."""
    def f(z, c1, c2, c3, sqrt, atan2):
        return sqrt(z * z + c2) * atan2(z, c2 + c3 * c3) / (z + 11) - c1 * z * z * z + 1 / z

    B = DualBackend(200)
    with ctx.workprec(200):
        q = [arb(fmpq(v.numerator, v.denominator)) for v in (k, c1, c2, c3)]
        out = f(Dual(q[0], 1), *q[1:], B.sqrt, B.atan2)
    with mpmath.workdps(60):
        m = [mpmath.mpf(v.numerator) / v.denominator for v in (k, c1, c2, c3)]
        exact = mpmath.diff(lambda z: f(z, *m[1:], mpmath.sqrt, mpmath.atan2), m[0])
        error = abs(mpmath.mpf(out.d.mid().str(60, radius=False)) - exact)
    assert float(out.d.rad()) < 1e-40 and error <= float(out.d.rad()) + 1e-45

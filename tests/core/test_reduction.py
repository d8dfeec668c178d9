"""Moves 1–3 preserve ρ, θ_min is minimal, and reduction is idempotent (hypothesis)."""

from __future__ import annotations

from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, minimal_form_certificate
from certsym.core.canonical import canonical_form
from certsym.core.network import Network
from certsym.core.reduction import is_minimal, reduce
from certsym_check import check_certificate

small = st.integers(-2, 2).map(fmpq)


@st.composite
def networks(draw) -> Network:
    m, k, n = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(0, 6))
    return Network.build([[draw(small) for _ in range(n)] for _ in range(k)],
                         [[draw(small) for _ in range(m)] for _ in range(n)],
                         [draw(small) for _ in range(n)], [draw(small) for _ in range(k)], m=m)


points = st.lists(st.tuples(st.integers(-7, 7), st.integers(1, 3)).map(lambda t: fmpq(*t)), min_size=2, max_size=2)


@settings(max_examples=80, deadline=None)
@given(networks(), st.lists(points, min_size=4, max_size=4))
def test_moves_preserve_rho_and_reach_a_minimal_form(theta: Network, xs) -> None:
    red = reduce(theta)
    for x in xs:
        assert red.minimal.evaluate(x[: theta.m]) == theta.evaluate(x[: theta.m])
    assert is_minimal(red.minimal) and reduce(red.minimal).minimal == red.minimal
    assert canonical_form(red.minimal) == canonical_form(theta)
    assert (red.minimal.m, red.minimal.n, red.minimal.k) == (theta.m, theta.n, theta.k)
    report = check_certificate(minimal_form_certificate(red, InputRecord("p", "0" * 64)))
    assert report.valid, report.reason

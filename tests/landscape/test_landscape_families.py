"""The restricted loss on Fix(Δ(S_{p1} × ... × S_{pr})) against the full closed forms of ``kernel`` (on the
expanded matrix), against finite differences and across backends (float, arb); Newton's method and continuation
in k for the families of critical points (MATH.md, Part II)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from flint import arb

from certsym.landscape import kernel, restricted
from certsym.landscape.families import (
    FAMILIES,
    NEGATIVE_DIAGONAL,
    ONE_MISFIT,
    TWO_MISFIT,
    NewtonError,
    continue_in_k,
    newton,
)
from certsym.landscape.restricted import ArbBackend, Layout
from certsym.landscape.symmetry import diagonal_generators, fixed_point_orbits, project

LAYOUTS = [(3,), (4, 1), (2, 3), (1, 1, 3), (3, 2, 2), (11, 1), (10, 2), (12,), (1, 4, 2, 1)]


def _random_point(layout: Layout, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(len(layout.names))


# --------------------------------------------------------------------------------------------------------------
# the fixed-point space


@pytest.mark.parametrize("sizes", LAYOUTS)
def test_expand_spans_the_fixed_point_space(sizes) -> None:
    """expand(x) is fixed by Δ(S_{p1} × ... × S_{pr}) (projection of symmetry.py leaves it unchanged), the
    parameters are as many as the orbits of index pairs, project inverts expand, and the orbit sizes are the
    numbers of entries carrying each parameter."""
    layout = Layout(sizes)
    k = sum(sizes)
    orbits = fixed_point_orbits(diagonal_generators(sizes), k)
    assert len(layout.names) == len(orbits)
    x = _random_point(layout, 0)
    W = restricted.expand(layout, x)
    assert np.allclose(project(W, orbits), W, atol=1e-14, rtol=0)
    assert np.allclose(restricted.project(layout, W), x, atol=1e-14, rtol=0)
    assert list(layout.orbit_sizes()) == [int(E.sum()) for E in restricted.basis(layout)]
    assert sum(layout.orbit_sizes()) == k * k


def test_parameter_order() -> None:
    assert Layout((4, 1)).names == ("d1", "o1", "d2", "c12", "c21")
    assert Layout((3, 2)).names == ("d1", "o1", "d2", "o2", "c12", "c21")
    assert Layout((5,)).names == ("d1", "o1")
    assert Layout((2.5, 1.0)).names == ("d1", "o1", "d2", "c12", "c21")  # real sizes: o_α iff p_α > 1
    W = restricted.expand(Layout((2, 1)), [1, 2, 3, 4, 5])
    assert np.array_equal(W, [[1, 2, 4], [2, 1, 4], [5, 5, 3]])  # c12 = last column, c21 = last row


# --------------------------------------------------------------------------------------------------------------
# restricted loss, gradient, Hessian against kernel.py and finite differences


@pytest.mark.parametrize("sizes", LAYOUTS)
def test_restricted_matches_the_full_closed_forms(sizes) -> None:
    """F, J^T ∇F, J^T ∇²F J from kernel.py on the expanded matrix; ∇F(W) itself from the restricted gradient
    (symmetric criticality); the restricted Hessian against central differences of the restricted gradient."""
    layout = Layout(sizes)
    for seed in range(2):
        x = _random_point(layout, 10 + seed)
        H = restricted.hessian(layout, x)
        scale = 1 + np.abs(H).max()
        errors = restricted.gradient_full_consistency(layout, x)
        assert errors["loss"] < 1e-12 * (1 + abs(restricted.loss(layout, x)))
        assert errors["gradient"] < 1e-12 * scale
        assert errors["entries"] < 1e-12 * scale
        assert errors["hessian_full"] < 1e-12 * scale
        assert errors["hessian_fd"] < 1e-6 * scale
        assert np.abs(H - H.T).max() < 1e-12 * scale


@pytest.mark.parametrize("sizes", [(4, 1), (2, 3), (5,)])
def test_restricted_hessian_is_the_trivial_isotypic_block(sizes) -> None:
    """The full Hessian at a point of Fix commutes with the isotropy, so Fix (the trivial isotypic component) is
    invariant under it: in the orthonormal basis E_p/√|orbit_p| the restricted Hessian is that block, and its
    eigenvalues are eigenvalues of the full k²×k² Hessian."""
    layout = Layout(sizes)
    x = _random_point(layout, 7)
    D = 1 / np.sqrt(np.array(layout.orbit_sizes(), dtype=float))
    block = np.linalg.eigvalsh(D[:, None] * restricted.hessian(layout, x) * D[None, :])
    full = np.linalg.eigvalsh(kernel.hessian(restricted.expand(layout, x)))
    assert all(np.abs(full - value).min() < 1e-10 * (1 + abs(value)) for value in block)


@pytest.mark.parametrize("sizes", [(4, 1), (2, 3), (1, 1, 3)])
def test_gradient_matches_finite_differences_of_the_loss(sizes) -> None:
    layout = Layout(sizes)
    x = _random_point(layout, 3)
    G = restricted.gradient(layout, x)
    h = 1e-6
    for p in range(len(x)):
        e = np.zeros_like(x)
        e[p] = h
        fd = (restricted.loss(layout, x + e) - restricted.loss(layout, x - e)) / (2 * h)
        assert abs(fd - G[p]) < 1e-7 * (1 + abs(G[p]))


def test_kappa_partials_match_finite_differences() -> None:
    """∂κ/∂g = (π − θ)/(2π), ∂κ/∂N = S/(4πN), and the second partials (∂²κ/∂N² = (2g² − N)/(8πN²S)) against
    central differences of the first ones, at acute, obtuse and nearly antiparallel angles."""
    h = 1e-6
    for g, N in [(0.3, 2.0), (-1.1, 1.5), (-0.99, 1.0), (2.0, 9.0)]:
        P = restricted.kappa_partials(g, N)
        theta, S = math.acos(g / math.sqrt(N)), math.sqrt(N - g * g)
        assert P["k"] == pytest.approx(math.sqrt(N) * (math.sin(theta) + (math.pi - theta) * math.cos(theta))
                                       / (2 * math.pi), abs=1e-14)
        assert P["g"] == pytest.approx((math.pi - theta) / (2 * math.pi), abs=1e-14)
        assert P["N"] == pytest.approx(S / (4 * math.pi * N), abs=1e-14)
        up_g, down_g = restricted.kappa_partials(g + h, N), restricted.kappa_partials(g - h, N)
        up_N, down_N = restricted.kappa_partials(g, N + h), restricted.kappa_partials(g, N - h)
        assert (up_g["k"] - down_g["k"]) / (2 * h) == pytest.approx(P["g"], rel=1e-7)
        assert (up_N["k"] - down_N["k"]) / (2 * h) == pytest.approx(P["N"], rel=1e-7)
        assert (up_g["g"] - down_g["g"]) / (2 * h) == pytest.approx(P["gg"], rel=1e-6)
        assert (up_N["g"] - down_N["g"]) / (2 * h) == pytest.approx(P["gN"], rel=1e-6)
        assert (up_g["N"] - down_g["N"]) / (2 * h) == pytest.approx(P["gN"], rel=1e-6)
        assert (up_N["N"] - down_N["N"]) / (2 * h) == pytest.approx(P["NN"], rel=1e-6)


def test_real_block_sizes_interpolate_the_integer_ones() -> None:
    """Float sizes give the same values as int sizes at integers, and the loss is continuous in k."""
    x = ONE_MISFIT.start(8)
    assert restricted.loss(Layout((7.0, 1.0)), x) == pytest.approx(restricted.loss(Layout((7, 1)), x), abs=1e-13)
    assert restricted.loss(Layout((7.0 + 1e-7, 1.0)), x) == pytest.approx(restricted.loss(Layout((7, 1)), x),
                                                                          abs=1e-5)
    # at a block size → 1 the off-diagonal parameter's weight vanishes: continuity across the change of layout
    y = TWO_MISFIT.start(3.0 + 1e-9)
    small = Layout((1.0 + 1e-9, 2.0))
    assert restricted.loss(small, y) == pytest.approx(
        restricted.loss(Layout((1, 2)), restricted.transfer(y, small, Layout((1, 2)))), abs=1e-7)


# --------------------------------------------------------------------------------------------------------------
# the arb backend


@pytest.mark.parametrize("sizes", [(4, 1), (3, 2, 2)])
def test_arb_balls_contain_the_float_values(sizes) -> None:
    """The same code over arb: tight balls for the float-represented inputs, which contain the float results once
    widened by the float rounding error (1e-12 relative to the size of the terms)."""
    layout = Layout(sizes)
    x = _random_point(layout, 5)
    B = ArbBackend(prec=128)
    xb = [arb(float(v)) for v in x]
    L, G, H = restricted.loss(layout, xb, B), restricted.gradient(layout, xb, B), restricted.hessian(layout, xb, B)
    Lf, Gf, Hf = restricted.loss(layout, x), restricted.gradient(layout, x), restricted.hessian(layout, x)
    eps = 1e-12 * (1 + np.abs(Hf).max() + abs(Lf))

    def inside(ball: arb, value: float) -> bool:
        return ball.rad() < 1e-25 and (ball + arb(0, eps)).contains(value)

    assert inside(L, Lf)
    assert all(inside(g, gf) for g, gf in zip(G, Gf, strict=True))
    assert all(inside(H[i][j], Hf[i, j]) for i in range(len(x)) for j in range(len(x)))
    assert not (L + arb(0, eps)).contains(Lf + 1e-6)  # the comparison is not vacuous


def test_arb_is_exact_where_floats_cancel() -> None:
    """At k = 10⁶ the grouped sums cancel O(k²) terms: the identity W = I (F = 0, ∇F = 0) is still a tight ball
    around 0 in arb, and the arb gradient entries are tiny."""
    layout = Layout((10**6 - 1, 1))
    identity = [1, 0, 1, 0, 0]
    B = ArbBackend(prec=160)
    L = restricted.loss(layout, identity, B)
    assert L.contains(0) and L.rad() < 1e-20
    assert np.abs(restricted.full_gradient_entries(layout, identity, B)).max() < 1e-25


# --------------------------------------------------------------------------------------------------------------
# Newton's method and the families


@pytest.mark.parametrize("k", [6, 10])
@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=lambda f: f.name)
def test_newton_finds_critical_points_of_the_full_loss(family, k: int) -> None:
    """Tiny restricted gradient and tiny full gradient (kernel.gradient on the expanded matrix): symmetric
    criticality."""
    result = newton(family.layout(k), family.start(k))
    layout = result.layout
    assert np.abs(restricted.gradient(layout, result.x)).max() < 1e-10
    W = restricted.expand(layout, result.x)
    assert np.abs(kernel.gradient(W)).max() < 1e-11
    assert result.loss == pytest.approx(kernel.loss(W), abs=1e-12)
    assert result.loss > 1e-3  # spurious: not the global minimum F = 0


def test_one_misfit_is_a_saddle_at_5_and_a_minimum_at_6() -> None:
    points = {p.k: p.result for p in continue_in_k(ONE_MISFIT, [6, 5])}
    spectra = {k: np.linalg.eigvalsh(kernel.hessian(restricted.expand(r.layout, r.x))) for k, r in points.items()}
    assert spectra[6].min() > 1e-3
    assert spectra[5].min() < -1e-3
    W = restricted.expand(points[6].layout, points[6].x)
    assert W[-1, -1] < -0.5 and np.all(np.diag(W)[:-1] > 0.9)  # the misfit neuron is the last one


def test_continuation_agrees_with_direct_newton_and_reaches_large_k() -> None:
    """Continuation in k (real intermediate values) lands on the same points as Newton started at family.start;
    at k = 10⁶ (arb backend) the gradient entries are tiny and loss·k has settled."""
    points = {p.k: p.result for p in continue_in_k(ONE_MISFIT, [6, 10, 20, 10**5, 10**6])}
    for k in (10, 20):
        direct = newton(ONE_MISFIT.layout(k), ONE_MISFIT.start(k))
        assert np.allclose(direct.x, points[k].x, atol=1e-9)
    big = points[10**6]
    assert big.residual < 1e-20 and big.loss_ball is not None and big.loss_ball.rad() < 1e-20
    assert abs(big.loss * 10**6 - points[10**5].loss * 10**5) < 1e-2 * big.loss * 10**6
    # and the restricted gradient, recomputed independently in arb at the returned midpoint, is tiny
    B = ArbBackend(prec=200)
    assert np.abs(restricted.full_gradient_entries(big.layout, big.x_mid, B)).max() < 1e-18


def test_negative_diagonal_loss_grows_with_k() -> None:
    losses = [p.result.loss for p in continue_in_k(NEGATIVE_DIAGONAL, [10, 100, 1000])]
    assert losses[0] < losses[1] < losses[2]


def test_continuation_across_a_change_of_layout() -> None:
    """Two-misfit from k = 5 down to k = 3, where the first block has size 1 and o1 disappears."""
    points = continue_in_k(TWO_MISFIT, [5, 3])
    r = points[-1].result
    assert r.layout.names == ("d1", "d2", "o2", "c12", "c21")
    assert np.abs(kernel.gradient(restricted.expand(r.layout, r.x))).max() < 1e-11


def test_newton_fails_loudly() -> None:
    layout = ONE_MISFIT.layout(8)
    with pytest.raises(NewtonError):
        newton(layout, ONE_MISFIT.start(8), max_iter=1)
    with pytest.raises(NewtonError):
        newton(layout, [0, 0, 0, 0, 0])  # W = 0: the kernel is not differentiable there

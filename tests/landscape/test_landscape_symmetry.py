"""Γ-invariance of the loss, fixed-point spaces and diagonal isotropy (MATH.md, Part II)."""

from __future__ import annotations

import numpy as np
import pytest

from certsym.landscape import kernel
from certsym.landscape.symmetry import act, diagonal_generators, diagonal_isotropy, fixed_point_orbits, project


def test_loss_is_gamma_invariant_and_the_gradient_equivariant() -> None:
    """F((π, ρ)·W) = F(W) for all of Γ = S_k × S_k: permuting the student's neurons changes nothing, and
    permuting the inputs moves the teacher I_k to P_ρᵀ, whose network Σ_j σ(x_j) is the same function."""
    rng = np.random.default_rng(0)
    k = 4
    W = rng.standard_normal((k, k))
    G = kernel.gradient(W)
    for pi, rho in (([2, 0, 3, 1], [2, 0, 3, 1]), ([2, 0, 3, 1], [0, 1, 2, 3]), ([0, 1, 2, 3], [3, 2, 1, 0])):
        assert kernel.loss(act(pi, rho, W)) == pytest.approx(kernel.loss(W), abs=1e-12)
        assert np.allclose(kernel.gradient(act(pi, rho, W)), act(pi, rho, G), atol=1e-12)
    assert abs(kernel.loss(W + 0.1) - kernel.loss(W)) > 1e-6  # not a constant function


@pytest.mark.parametrize("blocks, dim", [((5,), 2), ((4, 1), 5), ((2, 3), 6), ((1, 1, 3), 10)])
def test_fixed_point_dimensions(blocks, dim: int) -> None:
    """MATH.md: Fix(ΔS_k) = {aI + b(11ᵀ − I)} has dimension 2, Fix(ΔS_{k−1}) 5, Fix(Δ(S_2 × S_{k−2})) 6;
    in general 2 per block of size ≥ 2, 1 per block of size 1, and 1 per ordered pair of distinct blocks."""
    orbits = fixed_point_orbits(diagonal_generators(blocks), sum(blocks))
    assert len(orbits) == dim


def test_critical_points_of_the_restriction_are_critical() -> None:
    """Symmetric criticality: the gradient at a fixed point lies in the fixed-point space."""
    rng = np.random.default_rng(2)
    k = 5
    orbits = fixed_point_orbits(diagonal_generators((k - 1, 1)), k)
    W = project(rng.standard_normal((k, k)), orbits)
    G = kernel.gradient(W)
    assert np.allclose(project(G, orbits), G, atol=1e-12)
    assert diagonal_isotropy(W) == [[0, 1, 2, 3], [4]]

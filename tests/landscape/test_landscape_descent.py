"""The descent experiment: its vectorized closed forms, determinism, and the isotropy of its end points."""

from __future__ import annotations

import numpy as np

from certsym.landscape import descent, kernel, restricted
from certsym.landscape.families import FAMILIES, newton


def test_vectorized_gradient_and_loss_match_the_kernel() -> None:
    rng = np.random.default_rng(5)
    for k in (3, 6):
        W = rng.standard_normal((k, k))
        assert np.abs(kernel.fast_gradient(W) - kernel.gradient(W)).max() < 1e-12
        assert abs(kernel.fast_loss(W) - kernel.loss(W)) < 1e-12


def test_experiment_is_deterministic_and_classifies() -> None:
    a, b = descent.experiment(6, 3, seed=11, max_steps=3000), descent.experiment(6, 3, seed=11, max_steps=3000)
    assert len(a.runs) == len(b.runs) == 3
    assert [r.loss for r in a.runs] == [r.loss for r in b.runs]
    assert all(r.lands_in for r in a.runs)


def test_isotropy_of_a_disguised_one_misfit_point() -> None:
    k = 8
    family = FAMILIES["one-misfit"]
    W = restricted.expand(family.layout(k), newton(family.layout(k), family.start(k)).x)
    rng = np.random.default_rng(2)
    disguised = W[rng.permutation(k)][:, rng.permutation(k)]  # Γ = S_k × S_k acts by independent permutations
    assert descent.isotropy_type(disguised) == "Δ(S_7 × S_1)"
    assert descent.classify(disguised, kernel.loss(disguised), descent._family_points(k)).startswith("one-misfit")

"""The descent experiment: its vectorized closed forms, determinism, and the isotropy of its end points."""

from __future__ import annotations

import numpy as np
import pytest

from certsym.landscape import descent, kernel, restricted
from certsym.landscape.families import FAMILIES, newton


def test_vectorized_gradient_and_loss_match_the_kernel() -> None:
    rng = np.random.default_rng(5)
    for k in (3, 6):
        W = rng.standard_normal((k, k))
        assert np.abs(kernel.fast_gradient(W) - kernel.gradient(W)).max() < 1e-12
        assert abs(kernel.fast_loss(W) - kernel.loss(W)) < 1e-12


def test_batched_gradient_is_the_gradient_of_each_matrix() -> None:
    rng = np.random.default_rng(7)
    W = rng.standard_normal((5, 7, 6))  # five students with one added neuron, k = 6
    G = kernel.batch_gradient(W)
    assert G.shape == W.shape
    assert max(np.abs(G[r] - kernel.fast_gradient(W[r])).max() for r in range(5)) < 1e-12


def test_batched_runs_take_the_steps_of_single_descents() -> None:
    """Each run of the batched experiment ends where the plain loop W ← W − (4/k)∇F from the same start ends."""
    k, runs, cap = 5, 4, 400
    e = descent.experiment(k, runs, seed=3, max_steps=cap, init="uniform", extra=1)
    rng = np.random.default_rng([3, k])
    for r in range(runs):
        W = rng.uniform(-np.sqrt(3 / k), np.sqrt(3 / k), size=(k + 1, k))
        steps = 0
        while steps < cap and np.abs(kernel.fast_gradient(W)).max() >= 1e-6:
            W, steps = W - 4 / k * kernel.fast_gradient(W), steps + 1
        assert e.runs[r].steps == steps and np.abs(e.runs[r].W - W).max() < 1e-9


def test_the_xavier_name_is_refused_with_its_new_name() -> None:
    with pytest.raises(ValueError, match="now called 'uniform'"):
        descent.experiment(4, 1, seed=0, init="xavier")


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

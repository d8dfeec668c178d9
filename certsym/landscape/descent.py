"""Gradient descent on the exact population loss (Safran & Shamir's experiment, MATH.md Part II).

Random starts W_ij ~ N(0, 1/k), plain gradient descent with the closed-form gradient of ``kernel``
(``fast_gradient``: O(k³) per step, vectorized), stopped when max |∇F| < tol or after ``max_steps``.
Each end point is classified: a global minimum (F ≈ 0, a permutation matrix), a member of a named family
(same loss as the family's critical point at this k and the same multiset of entries, a Γ-invariant), or
"other". Floating point throughout: this is an experiment, its verdicts are not certified (the families it
lands in are, by ``certify``).
Deterministic given the seed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from certsym.landscape import kernel, restricted
from certsym.landscape.families import FAMILIES, newton


@dataclass
class Run:
    """One descent: the final loss, the steps taken, whether max |∇F| fell below tol, and where it ended."""

    loss: float
    steps: int
    converged: bool
    lands_in: str


@dataclass
class Experiment:
    """All runs at one k."""

    k: int
    runs: list[Run] = field(default_factory=list)

    @property
    def counts(self) -> Counter:
        """How many runs ended at each place."""
        return Counter(r.lands_in for r in self.runs)

    @property
    def spurious_fraction(self) -> float:
        """The fraction of runs that did not end at the global minimum."""
        spurious = [r for r in self.runs if r.lands_in != "global minimum"]
        return len(spurious) / len(self.runs) if self.runs else 0.0


def _family_points(k: int) -> dict[str, tuple[float, np.ndarray]]:
    out = {}
    for name, family in FAMILIES.items():
        try:
            res = newton(family.layout(k), family.start(k))
        except Exception:  # noqa: BLE001 - a family that Newton cannot reach from its start at this k is skipped
            continue
        out[name] = (res.loss, np.sort(restricted.expand(family.layout(k), res.x).ravel()))
    return out


def isotropy_type(W: np.ndarray, tol: float = 1e-3) -> str:
    """The isotropy Δ(S_p1 × … × S_pr) of W up to ``tol`` (up to conjugation in Γ: the columns are first permuted so
    that each neuron's largest entry is on the diagonal). Indices are grouped by the sorted entries of
    their row and column and their diagonal entry, and each group is kept only if every transposition inside it
    fixes W (|P W Pᵀ − W| ≤ tol). Floating point (an experiment's end point). Cost O(k³)."""
    k = W.shape[0]
    target = np.abs(W).argmax(axis=1)  # Γ = S_k × S_k: first align each neuron with its nearest target
    if len(set(target.tolist())) == k:
        W = W[:, target]

    def signature(i: int) -> tuple:
        rest = [j for j in range(k) if j != i]
        return (round(W[i, i] / tol), *np.round(np.sort(W[i, rest]) / tol), *np.round(np.sort(W[rest, i]) / tol))

    groups: dict[tuple, list[int]] = {}
    for i in range(k):
        groups.setdefault(signature(i), []).append(i)
    sizes = []
    for members in groups.values():
        first = members[0]
        for j in members[1:]:
            perm = np.arange(k)
            perm[[first, j]] = perm[[j, first]]
            if np.abs(W[np.ix_(perm, perm)] - W).max() > tol:
                sizes += [1] * len(members)
                break
        else:
            sizes.append(len(members))
    sizes.sort(reverse=True)
    return "Δ(" + " × ".join(f"S_{p}" for p in sizes) + ")"


def classify(W: np.ndarray, value: float, families: dict[str, tuple[float, np.ndarray]]) -> str:
    """Which certified family (or the global minimum) the end point W is, by loss and sorted entries."""
    if value < 1e-8:
        return "global minimum"
    entries = np.sort(W.ravel())
    for name, (fam_loss, fam_entries) in families.items():
        if abs(value - fam_loss) < 1e-6 and np.abs(entries - fam_entries).max() < 1e-3:
            return f"{name} ({isotropy_type(W)})"
    return f"other (F = {value:.5f}, isotropy {isotropy_type(W)})"


def experiment(k: int, runs: int, seed: int, *, max_steps: int = 20000, tol: float = 1e-6) -> Experiment:
    """``runs`` descents from W_ij ~ N(0, 1/k) with numpy's generator seeded by (seed, k), step 4/k (the largest
    Hessian eigenvalues grow like k). Cost O(runs · max_steps · k³)."""
    step = 4.0 / k
    rng = np.random.default_rng([seed, k])
    families = _family_points(k)
    out = Experiment(k)
    for _ in range(runs):
        W = rng.normal(0.0, 1.0 / np.sqrt(k), size=(k, k))
        converged, steps = False, 0
        while steps < max_steps:
            G = kernel.fast_gradient(W)
            if np.abs(G).max() < tol:
                converged = True
                break
            W = W - step * G
            steps += 1
        value = kernel.fast_loss(W)
        out.runs.append(Run(value, steps, converged, classify(W, value, families)))
    return out

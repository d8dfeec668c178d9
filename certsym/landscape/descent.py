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

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from certsym.landscape import kernel, restricted
from certsym.landscape.families import FAMILIES, misfit, newton
from certsym.landscape.given import GivenPoint, certify_matrix, isotropy_type
from certsym.landscape.wide import WideError, WidePoint, certify_wide

# Safran and Shamir (2018): the % of 1000 descents from N(0, 1/k) that end at a spurious point (F ≥ 10^-3), for
# n = k student neurons, and for n = k + 1 (where 0.0 stands for "about 0")
PUBLISHED_SHARES = {6: 0.3, 7: 5.5, 8: 12.6, 9: 21.8, 10: 34.6, 11: 45.5, 12: 58.5, 13: 73.0, 14: 73.6, 15: 80.3,
                    16: 85.1, 17: 89.7, 18: 90.0, 19: 93.4, 20: 94.9}
PUBLISHED_PLUS_ONE = {6: 0.0, 7: 0.0, 8: 0.1, 9: 0.0, 10: 0.1, 11: 0.1, 12: 0.3, 13: 1.5, 14: 5.5}


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% for z = 1.96) of a binomial proportion successes/n; (0, 1) for n = 0.
    Cost O(1)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Run:
    """One descent: the final loss, the steps taken, whether max |∇F| fell below tol, and where it ended."""

    loss: float
    steps: int
    converged: bool
    lands_in: str
    W: np.ndarray | None = field(default=None, repr=False)


@dataclass
class Experiment:
    """All runs at one k."""

    k: int
    runs: list[Run] = field(default_factory=list)

    @property
    def counts(self) -> Counter:
        """How many runs ended at each place."""
        return Counter(r.lands_in for r in self.runs)

    def certified_end_points(self) -> dict[str, GivenPoint]:
        """Each distinct end point the runs report (one per class other than the global minimum), certified from
        the first run that reached it (``given.certify_matrix``). Cost: one certification per class."""
        out: dict[str, GivenPoint] = {}
        for run in self.runs:
            if (run.lands_in != "global minimum" and run.lands_in not in out and run.W is not None
                    and run.W.shape[0] == run.W.shape[1]):
                out[run.lands_in] = certify_matrix(run.W)
        return out

    def certified_wide_end_points(self) -> dict[str, WidePoint | str]:
        """With added neurons (W ∈ M(n, k), n > k): each distinct spurious end point certified in its fixed-point
        space (``wide.certify_wide``), or the reason it is not. Cost: one certification per class."""
        out: dict[str, WidePoint | str] = {}
        for run in self.runs:
            if run.lands_in != "global minimum" and run.lands_in not in out and run.W is not None:
                try:
                    out[run.lands_in] = certify_wide(run.W)
                except WideError as exc:
                    out[run.lands_in] = str(exc)
        return out

    @property
    def spurious_fraction(self) -> float:
        """The fraction of runs that did not end at the global minimum."""
        spurious = [r for r in self.runs if r.lands_in != "global minimum"]
        return len(spurious) / len(self.runs) if self.runs else 0.0


def _family_points(k: int) -> dict[str, tuple[float, np.ndarray]]:
    """Each family's point at k (the four named ones and misfit-M for 3 ≤ M ≤ k/2): its loss and sorted entries."""
    out = {}
    for name, family in [*FAMILIES.items(), *((f"misfit-{M}", misfit(M)) for M in range(3, k // 2 + 1))]:
        try:
            res = newton(family.layout(k), family.start(k))
        except Exception:  # noqa: BLE001 - a family that Newton cannot reach from its start at this k is skipped
            continue
        out[name] = (res.loss, np.sort(restricted.expand(family.layout(k), res.x).ravel()))
    return out


def classify(W: np.ndarray, value: float, families: dict[str, tuple[float, np.ndarray]]) -> str:
    """Which certified family (or the global minimum) the end point W is, by loss and sorted entries. With more
    rows than columns (an added neuron) only the loss decides: "spurious" means F ≥ 10⁻³ (Safran and Shamir's rule)."""
    if W.shape[0] != W.shape[1]:
        return "global minimum" if value < 1e-3 else f"spurious (F = {value:.5f})"
    if value < 1e-8:
        return "global minimum"
    entries = np.sort(W.ravel())
    for name, (fam_loss, fam_entries) in families.items():
        if abs(value - fam_loss) < 1e-6 and np.abs(entries - fam_entries).max() < 1e-3:
            return f"{name} ({isotropy_type(W)})"
    return f"other (F = {value:.5f}, isotropy {isotropy_type(W)})"


def experiment(k: int, runs: int, seed: int, *, max_steps: int = 20000, tol: float = 1e-6,
               init: str = "normal", extra: int = 0) -> Experiment:
    """``runs`` descents from W_ij ~ N(0, 1/k) (``init`` "normal": Safran and Shamir's protocol, whose code draws
    randn(k, k)/sqrt(k)) or the uniform U(−√(3/k), √(3/k)) of the same variance (``init`` "uniform", which finds
    6–11 points fewer spurious minima at k = 10–14), numpy's generator seeded by (seed, k), step 4/k (the
    largest Hessian eigenvalues grow like k); ``extra`` student neurons beyond k (W ∈ M(k + extra, k)). The runs
    advance together in batched numpy operations. Cost O(runs · max_steps · k³) floating-point operations, in
    O(max_steps) batched steps."""
    if init == "xavier":
        raise ValueError("init 'xavier' is now called 'uniform' (U(−√(3/k), √(3/k))); Safran and Shamir's protocol "
                         "is the default 'normal', N(0, 1/k)")
    if init not in ("normal", "uniform"):
        raise ValueError("init must be 'normal' or 'uniform'")
    step = 4.0 / k
    rng = np.random.default_rng([seed, k])
    families = _family_points(k) if not extra else {}
    n = k + extra
    W = np.stack([rng.uniform(-np.sqrt(3.0 / k), np.sqrt(3.0 / k), size=(n, k)) if init == "uniform" else
                  rng.normal(0.0, 1.0 / np.sqrt(k), size=(n, k)) for _ in range(runs)]).reshape(runs, n, k)
    steps = np.zeros(runs, dtype=np.int64)
    converged = np.zeros(runs, dtype=bool)
    active = np.arange(runs)
    # every run advances in one batch, and leaves it when its gradient is small: the same steps as one at a time
    for _ in range(max_steps):
        if not len(active):
            break
        G = kernel.batch_gradient(W[active])
        small = np.abs(G).max(axis=(1, 2)) < tol
        converged[active[small]] = True
        active, G = active[~small], G[~small]
        W[active] -= step * G
        steps[active] += 1
    out = Experiment(k)
    for r in range(runs):
        value = kernel.fast_loss(W[r])
        out.runs.append(Run(value, int(steps[r]), bool(converged[r]), classify(W[r], value, families), W[r]))
    return out

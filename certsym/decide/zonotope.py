"""Zonotopes (MATH.md Part IV, "Zonotopes"): an upper bound on sup over a box of ‖f1(x) − f2(x)‖∞ for two networks
of the same widths without an output ReLU, both pushed through the same input, and the halvings of the box that
bring it below ε or near the witness's value.

The rule is certificates/FORMAT.md's "zonotopes" (the checker's ``kinds.zonotope``): every neuron of both networks
is an affine form in x plus a combination of error symbols ε_k ∈ [−1, 1] shared by all neurons; an unstable ReLU
(range [l, u] with l < 0 < u) becomes λ a + μ + μ ε_new with λ = u / (u − l) and μ = −λ l / 2, a fresh symbol.
The two networks share x, so their difference keeps what the input contributes to both, which intervals and
separate relaxations lose; the fresh symbols keep the correlations between neurons that a relaxation with one lower
and one upper form per neuron (``certsym.decide.symbolic``) loses layer after layer.

Here the rule runs in binary64 on numpy, only to *search*: which halvings to make and what to state, as
``certsym.decide.symbolic`` does for its rule (whose tree, stated bounds and witness search this rule shares: the
``Rule`` below has the same ``bound`` and ``l1``/``l2``). A region whose float rule makes more than ``columns``
symbols (with a margin: the checker's fixed point may call an unstable neuron stable, never the reverse, see
TOLERANCE) gets no bound here, and is halved. Cost: per region, for each layer and network, O(n_ℓ n_{ℓ−1} (m + K))
flops with K the symbols made so far.
"""

from __future__ import annotations

import numpy as np

from certsym.core.deep import LayeredNetwork
from certsym.decide.symbolic import TOLERANCE

MAX_COLUMNS = 4096  # the checker's cap on the symbols a region may make (kinds.zonotope.MAX_COLUMNS)
OVER = 1e300  # the bound of a region beyond the cap: finite, so that the tree orders it first and halves it


def region_products(widths: tuple[int, ...], free: int, columns: int) -> int:
    """The products the checker counts for one region (``kinds.zonotope.region_products``)."""
    return sum(2 * n * (p + 2) * (free + 2 + columns) for p, n in zip(widths, widths[1:], strict=False))


class Rule:
    """The rule in binary64 for one pair, with a cap of ``columns`` error symbols a region; ``split`` chooses the
    coordinate to halve by the inputs' smear over the unstable neurons (width times sensitivity: an input symbol's
    coefficient is already scaled by its half-width), as zonotope verifiers do."""

    def __init__(self, theta1: LayeredNetwork, theta2: LayeredNetwork, columns: int):
        def arrays(t: LayeredNetwork) -> list[tuple[np.ndarray, np.ndarray]]:
            return [(np.array([[float(x) for x in row] for row in layer.W], dtype=np.float64).reshape(
                layer.width, -1), np.array([float(x) for x in layer.b])) for layer in t.layers]

        self.l1, self.l2 = arrays(theta1), arrays(theta2)
        self.columns = columns
        self.last_columns = 0  # the symbols the last bound made
        self.last_smear: np.ndarray | None = None  # per input, Σ |its coefficient| over the last bound's unstable

    def bound(self, lo: np.ndarray, hi: np.ndarray) -> float:
        """The rule's bound on the box [lo, hi] in binary64, or OVER (never stated: the region is halved) when it
        makes more symbols than the cap allows (with a 5% margin, every neuron within TOLERANCE of stable counted
        unstable)."""
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        outs, made = [], 0
        smear = np.zeros(len(lo))
        for layers in (self.l1, self.l2):
            c, G, E = centre, np.diag(half), np.zeros((len(centre), 0))
            for ell, (W, b) in enumerate(layers):
                c, G, E = W @ c + b, W @ G, W @ E if E.shape[1] else np.zeros((len(b), 0))
                if ell == len(layers) - 1:
                    break
                spread = np.abs(G).sum(axis=1) + np.abs(E).sum(axis=1)
                l, u = c - spread, c + spread
                tol = TOLERANCE * (1 + np.abs(l) + np.abs(u))
                # stable only clearly so: the checker's fixed point then finds it stable too (an end near 0 may
                # fall on either side there, and a symbol made here that the checker does not make only costs room)
                active, inactive = l >= tol, u <= -tol
                unstable = ~active & ~inactive
                smear += np.abs(G[unstable]).sum(axis=0)
                span = np.where(unstable & (u > l), u - l, 1)
                lam = np.where(unstable, np.clip(u / span, 0, 1), np.where(inactive, 0, 1))
                mu = np.where(unstable, np.maximum(-lam * l, (1 - lam) * u) / 2, 0)
                c, G, E = lam * c + mu, G * lam[:, None], E * lam[:, None]
                idx = np.flatnonzero(unstable)
                made += len(idx)
                if made > 0.95 * self.columns:
                    self.last_columns, self.last_smear = made, smear
                    return OVER
                fresh = np.zeros((len(c), len(idx)))
                fresh[idx, np.arange(len(idx))] = mu[idx]
                E = np.hstack([E, fresh])
            outs.append((c, G, E))
        self.last_columns, self.last_smear = made, smear
        (c1, G1, E1), (c2, G2, E2) = outs
        return float((np.abs(c1 - c2) + np.abs(G1 - G2).sum(axis=1) + np.abs(E1).sum(axis=1)
                      + np.abs(E2).sum(axis=1)).max())

    def split(self, lo: np.ndarray, hi: np.ndarray) -> int:
        """The coordinate whose halving the smear favours on [lo, hi] (the widest when no neuron is unstable)."""
        self.bound(lo, hi)
        smear = self.last_smear if self.last_smear is not None else np.zeros(len(lo))
        return int(smear.argmax()) if smear.max() > 0 else int((hi - lo).argmax())

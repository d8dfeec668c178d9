"""Proposition 14: ρ(θ) is affine iff, after moves 1–3, the remaining neurons split into
antisymmetric pairs r_j = −λ r_i, v_j = −v_i/λ (σ(z) − σ(−z) = z); then
ρ(θ)(x) = Σ_pairs v_i (a_i·x + b_i) + c.

Decision: ρ(θ) is affine iff it has no kink (every J_H = 0 in ``canonical``). Evidence: the reduction,
the pairs and the affine map (L, C); or two rational points x, y with f((x + y)/2) ≠ (f(x) + f(y))/2,
placed on a segment crossing a hyperplane with J_H ≠ 0 and no other (``equivalence.kink_probe``).
Cost: O(n(m + k)) field operations plus a hash (plus the witness placement).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flint import fmpq

from certsym.core.canonical import canonical_form
from certsym.core.decision import Certifiable
from certsym.core.network import Network, Vector
from certsym.core.reduction import Reduction, reduce
from certsym.decide.equivalence import Pair, kink_probe, pairing, rationalize


@dataclass
class AffineVerdict(Certifiable):
    """Proposition 14's decision for ρ(θ) and its evidence."""

    affine: bool
    reduction: Reduction
    pairs: list[Pair] = field(default_factory=list)
    linear: tuple[Vector, ...] = ()
    constant: Vector = ()
    points: tuple[list[fmpq], list[fmpq]] | None = None

    def __repr__(self) -> str:
        return f"AffineVerdict(affine={self.affine}, pairs={len(self.pairs)})"


def midpoint_defect(theta: Network, x: list, y: list) -> list:
    """(f(x) + f(y))/2 − f((x + y)/2): zero for an affine f."""
    mid = [(s + t) / 2 for s, t in zip(x, y, strict=True)]
    return [(p + q) / 2 - r for p, q, r in zip(theta(x), theta(y), theta(mid), strict=True)]


def decide_affine(theta: Network) -> AffineVerdict:
    """Proposition 14: is ρ(θ) affine? Cost O(n(m + k)) plus a hash."""
    red = reduce(theta)
    canon = canonical_form(red.minimal)
    if not canon.kinks:
        empty = Network.zero(theta.m, 0, theta.k, theta.field)
        _, _, pairs = pairing(red.minimal, empty)
        return AffineVerdict(True, red, pairs, canon.linear, canon.constant)
    F, m = theta.field, theta.m
    H = min(canon.kinks, key=lambda key: tuple(str(x) for x in key))
    x0, eps, u = kink_probe(F, m, H, set(canon.kinks))
    x = [a + eps * b for a, b in zip(x0, u, strict=True)]
    y = [a - eps * b for a, b in zip(x0, u, strict=True)]
    px, py = rationalize(F, [x, y], lambda pts: any(d != 0 for d in midpoint_defect(theta, *pts)))
    return AffineVerdict(False, red, points=(px, py))

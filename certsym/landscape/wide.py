"""Critical points of the teacher–student loss on M(n, k) — any number n of student neurons — certified in the
fixed-point space of their isotropy (MATH.md, Part II; over-parameterization).

Group. F is invariant under S_n × S_k acting by W ↦ P_π W P_ρᵀ (rows are summed over; a column permutation is
the change of variable x ↦ P_ρ x, which permutes the teacher's rows). ``isotropy_generators`` finds, up to a
tolerance, the transposition pairs ((a b), (c d)) — a row swap with a column swap, or either alone — that fix W;
they generate a subgroup G of the isotropy, and Fix(G) is spanned by the indicator matrices of the orbits of G
on the entries (``orbits``). By symmetric criticality a critical point of F restricted to Fix(G) is a critical
point of F.

Certification. W is projected onto Fix(G) (orbit averages); Newton's method runs on the orbit parameters
(floating point with the closed forms of ``kernel``, then the gradient in arb balls at 320 bits with a float
Hessian), and the result is stated as a Krawczyk box for the independent checker (kind ``wide_critical_point``),
with the loss enclosure and, when the numerical Hessian is positive definite, the claim that it is a strict local
minimum (the checker proves it by interval Cholesky of the full nk × nk Hessian, when n(n + k)k² ≤ 400,000).

Cost: O(n²k²) candidate swaps, each checked in O(nk); O(n²k²) per Newton step for the Hessian.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, ctx, fmpq

from certsym.landscape import balls, kernel
from certsym.landscape.symmetry import fixed_point_orbits

Perm = list[int]
PREC = 320
MAX_ENTRIES = 240  # the checker's bound on n·k
MAX_HESSIAN_WORK = 400_000  # the checker's bound on n(n + k)k², the full Hessian it encloses to prove a minimum


class WideError(ValueError):
    """W cannot be certified: too large, or not near a critical point of F in its fixed-point space."""


@dataclass(frozen=True)
class WidePoint:
    """A certified-to-be critical point of F on M(n, k): generators, orbits, the Krawczyk data and the loss."""

    shape: tuple[int, int]
    generators: list[tuple[Perm, Perm]]
    orbits: list[list[tuple[int, int]]]
    center: list[Fraction]
    radius: Fraction
    preconditioner: list[list[Fraction]]
    loss: tuple[Fraction, Fraction]
    minimum: bool
    smallest_eigenvalue: float

    @property
    def W(self) -> np.ndarray:
        out = np.zeros(self.shape)
        for x, orbit in zip(self.center, self.orbits, strict=True):
            for r, c in orbit:
                out[r, c] = float(x)
        return out


def _swap(size: int, a: int, b: int) -> Perm:
    p = list(range(size))
    p[a], p[b] = b, a
    return p


def isotropy_generators(W: np.ndarray, tol: float = 1e-3) -> list[tuple[Perm, Perm]]:
    """The transposition pairs ((a b), (c d)) (either may be the identity) with ‖P W Qᵀ − W‖∞ ≤ tol."""
    n, k = W.shape
    out = []
    rows = [None, *((a, b) for a in range(n) for b in range(a + 1, n))]
    cols = [None, *((c, d) for c in range(k) for d in range(c + 1, k))]
    for rs in rows:
        V = W if rs is None else W[_swap(n, *rs)]
        for cs in cols:
            if rs is None and cs is None:
                continue
            U = V if cs is None else V[:, _swap(k, *cs)]
            if np.abs(U - W).max() <= tol:
                out.append((list(range(n)) if rs is None else _swap(n, *rs),
                            list(range(k)) if cs is None else _swap(k, *cs)))
    return out


def orbits(n: int, k: int, generators: list[tuple[Perm, Perm]]) -> list[list[tuple[int, int]]]:
    """The orbits of the entries of M(n, k) under the generated group (``symmetry.fixed_point_orbits``)."""
    return fixed_point_orbits(generators, k, n)


def _basis(shape: tuple[int, int], orbit_list: list[list[tuple[int, int]]]) -> np.ndarray:
    B = np.zeros((shape[0] * shape[1], len(orbit_list)))
    for o, orbit in enumerate(orbit_list):
        for r, c in orbit:
            B[r * shape[1] + c, o] = 1.0
    return B


def certify_wide(W: np.ndarray, tol: float = 1e-3, steps: int = 30) -> WidePoint:
    """Certify W ∈ M(n, k) as a critical point in its fixed-point space (module docstring). Raises WideError."""
    n, k = W.shape
    if n * k > MAX_ENTRIES:
        raise WideError(f"n·k = {n * k} is over the limit {MAX_ENTRIES}")
    if not np.isfinite(W).all() or np.linalg.norm(W, axis=1).min() < 1e-6:
        raise WideError("W has a zero (or non-finite) row: F is not differentiable there")
    gens = isotropy_generators(W, tol)
    orbit_list = orbits(n, k, gens)
    B = _basis((n, k), orbit_list)
    sizes = B.sum(axis=0)
    x = (B.T @ W.ravel()) / sizes
    eye = np.eye(k)
    for _ in range(steps):  # Newton in floating point on the orbit parameters
        Wx = (B @ x).reshape(n, k)
        g = B.T @ kernel.gradient(Wx, eye).ravel()
        if np.abs(g).max() < 1e-13:
            break
        x = x - np.linalg.solve(B.T @ kernel.hessian(Wx, eye) @ B, g)
    Wx = (B @ x).reshape(n, k)
    H = B.T @ kernel.hessian(Wx, eye) @ B
    if np.abs(B.T @ kernel.gradient(Wx, eye).ravel()).max() > 1e-9 or np.abs(Wx - W).max() > 1e-2:
        raise WideError("W is not near a critical point of F in its fixed-point space")
    Hinv = np.linalg.inv(H)
    where = {e: o for o, orbit in enumerate(orbit_list) for e in orbit}
    center = [Fraction(v) for v in x]
    for _ in range(4):  # Newton with the gradient in arb (320 bits) and the float Hessian: ~15 digits a step
        Wq = _rational_matrix(center, where, n, k)
        with ctx.workprec(PREC):
            G = balls.gradient(Wq, PREC)
            g = [Fraction(sum((G[r][c] for r, c in orbit), arb(0)).mid().str(60, radius=False))
                 for orbit in orbit_list]
        center = [c - sum(Fraction(Hinv[i, j]) * g[j] for j in range(len(g))) for i, c in enumerate(center)]
        center = [Fraction(c).limit_denominator(10**60) for c in center]
    Wq = _rational_matrix(center, where, n, k)
    value = balls.loss(Wq, PREC)
    margin = Fraction(1, 10**20)
    loss = (Fraction(value.lower().str(40, radius=False)) - margin, Fraction(value.upper().str(40, radius=False))
            + margin)
    full = kernel.hessian(Wx, eye)
    smallest = float(np.linalg.eigvalsh((full + full.T) / 2)[0])
    return WidePoint((n, k), gens, orbit_list, center, Fraction(1, 10**25),
                     [[Fraction(v).limit_denominator(10**12) for v in row] for row in Hinv], loss,
                     smallest > 1e-8 and n * (n + k) * k * k <= MAX_HESSIAN_WORK, smallest)


def _rational_matrix(center: list[Fraction], where: dict, n: int, k: int) -> list[list[fmpq]]:
    values = [fmpq(c.numerator, c.denominator) for c in center]
    return [[values[where[(r, c)]] for c in range(k)] for r in range(n)]

"""The Hessian of F at the global minimum W = I, exactly (sympy), and the closed form of its spectrum.

At W = I every student row is parallel to its own target, where κ is only C¹; but the non-smooth part of
κ(w, e_i) is O(θ³), so F is C² there and ∇²_ww κ(w, e_i) → 0. From the kernel formulas (``kernel``) the k×k
blocks of ∇²F(I) are exactly
    (i, i):  ½ I    (the student–student and student–teacher terms at angle π/2 cancel),
    (i, j):  ¼ I + (e_i e_jᵀ + e_j e_iᵀ) / (2π)      (i ≠ j).
With q = 1/π its characteristic polynomial factors over Q(q) as (observed from the exact factorization for
k = 4..7, and re-verified by ``exact_factors`` for any small k)
    (λ − ¼ − q/2)^{k(k−3)/2} (λ − ¼ + q/2)^{k(k−1)/2} T(λ) S(λ)^{k−1},
    T(λ) = λ² − (kq/2 + (k+2)/4) λ + (k−1)q²/4 + (k² − k + 2) q/8 + (k+1)/16   (the trivial block),
    S(λ) = λ² − (k+2)/4 · λ − q²/4 + q/4 + (k+1)/16                               (the standard block).
Cost: ``exact_factors`` builds the k²×k² matrix over Q[q] and factors its characteristic polynomial (seconds for
k ≤ 6); ``closed_form`` is O(1).
"""

from __future__ import annotations

import sympy as sp
from sympy.polys.matrices import DomainMatrix

Q, LAM = sp.symbols("q lambda")  # q = 1/π


def hessian_at_identity(k: int) -> sp.Matrix:
    """∇²F(I) over Q(q), q = 1/π (module docstring)."""
    n = k * k
    H = sp.zeros(n, n)
    for i in range(k):
        for j in range(k):
            for a in range(k):
                for b in range(k):
                    if i == j:
                        value = sp.Rational(1, 2) if a == b else 0
                    else:
                        value = (sp.Rational(1, 4) if a == b else 0) + (Q / 2 if (a, b) in ((i, j), (j, i)) else 0)
                    H[i * k + a, j * k + b] = value
    return H


def exact_factors(k: int) -> dict[sp.Expr, int]:
    """The monic irreducible factors (over Q(q)) of det(λ − ∇²F(I)) with their multiplicities."""
    H = hessian_at_identity(k)
    M = DomainMatrix.from_Matrix(H).convert_to(sp.QQ[Q])
    coeffs = [sp.QQ[Q].to_sympy(c) for c in M.charpoly()]
    poly = sp.Poly(sum(c * LAM ** (len(coeffs) - 1 - i) for i, c in enumerate(coeffs)), LAM)
    _, factors = sp.factor_list(poly.as_expr(), LAM)
    out: dict[sp.Expr, int] = {}
    for f, mult in factors:
        p = sp.Poly(f, LAM)
        monic = sp.expand(p.as_expr() / p.LC())
        out[monic] = out.get(monic, 0) + mult
    return out


def closed_form(k: int) -> dict[sp.Expr, int]:
    """The factorization of the module docstring, as {monic factor: multiplicity} (factors of multiplicity 0 or
    that coincide are merged)."""
    kk = sp.Integer(k)
    T = LAM**2 - (kk * Q / 2 + (kk + 2) / 4) * LAM + (kk - 1) * Q**2 / 4 + (kk**2 - kk + 2) * Q / 8 + (kk + 1) / 16
    S = LAM**2 - (kk + 2) / 4 * LAM - Q**2 / 4 + Q / 4 + (kk + 1) / 16
    out: dict[sp.Expr, int] = {}
    for f, mult in ((LAM - sp.Rational(1, 4) - Q / 2, k * (k - 3) // 2), (LAM - sp.Rational(1, 4) + Q / 2,
                                                                          k * (k - 1) // 2), (T, 1), (S, k - 1)):
        f = sp.expand(f)
        if mult:
            out[f] = out.get(f, 0) + mult
    return out


def eigenvalues(k: int) -> list[tuple[sp.Expr, int]]:
    """The exact eigenvalues of ∇²F(I) (closed form, π substituted) with multiplicities, ascending."""
    out = []
    for f, mult in closed_form(k).items():
        for root in sp.solve(f.subs(Q, 1 / sp.pi), LAM):
            out.append((sp.simplify(root), mult))
    return sorted(out, key=lambda rm: float(rm[0]))

"""The loss as a sympy expression in the entries of W (teacher V = I_k), for series and exact work.

κ(w, v) = ‖w‖‖v‖ (sin θ + (π − θ) cos θ) / (2π) with θ = acos(w·v / (‖w‖‖v‖)), written with sympy's
sqrt and acos; κ(w, w) = ‖w‖²/2. Cost: the expression has O(k²) kernel terms of size O(k).
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy


def kappa(w: Sequence[sympy.Expr], v: Sequence[sympy.Expr]) -> sympy.Expr:
    """The arc-cosine kernel κ(w, v) as a sympy expression."""
    nw = sympy.sqrt(sum(x * x for x in w))
    nv = sympy.sqrt(sum(x * x for x in v))
    theta = sympy.acos(sum(a * b for a, b in zip(w, v, strict=True)) / (nw * nv))
    return nw * nv * (sympy.sin(theta) + (sympy.pi - theta) * sympy.cos(theta)) / (2 * sympy.pi)


def loss(W: Sequence[Sequence[sympy.Expr]]) -> sympy.Expr:
    """F(W) for V = I_k; W a k×k array of sympy expressions (symbols or numbers)."""
    k = len(W)
    V = [[sympy.Integer(int(i == j)) for j in range(k)] for i in range(k)]
    total = sympy.Integer(0)
    for i, a in enumerate(W):
        for j, b in enumerate(W):
            total += (sum(x * x for x in a) / 2 if i == j else kappa(a, b)) / 2
        for b in V:
            total -= kappa(a, b)
    return total + sympy.Rational(k, 4) + sympy.Rational(k * (k - 1), 4) / sympy.pi


def symbols(k: int) -> list[list[sympy.Symbol]]:
    """A k×k matrix of real symbols w_ij."""
    return [[sympy.Symbol(f"w{i}_{j}", real=True) for j in range(k)] for i in range(k)]


def gradient(k: int) -> tuple[list[list[sympy.Symbol]], list[sympy.Expr]]:
    """(W, ∇F) with ∇F the list of ∂F/∂w_ij (row-major), by sympy differentiation of ``loss``."""
    W = symbols(k)
    F = loss(W)
    return W, [sympy.diff(F, w) for row in W for w in row]


def hessian(k: int) -> tuple[list[list[sympy.Symbol]], sympy.Matrix]:
    """(W, ∇²F) by sympy differentiation (cost grows quickly with k: meant for k ≤ 3)."""
    W, G = gradient(k)
    flat = [w for row in W for w in row]
    return W, sympy.Matrix([[sympy.diff(g, w) for w in flat] for g in G])

"""Closed forms in floating point (numpy): F(W), ∇F(W) and ∇²F(W) for W ∈ M(n, k) (n student neurons, rows of
W) and the teacher V = I_k (k = the number of columns).

κ(w, v) = ‖w‖‖v‖ (sin θ + (π − θ) cos θ) / (2π),  θ = angle(w, v);  κ(w, w) = ‖w‖²/2.
F(W) = ½ Σ_ij κ(w_i, w_j) − Σ_ij κ(w_i, v_j) + ½ Σ_ij κ(v_i, v_j).
∇_w κ(w, v) = (‖v‖ sin θ û + (π − θ) v) / (2π).
With n = (v̂ − cos θ û)/sin θ and m = (û − cos θ v̂)/sin θ (both 0 when sin θ = 0):
∇²_ww κ = ‖v‖ sin θ / (2π‖w‖) · (I − ûûᵀ + nnᵀ),
∇²_wv κ = (sin θ û v̂ᵀ − cos θ û mᵀ + (π − θ) I + v̂ mᵀ) / (2π).
Where two vectors are parallel or antiparallel κ is C² but not C³: κ(w, v) = w·v/2 + ‖w‖‖v‖(sin θ − θ cos θ)/(2π)
and the last term is O(θ³) (likewise O((π − θ)³) near θ = π), so the Hessian exists there and the formulas give
its value, the continuous limit (at θ = 0: ∇²_ww κ = 0, ∇²_wv κ = I/2).
Cost: O(n²k) for F and ∇F, O(n²k²) for the nk×nk Hessian.
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2 * np.pi


def _angle(w: np.ndarray, v: np.ndarray) -> tuple[float, float, float, float]:
    nw, nv = float(np.linalg.norm(w)), float(np.linalg.norm(v))
    cos = float(np.clip(w @ v / (nw * nv), -1.0, 1.0)) if nw and nv else 1.0
    theta = float(np.arccos(cos))
    return nw, nv, cos, theta


def kappa(w: np.ndarray, v: np.ndarray) -> float:
    """E[σ(w·x)σ(v·x)] for x ~ N(0, I)."""
    nw, nv, cos, theta = _angle(w, v)
    return nw * nv * (np.sin(theta) + (np.pi - theta) * cos) / TWO_PI


def loss(W: np.ndarray, V: np.ndarray | None = None) -> float:
    """F(W) (teacher V, default I_k)."""
    V = np.eye(W.shape[1]) if V is None else V
    ww = sum(kappa(a, b) for a in W for b in W)
    wv = sum(kappa(a, b) for a in W for b in V)
    vv = sum(kappa(a, b) for a in V for b in V)
    return 0.5 * ww - wv + 0.5 * vv


def grad_kappa(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """∇_w κ(w, v)."""
    nw, nv, cos, theta = _angle(w, v)
    if nw == 0:
        return np.zeros_like(w)
    return (nv * np.sin(theta) * w / nw + (np.pi - theta) * v) / TWO_PI


def gradient(W: np.ndarray, V: np.ndarray | None = None) -> np.ndarray:
    """∇F(W), row i = ∇_{w_i} F."""
    V = np.eye(W.shape[1]) if V is None else V
    G = np.zeros_like(W, dtype=float)
    for i, w in enumerate(W):
        G[i] = sum(grad_kappa(w, u) for u in W) - sum(grad_kappa(w, v) for v in V)
    return G


def _frames(w: np.ndarray, v: np.ndarray):
    nw, nv, cos, theta = _angle(w, v)
    u, vh = w / nw, v / nv
    sin = np.sin(theta)
    if sin < 1e-15:
        return nw, nv, cos, theta, sin, u, vh, np.zeros_like(w), np.zeros_like(w)
    return nw, nv, cos, theta, sin, u, vh, (vh - cos * u) / sin, (u - cos * vh) / sin


def hess_ww(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """∇²_ww κ(w, v) = ‖v‖ sin θ / (2π‖w‖) · (I − ûûᵀ + nnᵀ)."""
    nw, nv, cos, theta, sin, u, vh, n, m = _frames(w, v)
    eye = np.eye(len(w))
    return nv * sin / (TWO_PI * nw) * (eye - np.outer(u, u) + np.outer(n, n))


def hess_wv(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """∇²_wv κ(w, v) = (sin θ û v̂ᵀ − cos θ û mᵀ + (π − θ) I + v̂ mᵀ) / (2π)."""
    nw, nv, cos, theta, sin, u, vh, n, m = _frames(w, v)
    eye = np.eye(len(w))
    return (sin * np.outer(u, vh) - cos * np.outer(u, m) + (np.pi - theta) * eye + np.outer(vh, m)) / TWO_PI


def hessian(W: np.ndarray, V: np.ndarray | None = None) -> np.ndarray:
    """∇²F(W) as a (k·d)×(k·d) matrix, blocks (i, j) of size d×d (row-major flattening of W)."""
    V = np.eye(W.shape[1]) if V is None else V
    k, d = W.shape
    H = np.zeros((k * d, k * d))
    for i, w in enumerate(W):
        block = 0.5 * np.eye(d)  # from ½κ(w_i, w_i) = ‖w_i‖²/4
        block += sum(hess_ww(w, u) for j, u in enumerate(W) if j != i)
        block -= sum(hess_ww(w, v) for v in V)
        H[i * d:(i + 1) * d, i * d:(i + 1) * d] = block
        for j, u in enumerate(W):
            if j != i:
                H[i * d:(i + 1) * d, j * d:(j + 1) * d] = hess_wv(w, u)
    return H


def fast_gradient(W: np.ndarray) -> np.ndarray:
    """``gradient`` for the teacher I_k, vectorized over all pairs: O(k³) numpy operations."""
    n = np.linalg.norm(W, axis=1)
    unit = W / n[:, None]
    theta = np.arccos(np.clip(unit @ unit.T, -1.0, 1.0))
    teacher = np.arccos(np.clip(unit, -1.0, 1.0))  # angle(w_i, e_j): cos = W_ij / ‖w_i‖
    G = ((np.sin(theta) * n[None, :]).sum(axis=1) - np.sin(teacher).sum(axis=1))[:, None] * unit
    G += (np.pi - theta) @ W - (np.pi - teacher)
    return G / TWO_PI


def batch_gradient(W: np.ndarray) -> np.ndarray:
    """``fast_gradient`` of each W[r] of a stack W (R × n × k), in one set of batched numpy operations:
    O(R k³), so that many descents advance together."""
    n = np.linalg.norm(W, axis=2)
    unit = W / n[..., None]
    theta = np.arccos(np.clip(unit @ unit.transpose(0, 2, 1), -1.0, 1.0))
    teacher = np.arccos(np.clip(unit, -1.0, 1.0))
    G = ((np.sin(theta) * n[:, None, :]).sum(axis=2) - np.sin(teacher).sum(axis=2))[..., None] * unit
    G += (np.pi - theta) @ W - (np.pi - teacher)
    return G / TWO_PI


def fast_loss(W: np.ndarray) -> float:
    """``loss`` for the teacher I_k (k = the number of columns), vectorized over all pairs."""
    k = W.shape[1]
    n = np.linalg.norm(W, axis=1)
    unit = W / n[:, None]
    theta = np.arccos(np.clip(unit @ unit.T, -1.0, 1.0))
    teacher = np.arccos(np.clip(unit, -1.0, 1.0))
    ww = (np.outer(n, n) * (np.sin(theta) + (np.pi - theta) * np.cos(theta))).sum() / TWO_PI
    wv = (n[:, None] * (np.sin(teacher) + (np.pi - teacher) * np.cos(teacher))).sum() / TWO_PI
    return float(0.5 * ww - wv + k / 4 + k * (k - 1) / (4 * np.pi))

"""One student neuron added to a certified critical point: W* ∈ M(k, k) seen in M(k + 1, k) (MATH.md, Part II;
the question of the follow-up work on the annihilation of spurious minima by over-parameterization).

The loss F(W) = ½ Σ κ(w_i, w_j) − Σ κ(w_i, e_j) + F(0) makes sense for any number n of student rows, and is
invariant under S_n × S_k (rows and columns). A k-neuron network sits inside the (k + 1)-neuron problem in two
ways that keep the network function, both because κ is positively homogeneous of degree 1 in each argument:

- Split (row i in the ratio λ : 1 − λ, 0 < λ < 1): W_λ has rows w_1, …, λ w_i, …, w_k, (1 − λ) w_i. Since
  ∇_w κ(w, v) is of degree 0 in w and of degree 1 in v, and ∇_w κ(w, w) = w/2, every W_λ is a critical point of
  F on M(k + 1, k) — a segment of critical points, whose tangent lies in the Hessian's kernel.
- Zero neuron: W_0 = [W*; 0]. F is not differentiable there, but exactly
      F([W*; εû]) = F(W*) + ε g(û) + ε² ‖û‖²/4,   g(û) = Σ_l κ(û, w_l) − Σ_j κ(û, e_j),
  so a direction with g(û) < 0 is a strict descent: W_0 is not a local minimum.

κ is C² (not C³) at parallel vectors — κ(w, v) = w·v/2 + ‖w‖‖v‖(sin θ − θ cos θ)/(2π), the last term O(θ³) — so
the Hessian at W_λ exists, and the two split copies contribute the Hessian of w_i·w_{k+1}/2.

What is certified (kind ``added_neuron``, replayed by ``certsym_check``): for a split at λ = 1/2, a set of
directions (y, −y) on the two copies on which the Hessian is negative definite — so at least that many negative
eigenvalues (Courant–Fischer): a saddle; for the zero neuron, a direction û with g(û) < 0. The full spectrum of
the (k + 1)k × (k + 1)k Hessian is reported numerically (floating point, labelled so), and with W*'s certified
inertia the split's inertia is exact (``certsym_check.kinds.added_neuron``). Gradient descent started a small step
along the descent direction shows where the saddle leads: its end point is certified in its own fixed-point
space when it is spurious (``wide``).

Cost: O(k⁴) for the numerical Hessian; the search for û is O(starts · steps · k²).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certsym.landscape import kernel, restricted
from certsym.landscape.certify import Critical, critical
from certsym.landscape.wide import WideError, WidePoint, certify_wide

MAX_K = 24  # the checker's work bound on a split's directions (check/added_neuron.MAX_WORK) allows k ≤ 24
DYADIC = 2**24  # directions are rounded to multiples of 2^-24 (any direction certifies what it certifies)
ZERO_TOL = 1e-6  # the float Hessian at the exactly parallel copies is accurate to about 1e-7


@dataclass(frozen=True)
class Escape:
    """Where gradient descent goes from the saddle, started a small step along its descent direction: the end
    point's loss, and its certification in its fixed-point space when it is spurious (F ≥ 10⁻³)."""

    loss: float
    steps: int
    end: WidePoint | None  # None: the global minimum (F < 10⁻³), or not certified (see ``error``)
    error: str | None = None


@dataclass(frozen=True)
class Split:
    """Row ``row`` of W* split in halves: the certified negative directions and the numerical spectrum."""

    row: int
    directions: tuple[tuple[tuple[Fraction, ...], ...], ...]  # (k + 1) × k matrices
    negative: int      # len(directions): certified negative eigenvalues (at least)
    spectrum: tuple[int, int, int]  # numerically: negative, zero (|λ| ≤ ZERO_TOL), positive
    smallest: float    # numerically, the most negative eigenvalue
    escape: Escape | None = None


@dataclass(frozen=True)
class ZeroNeuron:
    """The zero neuron's descent direction û (exact) and g(û) (float)."""

    direction: tuple[Fraction, ...]
    slope: float
    escape: Escape | None = None


@dataclass(frozen=True)
class AddedNeuron:
    """What adding one neuron does to the certified critical point ``base``."""

    base: Critical
    W: np.ndarray
    splits: tuple[Split, ...]
    zero: ZeroNeuron


def split(W: np.ndarray, row: int, lam: float = 0.5) -> np.ndarray:
    """W_λ: row ``row`` scaled by λ, and a new last row (1 − λ) w_row."""
    out = np.vstack([W, (1 - lam) * W[row]])
    out[row] = lam * W[row]
    return out


def _angles(W: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
    """The partners X (rows of W, then teacher vectors), their signs in g, ‖u‖, ‖x‖ and the angles θ(u, x)."""
    k = W.shape[1]
    X, sign = np.vstack([W, np.eye(k)]), np.r_[np.ones(len(W)), -np.ones(k)]
    nu, nx = float(np.linalg.norm(u)), np.linalg.norm(X, axis=1)
    return X, sign, nu, nx, np.arccos(np.clip(X @ u / (nu * nx), -1.0, 1.0))


def slope(W: np.ndarray, u: np.ndarray) -> float:
    """g(u) = Σ_l κ(u, w_l) − Σ_j κ(u, e_j) (floating point, vectorized)."""
    _, sign, nu, nx, theta = _angles(W, u)
    return float((sign * nu * nx * (np.sin(theta) + (np.pi - theta) * np.cos(theta))).sum() / (2 * np.pi))


def _slope_gradient(W: np.ndarray, u: np.ndarray) -> np.ndarray:
    """∇g(u) = Σ ± (‖x‖ sin θ û + (π − θ) x)/(2π) (``kernel.grad_kappa``, vectorized)."""
    X, sign, nu, nx, theta = _angles(W, u)
    return ((sign * nx * np.sin(theta)).sum() * u / nu + (sign * (np.pi - theta)) @ X) / (2 * np.pi)


def descent_direction(W: np.ndarray, seed: int = 0, starts: int = 32, steps: int = 300) -> np.ndarray:
    """A unit vector minimizing g over the sphere, approximately: projected gradient descent from ±e_j and from
    random starts (seeded). g is 1-homogeneous, so only directions matter."""
    k = W.shape[1]
    rng = np.random.default_rng(seed)
    candidates = [*np.eye(k), *(-np.eye(k)), *rng.normal(size=(starts, k))]
    best, best_value = None, np.inf
    for u in candidates:
        u = u / np.linalg.norm(u)
        step = 0.2
        value = slope(W, u)
        for _ in range(steps):
            g = _slope_gradient(W, u)
            g = g - (g @ u) * u
            trial = u - step * g
            trial /= np.linalg.norm(trial)
            trial_value = slope(W, trial)
            if trial_value < value:
                u, value = trial, trial_value
            else:
                step /= 2
                if step < 1e-10:
                    break
        if value < best_value:
            best, best_value = u, value
    assert best is not None
    return best


def _dyadic(x: float) -> Fraction:
    return Fraction(round(x * DYADIC), DYADIC)


def split_directions(W: np.ndarray, row: int) -> tuple[list[np.ndarray], tuple[int, int, int], float]:
    """At λ = 1/2: the eigenvectors y (negative eigenvalue) of the Hessian compressed to the directions (y, −y) on
    the two copies, and the full Hessian's numerical spectrum counts and most negative eigenvalue."""
    k = W.shape[1]
    Wl = split(W, row)
    H = kernel.hessian(Wl, np.eye(k))
    ev = np.linalg.eigvalsh(H)
    counts = (int((ev < -ZERO_TOL).sum()), int((abs(ev) <= ZERO_TOL).sum()), int((ev > ZERO_TOL).sum()))
    a, b = slice(row * k, (row + 1) * k), slice(k * k, (k + 1) * k)
    M = H[a, a] + H[b, b] - H[a, b] - H[b, a]
    values, vectors = np.linalg.eigh((M + M.T) / 2)
    return [vectors[:, j] for j in range(k) if values[j] < -ZERO_TOL], counts, float(ev[0])


def escape(W: np.ndarray, max_steps: int = 100000, tol: float = 1e-9) -> Escape:
    """Gradient descent (step 4/k, ``kernel.fast_gradient``) from W to max |∇F| < tol; a spurious end point is
    certified with ``wide.certify_wide``. Cost O(steps · n²k)."""
    k = W.shape[1]
    W = W.copy()
    steps = 0
    while steps < max_steps:
        G = kernel.fast_gradient(W)
        if np.abs(G).max() < tol:
            break
        W -= (4.0 / k) * G
        steps += 1
    value = kernel.fast_loss(W)
    if value < 1e-3:
        return Escape(value, steps, None)
    try:
        return Escape(value, steps, certify_wide(W))
    except WideError as exc:
        return Escape(value, steps, None, str(exc))


def study(name: str, k: int, rows: tuple[int, ...] | None = None, descend: bool = True) -> AddedNeuron:
    """Add one neuron to the certified critical point of family ``name`` at k: split each block's first row in
    halves (or the given rows), and the zero neuron. Cost: one certification and O(k⁴) per split."""
    base = critical(name, k)
    W = restricted.expand(base.box.layout, [float(x) for x in base.box.center])
    if rows is None:
        rows = tuple(restricted.Layout(base.box.layout.sizes).starts())
    splits = []
    for row in rows:
        ys, counts, smallest = split_directions(W, row)
        directions = []
        for y in ys:
            U = [[Fraction(0)] * k for _ in range(k + 1)]
            U[row] = [_dyadic(v) for v in y]
            U[k] = [-v for v in U[row]]
            directions.append(tuple(tuple(r) for r in U))
        out = None
        if descend and ys:  # leave the saddle along its most negative certified direction
            out = escape(split(W, row) + 1e-3 * np.array([[float(v) for v in r] for r in directions[0]]))
        splits.append(Split(row, tuple(directions), len(directions), counts, smallest, out))
    u = descent_direction(W)
    zero_out = escape(np.vstack([W, 1e-3 * u])) if descend else None
    zero = ZeroNeuron(tuple(_dyadic(v) for v in u), slope(W, u), zero_out)
    return AddedNeuron(base, W, tuple(splits), zero)

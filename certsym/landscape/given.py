"""Certify a given point W of the teacher–student problem (for example a descent end point, or trained weights):
detect its isotropy, project onto the fixed-point space, run Newton and Krawczyk there, and classify it.

1. Isotropy, up to a tolerance: the columns are first permuted so that each neuron's largest entry is on the
   diagonal (Γ = S_k × S_k acts on rows and columns separately; the isotropy of a critical point is a diagonal
   subgroup only after that alignment). Indices whose diagonal entry and sorted rest of row and column agree
   within ``tol`` form a candidate block; a block is kept only if every transposition inside it fixes W within ``tol``.
   The blocks, largest first, give Δ(S_p1 × … × S_pr) and the permutation that makes W block-structured.
2. Projection: the orbit averages of the permuted W (``restricted.project``), and how far W is from them.
3. Newton's method on the restricted gradient from the projection, then Krawczyk's test (``certify``): a unique
   critical point in a box, a critical point of F on M(k, k) by symmetric criticality.
4. The label the checker derives from the block sizes and the signs of the diagonals, and the Hessian's inertia
   (the isotypic blocks where a table applies, else the full Hessian for k ≤ 20).
Floating point proposes (steps 1–3); only Krawczyk's interval arithmetic certifies. Cost: O(k³) for step 1,
Newton and Krawczyk in the P parameters of the layout (independent of k), the inertia as in ``certify``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certsym.errors import InputError
from certsym.landscape import restricted
from certsym.landscape.certify import Critical, certify_point, inertia
from certsym.landscape.families import Family, NewtonError, newton
from certsym.landscape.restricted import Layout

MAX_CERTIFY_PARAMETERS = 40  # the checker replays at most 40 parameters (certificates/FORMAT.md)


def isotropy(W: np.ndarray, tol: float = 1e-3) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(the column alignment, the order of the indices block by block, the block sizes), step 1 of the module
    docstring. Cost O(k³)."""
    k = W.shape[0]
    columns = np.abs(W).argmax(axis=1)
    if len(set(columns.tolist())) != k:
        columns = np.arange(k)
    W = W[:, columns]

    def signature(i: int) -> np.ndarray:
        rest = [j for j in range(k) if j != i]
        return np.concatenate([[W[i, i]], np.sort(W[i, rest]), np.sort(W[rest, i])])

    # greedy clustering within tol (rounding to a grid of step tol would split values that straddle a grid line)
    signatures = [signature(i) for i in range(k)]
    groups: list[list[int]] = []
    for i in range(k):
        home = next((g for g in groups if np.abs(signatures[g[0]] - signatures[i]).max() <= tol), None)
        if home is None:
            groups.append([i])
        else:
            home.append(i)
    blocks: list[list[int]] = []
    for members in groups:
        first = members[0]
        kept = True
        for j in members[1:]:
            perm = np.arange(k)
            perm[[first, j]] = perm[[j, first]]
            if np.abs(W[np.ix_(perm, perm)] - W).max() > tol:
                kept = False
                break
        blocks += [members] if kept else [[i] for i in members]
    blocks.sort(key=lambda b: (-len(b), b[0]))
    return columns, np.array([i for b in blocks for i in b]), [len(b) for b in blocks]


def isotropy_type(W: np.ndarray, tol: float = 1e-3) -> str:
    """Δ(S_p1 × … × S_pr), the isotropy of W up to ``tol`` (``isotropy``)."""
    return "Δ(" + " × ".join(f"S_{p}" for p in isotropy(W, tol)[2]) + ")"


def label(sizes: list[int], x: np.ndarray) -> str:
    """The family name the checker derives (check/landscape.py ``family_of``) from the block sizes and the signs
    of the diagonal parameters. Written here again on purpose: the certificate states the name, and the checker's
    own derivation (on interval boxes) must agree with it independently."""
    names = Layout(tuple(sizes)).names
    signs = [1 if x[names.index(f"d{a + 1}")] > 0 else -1 for a in range(len(sizes))]
    if len(sizes) == 1 and signs == [-1]:
        return "negative-diagonal"
    if len(sizes) == 2 and signs == [1, -1]:
        return {1: "one-misfit", 2: "two-misfit"}.get(sizes[1], f"misfit-{sizes[1]}")
    if len(sizes) == 2 and signs == [-1, 1] and sizes[1] == 1:
        return "good-plus-negative"
    return "Δ(" + " × ".join(f"S_{p}" for p in sizes) + ")"


@dataclass
class GivenPoint:
    """The outcome for a given W: its isotropy, the distance to the fixed-point space, how far Newton moved, and
    the certified critical point (``critical``, None with ``reason`` when it could not be certified)."""

    k: int
    sizes: list[int]
    projection_distance: float
    newton_distance: float | None
    critical: Critical | None
    reason: str = ""

    @property
    def name(self) -> str:
        return self.critical.family.name if self.critical else "Δ(" + " × ".join(f"S_{p}" for p in self.sizes) + ")"


def certify_matrix(W: np.ndarray, tol: float = 1e-3, max_move: float = 1e-2) -> GivenPoint:
    """The module docstring's steps for W (k × k). ``max_move``: how far (max-norm) Newton may move the projected
    point and still count as certifying *this* W. Raises InputError for a W that is not a finite square matrix."""
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2 or not np.isfinite(W).all():
        raise InputError(f"W must be a finite square matrix with k ≥ 2, not of shape {W.shape}")
    k = W.shape[0]
    columns, order, sizes = isotropy(W, tol)
    aligned = W[:, columns][np.ix_(order, order)]
    layout = Layout(tuple(sizes))
    x0 = restricted.project(layout, aligned)
    distance = float(np.abs(restricted.expand(layout, x0) - aligned).max())
    if len(layout.names) > MAX_CERTIFY_PARAMETERS:
        return GivenPoint(k, sizes, distance, None, None, f"the isotropy {isotropy_type(W, tol)} leaves "
                          f"{len(layout.names)} parameters; the checker replays at most {MAX_CERTIFY_PARAMETERS}")
    try:
        result = newton(layout, x0)
    except NewtonError as exc:
        return GivenPoint(k, sizes, distance, None, None, f"Newton's method did not converge from the projection "
                          f"({exc}): W is not near a critical point with this isotropy")
    moved = float(np.abs(np.asarray(result.x) - x0).max())
    if moved > max_move:
        return GivenPoint(k, sizes, distance, moved, None, f"Newton moved {moved:.3g} from the projection (more than "
                          f"{max_move}): W is not near a critical point with this isotropy")
    box = certify_point(layout, result.x, k)
    if not box.certified:
        return GivenPoint(k, sizes, distance, moved, None, "Krawczyk's test failed on every box tried around the "
                          "Newton point")
    x = np.asarray([float(c) for c in box.center])
    family = Family(label(sizes, x), "a given point", isotropy_type(W, tol), lambda _k: layout, lambda _k: x)
    return GivenPoint(k, sizes, distance, moved, Critical(family, k, box, inertia(family, k, box)))

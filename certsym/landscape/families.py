"""Families of symmetric critical points of the teacher–student loss (MATH.md, Part II), found by Newton's method
on the restricted loss of ``restricted`` and followed in k by continuation — k is a real parameter there, so the
same code reaches k = 10⁶.

The four families (parameter order = ``Layout.names`` of their layout, see ``restricted``):

- ``one-misfit`` — isotropy ΔS_{k−1}, blocks (k−1, 1), parameters (d1, o1, d2, c12, c21): the (k−1)-block's
  diagonal d1 ≈ 1 and off-diagonal o1 (small, negative), the corner W_kk = d2 (the misfit, ≈ −1 for large k),
  the last column c12 (rows 1..k−1, column k) and the last row c21 (row k, columns 1..k−1). The spurious minima
  of Safran & Shamir (2018).
- ``negative-diagonal`` — isotropy ΔS_k, blocks (k,), parameters (d1, o1): W = aI + b(11ᵀ − I), a = d1 ≈ −1.
- ``two-misfit`` — isotropy Δ(S_{k−2} × S_2), blocks (k−2, 2) (the good block first, as for one-misfit),
  parameters (d1, o1, d2, o2, c12, c21): k−2 neurons near their targets, two misfit neurons (rows k−1, k) with
  diagonal d2 and off-diagonal o2, the last two columns c12 and the last two rows c21. At k = 3 the first block
  has size 1 and o1 disappears (parameters are carried between layouts by name).
- ``good-plus-negative`` — isotropy ΔS_{k−1}, blocks (k−1, 1), parameters (d1, o1, d2, c12, c21): a negative
  (k−1)-block (d1 ≈ −1, o1 > 0, like ``negative-diagonal``) and one good neuron, the corner d2 ≈ 1 (row k
  close to its target e_k).

Observed (floating point / arb, not certified; ``report`` recomputes all of it): the full Hessian (k ≤ 30) has
a negative eigenvalue for one-misfit at k ≤ 5, negative-diagonal at k ≤ 5, good-plus-negative at k ≤ 6 and
two-misfit at k ≤ 7, and is positive definite from k = 6, 6, 7, 8 respectively up to k = 30; the restricted
Hessian is positive definite throughout. As k → ∞: k·F → 0.2973576… for one-misfit (numerically
1/2 − 2/π² = 0.29735763…) and twice that for two-misfit; F → 0.1816901… (numerically 1/2 − 1/π) for
negative-diagonal and good-plus-negative; corrections are O(k^{-1/2}). At k = 3, one-misfit and two-misfit
continue into a Γ-conjugate of the negative-diagonal point, and good-plus-negative into the global minimum
(a permutation matrix, F = 0).

Numerics. The restricted gradient component of a parameter is |orbit| × (the common entry of ∇F(W) on that
orbit); Newton's method works with the entries (``restricted.full_gradient_entries``), which are the entries of
the full gradient, and solves the symmetrically rescaled system D^{-1/2} H D^{-1/2}, D = diag(|orbit|). In
floating point the grouped sums cancel: F(0) = k/4 + k(k−1)/(4π) is O(k²) while F at these points is O(1) or
O(1/k), so beyond k ≈ 10³ the gradient is evaluated in arb ball arithmetic at 64 + 4⌈log₂ k⌉ bits (the same code,
``restricted.ArbBackend``) and the iterate is kept as arb midpoints; the linear algebra stays in floats.
Cost per Newton step: O(r⁴) operations, independent of k.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from flint import arb

from certsym.landscape import kernel, restricted
from certsym.landscape.restricted import FLOAT, ArbBackend, Backend, Layout, Size


class NewtonError(RuntimeError):
    """Newton's method did not converge (stagnation, singular Hessian, non-finite values, iteration limit)."""


def _size(k: Size, minus: int) -> Size:
    return k - minus if isinstance(k, int) else float(k) - minus


@dataclass(frozen=True)
class Family:
    """A named family of critical points: the layout of its fixed-point space and a starting point, both as
    functions of k (int, or float for real k), and the isotropy type."""

    name: str
    description: str
    isotropy: str
    layout: Callable[[Size], Layout]
    start: Callable[[Size], np.ndarray]
    parameters: tuple[str, ...] = field(default=())


def _aligned(layout: Layout, values: dict[str, float]) -> np.ndarray:
    """The named values in ``layout.names`` order (names absent from the layout, e.g. o1 when a block has size 1,
    are dropped)."""
    return np.array([values[n] for n in layout.names])


def _one_misfit_start(k: Size) -> np.ndarray:
    k = float(k)
    return _aligned(Layout((k - 1, 1)),
                    {"d1": 1.0, "o1": -1.6 / k**2, "d2": -k / (k + 5), "c12": 2 / (k + 1), "c21": 1.3 / k})


def _negative_diagonal_start(k: Size) -> np.ndarray:
    k = float(k)
    return np.array([-1 + 2 / k, 2 / k])


def _two_misfit_start(k: Size) -> np.ndarray:
    k = float(k)
    return _aligned(Layout((k - 2, 2)), {"d1": 1.0, "o1": -3 / k**2, "d2": -k / (k + 4.5), "o2": 1.9 / k,
                                         "c12": 2.2 / (k + 0.5), "c21": 1.6 / k})


def _good_plus_negative_start(k: Size) -> np.ndarray:
    k = float(k)
    return _aligned(Layout((k - 1, 1)), {"d1": -1 + 2.25 / k, "o1": 2.1 / k, "d2": 1.05, "c12": -0.08 / k,
                                         "c21": 0.02})


ONE_MISFIT = Family(
    name="one-misfit",
    description="k−1 neurons near their targets e_i, one misfit neuron near −e_k (Safran–Shamir spurious minima)",
    isotropy="ΔS_{k−1}",
    layout=lambda k: Layout((_size(k, 1), 1)),
    start=_one_misfit_start,
    parameters=("d1: diagonal of the (k−1)-block", "o1: off-diagonal of the (k−1)-block",
                "d2: corner W_kk", "c12: last column W_ik, i < k", "c21: last row W_kj, j < k"),
)
NEGATIVE_DIAGONAL = Family(
    name="negative-diagonal",
    description="W = aI + b(11ᵀ − I) with a near −1",
    isotropy="ΔS_k",
    layout=lambda k: Layout((k,)),
    start=_negative_diagonal_start,
    parameters=("d1: a, the diagonal", "o1: b, the off-diagonal"),
)
TWO_MISFIT = Family(
    name="two-misfit",
    description="k−2 neurons near their targets, two misfit neurons (rows k−1, k) with negative diagonal",
    isotropy="Δ(S_{k−2} × S_2)",
    layout=lambda k: Layout((_size(k, 2), 2)),
    start=_two_misfit_start,
    parameters=("d1: diagonal of the (k−2)-block", "o1: off-diagonal of the (k−2)-block",
                "d2: diagonal of the 2-block (misfits)", "o2: off-diagonal of the 2-block",
                "c12: last two columns, rows < k−1", "c21: last two rows, columns < k−1"),
)
GOOD_PLUS_NEGATIVE = Family(
    name="good-plus-negative",
    description="a negative (k−1)-block (diagonal near −1) and one good neuron, W_kk near 1",
    isotropy="ΔS_{k−1}",
    layout=lambda k: Layout((_size(k, 1), 1)),
    start=_good_plus_negative_start,
    parameters=("d1: diagonal of the negative (k−1)-block", "o1: off-diagonal of the (k−1)-block",
                "d2: the good neuron's W_kk", "c12: last column W_ik, i < k", "c21: last row W_kj, j < k"),
)
FAMILIES: dict[str, Family] = {f.name: f for f in (ONE_MISFIT, NEGATIVE_DIAGONAL, TWO_MISFIT, GOOD_PLUS_NEGATIVE)}
MAX_DESCENT_STEPS = 5000


def descend(layout: Layout, x0: Sequence[float], steps: int = MAX_DESCENT_STEPS, tol: float = 1e-9) -> np.ndarray:
    """Gradient descent on the restricted loss in the metric of W-space (each parameter's gradient divided by the
    number of entries of W it sets), with backtracking: a start for Newton's method that lands in the basin of
    the minimum near x0. Floats only; it proposes, Krawczyk certifies. Cost: ``steps`` loss and gradient
    evaluations, each O(P²) in the number of parameters (independent of k)."""
    x = np.asarray(x0, dtype=float)
    weights = np.asarray([float(w) for w in layout.orbit_sizes()])
    value, step = float(restricted.loss(layout, x)), 1.0
    for _ in range(steps):
        direction = -np.asarray(restricted.gradient(layout, x), dtype=float) / weights
        if np.abs(direction).max() < tol:
            break
        while step > 1e-14:
            trial = x + step * direction
            trial_value = float(restricted.loss(layout, trial))
            if trial_value < value:
                x, value, step = trial, trial_value, step * 1.5
                break
            step /= 2
        else:
            break
    return x


def _misfit_start(M: int) -> Callable[[Size], np.ndarray]:
    def start(k: Size) -> np.ndarray:
        k = float(k)
        layout = Layout((k - M, M))
        guess = _aligned(layout, {"d1": 1.0, "o1": -3 / k**2, "d2": -k / (k + 4.5), "o2": 1.9 / k,
                                  "c12": 2.2 / (k + 0.5), "c21": 1.6 / k})
        return descend(layout, guess)

    return start


def misfit(M: int) -> Family:
    """The m-misfit family: isotropy Δ(S_{k−M} × S_M), k − M neurons near their targets and M misfits (rows with
    a negative diagonal), continued from the Safran–Shamir points. Its Newton start comes from gradient descent
    in the fixed-point space, which works for M up to k/2."""
    if M == 1:
        return ONE_MISFIT
    if M == 2:
        return TWO_MISFIT
    return Family(
        name=f"misfit-{M}",
        description=f"k−{M} neurons near their targets, {M} misfit neurons with negative diagonal",
        isotropy=f"Δ(S_{{k−{M}}} × S_{M})",
        layout=lambda k: Layout((_size(k, M), M)),
        start=_misfit_start(M),
        parameters=(f"d1: diagonal of the (k−{M})-block", f"o1: off-diagonal of the (k−{M})-block",
                    f"d2: diagonal of the {M}-block (misfits)", f"o2: off-diagonal of the {M}-block",
                    f"c12: the last {M} columns, rows < k−{M + 1}", f"c21: the last {M} rows, columns < k−{M + 1}"),
    )


def family(name: str) -> Family:
    """A family by name: the four named ones, or misfit-M for any M ≥ 1 (misfit-1 and misfit-2 are one-misfit and
    two-misfit). Raises KeyError for anything else."""
    if name in FAMILIES:
        return FAMILIES[name]
    prefix, _, count = name.partition("-")
    if prefix == "misfit" and count.isdigit() and int(count) >= 1 and count == str(int(count)):
        return misfit(int(count))
    raise KeyError(name)


# --------------------------------------------------------------------------------------------------------------
# Newton's method


@dataclass(frozen=True)
class NewtonResult:
    """x: the critical point (floats, ``layout.names`` order); x_mid: the iterate as arb midpoints when the arb
    backend was used (more digits than a float), else None; residual: max |entry of ∇F(W(x))|; loss: F (float);
    loss_ball: F as an arb ball when the arb backend was used."""

    layout: Layout
    x: np.ndarray
    x_mid: list[arb] | None
    iterations: int
    residual: float
    loss: float
    loss_ball: arb | None


def default_backend(k: Size) -> Backend:
    """Floats up to k = 1000, arb balls at 64 + 4⌈log₂ k⌉ bits beyond (the grouped sums cancel O(k²) terms)."""
    if k <= 1000:
        return FLOAT
    return ArbBackend(prec=64 + 4 * math.ceil(math.log2(k)))


def default_tolerance(backend: Backend) -> float:
    """Target for max |∇F entries|: 1e-12 in floats, 1e-20 in arb."""
    return 1e-12 if isinstance(backend, restricted.FloatBackend) else 1e-20


def _floats(values: Sequence) -> np.ndarray:
    return np.array([float(v.mid()) if isinstance(v, arb) else float(v) for v in values])


def _result(layout: Layout, x: list, B: Backend, iterations: int, residual: float) -> NewtonResult:
    loss_value = restricted.loss(layout, x, B)
    if isinstance(loss_value, arb):
        return NewtonResult(layout, _floats(x), x, iterations, residual, float(loss_value.mid()), loss_value)
    return NewtonResult(layout, _floats(x), None, iterations, residual, float(loss_value), None)


def newton(layout: Layout, x0: Sequence[float], *, tol: float | None = None, max_iter: int = 60,
           backend: Backend | None = None) -> NewtonResult:
    """Newton's method on the restricted gradient, with backtracking on ‖∇F entries‖₂. Converges to any critical
    point of the restriction (minimum or saddle), hence of F (symmetric criticality). The backend defaults to
    ``default_backend(k)``, tol to ``default_tolerance``. Returns when max |∇F entries| ≤ tol, or when the line
    search can no longer decrease the residual and it is already ≤ 1000·tol (the attainable accuracy; ``residual``
    says which). Raises NewtonError otherwise: iteration limit, singular or non-finite Hessian, a gradient that
    cannot be evaluated (e.g. a zero row), or a stalled line search."""
    B = backend if backend is not None else default_backend(layout.k)
    tol = default_tolerance(B) if tol is None else tol
    weights = np.array(layout.orbit_sizes(), dtype=float)
    scale = 1 / np.sqrt(weights)
    with B.context():
        x = [B.number(float(v)) for v in x0]

    def entries(point: list) -> np.ndarray:
        return _floats(restricted.gradient(layout, point, B)) / weights

    try:
        e = entries(x)
    except (ZeroDivisionError, ValueError) as exc:
        raise NewtonError(f"cannot evaluate the gradient at the start {list(_floats(x))}: {exc}") from exc
    for iteration in range(max_iter + 1):
        residual = float(np.abs(e).max())
        if not np.isfinite(residual):
            raise NewtonError(f"non-finite gradient at {list(_floats(x))}")
        if residual <= tol:
            return _result(layout, x, B, iteration, residual)
        if iteration == max_iter:
            break
        try:
            H = np.array([_floats(row) for row in restricted.hessian(layout, x, B)])
            if not np.isfinite(H).all():
                raise NewtonError(f"non-finite Hessian at {list(_floats(x))}")
            step = -scale * np.linalg.solve(scale[:, None] * H * scale[None, :], scale * (e * weights))
        except (np.linalg.LinAlgError, ZeroDivisionError) as exc:
            raise NewtonError(f"singular restricted Hessian at {list(_floats(x))}: {exc}") from exc
        merit = float(np.linalg.norm(e))
        t = 1.0
        while True:
            with B.context():
                trial = [xi + B.number(float(t * si)) for xi, si in zip(x, step, strict=True)]
            try:
                e_trial = entries(trial)
                ok = np.isfinite(e_trial).all() and np.linalg.norm(e_trial) < (1 - 1e-4 * t) * merit
            except (ZeroDivisionError, ValueError):
                ok = False
            if ok:
                break
            t /= 2
            if t < 1e-8:
                if residual <= 1e3 * tol:  # converged to the attainable accuracy
                    break
                raise NewtonError(f"line search stalled at residual {residual:.3e} (k = {layout.k})")
        if t < 1e-8:
            return _result(layout, x, B, iteration, residual)
        x, e = trial, e_trial
    raise NewtonError(f"no convergence in {max_iter} steps: residual {float(np.abs(e).max()):.3e} > {tol:.1e} "
                      f"(k = {layout.k})")


# --------------------------------------------------------------------------------------------------------------
# continuation in k


@dataclass(frozen=True)
class ContinuationPoint:
    k: Size
    result: NewtonResult

    @property
    def values(self) -> dict[str, float]:
        return dict(zip(self.result.layout.names, self.result.x, strict=True))


def _extrapolate(history: list[tuple[float, dict[str, float]]], k: float, names: Sequence[str],
                 fallback: np.ndarray) -> np.ndarray:
    """Polynomial (degree ≤ 2) extrapolation of each parameter in t = k^{-1/2} from the last three points."""
    pts = history[-3:]
    t = k ** -0.5
    out = []
    for i, n in enumerate(names):
        known = [(kk ** -0.5, vals[n]) for kk, vals in pts if n in vals]
        if not known:
            out.append(fallback[i])
            continue
        value = 0.0
        for a, (ta, va) in enumerate(known):  # Lagrange form
            w = 1.0
            for b, (tb, _) in enumerate(known):
                if b != a:
                    w *= (t - tb) / (ta - tb)
            value += w * va
        out.append(value)
    return np.array(out)


def continue_in_k(family: Family, ks: Sequence[Size], *, max_ratio: float = 1.5, start: Sequence[float] | None = None,
                  tol: float | None = None) -> list[ContinuationPoint]:
    """Follow the family through the values ks (in the given order; any direction). The first point starts from
    ``start`` (default family.start(ks[0])); between consecutive requested values, real intermediate values of k
    are inserted along a geometric sequence of ratio ≤ max_ratio, and each Newton solve starts from the
    extrapolation in k^{-1/2} of the previous solutions (falling back to the last solution, then to halving the
    step). Returns one ContinuationPoint per requested k. Raises NewtonError if the family cannot be followed."""
    history: list[tuple[float, dict[str, float]]] = []
    out: list[ContinuationPoint] = []
    previous: float | None = None
    for target in ks:
        if previous is None:
            layout = family.layout(target)
            x0 = np.asarray(start if start is not None else family.start(target), dtype=float)
            result = newton(layout, x0, tol=tol)
            history.append((float(target), dict(zip(layout.names, result.x, strict=True))))
            out.append(ContinuationPoint(target, result))
            previous = float(target)
            continue
        steps = max(1, math.ceil(abs(math.log(float(target) / previous)) / math.log(max_ratio)))
        grid = [previous * (float(target) / previous) ** (j / steps) for j in range(1, steps)] + [target]
        result = None
        for k in grid:
            result = _continuation_step(family, history, k, tol)
            history.append((float(k), dict(zip(result.layout.names, result.x, strict=True))))
        assert result is not None
        out.append(ContinuationPoint(target, result))
        previous = float(target)
    return out


def _continuation_step(family: Family, history: list[tuple[float, dict[str, float]]], k: Size, tol: float | None,
                       depth: int = 0) -> NewtonResult:
    layout = family.layout(k)
    fallback = family.start(k)
    last_k, last = history[-1]
    candidates = [_extrapolate(history, float(k), layout.names, fallback),
                  np.array([last.get(n, f) for n, f in zip(layout.names, fallback, strict=True)])]
    errors = []
    for x0 in candidates:
        try:
            return newton(layout, x0, tol=tol)
        except NewtonError as exc:
            errors.append(str(exc))
    if depth < 4:  # halve the step (geometric midpoint) and retry
        middle = math.sqrt(last_k * float(k))
        result = _continuation_step(family, history, middle, tol, depth + 1)
        history.append((middle, dict(zip(result.layout.names, result.x, strict=True))))
        return _continuation_step(family, history, k, tol, depth + 1)
    raise NewtonError(f"{family.name}: continuation failed at k = {k}: " + "; ".join(errors))


# --------------------------------------------------------------------------------------------------------------
# reporting (no printing here)


@dataclass(frozen=True)
class FamilyPoint:
    """One row of a family report. hessian_eigenvalues: the spectrum of the full k²×k² Hessian (kernel.hessian on
    expand(x)) when k ≤ the report's limit, else None; local_minimum: all those eigenvalues > 0 (None if not
    computed); residual: max |∇F(W) entry|; full_residual: the same from kernel.gradient (small k only)."""

    family: str
    k: Size
    names: tuple[str, ...]
    x: np.ndarray
    loss: float
    residual: float
    restricted_hessian_eigenvalues: np.ndarray
    hessian_eigenvalues: np.ndarray | None
    full_residual: float | None
    local_minimum: bool | None


def report(family: Family, ks: Sequence[int], *, hessian_max_k: int = 12) -> list[FamilyPoint]:
    """Follow ``family`` through ks (continuation) and describe each critical point."""
    rows = []
    for point in continue_in_k(family, ks):
        res = point.result
        H = np.array([_floats(row) for row in restricted.hessian(res.layout, res.x_mid or list(res.x),
                                                                 default_backend(point.k))])
        eig = full_res = local = None
        if point.k <= hessian_max_k:
            W = restricted.expand(res.layout, res.x)
            eig = np.linalg.eigvalsh(kernel.hessian(W))
            full_res = float(np.abs(kernel.gradient(W)).max())
            local = bool(eig.min() > 0)
        rows.append(FamilyPoint(family.name, point.k, res.layout.names, res.x, res.loss, res.residual,
                                np.linalg.eigvalsh(H), eig, full_res, local))
    return rows

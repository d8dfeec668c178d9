"""The loss F restricted to Fix(Δ(S_{p1} × ... × S_{pr})), with the block sizes as parameters (MATH.md, Part II).

Fixed-point space. The indices {1..k} are cut into consecutive blocks I_1, ..., I_r of sizes p_1, ..., p_r. A
W ∈ Fix(Δ(S_{p1} × ... × S_{pr})) has, for each block α, one value d_α on the diagonal of the diagonal block
α×α, one value o_α on its off-diagonal (blocks with p_α > 1 only) and, for each ordered pair α ≠ β, one value
c_αβ on the whole off-diagonal block (row block α, column block β). The parameter vector x is ordered as
``Layout.names``: d_1, o_1, d_2, o_2, ..., d_r, o_r (o_α omitted when p_α ≤ 1), then c_αβ for the ordered pairs
(α, β), α ≠ β, in lexicographic order (c_12, c_13, ..., c_21, c_23, ...). Names are 1-based: "d1", "o1", "c12".

Symmetric criticality. F is Γ-invariant, so ∇F is equivariant and ∇F(W) ∈ Fix for W ∈ Fix: a critical point of
the restriction x ↦ F(W(x)) is a critical point of F on all of M(k, k). On each orbit of index pairs (the
entries carrying one parameter) the entries of ∇F(W) are equal, so the restricted gradient is
∂F/∂x_p = |orbit_p| · (∇F)_orbit_p and ``full_gradient_entries`` recovers ∇F(W) exactly at no cost in k.

Gram quantities. Write κ(w, v) as a function of g = w·v and N = ‖w‖²‖v‖²:
    κ = (S + (π − θ) g) / (2π),   S = √(N − g²) = ‖w‖‖v‖ sin θ,   θ = angle(w, v),
with the non-singular first partials ∂κ/∂g = (π − θ)/(2π), ∂κ/∂N = S/(4πN) and the second partials
    ∂²κ/∂g² = 1/(2πS),   ∂²κ/∂g∂N = −g/(4πNS),   ∂²κ/∂N² = (2g² − N)/(8πN²S)
(singular where the two vectors are parallel, S = 0: there κ is only C¹). κ(w, w) = ‖w‖²/2.
The angle is taken from the half-angle formula π − θ = π − 2 atan2(S, √N + g) (g ≥ 0) or 2 atan2(S, √N − g)
(g < 0): the second argument of atan2 is then ≥ √N > 0, which keeps arb balls tight even near θ = 0 or π
(atan2(S, g) with a ball S ∋ 0 and g < 0 straddles the branch cut). Every Gram quantity is a polynomial in the
parameters and the block sizes (row i ∈ I_α, j ∈ I_β):
    ‖w_i‖² = n_α = d_α² + (p_α − 1) o_α² + Σ_{γ≠α} p_γ c_αγ²,
    w_i·w_j (i ≠ j, both in I_α) = s_α = 2 d_α o_α + (p_α − 2) o_α² + Σ_{γ≠α} p_γ c_αγ²,
    w_i·w_j (α ≠ β) = m_αβ = c_βα (d_α + (p_α − 1) o_α) + c_αβ (d_β + (p_β − 1) o_β) + Σ_{γ≠α,β} p_γ c_αγ c_βγ,
    w_i·e_j = W_ij ∈ {d_α, o_α, c_αβ},
and N − g² is computed from an expression without cancellation where one exists: n_α − W_ij² is a sum of
squares, n_α² − s_α² = (d_α − o_α)² (n_α + s_α); for m_αβ it is n_α n_β − m_αβ² (clamped at 0).

Grouping of the double sums. With the multiplicities of each type of pair (teacher V = I_k),
    F = k/4 + k(k−1)/(4π) + Σ_α p_α n_α / 4 + Σ_α p_α(p_α − 1)/2 · κ(s_α; n_α²) + Σ_{α<β} p_α p_β κ(m_αβ; n_α n_β)
        − Σ_α [p_α κ(d_α; n_α) + p_α(p_α − 1) κ(o_α; n_α) + Σ_{β≠α} p_α p_β κ(c_αβ; n_α)],
where κ(g; N) is the kernel as a function of the Gram quantities. Nothing depends on k except through the
p_α, which may be huge or even real (float sizes, float backend or arb). The gradient and the Hessian in the
parameters follow by the chain rule through (g, N): the Gram polynomials are carried as second-order jets
(value, gradient, Hessian, exact polynomial differentiation) and combined with the partials of κ above.

Backends. The same code runs over Python floats (``FLOAT``, module math) and over python-flint arb balls
(``ArbBackend(prec)``: +, −, ×, /, arb.sqrt, arb.atan2(s, t), arb.pi()); with arb every result is a ball
containing the exact value for the given (exactly represented) inputs.

Cost: O(r²) kernel evaluations, each Gram quantity costing O(r) operations, so O(r³) for the loss; the
gradient and the Hessian carry sparse jets over the O(r²) parameters (O(r) nonzero partials per Gram
quantity), so O(r⁴) for the Hessian. Independent of k: k = 10⁶ costs what k = 10 costs. ``expand`` and
``project`` (the full W) cost O(k²) and are meant for small k only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from flint import arb, ctx

from certsym.landscape import kernel

Size = int | float
Scalar = Any  # float or flint.arb


# --------------------------------------------------------------------------------------------------------------
# arithmetic backends


class Backend(Protocol):
    """The arithmetic ``restricted`` runs over: +, −, ×, / of its numbers (Python operators), and these. Three
    implement it: ``FloatBackend`` (search), ``ArbBackend`` (balls that certify) and ``powerseries.SeriesBackend``
    (exact truncated series in k^(−1/2)). ``nonnegative_hint`` only chooses between two equal formulas."""

    name: str

    def number(self, value: Any) -> Any: ...

    def sqrt(self, value: Any) -> Any: ...

    def atan2(self, y: Any, x: Any) -> Any: ...

    def pi(self) -> Any: ...

    def nonnegative_hint(self, value: Any) -> bool: ...

    def context(self) -> contextlib.AbstractContextManager: ...


class FloatBackend:
    """Python floats (module math). √ of a slightly negative rounding residue is taken as 0."""

    name = "float"

    def number(self, value: Any) -> float:
        return float(value)

    def sqrt(self, value: float) -> float:
        return math.sqrt(value) if value > 0 else 0.0

    def atan2(self, y: float, x: float) -> float:
        return math.atan2(y, x)

    def pi(self) -> float:
        return math.pi

    def nonnegative_hint(self, value: float) -> bool:
        return value >= 0

    def context(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()


@dataclass(frozen=True)
class ArbBackend:
    """python-flint arb balls at ``prec`` bits. √ is taken of the nonnegative part of the ball (the exact
    value of every quantity passed to it is ≥ 0, so this stays rigorous)."""

    prec: int = 128
    name = "arb"

    def number(self, value: Any) -> arb:
        return value if isinstance(value, arb) else arb(value)

    def sqrt(self, value: arb) -> arb:
        return value.nonnegative_part().sqrt()

    def atan2(self, y: arb, x: arb) -> arb:
        return arb.atan2(y, x)

    def pi(self) -> arb:
        return arb.pi()

    def nonnegative_hint(self, value: arb) -> bool:
        """Used only to choose between two equivalent formulas."""
        return float(value.mid()) >= 0

    def context(self) -> contextlib.AbstractContextManager:
        return ctx.workprec(self.prec)


FLOAT = FloatBackend()


def _infer_backend(x: Sequence[Any], backend: Backend | None) -> Backend:
    if backend is not None:
        return backend
    return ArbBackend() if any(isinstance(v, arb) for v in x) else FLOAT


# --------------------------------------------------------------------------------------------------------------
# layout


@dataclass(frozen=True)
class Layout:
    """Block sizes (p_1, ..., p_r) of Δ(S_{p1} × ... × S_{pr}); ints for an actual k, floats allowed for real k.
    ``names``: the parameter order (module docstring); ``index``: name -> position."""

    sizes: tuple[Size, ...]
    names: tuple[str, ...] = field(init=False)
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sizes = tuple(self.sizes)
        if not sizes or any(p < 1 for p in sizes):
            raise ValueError(f"block sizes must be ≥ 1, got {sizes}")
        object.__setattr__(self, "sizes", sizes)
        names: list[str] = []
        for a, p in enumerate(sizes, start=1):
            names.append(f"d{a}")
            if p > 1:
                names.append(f"o{a}")
        r = len(sizes)
        names += [f"c{a + 1}{b + 1}" if r < 10 else f"c{a + 1},{b + 1}"
                  for a in range(r) for b in range(r) if a != b]
        object.__setattr__(self, "names", tuple(names))
        object.__setattr__(self, "index", {n: i for i, n in enumerate(names)})

    @property
    def k(self) -> Size:
        return sum(self.sizes)

    @property
    def r(self) -> int:
        return len(self.sizes)

    def d(self, a: int) -> int:
        return self.index[f"d{a + 1}"]

    def o(self, a: int) -> int | None:
        return self.index.get(f"o{a + 1}")

    def c(self, a: int, b: int) -> int:
        return self.index[f"c{a + 1}{b + 1}" if self.r < 10 else f"c{a + 1},{b + 1}"]

    def orbit_sizes(self) -> tuple[Size, ...]:
        """Number of entries of W carrying each parameter: p_α for d_α, p_α(p_α − 1) for o_α, p_α p_β for c_αβ."""
        out: list[Size] = [0] * len(self.names)
        for a, p in enumerate(self.sizes):
            out[self.d(a)] = p
            o = self.o(a)
            if o is not None:
                out[o] = p * (p - 1)
            for b, q in enumerate(self.sizes):
                if b != a:
                    out[self.c(a, b)] = p * q
        return tuple(out)

    def starts(self) -> list[int]:
        """First index of each block (integer sizes only)."""
        out, s = [], 0
        for p in self._int_sizes():
            out.append(s)
            s += p
        return out

    def _int_sizes(self) -> tuple[int, ...]:
        if any(int(p) != p for p in self.sizes):
            raise ValueError(f"the full matrix needs integer block sizes, got {self.sizes}")
        return tuple(int(p) for p in self.sizes)


def basis(layout: Layout) -> np.ndarray:
    """The indicator matrices E_p of the parameters, shape (P, k, k): W(x) = Σ_p x_p E_p. The expansion is linear,
    so its Jacobian is J = [vec E_p]_p and J^T ∇F(W) = (⟨E_p, ∇F(W)⟩)_p. Integer sizes only; cost O(P k²)."""
    sizes = layout._int_sizes()
    k = sum(sizes)
    starts = layout.starts()
    E = np.zeros((len(layout.names), k, k))
    for a, (sa, p) in enumerate(zip(starts, sizes, strict=True)):
        block = slice(sa, sa + p)
        E[layout.d(a), block, block] = np.eye(p)
        o = layout.o(a)
        if o is not None:
            E[o, block, block] = 1 - np.eye(p)
        for b, (sb, q) in enumerate(zip(starts, sizes, strict=True)):
            if b != a:
                E[layout.c(a, b), block, sb:sb + q] = 1
    return E


def expand(layout: Layout, params: Sequence[float]) -> np.ndarray:
    """The full k×k matrix W(x) ∈ Fix (floats; small integer k only)."""
    x = np.asarray([float(v) for v in params])
    if x.shape != (len(layout.names),):
        raise ValueError(f"expected {len(layout.names)} parameters {layout.names}, got {x.shape}")
    return np.tensordot(x, basis(layout), axes=1)


def project(layout: Layout, W: np.ndarray) -> np.ndarray:
    """The parameters of the orthogonal projection of W onto Fix (orbit averages); project(expand(x)) = x."""
    E = basis(layout)
    return np.array([(E[p] * W).sum() / E[p].sum() for p in range(len(E))])


# --------------------------------------------------------------------------------------------------------------
# second-order jets over a backend (exact differentiation of the Gram polynomials)


class _Jet:
    """value, sparse gradient {i: ∂}, sparse Hessian {(i, j): ∂²} (both orders of i ≠ j stored); ``order`` 0, 1, 2
    says how much is carried. Scalars (block sizes, constants) are plain backend numbers."""

    __slots__ = ("val", "g", "h", "order")

    def __init__(self, val: Scalar, g: dict[int, Scalar], h: dict[tuple[int, int], Scalar], order: int) -> None:
        self.val, self.g, self.h, self.order = val, g, h, order

    @staticmethod
    def variable(val: Scalar, i: int, one: Scalar, order: int) -> _Jet:
        return _Jet(val, {i: one} if order >= 1 else {}, {}, order)

    def __add__(self, other: _Jet | Scalar) -> _Jet:
        if not isinstance(other, _Jet):
            return _Jet(self.val + other, self.g, self.h, self.order)
        g = dict(self.g)
        for i, v in other.g.items():
            g[i] = g[i] + v if i in g else v
        h = dict(self.h)
        for ij, v in other.h.items():
            h[ij] = h[ij] + v if ij in h else v
        return _Jet(self.val + other.val, g, h, self.order)

    __radd__ = __add__

    def __neg__(self) -> _Jet:
        return _Jet(-self.val, {i: -v for i, v in self.g.items()}, {ij: -v for ij, v in self.h.items()}, self.order)

    def __sub__(self, other: _Jet | Scalar) -> _Jet:
        return self + (-other)

    def __rsub__(self, other: Scalar) -> _Jet:
        return (-self) + other

    def scale(self, c: Scalar) -> _Jet:
        return _Jet(self.val * c, {i: v * c for i, v in self.g.items()}, {ij: v * c for ij, v in self.h.items()},
                    self.order)

    def __mul__(self, other: _Jet | Scalar) -> _Jet:
        if not isinstance(other, _Jet):
            return self.scale(other)
        order = self.order
        val = self.val * other.val
        g: dict[int, Scalar] = {}
        h: dict[tuple[int, int], Scalar] = {}
        if order >= 1:
            for i, v in self.g.items():
                g[i] = v * other.val
            for i, v in other.g.items():
                g[i] = g[i] + v * self.val if i in g else v * self.val
        if order >= 2:
            for ij, v in self.h.items():
                h[ij] = v * other.val
            for ij, v in other.h.items():
                h[ij] = h[ij] + v * self.val if ij in h else v * self.val
            for i, u in self.g.items():
                for j, v in other.g.items():
                    for key in ((i, j), (j, i)):
                        h[key] = h[key] + u * v if key in h else u * v
        return _Jet(val, g, h, order)

    __rmul__ = __mul__


class _Accumulator:
    """Σ weight · (Gram polynomial or κ(g; N)), as value, gradient and Hessian dictionaries."""

    def __init__(self, zero: Scalar, order: int) -> None:
        self.val = zero
        self.g: dict[int, Scalar] = {}
        self.h: dict[tuple[int, int], Scalar] = {}
        self.order = order

    def _add_g(self, i: int, v: Scalar) -> None:
        self.g[i] = self.g[i] + v if i in self.g else v

    def _add_h(self, ij: tuple[int, int], v: Scalar) -> None:
        self.h[ij] = self.h[ij] + v if ij in self.h else v

    def add_jet(self, w: Scalar, jet: _Jet) -> None:
        self.val = self.val + w * jet.val
        for i, v in jet.g.items():
            self._add_g(i, w * v)
        for ij, v in jet.h.items():
            self._add_h(ij, w * v)

    def add_kappa(self, w: Scalar, g: _Jet, N: _Jet, D: Scalar, B: Backend) -> None:
        """w · κ(g; N), D = N − g² (given from a cancellation-free expression where possible)."""
        pi = B.pi()
        S = B.sqrt(D)
        root = B.sqrt(N.val)
        if B.nonnegative_hint(g.val):
            pi_minus_theta = pi - 2 * B.atan2(S, root + g.val)
        else:
            pi_minus_theta = 2 * B.atan2(S, root - g.val)
        two_pi = 2 * pi
        self.val = self.val + w * (S + pi_minus_theta * g.val) / two_pi
        if self.order == 0:
            return
        k_g = pi_minus_theta / two_pi
        k_N = S / (2 * two_pi * N.val)
        for i, v in g.g.items():
            self._add_g(i, w * k_g * v)
        for i, v in N.g.items():
            self._add_g(i, w * k_N * v)
        if self.order == 1:
            return
        if isinstance(S, float) and S == 0.0:
            raise ZeroDivisionError("κ is not C² where two rows (or a row and a teacher vector) are parallel")
        k_gg = 1 / (two_pi * S)
        k_gN = -g.val / (2 * two_pi * N.val * S)
        k_NN = (2 * g.val * g.val - N.val) / (4 * two_pi * N.val * N.val * S)
        for ij, v in g.h.items():
            self._add_h(ij, w * k_g * v)
        for ij, v in N.h.items():
            self._add_h(ij, w * k_N * v)
        for i, u in g.g.items():
            for j, v in g.g.items():
                self._add_h((i, j), w * k_gg * u * v)
            for j, v in N.g.items():
                t = w * k_gN * u * v
                self._add_h((i, j), t)
                self._add_h((j, i), t)
        for i, u in N.g.items():
            for j, v in N.g.items():
                self._add_h((i, j), w * k_NN * u * v)


def _evaluate(layout: Layout, x: Sequence[Any], order: int, B: Backend,
              sizes: Sequence[Scalar] | None = None) -> _Accumulator:
    """The grouped sum of the module docstring, carried to the given derivative order. ``sizes`` replaces the
    layout's block sizes by backend numbers (e.g. power series in k^{-1/2}); the layout then gives only the
    parameter structure."""
    if len(x) != len(layout.names):
        raise ValueError(f"expected {len(layout.names)} parameters {layout.names}, got {len(x)}")
    one, zero = B.number(1), B.number(0)
    X = [_Jet.variable(B.number(v), i, one, order) for i, v in enumerate(x)]
    r = layout.r
    p = [B.number(s) for s in (layout.sizes if sizes is None else sizes)]
    k = sum(p[1:], p[0])
    pi = B.pi()
    d = [X[layout.d(a)] for a in range(r)]
    o = [X[i] if (i := layout.o(a)) is not None else None for a in range(r)]
    c = [[X[layout.c(a, b)] if a != b else None for b in range(r)] for a in range(r)]

    # Σ_{γ≠α} p_γ c_αγ² (the off-block part of every row norm of block α)
    cross_sq = [sum((c[a][b] * c[a][b] * p[b] for b in range(r) if b != a), _Jet(zero, {}, {}, order))
                for a in range(r)]
    n = [d[a] * d[a] + cross_sq[a] + (o[a] * o[a] * (p[a] - 1) if o[a] is not None else zero) for a in range(r)]

    acc = _Accumulator(zero, order)
    acc.val = k / 4 + k * (k - 1) / (4 * pi)  # ½ Σ_ij κ(v_i, v_j) = F(0)
    for a in range(r):
        pa = p[a]
        acc.add_jet(pa / 4, n[a])  # ½ Σ_i κ(w_i, w_i) = ½ Σ_i ‖w_i‖²/2
        ov = o[a].val if o[a] is not None else zero
        cs = cross_sq[a].val
        # teacher, diagonal entries: g = d_α, N − g² = (p_α − 1) o_α² + Σ p_γ c_αγ²
        acc.add_kappa(-pa, d[a], n[a], (pa - 1) * ov * ov + cs, B)
        if o[a] is not None:
            dv = d[a].val
            # teacher, off-diagonal entries of the block: g = o_α, N − g² = d_α² + (p_α − 2) o_α² + Σ p_γ c_αγ²
            acc.add_kappa(-pa * (pa - 1), o[a], n[a], dv * dv + (pa - 2) * ov * ov + cs, B)
            # two distinct rows of the block: g = s_α, N = n_α², N − g² = (d_α − o_α)² (n_α + s_α)
            s = 2 * d[a] * o[a] + o[a] * o[a] * (pa - 2) + cross_sq[a]
            acc.add_kappa(pa * (pa - 1) / 2, s, n[a] * n[a], (dv - ov) * (dv - ov) * (n[a].val + s.val), B)
        for b in range(r):
            if b == a:
                continue
            cv = c[a][b].val
            # teacher, entries of the off-diagonal block (α, β): g = c_αβ, N − g² = n_α − c_αβ²
            rest = d[a].val * d[a].val + (pa - 1) * ov * ov + (p[b] - 1) * cv * cv + sum(
                (p[g] * c[a][g].val * c[a][g].val for g in range(r) if g not in (a, b)), zero)
            acc.add_kappa(-pa * p[b], c[a][b], n[a], rest, B)
            if b > a:
                # rows in different blocks: g = m_αβ, N = n_α n_β
                row_a = d[a] + (o[a] * (pa - 1) if o[a] is not None else zero)
                row_b = d[b] + (o[b] * (p[b] - 1) if o[b] is not None else zero)
                m = c[b][a] * row_a + c[a][b] * row_b + sum(
                    (c[a][g] * c[b][g] * p[g] for g in range(r) if g not in (a, b)), _Jet(zero, {}, {}, order))
                N = n[a] * n[b]
                acc.add_kappa(pa * p[b], m, N, N.val - m.val * m.val, B)
    return acc


# --------------------------------------------------------------------------------------------------------------
# public API


def loss(layout: Layout, x: Sequence[Any], backend: Backend | None = None,
         sizes: Sequence[Scalar] | None = None) -> Scalar:
    """F(W(x)) (a float, or an arb ball when the backend is arb or some parameter is an arb). ``sizes``: the block
    sizes as backend numbers (e.g. power series in k^{-1/2}), replacing the layout's."""
    B = _infer_backend(x, backend)
    with B.context():
        return _evaluate(layout, x, 0, B, sizes).val


def gradient(layout: Layout, x: Sequence[Any], backend: Backend | None = None,
             sizes: Sequence[Scalar] | None = None) -> np.ndarray | list[arb]:
    """∇_x F(W(x)) by the chain rule through the Gram quantities; np.ndarray (float) or a list of backend numbers
    (``sizes`` as for ``loss``)."""
    B = _infer_backend(x, backend)
    with B.context():
        acc = _evaluate(layout, x, 1, B, sizes)
        out = [acc.g.get(i, B.number(0)) for i in range(len(layout.names))]
    return np.array(out, dtype=float) if isinstance(B, FloatBackend) else out


def hessian(layout: Layout, x: Sequence[Any], backend: Backend | None = None,
            sizes: Sequence[Scalar] | None = None) -> np.ndarray | list[list[arb]]:
    """∇²_x F(W(x)) by the chain rule through the Gram quantities and the second partials of κ; np.ndarray
    (float) or a list of lists of arb (``sizes`` as for ``loss``). Raises ZeroDivisionError (float) at points where
    two rows are parallel."""
    B = _infer_backend(x, backend)
    P = len(layout.names)
    with B.context():
        acc = _evaluate(layout, x, 2, B, sizes)
        out = [[acc.h.get((i, j), B.number(0)) for j in range(P)] for i in range(P)]
    return np.array(out, dtype=float) if isinstance(B, FloatBackend) else out


def full_gradient_entries(layout: Layout, x: Sequence[Any], backend: Backend | None = None) -> np.ndarray:
    """The common value of ∂F/∂W_ij on each parameter's orbit, i.e. ∇F(W(x)) itself (symmetric criticality,
    module docstring): restricted gradient / orbit size. Float output; any k."""
    G = gradient(layout, x, backend)
    return np.array([float(g.mid()) if isinstance(g, arb) else float(g) for g in G]) / np.array(
        layout.orbit_sizes(), dtype=float)


def gradient_full_consistency(layout: Layout, x: Sequence[float], h: float = 1e-6) -> dict[str, float]:
    """Max absolute discrepancies between independent computations at x (small integer k):
    - "gradient": restricted gradient vs J^T ∇F(W) with ∇F from ``kernel.gradient`` on the full matrix;
    - "entries": ``full_gradient_entries`` vs the entries of ``kernel.gradient`` (all of them);
    - "hessian_full": restricted Hessian vs J^T ∇²F(W) J with ``kernel.hessian``;
    - "hessian_fd": restricted Hessian vs central differences (step h) of the restricted gradient;
    - "loss": restricted loss vs ``kernel.loss``."""
    xs = np.asarray(x, dtype=float)
    W = expand(layout, xs)
    E = basis(layout)
    J = E.reshape(len(E), -1).T
    G = gradient(layout, xs)
    H = hessian(layout, xs)
    full_G = kernel.gradient(W)
    entries = full_gradient_entries(layout, xs)
    W_entries = np.tensordot(entries, E, axes=1)
    fd = np.empty_like(H)
    for p in range(len(xs)):
        step = np.zeros_like(xs)
        step[p] = h
        fd[:, p] = (gradient(layout, xs + step) - gradient(layout, xs - step)) / (2 * h)
    return {
        "loss": abs(loss(layout, xs) - kernel.loss(W)),
        "gradient": float(np.abs(G - J.T @ full_G.ravel()).max()),
        "entries": float(np.abs(W_entries - full_G).max()),
        "hessian_full": float(np.abs(H - J.T @ kernel.hessian(W) @ J).max()),
        "hessian_fd": float(np.abs(H - fd).max()),
    }


def kappa_partials(g: Scalar, N: Scalar, backend: Backend | None = None) -> dict[str, Scalar]:
    """κ and its partials in (g, N) at one point (for tests and documentation): keys "k", "g", "N", "gg", "gN",
    "NN"."""
    B = _infer_backend([g, N], backend)
    with B.context():
        gj = _Jet.variable(B.number(g), 0, B.number(1), 2)
        Nj = _Jet.variable(B.number(N), 1, B.number(1), 2)
        acc = _Accumulator(B.number(0), 2)
        acc.add_kappa(B.number(1), gj, Nj, Nj.val - gj.val * gj.val, B)
        zero = B.number(0)
        return {"k": acc.val, "g": acc.g.get(0, zero), "N": acc.g.get(1, zero), "gg": acc.h.get((0, 0), zero),
                "gN": acc.h.get((0, 1), zero), "NN": acc.h.get((1, 1), zero)}


def transfer(x: Sequence[Any], source: Layout, target: Layout, fill: Callable[[str], Any] | None = None) -> list:
    """Carry parameters between layouts by name (e.g. across a k where a block drops to size 1); names missing
    from ``source`` are taken from ``fill`` (default 0)."""
    values = dict(zip(source.names, x, strict=True))
    return [values[n] if n in values else (fill(n) if fill else 0.0) for n in target.names]

"""Certified critical points and Hessian inertia of the restricted teacher–student loss (MATH.md, Part II).

Existence and uniqueness (Krawczyk). For the restricted gradient g on a box X = x̃ + [−r, r]^P, a real matrix C
and the interval Hessian H(X) ⊇ {∇g(x) : x ∈ X},
    K(X) = x̃ − C g(x̃) + (I − C H(X)) (X − x̃).
If K(X) lies in the interior of X, then g has exactly one zero in X (Krawczyk 1969, Moore 1977). By symmetric
criticality that zero is a critical point of F on all of M(k, k). Everything is evaluated in arb ball arithmetic
at the exact rational centre and radius; floats only choose x̃, r and C.

Inertia. The Hessian ∇²F(W*) commutes with Iso(W*) ⊇ G (the family's isotropy), so on the fixed-point space of
any subgroup K ⊆ G it acts as ⊕_ρ B_ρ ⊗ I_{m_ρ(K)}, with B_ρ the block of the irreducible G-representation ρ and
m_ρ(K) = dim ρ^K. The restricted Hessian on the layout of K (``restricted.hessian``) is that compression in the
basis of orbit indicator matrices; by Sylvester's law of inertia it has the same inertia. A few Young subgroups
K with known m_ρ(K) (``PROBES``) determine the number of negative eigenvalues of each B_ρ; the inertia of the
full Hessian is then Σ_ρ dim ρ · neg(B_ρ). The signs of each compressed interval matrix are certified by a
congruence with float eigenvectors Q (checked nonsingular) and Gershgorin discs that exclude 0. For small k the
full k²×k² Hessian (the layout of singletons) is certified the same way.
Cost: O(P³) ball operations for a box of P ≤ 18 parameters, independent of k; O(k⁶) for the full Hessian.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product

import numpy as np
from flint import arb, arb_mat, ctx, fmpq

from certsym.landscape import restricted
from certsym.landscape.dual import Dual, DualBackend
from certsym.landscape.families import Family, continue_in_k, family, newton
from certsym.landscape.restricted import ArbBackend, Layout

FULL_HESSIAN_MAX_K = 20


def precision(k: float) -> int:
    """Working precision: the grouped sums cancel O(k²) against results of size O(1/k)."""
    return 128 + 6 * math.ceil(math.log2(max(k, 2)))


def _q(x: float | arb) -> fmpq:
    return fmpq(*float(x.mid() if isinstance(x, arb) else x).as_integer_ratio())


def _balls(center: Sequence[fmpq], radius: fmpq) -> list[arb]:
    return [arb(c, radius) for c in center]


def refine(layout: Layout, x0: Sequence[float], prec: int, steps: int = 10) -> list[fmpq]:
    """Newton steps on the restricted gradient in arb from x0, kept as exact dyadic rationals."""
    B = ArbBackend(prec)
    x = [_q(v) for v in x0]
    with ctx.workprec(prec):
        return _newton_steps(layout, x, B, steps)


def _newton_steps(layout: Layout, x: list[fmpq], B: ArbBackend, steps: int) -> list[fmpq]:
    prec = B.prec
    for _ in range(steps):
        g = restricted.gradient(layout, [arb(v) for v in x], B)
        H = np.array([[float(h.mid()) for h in row] for row in restricted.hessian(layout, [arb(v) for v in x], B)])
        step = np.linalg.solve(H, np.array([float(v.mid()) for v in g]))
        x = [v - _q(s) for v, s in zip(x, step, strict=True)]
        if max(abs(s) for s in step) < 2.0 ** (40 - prec):
            break
    return x


@dataclass
class Box:
    """A certified critical point: the unique zero of the restricted gradient in centre ± radius."""

    layout: Layout
    center: list[fmpq]
    radius: fmpq
    preconditioner: list[list[fmpq]]
    prec: int
    certified: bool
    loss: arb | None = None

    def balls(self) -> list[arb]:
        return _balls(self.center, self.radius)


def krawczyk(layout: Layout, center: list[fmpq], radius: fmpq, prec: int) -> Box:
    """The Krawczyk test (module docstring) on center ± radius. Cost: one gradient at the centre and one interval
    Hessian on the box, O(P³) ball operations."""
    with ctx.workprec(prec):
        return _krawczyk(layout, center, radius, prec)


def _krawczyk(layout: Layout, center: list[fmpq], radius: fmpq, prec: int, over_k: fmpq | None = None) -> Box:
    """``krawczyk``. With ``over_k`` = δ, the test holds for every k in layout.k ± δ at once: the first block's size
    is the ball, the gradient at the centre is enclosed by the mean-value form g(x̃, k₀) + ∂g/∂k(x̃, K)·[−δ, δ]
    (∂g/∂k by dual numbers, ``dual``: a direct ball evaluation would be O(k²) times wider), and the Hessian is
    enclosed over X × K. No loss enclosure then."""
    B = ArbBackend(prec)
    P = len(center)
    X = _balls(center, radius)
    g = restricted.gradient(layout, [arb(c) for c in center], B)
    sizes = None
    if over_k is not None:
        first, *rest = (arb(s) for s in layout.sizes)
        sizes = [arb(first.mid(), over_k), *rest]
        dual = restricted.gradient(layout, [arb(c) for c in center], DualBackend(prec),
                                   [Dual(sizes[0], 1), *(Dual(s) for s in rest)])
        g = [v + d.d * arb(0, over_k) for v, d in zip(g, dual, strict=True)]
    HX = restricted.hessian(layout, X, B, sizes)
    Hmid = np.array([[float(h.mid()) for h in row] for row in HX])
    if not all(h.is_finite() for row in HX for h in row) or not np.isfinite(Hmid).all():
        return Box(layout, center, radius, [], prec, False)
    C = [[_q(x) for x in row] for row in np.linalg.inv(Hmid)]
    Cm = arb_mat([[arb(c) for c in row] for row in C])
    step = Cm * arb_mat([[v] for v in g])
    M = arb_mat([[arb(int(i == j)) for j in range(P)] for i in range(P)]) - Cm * arb_mat(HX)
    K = [-step[i, 0] + sum((M[i, j] * arb(0, radius) for j in range(P)), arb(0)) for i in range(P)]
    inside = all(abs(v).upper() < arb(radius) for v in K)  # K − x̃ within the open box of radius r
    box = Box(layout, center, radius, C, prec, bool(inside))
    if box.certified and over_k is None:  # mean value form: |F(x*) − F(x̃)| ≤ Σ_i sup_X |∂_i F| · r
        slope = sum((abs(v) for v in restricted.gradient(layout, X, B)), arb(0)) * arb(radius)
        box.loss = restricted.loss(layout, [arb(c) for c in center], B) + arb(0, slope.upper())
    return box


def certify_point(layout: Layout, x0: Sequence[float], k: float) -> Box:
    """Refine x0 and run Krawczyk on shrinking boxes until one is certified (or report the last failure)."""
    prec = precision(k)
    center = refine(layout, x0, prec)
    box = None
    for exponent in (-(prec // 2), -60, -40, -30, -20):
        box = krawczyk(layout, center, fmpq(2) ** exponent, prec)
        if box.certified:
            break
    return box


# -- inertia --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Irrep:
    """An irreducible G-representation in M(k, k): its name, its block size (multiplicity in M(k, k)) and its
    dimension as a function of k."""

    name: str
    block: int
    dim: Callable[[int], int]


@dataclass(frozen=True)
class Probe:
    """A Young subgroup K ⊆ G given as a refinement of the family's blocks: ``parts[α]`` are the sizes (functions
    of k) the family's block α is cut into; ``fixed[ρ]`` = m_ρ(K) = dim ρ^K."""

    parts: tuple[tuple[Callable[[int], int], ...], ...]
    fixed: tuple[int, ...]


def _c(n: int) -> Callable[[int], int]:
    return lambda k: n


def _km(n: int) -> Callable[[int], int]:
    return lambda k: k - n


# ΔS_{k−1} on M(k, k) (blocks (k−1, 1)): R^k = 2·triv ⊕ std, so M = 5 triv ⊕ 5 std ⊕ [k−3,2] ⊕ [k−3,1,1].
_S_K1 = (Irrep("trivial", 5, _c(1)), Irrep("[k-2,1]", 5, _km(2)),
         Irrep("[k-3,2]", 1, lambda k: (k - 1) * (k - 4) // 2), Irrep("[k-3,1,1]", 1, lambda k: (k - 2) * (k - 3) // 2))
_S_K1_PROBES = (Probe(((_km(1),), (_c(1),)), (1, 0, 0, 0)),
                Probe(((_km(2), _c(1)), (_c(1),)), (1, 1, 0, 0)),
                Probe(((_km(3), _c(1), _c(1)), (_c(1),)), (1, 2, 1, 1)),
                Probe(((_km(3), _c(2)), (_c(1),)), (1, 1, 1, 0)))
# ΔS_k (blocks (k)): M = 2 triv ⊕ 3 std ⊕ [k−2,2] ⊕ [k−2,1,1].
_S_K = (Irrep("trivial", 2, _c(1)), Irrep("[k-1,1]", 3, _km(1)),
        Irrep("[k-2,2]", 1, lambda k: k * (k - 3) // 2), Irrep("[k-2,1,1]", 1, lambda k: (k - 1) * (k - 2) // 2))
_S_K_PROBES = (Probe(((_km(0),),), (1, 0, 0, 0)),
               Probe(((_km(1), _c(1)),), (1, 1, 0, 0)),
               Probe(((_km(2), _c(1), _c(1)),), (1, 2, 1, 1)),
               Probe(((_km(2), _c(2)),), (1, 1, 1, 0)))
# Δ(S_{k−2} × S_2) (blocks (k−2, 2)): R^k = 2 (1⊗1) ⊕ std⊗1 ⊕ 1⊗sgn, so
# M = 6 (1⊗1) ⊕ 5 (std⊗1) ⊕ 4 (1⊗sgn) ⊕ 2 (std⊗sgn) ⊕ [k−4,2]⊗1 ⊕ [k−4,1,1]⊗1.
_S_K2_2 = (Irrep("trivial", 6, _c(1)), Irrep("std x 1", 5, _km(3)), Irrep("1 x sgn", 4, _c(1)),
           Irrep("std x sgn", 2, _km(3)), Irrep("[k-4,2] x 1", 1, lambda k: (k - 2) * (k - 5) // 2),
           Irrep("[k-4,1,1] x 1", 1, lambda k: (k - 3) * (k - 4) // 2))
_S_K2_2_PROBES = (Probe(((_km(2),), (_c(2),)), (1, 0, 0, 0, 0, 0)),
                  Probe(((_km(3), _c(1)), (_c(2),)), (1, 1, 0, 0, 0, 0)),
                  Probe(((_km(2),), (_c(1), _c(1))), (1, 0, 1, 0, 0, 0)),
                  Probe(((_km(3), _c(1)), (_c(1), _c(1))), (1, 1, 1, 1, 0, 0)),
                  Probe(((_km(4), _c(1), _c(1)), (_c(2),)), (1, 2, 0, 0, 1, 1)),
                  Probe(((_km(4), _c(2)), (_c(2),)), (1, 1, 0, 0, 1, 0)))


def _kostka(rho: int, lam: int) -> int:
    """dim ρ^{S_λ} (a Kostka number) for ρ, λ among [n], [n−1,1], [n−2,2], [n−2,1,1] (indices 0–3)."""
    return ((1, 1, 1, 1), (0, 1, 1, 2), (0, 0, 1, 1), (0, 0, 0, 1))[rho][lam]


def _misfit_table(M: int) -> tuple[tuple[Irrep, ...], tuple[Probe, ...], int]:
    """Δ(S_p × S_M), p = k − M, M ≥ 3 (blocks (k − M, M)): R^k = 2 (1⊗1) ⊕ std⊗1 ⊕ 1⊗std, so
    M(k, k) = 6 (1⊗1) ⊕ 5 (std⊗1) ⊕ 5 (1⊗std) ⊕ 2 (std⊗std) ⊕ [p−2,2]⊗1 ⊕ [p−2,1,1]⊗1 ⊕ 1⊗[M−2,2] ⊕ 1⊗[M−2,1,1]
    (std⊗std of S_n is 1 ⊕ std ⊕ [n−2,2] ⊕ [n−2,1,1]; for M = 3 there is no [1,2]). Probes: Young subgroups
    S_λ × S_μ with λ, μ among (n), (n−1,1), (n−2,2), (n−2,1,1); dim (ρ⊗σ)^{S_λ×S_μ} = K_ρλ K_σμ (Kostka).
    Valid for p ≥ 4."""
    def parts_of(lam: int, n: Callable[[int], int]) -> tuple[Callable[[int], int], ...]:
        """The block sizes of λ = (n), (n−1,1), (n−2,2), (n−2,1,1) (index ``lam``), as functions of k."""
        return ((n,), (lambda k: n(k) - 1, _c(1)), (lambda k: n(k) - 2, _c(2)),
                (lambda k: n(k) - 2, _c(1), _c(1)))[lam]

    p_of = _km(M)
    irreps = [((0, 0), "trivial", 6, _c(1)), ((1, 0), "std x 1", 5, lambda k: k - M - 1),
              ((0, 1), "1 x std", 5, _c(M - 1)), ((1, 1), "std x std", 2, lambda k: (k - M - 1) * (M - 1)),
              ((2, 0), "[p-2,2] x 1", 1, lambda k: (k - M) * (k - M - 3) // 2),
              ((3, 0), "[p-2,1,1] x 1", 1, lambda k: (k - M - 1) * (k - M - 2) // 2)]
    if M >= 4:
        irreps.append(((0, 2), "1 x [M-2,2]", 1, _c(M * (M - 3) // 2)))
    irreps.append(((0, 3), "1 x [M-2,1,1]", 1, _c((M - 1) * (M - 2) // 2)))
    probe_pairs = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0)] + ([(0, 2)] if M >= 4 else []) + [(0, 3)]
    probes = tuple(Probe((parts_of(a, p_of), parts_of(b, _c(M))), tuple(_kostka(r, a) * _kostka(s, b)
                                                                           for (r, s), *_ in irreps))
                   for a, b in probe_pairs)
    return tuple(Irrep(name, block, dim) for _, name, block, dim in irreps), probes, M + 4


def isotypic_table(name: str) -> tuple[tuple[Irrep, ...], tuple[Probe, ...], int] | None:
    """The isotypic table of a family's layout: the four named families', or misfit-M's (M ≥ 3); None otherwise."""
    if name in ISOTYPIC:
        return ISOTYPIC[name]
    prefix, _, count = name.partition("-")
    if prefix == "misfit" and count.isdigit() and int(count) >= 3:
        return _misfit_table(int(count))
    return None


ISOTYPIC: dict[str, tuple[tuple[Irrep, ...], tuple[Probe, ...], int]] = {
    # family -> (irreps, probes, least k for which every probe block is nonempty and the table holds)
    "one-misfit": (_S_K1, _S_K1_PROBES, 5),
    "good-plus-negative": (_S_K1, _S_K1_PROBES, 5),
    "negative-diagonal": (_S_K, _S_K_PROBES, 4),
    "two-misfit": (_S_K2_2, _S_K2_2_PROBES, 6),
}


def refined(layout: Layout, x: Sequence, parts: Sequence[Sequence[int]]) -> tuple[Layout, list]:
    """The point x of ``layout`` in the layout whose block α is cut into blocks of sizes ``parts[α]``: a new
    block inherits its diagonal and off-diagonal value; two new blocks cut from the same old block carry its
    off-diagonal value, from different old blocks the old off-diagonal block's value. Cost O(r'²)."""
    owner = [a for a, sizes in enumerate(parts) for _ in sizes]
    new = Layout(tuple(s for part in parts for s in part))
    out: list = [None] * len(new.names)
    for a, A in enumerate(owner):
        out[new.d(a)] = x[layout.d(A)]
        if new.o(a) is not None:
            out[new.o(a)] = x[layout.o(A)]
        for b, B in enumerate(owner):
            if b != a:
                out[new.c(a, b)] = x[layout.o(A)] if A == B else x[layout.c(A, B)]
    return new, out


@dataclass
class Signs:
    """Certified (negative, positive) counts of a symmetric interval matrix, or None when not certified."""

    negative: int | None
    positive: int | None
    size: int
    Q: list[list[fmpq]] = field(default_factory=list)  # the congruence used (rows of the matrix)


def certified_signs(H: list[list[arb]]) -> Signs:
    """Inertia of every symmetric matrix in the interval matrix H: congruence B = Qᵀ H Q with float eigenvectors Q
    (exact as dyadics; QᵀQ checked nonsingular by Gershgorin), then Gershgorin discs of B. When every disc of B
    excludes 0, each connected union of discs holds as many eigenvalues as discs, so the signs of the centres
    give the inertia (Sylvester: the same as H's). Cost O(n³) ball operations (arb_mat)."""
    n = len(H)
    Hmid = np.array([[float(h.mid()) for h in row] for row in H])
    _, vectors = np.linalg.eigh((Hmid + Hmid.T) / 2)
    Qq = [[_q(x) for x in row] for row in vectors]
    Q = arb_mat([[arb(x) for x in row] for row in Qq])
    B = Q.transpose() * arb_mat(H) * Q
    G = Q.transpose() * Q

    def discs(M: arb_mat) -> list[tuple[arb, arb]]:
        return [(M[i, i], sum((abs(M[i, j]) for j in range(n) if j != i), arb(0))) for i in range(n)]

    if any(not (abs(c) > r) for c, r in discs(G)):
        return Signs(None, None, n)
    neg = pos = 0
    for c, r in discs(B):
        if c - r > 0:
            pos += 1
        elif c + r < 0:
            neg += 1
        else:
            return Signs(None, None, n)
    return Signs(neg, pos, n, Qq)


@dataclass
class Inertia:
    """The certified inertia of ∇²F at a certified critical point (None entries: not certified)."""

    method: str                              # "full" or "isotypic"
    negative: int | None
    zero_free: bool                          # no eigenvalue 0: the signs were all certified
    blocks: dict[str, int] = field(default_factory=dict)   # irrep -> negative eigenvalues of its block
    probes: list[dict] = field(default_factory=list)        # per probe: sizes, m_ρ(K), certified counts


def inertia(family: Family, k: int, box: Box, method: str = "auto") -> Inertia:
    """∇²F inertia at the certified point: "full" (the k²×k² Hessian) or "isotypic" (module docstring); "auto"
    takes the full Hessian for k ≤ FULL_HESSIAN_MAX_K and wherever the isotypic table does not apply."""
    table = isotypic_table(family.name)
    if table is None:  # no isotypic table for this layout: the full Hessian, for small k only
        if k > FULL_HESSIAN_MAX_K:
            return Inertia("none", None, False)
        with ctx.workprec(box.prec):
            return _full_inertia(box, k)
    irreps, probes, least = table
    with ctx.workprec(box.prec):
        if method == "full" or k < least or (method == "auto" and k <= FULL_HESSIAN_MAX_K):
            return _full_inertia(box, k)
        return _isotypic_inertia(box, k, irreps, probes)


def _full_inertia(box: Box, k: int) -> Inertia:
    singletons = tuple((1,) * s for s in box.layout.sizes)
    layout, x = refined(box.layout, box.balls(), singletons)
    signs = certified_signs(restricted.hessian(layout, x, ArbBackend(box.prec)))
    return Inertia("full", signs.negative, signs.negative is not None, {"all": signs.negative},
                   [{"sizes": list(layout.sizes), "parts": [list(p) for p in singletons], "fixed": [1],
                     "negative": signs.negative, "positive": signs.positive, "Q": signs.Q}])


def _isotypic_inertia(box: Box, k: int, irreps: Sequence[Irrep], probes: Sequence[Probe]) -> Inertia:
    records, counts = [], []
    for probe in probes:
        parts = [tuple(f(k) for f in part) for part in probe.parts]
        layout, x = refined(box.layout, box.balls(), parts)
        if sum(m * ir.block for m, ir in zip(probe.fixed, irreps, strict=True)) != len(layout.names):
            raise AssertionError(f"isotypic table inconsistent for {parts}")  # pragma: no cover
        signs = certified_signs(restricted.hessian(layout, x, ArbBackend(box.prec)))
        records.append({"sizes": list(layout.sizes), "parts": [list(p) for p in parts], "fixed": list(probe.fixed),
                        "negative": signs.negative, "positive": signs.positive, "Q": signs.Q})
        counts.append(signs.negative)
    if None in counts:
        return Inertia("isotypic", None, False, probes=records)
    solutions = [n for n in product(*(range(ir.block + 1) for ir in irreps))
                 if all(sum(m * v for m, v in zip(p.fixed, n, strict=True)) == c
                        for p, c in zip(probes, counts, strict=True))]
    if len(solutions) != 1:
        return Inertia("isotypic", None, True, probes=records)
    (neg,) = solutions
    blocks = {ir.name: v for ir, v in zip(irreps, neg, strict=True)}
    total = sum(ir.dim(k) * v for ir, v in zip(irreps, neg, strict=True))
    return Inertia("isotypic", total, True, blocks, records)


# -- one call per (family, k) ---------------------------------------------------------------------------------
@dataclass
class Critical:
    """A certified member of a family at integer k."""

    family: Family
    k: int
    box: Box
    inertia: Inertia

    @property
    def certified(self) -> bool:
        return self.box.certified and self.inertia.negative is not None


def critical(name: str, k: int) -> Critical:
    """Find (Newton + continuation in k), certify (Krawczyk) and classify (inertia) the family member at k."""
    fam = family(name)
    layout = fam.layout(k)
    try:
        x0 = newton(layout, fam.start(k)).x
    except Exception:  # the start formula is for moderate k: continue from there instead
        x0 = continue_in_k(fam, [k])[-1].result.x
    box = certify_point(layout, x0, k)
    return Critical(fam, k, box, inertia(fam, k, box) if box.certified else Inertia("none", None, False))


def certificate_inertia(c: Critical) -> Inertia:
    """The inertia as a certificate replays it: the isotypic probes wherever the table applies (≤ 18 parameters
    each, cheap to replay at any k), the full Hessian below that."""
    table = isotypic_table(c.family.name)
    if table is None:
        return inertia(c.family, c.k, c.box, "full")
    _, _, least = table
    return inertia(c.family, c.k, c.box, "isotypic" if c.k >= least else "full")


def irreps_of(c: Critical, method: str) -> list[dict]:
    """The blocks of the decomposition the certificate states: name, block size, dimension at this k."""
    if method == "full":
        return [{"name": "all", "block": c.k * c.k, "dim": 1}]
    return [{"name": ir.name, "block": ir.block, "dim": ir.dim(c.k)} for ir in isotypic_table(c.family.name)[0]]


# -- the real k at which a family turns from saddle into minimum ---------------------------------------------
@dataclass
class RealK:
    """A certified critical point of the restricted loss at a real (dyadic) k, with the certified signs of every
    probe's compressed Hessian (``inertia.probes``; ``inertia.blocks`` their reading by the integer-k table)."""

    k: fmpq
    box: Box
    inertia: Inertia

    @property
    def negative(self) -> list[int | None]:
        return [p["negative"] for p in self.inertia.probes]


@dataclass
class Threshold:
    """A bracket [a, b] of the threshold k* (saddle at the integer below, minimum at the integer above): ``branch`` is a
    Krawczyk box certified for every k in [a, b] at once (one critical point x(k) in it for each k, so a continuous
    branch by the implicit function theorem), ``below`` and ``above`` the points x(a), x(b) in boxes inside it, with
    a probe's compressed Hessian certified to have a negative eigenvalue at a and every probe's certified positive
    definite at b. Hence some probe's compressed Hessian is singular at a k* in (a, b)."""

    family: Family
    bracket: tuple[fmpq, fmpq]
    below: RealK
    above: RealK
    branch: Box


def _exact_layout(fam: Family, k: fmpq) -> Layout:
    """The family's layout at the dyadic k, its first block k − (the others) exactly (floats only when exact)."""
    if fmpq(*float(k).as_integer_ratio()) != k:
        raise ValueError(f"k = {k} is not a double")
    return fam.layout(float(k))


def at_real_k(name: str, k: fmpq, x0: Sequence[float] | None = None) -> tuple[RealK | None, list]:
    """The family's critical point at a real k, certified (Krawczyk), with the certified signs of every probe of
    its isotypic table (the restricted loss and its compressions are analytic in the block sizes); None if not
    certified. Also returns the float point, to start the next call from. Cost: that of ``critical`` at one k."""
    fam = family(name)
    layout = _exact_layout(fam, k)
    x = newton(layout, fam.start(float(k)) if x0 is None else x0).x
    box = certify_point(layout, x, float(k))
    if not box.certified:
        return None, x
    irreps, probes, _ = isotypic_table(name)
    with ctx.workprec(box.prec):
        result = _isotypic_inertia(box, float(k), irreps, probes)  # (its total, Σ dim ρ · neg, means nothing here)
    if None in [p["negative"] for p in result.probes]:
        return None, x
    return RealK(k, box, result), x


def branch_box(name: str, a: fmpq, b: fmpq, ends: Sequence[Box]) -> Box | None:
    """Krawczyk for every k in [a, b] at once (``_krawczyk`` with ``over_k``): centre the Newton point at the
    midpoint, radius the smallest power of 2 that holds both end boxes, then up to 32 times that. None when no
    radius is certified. Cost: a few Krawczyk tests, O(P³) ball operations each."""
    fam = family(name)
    mid = (a + b) / 2
    layout = _exact_layout(fam, mid)
    prec = precision(float(b))
    center = refine(layout, [float(v) for v in ends[0].center], prec)
    reach = max(abs(c - e) + box.radius for box in ends for c, e in zip(center, box.center, strict=True))
    exponent = math.ceil(math.log2(float(reach))) + 1
    with ctx.workprec(prec):
        for e in range(exponent, exponent + 6):
            box = _krawczyk(layout, center, fmpq(2) ** e, prec, over_k=(b - a) / 2)
            if box.certified:
                return box
    return None


def crossing(name: str, lo: int, hi: int, steps: int = 24, more: int = 20) -> Threshold | None:
    """Bisection on exact dyadic k between the integers lo and hi: a bracket [a, b] of width (hi − lo)/2^steps (or
    narrower, up to ``more`` further halvings, until the branch box is certified) where the family's branch goes
    from a probe with a certified negative eigenvalue (at a) to every probe certified positive definite (at b)
    (``Threshold``). None when an end is not certified as required, or the branch never is. Cost: one certified
    point per halving, and a branch box from ``steps`` halvings on."""
    below, x_lo = at_real_k(name, fmpq(lo))
    above, _ = at_real_k(name, fmpq(hi))
    if below is None or above is None or not any(below.negative) or any(above.negative):
        return None
    for step in range(steps + more):
        mid = (below.k + above.k) / 2
        point, x = at_real_k(name, mid, x_lo)
        if point is None:
            return None
        if any(point.negative):
            below, x_lo = point, x
        else:
            above = point
        if step + 1 >= steps:
            branch = branch_box(name, below.k, above.k, [below.box, above.box])
            if branch is not None:
                return Threshold(family(name), (below.k, above.k), below, above, branch)
    return None


def threshold(name: str, limit: int = 64, steps: int = 24) -> tuple[int | None, Threshold | None]:
    """The least integer k ≤ limit at which the family is a certified local minimum and at k − 1 a certified saddle
    (searched from the least k of its isotypic table + 1), and the bracket of the real k* in [k − 1, k]
    (``crossing``); (None, None) when there is none, (k, None) when the bracket is not certified. Cost: one
    certified point per k tried, then ``crossing``."""
    table = isotypic_table(name)
    if table is None:
        return None, None
    k = max(table[2] + 1, 5)
    below = critical(name, k - 1).inertia.negative
    while k <= limit:
        at = critical(name, k).inertia.negative
        if below and at == 0:
            return k, crossing(name, k - 1, k, steps)
        below, k = at, k + 1
    return None, None

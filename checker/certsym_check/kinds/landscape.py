"""Replay of landscape certificates (kinds critical_point and hessian_inertia) in mpmath interval arithmetic.

Independent of certsym's producer: the restricted loss is written here again from MATH.md, Part II, and
differentiated by second-order forward jets over intervals. Teacher V = I_k, x ~ N(0, I),
    κ(g; N) = (S + (π − θ) g) / (2π),  S = √(N − g²),  θ = atan2(S, g)   (g = w·v, N = ‖w‖²‖v‖²),
with the partials κ_g = (π − θ)/(2π), κ_N = S/(4πN), κ_gg = 1/(2πS), κ_gN = −g/(4πNS), κ_NN = (2g² − N)/(8πN²S).
For blocks α of sizes p_α with parameters d_α, o_α (p_α > 1) and c_αβ (α ≠ β):
    n_α = d_α² + (p_α − 1) o_α² + Σ_{γ≠α} p_γ c_αγ²,   s_α = 2 d_α o_α + (p_α − 2) o_α² + Σ_{γ≠α} p_γ c_αγ²,
    m_αβ = c_βα (d_α + (p_α − 1) o_α) + c_αβ (d_β + (p_β − 1) o_β) + Σ_{γ≠α,β} p_γ c_αγ c_βγ,
    F = k/4 + k(k−1)/(4π) + Σ_α p_α n_α/4 + Σ_α p_α(p_α−1)/2 κ(s_α; n_α²) + Σ_{α<β} p_α p_β κ(m_αβ; n_α n_β)
        − Σ_α [p_α κ(d_α; n_α) + p_α(p_α−1) κ(o_α; n_α) + Σ_{β≠α} p_α p_β κ(c_αβ; n_α)].
critical_point: the Krawczyk operator K = −C g(x̃) + (I − C H(X))(X − x̃) must lie in the open box of radius r
(then the restricted gradient has exactly one zero in X, a critical point of F by symmetric criticality), and the
loss enclosure F(x̃) ± r Σ_i sup_X |∂_i F| must lie in the claimed interval.
hessian_inertia: for each probe layout, Qᵀ H(X) Q (Q from the certificate, QᵀQ nonsingular by Gershgorin) has
Gershgorin discs excluding 0; the negative counts then fix the negative eigenvalues of each isotypic block, and
the total is Σ_ρ dim ρ · neg(B_ρ). The blocks, dimensions and multiplicities m_ρ(K) are the checker's own table
(``decomposition``); a certificate must state exactly that table (or the full Hessian).
Cost: O(L P²) interval operations per jet evaluation (L the length of the formula, O(r³)).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction

from mpmath import iv, mp, mpf

from certsym_check.core import Report, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational

PREC = 320
MAX_K = 10**9
MAX_PARAMS = 40


class Jet:
    """A value with its gradient and Hessian with respect to P variables, over mpmath intervals."""
    __slots__ = ("v", "g", "h")

    def __init__(self, v, g, h):
        self.v, self.g, self.h = v, g, h

    @classmethod
    def const(cls, v, P: int) -> Jet:
        zero = iv.mpf(0)
        return cls(iv.mpf(v) if not isinstance(v, type(zero)) else v, [zero] * P,
                   [[zero] * P for _ in range(P)])

    def __add__(self, o):
        o = o if isinstance(o, Jet) else Jet.const(o, len(self.g))
        return Jet(self.v + o.v, [a + b for a, b in zip(self.g, o.g, strict=True)],
                   [[a + b for a, b in zip(r, s, strict=True)] for r, s in zip(self.h, o.h, strict=True)])

    __radd__ = __add__

    def __neg__(self):
        return Jet(-self.v, [-a for a in self.g], [[-a for a in r] for r in self.h])

    def __sub__(self, o):
        return self + (-o if isinstance(o, Jet) else -iv.mpf(o))

    def __mul__(self, o):
        if not isinstance(o, Jet):
            o = iv.mpf(o)
            return Jet(self.v * o, [a * o for a in self.g], [[a * o for a in r] for r in self.h])
        P = len(self.g)
        return Jet(self.v * o.v, [self.v * b + o.v * a for a, b in zip(self.g, o.g, strict=True)],
                   [[self.v * o.h[i][j] + o.v * self.h[i][j] + self.g[i] * o.g[j] + self.g[j] * o.g[i]
                     for j in range(P)] for i in range(P)])

    __rmul__ = __mul__


@contextmanager
def working_precision():
    """mpmath's real and interval contexts at PREC bits, restored afterwards."""
    saved = mp.prec, iv.prec
    mp.prec = iv.prec = PREC
    try:
        yield
    finally:
        mp.prec, iv.prec = saved


def nonnegative_part(x):
    """The part of an interval that is ≥ 0 (the exact value is known to be ≥ 0)."""
    if x.b < 0:
        raise Reject("landscape: a squared sine is certainly negative")
    return iv.mpf([max(x.a, mpf(0)), x.b])


def kappa_jet(g: Jet, N: Jet) -> Jet:
    """κ(g; N) as a jet, from its partials (module docstring)."""
    pi = iv.pi
    S = iv.sqrt(nonnegative_part(N.v - g.v * g.v))
    if S.a <= 0:
        raise Reject("landscape: two vectors may be parallel (S = 0): κ is not twice differentiable there")
    theta = iv.atan2(S, g.v)
    kg, kN = (pi - theta) / (2 * pi), S / (4 * pi * N.v)
    kgg, kgN = 1 / (2 * pi * S), -g.v / (4 * pi * N.v * S)
    kNN = (2 * g.v * g.v - N.v) / (8 * pi * N.v * N.v * S)
    P = len(g.g)
    return Jet((S + (pi - theta) * g.v) / (2 * pi),
               [kg * a + kN * b for a, b in zip(g.g, N.g, strict=True)],
               [[kg * g.h[i][j] + kN * N.h[i][j] + kgg * g.g[i] * g.g[j] + kgN * (g.g[i] * N.g[j] + N.g[i] * g.g[j])
                 + kNN * N.g[i] * N.g[j] for j in range(P)] for i in range(P)])


def names(sizes: list[int]) -> list[str]:
    """The parameter order: d_α, o_α (p_α > 1) per block, then c_αβ in lexicographic order of (α, β)."""
    r = len(sizes)
    out = []
    for a, p in enumerate(sizes, start=1):
        out += [f"d{a}"] + ([f"o{a}"] if p > 1 else [])
    sep = "" if r < 10 else ","
    return out + [f"c{a + 1}{sep}{b + 1}" for a in range(r) for b in range(r) if a != b]


def loss_jet(sizes: list, x: list, k=None) -> Jet:
    """F(W(x)) as a jet in the parameters (intervals x). With ``k`` (an interval), k is one more variable (the last):
    the first block's size is k − (the others), the jet then carries ∂F/∂k and the mixed partials ∂²F/∂x∂k, and
    ``sizes`` gives only the structure (which blocks have an off-diagonal)."""
    r = len(sizes)
    P = len(x) + (k is not None)
    idx = {n: i for i, n in enumerate(names(sizes))}
    sep = "" if r < 10 else ","
    X = []
    for i, v in enumerate(x):
        jet = Jet.const(v, P)
        jet.g[i] = iv.mpf(1)
        X.append(jet)
    d = [X[idx[f"d{a + 1}"]] for a in range(r)]
    o = [X[idx[f"o{a + 1}"]] if sizes[a] > 1 else None for a in range(r)]
    c = [[X[idx[f"c{a + 1}{sep}{b + 1}"]] if a != b else None for b in range(r)] for a in range(r)]
    half, quarter = iv.mpf(0.5), iv.mpf(0.25)
    if k is None:
        p = [enclose(Fraction(s)) for s in sizes]
        K = sum(p, iv.mpf(0))
        F = Jet.const(K * quarter + K * (K - 1) / (4 * iv.pi), P)
    else:
        K = Jet.const(k, P)
        K.g[P - 1] = iv.mpf(1)
        p = [K - sum((enclose(Fraction(s)) for s in sizes[1:]), iv.mpf(0)), *(enclose(Fraction(s))
                                                                                 for s in sizes[1:])]
        F = K * quarter + K * (K - 1) * (1 / (4 * iv.pi))
    def both(u, v):  # p_α p_β with a jet first (an interval times a jet is not defined)
        return v * u if isinstance(v, Jet) else u * v

    zero = Jet.const(0, P)
    cross = [sum((c[a][b] * c[a][b] * p[b] for b in range(r) if b != a), zero) for a in range(r)]
    n = [d[a] * d[a] + cross[a] + (o[a] * o[a] * (p[a] - 1) if o[a] is not None else zero) for a in range(r)]
    for a in range(r):
        F = F + n[a] * (p[a] * quarter) - kappa_jet(d[a], n[a]) * p[a]
        if o[a] is not None:
            s = d[a] * o[a] * 2 + o[a] * o[a] * (p[a] - 2) + cross[a]
            F = F + kappa_jet(s, n[a] * n[a]) * (p[a] * (p[a] - 1) * half) - kappa_jet(o[a], n[a]) * (p[a] * (p[a] - 1))
        for b in range(r):
            if b == a:
                continue
            F = F - kappa_jet(c[a][b], n[a]) * both(p[a], p[b])
            if b > a:
                row_a = d[a] + (o[a] * (p[a] - 1) if o[a] is not None else zero)
                row_b = d[b] + (o[b] * (p[b] - 1) if o[b] is not None else zero)
                m = c[b][a] * row_a + c[a][b] * row_b + sum(
                    (c[a][g] * c[b][g] * p[g] for g in range(r) if g not in (a, b)), zero)
                F = F + kappa_jet(m, n[a] * n[b]) * both(p[a], p[b])
    return F


def enclose(q: Fraction, rad: Fraction = Fraction(0)):
    """An interval enclosing [q − rad, q + rad] (outward rounding: integer conversions are exact, and
    interval division and the hull round outward)."""
    lo, hi = q - rad, q + rad
    lo_i = iv.mpf(lo.numerator) / iv.mpf(lo.denominator)
    if not rad:
        return lo_i
    hi_i = iv.mpf(hi.numerator) / iv.mpf(hi.denominator)
    return iv.mpf([lo_i.a, hi_i.b])


def parameter_count(sizes: list[int]) -> int:
    """len(names(sizes)) without building the names: r diagonals, one off-diagonal per block of size > 1 and
    r(r − 1) off-diagonal blocks."""
    r = len(sizes)
    return r + sum(1 for p in sizes if p > 1) + r * (r - 1)


def _layout(sizes: object, where: str) -> list[int]:
    if not isinstance(sizes, list) or not sizes or len(sizes) > MAX_PARAMS or any(
            type(s) is not int or s < 1 for s in sizes) or sum(sizes) > MAX_K:
        raise Reject(f"{where}: block sizes must be a nonempty list of at most {MAX_PARAMS} positive integers "
                     f"(k ≤ {MAX_K})")
    if parameter_count(sizes) > MAX_PARAMS:
        raise Reject(f"{where}: more than {MAX_PARAMS} parameters")
    return sizes


def family_of(sizes: list[int], X: list) -> str:
    """The family a certified box belongs to, by the checker's own definition (MATH.md, Part II): a block is
    good when its diagonal d_α > 0 on the whole box and negative when d_α < 0 there.
    (k) negative: negative-diagonal. (k − M, M), the first block good and the second negative: one-misfit
    (M = 1), two-misfit (M = 2), misfit-M otherwise. (k − 1, 1), the first negative and the second good:
    good-plus-negative. Any other layout or sign pattern: "Δ(S_p1 × … × S_pr)" with its block sizes."""
    order = names(sizes)
    signs = []
    for a in range(1, len(sizes) + 1):
        d = X[order.index(f"d{a}")]
        signs.append(1 if d.a > 0 else -1 if d.b < 0 else 0)
    if len(sizes) == 1 and signs == [-1]:
        return "negative-diagonal"
    if len(sizes) == 2 and signs == [1, -1]:
        return {1: "one-misfit", 2: "two-misfit"}.get(sizes[1], f"misfit-{sizes[1]}")
    if len(sizes) == 2 and signs == [-1, 1] and sizes[1] == 1:
        return "good-plus-negative"
    return "Δ(" + " × ".join(f"S_{p}" for p in sizes) + ")"


def decimals(q: Fraction, digits: int = 12) -> str:
    """q to ``digits`` significant digits, for the report (any size: no float overflow, no 4300-digit cap)."""
    if q == 0:
        return "0"
    size = q.numerator.bit_length() - q.denominator.bit_length()
    if abs(size) < 1000:
        return f"{float(q):.{digits}g}"
    return f"{'-' if q < 0 else ''}2^{size} (about)"


def _exact(q: Fraction) -> str | None:
    """q exactly, when it is short enough to print (under 200 characters)."""
    if q.numerator.bit_length() + q.denominator.bit_length() > 600:
        return None
    text = str(q)
    return text if len(text) < 200 else None


def check_box(box: dict, rep: Report) -> tuple[list[int], list, Fraction]:
    """Krawczyk and the loss enclosure for a critical_point proof; returns (sizes, box intervals, radius)."""
    b = keys(box, {"family", "sizes", "names", "center", "radius", "preconditioner", "loss", "statement"}, "proof")
    if b["statement"] != "Krawczyk" or not isinstance(b["family"], str):
        raise Reject("proof must cite 'Krawczyk' and name its family")
    sizes = _layout(b["sizes"], "proof.sizes")
    if b["names"] != names(sizes):
        raise Reject("proof.names is not the parameter order of the layout")
    P = len(b["names"])
    center = [rational(v) for v in seq(b["center"], P, "proof.center")]
    r = rational(b["radius"])
    if r <= 0:
        raise Reject("proof.radius must be positive")
    C = [[rational(v) for v in seq(row, P, "proof.preconditioner")] for row in seq(b["preconditioner"], P,
                                                                                       "proof.preconditioner")]
    with working_precision():
        X = [enclose(q, r) for q in center]
        lo, hi = krawczyk(loss_jet(sizes, [enclose(q) for q in center]), loss_jet(sizes, X), C, r,
                          seq(b["loss"], 2, "proof.loss"))
        family = family_of(sizes, X)
    if b["family"] != family:
        raise Reject(f"proof.family is {b['family'][:40]!r}, but the certified point belongs to {family!r} (block "
                     f"sizes {sizes} and the signs of the diagonals on the box)")
    exact = (_exact(lo), _exact(hi))
    rep.facts.append(f"family {family}: k = {sum(sizes)}, block sizes {sizes}, F in [{decimals(lo)}, {decimals(hi)}]"
                     + (f" (exactly [{exact[0]}, {exact[1]}])" if None not in exact else ""))
    rep.checks["Krawczyk: a unique critical point in the box"] += 1
    rep.checks["loss enclosure"] += 1
    return sizes, X, r


def krawczyk(at: Jet, over: Jet, C: list[list[Fraction]], r: Fraction, claim: list) -> tuple[Fraction, Fraction]:
    """Reject unless the Krawczyk operator −C g(x̃) + (I − C H(X))(X − x̃) lies inside the open box of radius r
    (``at``: the jet at the centre x̃, ``over``: on the box X) and the loss enclosure F(x̃) ± r Σ_i sup_X |∂_i F|
    lies in the claimed [lo, hi]; returns (lo, hi). Cost: O(P³) interval operations."""
    contracts(at.g, over.h, C, r)
    slope = sum((abs(g) for g in over.g), iv.mpf(0)) * enclose(r)
    enclosure = at.v + iv.mpf([-slope.b, slope.b])
    lo, hi = (rational(v) for v in claim)
    if not (enclose(lo).b <= enclosure.a and enclosure.b <= enclose(hi).a):
        raise Reject("the claimed loss interval does not contain the certified enclosure")
    return lo, hi


def contracts(g: list, H: list, C: list[list[Fraction]], r: Fraction) -> None:
    """Reject unless −C g + (I − C H)·[−r, r]^P lies inside the open box of radius r (g an enclosure of the gradient
    at the centre, H of the Hessian over the box: Krawczyk's test). Cost: O(P³) interval operations."""
    P = len(C)
    Ci = [[enclose(v) for v in row] for row in C]
    rad = enclose(Fraction(0), r)
    for i in range(P):
        Kc = -sum((Ci[i][j] * g[j] for j in range(P)), iv.mpf(0))
        for j in range(P):
            M = (1 if i == j else 0) - sum((Ci[i][q] * H[q][j] for q in range(P)), iv.mpf(0))
            Kc += M * rad
        if not (abs(Kc).b < enclose(r).a):
            raise Reject(f"Krawczyk: component {i} of K(X) is not inside the box")


def refined_box(sizes: list[int], X: list, parts: list[list[int]]) -> tuple[list[int], list]:
    """The box in the layout whose block α is cut into blocks of sizes parts[α] (same rule as the producer)."""
    if not isinstance(parts, list) or len(parts) != len(sizes) or any(
            not isinstance(part, list) or len(part) > MAX_PARAMS
            or any(type(x) not in (int, Fraction) or x < 1 for x in part)
            or sum(part) != s for part, s in zip(parts, sizes, strict=True)):
        raise Reject("a probe does not refine the family's blocks")
    if parameter_count([x for part in parts for x in part]) > MAX_PARAMS:
        raise Reject(f"a probe has more than {MAX_PARAMS} parameters")
    idx = {n: i for i, n in enumerate(names(sizes))}
    sep = "" if len(sizes) < 10 else ","
    owner = [a for a, part in enumerate(parts) for _ in part]
    new = [s for part in parts for s in part]
    nsep = "" if len(new) < 10 else ","
    out = []
    for name in names(new):
        if name[0] in "do":
            out.append(X[idx[f"{name[0]}{owner[int(name[1:]) - 1] + 1}"]])
        else:
            a, b = (int(t) - 1 for t in (name[1:].split(",") if nsep else (name[1], name[2])))
            A, B = owner[a], owner[b]
            out.append(X[idx[f"o{A + 1}"]] if A == B else X[idx[f"c{A + 1}{sep}{B + 1}"]])
    return new, out


def negative_count(H: list, Q: list) -> int:
    """Gershgorin on QᵀQ (nonsingular) and on Qᵀ H Q (every disc off 0): the number of negative eigenvalues."""
    n = len(H)

    def mul(A, B):
        return [[sum((A[i][t] * B[t][j] for t in range(n)), iv.mpf(0)) for j in range(n)] for i in range(n)]

    Qt = [list(col) for col in zip(*Q, strict=True)]
    for M, what in ((mul(Qt, Q), "Q^T Q"), (mul(mul(Qt, H), Q), "Q^T H Q")):
        neg = 0
        for i in range(n):
            radius = sum((abs(M[i][j]) for j in range(n) if j != i), iv.mpf(0))
            if (M[i][i] - radius).a > 0:
                continue
            if (M[i][i] + radius).b < 0 and what != "Q^T Q":
                neg += 1
                continue
            raise Reject(f"a Gershgorin disc of {what} contains 0: the signs are not certified")
    return neg


def decomposition(sizes: list[int]) -> tuple[list[dict], list[dict]] | None:
    """The checker's own table (not the certificate's): the isotypic blocks of M(k, k) under the isotropy
    Δ(S_p1 × … × S_pr) of the layout, and the probes (Young subgroups K, as refinements of the blocks) with
    m_ρ(K) = dim ρ^K. Representation theory of the symmetric group (branching rule), for the layouts certsym's
    families use; None for any other layout, or k too small for the table (the full Hessian is then the only
    decomposition, and only for k² ≤ 40):
    - (k): R^k = 1 ⊕ std, so M = 2·1 ⊕ 3·[k−1,1] ⊕ [k−2,2] ⊕ [k−2,1,1]  (k ≥ 4);
    - (k−1, 1): R^k = 2·1 ⊕ std_{k−1}, so M = 5·1 ⊕ 5·[k−2,1] ⊕ [k−3,2] ⊕ [k−3,1,1]  (k ≥ 5);
    - (k−2, 2): R^k = 2·(1⊗1) ⊕ std⊗1 ⊕ 1⊗sgn, so M = 6·(1⊗1) ⊕ 5·(std⊗1) ⊕ 4·(1⊗sgn) ⊕ 2·(std⊗sgn)
      ⊕ [k−4,2]⊗1 ⊕ [k−4,1,1]⊗1  (k ≥ 6);
    - (k−M, M), M ≥ 3, k − M ≥ 4: ``_two_blocks``.
    Each entry is (name, block size, dimension); each probe is (parts, fixed)."""
    k = sum(sizes)

    def table(irreps, probes):
        return ([{"name": n, "block": b, "dim": d} for n, b, d in irreps],
                [{"parts": parts, "fixed": fixed} for parts, fixed in probes])

    if len(sizes) == 1 and k >= 4:
        return table([("trivial", 2, 1), ("[k-1,1]", 3, k - 1), ("[k-2,2]", 1, k * (k - 3) // 2),
                      ("[k-2,1,1]", 1, (k - 1) * (k - 2) // 2)],
                     [([[k]], [1, 0, 0, 0]), ([[k - 1, 1]], [1, 1, 0, 0]), ([[k - 2, 1, 1]], [1, 2, 1, 1]),
                      ([[k - 2, 2]], [1, 1, 1, 0])])
    if len(sizes) == 2 and sizes[1] == 1 and k >= 5:
        return table([("trivial", 5, 1), ("[k-2,1]", 5, k - 2), ("[k-3,2]", 1, (k - 1) * (k - 4) // 2),
                      ("[k-3,1,1]", 1, (k - 2) * (k - 3) // 2)],
                     [([[k - 1], [1]], [1, 0, 0, 0]), ([[k - 2, 1], [1]], [1, 1, 0, 0]),
                      ([[k - 3, 1, 1], [1]], [1, 2, 1, 1]), ([[k - 3, 2], [1]], [1, 1, 1, 0])])
    if len(sizes) == 2 and sizes[1] == 2 and k >= 6:
        return table([("trivial", 6, 1), ("std x 1", 5, k - 3), ("1 x sgn", 4, 1), ("std x sgn", 2, k - 3),
                      ("[k-4,2] x 1", 1, (k - 2) * (k - 5) // 2), ("[k-4,1,1] x 1", 1, (k - 3) * (k - 4) // 2)],
                     [([[k - 2], [2]], [1, 0, 0, 0, 0, 0]), ([[k - 3, 1], [2]], [1, 1, 0, 0, 0, 0]),
                      ([[k - 2], [1, 1]], [1, 0, 1, 0, 0, 0]), ([[k - 3, 1], [1, 1]], [1, 1, 1, 1, 0, 0]),
                      ([[k - 4, 1, 1], [2]], [1, 2, 0, 0, 1, 1]), ([[k - 4, 2], [2]], [1, 1, 0, 0, 1, 0])])
    if len(sizes) == 2 and sizes[1] >= 3 and sizes[0] >= 4:
        return table(*_two_blocks(sizes[0], sizes[1]))
    return None  # (the full Hessian, ``full_decomposition``, only where the caller allows it: k² ≤ 40)


# dim ρ^{S_λ} (Kostka numbers) for ρ, λ ∈ {[n], [n−1,1], [n−2,2], [n−2,1,1]}
_KOSTKA = ((1, 1, 1, 1), (0, 1, 1, 2), (0, 0, 1, 1), (0, 0, 0, 1))


def _two_blocks(p: int, M: int) -> tuple[list, list]:
    """Δ(S_p × S_M), M ≥ 3, p ≥ 4: R^k = 2·(1⊗1) ⊕ std⊗1 ⊕ 1⊗std, and std⊗std of S_n is 1 ⊕ std ⊕ [n−2,2] ⊕
    [n−2,1,1], so M(k, k) = 6·(1⊗1) ⊕ 5·(std⊗1) ⊕ 5·(1⊗std) ⊕ 2·(std⊗std) ⊕ [p−2,2]⊗1 ⊕ [p−2,1,1]⊗1 ⊕ 1⊗[M−2,2]
    ⊕ 1⊗[M−2,1,1] (no [1,2] when M = 3). Probes S_λ × S_μ, with dim (ρ⊗σ)^{S_λ×S_μ} = K_ρλ K_σμ."""
    irreps = [((0, 0), "trivial", 6, 1), ((1, 0), "std x 1", 5, p - 1), ((0, 1), "1 x std", 5, M - 1),
              ((1, 1), "std x std", 2, (p - 1) * (M - 1)), ((2, 0), "[p-2,2] x 1", 1, p * (p - 3) // 2),
              ((3, 0), "[p-2,1,1] x 1", 1, (p - 1) * (p - 2) // 2)]
    if M >= 4:
        irreps.append(((0, 2), "1 x [M-2,2]", 1, M * (M - 3) // 2))
    irreps.append(((0, 3), "1 x [M-2,1,1]", 1, (M - 1) * (M - 2) // 2))

    def parts(lam: int, n: int) -> list[int]:
        return [[n], [n - 1, 1], [n - 2, 2], [n - 2, 1, 1]][lam]

    pairs = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0)] + ([(0, 2)] if M >= 4 else []) + [(0, 3)]
    probes = [([parts(a, p), parts(b, M)], [_KOSTKA[r][a] * _KOSTKA[t][b] for (r, t), *_ in irreps]) for a, b in pairs]
    return [(name, block, dim) for _, name, block, dim in irreps], probes


def _strict_ints(x: object) -> bool:
    """Every number inside is a JSON integer (not a bool, not a float that compares equal)."""
    if isinstance(x, dict):
        return all(_strict_ints(v) for v in x.values())
    if isinstance(x, list | tuple):
        return all(_strict_ints(v) for v in x)
    return type(x) in (int, str)


def full_decomposition(sizes: list[int]) -> tuple[list[dict], list[dict]]:
    """No symmetry used: one block of size k² (the full Hessian), one probe cutting every block into singletons."""
    k = sum(sizes)
    return [{"name": "all", "block": k * k, "dim": 1}], [{"parts": [[1] * p for p in sizes], "fixed": [1]}]


def check_inertia(proof: dict, rep: Report) -> None:
    """hessian_inertia: the certificate supplies only the congruences Q; the decomposition is the checker's
    (``decomposition``, or the full Hessian), which the certificate must state exactly."""
    p = keys(proof, {"critical_point", "irreps", "probes", "negative", "statement"}, "proof")
    if p["statement"] != "isotypic decomposition and Sylvester's law of inertia":
        raise Reject("proof must cite 'isotypic decomposition and Sylvester's law of inertia'")
    sizes, X, _ = check_box(p["critical_point"], rep)
    probes = [keys(pr, {"parts", "fixed", "Q"}, f"proof.probes[{s}]")
              for s, pr in enumerate(seq(p["probes"], None, "proof.probes"))]
    stated = (p["irreps"], [{"parts": pr["parts"], "fixed": pr["fixed"]} for pr in probes])
    if not _strict_ints(stated) or type(p["negative"]) is not int:
        raise Reject("block sizes, dimensions, parts, fixed dimensions and the count must be JSON integers")
    allowed = [t for t in (decomposition(sizes),) if t is not None]
    if sum(sizes) ** 2 <= MAX_PARAMS:  # the full Hessian is only replayed for small k
        allowed.append(full_decomposition(sizes))
    if stated not in allowed:
        raise Reject("proof.irreps and the probes' parts and fixed dimensions must be the checker's isotypic "
                     "table for this layout, or the full Hessian")
    irreps = p["irreps"]
    counts = []
    with working_precision():
        for s, pr in enumerate(probes):
            w = f"proof.probes[{s}]"
            new, Y = refined_box(sizes, X, pr["parts"])
            P = len(Y)
            if P > MAX_PARAMS:
                raise Reject(f"{w}: more than {MAX_PARAMS} parameters")
            Q = [[enclose(rational(v)) for v in seq(row, P, w)] for row in seq(pr["Q"], P, w)]
            counts.append(negative_count(loss_jet(new, Y).h, Q))
            rep.checks["certified signs of a compressed Hessian"] += 1
    negatives = solve_isotypic(counts, [pr["fixed"] for pr in probes], [ir["block"] for ir in irreps])
    total = sum(v * ir["dim"] for v, ir in zip(negatives, irreps, strict=True))
    if total != p["negative"]:
        raise Reject(f"the Hessian has {total} negative eigenvalues, the certificate says {p['negative']!r}")
    k = sum(sizes)
    kind = "a local minimum" if total == 0 else f"a saddle of index {total}"
    rep.facts.append(f"Hessian: {total} negative and {k * k - total} positive eigenvalues of {k * k}, none zero: "
                     f"{kind}")
    rep.checks["isotypic decomposition and Sylvester's law of inertia"] += 1


def solve_isotypic(counts: list[int], rows: list, blocks: list[int]) -> list[int]:
    """The unique vector 0 ≤ n_ρ ≤ block_ρ with Σ_ρ m_ρ(K) n_ρ = counts[K] for every probe (or reject)."""
    if math.prod(b + 1 for b in blocks) > 10**6:
        raise Reject("too many isotypic blocks")
    solutions = [[]]
    for b in blocks:
        solutions = [s + [v] for s in solutions for v in range(b + 1)]
        if len(solutions) > 10**6:
            raise Reject("too many isotypic blocks")
    good = [s for s in solutions if all(sum(m * v for m, v in zip(row, s, strict=True)) == c
                                        for row, c in zip(rows, counts, strict=True))]
    if len(good) != 1:
        raise Reject("the probes do not determine the negative eigenvalues of each block")
    return good[0]


def check_critical_point(F, nets: list, proof: object, rep: Report) -> None:
    """``critical_point``: the Krawczyk box (``check_box``). The kind has no inputs (``F`` and ``nets`` unused)."""
    check_box(proof, rep)


def check_hessian_inertia(F, nets: list, proof: object, rep: Report) -> None:
    """``hessian_inertia``: the box and the inertia probes (``check_inertia``). The kind has no inputs."""
    check_inertia(proof, rep)



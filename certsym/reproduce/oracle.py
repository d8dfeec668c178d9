"""Outside oracles: exact decisions that share no decision code with certsym.

- m = 1: a univariate piecewise-linear function is determined by its values at its breakpoints and at
  one point beyond each end (``same_function_m1``). Cost: O(n log n) evaluations of O(n) each.
- any m: ``same_function`` restricts ρ(f) − ρ(g) to the hyperplanes of its arrangement, recursively,
  down to m = 1 (``is_zero_function``).
- ``orbit_key``: a complete invariant of H_n-orbits; ``identifiable_by_definition``: MATH.md's decision
  of identifiability (Theorem 1 and the antiparallel-rows decision), re-implemented by brute force with
  sympy ranks; ``zero_factors``: the subsets F with Σ_F v_i a_i^T = 0, by enumeration;
  ``grid_networks`` / ``fibre_in_grid``: brute-force fibres on finite grids of parameters.

It uses only exact evaluation of ρ(θ), exact field arithmetic (certsym.numbers) and sympy: no
reduction, no kink invariants, no canonical forms, so it can check the decision procedures of certsym
from the outside.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import cache

import sympy
from flint import fmpq
from sympy.polys.matrices import DomainMatrix

from certsym.core.network import Network
from certsym.numbers import QQ, Field, Scalar, parse_expression


def breakpoints(net: Network) -> list[Scalar]:
    """The points t = −b_i / a_i where a neuron of a univariate network may kink."""
    if net.m != 1:
        raise ValueError("breakpoints are defined for m = 1 only")
    return [-bi / row[0] for row, bi in zip(net.A, net.b, strict=True) if row[0] != 0]


def probe_points(*nets: Network) -> list[Scalar]:
    """Sorted breakpoints of all networks plus one point left and one right of them all.

    Two univariate PL functions whose breakpoints lie in this set agree everywhere iff they
    agree at these points: on each bounded piece both are affine and agree at its ends, and on
    each unbounded piece they agree at two points.
    """
    pts = sorted(set(t for net in nets for t in breakpoints(net)))
    if not pts:
        field = nets[0].field
        return [field.zero, field.one]
    return [pts[0] - 1, *pts, pts[-1] + 1]


def same_function_m1(
    f: Network, g: Network | Callable[[Scalar], Sequence[Scalar]]
) -> tuple[bool, int]:
    """Decide f = g on R for m = 1 (g a network, or an affine map given as a callable).

    Returns (verdict, number of points evaluated).
    """
    nets = [f] + ([g] if isinstance(g, Network) else [])
    pts = probe_points(*nets)
    other = g.evaluate if isinstance(g, Network) else (lambda x: list(g(x[0])))
    return all(f.evaluate([t]) == other([t]) for t in pts), len(pts)


# ---------------------------------------------------------------------------------------------------
# Outside oracles for any m, k. Everything below uses only exact evaluation of ρ(θ), exact field
# arithmetic (``+ - * /``, ``==``, ``<``, ``> 0``; the same for ``fmpq`` over Q and ``NFElement`` over a
# real number field Q(α)) and sympy ranks. No code of certsym that decides anything is imported.
# ---------------------------------------------------------------------------------------------------

# Fixed "generic" rational points used only to REFUTE equality quickly and to bucket functions; a
# positive answer is never taken from them.
_PROBE_DENOMINATORS = (7, 11, 13, 17, 19, 23, 29, 31)
FINGERPRINT_POINTS = 6  # points of ``fingerprint``; ``is_zero_function`` first tries twice as many


@cache
def integer_probes(m: int, count: int = FINGERPRINT_POINTS) -> tuple[tuple[tuple[int, ...], int], ...]:
    """``count`` fixed points P/q of R^m as (integer numerators P, common denominator q): point j lies in
    the orthant of the binary digits of j (cycling), with pseudo-random magnitudes up to about 8 drawn from
    a fixed seed, so the list is the same on every run. The first points of a longer list are the
    points of a shorter one."""
    rng = random.Random(7919 + m)
    out = []
    for j in range(count):
        q = _PROBE_DENOMINATORS[j % len(_PROBE_DENOMINATORS)]
        nums = tuple((-1 if (j >> t) & 1 else 1) * rng.randint(1, 8 * q) for t in range(m))
        out.append((nums, q))
    return tuple(out)


def fixed_points(m: int, count: int = FINGERPRINT_POINTS) -> list[list[fmpq]]:
    """``count`` fixed rational points of R^m (see ``integer_probes``)."""
    return [[fmpq(p, q) for p in nums] for nums, q in integer_probes(m, count)]


def _first_nonzero(xs: Iterable) -> int | None:
    for idx, x in enumerate(xs):
        if x != 0:
            return idx
    return None


def _hyperplane_key(u: Sequence[Scalar], beta: Scalar) -> tuple:
    """The unoriented hyperplane {u·x + β = 0} (u ≠ 0) scaled so that the first nonzero of u is 1."""
    p = _first_nonzero(u)
    assert p is not None
    s = u[p]
    return tuple(x / s for x in u), beta / s


def restrict_to_hyperplane(net: Network, u: Sequence[Scalar], beta: Scalar) -> Network:
    """ρ(θ) restricted to {x : u·x + β = 0}, as a network in m − 1 variables. Needs m ≥ 2, u ≠ 0.

    Pivot p = first index with u_p ≠ 0; x_p = −(β + Σ_{q≠p} u_q y_q)/u_p with y = (x_q)_{q≠p}. Then
    a·x + b = Σ_{q≠p} (a_q − a_p u_q/u_p) y_q + (b − a_p β/u_p): the new row and bias. M and c are unchanged.
    This parametrization is an affine bijection R^{m−1} → hyperplane. Cost O(n m) field operations.
    """
    if net.m < 2:
        raise ValueError("restriction needs m >= 2")
    p = _first_nonzero(u)
    if p is None:
        raise ValueError("the normal u of a hyperplane must be nonzero")
    up = u[p]
    rows, bias = [], []
    for row, bi in zip(net.A, net.b, strict=True):
        ratio = row[p] / up
        rows.append([row[q] - ratio * u[q] for q in range(net.m) if q != p])
        bias.append(bi - ratio * beta)
    return Network.build(net.M, rows, bias, net.c, net.field, net.m - 1)


def _arrangement(net: Network) -> list[tuple]:
    """Distinct hyperplanes a_i·x + b_i = 0 (a_i ≠ 0) of ``net`` and the m coordinate hyperplanes x_q = 0."""
    field = net.field
    keys = {}
    for row, bi in zip(net.A, net.b, strict=True):
        if _first_nonzero(row) is not None:
            keys.setdefault(_hyperplane_key(row, bi), None)
    for q in range(net.m):
        e = [field.one if j == q else field.zero for j in range(net.m)]
        keys.setdefault(_hyperplane_key(e, field.zero), None)
    return list(keys)


def is_zero_function(h: Network, quick: bool = True) -> bool:
    """Decide ρ(h) ≡ 0 on R^m exactly (any m, k).

    m = 1: the breakpoint oracle (values at all breakpoints and one point beyond each end).
    m ≥ 2: ρ(h) ≡ 0 iff ρ(h) restricted to every hyperplane of the arrangement (the neuron hyperplanes
    a_i·x + b_i = 0 with a_i ≠ 0, and the coordinate hyperplanes x_q = 0) is ≡ 0. Proof: the closure of
    a cell of the arrangement lies in an orthant, so it is a pointed full-dimensional polyhedron; for m ≥ 2
    its boundary then contains two facets on non-parallel hyperplanes, which together affinely span R^m.
    ρ(h) is affine on the cell and (by continuity) vanishes on its boundary, hence on the cell. Each
    restriction is a network in m − 1 variables (``restrict_to_hyperplane``): recurse.
    If no neuron has a_i ≠ 0, ρ(h) is constant: one evaluation.

    Cost: with N_j ≤ n + j hyperplanes at dimension j, at most N_m N_{m−1} ··· N_2 univariate checks of
    O(n log n) evaluations each (O(n(m + k)) field operations per evaluation): exponential in m, fine for
    m ≤ 3 and n up to a few dozen. With ``quick`` a nonzero value at one of a few fixed points ends the
    search early (a refutation only: the verdict is the same with ``quick=False``, which tests use to
    exercise the recursion alone).
    """
    zero = h.field.zero
    if all(_first_nonzero(row) is None for row in h.A):
        return all(y == zero for y in h.evaluate([zero] * h.m))
    if quick:
        for x in fixed_points(h.m, 2 * FINGERPRINT_POINTS):
            if any(y != zero for y in h.evaluate(x)):
                return False
    if h.m == 1:
        return all(all(y == zero for y in h.evaluate([t])) for t in probe_points(h))
    return all(is_zero_function(restrict_to_hyperplane(h, u, beta), quick) for u, beta in _arrangement(h))


def same_function(f: Network, g: Network, quick: bool = True) -> bool:
    """Decide ρ(f) = ρ(g) on R^m exactly, for any m, k (f and g with the same m, k and field).

    m = 1: ``same_function_m1``. m ≥ 2: ``is_zero_function(f ⊖ g, quick)`` (h = f − g realized by the
    network ([M | −M'], [A; A'], [b; b'], c − c')). Cost: see ``is_zero_function`` with n = n_f + n_g.
    """
    if (f.m, f.k) != (g.m, g.k):
        raise ValueError(f"shapes differ: (m={f.m}, k={f.k}) vs (m={g.m}, k={g.k})")
    if f.m == 1:
        return same_function_m1(f, g)[0]
    return is_zero_function(f.minus(g), quick)


# --- H_n-orbits ------------------------------------------------------------------------------------


def normalized_neuron(a: Sequence[Scalar], b: Scalar, v: Sequence[Scalar]) -> tuple | None:
    """The positive rescaling (a, b, v) ↦ (a/λ, b/λ, λ v), λ > 0, that makes the first nonzero entry
    of (a, b) equal to ±1; if (a, b) = 0 then v ↦ v/μ with μ > 0 making the first nonzero of v ±1.
    None for the zero neuron. Two neurons are related by a positive rescaling iff these agree.
    """
    r = (*a, b)
    p = _first_nonzero(r)
    if p is not None:
        lam = r[p] if r[p] > 0 else -r[p]
        return tuple(x / lam for x in a), b / lam, tuple(x * lam for x in v)
    p = _first_nonzero(v)
    if p is None:
        return None
    mu = v[p] if v[p] > 0 else -v[p]
    return tuple(a), b, tuple(x / mu for x in v)


def orbit_key(t: Network) -> tuple:
    """A complete invariant of the H_n-orbit of θ (any m, k).

    (number of zero neurons (a_i, b_i, v_i) = 0, sorted tuple of the other neurons normalized by
    ``normalized_neuron``, c). h = DP permutes the neurons and rescales neuron i by d_i > 0:
    (a, b, v) ↦ (d a, d b, v/d); the normalization removes d and sorting removes P, so equal keys ⇔ one
    orbit. Sorting uses Python's lexicographic tuple order on exact field elements (``==`` and ``<``
    are exact over Q and over Q(α)), a total order. Cost O(n(m + k)) field operations + O(n log n)
    comparisons.
    """
    zeros, others = 0, []
    for i in range(t.n):
        key = normalized_neuron(t.A[i], t.b[i], tuple(row[i] for row in t.M))
        if key is None:
            zeros += 1
        else:
            others.append(key)
    return zeros, tuple(sorted(others)), tuple(t.c)


# --- exact ranks ------------------------------------------------------------------------------------


@cache
def _sympy_generator(field: Field):
    """(α as a sympy number, sympy algebraic field Q(α)) for a number field, checked exactly."""
    alpha = parse_expression(field.expr)
    x = sympy.Symbol("x")
    mp = sympy.Poly(sympy.minimal_polynomial(alpha, x), x).monic()
    ours = sympy.Poly([sympy.Rational(int(c.p), int(c.q)) for c in reversed(field.minpoly.coeffs())], x).monic()
    if mp != ours:
        raise ValueError(f"{field.expr} does not have minimal polynomial {field.minpoly}")
    lo = sympy.Rational(int(field.lo.p), int(field.lo.q))
    hi = sympy.Rational(int(field.hi.p), int(field.hi.q))
    if not (bool(alpha >= lo) and bool(alpha <= hi)):
        raise ValueError(f"{field.expr} is not the root of {field.minpoly} in [{field.lo}, {field.hi}]")
    dom = sympy.QQ.algebraic_field(alpha)
    # sympy's field must be generated by α itself, with α's minimal polynomial, so that an element is
    # given by the same coefficient list as the NFElement (highest degree first in sympy's ANP)
    if dom.to_sympy(dom([dom.dom(1), dom.dom(0)])) != alpha or \
            sympy.Poly(dom.mod.to_list(), x).monic() != ours:
        raise ValueError(f"sympy's QQ<{field.expr}> is not generated by {field.expr}")
    return alpha, dom


def to_sympy(x: Scalar):
    """An exact sympy number equal to the field element ``x`` (fmpq, int, or NFElement of Q(α)).

    An NFElement is the polynomial Σ c_i α^i (rational c_i, from its stored ``fmpq_poly``); α is
    read from the field's expression and checked to be the root of the field's minimal polynomial in
    its isolating interval.
    """
    if isinstance(x, int):
        return sympy.Integer(x)
    if isinstance(x, fmpq):
        return sympy.Rational(int(x.p), int(x.q))
    alpha, _ = _sympy_generator(x.field)
    return sympy.Add(*[sympy.Rational(int(c.p), int(c.q)) * alpha**i for i, c in enumerate(x.poly.coeffs())])


def sympy_rank(rows: Sequence[Sequence[Scalar]], ncols: int) -> int:
    """The exact rank of a matrix of field elements, computed by sympy.

    Rational entries: ``sympy.Matrix.rank()`` (exact on Rationals). Entries in Q(α): a sympy
    ``DomainMatrix`` over the algebraic field QQ<α> (exact arithmetic, exact zero test), because
    ``Matrix.rank`` decides zero with a heuristic on unsimplified algebraic expressions.
    """
    if not rows:
        return 0
    fields = {x.field for row in rows for x in row if not isinstance(x, int | fmpq)}
    if not fields:
        return sympy.Matrix([[to_sympy(x) for x in row] for row in rows]).rank()
    (field,) = fields
    _, dom = _sympy_generator(field)

    def conv(x):
        coeffs = [fmpq(x)] if isinstance(x, int | fmpq) else x.poly.coeffs()
        return dom([dom.dom(int(c.p), int(c.q)) for c in reversed(coeffs)])

    return DomainMatrix([[conv(x) for x in row] for row in rows], (len(rows), ncols), dom).rank()


def field_rank(rows: Sequence[Sequence[Scalar]]) -> int:
    """Exact rank by Gaussian elimination in the field itself (a second, sympy-free computation)."""
    work = [list(r) for r in rows]
    rank, col = 0, 0
    ncols = len(work[0]) if work else 0
    while rank < len(work) and col < ncols:
        piv = next((i for i in range(rank, len(work)) if work[i][col] != 0), None)
        if piv is None:
            col += 1
            continue
        work[rank], work[piv] = work[piv], work[rank]
        for i in range(rank + 1, len(work)):
            if work[i][col] != 0:
                f = work[i][col] / work[rank][col]
                work[i] = [x - f * y for x, y in zip(work[i], work[rank], strict=True)]
        rank += 1
        col += 1
    return rank


# --- identifiability by MATH.md's decision (brute force) --------------------------------------------


def _abs(x: Scalar) -> Scalar:
    return x if x > 0 else -x


def _vadd(x: Sequence[Scalar], y: Sequence[Scalar]) -> tuple:
    return tuple(p + q for p, q in zip(x, y, strict=True))


@dataclass
class Decision:
    """The outcome of MATH.md's identifiability decision, with what is needed to build a witness.

    ``kind`` is one of "dead", "constant", "proportional", "antisymmetric" (the trivial reasons, with the
    neurons in ``neurons``), "a", "b" (the two conditions of the antiparallel-rows decision) or
    "identifiable". For "a" and "b": ``hyperplanes`` maps each key (u_H, β_H) of K to its neurons,
    ``J`` and ``N`` are the kinks and N_H, ``D`` the doubled hyperplanes; for "b" also the configuration
    ``T`` and ``N_new`` (the N'_H, H ∉ T), and g.
    """

    identifiable: bool
    kind: str
    reason: str
    neurons: tuple[int, ...] = ()
    hyperplanes: dict = dc_field(default_factory=dict)
    J: dict = dc_field(default_factory=dict)
    N: dict = dc_field(default_factory=dict)
    D: list = dc_field(default_factory=list)
    T: tuple = ()
    N_new: dict = dc_field(default_factory=dict)
    g: int = 0


def decide_identifiability(t: Network) -> Decision:
    """MATH.md Part I, "Fibres, genericity" and "Antiparallel rows (a complete decision)", by brute force.

    Not identifiable when some neuron is dead (v_i = 0) or constant (a_i = 0), two rows r_i = (a_i, b_i)
    are positively proportional, or an antiparallel pair has zero kink. Otherwise each neuron lies on
    the hyperplane H with key (u_H, β_H) = s_i r_i/λ_i (λ_i = |first nonzero a_ip|, s_i its sign); K = the
    hyperplanes (1 or 2 neurons each), D ⊆ K the doubled ones, d = n − |K|, J_H = Σ_{i on H} λ_i v_i and
    N_H = Σ_{i on H, s_i = −1} λ_i v_i (vectors in R^k). Not identifiable iff (a) the u_H, H ∈ D, are
    linearly dependent, or (b) a configuration other than θ's own (T = D, N' = N) exists: T ⊆ K with
    |T| ≤ d and N'_H ∈ {0, J_H} for H ∉ T such that X = Σ_{H∉T} (N'_H − N_H) u_H^T (k×m) has
    rank([X; U_T]) − rank(U_T) ≤ g = ⌊(d − |T|)/2⌋ (ranks by sympy, exact).

    Brute force: Σ_{j ≤ d} C(|K|, j) 2^{|K| − j} configurations (≤ 3^n), two sympy ranks each; fine for
    n ≤ 8. The trivial checks cost O(n²(m + k)).
    """
    n, m, k = t.n, t.m, t.k
    neurons = [(t.A[i], t.b[i], tuple(row[i] for row in t.M)) for i in range(n)]
    for i, (a, _, v) in enumerate(neurons):
        if all(x == 0 for x in v):
            return Decision(False, "dead", f"dead neuron {i}", (i,))
        if all(x == 0 for x in a):
            return Decision(False, "constant", f"constant neuron {i}", (i,))
    rows = [(*a, b) for a, b, _ in neurons]
    for i, j in itertools.combinations(range(n), 2):
        ri, rj = rows[i], rows[j]
        p = _first_nonzero(ri)
        lam = rj[p] / ri[p]
        if lam != 0 and all(y == lam * x for x, y in zip(ri, rj, strict=True)):
            if lam > 0:
                return Decision(False, "proportional", f"rows {i}, {j} positively proportional", (i, j))
            # antiparallel, r_j = −μ r_i with μ > 0: the kink of their hyperplane is λ_i (v_i + μ v_j)
            mu = -lam
            if all(vi + mu * vj == 0 for vi, vj in zip(neurons[i][2], neurons[j][2], strict=True)):
                return Decision(False, "antisymmetric", f"antiparallel pair {i}, {j} with zero kink", (i, j))
    hyper: dict[tuple, list[int]] = {}
    lam_s = []
    for i, (a, b, _) in enumerate(neurons):
        p = _first_nonzero(a)
        lam = _abs(a[p])
        s = 1 if a[p] > 0 else -1
        lam_s.append((lam, s))
        hyper.setdefault((tuple(s * x / lam for x in a), s * b / lam), []).append(i)
    K = list(hyper)
    zero_k = tuple(t.field.zero for _ in range(k))
    J, N = {}, {}
    for H in K:
        j_h, n_h = zero_k, zero_k
        for i in hyper[H]:
            lam, s = lam_s[i]
            contrib = tuple(lam * x for x in neurons[i][2])
            j_h = _vadd(j_h, contrib)
            if s < 0:
                n_h = _vadd(n_h, contrib)
        J[H], N[H] = j_h, n_h
    D = [H for H in K if len(hyper[H]) == 2]
    d = n - len(K)
    common = {"hyperplanes": hyper, "J": J, "N": N, "D": D}
    if sympy_rank([H[0] for H in D], m) < len(D):
        return Decision(False, "a", "(a) normals of the doubled hyperplanes are linearly dependent", **common)
    for size in range(d + 1):
        for T in itertools.combinations(K, size):
            t_set = set(T)
            rest = [H for H in K if H not in t_set]
            UT = [H[0] for H in T]
            rank_t = sympy_rank(UT, m)
            g = (d - size) // 2
            for choice in itertools.product((False, True), repeat=len(rest)):
                n_new = {H: (J[H] if pick else zero_k) for H, pick in zip(rest, choice, strict=True)}
                if t_set == set(D) and all(n_new[H] == N[H] for H in rest):
                    continue  # θ's own configuration
                X = [[t.field.zero] * m for _ in range(k)]
                for H in rest:
                    for r in range(k):
                        delta = n_new[H][r] - N[H][r]
                        if delta != 0:
                            X[r] = [x + delta * uq for x, uq in zip(X[r], H[0], strict=True)]
                if sympy_rank(X + UT, m) - rank_t <= g:
                    desc = ", ".join("0" if n_new[H] == zero_k else "J" for H in rest)
                    return Decision(False, "b", f"(b) configuration |T| = {size}, N' = ({desc}), g = {g}",
                                    T=T, N_new=n_new, g=g, **common)
    return Decision(True, "identifiable", "identifiable", **common)


def identifiable_by_definition(t: Network) -> bool:
    """Is θ identifiable (fibre ρ^{-1}(ρ(θ)) ∩ Ω = H_n·θ)? MATH.md's decision, by brute force; see
    ``decide_identifiability`` for the statement and the cost."""
    return decide_identifiability(t).identifiable


def _gauss_jordan(mat: list[list[Scalar]], ncols: int) -> list[int]:
    """Reduced row echelon form of ``mat`` in place over its first ``ncols`` columns; returns the pivot columns."""
    pivots: list[int] = []
    for col in range(ncols):
        top = len(pivots)
        piv = next((i for i in range(top, len(mat)) if mat[i][col] != 0), None)
        if piv is None:
            continue
        mat[top], mat[piv] = mat[piv], mat[top]
        inv = mat[top][col]
        mat[top] = [z / inv for z in mat[top]]
        for i in range(len(mat)):
            if i != top and mat[i][col] != 0:
                f = mat[i][col]
                mat[i] = [z - f * w for z, w in zip(mat[i], mat[top], strict=True)]
        pivots.append(col)
    return pivots


def _row_space_split(rows: Sequence[Sequence[Scalar]], basis: Sequence[Sequence[Scalar]], m: int, fld: Field):
    """Write each row x of ``rows`` as Σ_b coeff_b basis_b + w, with the w in a complement of span(basis)
    (``basis`` linearly independent). Returns (coefficients per row, remainders). Gaussian elimination."""
    # complete the basis with unit vectors to a basis of R^m
    full = [list(b) for b in basis]
    for q in range(m):
        e = [fld.one if j == q else fld.zero for j in range(m)]
        if field_rank(full + [e]) > len(full):
            full.append(e)
    coeffs, rests = [], []
    for x in rows:
        # solve y · full = x (full is m×m invertible) by elimination on the transposed system
        aug = [[full[j][q] for j in range(m)] + [x[q]] for q in range(m)]
        _gauss_jordan(aug, m)
        y = [aug[q][m] for q in range(m)]
        coeffs.append(y[: len(basis)])
        rest = [fld.zero] * m
        for j in range(len(basis), m):
            rest = [r + y[j] * fq for r, fq in zip(rest, full[j], strict=True)]
        rests.append(rest)
    return coeffs, rests


def fibre_witness(t: Network) -> Network | None:
    """An explicit θ' with ρ(θ') = ρ(θ) built from the reason ``decide_identifiability`` gives when θ is
    NOT identifiable (None when it is identifiable). The caller checks ρ(θ') = ρ(θ) with
    ``same_function`` and θ' ∉ H_n·θ with ``orbit_key``: that checks the soundness of each verdict.

    dead: zero the neuron (or give a zero neuron a row); constant: set v = 0 (b ≤ 0) or move v σ(b) into c;
    proportional r_j = λ r_i: (v_i + λ v_j, 0); antisymmetric: shift both biases (E4). (a): move a kernel
    vector of the doubled normals into their N_H. (b): MATH.md's soundness construction — one neuron per
    H ∉ T oriented by N'_H, a split pair on each H ∈ T taking the part of X in span{u_H : H ∈ T}, rank(X mod
    that span) ≤ g antisymmetric pairs for the rest, zero neurons to fill, c fixed by one evaluation.
    """
    dec = decide_identifiability(t)
    if dec.identifiable:
        return None
    fld, m, k, n = t.field, t.m, t.k, t.n
    zero_m, zero_k = (fld.zero,) * m, (fld.zero,) * k
    nus = [[t.A[i], t.b[i], tuple(row[i] for row in t.M)] for i in range(n)]
    c = list(t.c)

    def assemble(neurons, c_vec) -> Network:
        return Network.build([[nu[2][r] for nu in neurons] for r in range(k)], [nu[0] for nu in neurons],
                             [nu[1] for nu in neurons], c_vec, fld, m)

    if dec.kind == "dead":
        (i,) = dec.neurons
        if any(x != 0 for x in (*nus[i][0], nus[i][1])):
            nus[i] = [zero_m, fld.zero, zero_k]
        else:
            nus[i] = [(fld.one,) + zero_m[1:], fld.zero, zero_k]
        return assemble(nus, c)
    if dec.kind == "constant":
        (i,) = dec.neurons
        a, b, v = nus[i]
        if b > 0:
            c = [cj + vj * b for cj, vj in zip(c, v, strict=True)]
            nus[i] = [a, b, zero_k]
        else:  # σ(b) = 0: any v gives the same function; v = 0 changes the multiset of normalized neurons
            nus[i] = [a, b, zero_k]
        return assemble(nus, c)
    if dec.kind == "proportional":
        i, j = dec.neurons
        lam = t.b[j] / t.b[i] if t.b[i] != 0 else next(y / x for x, y in zip(t.A[i], t.A[j], strict=True) if x != 0)
        nus[i][2] = tuple(vi + lam * vj for vi, vj in zip(nus[i][2], nus[j][2], strict=True))
        nus[j][2] = zero_k
        return assemble(nus, c)
    if dec.kind == "antisymmetric":
        i, j = dec.neurons
        p = _first_nonzero(t.A[i])
        mu = -t.A[j][p] / t.A[i][p]
        for shift in (1, 2, 3):
            # v σ(z) − (v/μ) σ(−μ z) = v z; with z ↦ z + s the pair realizes v z + v s: subtract v s from c
            new = [list(nu) for nu in nus]
            new[i][1] = t.b[i] + shift
            new[j][1] = t.b[j] - mu * shift
            cand = assemble(new, [cj - vj * shift for cj, vj in zip(c, nus[i][2], strict=True)])
            if orbit_key(cand) != orbit_key(t):
                return cand
        return cand
    hyper, J, N = dec.hyperplanes, dec.J, dec.N
    if dec.kind == "a":
        D = dec.D
        # a nonzero α with Σ_D α_H u_H = 0: the kernel of the (|D|×m) matrix U_D^T, by elimination
        U = [list(H[0]) for H in D]
        for size in range(1, len(D) + 1):
            alpha = _kernel_vector([U[j] for j in range(size)], m, fld)
            if alpha is not None:
                break
        n_new = dict(N)
        for H, al in zip(D, alpha, strict=False):
            n_new[H] = (N[H][0] + al,) + N[H][1:]
        new = []
        for H in D:
            u, beta = H
            new.append([u, beta, tuple(x - y for x, y in zip(J[H], n_new[H], strict=True))])
            new.append([tuple(-x for x in u), -beta, n_new[H]])
        for H in hyper:
            if H not in D:
                new.append(list(nus[hyper[H][0]]))
        return _fix_constant(t, assemble, new)
    # kind "b"
    T = list(dec.T)
    rest = [H for H in hyper if H not in dec.T]
    X = [[fld.zero] * m for _ in range(k)]
    for H in rest:
        for r in range(k):
            delta = dec.N_new[H][r] - N[H][r]
            X[r] = [x + delta * uq for x, uq in zip(X[r], H[0], strict=True)]
    basis_hyp: list = []
    for H in T:
        if field_rank([list(B[0]) for B in basis_hyp] + [list(H[0])]) > len(basis_hyp):
            basis_hyp.append(H)
    coeffs, W = _row_space_split(X, [B[0] for B in basis_hyp], m, fld)
    # The linear part −Σ_H N_H u_H^T must not change: X + Σ_T (N'_H − N_H) u_H^T = (linear part of the
    # pairs). Split X = Σ_{H ∈ basis} δ_H u_H^T + W (W's rows in a complement of span U_T); take
    # N'_H = N_H − δ_H on T and realize W with rank(W) ≤ g antisymmetric pairs.
    new = []
    for H in rest:
        u, beta = H
        if dec.N_new[H] == zero_k:
            new.append([u, beta, J[H]])
        else:
            new.append([tuple(-x for x in u), -beta, J[H]])
    for H in T:
        delta = [coeffs[r][basis_hyp.index(H)] if H in basis_hyp else fld.zero for r in range(k)]
        n_t = tuple(N[H][r] - delta[r] for r in range(k))
        u, beta = H
        new.append([u, beta, tuple(x - y for x, y in zip(J[H], n_t, strict=True))])
        new.append([tuple(-x for x in u), -beta, n_t])
    # W = Σ_p w_p a_p^T with a_p a basis of W's row space; each term is w_p (σ(a_p·x) − σ(−a_p·x)) = w_p a_p·x
    basis_rows: list = []
    for row in W:
        if field_rank(basis_rows + [row]) > len(basis_rows):
            basis_rows.append(row)
    if basis_rows:
        coeffs_w, _ = _row_space_split(W, basis_rows, m, fld)
        for p_idx, a_p in enumerate(basis_rows):
            w_p = tuple(coeffs_w[r][p_idx] for r in range(k))
            new.append([tuple(a_p), fld.zero, w_p])
            new.append([tuple(-x for x in a_p), fld.zero, tuple(-x for x in w_p)])
    return _fix_constant(t, assemble, new)


def _kernel_vector(rows: list[list[Scalar]], m: int, fld: Field) -> list[Scalar] | None:
    """A nonzero α with Σ_j α_j rows[j] = 0, or None (rows independent). Gaussian elimination."""
    r = len(rows)
    if field_rank(rows) == r:
        return None
    # columns of the m×r matrix are the rows; row-reduce it and read a free column
    mat = [[rows[j][q] for j in range(r)] for q in range(m)]
    pivots = _gauss_jordan(mat, r)
    free = next(col for col in range(r) if col not in pivots)
    alpha = [fld.zero] * r
    alpha[free] = fld.one
    for i, col in enumerate(pivots):
        alpha[col] = -mat[i][free]
    return alpha


def _fix_constant(t: Network, assemble, neurons: list) -> Network:
    """Pad with zero neurons to n and choose c so that ρ(θ') and ρ(θ) agree at one point."""
    fld, m, k = t.field, t.m, t.k
    if len(neurons) > t.n:
        raise AssertionError(f"the construction needs {len(neurons)} > n = {t.n} neurons")
    neurons = neurons + [[(fld.zero,) * m, fld.zero, (fld.zero,) * k] for _ in range(t.n - len(neurons))]
    draft = assemble(neurons, [fld.zero] * k)
    x0 = [fld.zero] * m
    return assemble(neurons, [y - z for y, z in zip(t.evaluate(x0), draft.evaluate(x0), strict=True)])


def zero_factors(t: Network) -> list[tuple[int, ...]]:
    """Every nonempty F ⊆ {0..n−1} with Σ_{i∈F} v_i a_i^T = 0 (a k×m matrix), by enumeration of all
    2^n − 1 subsets with exact field arithmetic. Cost O(2^n n k m)."""
    out = []
    outer = [[[t.M[r][i] * t.A[i][q] for q in range(t.m)] for r in range(t.k)] for i in range(t.n)]
    for size in range(1, t.n + 1):
        for F in itertools.combinations(range(t.n), size):
            if all(sum((outer[i][r][q] for i in F), t.field.zero) == 0 for r in range(t.k) for q in range(t.m)):
                out.append(F)
    return out


# --- grids and fibres -------------------------------------------------------------------------------


def grid_networks(m: int, n: int, k: int, values: Sequence[int] = (-1, 0, 1), c_zero: bool = True,
                  field: Field | None = None) -> Iterator[Network]:
    """Every θ ∈ Ω(m, n, k) with entries of M, A, b (and c unless ``c_zero``) in ``values``;
    |values|^{kn + nm + n (+ k)} networks, in a fixed order."""
    field = field or QQ
    vals = [fmpq(v) for v in values]
    size = k * n + n * m + n
    cs = [tuple(fmpq(0) for _ in range(k))] if c_zero else list(itertools.product(vals, repeat=k))
    for flat in itertools.product(vals, repeat=size):
        M = [flat[j * n:(j + 1) * n] for j in range(k)]
        off = k * n
        A = [flat[off + i * m: off + (i + 1) * m] for i in range(n)]
        b = flat[off + n * m:]
        for c in cs:
            yield Network.build(M, A, b, c, field, m)


def _value_key(x: Scalar) -> tuple:
    """A hashable exact key of a field element: (numerator, denominator) for a rational (also a rational
    element of Q(α)), else the element's rational coordinates."""
    if isinstance(x, int):
        return (x, 1)
    if not isinstance(x, fmpq):
        if not x.field.is_rational(x):
            return ("alg", x.field.name, tuple((int(c.p), int(c.q)) for c in x.poly.coeffs()))
        x = x.field.to_rational(x)
    return (int(x.p), int(x.q))


def fingerprint(t: Network, count: int = FINGERPRINT_POINTS) -> tuple:
    """Exact values of q_j ρ(θ)(P_j/q_j) at ``count`` fixed rational points P_j/q_j (``integer_probes``),
    as hashable keys: equal functions have equal fingerprints (the converse is only a heuristic; it is
    used as a prefilter)."""
    out = []
    for P, q in integer_probes(t.m, count):
        x = [fmpq(p, q) for p in P]
        out.append(tuple(_value_key(y * q) for y in t.evaluate(x)))
    return tuple(out)


def _int_fingerprint(flat: tuple[int, ...], m: int, n: int, k: int, probes) -> tuple:
    """``fingerprint`` of an integer grid member (M, A, b, c flattened), with integer arithmetic:
    at x = P/q, q ρ(x) = Σ_i v_i σ(a_i·P + b_i q) + c q."""
    M = flat[: k * n]
    A = flat[k * n: k * n + n * m]
    b = flat[k * n + n * m: k * n + n * m + n]
    c = flat[k * n + n * m + n:]
    out = []
    for P, q in probes:
        acc = [cj * q for cj in c]
        for i in range(n):
            z = b[i] * q
            for j in range(m):
                z += A[i * m + j] * P[j]
            if z > 0:
                for r in range(k):
                    acc[r] += M[r * n + i] * z
        out.append(tuple((x, 1) for x in acc))
    return tuple(out)


def _flat_to_network(flat: tuple[int, ...], m: int, n: int, k: int, field: Field) -> Network:
    M = [flat[r * n:(r + 1) * n] for r in range(k)]
    off = k * n
    A = [flat[off + i * m: off + (i + 1) * m] for i in range(n)]
    off += n * m
    return Network.build(M, A, flat[off:off + n], flat[off + n:], field, m)


class FunctionIndex:
    """Networks bucketed by ``fingerprint``, for repeated fibre queries on one grid.

    Either built from networks (``FunctionIndex(nets)``) or, much faster, from an integer grid
    (``FunctionIndex.from_grid``), where members are stored as integer tuples and built into
    networks only when they are candidates.
    """

    def __init__(self, nets: Iterable[Network] = ()):
        self.buckets: dict[tuple, list] = {}
        self.size = 0
        self._shape: tuple[int, int, int, Field] | None = None
        for net in nets:
            self.buckets.setdefault(fingerprint(net), []).append(net)
            self.size += 1

    @classmethod
    def from_grid(cls, m: int, n: int, k: int, values: Sequence[int] = (-1, 0, 1),
                  c_values: Sequence[int] | None = (0,), field: Field | None = None) -> FunctionIndex:
        """Every θ ∈ Ω(m, n, k) with entries of M, A, b in ``values`` and of c in ``c_values``
        (``None``: the same as ``values``). Cost: |values|^{kn+nm+n} |c_values|^k integer fingerprints."""
        index = cls()
        index._shape = (m, n, k, field or QQ)
        cvals = values if c_values is None else c_values
        probes = integer_probes(m)
        for body in itertools.product(values, repeat=k * n + n * m + n):
            for c in itertools.product(cvals, repeat=k):
                flat = body + c
                index.buckets.setdefault(_int_fingerprint(flat, m, n, k, probes), []).append(flat)
                index.size += 1
        return index

    def candidates(self, theta: Network) -> Iterator[Network]:
        """The members with θ's fingerprint (a superset of θ's fibre within the grid), lazily."""
        found = self.buckets.get(fingerprint(theta), [])
        if self._shape is None:
            yield from found
            return
        m, n, k, field = self._shape
        for flat in found:
            yield _flat_to_network(flat, m, n, k, field)


def fibre_in_grid(theta: Network, grid_nets: FunctionIndex | Iterable[Network],
                  limit: int | None = None) -> list[Network]:
    """The members θ' of the grid with ρ(θ') = ρ(θ) (decided by ``same_function``) and
    ``orbit_key(θ') ≠ orbit_key(θ)``: witnesses that θ is not identifiable (at most ``limit`` of them).

    ``grid_nets`` is a ``FunctionIndex`` (reusable) or any iterable of networks of θ's shape
    (indexed on the fly). Cost: one fingerprint per grid member when indexing; then ``orbit_key`` and
    ``same_function`` only on the members whose fingerprint equals θ's.
    """
    index = grid_nets if isinstance(grid_nets, FunctionIndex) else FunctionIndex(grid_nets)
    key = orbit_key(theta)
    found = []
    for net in index.candidates(theta):
        if orbit_key(net) != key and same_function(theta, net):
            found.append(net)
            if limit is not None and len(found) >= limit:
                break
    return found

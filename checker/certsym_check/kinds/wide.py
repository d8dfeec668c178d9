"""Replay of ``wide_critical_point`` certificates: a critical point of the teacher–student loss F on M(n, k) (n
student neurons, teacher I_k) in the fixed-point space of a group of row and column permutations, in mpmath
interval arithmetic, independent of certsym's producer.

Group and fixed-point space. The certificate gives generators (π, ρ) ∈ S_n × S_k, acting by W ↦ P_π W P_ρᵀ.
F is invariant under all of S_n × S_k (rows are summed over; a column permutation is the change of variable
x ↦ P_ρ x, which permutes the teacher's rows). The checker computes the orbits of the entries (r, c) under the
generators itself; ordered by their first entry (row-major), they are the parameters x_1, …, x_P of
W(x) = Σ_o x_o E_o, E_o the indicator of orbit o. Symmetric criticality: ∇F(W) is constant on every orbit when
W ∈ Fix, so a zero of the restricted gradient (the orbit sums of ∇F) is a zero of ∇F.

Krawczyk. With the entries of W(x) as second-order jets in x, F = Σ_r ‖w_r‖²/4 + Σ_{r<s} κ(w_r, w_s)
− Σ_{r,c} κ(w_r, e_c) + k/4 + k(k−1)/(4π) (κ through its Gram partials, ``landscape.kappa_jet``; S > 0 is certified
or the certificate is rejected). The Krawczyk operator −C g(x̃) + (I − C H(X))(X − x̃) must lie inside the open
box: then exactly one critical point lies in it. The loss enclosure is F(x̃) ± r Σ_i sup_X |∂_i F|.

Minimum. With "minimum": true the full nk × nk Hessian of F is enclosed over the box (blocks through the same
Gram partials: for the pair (w_r, w_s), κ_g ∂²g + κ_N ∂²N + κ_gg ∇g∇gᵀ + κ_gN (∇g∇Nᵀ + ∇N∇gᵀ) + κ_NN ∇N∇Nᵀ,
with g = w_r·w_s and N = ‖w_r‖²‖w_s‖²) and factored by interval Cholesky: if every pivot is positive, every
symmetric matrix in the enclosure is positive definite, and the critical point is a strict local minimum.
Bounds, enforced before the work: n·k ≤ MAX_ENTRIES, P ≤ MAX_PARAMS, generators ≤ MAX_GENERATORS, the jets'
work (n²k/2 + nk)·P² ≤ MAX_JET_WORK, and for a minimum the full Hessian's n(n + k)k² ≤ MAX_HESSIAN_WORK.
Cost: O(n² k P²) interval operations for the jets, O((nk)³) for the Cholesky factorization.
"""

from __future__ import annotations

from certsym_check.core import Report, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational
from certsym_check.kinds.landscape import (  # mpmath's interval arithmetic stays in the landscape module
    Jet,
    decimals,
    enclose,
    iv,
    kappa_jet,
    krawczyk,
    nonnegative_part,
    working_precision,
)

MAX_ENTRIES = 240  # n·k: the interval Cholesky of the full Hessian is O((nk)³)
MAX_PARAMS = 40
MAX_GENERATORS = 400
MAX_JET_WORK = 400_000  # (n²k/2 + nk) · P²: the second-order jets over the box, a few seconds
MAX_HESSIAN_WORK = 400_000  # n(n + k)k²: the interval entries of the full Hessian (a minimum), about 15 s


def orbits(n: int, k: int, generators: list[tuple[list[int], list[int]]]) -> list[list[tuple[int, int]]]:
    """The orbits of the entries under the generated group, each sorted, ordered by first entry (union-find)."""
    parent = list(range(n * k))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for pi, rho in generators:
        for r in range(n):
            for c in range(k):
                a, b = find(r * k + c), find(pi[r] * k + rho[c])
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[tuple[int, int]]] = {}
    for e in range(n * k):
        groups.setdefault(find(e), []).append(divmod(e, k))
    return sorted(groups.values())


def _permutation(p: object, size: int, where: str) -> list[int]:
    if not isinstance(p, list) or len(p) != size or any(type(x) is not int for x in p) or sorted(p) != list(
            range(size)):
        raise Reject(f"{where} must be a permutation of 0..{size - 1}")
    return p


def _loss_jet(n: int, k: int, entries: list[list[Jet]]) -> Jet:
    P = len(entries[0][0].g)
    zero = Jet.const(0, P)

    def dot(a: list, b: list) -> Jet:
        return sum((x * y for x, y in zip(a, b, strict=True)), zero)

    norms = [dot(row, row) for row in entries]
    F = Jet.const(iv.mpf(k) / 4 + iv.mpf(k * (k - 1)) / (4 * iv.pi), P)
    for r in range(n):
        F = F + norms[r] * (iv.mpf(1) / 4)
        for c in range(k):
            F = F - kappa_jet(entries[r][c], norms[r])
        for s in range(r + 1, n):
            F = F + kappa_jet(dot(entries[r], entries[s]), norms[r] * norms[s])
    return F


def _hessian(W: list[list]) -> list[list]:
    """The full Hessian of F over the box (row-major entries), from the Gram partials of each pair."""
    n, k = len(W), len(W[0])
    pi = iv.pi
    H = [[iv.mpf(0)] * (n * k) for _ in range(n * k)]
    rows = W + [[iv.mpf(int(c == j)) for j in range(k)] for c in range(k)]  # students, then the teacher

    def partials(g, N):
        S = iv.sqrt(nonnegative_part(N - g * g))
        if S.a <= 0:
            raise Reject("wide: two vectors may be parallel (S = 0)")
        theta = iv.atan2(S, g)
        return ((pi - theta) / (2 * pi), S / (4 * pi * N), 1 / (2 * pi * S), -g / (4 * pi * N * S),
                (2 * g * g - N) / (8 * pi * N * N * S))

    sq = [sum((x * x for x in row), iv.mpf(0)) for row in rows]
    for r in range(n):
        for c in range(k):
            H[r * k + c][r * k + c] += iv.mpf(1) / 2  # ‖w_r‖²/4
        for s in range(len(rows)):
            if s == r or (s < n and s < r):
                continue
            teacher = s >= n
            sign = -1 if teacher else 1
            w, v = rows[r], rows[s]
            g = sum((x * y for x, y in zip(w, v, strict=True)), iv.mpf(0))
            N = sq[r] * sq[s]
            kg, kN, kgg, kgN, kNN = partials(g, N)
            # gradients of g and N in (w, v): ∇g = (v, w), ∇N = (2|v|² w, 2|w|² v)
            gw, gv = v, w
            Nw, Nv = [2 * sq[s] * x for x in w], [2 * sq[r] * x for x in v]
            blocks = [(r, gw, Nw, 2 * sq[s], w, w)] + ([] if teacher else [(s, gv, Nv, 2 * sq[r], v, v)])
            for a, ga, Na, diagN, _, _ in blocks:
                for b, gb, Nb, _, _, _ in blocks:
                    for i in range(k):
                        for j in range(k):
                            val = (kgg * ga[i] * gb[j] + kgN * (ga[i] * Nb[j] + Na[i] * gb[j])
                                   + kNN * Na[i] * Nb[j])
                            if a == b:
                                val += kN * (diagN if i == j else 0)
                            else:
                                # ∂²g/∂w_i∂v_j = δ_ij; ∂²N/∂w_i∂v_j = 4 w_i v_j
                                wa = w if a == r else v
                                vb = v if b == s else w
                                val += kg * (1 if i == j else 0) + kN * 4 * wa[i] * vb[j]
                            H[a * k + i][b * k + j] += sign * val
    return H


def _cholesky_positive(H: list[list]) -> bool:
    """Interval Cholesky: True if every pivot is certainly positive (then every symmetric matrix in H is
    positive definite)."""
    n = len(H)
    L = [[iv.mpf(0)] * n for _ in range(n)]
    for j in range(n):
        d = H[j][j] - sum((L[j][t] * L[j][t] for t in range(j)), iv.mpf(0))
        if d.a <= 0:
            return False
        L[j][j] = iv.sqrt(d)
        for i in range(j + 1, n):
            L[i][j] = (H[i][j] - sum((L[i][t] * L[j][t] for t in range(j)), iv.mpf(0))) / L[j][j]
    return True


def check_wide(F, nets: list, proof: object, rep: Report) -> None:
    """Replay a ``wide_critical_point`` proof (module docstring)."""
    p = keys(proof, {"shape", "generators", "center", "radius", "preconditioner", "loss", "minimum", "statement"},
             "proof")
    if p["statement"] != "Krawczyk and symmetric criticality" or type(p["minimum"]) is not bool:
        raise Reject("proof must cite 'Krawczyk and symmetric criticality' and state minimum: true or false")
    n, k = seq(p["shape"], 2, "proof.shape")
    if type(n) is not int or type(k) is not int or n < 1 or k < 1 or n * k > MAX_ENTRIES:
        raise Reject(f"proof.shape must be [n, k] with n·k ≤ {MAX_ENTRIES}")
    gens = seq(p["generators"], None, "proof.generators")
    if len(gens) > MAX_GENERATORS:
        raise Reject(f"more than {MAX_GENERATORS} generators")
    generators = [(_permutation(pr[0], n, "a generator's row permutation"),
                   _permutation(pr[1], k, "a generator's column permutation"))
                  for pr in (seq(g, 2, "proof.generators[]") for g in gens)]
    orbit_list = orbits(n, k, generators)
    P = len(orbit_list)
    if P > MAX_PARAMS:
        raise Reject(f"the fixed-point space has {P} > {MAX_PARAMS} dimensions")
    work = (n * n * k // 2 + n * k) * P * P
    if work > MAX_JET_WORK:
        raise Reject(f"n = {n}, k = {k} and {P} parameters need {work:,} jet operations, over the limit "
                     f"{MAX_JET_WORK:,}")
    if p["minimum"] is True and n * (n + k) * k * k > MAX_HESSIAN_WORK:
        raise Reject(f"the full Hessian's enclosure for n = {n}, k = {k} costs n(n + k)k² = {n * (n + k) * k * k:,} "
                     f"interval entries, over the limit {MAX_HESSIAN_WORK:,}")
    center = [rational(v) for v in seq(p["center"], P, "proof.center")]
    r = rational(p["radius"])
    if r <= 0:
        raise Reject("proof.radius must be positive")
    C = [[rational(v) for v in seq(row, P, "proof.preconditioner")]
         for row in seq(p["preconditioner"], P, "proof.preconditioner")]
    where = {e: o for o, orbit in enumerate(orbit_list) for e in orbit}

    def entries(x: list) -> list[list[Jet]]:
        out = []
        for row in range(n):
            line = []
            for col in range(k):
                o = where[(row, col)]
                jet = Jet.const(x[o], P)
                jet.g[o] = iv.mpf(1)
                line.append(jet)
            out.append(line)
        return out

    with working_precision():
        X = [enclose(q, r) for q in center]
        lo, hi = krawczyk(_loss_jet(n, k, entries([enclose(q) for q in center])), _loss_jet(n, k, entries(X)), C,
                          r, seq(p["loss"], 2, "proof.loss"))
        if p["minimum"]:
            W = [[X[where[(row, col)]] for col in range(k)] for row in range(n)]
            if not _cholesky_positive(_hessian(W)):
                raise Reject("the Hessian is not certified positive definite (interval Cholesky)")
    rep.facts.append(f"a critical point of F on M({n}, {k}) in the {P}-dimensional fixed-point space of the group "
                     f"generated by {len(generators)} permutation pairs; F in [{decimals(lo)}, {decimals(hi)}]"
                     + (f"; Hessian positive definite ({n * k} eigenvalues): a strict local minimum"
                        if p["minimum"] else ""))
    rep.checks["Krawczyk: a unique critical point in the box"] += 1
    rep.checks["symmetric criticality (orbits computed from the generators)"] += 1
    rep.checks["loss enclosure"] += 1
    if p["minimum"]:
        rep.checks["interval Cholesky: the Hessian is positive definite"] += 1

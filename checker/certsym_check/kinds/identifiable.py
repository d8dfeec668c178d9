"""Replay of Theorem 1 certificates (``identifiable``): three forms, each checked without search.

- Kernel: a nonsingular minor of the km × n matrix W with columns vec(v_i a_i^T), the free columns as stated
  combinations of the pivot columns, and the 2^d kernel points with 0/1 free part, none a 0/1 vector.
- Meet in the middle: every subset sum of the first s and of the last n − s vectors w_i, each reduced to a
  residue modulo 2^61 − 1 by a linear form drawn from a hash of θ; a zero factor would make a left and a right
  residue cancel, and the residues that do cancel are compared exactly.
- Antiparallel rows (MATH.md's decision by configurations): the hyperplanes, a nonsingular minor of the
  doubled normals, and for every configuration (T, N') other than θ's own, in the fixed enumeration order, a
  nonsingular (g+1)-minor of X' = Σ_{H∉T} (N'_H − N_H) u'_H^T, u'_H the normals reduced modulo span{u_H : H ∈ T}.
The checker forms every matrix itself from θ; the certificate only names indices. Standard library only.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from fractions import Fraction

from certsym_check.budget import charge, charge_products, fits, int_cost, lcm
from certsym_check.core import Net, Report, distinct_sorted, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ

_PRIME = (1 << 61) - 1
MAX_EXACT_PIVOTS = 120  # exact elimination over the field costs p^3 operations on growing numbers
_SLOT = 144  # bits per packed residue; why this suffices: ``nonsingular_mod_prime``
_LOW = (1 << 61) - 1
_SLOT_MASK = (1 << _SLOT) - 1


def _packed(values: list[int]) -> int:
    """Residues in [0, 2^61), one slot of 144 bits each, the first in the lowest bits."""
    width = _SLOT // 8
    return int.from_bytes(b"".join(x.to_bytes(width, "little") for x in values), "little")


def nonsingular_mod_prime(M: list[list[int]]) -> bool:
    """Is the square integer matrix M nonsingular modulo P = 2^61 − 1? (Then det M ≠ 0 over Z.)

    Gaussian elimination with every row packed into one integer, one 144-bit slot per entry, so that a row
    operation r + f·top (f ∈ [0, P)) is a few big-integer operations instead of p Python ones. Each slot is kept
    below B_t after t steps: folding x = hi·2^61 + lo to lo + hi (≡ x modulo P, since 2^61 ≡ 1) gives
    B_(t+1) ≤ 2^61 + (1 + 2^-61) B_t + 1, so B_t < (t + 2)·2^61 < 2^73 for p ≤ MAX_PIVOTS < 2^11, and
    x < (2^61 + 1)·B_t < 2^135 never carries into the next slot. Cost: p²/2 row operations on integers of at
    most 144·p bits, O(p³) bit operations in all; memory 18·p² bytes."""
    p = len(M)
    rows = [_packed([x % _PRIME for x in row]) for row in M]
    low = _packed([_LOW] * p)
    high = _packed([(1 << (_SLOT - 61)) - 1] * p)
    for _ in range(p):
        piv = next((i for i, r in enumerate(rows) if (r & _SLOT_MASK) % _PRIME), None)
        if piv is None:
            return False
        top = rows.pop(piv)
        inv = pow((top & _SLOT_MASK) % _PRIME, -1, _PRIME)
        reduced = []
        for r in rows:
            f = (r & _SLOT_MASK) * inv % _PRIME
            if f:
                r += (_PRIME - f) * top
                r = (r & low) + ((r >> 61) & high)
            reduced.append(r >> _SLOT)  # the eliminated slot is ≡ 0: drop it
        rows = reduced
    return True


def integer_nonsingular(M: list[list[int]]) -> bool:
    """Is the square integer matrix M nonsingular? Modulo 2^61 − 1 first; when singular there, by fraction-free
    (Bareiss) elimination, for at most MAX_EXACT_PIVOTS rows: after step c every entry is a minor of order
    c + 1, so of at most s_c = (c + 1)(B + log2(c + 1)) bits for entries of B bits (Hadamard), and the whole
    elimination is charged from these sizes before it starts. Cost O(p³) products of at most p·(B + log2 p)
    bits."""
    if nonsingular_mod_prime(M):
        return True
    p = len(M)
    if p > MAX_EXACT_PIVOTS:
        raise Reject(f"the minor is singular modulo 2^61 - 1 and too large ({p} > {MAX_EXACT_PIVOTS}) for exact "
                     "elimination")
    B = max((abs(x).bit_length() for row in M for x in row), default=0)
    work = 0
    for c in range(p):
        size = (c + 1) * (B + (c + 1).bit_length())
        work += (p - c - 1) ** 2 * (2 * int_cost(size, size) + int_cost(2 * size, size) + 3)
    charge(work, "exact elimination of a minor")
    A = [list(row) for row in M]
    prev = 1
    for c in range(p):
        piv = next((i for i in range(c, p) if A[i][c]), None)
        if piv is None:
            return False
        A[c], A[piv] = A[piv], A[c]
        top, lead = A[c], A[c][c]
        for i in range(c + 1, p):
            row, f = A[i], A[i][c]
            A[i] = [0] * (c + 1) + [(row[j] * lead - f * top[j]) // prev for j in range(c + 1, p)]
        prev = lead
    return True


def _det_nonzero(F, M: list) -> bool:
    """Is the square matrix M nonsingular? Over QQ with its rows scaled to integers (``integer_nonsingular``),
    else by exact Gaussian elimination with certified nonzero pivots, for at most MAX_EXACT_PIVOTS rows.
    Cost O(p^3)."""
    if isinstance(F, QQ) and M:
        rows = []
        for row in M:
            den = lcm((x.denominator for x in row), "a minor brought to integers")
            rows.append([x.numerator * (den // x.denominator) for x in row])
        return integer_nonsingular(rows)
    if len(M) > MAX_EXACT_PIVOTS:
        raise Reject(f"the minor is too large ({len(M)} > {MAX_EXACT_PIVOTS}) for exact elimination")
    M = [list(row) for row in M]
    for col in range(len(M)):
        piv = next((i for i in range(col, len(M)) if F.sign(M[i][col]) != 0), None)
        if piv is None:
            return False
        M[col], M[piv] = M[piv], M[col]
        inv = F.inverse(M[col][col])
        for i in range(col + 1, len(M)):
            f = M[i][col] * inv
            charge_products([f] * len(M[col]), M[col], "exact elimination", accumulate=False)
            charge_products(M[i], M[col], "exact elimination", accumulate=False)
            M[i] = [x - f * y for x, y in zip(M[i], M[col], strict=True)]
    return True


MAX_FREE = 24
MAX_PRODUCTS = 10**7    # k·m·n entries of the matrix W of Theorem 1
MAX_KERNEL_WORK = 1 << 22  # 2^d kernel candidates × p pivots, each candidate one Gray-code step
MAX_PIVOTS = 1280       # the minor's elimination costs p^3 (packed: p²/2 big-integer row operations)
MAX_CHECK_WORK = 2 * 10**7  # k·m·|free|·|pivots| integer products of the kernel description
MAX_FIELD_PRODUCTS = 10**5  # the same over a number field, where each product is a polynomial product


MAX_SPLIT_LEFT = 20    # the meet-in-the-middle table holds at most 2^20 residues
MAX_SPLIT_RIGHT = 22   # and at most 2^22 right subset sums are streamed past it
MAX_MATCH_WORK = 1 << 22  # residue matches × k·m·n products compared exactly
MAX_CONFIGURATIONS = 1 << 16
MAX_DOUBLED = 16
MAX_CONFIGURATION_WORK = 1 << 22  # configurations × hyperplanes × (g + 1)², plus subsets T × (d² + p d) × m


def kernel_bounds(products: int, pivots: int, free: int, km: int) -> str | None:
    """Why a kernel-form certificate exceeds the bounds, or None."""
    if products > MAX_PRODUCTS or pivots > MAX_PIVOTS or free > MAX_FREE or (1 << free) * max(pivots, 1) > \
            MAX_KERNEL_WORK or km * free * pivots > MAX_CHECK_WORK:
        return (f"k·m·n ≤ {MAX_PRODUCTS}, at most {MAX_PIVOTS} pivots and {MAX_FREE} free columns, 2^free · pivots "
                f"≤ {MAX_KERNEL_WORK}, k·m·free·pivots ≤ {MAX_CHECK_WORK}")
    return None


def split_bounds(products: int, n: int, split: int) -> str | None:
    """Why a meet-in-the-middle certificate exceeds the bounds, or None."""
    if products > MAX_PRODUCTS or not 0 < split < n or split > MAX_SPLIT_LEFT or n - split > MAX_SPLIT_RIGHT:
        return (f"k·m·n ≤ {MAX_PRODUCTS}, 0 < split < n, split ≤ {MAX_SPLIT_LEFT}, n − split ≤ {MAX_SPLIT_RIGHT}")
    return None


def configuration_count(p: int, d: int) -> int:
    """Σ_{t ≤ d} C(p, t) 2^(p−t) − 1: the configurations other than θ's own."""
    return sum(math.comb(p, t) << (p - t) for t in range(d + 1)) - 1


def configuration_bounds(products: int, p: int, d: int, m: int, degree: int = 1) -> str | None:
    """Why a configuration certificate exceeds the bounds, or None (checked before any work). Over a number field
    of degree δ each operation is a polynomial product: the work is charged 4δ² times."""
    if products > MAX_PRODUCTS or d > MAX_DOUBLED or p > 40:
        return f"k·m·n ≤ {MAX_PRODUCTS}, at most {MAX_DOUBLED} doubled hyperplanes and 40 hyperplanes"
    subsets = sum(math.comb(p, t) for t in range(d + 1))
    count = configuration_count(p, d)
    work = (count * p * (d // 2 + 1) ** 2 + subsets * (d * d + p * d) * m) * (1 if degree == 1 else 4 * degree ** 2)
    if count > MAX_CONFIGURATIONS or work > MAX_CONFIGURATION_WORK:
        return (f"at most {MAX_CONFIGURATIONS} configurations (here {count}) and {MAX_CONFIGURATION_WORK} "
                f"operations (here {work})")
    return None


def check_identifiable(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Theorem 1: live neurons, then the zero-factor evidence (kernel or meet in the middle) with pairwise
    independent rows, or MATH.md's configurations for antiparallel rows."""
    (t,) = nets
    antiparallel = isinstance(proof, dict) and "hyperplanes" in proof
    if antiparallel:
        p = keys(proof, {"nonzero_v", "nonzero_a", "hyperplanes", "doubled_minor", "configurations", "statement"},
                 "proof")
    else:
        p = keys(proof, {"nonzero_v", "nonzero_a", "zero_factor", "statement"}, "proof")
    if p["statement"] != ("Theorem 1 (antiparallel rows)" if antiparallel else "Theorem 1"):
        raise Reject("proof must cite 'Theorem 1' ('Theorem 1 (antiparallel rows)' with hyperplanes)")
    named = zip(seq(p["nonzero_v"], t.n, "proof.nonzero_v"), seq(p["nonzero_a"], t.n, "proof.nonzero_a"), strict=True)
    for i, (j, q) in enumerate(named):
        if F.sign(t.v[i][index(j, t.k, "nonzero_v")]) == 0 or F.sign(t.rows[i][index(q, t.m, "nonzero_a")]) == 0:
            raise Reject(f"neuron {i}: the named entry of v_i or a_i is zero")
    rep.checks["Theorem 1: every v_i != 0 and a_i != 0"] += 1
    if antiparallel:
        _check_configurations(F, t, p, rep)
        return
    keyed = []
    for r in t.rows:  # rows scaled so that the first nonzero entry of a_i is 1: equal iff dependent
        inv = F.inverse(next(x for x in r[:-1] if F.sign(x) != 0))
        keyed.append([x * inv for x in r])
    distinct_sorted(F, keyed, "two rows are linearly dependent")
    rep.checks["Theorem 1: rows pairwise linearly independent"] += 1
    if isinstance(p["zero_factor"], dict) and set(p["zero_factor"]) == {"split"}:
        _check_split(F, t, p["zero_factor"]["split"], rep)
        return
    z = keys(p["zero_factor"], {"rows", "pivots", "free", "R"}, "proof.zero_factor")
    n, m, k = t.n, t.m, t.k
    piv = [index(i, n, "proof.zero_factor.pivots") for i in seq(z["pivots"], None, "pivots")]
    free = [index(i, n, "proof.zero_factor.free") for i in seq(z["free"], None, "free")]
    rows = [index(r, k * m, "proof.zero_factor.rows") for r in seq(z["rows"], len(piv), "rows")]
    if sorted(piv + free) != list(range(n)) or len(set(rows)) != len(rows) or len(free) > MAX_FREE:
        raise Reject("pivots and free columns must partition the neurons (at most 24 free); rows distinct")
    problem = kernel_bounds(k * m * n, len(piv), len(free), k * m)
    if problem:
        raise Reject(f"beyond the checker's bounds for Theorem 1 ({problem})")
    R = [[F.number(x) for x in seq(row, len(free), "R")] for row in seq(z["R"], len(piv), "proof.zero_factor.R")]
    if isinstance(F, QQ):
        _kernel_in_integers(t, piv, free, rows, R)
    else:
        if k * m * n * max(len(free), 1) > MAX_FIELD_PRODUCTS:
            raise Reject(f"beyond the checker's bounds for Theorem 1 over a number field (k·m·n·free ≤ "
                         f"{MAX_FIELD_PRODUCTS})")
        _kernel_in_field(F, t, piv, free, rows, R)
    rep.checks[f"Theorem 1: no zero factor (rank minor, {(1 << len(free)) - 1} kernel candidates replayed)"] += 1


_P = (1 << 61) - 1


def _residues(t: Net) -> list[int]:
    """h_i = α^T v_i a_i^T β modulo 2^61 − 1 (a ring map Z_(P) → F_P), with α, β drawn from a hash of θ."""
    def text(x) -> str:  # hex: no int-to-text limit, and one spelling per number
        coeffs = x.c if hasattr(x, "c") else (Fraction(x),)
        return ",".join(f"{q.numerator:x}/{q.denominator:x}" for q in coeffs)

    digest = hashlib.sha256("|".join(text(x) for r, v in zip(t.rows, t.v, strict=True) for x in r + v).encode())
    rng = random.Random(digest.digest())
    alpha = [rng.randrange(1, _P) for _ in range(t.k)]
    beta = [rng.randrange(1, _P) for _ in range(t.m)]

    def res(x: Fraction) -> int:
        if x.denominator % _P == 0:
            raise Reject("a denominator is divisible by 2^61 - 1: the meet-in-the-middle form does not apply")
        return x.numerator * pow(x.denominator, -1, _P) % _P

    return [sum(s * res(x) for s, x in zip(alpha, v, strict=True)) *
            sum(s * res(x) for s, x in zip(beta, r[:-1], strict=True)) % _P for r, v in zip(t.rows, t.v, strict=True)]


def _sum_is_zero(cols: list, subset: list[int], k: int) -> bool:
    """Σ_{i ∈ subset} v_i a_i^T = 0, with each neuron as integers (v'_i, a'_i, d_i): v_i a_i^T = v'_i a'_i^T / d_i."""
    L = lcm((cols[i][2] for i in subset), "a subset sum")
    for j in range(k):
        total = None
        for i in subset:
            v, a, d = cols[i]
            if v[j]:
                f = v[j] * (L // d)
                total = [f * x for x in a] if total is None else [y + f * x for x, y in zip(a, total, strict=True)]
        if total is not None and any(total):
            return False
    return True


def _check_split(F, t: Net, split: object, rep: Report) -> None:
    """No nonempty subset of the w_i sums to 0: left residues in a table, right ones streamed in Gray-code order,
    every cancelling pair compared exactly. Cost 2^split + 2^(n−split) steps, O(2^split) memory."""
    n = t.n
    if not isinstance(F, QQ):  # over Q[x]/(p) a reducible p would let a zero factor at α go unmatched
        raise Reject("the meet-in-the-middle form is accepted over QQ only")
    if isinstance(split, bool) or not isinstance(split, int):
        raise Reject("proof.zero_factor.split must be an integer")
    problem = split_bounds(t.k * t.m * n, n, split)
    if problem:
        raise Reject(f"beyond the checker's bounds for Theorem 1 ({problem})")
    h = _residues(t)
    cols = []
    for i in range(n):
        (v, dv), (a, da) = _integers(t.v[i]), _integers(t.rows[i][:-1])
        cols.append((v, a, dv * da))
    left: dict[int, list[int]] = {}
    sums = [0]
    for x in h[:split]:
        sums += [(s + x) % _P for s in sums]
    for mask, s in enumerate(sums):
        left.setdefault(s, []).append(mask)
    del sums
    matches, s, rmask = 0, 0, 0
    for step in range(1 << (n - split)):
        if step:
            b = (step & -step).bit_length() - 1
            rmask ^= 1 << b
            s = (s + h[split + b] if rmask >> b & 1 else s - h[split + b]) % _P
        for lmask in left.get(-s % _P, ()):
            if lmask == rmask == 0:
                continue
            subset = [i for i in range(split) if lmask >> i & 1] + \
                [split + i for i in range(n - split) if rmask >> i & 1]
            matches += t.k * t.m * len(subset)
            if matches > MAX_MATCH_WORK:
                raise Reject(f"residue matches would need more than {MAX_MATCH_WORK} products to compare exactly")
            if _sum_is_zero(cols, subset, t.k):
                raise Reject(f"a zero factor exists: {subset}")
    rep.checks[f"Theorem 1: no zero factor (meet in the middle, 2^{split} + 2^{n - split} subset sums)"] += 1


def _rref(F, rows: list) -> tuple[list, list[int]]:
    """Reduced row echelon form (nonzero rows) and pivot columns, with exact zero tests."""
    R = [list(r) for r in rows]
    pivots: list[int] = []
    for col in range(len(R[0]) if R else 0):
        piv = next((i for i in range(len(pivots), len(R)) if F.sign(R[i][col]) != 0), None)
        if piv is None:
            continue
        top = len(pivots)
        R[top], R[piv] = R[piv], R[top]
        inv = F.inverse(R[top][col])
        R[top] = [x * inv for x in R[top]]
        for i in range(len(R)):
            if i != top and F.sign(R[i][col]) != 0:
                f = R[i][col]
                R[i] = [x - f * y for x, y in zip(R[i], R[top], strict=True)]
        pivots.append(col)
    return R[:len(pivots)], pivots


def _hyperplanes(F, t: Net, planes: list) -> list[tuple[list, list, list]]:
    """(u_H, J_H, N_H) for each listed hyperplane, after checking the listing: a partition of the neurons into
    hyperplanes of one neuron or of two antiparallel ones with a nonzero kink, all distinct."""
    out, keyed = [], []
    for h, pl in enumerate(planes):
        key = None
        J, N = [F.zero] * t.k, [F.zero] * t.k
        signs = []
        for i in pl:
            r = t.rows[i]
            lead = next(x for x in r[:-1] if F.sign(x) != 0)
            s = F.sign(lead)
            this = [x * F.inverse(lead) for x in r]
            if key is not None and any(F.sign(x - y) != 0 for x, y in zip(key, this, strict=True)):
                raise Reject(f"hyperplanes[{h}]: its neurons do not lie on one hyperplane")
            key, lam = this, (lead if s > 0 else -lead)
            signs.append(s)
            J = [x + lam * y for x, y in zip(J, t.v[i], strict=True)]
            if s < 0:
                N = [x + lam * y for x, y in zip(N, t.v[i], strict=True)]
        if len(signs) == 2 and (signs[0] == signs[1] or all(F.sign(x) == 0 for x in J)):
            raise Reject(f"hyperplanes[{h}]: two neurons must be antiparallel with a nonzero kink")
        out.append((key[:-1], J, N))
        keyed.append(key)
    distinct_sorted(F, keyed, "two listed hyperplanes coincide")
    return out


def _check_configurations(F, t: Net, p: dict, rep: Report) -> None:
    """MATH.md's decision for antiparallel rows: (a) fails by a minor, every configuration of (b) by another."""
    n, m, k = t.n, t.m, t.k
    planes = [[index(i, n, f"proof.hyperplanes[{h}]") for i in seq(pl, None, f"proof.hyperplanes[{h}]")]
              for h, pl in enumerate(seq(p["hyperplanes"], None, "proof.hyperplanes"))]
    if sorted(i for pl in planes for i in pl) != list(range(n)) or any(len(pl) not in (1, 2) for pl in planes):
        raise Reject("proof.hyperplanes must partition the neurons into lists of one or two")
    D = tuple(h for h, pl in enumerate(planes) if len(pl) == 2)
    d, count = len(D), len(planes)
    if not D:
        raise Reject("no doubled hyperplane: the zero-factor form applies")
    problem = configuration_bounds(k * m * n, count, d, m, 1 if isinstance(F, QQ) else len(F.p) - 1)
    if problem:
        raise Reject(f"beyond the checker's bounds for Theorem 1 ({problem})")
    info = _hyperplanes(F, t, planes)
    rep.checks["Theorem 1 (antiparallel rows): hyperplanes listed, pairs antiparallel with nonzero kinks"] += 1
    cols = [index(c, m, "proof.doubled_minor") for c in seq(p["doubled_minor"], d, "proof.doubled_minor")]
    if len(set(cols)) != d or not _det_nonzero(F, [[info[h][0][c] for c in cols] for h in D]):
        raise Reject("the doubled hyperplanes' normals: the stated minor is not nonsingular")
    rep.checks["Theorem 1 (antiparallel rows): the doubled normals are independent"] += 1
    layers = iter(seq(p["configurations"], sum(math.comb(count, s) for s in range(d + 1)), "proof.configurations"))
    refuted = 0
    for size in range(d + 1):
        g = (d - size) // 2
        for T in itertools.combinations(range(count), size):
            reduced = [u for u, _, _ in info]
            if T:
                R, pivots = _rref(F, [info[h][0] for h in T])
                reduced = [[x - sum((u[piv] * row[q] for piv, row in zip(pivots, R, strict=True)), F.zero)
                            for q, x in enumerate(u)] for u in reduced]
            S = [h for h in range(count) if h not in T]
            own = sum(1 << b for b, h in enumerate(S) if any(F.sign(x) != 0 for x in info[h][2])) if T == D else None
            masks = [mask for mask in range(1 << len(S)) if mask != own]
            layer = seq(next(layers), len(masks), f"proof.configurations (T = {list(T)})")
            for mask, minor in zip(masks, layer, strict=True):
                rows, cs = (seq(x, g + 1, "a minor") for x in seq(minor, 2, "a minor"))
                rows = [index(r, k, "a minor's row") for r in rows]
                cs = [index(c, m, "a minor's column") for c in cs]
                if len(set(rows)) != g + 1 or len(set(cs)) != g + 1:
                    raise Reject("a minor's rows and columns must be distinct")
                deltas = [([(J[j] if mask >> b & 1 else F.zero) - N[j] for j in rows], reduced[h])
                          for b, h in enumerate(S) for _, J, N in [info[h]]]
                M = [[sum((dl[a] * u[c] for dl, u in deltas), F.zero) for c in cs] for a in range(g + 1)]
                if not _det_nonzero(F, M):
                    raise Reject(f"configuration T = {list(T)}, choice {mask}: the stated minor of X' is singular")
                refuted += 1
    rep.checks[f"Theorem 1 (antiparallel rows): {refuted} configurations refuted by rank minors"] += 1


def _kernel_in_field(F, t: Net, piv: list, free: list, rows: list, R: list) -> None:
    """The minor, the kernel description and the kernel candidates of Theorem 1, in the field's arithmetic."""
    n, m, k = t.n, t.m, t.k
    W = [[t.v[i][j] * t.rows[i][q] for i in range(n)] for j in range(k) for q in range(m)] if n else []
    if not _det_nonzero(F, [[W[r][c] for c in piv] for r in rows]):
        raise Reject("the stated minor is singular")
    for r in range(len(W)):  # the free columns are the stated combinations of the pivot columns
        for b, f in enumerate(free):
            if W[r][f] != sum((W[r][c] * R[s][b] for s, c in enumerate(piv)), F.zero):
                raise Reject("the kernel description R does not match v_i a_i^T")
    # every kernel vector with 0/1 free part is not a 0/1 vector: x_pivots = −R x_free, visited in Gray-code
    # order so that each candidate costs one column update
    xs = [F.zero] * len(piv)
    for step in range(1, 1 << len(free)):
        b = (step & -step).bit_length() - 1
        sign = 1 if (step ^ (step >> 1)) >> b & 1 else -1
        xs = [x - R[s][b] if sign > 0 else x + R[s][b] for s, x in enumerate(xs)]
        if not any(F.sign(x) != 0 and F.sign(x - 1) != 0 for x in xs):
            raise Reject("a zero factor exists: the search record is wrong")


def _integers(xs: list) -> tuple[list[int], int]:
    """Integers and a positive common denominator d with xs = integers / d."""
    d = lcm((x.denominator for x in xs), "numbers brought to integers")
    return [x.numerator * (d // x.denominator) for x in xs], d


def _bits(x: int) -> int:
    return abs(x).bit_length()


def _column_integers(t: Net, i: int) -> tuple[list[int], list[int], int]:
    """Neuron i as integers (v'_i, a'_i, d_i) with v_i a_i^T = v'_i a'_i^T / d_i (the scalings charged by lcm)."""
    (v, dv), (a, da) = _integers(t.v[i]), _integers(t.rows[i][:-1])
    return v, a, dv * da


def _minor_nonsingular_mod_prime(t: Net, piv: list, rows: list) -> bool:
    """Is the rows × piv minor of W nonsingular modulo P = 2^61 − 1? Its entries v_c[j] a_c[q] are mapped to
    F_P entry by entry (x = p/q ↦ p q^-1 mod P, a ring map on rationals whose denominators P does not divide),
    so no product of long integers is formed; a denominator divisible by P gives False (then exact elimination
    decides). Cost O(n (k + m)) residues, each linear in its number's size, then ``nonsingular_mod_prime``."""
    inverses: dict[int, int] = {}

    def res(x: Fraction) -> int | None:
        d = x.denominator
        if d not in inverses:
            r = d % _PRIME
            inverses[d] = pow(r, -1, _PRIME) if r else 0
        inv = inverses[d]
        return x.numerator % _PRIME * inv % _PRIME if inv else None

    m = t.m
    V = {c: [res(x) for x in t.v[c]] for c in piv}
    A = {c: [res(x) for x in t.rows[c][:-1]] for c in piv}
    minor = []
    for r in rows:
        j, q = divmod(r, m)
        row = []
        for c in piv:
            x, y = V[c][j], A[c][q]
            if x is None or y is None:
                return False
            row.append(x * y % _PRIME)
        minor.append(row)
    return nonsingular_mod_prime(minor)


def _kernel_in_integers(t: Net, piv: list, free: list, rows: list, R: list) -> None:
    """As ``_kernel_in_field`` over Q, with every column v_i a_i^T = (v'_i a'_i^T) / d_i scaled to integers and
    each equation multiplied out, so that the k·m·|free|·|pivots| products are integer products (no gcds)."""
    m = t.m
    flat, D = _integers([x for row in R for x in row])  # x_pivots = −R x_free, as integers over D
    width = max([D.bit_length()] + [abs(x).bit_length() + len(free) for x in flat])
    steps = ((1 << len(free)) - 1) * len(piv)
    walk = steps * (width // 4096)  # every step adds integers of at most ``width`` bits (linear in them)
    if not fits(walk):  # refused before any of the work
        raise Reject(f"the Gray-code walk ({steps} additions of {width}-bit integers) would exceed the checker's "
                     "work budget (certificates/FORMAT.md, Bounds)")
    if not _minor_nonsingular_mod_prime(t, piv, rows):
        if len(piv) > MAX_EXACT_PIVOTS:
            raise Reject(f"the stated minor is singular modulo 2^61 - 1 and too large ({len(piv)} > "
                         f"{MAX_EXACT_PIVOTS}) for exact elimination")
        pivot_cols = {c: _column_integers(t, c) for c in piv}
        # column c of the minor times d_c (≠ 0) is an integer column: the same rank, and no Fractions to form
        charge(sum(int_cost(max(map(_bits, pivot_cols[c][0])), max(map(_bits, pivot_cols[c][1]))) for c in piv)
               * len(rows), "forming the minor")
        minor = [[pivot_cols[c][0][r // m] * pivot_cols[c][1][r % m] for c in piv] for r in rows]
        if not integer_nonsingular(minor):
            raise Reject("the stated minor is singular")
    if not free:
        return
    cols = [_column_integers(t, i) for i in range(t.n)]
    pivot_bits = max((abs(y).bit_length() for c in piv for y in (*cols[c][0], *cols[c][1])), default=0)
    for b, f in enumerate(free):  # d_f^-1 v'_f a'_f^T = Σ_s R[s][b] d_ps^-1 v'_ps a'_ps^T, times L·D
        # this column's own denominator: D, the common one of R, is what the Gray-code walk compares with below
        coeffs, Dc = _integers([R[s][b] for s in range(len(piv))])
        L = lcm([cols[f][2], *(cols[c][2] for c in piv)], "the kernel description")
        lhs = Dc * (L // cols[f][2])
        scaled = [coeffs[s] * (L // cols[c][2]) for s, c in enumerate(piv)]
        vf, af = cols[f][0], cols[f][1]
        big = max(pivot_bits, *(abs(x).bit_length() for x in [lhs, *scaled, *vf, *af]))
        charge(t.k * (t.m + 1) * (len(piv) + 1) * int_cost(2 * big, big), "the kernel description")
        for j in range(t.k):
            u = [w * cols[c][0][j] for w, c in zip(scaled, piv, strict=True)]
            left = lhs * vf[j]
            for q in range(m):
                if left * af[q] != sum(x * cols[c][1][q] for x, c in zip(u, piv, strict=True)):
                    raise Reject("the kernel description R does not match v_i a_i^T")
    columns = [[flat[s * len(free) + b] for s in range(len(piv))] for b in range(len(free))]
    charge(walk, "the Gray-code walk")
    xs = [0] * len(piv)
    for step in range(1, 1 << len(free)):
        b = (step & -step).bit_length() - 1
        on = (step ^ (step >> 1)) >> b & 1
        xs = [x - c if on else x + c for x, c in zip(xs, columns[b], strict=True)]
        if all(x == 0 or x == D for x in xs):
            raise Reject("a zero factor exists: the search record is wrong")



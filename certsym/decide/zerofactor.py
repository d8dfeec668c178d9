"""The zero-factor problem of Theorem 1: is there a nonempty F ⊆ {1..n} with Σ_{i∈F} v_i a_i^T = 0?

A subset-sum problem over the vectors w_i = vec(v_i a_i^T) ∈ F^{km} (MATH.md, "Fibres"). Decided in order:
1. rank: if the w_i are linearly independent there is none (evidence: a nonsingular minor). Over Q the minor
   is first sought modulo P among rows drawn at random, without forming W: O(n²) entries and O(n³) word
   operations in flint, where the exact rank of W costs O(n² km) operations on rationals;
2. small factors: pairs and triples, by hashing residues (O(n) and O(n²)), so that an obvious zero factor
   is found whatever n is;
3. the cheaper of two exhaustive searches, each replayed by the checker:
   - the kernel: the 0/1 points of {x : W x = 0} through its free coordinates, 2^d candidates for a kernel
     of dimension d;
   - meet in the middle: the subset sums of the first s and of the last n − s vectors, 2^s + 2^(n−s) of
     them, each reduced to one residue modulo P = 2^61 − 1 by a linear form; a zero factor makes a left
     and a right residue cancel, so residues that never cancel prove that none exists, and the few that
     do are compared exactly.
   The linear form is Z ↦ L(α^T Z β), with α, β and the Q-linear L: F → F_P drawn from a hash of θ, so that
   nobody can aim collisions at it. Any form is sound: only its collisions cost time.
Cost: O(n k m) for the residues, O(n² km) for the rank, then min(2^d, 2^s + 2^(n−s)) steps.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from flint import fmpq_mat, nmod_mat

from certsym.core.linalg import independent_rows, rref
from certsym.core.network import Network
from certsym.numbers import QQ, Scalar

P = (1 << 61) - 1
MAX_LEFT = 20  # the meet-in-the-middle table holds at most 2^20 residues


class SearchTooLarge(Exception):
    """The exhaustive search would exceed the budget; the message states its cost."""


@dataclass
class ZeroFactorEvidence:
    """No nonempty F with Σ_F v_i a_i^T = 0.

    Kernel form (``split`` None): with ``free`` empty, the n vectors are independent and ``rows`` index a
    nonsingular n×n minor; otherwise the kernel is {x : x_P = −R x_free} (P = ``pivots``; ``rows`` index a
    nonsingular minor of the pivot columns) and none of its 2^d points with x_free ∈ {0,1}^d \\ {0} is a
    0/1 vector. Meet-in-the-middle form: no subset of neurons 0..split−1 cancels a subset of split..n−1."""

    rows: list[int] = field(default_factory=list)
    pivots: list[int] = field(default_factory=list)
    free: list[int] = field(default_factory=list)
    R: list[list[Scalar]] = field(default_factory=list)
    split: int | None = None
    n: int = 0

    @property
    def search_size(self) -> int:
        if self.split is not None:
            return (1 << self.split) + (1 << (self.n - self.split)) - 2
        return (1 << len(self.free)) - 1 if self.free else 0


def vectors(theta: Network) -> list[list[Scalar]]:
    """w_i = vec(v_i a_i^T) ∈ F^{km}, row-major over (output j, input q). Cost O(n k m)."""
    return [[nu.v[j] * nu.a[q] for j in range(theta.k) for q in range(theta.m)] for nu in theta.neurons()]


def _subset_sum_is_zero(theta: Network, subset: list[int]) -> bool:
    F = theta.field
    total = [[F.zero] * theta.m for _ in range(theta.k)]
    for i in subset:
        v, a = [row[i] for row in theta.M], theta.A[i]
        for j in range(theta.k):
            if v[j] != 0:
                total[j] = [t + v[j] * x for t, x in zip(total[j], a, strict=True)]
    return all(x == 0 for row in total for x in row)


class Residues:
    """h_i = L(α^T (v_i a_i^T) β) ∈ F_P for every neuron: a linear image of w_i. ``None`` when a denominator is
    divisible by P (then residues cannot be formed). Cost O(n (k + m) deg)."""

    def __init__(self, theta: Network):
        F = theta.field
        digest = hashlib.sha256(repr((F, theta.M, theta.A)).encode()).digest()
        rng = random.Random(digest)
        alpha = [rng.randrange(1, P) for _ in range(theta.k)]
        beta = [rng.randrange(1, P) for _ in range(theta.m)]
        self.values: list[int] | None
        if F is QQ:
            def res(x) -> int:
                q = int(x.q)
                if q % P == 0:
                    raise ZeroDivisionError
                return int(x.p) * pow(q, -1, P) % P
            try:
                self.values = [sum(s * res(x) for s, x in zip(alpha, nu.v, strict=True)) *
                               sum(s * res(x) for s, x in zip(beta, nu.a, strict=True)) % P for nu in theta.neurons()]
            except ZeroDivisionError:
                self.values = None
            return
        gamma = [rng.randrange(1, P) for _ in range(64)]
        self.values = []
        for nu in theta.neurons():  # the product is formed in F, then mapped Q-linearly
            e = sum((s * x for s, x in zip(alpha, nu.v, strict=True)), F.zero) * \
                sum((s * x for s, x in zip(beta, nu.a, strict=True)), F.zero)
            total = 0
            for g, c in zip(gamma, F.coefficients(e), strict=False):
                if int(c.q) % P == 0:
                    self.values = None
                    return
                total += g * int(c.p) * pow(int(c.q), -1, P)
            self.values.append(total % P)


def independent_minor(theta: Network, draws: int = 3) -> list[int] | None:
    """Rows r_1..r_n of W (km × n, columns w_i = vec(v_i a_i^T)) whose minor is nonsingular modulo P, or None.

    With V and A scaled to integers by their common denominators (nonzero scalars, so the rank is the same),
    the determinant of a minor's residues modulo P is the residue of its integer determinant: a minor nonsingular
    modulo P has a nonzero determinant over Q, so the w_i are linearly independent and no zero factor exists
    (the checker replays the minor the same way). Generic weights make any n rows work; the first draw takes n
    rows at random (seeded, so the answer is reproducible), later ones 2n, then every row, keeping a maximal
    independent set. None over a number field, when n > km, when a denominator is divisible by P, or when the
    rank modulo P is below n (then the exact rank decides). Cost O(n (k + m)) residues, O(n · rows) entries and
    O(n² · rows) word operations in flint per draw."""
    n, k, m = theta.n, theta.k, theta.m
    if theta.field is not QQ or n == 0 or n > k * m:
        return None
    # V and A times their common denominators (nonzero scalars: the same rank), reduced modulo P in flint
    residues = []
    for rows, cols, mat in ((k, n, theta.M), (n, m, theta.A)):
        num, den = fmpq_mat(rows, cols, [x for row in mat for x in row]).numer_denom()
        if int(den) % P == 0:
            return None
        flat = [int(x) for x in nmod_mat(num, P).entries()]
        residues.append([flat[r * cols:(r + 1) * cols] for r in range(rows)])
    V, A = residues  # k × n and n × m
    rng = random.Random(0)
    for size in [n] * (draws - 2) + [min(2 * n, k * m), k * m]:
        rows = sorted(rng.sample(range(k * m), size)) if size < k * m else list(range(k * m))
        entries = [V[r // m][i] * A[i][r % m] % P for i in range(n) for r in rows]  # the minor's transpose
        R, rank = nmod_mat(n, size, entries, P).rref()
        if rank == n:
            flat = R.entries()
            return [rows[next(c for c in range(size) if int(flat[t * size + c]))] for t in range(n)]
    return None


def small_zero_factor(theta: Network, residues: Residues) -> list[int] | None:
    """A zero factor of two or three neurons, if one exists (one never has one neuron: w_i ≠ 0 for live
    neurons). Residues find the candidates, exact sums confirm them. Cost O(n²) lookups, O(n) for pairs."""
    h = residues.values
    if h is None:
        return None
    where: dict[int, list[int]] = {}
    for i, x in enumerate(h):
        for j in where.get((-x) % P, []):
            if _subset_sum_is_zero(theta, [j, i]):
                return [j, i]
        where.setdefault(x, []).append(i)
    if len(h) > 1500:
        return None
    for i in range(len(h)):
        for j in range(i + 1, len(h)):
            for t in where.get((-h[i] - h[j]) % P, []):
                if t > j and _subset_sum_is_zero(theta, [i, j, t]):
                    return [i, j, t]
    return None


def _sums(h: list[int]) -> list[int]:
    """All 2^len(h) subset sums modulo P; index = the subset's bit mask."""
    sums = [0]
    for x in h:
        sums += [(s + x) % P for s in sums]
    return sums


def meet_in_the_middle(theta: Network, residues: Residues, split: int):
    """Every zero factor: subset sums of neurons 0..split−1 against those of split..n−1, residues matched by
    a table and confirmed exactly. Cost 2^split + 2^(n−split) additions, plus one exact sum per match."""
    h = residues.values
    assert h is not None
    left: dict[int, list[int]] = {}
    for mask, s in enumerate(_sums(h[:split])):
        left.setdefault(s, []).append(mask)
    for rmask, s in enumerate(_sums(h[split:])):
        for lmask in left.get((-s) % P, []):
            if lmask == rmask == 0:
                continue
            subset = [i for i in range(split) if lmask >> i & 1] + \
                [split + i for i in range(len(h) - split) if rmask >> i & 1]
            if _subset_sum_is_zero(theta, subset):
                yield sorted(subset)


def kernel(theta: Network) -> tuple[list, list[int], list[int], list[list[Scalar]]]:
    """W (km × n, columns vec(v_i a_i^T)), its pivot and free columns, and R with x_P = −R x_free.
    Cost O(n² km) (rref)."""
    n = theta.n
    w = vectors(theta)
    W = [[w[i][r] for i in range(n)] for r in range(len(w[0]) if w else 0)]
    R, pivots = rref(theta.field, W)
    free = [i for i in range(n) if i not in pivots]
    return W, pivots, free, [[row[f] for f in free] for row in R]


def kernel_zero_factors(theta: Network, ker: tuple):
    """Every nonempty F with Σ_F v_i a_i^T = 0, in the kernel's enumeration order (free coordinates as a
    binary counter). Cost 2^d · O(n d)."""
    F, n = theta.field, theta.n
    _, pivots, free, Rf = ker
    for mask in range(1, 1 << len(free)):
        x = [F.zero] * n
        for b, f in enumerate(free):
            if mask >> b & 1:
                x[f] = F.one
        for t, p in enumerate(pivots):
            x[p] = -sum((Rf[t][b] for b in range(len(free)) if mask >> b & 1), F.zero)
        if all(v == 0 or v == 1 for v in x):
            yield [i for i in range(n) if x[i] == 1]


def _independent(rows: list[int], n: int) -> ZeroFactorEvidence:
    """The kernel form's evidence when the n vectors are independent: a nonsingular minor, no free column."""
    return ZeroFactorEvidence(rows, list(range(n)), [], [[] for _ in range(n)], n=n)


def enumerate_all(theta: Network, budget: int, ker: tuple | None = None):
    """(the zero factors, in some order, as a generator; evidence that none exists, or None). The cheaper
    exhaustive method is chosen (module docstring); raises SearchTooLarge when it exceeds ``budget`` steps,
    the message stating its cost. Small zero factors come first when there are any."""
    n = theta.n
    if ker is None:
        rows = independent_minor(theta)
        if rows is not None:
            return iter(()), _independent(rows, n)
        ker = kernel(theta)
    W, pivots, free, Rf = ker
    if not free:
        rows = independent_rows(theta.field, [[W[r][p] for p in pivots] for r in range(len(W))])
        return iter(()), _independent(rows, n)
    residues = Residues(theta)
    kernel_cost = (1 << len(free)) - 1
    split = min((n + 1) // 2, MAX_LEFT)
    mitm_cost = (1 << split) + (1 << (n - split)) if residues.values is not None else None
    # over a number field the kernel form is preferred whenever it fits: only it can be certified there
    certifiable_kernel = theta.field is not QQ and kernel_cost <= budget
    if mitm_cost is not None and mitm_cost < kernel_cost and not certifiable_kernel:
        if mitm_cost > budget:
            raise SearchTooLarge(f"the zero-factor search needs 2^{split} + 2^{n - split} = {mitm_cost} subset sums "
                                 f"(meet in the middle; the kernel has dimension {len(free)}, {kernel_cost} "
                                 f"candidates), over the limit {budget}; raise --max-search to allow it")
        return meet_in_the_middle(theta, residues, split), ZeroFactorEvidence(split=split, n=n)
    if kernel_cost > budget:
        raise SearchTooLarge(f"the zero-factor search needs {kernel_cost} kernel candidates (kernel dimension "
                             f"{len(free)}), over the limit {budget}; raise --max-search to allow it")
    rows = independent_rows(theta.field, [[W[r][p] for p in pivots] for r in range(len(W))])
    return kernel_zero_factors(theta, ker), ZeroFactorEvidence(rows, pivots, free, Rf, n=n)


def search(theta: Network, budget: int) -> tuple[list[int] | None, ZeroFactorEvidence | None]:
    """Theorem 1's zero-factor condition: (a zero factor, None) or (None, evidence that none exists). Pairs
    and triples are tried first, so an obvious zero factor is found even beyond the budget. Raises
    SearchTooLarge as ``enumerate_all``. Cost: see the module docstring."""
    rows = independent_minor(theta)
    if rows is not None:
        return None, _independent(rows, theta.n)
    ker = kernel(theta)
    if ker[2]:  # dependent vectors: a zero factor is possible
        small = small_zero_factor(theta, Residues(theta))
        if small is not None:
            return small, None
    found, evidence = enumerate_all(theta, budget, ker)
    first = next(found, None)
    return (first, None) if first is not None else (None, evidence)

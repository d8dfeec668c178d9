"""Theorem 1 (generic identifiability) and Corollary 9 (counterexamples), decided exactly.

θ is identifiable when its fibre ρ^{-1}(ρ(θ)) ∩ Ω(m, n, k) is exactly the orbit H_n·θ. MATH.md: if all
v_i ≠ 0, all a_i ≠ 0 and the rows r_i are pairwise linearly independent, the fibre is ⊔_F H_n·θ^F over
the F ⊆ {1..n} with Σ_{i∈F} v_i a_i^T = 0 (θ^F negates the rows in F and adds Σ_F v_i b_i to c). So
under those conditions θ is identifiable iff no nonempty F is a "zero factor".

Decision, in order, each NOT IDENTIFIABLE verdict with an explicit θ' in the fibre outside the orbit:
1. a dead neuron (v_i = 0): give it another row;
2. a constant neuron (a_i = 0): fold it into c (or drop it when it contributes nothing);
3. positively proportional rows r_j = λ r_i: move all of v_j onto v_i (merge lemma);
4. an antisymmetric pair (antiparallel rows with zero kink): shift its hyperplane, fix c (move 4);
5. antiparallel rows with a NONZERO kink (like |x| = σ(x) + σ(−x)) fall outside MATH.md's setting:
   when the directions of such hyperplanes are linearly dependent, their output weights can be
   re-split (a continuous counterexample); otherwise certsym refuses to decide (|x| itself is
   identifiable although its rows are dependent, so pairwise independence is not necessary);
6. otherwise the zero-factor problem: a rank test on the n vectors vec(v_i a_i^T) ∈ F^{km}; if they
   are dependent, exact enumeration of the 0/1 vectors of the kernel through its free coordinates
   (2^d candidates for a kernel of dimension d, refused beyond ``max_search``).
Cost: O(n(m + k)) plus the rank computation O(n² km), plus 2^d · O(n d) for the search.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from certsym.equivalence import Verdict, decide
from certsym.errors import InputError
from certsym.linalg import independent_rows, rref
from certsym.network import Network, Neuron
from certsym.numbers import Scalar
from certsym.reduction import hyperplane_key

DEFAULT_MAX_SEARCH = 1 << 16


class Undecided(InputError):
    """certsym refuses to decide (search over the limit, or outside the supported setting)."""


@dataclass
class ZeroFactorEvidence:
    """No nonempty F with Σ_F v_i a_i^T = 0. With ``free`` empty: the n vectors are independent and
    ``rows`` index a nonsingular n×n minor. Otherwise the kernel is {x : x_P = −R x_free} (P =
    ``pivots``; ``rows`` index a nonsingular minor of the pivot columns) and none of its 2^d points
    with x_free ∈ {0,1}^d \\ {0} is a 0/1 vector."""

    rows: list[int]
    pivots: list[int]
    free: list[int] = field(default_factory=list)
    R: list[list[Scalar]] = field(default_factory=list)

    @property
    def search_size(self) -> int:
        return (1 << len(self.free)) - 1 if self.free else 0


@dataclass
class Identifiability:
    identifiable: bool
    theta: Network
    reason: str
    evidence: ZeroFactorEvidence | None = None
    counterexample: Network | None = None
    equivalence: Verdict | None = None
    zero_factor: list[int] | None = None

    def __bool__(self) -> bool:
        return self.identifiable


def zero_factor_vectors(theta: Network) -> list[list[Scalar]]:
    """w_i = vec(v_i a_i^T) ∈ F^{km}, row-major over (output j, input q)."""
    return [[nu.v[j] * nu.a[q] for j in range(theta.k) for q in range(theta.m)] for nu in theta.neurons()]


def flip(theta: Network, F: list[int]) -> Network:
    """θ^F: the rows r_i, i ∈ F, negated and c += Σ_{i∈F} v_i b_i (MATH.md, fibres)."""
    neurons = theta.neurons()
    c = list(theta.c)
    for i in F:
        nu = neurons[i]
        neurons[i] = Neuron(tuple(-x for x in nu.a), -nu.b, nu.v)
        c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
    return Network.from_neurons(neurons, c, theta.field, theta.m)


def _not(theta: Network, reason: str, neurons: list[Neuron], c, zero_factor=None) -> Identifiability:
    other = Network.from_neurons(neurons, c, theta.field, theta.m)
    verdict = decide(theta, other)
    assert verdict.equivalent, "a constructed counterexample must realize the same function"
    return Identifiability(False, theta, reason, counterexample=other, equivalence=verdict, zero_factor=zero_factor)


def decide_identifiable(theta: Network, max_search: int = DEFAULT_MAX_SEARCH) -> Identifiability:
    """Theorem 1's condition, decided exactly (see the module docstring for the steps and costs)."""
    F, m, k = theta.field, theta.m, theta.k
    neurons = theta.neurons()
    c = list(theta.c)
    zero_v = (F.zero,) * k
    for i, nu in enumerate(neurons):
        if all(x == 0 for x in nu.v):
            row = (*nu.a, nu.b)
            new = tuple(-x for x in row) if any(x != 0 for x in row) else (F.one,) + (F.zero,) * m
            neurons[i] = Neuron(new[:m], new[m], nu.v)
            return _not(theta, f"neuron {i} is dead (v_i = 0): its row is free", neurons, c)
        if all(x == 0 for x in nu.a):
            if nu.b > 0:
                c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
            neurons[i] = Neuron((F.zero,) * m, F.zero, zero_v)
            return _not(theta, f"neuron {i} is constant (a_i = 0): it can be folded into c", neurons, c)
    planes: dict[tuple, dict[int, tuple[int, Scalar]]] = {}
    for i, nu in enumerate(neurons):
        key, s, lam = hyperplane_key(nu.a, nu.b)
        side = planes.setdefault(key, {})
        if s in side:
            j0, lam0 = side[s]
            mu = lam / lam0  # r_i = μ r_j0, μ > 0
            target = neurons[j0]
            neurons[j0] = Neuron(target.a, target.b, tuple(x + mu * y for x, y in zip(target.v, nu.v, strict=True)))
            neurons[i] = Neuron(nu.a, nu.b, zero_v)
            return _not(theta, f"rows {j0} and {i} are positively proportional: weight can move", neurons, c)
        side[s] = (i, lam)
    doubled = []
    for key, side in planes.items():
        if len(side) == 2:
            (i, lam_i), (j, lam_j) = side[1], side[-1]
            J = [lam_i * x + lam_j * y for x, y in zip(neurons[i].v, neurons[j].v, strict=True)]
            if all(x == 0 for x in J):  # an antisymmetric pair: move its hyperplane (σ(z) − σ(−z) = z)
                for t in (i, j):
                    nu = neurons[t]
                    scale = lam_i if t == i else -lam_j
                    neurons[t] = Neuron(nu.a, nu.b + scale, nu.v)
                c = [cj - vj * lam_i for cj, vj in zip(c, neurons[i].v, strict=True)]
                return _not(theta, f"neurons {i} and {j} form an antisymmetric pair: its hyperplane can move",
                            neurons, c)
            doubled.append((key, i, j, lam_i, lam_j))
    if doubled:
        return _antiparallel(theta, doubled)
    return _zero_factor(theta, max_search)


def _antiparallel(theta: Network, doubled: list) -> Identifiability:
    """Hyperplanes carrying two antiparallel neurons with a nonzero kink: if their directions u_H are
    linearly dependent (Σ c_H u_H = 0), shifting t_H = c_H e_1 of N_H between the two neurons of each H
    keeps the linear part, and c absorbs −Σ t_H β_H. Otherwise: refuse."""
    F, m = theta.field, theta.m
    dirs = [list(key[:m]) for key, *_ in doubled]
    basis = independent_rows(F, dirs)
    if len(basis) == len(dirs):
        raise Undecided("antiparallel neurons with a nonzero kink (as in |x| = σ(x) + σ(−x)) lie outside "
                        "Theorem 1's setting (pairwise independent rows); certsym does not decide this case")
    # a dependency among the directions: the kernel of the m × |D| matrix of columns u_H
    R, pivots = rref(F, [[d[q] for d in dirs] for q in range(m)])
    f = next(col for col in range(len(dirs)) if col not in pivots)
    coef = [F.zero] * len(dirs)
    coef[f] = F.one
    for t, p in enumerate(pivots):
        coef[p] = -R[t][f]
    neurons = theta.neurons()
    c = list(theta.c)
    for (key, i, j, lam_i, lam_j), t_h in zip(doubled, coef, strict=True):
        if t_h == 0:
            continue
        shift = [t_h] + [F.zero] * (theta.k - 1)  # ΔN_H = t_H e_1
        ni, nj = neurons[i], neurons[j]
        neurons[i] = Neuron(ni.a, ni.b, tuple(x - s / lam_i for x, s in zip(ni.v, shift, strict=True)))
        neurons[j] = Neuron(nj.a, nj.b, tuple(x + s / lam_j for x, s in zip(nj.v, shift, strict=True)))
        c = [cj + s * key[m] for cj, s in zip(c, shift, strict=True)]
    return _not(theta, "antiparallel neurons on hyperplanes with dependent directions: output weights can be "
                "re-split", neurons, c)


def _kernel(theta: Network) -> tuple[list, list[int], list[int], list[list[Scalar]]]:
    """W (km × n, columns vec(v_i a_i^T)), its pivot and free columns, and R with x_P = −R x_free."""
    F, n = theta.field, theta.n
    w = zero_factor_vectors(theta)
    W = [[w[i][r] for i in range(n)] for r in range(len(w[0]) if w else 0)]
    R, pivots = rref(F, W)
    free = [i for i in range(n) if i not in pivots]
    return W, pivots, free, [[row[f] for f in free] for row in R]


def zero_factors(theta: Network, cap: int, max_search: int = DEFAULT_MAX_SEARCH, kernel: tuple | None = None):
    """Every nonempty F with Σ_F v_i a_i^T = 0, in enumeration order, at most ``cap`` of them.

    Yields sorted index lists; the 0/1 kernel vectors are enumerated through the free coordinates.
    Raises Undecided when the kernel has more than ``max_search`` candidates. ``kernel``: ``_kernel(theta)``,
    when the caller has it already."""
    F, n = theta.field, theta.n
    _, pivots, free, Rf = kernel or _kernel(theta)
    if (1 << len(free)) - 1 > max_search:
        raise Undecided(f"the zero-factor search needs {(1 << len(free)) - 1} candidates (kernel dimension "
                        f"{len(free)}), over the limit {max_search}; raise --max-search to allow it")
    found = 0
    for mask in range(1, 1 << len(free)):
        x = [F.zero] * n
        for b, f in enumerate(free):
            if mask >> b & 1:
                x[f] = F.one
        for t, p in enumerate(pivots):
            x[p] = -sum((Rf[t][b] for b in range(len(free)) if mask >> b & 1), F.zero)
        if all(v == 0 or v == 1 for v in x):
            yield [i for i in range(n) if x[i] == 1]
            found += 1
            if found >= cap:
                return


def _zero_factor(theta: Network, max_search: int) -> Identifiability:
    F = theta.field
    kernel = _kernel(theta)
    W, pivots, free, Rf = kernel
    subset = next(zero_factors(theta, 1, max_search, kernel), None)
    if subset is not None:
        flipped = flip(theta, subset)
        return _not(theta, f"zero factor F = {subset}: Σ_F v_i a_i^T = 0, so θ^F is in the fibre",
                    flipped.neurons(), flipped.c, zero_factor=subset)
    rows = independent_rows(F, [[W[r][p] for p in pivots] for r in range(len(W))])
    if not free:
        return Identifiability(True, theta, "Theorem 1: live neurons, independent rows, independent v_i a_i^T",
                               ZeroFactorEvidence(rows, pivots, [], [[] for _ in pivots]))
    return Identifiability(True, theta, "Theorem 1: live neurons, independent rows, no zero factor "
                           f"({(1 << len(free)) - 1} kernel candidates excluded)",
                           ZeroFactorEvidence(rows, pivots, free, Rf))


@dataclass
class Fibre:
    """The fibre ρ^{-1}(ρ(θ)) ∩ Ω(m, n, k), described.

    Minimal θ with pairwise independent rows: the fibre is ⊔_F H_n·θ^F over ``zero_factors`` (and F = ∅).
    Otherwise ``free_directions`` names the moves that leave ρ(θ) unchanged."""

    minimal: bool
    zero_factors: list[list[int]]
    complete: bool
    free_directions: list[str]
    note: str = ""


def describe_fibre(theta: Network, cap: int = 1000, max_search: int = DEFAULT_MAX_SEARCH) -> Fibre:
    """MATH.md "Fibres": the zero-factor orbits of a minimal θ (enumeration capped at ``cap``), or
    the free directions of a non-minimal θ. Cost as ``decide_identifiable``, times the sets listed."""
    free: list[str] = []
    planes: dict[tuple, dict[int, list[int]]] = {}
    for i, nu in enumerate(theta.neurons()):
        if all(x == 0 for x in nu.v):
            free.append(f"neuron {i} is dead (v = 0): its row (a, b) is free")
        elif all(x == 0 for x in nu.a):
            free.append(f"neuron {i} is constant (a = 0): b and v may change while v·σ(b) + c is kept")
        else:
            key, s, _ = hyperplane_key(nu.a, nu.b)
            planes.setdefault(key, {1: [], -1: []})[s].append(i)
    antiparallel = []
    for sides in planes.values():
        for s in (1, -1):
            if len(sides[s]) > 1:
                free.append(f"neurons {sides[s]} have positively proportional rows: their output weights may be "
                            "re-split (merge lemma)")
        if sides[1] and sides[-1]:
            antiparallel.append((sides[1][0], sides[-1][0]))
    if free:
        return Fibre(False, [], True, free)
    for i, j in antiparallel:
        free.append(f"neurons {i} and {j} have antiparallel rows: if they form an antisymmetric pair their "
                    "hyperplane may move; otherwise their weights may re-split against other such pairs")
    if antiparallel:
        return Fibre(True, [], False, free, "rows are not pairwise independent: outside the zero-factor description")
    sets = list(zero_factors(theta, cap, max_search))
    complete = len(sets) < cap
    note = "" if complete else f"enumeration stopped at the cap of {cap} sets; raise --cap to see more"
    return Fibre(True, sets, complete, [], note)


def perturb(theta: Network, eps, max_search: int = DEFAULT_MAX_SEARCH, tries: int = 64) -> Identifiability:
    """Theorem 1 (density): an identifiable θ' with max-norm distance ≤ eps from θ.

    Each entry moves by eps·t/97 with t a deterministic pseudo-random integer in [−97, 97] \\ {0}; the
    identifiable set is open and dense (its complement lies in finitely many proper algebraic
    subsets), so a few tries suffice. Cost: ``tries`` identifiability decisions at most."""
    import random

    F = theta.field
    if not eps > 0:
        raise InputError("eps must be positive")
    for seed in range(tries):
        rng = random.Random(seed)

        def nudge(x, rng=rng):
            return x + eps * F(rng.choice([-1, 1]) * rng.randint(1, 97)) / 97

        other = Network.build([[nudge(x) for x in row] for row in theta.M],
                              [[nudge(x) for x in row] for row in theta.A],
                              [nudge(x) for x in theta.b], [nudge(x) for x in theta.c], F, theta.m)
        try:
            verdict = decide_identifiable(other, max_search)
        except Undecided:
            continue
        if verdict.identifiable:
            return verdict
    raise Undecided(f"no identifiable perturbation found in {tries} tries")  # pragma: no cover


def converse_failures(m: int, n: int, k: int, R: int, limit: int, max_grid: int = 2_000_000):
    """Corollary 9's converse fails: parameters of the integer grid {−R..R} (c = 0) with all neurons
    live and pairwise independent rows (so Stab_{H_n}(A, b) is trivial), that are still not identifiable
    (a zero factor exists). Yields at most ``limit`` identifiability verdicts with their counterexamples.
    Cost: (2R + 1)^{n(m + k + 1)} grid points, refused beyond ``max_grid``."""
    import itertools

    from certsym.numbers import QQ

    size = (2 * R + 1) ** (n * (m + k + 1))
    if size > max_grid:
        raise Undecided(f"the grid has {size} points, over the limit {max_grid}; use a smaller range or shape")
    values = [QQ(t) for t in range(-R, R + 1)]
    found = 0
    for A in itertools.product(itertools.product(values, repeat=m), repeat=n):
        if any(all(x == 0 for x in a) for a in A):
            continue
        for b in itertools.product(values, repeat=n):
            # rows pairwise linearly independent: distinct after dividing by the first nonzero a-entry
            normal = {tuple(x / next(y for y in a if y != 0) for x in (*a, bi)) for a, bi in zip(A, b, strict=True)}
            if len(normal) < n:
                continue
            for M in itertools.product(itertools.product(values, repeat=n), repeat=k):
                if any(all(M[j][i] == 0 for j in range(k)) for i in range(n)):
                    continue
                theta = Network.build(M, A, b, [QQ.zero] * k, QQ, m)
                verdict = decide_identifiable(theta)
                if not verdict.identifiable:
                    yield verdict
                    found += 1
                    if found >= limit:
                        return

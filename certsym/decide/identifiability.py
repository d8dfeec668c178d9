"""Theorem 1 (identifiability) and Corollary 9 (counterexamples), decided exactly for every θ.

θ is identifiable when its fibre ρ^{-1}(ρ(θ)) ∩ Ω(m, n, k) is exactly the orbit H_n·θ. Decision, in order,
each NOT IDENTIFIABLE verdict with an explicit θ' in the fibre outside the orbit:
1. a dead neuron (v_i = 0): give it another row;
2. a constant neuron (a_i = 0): fold it into c (or drop it when it contributes nothing);
3. positively proportional rows r_j = λ r_i: move all of v_j onto v_i (merge lemma);
4. an antisymmetric pair (antiparallel rows with zero kink): shift its hyperplane, fix c (move 4);
5. antiparallel rows with a nonzero kink (as in |x| = σ(x) + σ(−x)): MATH.md's decision by configurations
   (``certsym.decide.configurations``): dependent normals of the doubled hyperplanes, or a configuration (T, N')
   other than θ's own, gives θ'; otherwise every configuration is refuted by a rank minor;
6. otherwise rows are pairwise independent and the fibre is ⊔_F H_n·θ^F over the zero factors F
   (Σ_{i∈F} v_i a_i^T = 0; θ^F negates the rows in F and adds Σ_F v_i b_i to c): ``certsym.decide.zerofactor``
   finds one (small ones first), or proves there is none by a rank minor, the kernel's 0/1 candidates or a
   meet-in-the-middle over subset sums.
Cost: O(n(m + k)) for 1–4; step 5 costs Σ_{t ≤ d} C(p, t) 2^(p−t) configurations (d doubled hyperplanes out
of p); step 6 O(n² km) plus min(2^(n − rank), 2^(n/2 + 1)) steps. Searches beyond ``max_search`` steps are
refused with their cost stated (``Undecided``).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from certsym.core.decision import Certifiable
from certsym.core.linalg import independent_rows
from certsym.core.network import Network, Neuron
from certsym.core.reduction import hyperplane_key
from certsym.decide import configurations, zerofactor
from certsym.decide.configurations import ConfigurationEvidence
from certsym.decide.equivalence import Verdict, decide
from certsym.decide.zerofactor import SearchTooLarge, ZeroFactorEvidence
from certsym.errors import InputError, Undecided
from certsym.numbers import QQ, Scalar

DEFAULT_MAX_SEARCH = 1 << 22


@dataclass
class Identifiability(Certifiable):
    identifiable: bool
    theta: Network
    reason: str
    evidence: ZeroFactorEvidence | ConfigurationEvidence | None = None
    counterexample: Network | None = None
    equivalence: Verdict | None = None
    zero_factor: list[int] | None = None

    def __bool__(self) -> bool:
        return self.identifiable

    def __repr__(self) -> str:
        reason = self.reason if len(self.reason) <= 160 else self.reason[:157] + "..."
        verdict = "identifiable" if self.identifiable else "not identifiable"
        return f"Identifiability({verdict}, {self.theta!r}: {reason})"


def flip(theta: Network, F: list[int]) -> Network:
    """θ^F: the rows r_i, i ∈ F, negated and c += Σ_{i∈F} v_i b_i (MATH.md, fibres)."""
    neurons = theta.neurons()
    c = list(theta.c)
    for i in F:
        nu = neurons[i]
        neurons[i] = Neuron(tuple(-x for x in nu.a), -nu.b, nu.v)
        c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
    return Network.from_neurons(neurons, c, theta.field, theta.m)


def _not(theta: Network, reason: str, other: Network, zero_factor=None) -> Identifiability:
    verdict = decide(theta, other)
    assert verdict.equivalent, "a constructed counterexample must realize the same function"
    return Identifiability(False, theta, reason, counterexample=other, equivalence=verdict, zero_factor=zero_factor)


def _degenerate(theta: Network) -> Identifiability | None:
    """Steps 1–4 of the module docstring: a NOT verdict, or None when θ is in MATH.md's setting."""
    F, m, k = theta.field, theta.m, theta.k
    neurons = theta.neurons()
    c = list(theta.c)
    zero_v = (F.zero,) * k

    def out(reason: str) -> Identifiability:
        return _not(theta, reason, Network.from_neurons(neurons, c, F, m))

    for i, nu in enumerate(neurons):
        if all(x == 0 for x in nu.v):
            row = (*nu.a, nu.b)
            new = tuple(-x for x in row) if any(x != 0 for x in row) else (F.one,) + (F.zero,) * m
            neurons[i] = Neuron(new[:m], new[m], nu.v)
            return out(f"neuron {i} is dead (v_i = 0): its row is free")
        if all(x == 0 for x in nu.a):
            if nu.b > 0:
                c = [cj + vj * nu.b for cj, vj in zip(c, nu.v, strict=True)]
            neurons[i] = Neuron((F.zero,) * m, F.zero, zero_v)
            return out(f"neuron {i} is constant (a_i = 0): it can be folded into c")
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
            return out(f"rows {j0} and {i} are positively proportional: weight can move")
        side[s] = (i, lam)
    for side in planes.values():
        if len(side) == 2:
            (i, lam_i), (j, lam_j) = side[1], side[-1]
            J = [lam_i * x + lam_j * y for x, y in zip(neurons[i].v, neurons[j].v, strict=True)]
            if all(x == 0 for x in J):  # an antisymmetric pair: move its hyperplane (σ(z) − σ(−z) = z)
                for t in (i, j):
                    nu = neurons[t]
                    neurons[t] = Neuron(nu.a, nu.b + (lam_i if t == i else -lam_j), nu.v)
                c = [cj - vj * lam_i for cj, vj in zip(c, neurons[i].v, strict=True)]
                return out(f"neurons {i} and {j} form an antisymmetric pair: its hyperplane can move")
    return None


def decide_identifiable(theta: Network, max_search: int = DEFAULT_MAX_SEARCH) -> Identifiability:
    """Theorem 1, decided for every θ (see the module docstring for the steps and their costs)."""
    degenerate = _degenerate(theta)
    if degenerate is not None:
        return degenerate
    planes = configurations.hyperplanes(theta)
    if any(pl.doubled for pl in planes):
        return _antiparallel(theta, planes, max_search)
    try:
        subset, evidence = zerofactor.search(theta, max_search)
    except SearchTooLarge as exc:
        raise Undecided(str(exc)) from None
    if subset is not None:
        return _not(theta, f"zero factor F = {subset}: Σ_F v_i a_i^T = 0, so θ^F is in the fibre",
                    flip(theta, subset), zero_factor=subset)
    if evidence.split is not None:
        how = f"meet in the middle over {evidence.search_size} subset sums"
    elif evidence.free:
        how = f"{evidence.search_size} kernel candidates excluded"
    else:
        how = "the vectors v_i a_i^T are linearly independent"
    return Identifiability(True, theta, f"Theorem 1: live neurons, independent rows, no zero factor ({how})", evidence)


def _antiparallel(theta: Network, planes: list, max_search: int) -> Identifiability:
    """Step 5: MATH.md's decision for antiparallel rows with nonzero kinks."""
    dependency, minor = configurations.doubled_dependency(theta, planes)
    if dependency is not None:
        return _not(theta, "antiparallel neurons on hyperplanes with dependent normals: their output weights can "
                    "be re-split", configurations.resplit(theta, planes, dependency))
    found, minors, exhausted = configurations.search(theta, planes, max_search)
    d = sum(pl.doubled for pl in planes)
    if found is not None:
        T, mask, X = found
        other = configurations.counterexample(theta, planes, T, mask, X)
        words = configurations.describe(planes, T, mask, len(independent_rows(theta.field, X)))
        return _not(theta, f"a configuration other than θ's own holds (MATH.md, antiparallel rows; hyperplanes "
                    f"named by their first neuron): {words}", other)
    total = configurations.configuration_count(len(planes), d)
    if not exhausted:
        raise Undecided(f"the antiparallel decision needs {total} configurations ({len(planes)} hyperplanes, {d} "
                        f"doubled), over the limit {max_search}; raise --max-search to allow it")
    evidence = ConfigurationEvidence([pl.neurons for pl in planes], minor, minors)
    return Identifiability(True, theta, f"MATH.md, antiparallel rows: the {d} doubled normals are independent and "
                           f"all {total} other configurations are refuted by rank minors", evidence)


@dataclass
class Fibre:
    """The fibre ρ^{-1}(ρ(θ)) ∩ Ω(m, n, k), described.

    Minimal θ with pairwise independent rows: the fibre is ⊔_F H_n·θ^F over ``zero_factors`` (and F = ∅).
    Minimal θ with antiparallel rows: ``configurations`` lists the configurations (T, N') other than θ's own
    that hold (MATH.md), each a family of parameters in the fibre outside the orbit. Otherwise
    ``free_directions`` names the moves that leave ρ(θ) unchanged."""

    minimal: bool
    zero_factors: list[list[int]]
    complete: bool
    free_directions: list[str]
    note: str = ""
    configurations: list[str] = field(default_factory=list)


def describe_fibre(theta: Network, cap: int = 1000, max_search: int = DEFAULT_MAX_SEARCH) -> Fibre:
    """MATH.md "Fibres": the zero-factor orbits, or the configurations, of a minimal θ (enumeration capped at
    ``cap``), or the free directions of a non-minimal θ. Cost as ``decide_identifiable``, times the sets
    listed."""
    free: list[str] = []
    sides: dict[tuple, dict[int, list[int]]] = {}
    for i, nu in enumerate(theta.neurons()):
        if all(x == 0 for x in nu.v):
            free.append(f"neuron {i} is dead (v = 0): its row (a, b) is free")
        elif all(x == 0 for x in nu.a):
            free.append(f"neuron {i} is constant (a = 0): b and v may change while v·σ(b) + c is kept")
        else:
            key, s, _ = hyperplane_key(nu.a, nu.b)
            sides.setdefault(key, {1: [], -1: []})[s].append(i)
    for side in sides.values():
        for s in (1, -1):
            if len(side[s]) > 1:
                free.append(f"neurons {side[s]} have positively proportional rows: their output weights may be "
                            "re-split (merge lemma)")
    if not free and _degenerate(theta) is not None:  # an antisymmetric pair
        free.append("an antiparallel pair with zero kink is an antisymmetric pair: its hyperplane may move")
    if free:
        return Fibre(False, [], True, free)
    planes = configurations.hyperplanes(theta)
    if any(pl.doubled for pl in planes):
        return _configuration_fibre(theta, planes, cap, max_search)
    try:
        found, _ = zerofactor.enumerate_all(theta, max_search)
    except SearchTooLarge as exc:
        raise Undecided(str(exc)) from None
    sets = list(itertools.islice(found, cap))
    complete = len(sets) < cap
    note = "" if complete else f"enumeration stopped at the cap of {cap} sets; raise --cap to see more"
    return Fibre(True, sorted(sets), complete, [], note)


def _configuration_fibre(theta: Network, planes: list, cap: int, max_search: int) -> Fibre:
    d = sum(pl.doubled for pl in planes)
    total = configurations.configuration_count(len(planes), d)
    if total > max_search:
        raise Undecided(f"listing the fibre needs {total} configurations, over the limit {max_search}")
    dependency, _ = configurations.doubled_dependency(theta, planes)
    lines = []
    if dependency is not None:
        lines.append("the normals of the doubled hyperplanes are dependent: their output weights re-split along "
                     f"t = ({', '.join(theta.field.pretty(x) for x in dependency)})")
    for T, mask, X in itertools.islice(configurations.holding(theta, planes), cap):
        lines.append(configurations.describe(planes, T, mask, len(independent_rows(theta.field, X))))
    complete = len(lines) < cap + (dependency is not None)
    note = "" if complete else f"enumeration stopped at the cap of {cap} configurations; raise --cap to see more"
    return Fibre(True, [], complete, [], note, lines)


def perturb(theta: Network, eps, max_search: int = DEFAULT_MAX_SEARCH, tries: int = 64) -> Identifiability:
    """Theorem 1 (density): an identifiable θ' with max-norm distance ≤ eps from θ.

    Each entry moves by eps·t/97 with t a deterministic pseudo-random integer in [−97, 97] \\ {0}. Theorem 1's
    sufficient conditions (live neurons, pairwise independent rows, no zero factor) fail only on finitely many
    proper algebraic subsets, so a few tries suffice. (The identifiable set itself is not open: σ(x) + σ(−x + δ)
    is not identifiable for any δ > 0 although |x| is; MATH.md.) Cost: ``tries`` identifiability decisions at
    most."""
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

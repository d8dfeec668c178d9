"""Theorem 1 with antiparallel rows: MATH.md's complete decision by configurations.

Setting: every v_i ≠ 0 and a_i ≠ 0, no two rows positively proportional, and every antiparallel pair with a
nonzero kink. Then the neurons lie on p hyperplanes K, each carrying one neuron or two antiparallel ones (the
doubled hyperplanes D), and d = n − p = |D|. With ℓ_H = u_H·x + β_H (first nonzero entry of u_H is +1),
J_H = Σ_{i on H} λ_i v_i and N_H = Σ_{i on H, s_i = −1} λ_i v_i, θ is NOT identifiable iff

(a) the normals u_H, H ∈ D, are linearly dependent (the weights of the doubled hyperplanes re-split), or
(b) a configuration other than θ's own exists: T ⊆ K with |T| ≤ d and N'_H ∈ {0, J_H} for every H ∉ T with
    X = Σ_{H∉T} (N'_H − N_H) u_H^T of rank at most g = ⌊(d − |T|)/2⌋ modulo span{u_H : H ∈ T}.

The rank modulo span{u_H : H ∈ T} is the rank of X' = X − X[:, P] R_T, where R_T is the reduced row echelon
form of the normals in T and P its pivot columns (R_T is unique, so producer and checker form the same X').
A configuration that holds gives θ' explicitly: one neuron per H ∉ T oriented by N'_H, an antiparallel pair
on each H ∈ T carrying the linear part that X' leaves, rank(X') antisymmetric pairs for X' itself and dead
neurons for the rest. When none holds, each configuration is refuted by a nonsingular (g+1)-minor of X'.
Configurations are enumerated T by T (itertools.combinations of the hyperplane list, |T| = 0..d), and for
each T the choices as a binary counter over the hyperplanes not in T (bit set: N'_H = J_H); θ's own
configuration is skipped. Cost: Σ_{t ≤ d} C(p, t) 2^(p−t) configurations, each O(p k m) plus one rank.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

from certsym.core.linalg import independent_rows, rref
from certsym.core.network import Network, Neuron
from certsym.core.reduction import hyperplane_key
from certsym.numbers import Scalar


@dataclass
class Plane:
    """A hyperplane of K: its key (u_H, β_H), its neurons (one, or two antiparallel), J_H and N_H."""

    key: tuple
    neurons: list[int]
    J: list[Scalar]
    N: list[Scalar]

    @property
    def doubled(self) -> bool:
        return len(self.neurons) == 2


@dataclass
class ConfigurationEvidence:
    """No configuration other than θ's own: the hyperplanes (neuron lists, in enumeration order), the columns
    of a nonsingular minor of the doubled normals (condition (a) fails), and per T, per choice in order (own
    skipped), the rows and columns of a nonsingular (g+1)-minor of X'."""

    planes: list[list[int]]
    doubled_minor: list[int]
    minors: list[list[tuple[list[int], list[int]]]]

    @property
    def search_size(self) -> int:
        return sum(len(t) for t in self.minors)


def hyperplanes(theta: Network) -> list[Plane]:
    """The hyperplanes of θ in the order of their first neuron. Assumes MATH.md's setting (see the module
    docstring): every hyperplane carries one neuron or an antiparallel pair. Cost O(n (m + k))."""
    F, k = theta.field, theta.k
    planes: dict[tuple, Plane] = {}
    for i, nu in enumerate(theta.neurons()):
        key, s, lam = hyperplane_key(nu.a, nu.b)  # a Key: its hash is computed once, from a sample of entries
        plane = planes.get(key)
        if plane is None:
            plane = planes[key] = Plane(key, [], [F.zero] * k, [F.zero] * k)
        plane.neurons.append(i)
        plane.J = [x + lam * y for x, y in zip(plane.J, nu.v, strict=True)]
        if s < 0:
            plane.N = [x + lam * y for x, y in zip(plane.N, nu.v, strict=True)]
    return list(planes.values())


def configuration_count(p: int, d: int) -> int:
    """Σ_{t ≤ d} C(p, t) 2^(p−t) − 1: the configurations other than θ's own."""
    return sum(comb(p, t) << (p - t) for t in range(d + 1)) - 1


def _reduced_normals(F, planes: list[Plane], T: tuple[int, ...], m: int) -> list[list[Scalar]]:
    """u'_H = u_H − u_H[P] R_T for every hyperplane: the normals modulo span{u_H : H ∈ T}."""
    normals = [list(pl.key[:m]) for pl in planes]
    if not T:
        return normals
    R, pivots = rref(F, [normals[h] for h in T])
    out = []
    for u in normals:
        coeffs = [u[p] for p in pivots]
        out.append([x - sum((c * row[q] for c, row in zip(coeffs, R, strict=True)), F.zero) for q, x in enumerate(u)])
    return out


def _delta(pl: Plane, bit: int, F) -> list[Scalar]:
    """N'_H − N_H with N'_H = J_H when ``bit`` is set, else 0."""
    return [(j if bit else F.zero) - x for j, x in zip(pl.J, pl.N, strict=True)]


def _matrix(F, deltas: list[tuple[list[Scalar], list[Scalar]]], k: int, m: int) -> list[list[Scalar]]:
    """Σ δ u^T over the pairs (δ ∈ F^k, u ∈ F^m)."""
    X = [[F.zero] * m for _ in range(k)]
    for delta, u in deltas:
        for j, dj in enumerate(delta):
            if dj != 0:
                X[j] = [x + dj * y for x, y in zip(X[j], u, strict=True)]
    return X


def _own_mask(planes: list[Plane], S: list[int]) -> int:
    return sum(1 << b for b, h in enumerate(S) if any(x != 0 for x in planes[h].N))


def _choices(F, planes: list[Plane], T: tuple[int, ...], D: tuple[int, ...], k: int, m: int):
    """(mask, X') for every choice on the hyperplanes outside T, θ's own configuration skipped."""
    reduced = _reduced_normals(F, planes, T, m)
    S = [h for h in range(len(planes)) if h not in T]
    own = _own_mask(planes, S) if T == D else None
    for mask in range(1 << len(S)):
        if mask != own:
            yield mask, _matrix(F, [(_delta(planes[h], mask >> b & 1, F), reduced[h]) for b, h in enumerate(S)], k, m)


def _subsets(planes: list[Plane]):
    """(T, g) in enumeration order, with D."""
    D = tuple(h for h, pl in enumerate(planes) if pl.doubled)
    for size in range(len(D) + 1):
        for T in itertools.combinations(range(len(planes)), size):
            yield T, (len(D) - size) // 2, D


def _spanning(theta: Network, planes: list[Plane], budget: int):
    """A configuration that holds whatever the choices: a T whose normals span R^m reduces every X' to 0 modulo
    span{u_H : H ∈ T}, and rank 0 ≤ g. Found by one rank per T of at least m hyperplanes (tried before any
    enumeration of the 2^(p − |T|) choices); (T, mask, X' = 0) with a mask that is not θ's own, or None. Cost: at
    most ``budget`` ranks of |T| × m matrices."""
    F, m, k = theta.field, theta.m, theta.k
    tried = 0
    for T, _, D in _subsets(planes):
        if len(T) < m:
            continue
        tried += 1
        if tried > budget:
            return None
        if len(independent_rows(F, [list(planes[h].key[:m]) for h in T])) < m:
            continue
        S = [h for h in range(len(planes)) if h not in T]
        own = _own_mask(planes, S) if T == D else None
        mask = next((x for x in range(min(2, 1 << len(S))) if x != own), None)
        if mask is not None:
            return T, mask, [[F.zero] * m for _ in range(k)]
    return None


def search(theta: Network, planes: list[Plane], budget: int):
    """Condition (b): the first configuration (T, mask, X') that holds, or None with the refuting minors.
    Returns (found, minors, exhausted); ``exhausted`` is False when the budget ran out first. A T whose normals
    span R^m is tried first (``_spanning``: with m = 1 any single hyperplane, so one antiparallel pair is settled
    at once). Cost: see the module docstring, at most ``budget`` configurations."""
    F, m, k = theta.field, theta.m, theta.k
    found = _spanning(theta, planes, budget)
    if found is not None:
        return found, [], True
    minors: list[list[tuple[list[int], list[int]]]] = []
    visited = 0
    for T, g, D in _subsets(planes):
        layer: list[tuple[list[int], list[int]]] = []
        for mask, X in _choices(F, planes, T, D, k, m):
            if visited >= budget:
                return None, minors, False
            visited += 1
            rows = independent_rows(F, X)
            if len(rows) <= g:
                return (T, mask, X), minors, True
            rows = rows[:g + 1]
            cols = independent_rows(F, [[X[r][q] for r in rows] for q in range(m)])[:g + 1]
            layer.append((rows, cols))
        minors.append(layer)
    return None, minors, True


def holding(theta: Network, planes: list[Plane]):
    """Every configuration (T, mask, X') that holds, in enumeration order: the fibre's other families."""
    F, m, k = theta.field, theta.m, theta.k
    for T, g, D in _subsets(planes):
        for mask, X in _choices(F, planes, T, D, k, m):
            if len(independent_rows(F, X)) <= g:
                yield T, mask, X


def describe(planes: list[Plane], T: tuple[int, ...], mask: int, rank: int) -> str:
    """A configuration in words: hyperplanes are named by their first neuron."""
    S = [h for h in range(len(planes)) if h not in T]
    d = sum(pl.doubled for pl in planes)
    split = [planes[h].neurons[0] for h in T] or "none"
    against = [planes[h].neurons[0] for b, h in enumerate(S) if mask >> b & 1] or "none"
    return (f"T = {split}; N'_H = J_H on {against}, 0 elsewhere; {rank} antisymmetric pair(s), "
            f"{d - len(T) - 2 * rank} dead neuron(s)")


def _solve(F, columns: list[list[Scalar]], target: list[Scalar]) -> list[Scalar]:
    """Some y with Σ_c y_c columns[c] = target (the system is known to be solvable)."""
    aug = [[col[q] for col in columns] + [target[q]] for q in range(len(target))]
    R, pivots = rref(F, aug)
    y = [F.zero] * len(columns)
    for row, piv in zip(R, pivots, strict=True):
        assert piv < len(columns), "the system must be solvable"
        y[piv] = row[-1]
    return y


def counterexample(theta: Network, planes: list[Plane], T: tuple[int, ...], mask: int, Xr) -> Network:
    """The θ' of a configuration (T, mask) that holds, with X' its reduced matrix (MATH.md, soundness): one
    neuron per H ∉ T, an antiparallel pair per H ∈ T, rank(X') antisymmetric pairs, dead neurons, and c from
    one evaluation at 0. Cost O(n k m + rank computations)."""
    F, m, k = theta.field, theta.m, theta.k
    S = [h for h in range(len(planes)) if h not in T]
    bits = {h: mask >> b & 1 for b, h in enumerate(S)}
    X = _matrix(F, [(_delta(planes[h], bits[h], F), list(planes[h].key[:m])) for h in S], k, m)
    B = [[x - y for x, y in zip(rx, r0, strict=True)] for rx, r0 in zip(Xr, X, strict=True)]  # Σ_T w_H u_H^T
    normals = [list(planes[h].key[:m]) for h in T]
    w = [_solve(F, normals, B[j]) for j in range(k)]  # w[j][t]: output j of w_{T[t]}
    neurons: list[Neuron] = []
    for h, pl in enumerate(planes):
        u, beta = tuple(pl.key[:m]), pl.key[m]
        neg = (tuple(-x for x in u), -beta)
        if h in bits:
            neurons.append(Neuron(*(neg if bits[h] else (u, beta)), tuple(pl.J)))
        else:
            t = T.index(h)
            Nh = [x + w[j][t] for j, x in enumerate(pl.N)]
            neurons.append(Neuron(u, beta, tuple(jx - nx for jx, nx in zip(pl.J, Nh, strict=True))))
            neurons.append(Neuron(*neg, tuple(Nh)))
    Rx, piv = rref(F, Xr)
    for s, z in enumerate(Rx):  # X' = Σ_s X'[:, piv_s] Rx[s]
        y = tuple(Xr[j][piv[s]] for j in range(k))
        neurons.append(Neuron(tuple(z), F.zero, y))
        neurons.append(Neuron(tuple(-x for x in z), F.zero, tuple(-x for x in y)))
    assert len(neurons) <= theta.n, "a configuration uses at most n neurons"
    neurons += [Neuron((F.zero,) * m, F.zero, (F.zero,) * k)] * (theta.n - len(neurons))
    draft = Network.from_neurons(neurons, theta.c, F, m)
    origin = [F.zero] * m
    c = [cj + x - y for cj, x, y in zip(theta.c, theta.evaluate(origin), draft.evaluate(origin), strict=True)]
    return Network.from_neurons(neurons, c, F, m)


def resplit(theta: Network, planes: list[Plane], dependency: list[Scalar]) -> Network:
    """Condition (a): Σ_H t_H u_H = 0 over the doubled hyperplanes; moving t_H e_1 of N_H between the two
    neurons of each H keeps the linear part, and c absorbs −Σ t_H β_H. Cost O(n k)."""
    F, m = theta.field, theta.m
    neurons, c = theta.neurons(), list(theta.c)
    doubled = [pl for pl in planes if pl.doubled]
    for pl, t_h in zip(doubled, dependency, strict=True):
        if t_h == 0:
            continue
        shift = [t_h] + [F.zero] * (theta.k - 1)
        for i in pl.neurons:
            nu = neurons[i]
            _, s, lam = hyperplane_key(nu.a, nu.b)
            sign = -1 if s > 0 else 1  # the positive neuron gives up t/λ, the negative one takes it
            neurons[i] = Neuron(nu.a, nu.b, tuple(x + sign * y / lam for x, y in zip(nu.v, shift, strict=True)))
        c = [cj + y * pl.key[m] for cj, y in zip(c, shift, strict=True)]
    return Network.from_neurons(neurons, c, F, m)


def doubled_dependency(theta: Network, planes: list[Plane]) -> tuple[list[Scalar] | None, list[int]]:
    """(a nonzero t with Σ t_H u_H = 0 over D, []) or (None, the columns of a nonsingular |D|-minor of the
    doubled normals). Cost O(|D|² m)."""
    F, m = theta.field, theta.m
    dirs = [list(pl.key[:m]) for pl in planes if pl.doubled]
    if len(independent_rows(F, dirs)) == len(dirs):
        return None, independent_rows(F, [[u[q] for u in dirs] for q in range(m)])
    R, pivots = rref(F, [[u[q] for u in dirs] for q in range(m)])
    f = next(col for col in range(len(dirs)) if col not in pivots)
    coef = [F.zero] * len(dirs)
    coef[f] = F.one
    for t, piv in enumerate(pivots):
        coef[piv] = -R[t][f]
    return coef, []

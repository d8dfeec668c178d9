"""Deciding ρ(θ1) = ρ(θ2) exactly, with the evidence for a certificate (MATH.md, Theorems 3/4 form).

Decision: compare the kink invariants (``canonical``). Cost O((n1 + n2)(m + k)) field operations
plus a hash; no search, no sampling.

Evidence when EQUIVALENT. In D = θ1_min ⊖ θ2_min (neurons 0..n1−1 from θ1_min, n1..n1+n2−1 from
θ2_min with negated output weights), per hyperplane H and orientation:
- a θ1_min neuron i and a θ2_min neuron j with r2_j = λ r1_i, λ > 0, v2_j = v1_i / λ: a MATCH, a
  partial H_n element (merge lemma: they cancel in D);
- otherwise such a pair is a cross MERGE in D (merge lemma, λ > 0);
- the D neurons left on H form an antisymmetric PAIR r_j = −λ r_i, v_j = −v_i/λ, contributing the
  affine map v_i (a_i·x + b_i) (σ(z) − σ(−z) = z);
- the affine terms of all pairs plus c1 − c2 sum to zero.

Evidence when NOT EQUIVALENT: a rational point x with ρ(θ1)(x) ≠ ρ(θ2)(x), built
deterministically: beside a hyperplane whose kinks differ (three points x0, x0 ± εu_H on a line
crossing H and no other hyperplane; the second difference there is J_H ε|u_H|² ≠ 0), or at 0 / e_q
when only the affine parts differ.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, overload

from flint import fmpq

from certsym.core.canonical import Canonical, canonical_form
from certsym.core.network import Network, Vector
from certsym.core.reduction import Reduction, hyperplane_key, reduce
from certsym.errors import InputError
from certsym.numbers import Scalar, rational_from_arb


class Match(NamedTuple):
    """θ2_min neuron j = (λ a1_i, λ b1_i, v1_i / λ): the H_n action on one neuron. A tuple: a decision on the fast
    path makes one per neuron (10^5 and more), and a tuple is made in a fifth of a frozen dataclass's time."""

    i: int
    j: int
    lam: Scalar


class Matching(Sequence[Match]):
    """Matches held as three columns (θ1 neurons, θ2 neurons, scales), as the fast path finds them and as a
    certificate writes them: a sequence of ``Match`` made one by one only when it is read that way. Cost O(1) to
    build from the columns; O(1) per item read."""

    __slots__ = ("i", "j", "lam")

    def __init__(self, i: list[int], j: list[int], lam: list[Scalar]) -> None:
        if not len(i) == len(j) == len(lam):
            raise ValueError("the columns of a matching have different lengths")
        self.i, self.j, self.lam = i, j, lam

    def __len__(self) -> int:
        return len(self.i)

    @overload
    def __getitem__(self, s: int) -> Match: ...
    @overload
    def __getitem__(self, s: slice) -> list[Match]: ...
    def __getitem__(self, s):
        if isinstance(s, slice):
            return list(map(Match._make, zip(self.i[s], self.j[s], self.lam[s], strict=True)))
        return Match(self.i[s], self.j[s], self.lam[s])

    def __iter__(self) -> Iterator[Match]:
        return map(Match._make, zip(self.i, self.j, self.lam, strict=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable columns, like a list

    def __repr__(self) -> str:
        return f"Matching({list(self)!r})"


def match_columns(matches: Sequence[Match]) -> tuple[list[int], list[int], list[Scalar]]:
    """(θ1 neurons, θ2 neurons, scales) of a sequence of matches: a ``Matching``'s own columns, else read off.
    Cost O(1) for a Matching, O(len) otherwise."""
    if isinstance(matches, Matching):
        return matches.i, matches.j, matches.lam
    return [m.i for m in matches], [m.j for m in matches], [m.lam for m in matches]


@dataclass(frozen=True)
class Merge:
    """In D: r_source = λ r_into (λ > 0); v_into += λ v_source; source becomes zero."""

    into: int
    source: int
    lam: Scalar


@dataclass(frozen=True)
class Pair:
    """In D: r_j = −λ r_i, v_j = −v_i/λ; together they realize x ↦ v_i (a_i·x + b_i)."""

    i: int
    j: int
    lam: Scalar
    linear: tuple[Vector, ...]
    constant: Vector


@dataclass
class Verdict:
    """The decision and its evidence."""

    equivalent: bool
    theta1: Network
    theta2: Network
    red1: Reduction
    red2: Reduction
    canon1: Canonical
    canon2: Canonical
    matches: Sequence[Match] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    witness: list[fmpq] | None = None
    values: tuple[list[Scalar], list[Scalar]] | None = None


def check_compatible(theta1: Network, theta2: Network) -> None:
    """Same m, k and field, else InputError (exit 2)."""
    if theta1.m != theta2.m:
        raise InputError(f"input dimensions differ: m = {theta1.m} and m = {theta2.m}")
    if theta1.k != theta2.k:
        raise InputError(f"output dimensions differ: k = {theta1.k} and k = {theta2.k}")
    if theta1.field != theta2.field:
        raise InputError("the networks are over different fields; load them together")


def decide(theta1: Network, theta2: Network) -> Verdict:
    """Theorem (complete classification) / Theorems 3–4: decide ρ(θ1) = ρ(θ2) and collect the
    evidence. Cost O((n1 + n2)(m + k)) field operations plus hashing (plus O(#hyperplanes · m)
    exact evaluations to place a witness)."""
    check_compatible(theta1, theta2)
    red1, red2 = reduce(theta1), reduce(theta2)
    c1, c2 = canonical_form(red1.minimal), canonical_form(red2.minimal)
    verdict = Verdict(c1 == c2, theta1, theta2, red1, red2, c1, c2)
    if verdict.equivalent:
        verdict.matches, verdict.merges, verdict.pairs = pairing(red1.minimal, red2.minimal)
    else:
        verdict.witness = _witness(theta1, theta2, c1, c2)
        verdict.values = (theta1.evaluate(verdict.witness), theta2.evaluate(verdict.witness))
    return verdict


def equivalent(theta1: Network, theta2: Network) -> bool:
    """ρ(θ1) = ρ(θ2)? (kink invariants; see ``decide``)."""
    check_compatible(theta1, theta2)
    return canonical_form(theta1) == canonical_form(theta2)


# -- evidence for EQUIVALENT ------------------------------------------------------------------
def pairing(t1: Network, t2: Network) -> tuple[list[Match], list[Merge], list[Pair]]:
    """The evidence of Theorems 3/4 in D = t1 ⊖ t2 for minimal forms t1, t2 whose kink invariants
    agree (t2 may have no neurons: then the pairs show that t1 is affine, Proposition 14).
    Cost O((n1 + n2)(m + k)) plus a hash."""
    matches: list[Match] = []
    merges: list[Merge] = []
    pairs: list[Pair] = []
    n1 = t1.n
    # D's neurons: (row, v) with θ2's output weights negated; keyed by hyperplane and orientation.
    live: dict[int, tuple[tuple, Scalar, tuple]] = {}  # D id -> (a,b) row, λ, v
    by_plane: dict[tuple, dict[int, list[int]]] = {}
    for ids, net, sign in ((range(n1), t1, 1), (range(n1, n1 + t2.n), t2, -1)):
        for d_id, nu in zip(ids, net.neurons(), strict=True):
            hk = hyperplane_key(nu.a, nu.b)
            if hk is None:
                continue  # a zero neuron of a minimal form
            key, s, lam = hk
            live[d_id] = ((*nu.a, nu.b), lam, tuple(x if sign > 0 else -x for x in nu.v))
            by_plane.setdefault(key, {1: [], -1: []})[s].append(d_id)
    for sides in by_plane.values():
        for s in (1, -1):
            ids = sides[s]
            if len(ids) == 2:  # one from θ1_min, one from θ2_min (minimal forms merged the rest)
                i, j = ids
                (_, lam_i, v_i), (_, lam_j, v_j) = live[i], live[j]
                mu = lam_j / lam_i
                merged = tuple(x + mu * y for x, y in zip(v_i, v_j, strict=True))
                if all(x == 0 for x in merged):
                    matches.append(Match(i, j - n1, mu))
                    sides[s] = []
                else:
                    merges.append(Merge(i, j, mu))
                    live[i] = (live[i][0], lam_i, merged)
                    sides[s] = [i]
        plus, minus = sides[1], sides[-1]
        if plus and minus:
            i, j = plus[0], minus[0]
            (r_i, lam_i, v_i), (_, lam_j, _) = live[i], live[j]
            a_i, b_i = r_i[:-1], r_i[-1]
            pairs.append(Pair(
                i, j, lam_j / lam_i,
                tuple(tuple(vj * aq for aq in a_i) for vj in v_i),
                tuple(vj * b_i for vj in v_i),
            ))
        elif plus or minus:  # pragma: no cover - excluded by equal kink invariants
            raise AssertionError("unpaired neuron although the kink invariants agree")
    return matches, merges, pairs


# -- evidence for NOT EQUIVALENT --------------------------------------------------------------
def _witness(theta1: Network, theta2: Network, c1: Canonical, c2: Canonical) -> list[fmpq]:
    """A rational point where ρ(θ1) and ρ(θ2) differ (see module docstring)."""
    F = theta1.field
    m = theta1.m
    differing = [key for key in sorted(set(c1.kinks) | set(c2.kinks), key=_key_order)
                 if c1.kinks.get(key) != c2.kinks.get(key)]
    if not differing:
        if any(x != y for x, y in zip(c1.constant, c2.constant, strict=True)):
            return [fmpq(0)] * m
        q = next(q for q in range(m)
                 if any(r1[q] != r2[q] for r1, r2 in zip(c1.linear, c2.linear, strict=True)))
        return [fmpq(int(p == q)) for p in range(m)]
    x0, eps, u = kink_probe(F, m, differing[0], set(c1.kinks) | set(c2.kinks))
    candidates = [x0, [x + eps * uq for x, uq in zip(x0, u, strict=True)],
                  [x - eps * uq for x, uq in zip(x0, u, strict=True)]]
    y = next(y for y in candidates if theta1.evaluate(y) != theta2.evaluate(y))
    (q,) = rationalize(F, [y], lambda pts: theta1.evaluate(pts[0]) != theta2.evaluate(pts[0]))
    return q


def kink_probe(F, m: int, H: tuple, planes: set) -> tuple[list, Scalar, Vector]:
    """A point x0 on the hyperplane H = (u, β) off every other hyperplane of ``planes``, and ε > 0
    such that the segment x0 ± εu meets no other hyperplane. Across that segment a function
    Σ_H J_H σ(ℓ_H) + affine has second difference J_H ε|u|²: nonzero iff J_H ≠ 0.
    Cost O(|planes| · m) exact operations per trial point; at most (m − 1)|planes| + 1 trials."""
    others = [key for key in planes if key != H]
    u, beta = H[:m], H[m]
    p = next(q for q in range(m) if u[q] != 0)  # u_p = 1
    x0 = None
    for t in range(1, 2 + len(others) * m):
        # a point of H on a moment curve: it avoids every other hyperplane for all but few t
        x = [F(t) ** (q + 1) if q != p else F.zero for q in range(m)]
        x[p] = -beta - sum((u[q] * x[q] for q in range(m) if q != p), F.zero)
        if all(_ell(key, x, m) != 0 for key in others):
            x0 = x
            break
    assert x0 is not None
    eps = F.one
    for key in others:
        dot = sum((key[q] * u[q] for q in range(m)), F.zero)
        bound = abs(_ell(key, x0, m)) / (2 * (abs(dot) + 1))
        if bound < eps:
            eps = bound
    return x0, eps, tuple(u)


def _key_order(key: tuple) -> tuple:
    return tuple(str(x) for x in key)


def _ell(key: tuple, x: list, m: int) -> Scalar:
    return sum((key[q] * x[q] for q in range(m)), key[m])


def rationalize(F, points: list[list], accept) -> list[list[fmpq]]:
    """Rational points near ``points`` (over Q: the points themselves) for which ``accept`` holds.

    ``accept`` must hold at the exact points and be stable under small perturbations (a strict
    inequality between continuous functions); candidates at doubling precision are tested exactly.
    """
    if all(F.is_rational(F(t)) for pt in points for t in pt):
        return [[F.to_rational(F(t)) for t in pt] for pt in points]
    prec = 32
    while True:
        q = [[_approx_rational(F, t, prec) for t in pt] for pt in points]
        if accept(q):
            return q
        prec *= 2


def _approx_rational(F, t, prec: int) -> fmpq:
    return rational_from_arb(F.approx(t, prec))

"""certsym.decide.configurations: MATH.md's decision for antiparallel rows, checked piece by piece.

- ``hyperplanes`` groups exactly the neurons whose rows are proportional (antiparallel pairs on one plane), and
  its J_H, N_H rebuild ρ(θ) = Σ_H J_H σ(ℓ_H) − Σ_H N_H ℓ_H + c by exact evaluation;
- ``configuration_count`` equals a direct enumeration of (T, N') and the number of configurations a complete
  search refutes;
- every θ' from ``counterexample`` (each configuration that holds) and from ``resplit`` (dependent doubled normals)
  realizes ρ(θ), checked by exact evaluation at grid points and on and next to every kink of both networks, has the
  shape of θ, and lies outside H_n·θ (an orbit invariant: the multiset of positively normalized neurons).
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import sympy
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, identifiability_certificate
from certsym.core.linalg import independent_rows
from certsym.core.network import Network, Neuron
from certsym.decide.configurations import (
    configuration_count,
    counterexample,
    doubled_dependency,
    holding,
    hyperplanes,
    resplit,
    search,
)
from certsym.decide.identifiability import decide_identifiable
from certsym.numbers import QQ
from certsym_check import check_certificate

EPS = fmpq(1, 1000)


def fr(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


@st.composite
def settings_networks(draw, max_planes: int = 4, max_doubled: int = 2) -> Network:
    """Networks in MATH.md's setting: p distinct hyperplanes ℓ = u·x + β (first nonzero entry of u is 1), each with
    one neuron of either orientation or (at least once) an antiparallel pair with a nonzero kink; rows scaled by
    random λ > 0, all v_i ≠ 0, neurons shuffled."""
    m, k = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    p = draw(st.integers(1, max_planes))
    normals = [(1,)] if m == 1 else [(1, 0), (0, 1), (1, 1), (1, -1), (1, 2)]
    keys = draw(st.lists(st.tuples(st.sampled_from(normals), st.integers(-2, 2)), min_size=p, max_size=p,
                         unique=True))
    doubled = set(draw(st.sets(st.integers(0, p - 1), min_size=1, max_size=max_doubled)))
    lam = st.sampled_from([fmpq(1), fmpq(2), fmpq(1, 2), fmpq(3)])
    vec = st.lists(st.integers(-2, 2), min_size=k, max_size=k).filter(any).map(lambda v: tuple(map(fmpq, v)))
    neurons = []
    for h, (u, beta) in enumerate(keys):
        signs = [1, -1] if h in doubled else [draw(st.sampled_from([1, -1]))]
        while True:
            vs = [draw(vec) for _ in signs]
            ls = [draw(lam) for _ in signs]
            if len(signs) == 1 or any(ls[0] * x + ls[1] * y != 0 for x, y in zip(*vs, strict=True)):
                break
        for s, v, t in zip(signs, vs, ls, strict=True):
            neurons.append(Neuron(tuple(fmpq(s) * t * x for x in u), fmpq(s) * t * beta, v))
    order = draw(st.permutations(range(len(neurons))))
    c = tuple(fmpq(draw(st.integers(-2, 2))) for _ in range(k))
    return Network.from_neurons([neurons[i] for i in order], c, QQ, m)


def _proportional(r1: list[Fraction], r2: list[Fraction]) -> bool:
    """Every 2×2 minor of the 2×(m+1) matrix [r1; r2] vanishes."""
    return all(x * y2 == x2 * y for (x, y), (x2, y2) in itertools.combinations(zip(r1, r2, strict=True), 2))


def _rows(theta: Network) -> list[list[Fraction]]:
    return [[fr(x) for x in theta.A[i]] + [fr(theta.b[i])] for i in range(theta.n)]


def _kink_points(theta: Network) -> list[list[fmpq]]:
    """Points on each neuron's hyperplane a·x + b = 0 and at ±EPS from it along a, plus a coarse grid."""
    grid = [fmpq(t, 2) for t in range(-5, 6)]
    pts = [[x] for x in grid] if theta.m == 1 else [[x, y] for x in grid[::2] for y in grid[1::3]]
    for a, b in zip(theta.A, theta.b, strict=True):
        if all(x == 0 for x in a):
            continue
        norm2 = sum((x * x for x in a), fmpq(0))
        for t in (fmpq(-3, 2), fmpq(0), fmpq(5, 7)):  # points on the line (m = 2) or the point itself (m = 1)
            base = [-b * x / norm2 for x in a]
            if theta.m == 2:
                base = [base[0] - t * a[1], base[1] + t * a[0]]
            for off in (fmpq(0), EPS, -EPS, 10 * EPS):
                pts.append([y + off * x for y, x in zip(base, a, strict=True)])
            if theta.m == 1:
                break
    return pts


def _same_function(t1: Network, t2: Network) -> bool:
    return all(t1.evaluate(x) == t2.evaluate(x) for x in _kink_points(t1) + _kink_points(t2))


def _orbit_invariant(theta: Network) -> list:
    """The multiset of neurons normalized by a positive factor (row by |its first nonzero entry|, or v when the
    row is 0): equal for any two parameters in one H_n-orbit."""
    out = []
    for nu in theta.neurons():
        r, v = [fr(x) for x in (*nu.a, nu.b)], [fr(x) for x in nu.v]
        lead = next((abs(x) for x in r if x != 0), None)
        if lead is not None:
            out.append((tuple(x / lead for x in r), tuple(x * lead for x in v)))
        else:
            vlead = next((abs(x) for x in v if x != 0), Fraction(1))
            out.append((tuple(r), tuple(x / vlead for x in v)))
    return sorted(out)


@settings(max_examples=60, deadline=None)
@given(settings_networks())
def test_hyperplanes_group_antiparallel_rows_and_rebuild_rho(theta: Network) -> None:
    """The planes partition the neurons; two neurons share a plane iff their rows are proportional; a plane holds
    one neuron or an antiparallel pair; planes come in the order of their first neuron; Σ J_H σ(ℓ_H) − Σ N_H ℓ_H + c
    equals ρ(θ) at every test point, and N_H is 0 or J_H on a plane with one neuron (0 iff it is oriented like ℓ_H)."""
    planes = hyperplanes(theta)
    rows = _rows(theta)
    assert sorted(i for pl in planes for i in pl.neurons) == list(range(theta.n))
    assert [pl.neurons[0] for pl in planes] == sorted(pl.neurons[0] for pl in planes)
    where = {i: h for h, pl in enumerate(planes) for i in pl.neurons}
    for i, j in itertools.combinations(range(theta.n), 2):
        assert (where[i] == where[j]) == _proportional(rows[i], rows[j])
    for pl in planes:
        assert len(pl.neurons) in (1, 2)
        if pl.doubled:
            i, j = pl.neurons
            products = [x * y for x, y in zip(rows[i], rows[j], strict=True)]
            assert all(t <= 0 for t in products) and any(t < 0 for t in products)  # antiparallel
        else:
            (i,) = pl.neurons
            key = [fr(x) for x in pl.key]
            same_way = any(x * y > 0 for x, y in zip(rows[i], key, strict=True))
            assert list(pl.N) == ([0] * theta.k if same_way else list(pl.J))
    for x in _kink_points(theta):
        total = list(theta.c)
        for pl in planes:
            ell = pl.key[theta.m] + sum((u * t for u, t in zip(pl.key[:theta.m], x, strict=False)), fmpq(0))
            for j in range(theta.k):
                total[j] += (pl.J[j] * ell if ell > 0 else 0) - pl.N[j] * ell
        assert total == theta.evaluate(x)


def test_configuration_count_equals_a_direct_enumeration() -> None:
    """configuration_count(p, d) = #{(T, N') : T ⊆ K, |T| ≤ d, N'_H ∈ {0, J_H} for H ∉ T} − 1 (θ's own)."""
    for p in range(0, 7):
        for d in range(0, p + 1):
            direct = sum(1 for size in range(d + 1) for T in itertools.combinations(range(p), size)
                         for _ in itertools.product((0, 1), repeat=p - len(T)))
            assert configuration_count(p, d) == direct - 1, (p, d)


def _minus_plus(m: int, k: int, u: tuple, out: int) -> list[Neuron]:
    """|u·x| on output ``out``: σ(u·x) + σ(−u·x)."""
    v = tuple(fmpq(1 if j == out else 0) for j in range(k))
    return [Neuron(tuple(map(fmpq, u)), fmpq(0), v), Neuron(tuple(fmpq(-x) for x in u), fmpq(0), v)]


def test_complete_search_refutes_every_configuration() -> None:
    """|x| (m = k = 1) and |x1| e1 + |x2| e2 (m = k = 2) are identifiable by MATH.md: no configuration holds, and the
    search refutes exactly configuration_count(p, d) of them, one rank minor each."""
    cases = [Network.from_neurons(_minus_plus(1, 1, (1,), 0), [fmpq(0)], QQ, 1),
             Network.from_neurons(_minus_plus(2, 2, (1, 0), 0) + _minus_plus(2, 2, (0, 1), 1), [fmpq(0)] * 2, QQ, 2)]
    for theta in cases:
        planes = hyperplanes(theta)
        d = sum(pl.doubled for pl in planes)
        assert doubled_dependency(theta, planes)[0] is None
        found, minors, exhausted = search(theta, planes, 10**6)
        assert found is None and exhausted and list(holding(theta, planes)) == []
        assert sum(len(layer) for layer in minors) == configuration_count(len(planes), d) > 0


@settings(max_examples=50, deadline=None)
@given(settings_networks(max_planes=4, max_doubled=2))
def test_search_agrees_with_holding_and_counts(theta: Network) -> None:
    """search's configuration is one that holding enumerates (its first, unless a T whose normals span R^m settles
    it before any enumeration), or (none holds) it refuted configuration_count(p, d) configurations; a small budget
    stops it without claiming completeness."""
    planes = hyperplanes(theta)
    d = sum(pl.doubled for pl in planes)
    found, minors, exhausted = search(theta, planes, 10**6)
    held = [(T, mask) for T, mask, _ in holding(theta, planes)]
    assert exhausted
    assert (found is None) == (not held)
    assert found is None or (found[0], found[1]) in held
    spans = found is not None and len(independent_rows(theta.field, [list(planes[h].key[:theta.m])
                                                                    for h in found[0]])) == theta.m
    assert found is None or spans or (found[0], found[1]) == held[0]
    assert found is not None or sum(len(layer) for layer in minors) == configuration_count(len(planes), d)
    total = configuration_count(len(planes), d)
    partial = search(theta, planes, 1)
    assert partial[2] == (total <= 1 or partial[0] is not None)


@settings(max_examples=50, deadline=None)
@given(settings_networks(max_planes=4, max_doubled=2))
def test_counterexamples_realize_the_same_function(theta: Network) -> None:
    """For every configuration that holds (up to 6), counterexample(θ) has θ's shape, agrees with θ at the grid
    points and on and next to every kink of both networks, and lies outside H_n·θ."""
    planes = hyperplanes(theta)
    for T, mask, X in itertools.islice(holding(theta, planes), 6):
        other = counterexample(theta, planes, T, mask, X)
        assert (other.m, other.n, other.k) == (theta.m, theta.n, theta.k)
        assert _same_function(theta, other), (T, mask)
        assert _orbit_invariant(other) != _orbit_invariant(theta), (T, mask)


def test_math_md_counterexamples_are_found() -> None:
    """MATH.md's examples |x| + σ(x − 1) and |x1| + |x2| (k = 1) are not identifiable by a configuration: at least
    one holds, and the first θ' agrees with θ exactly near every kink."""
    e1 = Network.from_neurons(_minus_plus(1, 1, (1,), 0) + [Neuron((fmpq(1),), fmpq(-1), (fmpq(1),))],
                              [fmpq(0)], QQ, 1)
    e2 = Network.from_neurons(_minus_plus(2, 1, (1, 0), 0) + _minus_plus(2, 1, (0, 1), 0), [fmpq(0)], QQ, 2)
    assert doubled_dependency(e2, hyperplanes(e2))[0] is None  # independent doubled normals: (b) must hold
    for theta in (e1, e2):
        planes = hyperplanes(theta)
        T, mask, X = next(holding(theta, planes))
        other = counterexample(theta, planes, T, mask, X)
        assert _same_function(theta, other)
        assert _orbit_invariant(other) != _orbit_invariant(theta)


@settings(max_examples=50, deadline=None)
@given(settings_networks(max_planes=4, max_doubled=3))
def test_doubled_dependency_and_resplit(theta: Network) -> None:
    """doubled_dependency gives a nonzero t with Σ t_H u_H = 0 over the doubled planes, and then resplit(θ) realizes
    ρ(θ) outside H_n·θ; or it gives the columns of a nonsingular |D|×|D| minor of the doubled normals (sympy)."""
    planes = hyperplanes(theta)
    normals = [[fr(x) for x in pl.key[:theta.m]] for pl in planes if pl.doubled]
    dependency, minor = doubled_dependency(theta, planes)
    rank = sympy.Matrix(len(normals), theta.m, [sympy.Rational(x) for row in normals for x in row]).rank() \
        if normals else 0
    assert (dependency is None) == (rank == len(normals))
    if dependency is None:
        sub = sympy.Matrix([[sympy.Rational(row[q]) for q in minor] for row in normals])
        assert len(minor) == len(normals) and (not normals or sub.det() != 0)
    else:
        t = [fr(x) for x in dependency]
        assert any(t) and all(sum(ti * u[q] for ti, u in zip(t, normals, strict=True)) == 0 for q in range(theta.m))
        other = resplit(theta, planes, dependency)
        assert (other.m, other.n, other.k) == (theta.m, theta.n, theta.k)
        assert _same_function(theta, other)
        assert _orbit_invariant(other) != _orbit_invariant(theta)


def test_resplit_on_two_doubled_points_of_the_line() -> None:
    """m = 1: |x| + |x − 1| has two doubled hyperplanes with normals 1, 1 (dependent); the re-split network agrees
    with it exactly, including at the kinks 0 and 1 and next to them."""
    neurons = _minus_plus(1, 1, (1,), 0) + [Neuron((fmpq(1),), fmpq(-1), (fmpq(1),)),
                                            Neuron((fmpq(-1),), fmpq(1), (fmpq(1),))]
    theta = Network.from_neurons(neurons, [fmpq(0)], QQ, 1)
    planes = hyperplanes(theta)
    dependency, _ = doubled_dependency(theta, planes)
    assert dependency is not None
    other = resplit(theta, planes, dependency)
    assert _same_function(theta, other)
    assert other != theta


def test_one_antiparallel_pair_with_m_1_is_settled_before_any_enumeration() -> None:
    """m = 1, 26 neurons on 25 hyperplanes, one of them doubled, output weights 3^i (so no choice of the 2^24
    on the other hyperplanes cancels): any single hyperplane spans R^1, so a configuration holds at once; the
    counterexample θ' is in the fibre (exact evaluation on a grid through every kink) and outside the orbit."""
    n = 26
    A = [[fmpq(x)] for x in [1, -2, 3, 5, -7, 2, 1, -3, 5, 7, -1, 2, 3, -5, 7, 1, -2, 3, 5, -7, 2, 1, -3, 5, 7]]
    b = [fmpq(3 * i + 1) for i in range(n - 1)]
    A.append([-A[0][0]])
    b.append(-b[0])
    theta = Network.build([[fmpq(3**i) for i in range(n)]], A, b, [fmpq(0)], QQ, 1)
    planes = hyperplanes(theta)
    assert sum(pl.doubled for pl in planes) == 1 and len(planes) == n - 1
    found, minors, exhausted = search(theta, planes, 1)  # one rank, no enumeration of the 2^24 choices
    assert found is not None and exhausted and minors == []
    verdict = decide_identifiable(theta)
    assert not verdict.identifiable
    other = verdict.counterexample
    kinks = sorted({-x / a[0] for a, x in zip(A, b, strict=True)})
    grid = [k + fmpq(s, 2) for k in kinks for s in (-1, 0, 1)]
    assert all(theta.evaluate([t]) == other.evaluate([t]) for t in grid)
    report = check_certificate(json.loads(json.dumps(identifiability_certificate(verdict, InputRecord("t", "0" * 64)))))
    assert report.valid, report.reason  # the checker also confirms θ' lies outside the orbit

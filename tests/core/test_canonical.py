"""certsym.core.canonical: the kink invariants are an invariant of the realized function.

Checked: invariance under the H_n action (permutations with positive scalings, certsym.core.group) and under the
moves of certsym.core.reduction (zeroing, bias shifting, merging, here also applied backwards: adding dead or
constant neurons, splitting a neuron along its ray); the invariants rebuild ρ(θ) exactly; pairs with the same
function (MATH.md's E1–E6) share one form; and hand-made pairs whose functions differ at a point found by exact
evaluation have different forms.
"""

from __future__ import annotations

from flint import fmpq
from helpers import field_of, positive_rationals, q, small_rationals
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.canonical import Canonical, canonical_form
from certsym.core.group import HElement
from certsym.core.network import Network, Neuron
from certsym.core.reduction import minimal_form, reduce

small = st.integers(-2, 2).map(fmpq)


def net(M, A, b, c) -> Network:
    """A network over Q from integers or "p/q" strings."""
    return Network.build([[q(x) for x in row] for row in M], [[q(x) for x in row] for row in A], [q(x) for x in b],
                         [q(x) for x in c])


@st.composite
def networks(draw, max_n: int = 5, m: int | None = None, k: int | None = None) -> Network:
    m = m or draw(st.integers(1, 2))
    k = k or draw(st.integers(1, 2))
    n = draw(st.integers(0, max_n))
    return Network.build([[draw(small) for _ in range(n)] for _ in range(k)],
                         [[draw(small) for _ in range(m)] for _ in range(n)],
                         [draw(small) for _ in range(n)], [draw(small) for _ in range(k)], m=m)


@st.composite
def h_elements(draw, n: int) -> HElement:
    perm = draw(st.permutations(range(n)))
    return HElement.make(perm, [draw(positive_rationals) for _ in range(n)])


def points(m: int) -> list[list[fmpq]]:
    """A grid of rational points, with coordinates in 1/3 steps (so kinks at small rationals are hit too)."""
    grid = [fmpq(t, 3) for t in range(-9, 10, 2)] + [fmpq(0), fmpq(1), fmpq(-1), fmpq(1, 2)]
    if m == 1:
        return [[x] for x in grid]
    return [[x, y] for x in grid[::2] for y in grid[1::2]] + [[x, x] for x in grid]


def rebuild(canon: Canonical, x: list) -> list:
    """Σ_H J_H σ(u_H·x + β_H) + L x + C, evaluated from the invariants alone."""
    F, m = canon.field, canon.m
    out = []
    for j in range(canon.k):
        total = canon.constant[j] + sum((canon.linear[j][t] * x[t] for t in range(m)), F.zero)
        for key, J in canon.kinks.items():
            z = key[m] + sum((key[t] * x[t] for t in range(m)), F.zero)
            if z > 0:
                total = total + J[j] * z
        out.append(total)
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_invariant_under_the_h_n_action(data) -> None:
    """canonical_form(h·θ) = canonical_form(θ) for h = D P with random permutation and positive rational D; the
    stable hash agrees too. (h·θ is checked to realize ρ(θ) by exact evaluation first.)"""
    theta = data.draw(networks())
    h = data.draw(h_elements(theta.n))
    moved = h.act(theta)
    for x in points(theta.m)[::3]:
        assert moved.evaluate(x) == theta.evaluate(x)
    assert canonical_form(moved) == canonical_form(theta)
    assert canonical_form(moved).hash == canonical_form(theta).hash


def _grow(theta: Network, moves: list[tuple[str, int, fmpq, list[fmpq]]]) -> Network:
    """θ with reduction moves applied backwards: a dead neuron (v = 0, any row), a constant neuron (a = 0, b > 0,
    its value taken out of c), or neuron i split into itself and a copy scaled by μ > 0 along its ray."""
    F = theta.field
    neurons, c = theta.neurons(), list(theta.c)
    for kind, i, mu, row in moves:
        if kind == "dead":
            neurons.append(Neuron(tuple(row[:theta.m]), row[theta.m], (F.zero,) * theta.k))
        elif kind == "constant":
            v = tuple(row[:theta.k])
            neurons.append(Neuron((F.zero,) * theta.m, mu, v))
            c = [cj - vj * mu for cj, vj in zip(c, v, strict=True)]
        elif neurons:  # split: v σ(z) = (v/2) σ(z) + (v/(2μ)) σ(μ z)
            nu = neurons[i % len(neurons)]
            neurons[i % len(neurons)] = Neuron(nu.a, nu.b, tuple(x / 2 for x in nu.v))
            neurons.append(Neuron(tuple(mu * x for x in nu.a), mu * nu.b, tuple(x / (2 * mu) for x in nu.v)))
    return Network.from_neurons(neurons, c, F, theta.m)


moves = st.lists(st.tuples(st.sampled_from(["dead", "constant", "split"]), st.integers(0, 10), positive_rationals,
                           st.lists(small_rationals, min_size=3, max_size=3)), max_size=4)


@settings(max_examples=60, deadline=None)
@given(networks(), moves)
def test_invariant_under_the_reduction_moves(theta: Network, steps: list) -> None:
    """Adding dead or constant neurons and splitting neurons along their rays (moves 1–3 backwards) leaves the
    canonical form unchanged, and so does reducing to θ_min (moves 1–3 forwards)."""
    grown = _grow(theta, steps)
    for x in points(theta.m)[::3]:
        assert grown.evaluate(x) == theta.evaluate(x)
    assert canonical_form(grown) == canonical_form(theta)
    assert canonical_form(minimal_form(grown)) == canonical_form(theta)
    assert canonical_form(reduce(theta).minimal).hash == canonical_form(theta).hash


@settings(max_examples=50, deadline=None)
@given(networks(max_n=6))
def test_invariants_rebuild_the_function(theta: Network) -> None:
    """Σ_H J_H σ(ℓ_H) + L x + C computed from the invariants equals ρ(θ)(x) exactly on a grid of points, and every
    hyperplane key is normalized (first nonzero normal entry +1) with a nonzero kink."""
    canon = canonical_form(theta)
    for x in points(theta.m):
        assert rebuild(canon, x) == theta.evaluate(x)
    for key, J in canon.kinks.items():
        assert next(t for t in key[:theta.m] if t != 0) == 1
        assert any(t != 0 for t in J)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_equal_forms_mean_equal_values_and_conversely(data) -> None:
    """For pairs of the same shape (unrelated, or related by H_n and backward moves, possibly with one entry of
    M or b changed): equal forms imply equal values at every grid point, a grid point where the values differ
    implies different forms, and the hashes agree exactly when the forms do."""
    t1 = data.draw(networks(max_n=3))
    how = data.draw(st.sampled_from(["unrelated", "related", "nudged"]))
    if how == "unrelated":
        t2 = data.draw(networks(max_n=3, m=t1.m, k=t1.k))
    else:
        t2 = _grow(t1, data.draw(moves))
        t2 = data.draw(h_elements(t2.n)).act(t2)
        if how == "nudged" and t2.n:
            i, delta = data.draw(st.integers(0, t2.n - 1)), data.draw(st.sampled_from([fmpq(1), fmpq(-1, 2)]))
            b = list(t2.b)
            b[i] = b[i] + delta
            t2 = Network.build(t2.M, t2.A, b, t2.c, m=t2.m)
    same_values = all(t1.evaluate(x) == t2.evaluate(x) for x in points(t1.m))
    same_form = canonical_form(t1) == canonical_form(t2)
    assert same_values or not same_form
    assert same_form or how != "related"
    assert same_form == (canonical_form(t1).hash == canonical_form(t2).hash)


def test_number_field_h_action() -> None:
    """Over Q(√2): scaling neurons by 1 + √2 and √2 − 1 and swapping them leaves the form unchanged, while
    replacing a bias b by b + √2 changes it (and the value at a point, by exact evaluation)."""
    F, (s,) = field_of("sqrt(2)")
    theta = Network.build([[F(1), s]], [[s, F(1)], [F(-1), F(2)]], [F(0), s - 1], [F(3)], F)
    h = HElement.make([1, 0], [1 + s, s - 1])
    assert canonical_form(h.act(theta)) == canonical_form(theta)
    other = Network.build(theta.M, theta.A, [F(0) + s, s - 1], theta.c, F)
    x = [F(0), F(0)]
    assert other.evaluate(x) != theta.evaluate(x)
    assert canonical_form(other) != canonical_form(theta)


SAME = {  # MATH.md's examples E1–E6: the same function, minimal forms possibly in different H_n-orbits
    "E1": (([[1, 2]], [[1], [1]], [0, -1], [0]), ([[1, 2]], [["2"], ["1/2"]], [-2, 0], [0])),
    "E2": (([[1, 1]], [[1], [1]], [0, 0], [0]), ([[3, -1]], [[1], [1]], [0, 0], [0])),
    "E3": (([[1, 5]], [[1], [0]], [0, 2], [0]), ([[1, 0]], [[1], [0]], [0, 0], [10])),
    "E4": (([[1, -1]], [[1], [-1]], [0, 0], [0]), ([[1, -1]], [[1], [-1]], [-3, 3], [3])),
    "E5": (([[1, -1]], [[1], [1]], [0, -1], [0]), ([[1, -1]], [[-1], [-1]], [0, 1], [1])),
    "E6": (([[1, 1, 1]], [[1, 0], [0, 1], [-1, -1]], [0, 0, 1], [0]),
           ([[1, 1, 1]], [[-1, 0], [0, -1], [1, 1]], [0, 0, -1], [1])),
}


def test_equal_functions_have_one_form() -> None:
    """Each pair of MATH.md's E1–E6 agrees on the grid by exact evaluation and has one canonical form, including
    E4–E6 whose minimal forms are not related by H_n."""
    for name, (p1, p2) in SAME.items():
        t1, t2 = net(*p1), net(*p2)
        assert all(t1.evaluate(x) == t2.evaluate(x) for x in points(t1.m)), name
        assert canonical_form(t1) == canonical_form(t2), name
        assert canonical_form(t1).hash == canonical_form(t2).hash, name


DIFFERENT = {  # (θ1, θ2, a point where they differ)
    "kink moved": (([[1]], [[1]], [0], [0]), ([[1]], [[1]], [-1], [0]), ["1/2"]),
    "kink doubled": (([[1]], [[1]], [0], [0]), ([[2]], [[1]], [0], [0]), ["1"]),
    "|x| against x": (([[1, 1]], [[1], [-1]], [0, 0], [0]), ([[1, -1]], [[1], [-1]], [0, 0], [0]), ["-1"]),
    "x against 2x (no kink, other slope)": (([[1, -1]], [[1], [-1]], [0, 0], [0]),
                                            ([[1, -1]], [[2], [-2]], [0, 0], [0]), ["1"]),
    "clamp against ramp": (([[1, -1]], [[1], [1]], [0, -1], [0]), ([[1, 0]], [[1], [1]], [0, -1], [0]), ["2"]),
    "constant": (([[1]], [[1]], [0], [0]), ([[1]], [[1]], [0], ["1/3"]), ["0"]),
    "other coordinate": (([[1]], [[1, 0]], [0], [0]), ([[1]], [[0, 1]], [0], [0]), ["1", "0"]),
    "outputs swapped": (([[1], [0]], [[1]], [0], [0, 0]), ([[0], [1]], [[1]], [0], [0, 0]), ["1"]),
    "opposite half-planes": (([[1]], [[1, 1]], [0], [0]), ([[1]], [[-1, -1]], [0], [0]), ["1", "1"]),
}


def test_different_functions_have_different_forms() -> None:
    """Hand-made pairs: exact evaluation finds a point where the functions differ, and the canonical forms (and
    their hashes) differ."""
    for name, (p1, p2, x) in DIFFERENT.items():
        t1, t2 = net(*p1), net(*p2)
        point = [q(t) for t in x]
        assert t1.evaluate(point) != t2.evaluate(point), name
        assert canonical_form(t1) != canonical_form(t2), name
        assert canonical_form(t1).hash != canonical_form(t2).hash, name

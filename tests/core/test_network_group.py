"""Networks θ = (M, A, b, c): shape validation, exact evaluation, subtraction; the group H_n."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from flint import fmpq
from helpers import positive_rationals, small_rationals, sqrt2_field
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.group import HElement
from certsym.core.network import Network, Neuron
from certsym.errors import InputError
from certsym.numbers import QQ, Field

FAST = settings(max_examples=50, deadline=None)

# E1 of MATH.md: ρ(x) = σ(x) + 2σ(x − 1), and its H_2 image under (swap, diag(2, 1/2)).
E1 = Network.build([[1, 2]], [[1], [1]], [0, -1], [0])
E1_IMAGE = Network.build([[1, 2]], [[2], [fmpq(1, 2)]], [-2, 0], [0])


# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------


def test_build_records_shape_and_converts_entries() -> None:
    net = Network.build([[1, 2, 3], [4, 5, 6]], [[1], [2], [3]], [0, 0, 0], [7, 8])
    assert (net.m, net.n, net.k) == (1, 3, 2)
    assert net.field == QQ
    assert all(isinstance(x, fmpq) for row in net.M for x in row)
    assert net.neuron(1) == Neuron((fmpq(2),), fmpq(0), (fmpq(2), fmpq(5)))


@pytest.mark.parametrize(
    ("M", "A", "b", "c", "m"),
    [
        ([[1, 2]], [[1], [1]], [0], [0], None),  # A has 2 rows, b has 1 entry
        ([[1, 2]], [[1, 2], [1]], [0, 0], [0], None),  # rows of A differ in length
        ([[1, 2]], [[1], [1]], [0, 0], [0], 2),  # A has 1 column, m says 2
        ([[1]], [[1], [1]], [0, 0], [0], None),  # row of M has 1 entry, n = 2
        ([[1, 2], [3, 4]], [[1], [1]], [0, 0], [0], None),  # M has 2 rows, c has 1 entry
        ([[1, 2]], [[1], [1]], [0, 0], [], None),  # k = 0
        ([[]], [], [], [0], None),  # n = 0 without m
        ([[]], [], [], [0], 0),  # m = 0
        ([[1]], [[]], [0], [0], None),  # A has 0 columns
    ],
)
def test_build_rejects_bad_shapes(M: list, A: list, b: list, c: list, m: int | None) -> None:
    with pytest.raises(InputError):
        Network.build(M, A, b, c, QQ, m)


def test_empty_network_is_its_constant() -> None:
    net = Network.build([[], []], [], [], [3, -1], QQ, m=2)
    assert (net.m, net.n, net.k) == (2, 0, 2)
    assert net.evaluate([5, 7]) == [3, -1]
    assert Network.zero(2, 3, 1).evaluate([1, 1]) == [0]


# --------------------------------------------------------------------------------------------
# Evaluation on the worked examples of MATH.md
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (fmpq(-1), fmpq(0)),  # σ(−1) + 2σ(−2) = 0
        (fmpq(0), fmpq(0)),  # σ(0) + 2σ(−1) = 0
        (fmpq(1, 2), fmpq(1, 2)),  # σ(1/2) + 2σ(−1/2) = 1/2
        (fmpq(1), fmpq(1)),  # σ(1) + 2σ(0) = 1
        (fmpq(2), fmpq(4)),  # σ(2) + 2σ(1) = 2 + 2
        (fmpq(3), fmpq(7)),  # σ(3) + 2σ(2) = 3 + 4
    ],
)
def test_evaluate_e1(x: fmpq, expected: fmpq) -> None:
    assert E1.evaluate([x]) == [expected]
    assert E1([x]) == [expected]
    assert E1_IMAGE.evaluate([x]) == [expected]


def test_evaluate_e6_two_inputs() -> None:
    # E6: σ(x1) + σ(x2) + σ(1 − x1 − x2); at (1/2, 3): 1/2 + 3 + σ(−5/2) = 7/2
    net = Network.build([[1, 1, 1]], [[1, 0], [0, 1], [-1, -1]], [0, 0, 1], [0])
    assert net.evaluate([fmpq(1, 2), 3]) == [fmpq(7, 2)]
    # at (−1, −1): 0 + 0 + σ(3) = 3
    assert net.evaluate([-1, -1]) == [3]


def test_evaluate_two_outputs() -> None:
    # outputs: (σ(x) + 1, −σ(x) + 2σ(−x)); at x = −3: (1, 6); at x = 2: (3, −2)
    net = Network.build([[1, 0], [-1, 2]], [[1], [-1]], [0, 0], [1, 0])
    assert net.evaluate([-3]) == [1, 6]
    assert net.evaluate([2]) == [3, -2]


def test_evaluate_over_q_sqrt2() -> None:
    F, s = sqrt2_field()
    # S1: (√2 − 1)σ((√2 + 1)x) + σ(x − √2); at x = 3: (√2−1)(√2+1)·3 + 3 − √2 = 6 − √2
    net = Network.build([[s - 1, 1]], [[s + 1], [1]], [0, -s], [0], F)
    assert net.evaluate([3]) == [6 - s]
    # at x = 1 < √2 the second neuron is off: (√2 − 1)(√2 + 1) = 1
    assert net.evaluate([1]) == [1]
    # at x = √2 the second neuron sits at its kink (σ(0) = 0): (√2 − 1)(√2 + 1)·√2 = √2
    assert net.evaluate([s]) == [s]


def test_evaluate_rejects_wrong_dimension() -> None:
    with pytest.raises(InputError):
        E1.evaluate([1, 2])
    with pytest.raises(InputError):
        E1.evaluate([])


def test_minus_realizes_difference_e1() -> None:
    d = E1.minus(E1_IMAGE)
    assert (d.m, d.n, d.k) == (1, 4, 1)
    for x in range(-3, 4):
        assert d.evaluate([x]) == [0]
    other = Network.build([[1]], [[1]], [0], [5])  # σ(x) + 5
    d = E1 - other  # 2σ(x − 1) − 5
    assert d.evaluate([3]) == [fmpq(-1)]
    assert d.evaluate([0]) == [fmpq(-5)]


def test_minus_rejects_mismatched_networks() -> None:
    with pytest.raises(InputError):
        E1.minus(Network.build([[1]], [[1, 1]], [0], [0]))  # m differs
    with pytest.raises(InputError):
        E1.minus(Network.build([[1], [1]], [[1]], [0], [0, 0]))  # k differs
    F, _ = sqrt2_field()
    with pytest.raises(InputError):
        E1.minus(E1.with_field(F))  # fields differ


# --------------------------------------------------------------------------------------------
# H_n elements
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("perm", "scale"),
    [
        ((0, 0), (1, 1)),  # not a bijection
        ((0, 2), (1, 1)),  # out of range
        ((1,), (1,)),
        ((0, 1), (1, 0)),  # zero scaling
        ((0, 1), (1, fmpq(-1, 2))),  # negative scaling
        ((0, 1), (1,)),  # lengths differ
    ],
)
def test_helement_validation(perm: tuple, scale: tuple) -> None:
    with pytest.raises(InputError):
        HElement.make(perm, scale)


def test_helement_rejects_nonpositive_algebraic_scaling() -> None:
    F, s = sqrt2_field()
    with pytest.raises(InputError):
        HElement.make([0], [1 - s])  # 1 − √2 < 0
    assert HElement.make([0], [s - 1]).scale == (s - 1,)


def test_helement_identity_inverse_compose_e1() -> None:
    h = HElement.make([1, 0], [fmpq(2), fmpq(1, 2)])
    assert h.act(E1) == E1_IMAGE  # MATH.md E1
    assert h(E1) == E1_IMAGE
    assert h.inverse().act(E1_IMAGE) == E1
    e = HElement.identity(2)
    assert e.act(E1) == E1
    assert (h * h.inverse()).act(E1) == E1
    # h² = (identity permutation, scalings 2·(1/2) on both): the identity element
    h2 = h * h
    assert h2.perm == (0, 1)
    assert h2.scale == (1, 1)


def test_helement_rejects_wrong_width() -> None:
    with pytest.raises(InputError):
        HElement.identity(3).act(E1)
    with pytest.raises(InputError):
        HElement.identity(3) * HElement.identity(2)


# --------------------------------------------------------------------------------------------
# Hypothesis: networks over Q and over Q(√2)
# --------------------------------------------------------------------------------------------


def _sqrt2_scalar() -> st.SearchStrategy:
    F, s = sqrt2_field()
    return st.tuples(small_rationals, small_rationals).map(lambda ab: ab[0] + ab[1] * s)


def _sqrt2_positive() -> st.SearchStrategy:
    # (p + q√2)² + r with r > 0 rational is positive
    F, s = sqrt2_field()
    return st.tuples(small_rationals, small_rationals, positive_rationals).map(
        lambda t: F((t[0] + t[1] * s) ** 2 + t[2])
    )


FIELD_CASES: dict[str, tuple[Callable[[], Field], Callable[[], st.SearchStrategy],
                          Callable[[], st.SearchStrategy]]] = {
    "QQ": (lambda: QQ, lambda: small_rationals, lambda: positive_rationals),
    "Q(sqrt2)": (lambda: sqrt2_field()[0], _sqrt2_scalar, _sqrt2_positive),
}


@st.composite
def network_case(draw: st.DrawFn, field_name: str | None = None) -> tuple:
    """A field name, a random network over it, and the strategies for scalars of that field."""
    name = field_name or draw(st.sampled_from(sorted(FIELD_CASES)))
    make_field, scalars, positives = FIELD_CASES[name]
    field = make_field()
    m = draw(st.integers(1, 3))
    n = draw(st.integers(0, 4))
    k = draw(st.integers(1, 2))
    sc = scalars()

    def vec(size: int) -> list:
        return draw(st.lists(sc, min_size=size, max_size=size))

    net = Network.build([vec(n) for _ in range(k)], [vec(m) for _ in range(n)], vec(n), vec(k),
                        field, m)
    return net, sc, positives()


@st.composite
def helements(draw: st.DrawFn, n: int, positives: st.SearchStrategy) -> HElement:
    perm = draw(st.permutations(range(n)))
    scale = draw(st.lists(positives, min_size=n, max_size=n))
    return HElement.make(perm, scale)


def _point(draw: st.DrawFn, net: Network) -> list:
    # small rational points: with small entries they often land on or near a kink
    return draw(st.lists(small_rationals, min_size=net.m, max_size=net.m))


@FAST
@given(st.data())
def test_h_action_preserves_function(data: st.DataObject) -> None:
    net, _, pos = data.draw(network_case())
    h = data.draw(helements(net.n, pos))
    image = h.act(net)
    assert (image.m, image.n, image.k) == (net.m, net.n, net.k)
    assert image.c == net.c
    for _ in range(3):
        x = _point(data.draw, net)
        assert image.evaluate(x) == net.evaluate(x)


@FAST
@given(st.data())
def test_minus_realizes_difference(data: st.DataObject) -> None:
    net, sc, _ = data.draw(network_case())
    # a second network over the same field with the same m, k (its own width)
    n2 = data.draw(st.integers(0, 3))
    other = Network.build(
        [data.draw(st.lists(sc, min_size=n2, max_size=n2)) for _ in range(net.k)],
        [data.draw(st.lists(sc, min_size=net.m, max_size=net.m)) for _ in range(n2)],
        data.draw(st.lists(sc, min_size=n2, max_size=n2)),
        data.draw(st.lists(sc, min_size=net.k, max_size=net.k)),
        net.field,
        net.m,
    )
    d = net.minus(other)
    assert (d.m, d.n, d.k) == (net.m, net.n + n2, net.k)
    for _ in range(3):
        x = _point(data.draw, net)
        assert d.evaluate(x) == [u - v for u, v in zip(net.evaluate(x), other.evaluate(x),
                                                       strict=True)]
    # θ ⊖ θ realizes the zero function
    x = _point(data.draw, net)
    assert net.minus(net).evaluate(x) == [0] * net.k


@FAST
@given(st.data())
def test_h_action_is_a_group_action(data: st.DataObject) -> None:
    net, _, pos = data.draw(network_case())
    h1 = data.draw(helements(net.n, pos))
    h2 = data.draw(helements(net.n, pos))
    assert (h1 * h2).act(net) == h1.act(h2.act(net))
    assert h1.inverse().act(h1.act(net)) == net
    assert h1.act(h1.inverse().act(net)) == net
    assert HElement.identity(net.n).act(net) == net
    # associativity of composition, and inverse of a product
    h3 = data.draw(helements(net.n, pos))
    assert ((h1 * h2) * h3).act(net) == (h1 * (h2 * h3)).act(net)
    assert (h1 * h2).inverse().act(net) == (h2.inverse() * h1.inverse()).act(net)


@FAST
@given(st.data())
def test_h_action_matches_matrix_formula(data: st.DataObject) -> None:
    """h·(M, A, b, c) = (M h^{-1}, hA, hb, c) with h = D P, (P z)_i = z_{perm[i]}."""
    net, _, pos = data.draw(network_case())
    h = data.draw(helements(net.n, pos))
    image = h.act(net)
    assert (image.m, image.n, image.k) == (net.m, net.n, net.k) and image.c == net.c  # also when n = 0
    for i in range(net.n):
        p, d = h.perm[i], h.scale[i]
        assert image.A[i] == tuple(d * x for x in net.A[p])
        assert image.b[i] == d * net.b[p]
        for j in range(net.k):
            assert image.M[j][i] == net.M[j][p] / d

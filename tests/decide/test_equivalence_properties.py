"""Property tests of ``certsym.decide.equivalence.decide`` and its certificates (MATH.md, Part I).

A parameter θ over Q is drawn at random, and a DISGUISE θ' with ρ(θ') = ρ(θ) is built from the
function-preserving moves of MATH.md run backwards (each one checked by exact evaluation while it
is built):

(a) the H_n action (random permutation, positive rational scalings);
(b) splitting a neuron: v σ(z) = (v − λt) σ(z) + t σ(λz) for λ > 0;
(c) dead neurons (v = 0, arbitrary row);
(d) constant neurons: a = 0, b > 0 (c reduced by v b), and a = 0, b ≤ 0 with arbitrary v;
(e) flipping a neuron: v σ(z) = v σ(−z) + v z; the linear part v a·x is realized by an antisymmetric
    pair on the parallel hyperplane a·x + b + δ = 0 (δ ≠ 0), and the constant is fixed through c;
    also a partial flip v σ(z) = (v − t) σ(z) + t σ(−z) + t z (this produces cross merges);
(f) antisymmetric pairs whose linear parts cancel (two pairs on parallel hyperplanes with opposite
    linear parts, or, for m ≥ 2, three pairs on directions w1, w2, −(w1 + w2)); constants via c.

decide must say EQUIVALENT and the certificate must replay; a change that alters the function must
give NOT EQUIVALENT with a rational witness that the checker accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, equivalence_certificate
from certsym.core.canonical import canonical_form
from certsym.core.group import HElement
from certsym.core.network import Network
from certsym.core.reduction import reduce
from certsym.decide.equivalence import Verdict, decide
from certsym.numbers import QQ
from certsym.reproduce.oracle import same_function_m1
from certsym_check import check_certificate

PROPS = settings(max_examples=40, deadline=None)
RECORDS = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "1" * 64))

small = st.builds(fmpq, st.integers(-4, 4), st.integers(1, 3))
nonzero = st.builds(fmpq, st.integers(1, 4), st.integers(1, 3)).flatmap(lambda x: st.sampled_from([x, -x]))
positive = st.builds(fmpq, st.integers(1, 5), st.integers(1, 3))

Neuron3 = tuple[tuple, fmpq, tuple]  # (a, b, v)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def vec(draw, length: int, elements=small) -> tuple:
    return tuple(draw(elements) for _ in range(length))


@st.composite
def networks(draw, m: int | None = None, k: int | None = None, min_n: int = 0, max_n: int = 5,
             entries=small) -> Network:
    m = draw(st.integers(1, 3)) if m is None else m
    k = draw(st.integers(1, 2)) if k is None else k
    n = draw(st.integers(min_n, max_n))
    A = [list(vec(draw, m, entries)) for _ in range(n)]
    b = list(vec(draw, n, entries))
    M = [list(vec(draw, n, entries)) for _ in range(k)]
    c = list(vec(draw, k, entries))
    return Network.build(M, A, b, c, QQ, m)


def to_parts(net: Network) -> tuple[list[Neuron3], list[fmpq]]:
    return [(nu.a, nu.b, nu.v) for nu in net.neurons()], list(net.c)


def from_parts(neurons: Sequence[Neuron3], c: Sequence[fmpq], m: int) -> Network:
    k = len(c)
    return Network.build([[nu[2][j] for nu in neurons] for j in range(k)], [list(nu[0]) for nu in neurons],
                         [nu[1] for nu in neurons], list(c), QQ, m)


def pair(w: tuple, beta: fmpq, u: tuple, mu1: fmpq, mu2: fmpq) -> list[Neuron3]:
    """(u/μ1) σ(μ1 ℓ) − (u/μ2) σ(−μ2 ℓ) = u ℓ with ℓ = w·x + β (σ(z) − σ(−z) = z)."""
    return [
        (tuple(mu1 * x for x in w), mu1 * beta, tuple(x / mu1 for x in u)),
        (tuple(-mu2 * x for x in w), -mu2 * beta, tuple(-x / mu2 for x in u)),
    ]


def sample_points(draw, m: int, count: int = 4) -> list[list[fmpq]]:
    return [list(vec(draw, m, st.builds(fmpq, st.integers(-12, 12), st.integers(1, 5)))) for _ in range(count)]


def breakpoints_probe(net: Network) -> list[list[fmpq]]:
    """For m = 1: every breakpoint of net and points beside it (where a wrong move would show)."""
    if net.m != 1:
        return []
    pts = []
    for row, bi in zip(net.A, net.b, strict=True):
        if row[0] != 0:
            t = -bi / row[0]
            pts += [[t], [t - fmpq(1, 3)], [t + fmpq(1, 3)]]
    return pts


def assert_same_values(p: Network, q: Network, points: list[list[fmpq]]) -> None:
    for x in points + breakpoints_probe(p) + breakpoints_probe(q):
        assert p.evaluate(x) == q.evaluate(x), (x, p, q)


@st.composite
def disguise(draw, theta: Network) -> Network:
    """A random θ' with ρ(θ') = ρ(θ), built from moves (a)-(f); sanity-checked by evaluation."""
    m, k = theta.m, theta.k
    neurons, c = to_parts(theta)
    ops = draw(st.lists(st.sampled_from(["h", "split", "dead", "const_pos", "const_nonpos", "flip",
                                         "partial_flip", "pairs", "triangle"]), max_size=6))
    for op in ops:
        if op == "h" and neurons:
            neurons, c = to_parts(random_h(draw, from_parts(neurons, c, m)))
        elif op == "split" and neurons:
            i = draw(st.integers(0, len(neurons) - 1))
            a, b, v = neurons[i]
            lam, t = draw(positive), vec(draw, k)
            neurons[i] = (a, b, tuple(vj - lam * tj for vj, tj in zip(v, t, strict=True)))
            neurons.append((tuple(lam * x for x in a), lam * b, t))
        elif op == "dead":
            neurons.append((vec(draw, m), draw(small), (fmpq(0),) * k))
        elif op == "const_pos":
            b, v = draw(positive), vec(draw, k)
            neurons.append(((fmpq(0),) * m, b, v))
            c = [cj - vj * b for cj, vj in zip(c, v, strict=True)]
        elif op == "const_nonpos":
            b = -draw(st.builds(fmpq, st.integers(0, 5), st.integers(1, 3)))
            neurons.append(((fmpq(0),) * m, b, vec(draw, k)))
        elif op == "flip" and neurons:
            # v σ(z) = v σ(−z) + v z, and v z = v (a·x + b + δ) − v δ by a pair on a parallel hyperplane.
            i = draw(st.integers(0, len(neurons) - 1))
            a, b, v = neurons[i]
            delta = draw(nonzero)
            neurons[i] = (tuple(-x for x in a), -b, v)
            neurons += pair(a, b + delta, v, draw(positive), draw(positive))
            c = [cj - vj * delta for cj, vj in zip(c, v, strict=True)]
        elif op == "partial_flip" and neurons:
            # v σ(z) = (v − t) σ(z) + t σ(−z) + t z: both orientations of one hyperplane (cross merges).
            i = draw(st.integers(0, len(neurons) - 1))
            a, b, v = neurons[i]
            t, delta = vec(draw, k), draw(nonzero)
            neurons[i] = (a, b, tuple(vj - tj for vj, tj in zip(v, t, strict=True)))
            neurons.append((tuple(-x for x in a), -b, t))
            neurons += pair(a, b + delta, t, draw(positive), draw(positive))
            c = [cj - tj * delta for cj, tj in zip(c, t, strict=True)]
        elif op == "pairs":
            # u (w·x + β) − (u/μ)(μ w·x + β') = u β − u β'/μ: a constant, moved into c.
            w, beta, beta2, u, mu = vec(draw, m), draw(small), draw(small), vec(draw, k), draw(positive)
            neurons += pair(w, beta, u, draw(positive), draw(positive))
            neurons += pair(tuple(mu * x for x in w), beta2, tuple(-x / mu for x in u), draw(positive),
                            draw(positive))
            c = [cj - uj * beta + uj * beta2 / mu for cj, uj in zip(c, u, strict=True)]
        elif op == "triangle" and m >= 2:
            w1, w2, u = vec(draw, m), vec(draw, m), vec(draw, k)
            w3 = tuple(-x - y for x, y in zip(w1, w2, strict=True))
            total = fmpq(0)
            for w in (w1, w2, w3):
                beta = draw(small)
                neurons += pair(w, beta, u, draw(positive), draw(positive))
                total += beta
            c = [cj - uj * total for cj, uj in zip(c, u, strict=True)]
    result = from_parts(neurons, c, m)
    if result.n and draw(st.booleans()):
        result = random_h(draw, result)
    assert_same_values(theta, result, sample_points(draw, m))
    return result


def random_h(draw, net: Network) -> Network:
    perm = draw(st.permutations(range(net.n)))
    scale = [draw(positive) for _ in range(net.n)]
    return HElement.make(perm, scale).act(net)


@st.composite
def disguised(draw, theta_strategy=None) -> tuple[Network, Network]:
    theta = draw(networks() if theta_strategy is None else theta_strategy)
    return theta, draw(disguise(theta))


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def certified(p: Network, q: Network) -> Verdict:
    """decide(p, q) with its certificate replayed by the independent checker."""
    verdict = decide(p, q)
    report = check_certificate(equivalence_certificate(verdict, RECORDS))
    assert report.valid, report.reason
    assert report.kind == ("equivalent" if verdict.equivalent else "not_equivalent")
    return verdict


def assert_witness(verdict: Verdict, p: Network, q: Network) -> None:
    assert not verdict.equivalent
    x = verdict.witness
    assert x is not None and len(x) == p.m
    assert all(isinstance(t, fmpq) for t in x)
    assert p.evaluate(x) != q.evaluate(x)
    assert verdict.values == (p.evaluate(x), q.evaluate(x))


def live_neurons(net: Network) -> list[int]:
    return [i for i, nu in enumerate(net.neurons()) if any(x != 0 for x in nu.v) and any(x != 0 for x in nu.a)]


# --------------------------------------------------------------------------------------------
# Disguises are recognized and certified
# --------------------------------------------------------------------------------------------


@PROPS
@given(disguised())
def test_disguise_is_equivalent_and_certified(pair_: tuple[Network, Network]) -> None:
    theta, other = pair_
    certified(theta, other)
    assert decide(theta, other).equivalent
    assert decide(other, theta).equivalent
    certified(other, theta)
    assert canonical_form(theta).hash == canonical_form(other).hash


@PROPS
@given(st.data())
def test_disguise_of_wide_network_with_repeated_rows(data: st.DataObject) -> None:
    """Rows from a tiny set, so that proportional and antisymmetric rows occur in θ itself."""
    tiny = st.sampled_from([fmpq(-1), fmpq(0), fmpq(1), fmpq(2)])
    theta = data.draw(networks(min_n=2, max_n=6, entries=tiny))
    other = data.draw(disguise(theta))
    assert certified(theta, other).equivalent
    assert certified(other, theta).equivalent


@PROPS
@given(st.data())
def test_change_of_constant_is_detected_with_witness(data: st.DataObject) -> None:
    theta, other = data.draw(disguised())
    changed = Network.build(other.M, other.A, other.b, [other.c[0] + 1, *other.c[1:]], QQ, other.m)
    for p, q in ((theta, changed), (changed, theta)):
        verdict = certified(p, q)
        assert_witness(verdict, p, q)


@PROPS
@given(st.data())
def test_doubling_a_live_output_weight_is_detected(data: st.DataObject) -> None:
    """ρ changes by v_i σ(a_i·x + b_i) with v_i ≠ 0, a_i ≠ 0: a function with a kink, never affine."""
    theta = data.draw(networks(min_n=1))
    minimal = reduce(theta).minimal
    live = live_neurons(minimal)
    assume(live)
    i = data.draw(st.sampled_from(live))
    M = [[2 * x if col == i else x for col, x in enumerate(row)] for row in minimal.M]
    doubled = Network.build(M, minimal.A, minimal.b, minimal.c, QQ, minimal.m)
    other = data.draw(disguise(doubled))
    for p, q in ((theta, other), (other, theta)):
        verdict = certified(p, q)
        assert_witness(verdict, p, q)


@PROPS
@given(st.data())
def test_witness_for_kink_change_in_higher_dimension(data: st.DataObject) -> None:
    """Adding v σ(a·x + β) (v ≠ 0, a ≠ 0) changes the kink J_H of its hyperplane by λ v ≠ 0, so ρ changes
    (whether or not θ already had neurons on that hyperplane); m ≥ 2 exercises the moment-curve witness."""
    theta = data.draw(networks(m=data.draw(st.integers(2, 3))))
    a = vec(data.draw, theta.m, nonzero)
    extra = Network.build([[*row, 1] for row in theta.M], [*theta.A, a], [*theta.b, data.draw(small)],
                          theta.c, QQ, theta.m)
    other = data.draw(disguise(extra))
    for p, q in ((theta, other), (other, theta)):
        assert_witness(certified(p, q), p, q)


# --------------------------------------------------------------------------------------------
# Equivalence relation laws
# --------------------------------------------------------------------------------------------


@PROPS
@given(networks())
def test_reflexive(theta: Network) -> None:
    assert certified(theta, theta).equivalent


@PROPS
@given(st.data())
def test_transitive_on_two_disguises(data: st.DataObject) -> None:
    theta = data.draw(networks())
    d1, d2 = data.draw(disguise(theta)), data.draw(disguise(theta))
    for p, q in ((theta, d1), (d1, theta), (theta, d2), (d2, theta), (d1, d2), (d2, d1)):
        assert certified(p, q).equivalent


tiny_entries = st.sampled_from([fmpq(-1), fmpq(0), fmpq(1)])


@st.composite
def related_triples(draw) -> tuple[Network, Network, Network]:
    """Three networks of one shape, each unrelated or a disguise of an earlier one (so that both
    equivalent and inequivalent pairs occur)."""
    m, k = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    nets: list[Network] = []
    for _ in range(3):
        if nets and draw(st.booleans()):
            nets.append(draw(disguise(draw(st.sampled_from(nets)))))
        else:
            nets.append(draw(networks(m=m, k=k, max_n=3, entries=tiny_entries)))
    return nets[0], nets[1], nets[2]


@PROPS
@given(related_triples())
def test_symmetric_and_transitive_on_random_triples(triple: tuple[Network, Network, Network]) -> None:
    nets = list(triple)
    eq = {}
    for x in range(3):
        for y in range(3):
            verdict = certified(nets[x], nets[y])
            eq[x, y] = verdict.equivalent
            if not verdict.equivalent:
                assert_witness(verdict, nets[x], nets[y])
            # decide agrees with the canonical hash, and for m = 1 with the outside oracle
            assert eq[x, y] == (canonical_form(nets[x]).hash == canonical_form(nets[y]).hash)
            if nets[x].m == 1 and nets[x].k == 1:
                assert eq[x, y] == same_function_m1(nets[x], nets[y])[0]
    for x in range(3):
        assert eq[x, x]
        for y in range(3):
            assert eq[x, y] == eq[y, x]
            for z in range(3):
                if eq[x, y] and eq[y, z]:
                    assert eq[x, z]

"""certsym.decide.deep (MATH.md Part III): sound three-valued verdicts on deep ReLU networks.

Every verdict is compared with z3 over the reals, an oracle that shares no code with the decision (it receives
the two realizations as terms with If(z > 0, z, 0)): EQUIVALENT must be z3's "equal", NOT EQUIVALENT its
"different" (and the witness must separate the outputs exactly); UNDECIDED is allowed and counted. Every
certificate is replayed by the independent checker.
"""

from __future__ import annotations

import json

import pytest
from flint import fmpq
from helpers import Z3_RLIMIT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord
from certsym.certify.deep import deep_certificate
from certsym.core.deep import LayeredNetwork
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, UNDECIDED, decide, line_test, reduce
from certsym.numbers import QQ
from certsym_check import check

z3 = pytest.importorskip("z3")
RECORDS = (InputRecord("theta1", "0" * 64), InputRecord("theta2", "0" * 64))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def z3_outputs(t: LayeredNetwork, xs: list) -> list:
    """The network's outputs as z3 terms of the reals xs, ReLU written If(z > 0, z, 0)."""
    h = xs
    for ell, layer in enumerate(t.layers, 1):
        z = [z3.Sum([z3.RealVal(str(w)) * v for w, v in zip(row, h, strict=True)] + [z3.RealVal(str(b))])
             for row, b in zip(layer.W, layer.b, strict=True)]
        relu = ell < len(t.layers) or t.output_relu
        h = [z3.If(v > 0, v, 0) for v in z] if relu else z
    return h


def z3_verdict(t1: LayeredNetwork, t2: LayeredNetwork) -> str:
    """"equal" or "different": ∃x ρ(θ1)(x) ≠ ρ(θ2)(x) over the reals, by z3."""
    xs = [z3.Real(f"x{q}") for q in range(t1.m)]
    solver = z3.Solver()
    solver.set("rlimit", Z3_RLIMIT)
    solver.add(z3.Or([a != b for a, b in zip(z3_outputs(t1, xs), z3_outputs(t2, xs), strict=True)]))
    result = solver.check()
    assert result != z3.unknown, "z3 ran out of its resource count"
    return "equal" if result == z3.unsat else "different"


def assert_sound(t1: LayeredNetwork, t2: LayeredNetwork) -> str:
    """The verdict agrees with z3, its certificate replays, and its witness separates the outputs."""
    v = decide(t1, t2)
    oracle = z3_verdict(t1, t2)
    if v.status == EQUIVALENT:
        assert oracle == "equal", "EQUIVALENT where z3 finds a difference"
    elif v.status == NOT_EQUIVALENT:
        assert oracle == "different", "NOT EQUIVALENT where z3 proves equality"
        assert t1(v.witness) != t2(v.witness)
    else:
        assert v.reason
    if v.status != UNDECIDED:
        report = check(json.loads(json.dumps(deep_certificate(v, RECORDS))))
        assert report.valid, report.reason
    return v.status


def net(layers: list[tuple[list[list[int | fmpq]], list[int | fmpq]]], output_relu: bool = False) -> LayeredNetwork:
    return LayeredNetwork.build(layers, QQ, len(layers[0][0][0]), output_relu)


@st.composite
def deep_nets(draw, depth: int | None = None) -> LayeredNetwork:
    """Small deep networks with integer weights in [-3, 3]: m ≤ 2, widths ≤ 4, 2 or 3 hidden layers."""
    depth = depth or draw(st.integers(2, 3))
    m = draw(st.integers(1, 2))
    widths = [m] + [draw(st.integers(1, 4)) for _ in range(depth)] + [draw(st.integers(1, 2))]
    entry = st.integers(-3, 3)
    layers = [([[draw(entry) for _ in range(a)] for _ in range(b)], [draw(entry) for _ in range(b)])
              for a, b in zip(widths, widths[1:], strict=False)]
    return net(layers, draw(st.booleans()) and draw(st.booleans()))


SCALES = st.sampled_from([fmpq(1, 2), fmpq(1), fmpq(2), fmpq(3), fmpq(5, 4)])


@st.composite
def disguised(draw) -> tuple[LayeredNetwork, LayeredNetwork]:
    """θ and h·θ for a random h = (P_ℓ D_ℓ) in H_{n_1} × … × H_{n_L}, plus moves undone: a neuron with a zero output
    column (D1), a constant neuron (D2), a neuron split in two positive multiples (D3), a dead one (D4)."""
    t = draw(deep_nets())
    W = [[list(row) for row in layer.W] for layer in t.layers]
    b = [list(layer.b) for layer in t.layers]
    for ell in range(1, t.depth + 1):  # hidden layer ell: W[ell-1] rows, W[ell] columns
        n = len(b[ell - 1])
        perm = draw(st.permutations(range(n)))
        d = [draw(SCALES) for _ in range(n)]
        W[ell - 1] = [[x * d[i] for x in W[ell - 1][perm[i]]] for i in range(n)]
        b[ell - 1] = [b[ell - 1][perm[i]] * d[i] for i in range(n)]
        W[ell] = [[row[perm[i]] / d[i] for i in range(n)] for row in W[ell]]
        move = draw(st.sampled_from(["none", "D1", "D2", "D3", "D4"]))
        width_in = len(W[ell - 1][0])
        if move == "D1":  # an extra neuron whose outgoing column is zero
            W[ell - 1].append([fmpq(draw(st.integers(-3, 3))) for _ in range(width_in)])
            b[ell - 1].append(fmpq(1))
            for row in W[ell]:
                row.append(fmpq(0))
        elif move == "D2":  # a constant neuron σ(c) = c > 0, compensated in the next bias
            c, out = fmpq(2), [fmpq(draw(st.integers(-2, 2))) for _ in W[ell]]
            W[ell - 1].append([fmpq(0)] * width_in)
            b[ell - 1].append(c)
            for row, v in zip(W[ell], out, strict=True):
                row.append(v)
            b[ell] = [x - v * c for x, v in zip(b[ell], out, strict=True)]
        elif move == "D3" and n:  # neuron 0 split into itself and 2 · itself, its output weights shared 1/3, 1/3
            W[ell - 1].append([2 * x for x in W[ell - 1][0]])
            b[ell - 1].append(2 * b[ell - 1][0])
            for row in W[ell]:
                row[0], extra = row[0] / 3, row[0] / 3
                row.append(extra)
        elif move == "D4" and ell >= 2:  # a row ≤ 0 on the nonnegative orthant: always 0
            W[ell - 1].append([fmpq(-draw(st.integers(0, 3))) for _ in range(width_in)])
            b[ell - 1].append(fmpq(-1))
            for row in W[ell]:
                row.append(fmpq(draw(st.integers(-3, 3))))
    other = LayeredNetwork.build(list(zip(W, b, strict=True)), QQ, t.m, t.output_relu)
    return t, other


@SETTINGS
@given(disguised())
def test_disguised_pairs_are_never_called_different(pair: tuple[LayeredNetwork, LayeredNetwork]) -> None:
    """h·θ with moves D1–D4 undone realizes ρ(θ): certsym says EQUIVALENT (z3 agrees) or UNDECIDED, never NOT
    EQUIVALENT."""
    t1, t2 = pair
    assert assert_sound(t1, t2) != NOT_EQUIVALENT


@SETTINGS
@given(deep_nets(), st.data())
def test_h_related_pairs_are_equivalent(t: LayeredNetwork, data) -> None:
    """The layerwise canonical form is complete for H: h·θ is always EQUIVALENT to θ, with a certificate."""
    W = [[list(row) for row in layer.W] for layer in t.layers]
    b = [list(layer.b) for layer in t.layers]
    for ell in range(1, t.depth + 1):
        n = len(b[ell - 1])
        perm = data.draw(st.permutations(range(n)))
        d = [data.draw(SCALES) for _ in range(n)]
        W[ell - 1] = [[x * d[i] for x in W[ell - 1][perm[i]]] for i in range(n)]
        b[ell - 1] = [b[ell - 1][perm[i]] * d[i] for i in range(n)]
        W[ell] = [[row[perm[i]] / d[i] for i in range(n)] for row in W[ell]]
    other = LayeredNetwork.build(list(zip(W, b, strict=True)), QQ, t.m, t.output_relu)
    assert assert_sound(t, other) == EQUIVALENT


@SETTINGS
@given(deep_nets(), st.data())
def test_perturbed_pairs_agree_with_z3(t: LayeredNetwork, data) -> None:
    """One weight or bias changed by a small rational: every verdict agrees with z3 (the change may be invisible,
    on a dead neuron, and then EQUIVALENT or UNDECIDED is right)."""
    ell = data.draw(st.integers(0, len(t.layers) - 1))
    layer = t.layers[ell]
    i = data.draw(st.integers(0, layer.width - 1))
    delta = data.draw(st.sampled_from([fmpq(1, 64), fmpq(-1, 3), fmpq(1)]))
    W = [[list(row) for row in lay.W] for lay in t.layers]
    b = [list(lay.b) for lay in t.layers]
    if data.draw(st.booleans()):
        b[ell][i] += delta
    else:
        q = data.draw(st.integers(0, len(W[ell][i]) - 1))
        W[ell][i][q] += delta
    other = LayeredNetwork.build(list(zip(W, b, strict=True)), QQ, t.m, t.output_relu)
    assert_sound(t, other)


def test_the_output_relu_zero_functions_are_never_called_different() -> None:
    """The issue's pair: σ(−σ(x) − 1) and σ(−σ(x) − 2) are both the zero function."""
    a = net([([[1]], [0]), ([[-1]], [-1])], output_relu=True)
    b = net([([[1]], [0]), ([[-1]], [-2])], output_relu=True)
    assert z3_verdict(a, b) == "equal"
    assert decide(a, b).status in (EQUIVALENT, UNDECIDED)


def test_a_difference_only_the_last_layers_see_is_found() -> None:
    """θ2 differs from θ1 only where x > 50 (a second-layer weight of a neuron active there): found by the exact
    line tests, not by small points."""
    t1 = net([([[1], [1]], [0, -50]), ([[1, 1], [1, 0]], [0, 0]), ([[1, 1]], [0])])
    t2 = net([([[1], [1]], [0, -50]), ([[1, 1], [1, 0]], [0, 0]), ([[1, 2]], [0])])
    assert assert_sound(t1, t2) == NOT_EQUIVALENT


def test_line_test_decides_on_the_line() -> None:
    """On a line the two restrictions agree iff they agree at all breakpoints and beyond: σ(x) + σ(−x) = |x| and
    the same with the kink moved by 1/1000 are told apart; σ(x) − σ(−x) = x is recognized as x."""
    t1 = net([([[1], [-1]], [0, 0]), ([[1, 1]], [0])])
    t2 = net([([[1], [-1]], [fmpq(-1, 1000), 0]), ([[1, 1]], [0])])
    t = line_test(t1, t2, [QQ(0)], [QQ(1)])
    assert t is not None and t1([t]) != t2([t])
    odd = net([([[1], [-1]], [0, 0]), ([[1, -1]], [0])])
    linear = net([([[1]], [0]), ([[1]], [0])])  # σ(x): agrees with x on t > 0 only
    assert line_test(odd, odd, [QQ(0)], [QQ(1)]) is None
    s = line_test(odd, linear, [QQ(0)], [QQ(1)])
    assert s is not None and s < 0


def test_moves_are_recorded_and_replayed() -> None:
    """A dead neuron (D1), a constant one (D2), a duplicate (D3) and one dead on the orthant (D4) are removed."""
    t = net([([[1, 0], [0, 0], [2, 0], [1, 1]], [0, 3, 0, 1]),
             ([[1, 1, 1, 0], [-1, 0, 0, -1]], [0, 0]),
             ([[1, 2]], [0])])
    steps = [s["step"] for s in reduce(t).steps]
    assert {"D1", "D2", "D3", "D4"} <= set(steps)
    assert assert_sound(t, t) == EQUIVALENT


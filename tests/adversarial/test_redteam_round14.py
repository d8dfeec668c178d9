"""Red team round 14: the zonotope rule of ``deep_distance_bound`` (checker kinds/zonotope.py, ``_check_symbolic``
with the zonotope statement, ``halvings(..., cost=...)`` and ``_leaves_bounded`` in kinds/deep_distance.py).

Holes found, each closed and kept as a regression test (it asserts the behaviour of the fix):

- A hidden layer of width 0 (``{"W": [], "b": []}``, accepted by the deep-network reader) crashes the zonotope rule
  with IndexError, reported as "malformed certificate (IndexError)" instead of a reason: a first hidden layer of
  width 0 in ``Rule.__init__`` (``len(layers1[0][0][0])``), a later one in ``Rule._affine`` (``f[-1]`` of the empty
  transpose of no forms). Round 7's hole in the symbolic rule, again in the new rule.
- The products of a region are charged 1/20 unit each whatever their size (``region_products``, no ``charge_ops``
  for long products as ``symbolic.Space.combine`` has), but the fixed-point integers grow with the weights'
  magnitudes and with the depth: a [1, 60, 60, 1] pair with weights near 2^1950 is charged 1,189 units a region
  for about 30 ms of work. Measured beside these tests: a 320 KB certificate (one weight of 99,990 digits per
  network, eight hidden layers of 30, 480 error symbols stated) is refused (its bound cannot be stated in 4,096
  bits) after 35 s of one region's work, charged 384,687 units (about 0.4 s), with a 530 MB peak.
- The interpreted work of each neuron is not charged: a region is priced by its products only, n_ℓ (n_{ℓ−1} + 2)
  (free + 2 + K) / 20 units per layer and network, 0.9 units a layer for a chain of width 1, while every neuron of
  every region takes a range (two interpreted sums, each a call) and a relaxation, about 7 µs for the zonotopes and
  27 µs for the symbolic differences (which share the hole). Measured: a VALID 1.1 MB certificate (a chain of
  20,000 layers of width 1, 128 leaves) replays in 38 s, charged 2.9M units; at the tree's bounds (5,550 leaves,
  2·10^9 products, 10^8 units) that extrapolates to about 27 minutes.
- A node that repeats or exceeds the bound it inherits needs no rule, and its stated symbol count is never read:
  "x", true, null, −1, 10^100, 4.0 or a list all replay VALID, although FORMAT.md states 0 ≤ k ≤ K on every node
  that states a bound (and 0 on a leaf that only repeats an inherited bound).
- Memory: every error vector of a layer is padded to the widest one and the padded vectors transposed
  (``_affine``), so a wide layer with few neurons carrying symbols holds n_{ℓ−1} × K integers twice: a 103 KB
  certificate (3,000 neurons, 600 of them unstable) peaks at 33 MB of traced allocations, 4.3 MB with one symbol;
  measured beside these tests, a 680 KB certificate (20,000 neurons, 4,095 symbols) peaks at 1.4 GB of resident
  memory, and at the tree's product bound (60,000 neurons, a 2 MB certificate) that is about 4 GB.

What held (plain tests): on seeded pairs with weights, steps and box ends of tiny (2^−80 … 2^−64, half units,
non-dyadic), huge (2^20 … 2^70) and far-from-zero magnitudes, fixed coordinates and biases that put a neuron's
range at exactly 0 or symmetric about 0, no corner or sampled point of the box exceeds the zonotope rule's bound;
forged trees are refused (a leaf a hair below the rule, fewer symbols than the region makes, a count beyond
columns or a bool on a node that needs the rule, columns true or 4,097, a split stating k without a bound, an
output ReLU, different widths, a split of a fixed coordinate, "-0" a fixed coordinate); alignments with scalings of
2^±4000 or 1/3 only loosen the bound.
"""

from __future__ import annotations

import copy
import itertools
import random
import tracemalloc
from fractions import Fraction

import pytest

from certsym_check import check
from certsym_check.budget import OPS_PER_UNIT, int_ops
from certsym_check.kinds.zonotope import Rule, region_products
from tests.adversarial.test_redteam_round7 import _doc as _doc7
from tests.adversarial.test_redteam_round7 import _evaluate

ZONOTOPES = "halvings of the box, zonotopes in fixed point and exact evaluation"
SYMBOLIC = "halvings of the box, symbolic differences in fixed point and exact evaluation"
F = Fraction


def _doc(layers1: list, layers2: list, m: int, proof: dict, statement: str = ZONOTOPES) -> dict:
    """Round 7's certificate (two layered networks, their JSON layers or (W, b) over Fractions), the proof completed to
    the zonotope (or symbolic) statement."""
    return _doc7(layers1, layers2, m, {"statement": statement} | ({"columns": 4096} if statement == ZONOTOPES
                                                                  else {}) | proof)


def _gap(layers1: list, layers2: list, x: list) -> Fraction:
    return max(abs(p - q) for p, q in zip(_evaluate(layers1, x), _evaluate(layers2, x), strict=True))


def _balanced(box: list, depth: int) -> tuple[list, list]:
    """The regions of a tree of halvings of coordinate 0, ``depth`` deep, in preorder, and the tree's nodes (None
    where a leaf goes)."""
    if depth == 0:
        return [box], [None]
    (lo, hi), mid = box[0], (box[0][0] + box[0][1]) / 2
    left, t1 = _balanced([(lo, mid), *box[1:]], depth - 1)
    right, t2 = _balanced([(mid, hi), *box[1:]], depth - 1)
    return left + right, [["split", 0], *t1, *t2]


_SMALL = [([[F(1), F(2)], [F(-1), F(1)]], [F(0), F(0)]), ([[F(1), F(1)]], [F(0)])]
_MOVED = [([[F(1), F(2)], [F(-1), F(1)]], [F(0), F(1, 8)]), ([[F(1), F(1)]], [F(0)])]
_BOX = [["-1", "1"], ["-1", "1"]]
_REGION = [(F(-1), F(1))] * 2


def _honest() -> tuple[Fraction, dict]:
    value = Rule(_SMALL, _MOVED, 4).bound(_REGION)
    proof = {"box": _BOX, "tree": [["leaf", str(value), 4]], "upper": str(value), "witness": ["0", "1"],
             "columns": 4}
    return value, proof


def test_the_envelope_of_these_tests_replays() -> None:
    """The hand-built envelope is the checker's: an honest one-leaf zonotope certificate replays."""
    _, proof = _honest()
    report = check(_doc(_SMALL, _MOVED, 2, proof))
    assert report.valid, report.reason
    assert "zonotopes (at most 4 error symbols a region)" in str(report)


# --- hole: a hidden layer of width 0 -------------------------------------------------------------------------------

_ZERO_FIRST = [{"W": [], "b": []}, {"W": [[]], "b": ["0"]}]
_ZERO_MIDDLE = [{"W": [["1"]], "b": ["0"]}, {"W": [], "b": []}, {"W": [[]], "b": ["1"]}]


@pytest.mark.parametrize("layers", [_ZERO_FIRST, _ZERO_MIDDLE], ids=["first", "middle"])
def test_a_hidden_layer_of_width_zero_is_a_reason_not_a_crash(layers: list) -> None:
    doc = _doc(layers, layers, 1, {"box": [["-1", "1"]], "tree": [["leaf", "1", 1]], "upper": "1",
                                   "witness": ["0"]})
    report = check(doc)
    assert not report.reason.startswith("malformed certificate"), report.reason


# --- hole: the products of a region charged whatever their size ----------------------------------------------------

def _big_pair(n: int, bits: int) -> tuple[list, list]:
    rnd = random.Random(7)
    first = [[Fraction(2**bits + rnd.randrange(2**bits))] for _ in range(n)]
    second = [[Fraction(2**bits + rnd.randrange(2**bits)) for _ in range(n)] for _ in range(n)]
    zeros = [Fraction(0)] * n
    out1 = ([[Fraction(1)] * n], [Fraction(0)])
    out2 = ([[Fraction(1)] * n], [Fraction(1)])
    return [(first, zeros), (second, zeros), out1], [(first, zeros), (second, zeros), out2]


def _work(doc: dict) -> int:
    report = check(doc)
    assert report.valid, report.reason
    return report.work


def test_the_products_of_huge_fixed_point_integers_are_charged_by_their_size() -> None:
    """Weights near 2^1950 in the first two layers of [1, 60, 60, 1] (every neuron stable on [1, 2], no error
    symbol): layer 2's forms are sums of products of a 1,950-bit weight by a 2,014-bit coefficient, n² of them per
    network and region, which the checker's own model prices at int_ops(1950, 2014) / 16 units each; the replay
    charges a region ⌈P(0)/20⌉ = 1,189 units. Eight leaves against one, the same witness: the difference in the
    units charged is seven regions' price."""
    n, bits, depth = 60, 1950, 3
    layers1, layers2 = _big_pair(n, bits)
    rule = Rule(layers1, layers2, 0)
    box = [(Fraction(1), Fraction(2))]
    regions, nodes = _balanced(box, depth)
    values = iter([rule.bound(region) for region in regions])  # no meter: nothing charged
    tree = [node if node is not None else ["leaf", str(next(values)), 0] for node in nodes]
    upper = max(Fraction(node[1]) for node in tree if node[0] == "leaf")
    assert upper.numerator.bit_length() < 4096  # a bound the certificate may state
    whole = rule.bound(box)
    common = {"box": [["1", "2"]], "witness": ["1"], "columns": 0}
    one = _work(_doc(layers1, layers2, 1, common | {"tree": [["leaf", str(whole), 0]], "upper": str(whole)}))
    eight = _work(_doc(layers1, layers2, 1, common | {"tree": tree, "upper": str(upper)}))
    charged = -(-region_products([1, n, n, 1], 1, 0) // 20)
    assert charged < 2_000
    model = 2 * n * n * int_ops(bits, bits + 64) // OPS_PER_UNIT
    assert model > 20 * charged
    assert eight - one >= (len(regions) - 1) * model // 2, (eight - one, (len(regions) - 1) * model // 2)


# --- hole: the interpreted work of each neuron not charged ---------------------------------------------------------

def _chain(layers: int, shift: Fraction) -> list:
    return [([[F(1)]], [F(0)]) for _ in range(layers)] + [([[F(1)]], [shift])]


@pytest.mark.parametrize("statement", [ZONOTOPES, SYMBOLIC], ids=["zonotopes", "symbolic"])
def test_every_neuron_of_every_region_is_charged_its_interpreted_work(statement: str) -> None:
    """A chain of 1,000 hidden layers of width 1 (weights 1, biases 0, on [1, 2]: every neuron stable, no error
    symbol), eight leaves against one: each neuron of each network, in every region, takes at least a range (two
    interpreted sums over the free coordinates, each a call) and its relaxation, at least 32 elementary operations
    (2 units) on the checker's own scale (``budget.OPS_PER_UNIT``; measured: about 7 µs for the zonotopes and 27 µs
    for the symbolic differences). The difference in the units charged must pay for seven regions of them."""
    layers = 1000
    theta1, theta2 = _chain(layers, F(0)), _chain(layers, F(1, 8))
    regions, nodes = _balanced([(F(1), F(2))], 3)
    zonotopes = statement == ZONOTOPES
    leaf = ["leaf", "1", 0] if zonotopes else ["leaf", "1"]
    tree = [node if node is not None else leaf for node in nodes]
    common = {"box": [["1", "2"]], "witness": ["1"], "upper": "1"} | ({"columns": 0} if zonotopes else {})
    one = _work(_doc(theta1, theta2, 1, common | {"tree": [leaf]}, statement))
    eight = _work(_doc(theta1, theta2, 1, common | {"tree": tree}, statement))
    visits = (len(regions) - 1) * 2 * (layers + 1)  # neurons of both networks in the seven extra regions
    assert eight - one >= 2 * visits, (eight - one, 2 * visits)


# --- hole: the symbol count of a node that needs no rule is never read ---------------------------------------------

@pytest.mark.parametrize("count", ["x", True, None, -1, 10**100, 4.0, [1]],
                         ids=["text", "bool", "null", "negative", "huge", "float", "list"])
def test_every_stated_symbol_count_is_an_integer_from_0_to_columns(count: object) -> None:
    value, proof = _honest()
    tree = [["split", 0, str(value), 4], ["leaf", str(value), count], ["leaf", str(value + 1), count]]
    report = check(_doc(_SMALL, _MOVED, 2, proof | {"tree": tree, "upper": str(value + 1)}))
    assert not report.valid and "error symbols" in report.reason, report.reason


def test_a_leaf_repeating_its_inherited_bound_with_zero_symbols_replays() -> None:
    """The documented form of the nodes above (a leaf that only repeats an inherited bound states 0) replays."""
    value, proof = _honest()
    tree = [["split", 0, str(value), 4], ["leaf", str(value), 0], ["leaf", str(value + 1), 0]]
    report = check(_doc(_SMALL, _MOVED, 2, proof | {"tree": tree, "upper": str(value + 1)}))
    assert report.valid, report.reason


# --- hole: error vectors held dense, n × K per layer ---------------------------------------------------------------

def test_a_wide_layer_holds_only_the_symbols_its_neurons_carry() -> None:
    """θ1's first layer has 3,000 neurons, 600 of them unstable on [−1, 1] (600 error symbols, the i-th carrying a
    vector of length i), the rest stable (E empty); θ2's are all stable. The symbols need about 180,000 entries;
    the replay pads all 3,000 vectors to 600 and transposes them (3.6M entries, about 29 MB) before layer 2's
    products. The peak of the allocations traced during the replay stays under 16 MB without them (about 4 MB with
    one symbol)."""
    n, unstable = 3000, 600
    w1 = [["1"] if i < unstable else ["0"] for i in range(n)]
    b1 = ["0" if i < unstable else "1" for i in range(n)]
    theta1 = [{"W": w1, "b": b1}, {"W": [["1"] * n], "b": ["0"]}]
    theta2 = [{"W": [["0"]] * n, "b": ["1"] * n}, {"W": [["1"] * n], "b": ["0"]}]
    doc = _doc(theta1, theta2, 1, {"box": [["-1", "1"]], "tree": [["leaf", "10000", unstable]], "upper": "10000",
                                   "witness": ["0"], "columns": unstable})
    tracemalloc.start()
    try:
        report = check(doc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.valid, report.reason
    assert peak < 16 * 2**20, peak


# --- what held: the rule bounds every point ------------------------------------------------------------------------

def _number(rnd: random.Random, kind: str) -> Fraction:
    if kind == "small":
        return Fraction(rnd.randint(-8, 8), rnd.choice([1, 2, 3, 7, 1024]))
    if kind == "tiny":
        return Fraction(rnd.randint(-3, 3), 2 ** rnd.randint(60, 80)) * rnd.choice([1, Fraction(1, 3)])
    if kind == "half":  # near half a unit of the grid, on both sides
        return Fraction(rnd.randint(-3, 3), 2**65) + Fraction(rnd.choice([0, 1, -1]), 2**64)
    if kind == "huge":
        return Fraction(rnd.randint(-3, 3)) * 2 ** rnd.randint(20, 70)
    return Fraction(rnd.randint(-10**6, 10**6), rnd.randint(1, 10**6))


_KINDS = [["small"], ["small", "tiny"], ["small", "huge"], ["nd"], ["small", "tiny", "nd"], ["tiny"],
          ["huge", "tiny"], ["half", "small"], ["half"]]


def _random_case(seed: int) -> tuple[list, list, list]:
    rnd = random.Random(seed)
    kinds = rnd.choice(_KINDS)
    m = rnd.randint(1, 3)
    widths = [m] + [rnd.randint(1, 5) for _ in range(rnd.randint(1, 4))] + [rnd.randint(1, 2)]
    layers1 = [([[_number(rnd, rnd.choice(kinds)) for _ in range(a)] for _ in range(b)],
                [_number(rnd, rnd.choice(kinds)) for _ in range(b)]) for a, b in itertools.pairwise(widths)]
    step = rnd.choice(["tiny", "small", "nd", "huge", "half"])
    layers2 = [([[w + (_number(rnd, step) if rnd.random() < 0.3 else 0) for w in row] for row in W],
                [c + (_number(rnd, step) if rnd.random() < 0.3 else 0) for c in b]) for W, b in layers1]
    ends = rnd.choice(["small", "nd", "huge", "tiny", "half"])
    far = rnd.choice([0, 0, 10**6, -2**40])
    box = []
    for _ in range(m):
        a = _number(rnd, ends) + far
        width = 0 if rnd.random() < 0.25 else abs(_number(rnd, rnd.choice(["small", "tiny", "nd", "half"])))
        box.append((a, a + width))
    return layers1, layers2, box


@pytest.mark.parametrize("block", range(6))
def test_no_point_of_the_box_exceeds_the_zonotope_rule(block: int) -> None:
    for seed in range(50 * block, 50 * block + 50):
        layers1, layers2, box = _random_case(seed)
        bound = Rule(layers1, layers2, 4096).bound(box)
        rnd = random.Random(-seed)
        points = [list(p) for p in itertools.product(*box)]
        points += [[a + (c - a) * Fraction(rnd.randint(0, 1000), 1000) for a, c in box] for _ in range(30)]
        for x in points:
            assert _gap(layers1, layers2, x) <= bound, (seed, x, bound)


_EDGES = [  # (θ1, θ2, box): ranges at exactly 0, symmetric about 0, a neuron dead or live at a corner only
    ([([[F(1)]], [F(0)]), ([[F(1)]], [F(0)])], [([[F(1)]], [F(0)]), ([[F(1)]], [F(1, 2**70)])], [(F(0), F(1))]),
    ([([[F(1)]], [F(-1)]), ([[F(3)]], [F(0)])], [([[F(1)]], [F(-1)]), ([[F(3)]], [F(1, 3)])], [(F(0), F(1))]),
    ([([[F(1)], [F(-1)]], [F(0), F(0)]), ([[F(1), F(1)]], [F(0)])],
     [([[F(1)], [F(-1)]], [F(0), F(0)]), ([[F(1), F(-1)]], [F(0)])], [(F(-1), F(1))]),
    ([([[F(1, 3)]], [F(-1, 3)]), ([[F(-1, 3)]], [F(1, 3)])],
     [([[F(1, 3) + F(1, 2**66)]], [F(-1, 3)]), ([[F(-1, 3)]], [F(1, 3)])], [(F(1), F(1))]),
    ([([[F(2**60)]], [F(-2**60)]), ([[F(2**-60)]], [F(0)])],
     [([[F(2**60)]], [F(-2**60) + F(1, 2**64)]), ([[F(2**-60)]], [F(0)])], [(F(10**6), F(10**6 + 1))]),
]


@pytest.mark.parametrize("case", range(len(_EDGES)))
def test_edge_ranges_are_bounded(case: int) -> None:
    layers1, layers2, box = _EDGES[case]
    bound = Rule(layers1, layers2, 16).bound(box)
    points = [list(p) for p in itertools.product(*box)]
    points += [[a + (c - a) * Fraction(t, 64) for a, c in box] for t in range(65)]
    for x in points:
        assert _gap(layers1, layers2, x) <= bound, (x, bound)


# --- what held: forged trees and inputs refused --------------------------------------------------------------------

def _forged(value: Fraction) -> list:
    below = str(value - Fraction(1, 2**200))
    same = str(value)
    return [
        ({"tree": [["leaf", below, 4]]}, {}, "below the one the rule gives"),
        ({"tree": [["leaf", same, 1]]}, {}, "more than the 1 error symbols stated"),
        ({"tree": [["leaf", same, 5]]}, {}, "an integer from 0 to proof.columns"),
        ({"tree": [["leaf", same, True]]}, {}, "an integer from 0 to proof.columns"),
        ({"columns": True}, {}, "proof.columns must be an integer"),
        ({"columns": 4097}, {}, "proof.columns must be an integer"),
        ({"tree": [["split", 0, 4], ["leaf", same, 4], ["leaf", same, 4]]}, {}, "proof.tree[0]"),
        ({"tree": [["split", 0, same], ["leaf", same, 4], ["leaf", same, 4]]}, {}, "proof.tree[0]"),
        ({}, {"relu": True}, "without an output ReLU"),
        ({}, {"narrow": True}, "the same widths"),
        ({"box": [["1/3", "1/3"], ["-0", "0"]], "witness": ["1/3", "0"], "upper": "1",
          "tree": [["split", 1], ["leaf", "1", 0], ["leaf", "1", 0]]}, {}, "width 0"),
    ]


@pytest.mark.parametrize("case", range(11))
def test_forged_zonotope_certificates_are_refused(case: int) -> None:
    value, proof = _honest()
    edit, how, words = _forged(value)[case]
    theta2 = [([[F(1), F(2)]], [F(0)]), ([[F(1)]], [F(0)])] if how.get("narrow") else _MOVED
    doc = _doc(_SMALL, theta2, 2, proof | edit)
    if how.get("relu"):
        doc["inputs"][0]["parameters"]["output_relu"] = True
    report = check(doc)
    assert not report.valid and words in report.reason, report.reason


def test_a_box_of_fixed_coordinates_replays() -> None:
    _, proof = _honest()
    fixed = proof | {"box": [["1/3", "1/3"], ["-0", "0"]], "witness": ["1/3", "0"], "upper": "1",
                     "tree": [["leaf", "1", 0]]}
    report = check(_doc(_SMALL, _MOVED, 2, fixed))
    assert report.valid, report.reason


def _moved(layers: list, pairs: list) -> list:
    """θ2' for a one-hidden-layer θ2: neuron i is d_i times neuron j_i (the alignment [i, j, d] in order of i)."""
    (W1, b1), (W2, b2) = layers
    return [([[d * w for w in W1[j]] for _, j, d in pairs], [d * b1[j] for _, j, d in pairs]),
            ([[row[j] / d for _, j, d in pairs] for row in W2], b2)]


@pytest.mark.parametrize("pairs", [
    [(0, 0, F(1, 2**4000)), (1, 1, F(2**4000))],
    [(0, 1, F(2**4000)), (1, 0, F(1, 2**4000))],
    [(0, 1, F(1, 3)), (1, 0, F(7))],
], ids=["scaled", "swapped", "thirds"])
def test_alignments_only_loosen_the_zonotope_bound(pairs: list) -> None:
    """The rule on θ2 moved by the alignment: a leaf stating the unaligned bound is refused when the aligned one is
    larger, the aligned one replays, and it lies above the distance at every corner."""
    plain, proof = _honest()
    aligned = Rule(_SMALL, _moved(_MOVED, pairs), 4).bound(_REGION)
    alignment = [[[i, j, str(d)] for i, j, d in pairs]]
    refused = check(_doc(_SMALL, _MOVED, 2, copy.deepcopy(proof) | {"alignment": alignment}))
    assert not refused.valid and "below the one the rule gives" in refused.reason
    honest = proof | {"alignment": alignment, "tree": [["leaf", str(aligned), 4]], "upper": str(aligned)}
    report = check(_doc(_SMALL, _MOVED, 2, honest))
    assert report.valid, report.reason
    assert all(_gap(_SMALL, _MOVED, list(x)) <= aligned for x in itertools.product(*_REGION))

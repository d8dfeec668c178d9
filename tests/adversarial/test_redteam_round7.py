"""Red team, round seven: the symbolic-difference rule of ``deep_distance_bound`` (checker kinds/symbolic.py,
``_check_symbolic`` in kinds/deep_distance.py).

Holes found, each fixed and kept as a regression test:

- A hidden layer of width 0 (``{"W": [], "b": []}``, accepted by the deep-network reader) crashes the rule with
  IndexError, reported as "malformed certificate (IndexError)" instead of a reason: a first hidden layer of width 0
  in ``Rule.__init__`` (``len(layers1[0][0][0])``), a later one in ``combine`` (``s[m]`` of the empty transpose of
  no forms).
- The products of one region are charged 1/20 unit each whatever their size, but the fixed-point integers grow
  with the weights' magnitudes (a weight near 2^1950 is a 2,014-bit integer, and layer 2's form coefficients are of
  the same size): a [1, 60, 60, 1] pair with such weights, 128 leaves (a 4.5 MB certificate), is charged 875,200
  units (about 0.9 s) and replays in about 8 s; at the 20M-unit budget (about 3,300 leaves) that is minutes. The
  checker's own cost model (``budget.int_ops``) prices such a product at about 7 units, not 1/20.

What held (passing tests below): the differences ΔW = W1 − W2' taken uncharged in ``Rule.__init__`` (a gcd of
two 50,000-bit denominators each) are paid for by the replay's other charges on the same entries; on seeded random
pairs with weights and box ends of tiny (2^−60 … 2^−80), huge (2^30 … 2^70) and non-dyadic magnitudes, boxes
with fixed coordinates, and copies moved by tiny, large or non-dyadic steps, no corner or sampled point of the box
exceeds the rule's bound; a leaf bound a hair below the rule's value is refused; a box whose coordinates are all
fixed replays without a split and refuses one; extreme alignment scalings (2^±4000) give a larger bound, never a
smaller one than the true value.
"""

from __future__ import annotations

import copy
import itertools
import random
from fractions import Fraction

import pytest
from helpers import decimal_text

from certsym_check import check
from certsym_check.budget import OPS_PER_UNIT, cost, int_ops, size
from certsym_check.kinds.symbolic import Rule, region_products

_CLAIM = ("sup over the box of ||f1(x) - f2(x)||_inf lies in [lower, upper] for the deep networks given (f = "
          "rho(theta), or sigma(rho(theta)) for a network that ends in a ReLU)")
SYMBOLIC = "halvings of the box, symbolic differences in fixed point and exact evaluation"


def _text(x: Fraction) -> str:
    """x as "p/q", numbers of any length."""
    return decimal_text(x.numerator) if x.denominator == 1 else \
        f"{decimal_text(x.numerator)}/{decimal_text(x.denominator)}"


def _layers_json(layers: list) -> list:
    return [{"W": [[_text(w) for w in row] for row in W], "b": [_text(c) for c in b]} for W, b in layers]


def _doc(layers1: list, layers2: list, m: int, proof: dict) -> dict:
    """A deep_distance_bound certificate over QQ for two layered networks (lists of (W, b) over Fractions, or
    their JSON layers), the proof completed to the symbolic statement."""
    def params(layers):
        js = layers if layers and isinstance(layers[0], dict) else _layers_json(layers)
        return {"layers": js, "m": m, "output_relu": False}
    full = {"alignment": None, "lower": "0", "statement": SYMBOLIC} | proof
    return {"format": "certsym-certificate", "version": 1, "kind": "deep_distance_bound", "claim": _CLAIM,
            "field": {"type": "QQ"},
            "inputs": [{"name": "theta1", "sha256": "0" * 64, "atoms": [], "parameters": params(layers1)},
                       {"name": "theta2", "sha256": "1" * 64, "atoms": [], "parameters": params(layers2)}],
            "proof": full}


def _evaluate(layers: list, x: list) -> list:
    h = x
    for ell, (W, b) in enumerate(layers):
        z = [sum((w * t for w, t in zip(row, h, strict=True)), Fraction(0)) + c for row, c in zip(W, b, strict=True)]
        h = [max(t, Fraction(0)) for t in z] if ell < len(layers) - 1 else z
    return h


_SMALL = [([[Fraction(1), Fraction(2)], [Fraction(-1), Fraction(1)]], [Fraction(0), Fraction(0)]),
          ([[Fraction(1), Fraction(1)]], [Fraction(0)])]
_MOVED = [([[Fraction(1), Fraction(2)], [Fraction(-1), Fraction(1)]], [Fraction(0), Fraction(1, 8)]),
          ([[Fraction(1), Fraction(1)]], [Fraction(0)])]
_BOX = [["-1", "1"], ["-1", "1"]]


def test_the_envelope_of_these_tests_replays() -> None:
    """The hand-built envelope is the checker's: an honest one-leaf certificate replays."""
    value = Rule(_SMALL, _MOVED).bound([(Fraction(-1), Fraction(1))] * 2)
    doc = _doc(_SMALL, _MOVED, 2, {"box": _BOX, "tree": [["leaf", str(value)]], "upper": str(value),
                                    "witness": ["0", "1"]})
    report = check(doc)
    assert report.valid, report.reason


# --- hole: a hidden layer of width 0 -------------------------------------------------------------------------------

_ZERO_FIRST = [{"W": [], "b": []}, {"W": [[]], "b": ["0"]}]
_ZERO_MIDDLE = [{"W": [["1"]], "b": ["0"]}, {"W": [], "b": []}, {"W": [[]], "b": ["1"]}]


@pytest.mark.parametrize("layers", [_ZERO_FIRST, _ZERO_MIDDLE], ids=["first", "middle"])
def test_a_hidden_layer_of_width_zero_is_a_reason_not_a_crash(layers: list) -> None:
    doc = _doc(layers, layers, 1, {"box": [["-1", "1"]], "tree": [["leaf", "1"]], "upper": "1", "witness": ["0"]})
    report = check(doc)
    assert not report.valid
    assert "malformed certificate" not in report.reason, report.reason


# --- hole: the products of a region charged whatever their size ----------------------------------------------------

def _big_pair(n: int, bits: int) -> tuple[list, list]:
    rnd = random.Random(7)
    first = [[Fraction(2**bits + rnd.randrange(2**bits))] for _ in range(n)]
    second = [[Fraction(2**bits + rnd.randrange(2**bits)) for _ in range(n)] for _ in range(n)]
    zeros = [Fraction(0)] * n
    out1 = ([[Fraction(1)] * n], [Fraction(0)])
    out2 = ([[Fraction(1)] * n], [Fraction(1)])
    return [(first, zeros), (second, zeros), out1], [(first, zeros), (second, zeros), out2]


def _balanced(box: list, depth: int) -> list:
    """The regions of a tree of halvings of coordinate 0, ``depth`` deep, in preorder, and the tree's nodes."""
    if depth == 0:
        return [box], [None]
    (lo, hi), mid = box[0], (box[0][0] + box[0][1]) / 2
    left, t1 = _balanced([(lo, mid), *box[1:]], depth - 1)
    right, t2 = _balanced([(mid, hi), *box[1:]], depth - 1)
    return left + right, [["split", 0], *t1, *t2]


def test_the_products_of_huge_fixed_point_integers_are_charged_by_their_size() -> None:
    """Weights near 2^1950 in the first two layers of [1, 60, 60, 1], 8 leaves: layer 2's forms are sums of
    products of 2,000-bit integers, 4 n² of them at least per region (a1's and a2's two forms, the coefficient of
    x), which the checker's own model prices at int_ops(1950, 1950) / 16 units each; the replay charges a region
    about P / 20 units (6,002 here), for about 0.15 s of work."""
    n, bits, depth = 60, 1950, 3
    layers1, layers2 = _big_pair(n, bits)
    regions, nodes = _balanced([(Fraction(1), Fraction(2))], depth)
    rule = Rule(layers1, layers2)
    values = iter([rule.bound(region) for region in regions])  # no meter: nothing charged
    tree = [node if node is not None else ["leaf", str(next(values))] for node in nodes]
    upper = max(Fraction(v) for kind, v in tree if kind == "leaf")
    assert upper.numerator.bit_length() < 4096  # a bound the certificate may state
    doc = _doc(layers1, layers2, 1, {"box": [["1", "2"]], "tree": tree, "upper": str(upper), "witness": ["1"]})
    report = check(doc)
    assert report.valid, report.reason
    charged_for_region = -(-region_products([1, n, n, 1], 1) // 20)
    assert charged_for_region < 10_000  # what the replay charges a region
    model = 4 * n * n * int_ops(bits, bits) // OPS_PER_UNIT
    assert model > 10 * charged_for_region
    assert report.work >= len(regions) * model, (report.work, len(regions) * model)


# --- held: the weights' differences, uncharged themselves, paid for by the other charges ------------------------------

def _odd(rnd: random.Random, bits: int) -> int:
    return rnd.getrandbits(bits) | 1 | (1 << (bits - 1))


def test_the_weights_differences_are_paid_for() -> None:
    """θ1's entries over one 50,000-bit denominator, θ2's over another: each difference ΔW taken in
    ``Rule.__init__`` needs a gcd of the two and is not charged there, but the replay's other charges on the same
    entries (the witness's exact evaluation, the weights in fixed point) cover the checker's price of them."""
    rnd = random.Random(3)
    d1, d2 = _odd(rnd, 50_000), _odd(rnd, 50_000)
    layers1 = [([[Fraction(1, d1)]], [Fraction(1, d1)]), ([[Fraction(1, d1)]], [Fraction(1, d1)])]
    layers2 = [([[Fraction(1, d2)]], [Fraction(1, d2)]), ([[Fraction(1, d2)]], [Fraction(1, d2)])]
    doc = _doc(layers1, layers2, 1, {"box": [["0", "1"]], "tree": [["leaf", "1"]], "upper": "1", "witness": ["0"]})
    report = check(doc)
    assert report.valid, report.reason
    differences = sum(cost(size(Fraction(1, d1)), size(Fraction(1, d2))) for _ in range(4))
    assert differences > 20_000
    assert report.work >= differences, (report.work, differences)


# --- what held ---------------------------------------------------------------------------------------------------

def _number(rnd: random.Random, kind: str) -> Fraction:
    if kind == "small":
        return Fraction(rnd.randint(-8, 8), rnd.choice([1, 2, 3, 7, 1024]))
    if kind == "tiny":
        return Fraction(rnd.randint(-3, 3), 2 ** rnd.randint(60, 80)) * rnd.choice([1, Fraction(1, 3)])
    if kind == "huge":
        return Fraction(rnd.randint(-3, 3)) * 2 ** rnd.randint(30, 70)
    return Fraction(rnd.randint(-10**6, 10**6), rnd.randint(1, 10**6))


_KINDS = [["small"], ["small", "tiny"], ["small", "huge"], ["nd"], ["small", "tiny", "nd"], ["tiny"], ["huge", "tiny"]]


@pytest.mark.parametrize("seed", range(120))
def test_no_point_of_the_box_exceeds_the_rule_at_extreme_magnitudes(seed: int) -> None:
    rnd = random.Random(seed)
    kinds = rnd.choice(_KINDS)
    m = rnd.randint(1, 3)
    widths = [m] + [rnd.randint(1, 4) for _ in range(rnd.randint(1, 3))] + [rnd.randint(1, 2)]
    layers1 = [([[_number(rnd, rnd.choice(kinds)) for _ in range(a)] for _ in range(b)],
                [_number(rnd, rnd.choice(kinds)) for _ in range(b)]) for a, b in itertools.pairwise(widths)]
    step = rnd.choice(["tiny", "small", "nd", "huge"])
    layers2 = [([[w + (_number(rnd, step) if rnd.random() < 0.3 else 0) for w in row] for row in W],
                [c + (_number(rnd, step) if rnd.random() < 0.3 else 0) for c in b]) for W, b in layers1]
    ends = rnd.choice(["small", "nd", "huge", "tiny"])
    box = []
    for _ in range(m):
        a = _number(rnd, ends)
        width = 0 if rnd.random() < 0.25 else abs(_number(rnd, rnd.choice(["small", "tiny", "nd"])))
        box.append((a, a + width))
    bound = Rule(layers1, layers2).bound(box)
    points = [list(p) for p in itertools.product(*box)]
    points += [[a + (c - a) * Fraction(rnd.randint(0, 1000), 1000) for a, c in box] for _ in range(30)]
    for x in points:
        gap = max(abs(p - q) for p, q in zip(_evaluate(layers1, x), _evaluate(layers2, x), strict=True))
        assert gap <= bound, (x, gap, bound)


def test_a_leaf_a_hair_below_the_rule_is_refused() -> None:
    value = Rule(_SMALL, _MOVED).bound([(Fraction(-1), Fraction(1))] * 2)
    below = value - Fraction(1, 2**200)
    doc = _doc(_SMALL, _MOVED, 2, {"box": _BOX, "tree": [["leaf", str(below)]], "upper": str(value),
                                    "witness": ["0", "1"]})
    report = check(doc)
    assert not report.valid and "below the one the rule gives" in report.reason


def test_a_box_of_fixed_coordinates_replays_and_refuses_a_split() -> None:
    proof = {"box": [["1/3", "1/3"], ["-2", "-2"]], "tree": [["leaf", "1"]], "upper": "1", "witness": ["1/3", "-2"]}
    report = check(_doc(_SMALL, _MOVED, 2, proof))
    assert report.valid, report.reason
    split = copy.deepcopy(proof) | {"tree": [["split", 0], ["leaf", "1"], ["leaf", "1"]]}
    report = check(_doc(_SMALL, _MOVED, 2, split))
    assert not report.valid and "width 0" in report.reason


@pytest.mark.parametrize("alignment", [
    [[[0, 0, "1/" + str(2**4000)], [1, 1, str(2**4000)]]],
    [[[0, 1, str(2**4000)], [1, 0, "1/" + str(2**4000)]]],
], ids=["scaled", "swapped"])
def test_extreme_alignment_scalings_only_loosen_the_bound(alignment: list) -> None:
    """Positive scalings of 2^±4000: θ2' computes f2, and the rule's bound, though loose, stays above the value at
    the witness; a leaf below the unaligned bound is refused."""
    plain = Rule(_SMALL, _MOVED).bound([(Fraction(-1), Fraction(1))] * 2)
    doc = _doc(_SMALL, _MOVED, 2, {"box": _BOX, "tree": [["leaf", str(plain)]], "upper": str(plain),
                                    "witness": ["0", "1"], "alignment": alignment})
    report = check(doc)
    assert not report.valid and "below the one the rule gives" in report.reason
    worst = max(abs(p - q) for p, q in zip(_evaluate(_SMALL, [Fraction(-1), Fraction(1)]),
                                           _evaluate(_MOVED, [Fraction(-1), Fraction(1)]), strict=True))
    assert worst <= plain

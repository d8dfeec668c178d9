"""Red team round 10: phase-splitting proofs of ``deep_equivalent`` (``certsym_check.kinds.phases``, also the
"equivalence" of ``deep_distance_bound`` and ``deep_top1_agreement``), and the ONNX readers' input normalization
(Sub, Add, Mul, Div by constants folded into the first layer), Gemm alpha and beta, and ``.onnx.gz``.

The phase trees here are built by a small generator of this module (one input: every region is an interval, whose
emptiness or flatness two constraints show), so that a forgery can change one leaf of a tree that replays.

Holes found, each closed in the same round (its test, once a strict xfail, asserts the fixed behaviour):
- a hidden layer of width 0 crashed the phase walk: now refused with a reason;
- the walk's identity forms were m × (m + 1) Fractions built uncharged: m is now at most 64, charged first;
- the sums of a leaf's multipliers and of a phased neuron's form were not charged: now charged as running sums,
  and multipliers are bounded to 4,096 bits;
- a network without an output ReLU had k output forms rebuilt at every "equal" leaf uncharged: now charged;
- a normalization constant of more dimensions than its value raised the value's rank: now refused by both;
- alpha·W, beta·C and the normalization's composition beyond the element type's range: now refused by both;
- a chain of N normalization steps was composed in quadratic time: now at most 16 steps;
- reading a .onnx.gz allocated 2 GiB up front: now decompressed a MiB at a time (both readers, and the VNN-LIB
  readers too).
Everything else here is an attack the checker (and the producer) refused or read as onnxruntime does.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from flint import fmpq
from helpers import decimal_text, peak_bytes
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym.io.onnxfile import read_onnx_chain
from certsym_check import check, check_certificate
from certsym_check.budget import cost, size
from certsym_check.envelope import CLAIMS
from certsym_check.errors import Reject
from certsym_check.readers import files
from certsym_check.readers.onnx import read_onnx as checker_read_onnx

H = "0" * 64
PHASES = "phase splitting"


# ------------------------------------------------------------------------------------------------ phase trees

def _layers(spec: list) -> list:
    return [([[Fraction(w) for w in row] for row in W], [Fraction(c) for c in b]) for W, b in spec]


def _params(spec: list, relu: bool = False) -> dict:
    """Embedded layered parameters: spec is [(W rows, b)] of numbers (or Fractions)."""
    return {"m": len(spec[0][0][0]) if spec[0][0] else 1, "output_relu": relu,
            "layers": [{"W": [[str(Fraction(w)) for w in row] for row in W], "b": [str(Fraction(c)) for c in b]}
                       for W, b in spec]}


def _value(spec: list, relu: bool, x: list) -> list[Fraction]:
    """The network's output at x, exactly."""
    h, layers = [Fraction(t) for t in x], _layers(spec)
    for ell, (W, b) in enumerate(layers):
        z = [sum((w * t for w, t in zip(row, h, strict=True)), c) for row, c in zip(W, b, strict=True)]
        h = [max(t, Fraction(0)) for t in z] if ell < len(layers) - 1 or relu else z
    return h


def _phase_tree(net1: tuple, net2: tuple, force=None) -> list:
    """A phase tree for two networks of one input, walked as the checker walks them (FORMAT.md, "Phase
    splitting"); ``force(region)`` may put a leaf of its own at a branch (region: [(a, c)] for a·x + c ≥ 0), or
    return False to walk on where the generator would close the region."""
    nets = [_layers(spec) for spec, _ in (net1, net2)]
    relus = [relu for _, relu in (net1, net2)]
    order = []
    for ell in range(1, max(len(L) for L in nets) + 1):
        for t, L in enumerate(nets):
            if ell <= len(L) - 1 or (ell == len(L) and relus[t]):
                order += [(t, ell, i) for i in range(len(L[ell - 1][1]))]
    tree: list = []
    zero = (Fraction(0), Fraction(0))

    def form(t, ell, i, below):
        W, b = nets[t][ell - 1]
        a, c = Fraction(0), b[i]
        for w, (fa, fc) in zip(W[i], below, strict=True):
            a, c = a + w * fa, c + w * fc
        return a, c

    def advance(t, ell, below, current, h):
        below, current = list(below), [list(c) for c in current]
        current[t].append(h)
        if len(current[t]) == len(nets[t][ell - 1][1]):
            below[t], current[t] = current[t], []
        return below, current

    def closed(region):
        lows = [(-c / a, j) for j, (a, c) in enumerate(region) if a > 0]
        highs = [(-c / a, j) for j, (a, c) in enumerate(region) if a < 0]
        if not lows or not highs:
            return None
        (lo, i), (hi, j) = max(lows), min(highs)
        if hi > lo:
            return None
        mu = ["0"] * len(region)
        mu[i], mu[j] = str(1 / region[i][0]), str(-1 / region[j][0])
        return ["empty" if hi < lo else "flat", mu]

    def walk(at, below, current, region):
        while at < len(order):
            t, ell, i = order[at]
            a = form(t, ell, i, below[t])
            if a[0]:
                tree.append(["split"])
                for sign in (1, -1):
                    child = region + [(sign * a[0], sign * a[1])]
                    leaf = force(child) if force else None
                    leaf = closed(child) if leaf is None else leaf
                    if leaf:
                        tree.append(leaf)
                    else:
                        walk(at + 1, *advance(t, ell, below, current, a if sign == 1 else zero), child)
                return
            below, current = advance(t, ell, below, current, a if a[1] >= 0 else zero)
            at += 1
        tree.append(["equal"])

    identity = [(Fraction(1), Fraction(0))]
    walk(0, [identity, identity], [[], []], [])
    return tree


def _doc(net1: tuple, net2: tuple, tree: list, kind: str = "deep_equivalent") -> dict:
    phases = {"phases": tree, "statement": PHASES}
    m = _params(*net1)["m"]
    box = [["-4", "4"]] * m
    proof = {"deep_equivalent": phases,
             "deep_distance_bound": {"box": box, "upper": "0", "lower": "0", "equivalence": phases,
                                     "statement": PHASES},
             "deep_top1_agreement": {"box": box, "equivalence": phases, "statement": PHASES}}[kind]
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind],
            "field": {"type": "QQ"}, "proof": proof,
            "inputs": [{"name": f"n{i}.npz", "sha256": H, "atoms": [], "parameters": _params(*net)}
                       for i, net in enumerate((net1, net2))]}


def _refused(report, words: str = "") -> None:
    assert not report.valid
    assert not report.reason.startswith("malformed certificate"), report.reason
    assert words in report.reason, report.reason


# |x| with one hidden layer, and with two and an output ReLU (FORMAT.md's example of other depths)
ABS = ([([[1], [-1]], [0, 0]), ([[1, 1]], [0])], False)
ABS_DEEP = ([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, 1]], [0])], True)
# relu(x + 1) + relu(−x) − 1 = relu(x) + relu(−x − 1): two kinks, written two ways
KINK_A = ([([[1], [-1]], [1, 0]), ([[1, 1]], [-1])], False)
KINK_B = ([([[1], [-1]], [0, -1]), ([[1, 1]], [0])], False)
# KINK_B plus a hat on [−1, 0] (peak 1/2 at −1/2): differs from KINK_A exactly on (−1, 0)
HAT = ([([[1], [-1], [1], [1], [1]], [0, -1, 1, Fraction(1, 2), 0]), ([[1, 1, 1, -2, 1]], [0])], False)
# x as relu(x) − relu(−x); and the same with an output ReLU, which is relu(x)
IDENTITY = ([([[1], [-1]], [0, 0]), ([[1, -1]], [0])], False)
IDENTITY_RELU = (IDENTITY[0], True)


@pytest.mark.parametrize("net1, net2", [(ABS, ABS_DEEP), (KINK_A, KINK_B), (ABS_DEEP, ABS_DEEP), (IDENTITY, IDENTITY)])
def test_generated_trees_of_equal_pairs_replay(net1: tuple, net2: tuple) -> None:
    report = check(_doc(net1, net2, _phase_tree(net1, net2)))
    assert report.valid, report.reason


def _on(region: list, *constraints) -> bool:
    return region == [(Fraction(a), Fraction(c)) for a, c in constraints]


def test_a_pair_differing_on_an_interval_is_refused_by_every_tree() -> None:
    """KINK_A and HAT differ exactly on (−1, 0) (exact evaluation below). The honest walk reaches an "equal" leaf
    there; a "flat" or "empty" leaf on [−1, 0] (x + 1 ≥ 0, −x ≥ 0: Σ μ g is the constant 1 > 0) is refused."""
    assert _value(*KINK_A, [Fraction(-1, 2)]) != _value(*HAT, [Fraction(-1, 2)])
    assert all(_value(*KINK_A, [x]) == _value(*HAT, [x]) for x in (-3, -1, 0, Fraction(1, 3), 5))
    _refused(check(_doc(KINK_A, HAT, _phase_tree(KINK_A, HAT))), "affine maps differ")
    for kind, words in (("flat", "not shown flat"), ("empty", "not a negative constant")):
        tree = _phase_tree(KINK_A, HAT, lambda r, kind=kind: [kind, ["1", "1"]] if _on(r, (1, 1), (-1, 0)) else None)
        assert [kind, ["1", "1"]] in tree
        _refused(check(_doc(KINK_A, HAT, tree)), words)


def test_multipliers_of_the_sibling_region_are_refused() -> None:
    """x ≥ −1 and x ≤ −2 is empty (μ = (1, 1) sums to −1); the same μ on the sibling x ≥ −1, x ≥ −2, which has an
    interior where the pair differs, sums to 2x + 3: refused."""
    one = ([([[1], [1]], [1, 2]), ([[1, 1]], [0])], False)
    other = ([([[1], [1], [1]], [1, 2, 0]), ([[1, 1, 1]], [0])], False)  # + relu(x): differs for x > 0
    assert _value(*one, [1]) != _value(*other, [1])
    tree = _phase_tree(one, other, lambda r: ["empty", ["1", "1"]] if _on(r, (1, 1), (1, 2)) else None)
    _refused(check(_doc(one, other, tree)), "not constant")


def test_trees_that_skip_an_output_relu_or_stop_early_are_refused() -> None:
    """x and relu(x) differ for x < 0: the tree of (x, x) replayed on (x, relu(x)) leaves the output neuron of the
    second network unphased; its own tree reaches an "equal" leaf with different maps; an "equal" put where neurons
    are left is refused; so is an "empty" leaf at the root."""
    assert _value(*IDENTITY, [-1]) != _value(*IDENTITY_RELU, [-1])
    _refused(check(_doc(IDENTITY, IDENTITY_RELU, _phase_tree(IDENTITY, IDENTITY))))
    _refused(check(_doc(IDENTITY, IDENTITY_RELU, _phase_tree(IDENTITY, IDENTITY_RELU))), "affine maps differ")
    _refused(check(_doc(ABS, ABS_DEEP, [["equal"]])), "expected [\"split\"]")
    _refused(check(_doc(ABS, ABS_DEEP, [["empty", []]])), "expected [\"split\"]")
    tree = _phase_tree(ABS, ABS_DEEP)
    _refused(check(_doc(ABS, ABS_DEEP, tree[:-1])), "ends before")
    _refused(check(_doc(ABS, ABS_DEEP, [*tree, ["equal"]])), "goes on after")


def test_constant_neurons_take_the_phase_of_their_exact_sign() -> None:
    """relu(0·x + 0) and relu(0·x − 1/2) are 0 (a sign exactly 0 is active, and gives 0); with bias +1/2 the
    neuron is 1/2 and the pair differs by 3/2 everywhere. A ["split"] for a constant neuron is refused."""
    plain = ([([[1]], [0]), ([[1]], [0])], False)
    dead = ([([[1], [0], [0]], [0, 0, Fraction(-1, 2)]), ([[1, 5, 3]], [0])], False)
    alive = ([([[1], [0], [0]], [0, 0, Fraction(1, 2)]), ([[1, 5, 3]], [0])], False)
    assert check(_doc(dead, plain, _phase_tree(dead, plain))).valid
    _refused(check(_doc(alive, plain, _phase_tree(alive, plain))), "affine maps differ")
    tree = _phase_tree(dead, plain)
    forged = tree[:2] + [["split"], *tree[2:]]  # a split for the constant neuron after the first one's + branch
    _refused(check(_doc(dead, plain, forged)))


def _first_closed(tree: list) -> int:
    return next(s for s, node in enumerate(tree) if node[0] in ("flat", "empty"))


def _edit(position: str, value):
    def apply(tree: list) -> None:
        s = _first_closed(tree)
        if position == "node":
            tree[s] = value
        elif position == "mu":
            tree[s][1] = value
        else:  # the first split
            tree[0] = value
    return apply


@pytest.mark.parametrize("edit, words", [
    (_edit("mu", [1, 1]), "exact rational"),
    (_edit("mu", [0.5, 0.5]), "exact rational"),
    (_edit("mu", [True, True]), "exact rational"),
    (_edit("mu", [None, "1"]), "exact rational"),
    (_edit("mu", [["1"], "1"]), "exact rational"),
    (_edit("mu", "1"), "list"),
    (_edit("mu", None), "list"),
    (_edit("mu", ["1"]), "length"),
    (_edit("mu", ["1"] * 100_000), "length"),
    (_edit("mu", ["1" * 100_001, "1"]), "exact rational"),
    (_edit("mu", ["1/0", "1"]), "zero denominator"),
    (_edit("mu", ["-1", "1"]), "negative"),
    (_edit("mu", ["0", "0"]), "not shown flat"),
    (_edit("node", ["flat"]), "μ"),
    (_edit("node", ["flat", ["1", "1"], ["1", "1"]]), "μ"),
    (_edit("node", ["equal", 1]), "expected"),
    (_edit("node", []), "a node is"),
    (_edit("node", "flat"), "a node is"),
    (_edit("node", [["flat"], ["1", "1"]]), "a node is"),
    (_edit("node", [{"flat": 1}]), "a node is"),
    (_edit("first", ["split", 0]), "expected"),
    (_edit("first", ["Split"]), "a node is"),
])
def test_malformed_nodes_and_multipliers_are_refused_with_a_reason(edit, words: str) -> None:
    tree = _phase_tree(ABS, ABS_DEEP)
    assert tree[_first_closed(tree)][0] == "flat" and len(tree[_first_closed(tree)][1]) == 2
    forged = copy.deepcopy(tree)
    edit(forged)
    _refused(check(_doc(ABS, ABS_DEEP, forged)), words)


def test_the_bounds_are_checked_before_the_walk() -> None:
    wide = ([([[1]] * 49, [0] * 49), ([[1] * 49], [0])], False)
    narrow = ([([[1]] * 48, [0] * 48), ([[1] * 48], [0])], False)
    _refused(check(_doc(wide, narrow, [["split"]])), "97 neurons")
    _refused(check(_doc(ABS, ABS_DEEP, [["split"]] * 200_001)), "200001 nodes")


def _mirror(n: int) -> tuple[tuple, tuple]:
    """n relu(x) against n relu(−x), both read with weight 0: the zero function twice, 2n neurons."""
    return ([([[1]] * n, [0] * n), ([[0] * n], [0])], False), ([([[-1]] * n, [0] * n), ([[0] * n], [0])], False)


def _deep_flat_tree(n: int, mu: list[str]) -> list:
    """The tree of ``_mirror(n)`` whose + branches all go down to the last neuron, where a "flat" leaf states mu
    (2n multipliers: the first n on x ≥ 0, the last n on −x ≥ 0); every other branch is closed as early as the
    generator closes it."""
    path = [(1, 0)] * n + [(-1, 0)] * n

    def force(region):
        if not _on(region, *path[:len(region)]):
            return None
        return ["flat", mu] if len(region) == 2 * n else False  # on the path: walk on

    return _phase_tree(*_mirror(n), force)


def test_a_walk_through_96_neurons_replays() -> None:
    n = 48
    mu = [str(Fraction(1, j + 2)) for j in range(n)] * 2
    tree = _deep_flat_tree(n, mu)
    assert ["flat", mu] in tree
    report = check(_doc(*_mirror(n), tree))
    assert report.valid, report.reason


@pytest.mark.parametrize("kind", ["deep_distance_bound", "deep_top1_agreement"])
def test_phase_splitting_as_the_equivalence_of_other_kinds(kind: str) -> None:
    """Two outputs (g, −g) for top-1; the pair with a hat differs on (−1, 0), inside the box."""
    def two(net):  # outputs (g, −g)
        (first, (W, b)), _ = net
        return [first, ([W[0], [-w for w in W[0]]], [b[0], -b[0]])], False

    a, b = two(KINK_A), two(KINK_B)
    assert check(_doc(a, b, _phase_tree(a, b), kind)).valid
    hat = two(HAT)
    _refused(check(_doc(a, hat, _phase_tree(a, hat), kind)), "affine maps differ")


def test_a_hidden_layer_of_width_zero_is_refused_with_a_reason() -> None:
    empty = ([([], []), ([[]], [3])], False)  # the constant 3, through an empty hidden layer
    _refused(check(_doc(empty, empty, [["equal"]])))


def test_the_identity_forms_are_not_quadratic_in_m() -> None:
    m = 500
    one = ([([[1] + [0] * (m - 1)], [0]), ([[1]], [0])], False)
    tree = [["split"], ["split"], ["equal"], ["flat", ["1", "1"]], ["split"], ["flat", ["1", "1"]], ["equal"]]
    doc = _doc(one, one, tree)
    report = None

    def run():
        nonlocal report
        report = check(doc)

    peak = peak_bytes(run)
    assert report.valid or "beyond the checker's bounds" in report.reason, report.reason
    # either the forms stay small (14 MB now), or the m·(m + 1) Fractions built are charged (22,051 units now)
    assert peak < 6 << 20 or report.work >= m * (m + 1), f"{peak:,} bytes and {report.work:,} units for {m} inputs"


def _big(bits: int, seed: int) -> Fraction:
    rng = random.Random(seed)
    return Fraction(rng.getrandbits(bits) | 1, rng.getrandbits(bits) | (1 << bits) | 1)


def _text(u: Fraction) -> str:
    return f"{decimal_text(u.numerator)}/{decimal_text(u.denominator)}"


def _sums_cost(terms: list[Fraction]) -> int:
    """What the checker's own cost rule charges for the running sum of ``terms`` (one addition each)."""
    total, units = Fraction(0), 0
    for u in terms:
        units += cost(size(total), size(u))
        total += u
    return units


def test_the_sums_of_a_leafs_multipliers_are_charged() -> None:
    n, bits = 48, 2000
    terms = [_big(bits, j) for j in range(n)]
    mu = [_text(u) for u in terms] * 2
    report = check(_doc(*_mirror(n), _deep_flat_tree(n, mu)))
    if not report.valid:
        _refused(report, "beyond the checker's bounds")
        return
    assert report.work >= _sums_cost(terms + [-u for u in terms]), report.work


def test_the_sums_of_a_phased_form_are_charged() -> None:
    n, bits = 90, 2000
    terms = [_big(bits, 100 + j) for j in range(n)]
    first = {"W": [[_text(u)] for u in terms], "b": ["0"] * n}
    doc = _doc(([([[1]], [0]), ([[1]], [0]), ([[0]], [0])], False), ([([[1]], [0]), ([[1]], [0]), ([[0]], [0])], False),
               [["split"]] * (n + 1) + [["equal"]])
    doc["inputs"][0]["parameters"]["layers"] = [first, {"W": [["1"] * n], "b": ["0"]}, {"W": [["0"]], "b": ["0"]}]
    report = check(doc)  # refused once the layer-2 neuron's form is built (the tree reads "equal" there)
    assert not report.valid
    assert report.work >= _sums_cost(terms) or "beyond the checker's bounds" in report.reason, report.work


def test_the_output_forms_of_every_equal_leaf_are_charged() -> None:
    m, k = 40, 20_000
    one = ([([[1] + [0] * (m - 1)], [0]), ([[0]] * k, [0] * k)], False)
    tree = [["split"], ["split"], ["equal"], ["flat", ["1", "1"]], ["split"], ["flat", ["1", "1"]], ["equal"]]
    report = check(_doc(one, one, tree))
    assert report.valid or "beyond the checker's bounds" in report.reason, report.reason
    assert not report.valid or report.work >= 2 * k * (m + 1) // 16, report.work


# ------------------------------------------------------------------------------------------------ ONNX

W1 = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
B1 = np.array([0.5, 1.25], np.float32)
W2 = np.array([[1.0, 3.0]], np.float32)
B2 = np.array([0.25], np.float32)


def _save(path: Path, nodes: list, inits: list, x_shape, opset: int = 13, elem=TensorProto.FLOAT) -> Path:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", elem, x_shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    return path


def _gemm_file(path: Path, prefix=(), extra=(), x_shape=(1, 2), attributes=None, raw=(), b1=B1) -> Path:
    """x → prefix [(op, constant name, constant first?)] → Gemm(W1, b1; attributes) → Relu → Gemm(W2, b2) → y."""
    inits = [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(B2, "b2"), *extra]
    nodes, v = [], "x"
    for s, (op, c, first) in enumerate(prefix):
        nodes.append(helper.make_node(op, [c, v] if first else [v, c], [f"n{s}"]))
        v = f"n{s}"
    gemm = helper.make_node("Gemm", [v, "W1", "b1"], ["a1"], transB=1, **(attributes or {}))
    gemm.attribute.extend(raw)
    nodes += [gemm, helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("Gemm", ["r1", "W2", "b2"], ["y"],
                                                                                transB=1)]
    return _save(path, nodes, inits, list(x_shape))


def _const(name: str, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _agrees_with_onnxruntime(path: Path, points: list[list[float]]) -> None:
    """Both readers read the file, the same first layer, and the network read computes onnxruntime's outputs."""
    net = certsym.load(str(path)).layered()
    produced, read = read_onnx_chain(path), checker_read_onnx(path.read_bytes())
    assert [tuple(map(Fraction, map(str, v))) for v in produced.affine or ()] == \
        [tuple(v) for v in read.affine or ()]
    assert [(Fraction(str(fmpq(*a.as_integer_ratio()))), Fraction(str(fmpq(*b.as_integer_ratio()))))
            for a, b in produced.scales] == read.scales
    for x in points:
        want = _ort(path, np.array([x], np.float32)).ravel()
        got = [float(v) for v in net([fmpq(*float(t).as_integer_ratio()) for t in x])]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


POINTS = [[0.5, 0.25], [-1.0, 2.0], [3.0, -0.75]]


@pytest.mark.parametrize("prefix, extra, attributes", [
    ([("Sub", "c", False), ("Div", "c", False)], [_const("c", [0.5, 4.0])], None),  # one constant used twice
    ([("Add", "b1", True), ("Mul", "b1", False)], [], None),  # the first layer's bias, also a normalization constant
    ([("Mul", "c", True), ("Mul", "c", True), ("Mul", "c", False)], [_const("c", [0.5, 4.0])], None),
    ([("Add", "c", True), ("Sub", "d", False)], [_const("c", [[0.5, 4.0]]), _const("d", 0.125)], None),
    ([("Sub", "c", False), ("Div", "d", False)], [_const("c", [0.5, 4.0]), _const("d", [3.0, 0.75])],
     {"alpha": 0.75, "beta": -2.0}),  # the normalization folded into alpha W, beta C
])
def test_shared_and_commuted_constants_agree_with_onnxruntime(tmp_path: Path, prefix, extra, attributes) -> None:
    _agrees_with_onnxruntime(_gemm_file(tmp_path / "n.onnx", prefix, extra, attributes=attributes), POINTS)


def test_a_normalization_after_a_reshape_of_an_undeclared_input_agrees(tmp_path: Path) -> None:
    inits = [numpy_helper.from_array(np.array([-1, 2], np.int64), "s"), _const("c", [[2.0, -0.5]]),
             numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(B1, "b1"),
             numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(B2, "b2")]
    nodes = [helper.make_node("Reshape", ["x", "s"], ["f"]), helper.make_node("Mul", ["f", "c"], ["n"]),
             helper.make_node("Gemm", ["n", "W1", "b1"], ["a1"], transB=1), helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("Gemm", ["r1", "W2", "b2"], ["y"], transB=1)]
    _agrees_with_onnxruntime(_save(tmp_path / "r.onnx", nodes, inits, None), POINTS)


def _refused_by_both(path: Path, words: str = "") -> None:
    with pytest.raises(InputError, match=words or None):
        read_onnx_chain(path)
    with pytest.raises(Reject):
        checker_read_onnx(path.read_bytes())


def test_normalizations_the_fold_cannot_take_are_refused_by_both(tmp_path: Path) -> None:
    c = _const("c", [0.5, 4.0])
    # after the first linear layer: not an input normalization
    inits = [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (B1, "b1"), (W2, "W2"), (B2, "b2"))] + [c]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["a1"], transB=1), helper.make_node("Sub", ["a1", "c"], ["s"]),
             helper.make_node("Relu", ["s"], ["r1"]), helper.make_node("Gemm", ["r1", "W2", "b2"], ["y"], transB=1)]
    _refused_by_both(_save(tmp_path / "after.onnx", nodes, inits, [1, 2]))
    cases = {
        "double": ([("Sub", "c", False)], [_const("c", [0.5, 4.0], np.float64)], (1, 2)),  # another element type
        "nan": ([("Sub", "c", False)], [_const("c", [0.5, np.nan])], (1, 2)),
        "inf": ([("Mul", "c", False)], [_const("c", [np.inf, 1.0])], (1, 2)),
        "minus_zero": ([("Div", "c", False)], [_const("c", [1.0, -0.0])], (1, 2)),
        "column": ([("Sub", "c", False)], [_const("c", [0.5, 4.0])], (1, 2, 1)),  # [2] against [1, 2, 1]: [1, 2, 2]
        "sub_first": ([("Sub", "c", True)], [c], (1, 2)),  # c − x
        "div_first": ([("Div", "c", True)], [c], (1, 2)),  # c / x
    }
    for name, (prefix, extra, shape) in cases.items():
        if len(shape) == 3:
            inits = [numpy_helper.from_array(np.array([-1, 2], np.int64), "s"), *extra,
                     *(numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (B1, "b1"), (W2, "W2"), (B2, "b2")))]
            nodes = [helper.make_node("Sub", ["x", "c"], ["n"]), helper.make_node("Reshape", ["n", "s"], ["f"]),
                     helper.make_node("Gemm", ["f", "W1", "b1"], ["a1"], transB=1),
                     helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("Gemm", ["r1", "W2", "b2"], ["y"],
                                                                                 transB=1)]
            _refused_by_both(_save(tmp_path / f"{name}.onnx", nodes, inits, list(shape)))
        else:
            _refused_by_both(_gemm_file(tmp_path / f"{name}.onnx", prefix, extra, shape))


def _attribute(name: str, kind: int, **fields) -> AttributeProto:
    a = AttributeProto()
    a.name, a.type = name, kind
    for key, value in fields.items():
        setattr(a, key, value)
    return a


def test_gemm_alpha_and_beta_attribute_types(tmp_path: Path) -> None:
    """A FLOAT alpha with no value is 0 for onnx, for onnxruntime and for both readers; an INT alpha, a FLOAT one
    holding an int, and an infinite one are refused by both."""
    path = _gemm_file(tmp_path / "empty.onnx", raw=[_attribute("alpha", AttributeProto.FLOAT)])
    assert checker_read_onnx(path.read_bytes()).scales[0] == (0, 1)
    _agrees_with_onnxruntime(path, POINTS)
    _agrees_with_onnxruntime(_gemm_file(tmp_path / "odd.onnx", attributes={"alpha": -0.0, "beta": 2.0 ** -149}),
                             POINTS)
    for name, attribute in [("int", _attribute("alpha", AttributeProto.INT, i=2)),
                            ("mixed", _attribute("beta", AttributeProto.FLOAT, f=2.0, i=2)),
                            ("inf", _attribute("alpha", AttributeProto.FLOAT, f=float("inf"))),
                            ("nan", _attribute("beta", AttributeProto.FLOAT, f=float("nan")))]:
        _refused_by_both(_gemm_file(tmp_path / f"{name}.onnx", raw=[attribute]))


def test_forged_records_and_changed_constants_do_not_bind(tmp_path: Path) -> None:
    """A certificate of a file with Sub, Div and a Gemm alpha: its record's normalization in another order, its
    alpha_beta written as decimals, and a file whose constant differs (the hash updated) are all refused."""
    extra = [_const("c0", [0.5, 0.125]), _const("c1", [3.0, 0.75])]
    prefix = [("Sub", "c0", False), ("Div", "c1", False)]
    path = _gemm_file(tmp_path / "a.onnx", prefix, extra, attributes={"alpha": 0.5})
    cert = tmp_path / "a.json"
    assert main(["equiv", str(path), str(path), "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    data = path.read_bytes()
    assert check_certificate(doc, [data, data]).valid
    model = doc["inputs"][0]["model"]
    assert model["normalization"] == [["Sub", "c0"], ["Div", "c1"]] and model["alpha_beta"] == [[1, "1/2", "1"]]
    for field, value, words in [("normalization", [["Div", "c1"], ["Sub", "c0"]], "normalization"),
                                ("normalization", [["Sub", "c0"], ["Mul", "c1"]], "normalization"),
                                ("alpha_beta", [[1, "0.5", "1"]], "alpha and beta"),
                                ("alpha_beta", [], "alpha and beta")]:
        forged = copy.deepcopy(doc)
        forged["inputs"][0]["model"][field] = value
        report = check_certificate(forged, [data, data])
        assert not report.valid and words in report.reason, report.reason
    other = _gemm_file(tmp_path / "b.onnx", prefix, [_const("c0", [0.5, 0.25]), extra[1]], attributes={"alpha": 0.5})
    moved = copy.deepcopy(doc)
    moved["inputs"][0]["sha256"] = hashlib.sha256(other.read_bytes()).hexdigest()
    report = check_certificate(moved, [other.read_bytes(), data])
    assert not report.valid and "differ" in report.reason, report.reason


def test_gzip_members_junk_and_bombs(tmp_path: Path, monkeypatch) -> None:
    """Both readers read a multi-member .onnx.gz as its members' concatenation and ignore zero padding (as gunzip
    does); junk after the members, a truncated stream and a gzipped gzip are refused by both; beyond the bound the
    checker refuses."""
    plain = _gemm_file(tmp_path / "p.onnx", [("Sub", "c", False)], [_const("c", [0.5, 4.0])]).read_bytes()
    half = len(plain) // 2
    members = tmp_path / "m.onnx.gz"
    members.write_bytes(gzip.compress(plain[:half]) + gzip.compress(plain[half:]))
    assert files._gunzipped(members.read_bytes()) == plain
    padded = tmp_path / "z.onnx.gz"  # gzip's trailing zero padding, which gunzip ignores too
    padded.write_bytes(gzip.compress(plain) + b"\0" * 64)
    assert files._gunzipped(padded.read_bytes()) == plain
    assert read_onnx_chain(padded).affine == read_onnx_chain(tmp_path / "p.onnx").affine
    assert read_onnx_chain(members).affine == read_onnx_chain(tmp_path / "p.onnx").affine
    for name, data in [("junk", gzip.compress(plain) + b"junk"), ("cut", gzip.compress(plain)[:-5]),
                       ("twice", gzip.compress(gzip.compress(plain)))]:
        path = tmp_path / f"{name}.onnx.gz"
        path.write_bytes(data)
        with pytest.raises(InputError):
            read_onnx_chain(path)
        with pytest.raises(Reject):
            checker_read_onnx(files._gunzipped(data))
    monkeypatch.setattr(files, "MAX_GUNZIPPED", 1 << 20)
    with pytest.raises(Reject, match="beyond the checker's bounds"):
        files._gunzipped(gzip.compress(b"\0" * (2 << 20)))


def _rank_matmul(path: Path) -> Path:
    """m = 1: x declared [1] (1-D, so MatMul(W, x) is read), times a constant of shape [1, 1] (one value, so
    allowed against any value): the product is [1, 1], a column, and the bias broadcasts into a 2 × 2 matrix."""
    inits = [_const("c", [[2.0]]), numpy_helper.from_array(np.array([[1.0], [-2.0]], np.float32), "W1"),
             numpy_helper.from_array(np.array([0.5, 1.0], np.float32), "b1"),
             numpy_helper.from_array(np.array([[1.0, 3.0]], np.float32), "W2"), numpy_helper.from_array(B2, "b2")]
    nodes = [helper.make_node("Mul", ["x", "c"], ["n"]), helper.make_node("MatMul", ["W1", "n"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]), helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["W2", "r1"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["y"])]
    return _save(path, nodes, inits, [1], opset=14)


def _rank_gemm(path: Path) -> Path:
    """A constant [1, 1, 2] against x declared [1, 2]: one value per input, leading 1s aside, but the value
    becomes [1, 1, 2], which Gemm does not take."""
    return _gemm_file(path, [("Mul", "c", False)], [_const("c", [[[2.0, 0.5]]])])


def test_a_normalization_constant_that_raises_the_rank_is_refused(tmp_path: Path) -> None:
    column = _rank_matmul(tmp_path / "column.onnx")
    out = _ort(column, np.array([-1.0], np.float32))
    assert out.shape == (1, 2) and out[0, 0] == 13.75  # not the function of one output both readers read
    rank3 = _rank_gemm(tmp_path / "rank3.onnx")
    with pytest.raises(Exception, match="rank"):
        ort.InferenceSession(str(rank3), providers=["CPUExecutionProvider"])
    for path in (column, rank3):
        _refused_by_both(path)


def _overflow_bias(path: Path) -> Path:
    """beta = 4 times C = ±10^38: 4·10^38 is beyond FLOAT's range, so onnxruntime's first layer is ±inf."""
    return _gemm_file(path, attributes={"beta": 4.0}, b1=np.array([1e38, -1e38], np.float32))


def _overflow_shift(path: Path) -> Path:
    """Sub 3·10^38 twice: x − 6·10^38 is −inf in FLOAT for every input of moderate size."""
    return _gemm_file(path, [("Sub", "c", False), ("Sub", "c", False)], [_const("c", 3e38)])


def test_values_beyond_the_element_types_range_are_refused(tmp_path: Path) -> None:
    for build in (_overflow_bias, _overflow_shift):
        path = build(tmp_path / f"{build.__name__}.onnx")
        for x in POINTS:
            assert not np.isfinite(_ort(path, np.array([x], np.float32))).all()
        _refused_by_both(path, "finite values")


def test_a_long_normalization_chain_is_charged_or_refused(tmp_path: Path) -> None:
    """A chain of 1,000 Mul by 2^127 before the first layer: refused by both readers, by its count of steps (16 at
    most), before any of it is composed."""
    n, c = 1000, 2.0 ** 127
    path = _gemm_file(tmp_path / "chain.onnx", [("Mul", "c", False)] * n, [_const("c", c)])
    _refused_by_both(path, "steps")


def test_a_small_gzipped_model_is_read_in_small_memory() -> None:
    data = gzip.compress(b"\x08\x07" + b"\0" * 1000)
    peak = peak_bytes(lambda: files._gunzipped(data))
    assert peak < 64 << 20, f"{peak:,} bytes to gunzip {len(data)} bytes"

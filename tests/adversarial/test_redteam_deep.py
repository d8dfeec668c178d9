"""Red team of the deep certificate kinds, ``deep_equivalent`` and ``deep_not_equivalent`` (checker/certsym_check/
kinds/deep.py, certificates/FORMAT.md, MATH.md Part III). Every certificate is written by hand in the test.

Found at d3fde51 (kinds/deep.py's moves and alignment as at 68ee93d) plus the uncommitted binding of deep inputs
(binding.bind_layered). Each test of a hole asserts the CORRECT behaviour, so it fails while the hole is open; none
is marked xfail.

Soundness (VALID for a false claim):
- ``check_deep_not_equivalent`` decides "the outputs differ" with ``==`` on number-field elements, i.e. "the
  difference is not 0 modulo the declared polynomial". The field's polynomial is only checked to be squarefree with
  one root in the interval, not irreducible: over (x^2 - 2)(x - 5) with alpha in [1, 2] (alpha = sqrt 2) the outputs
  alpha^2 and 2 are different residues but the same real number, and two constant-2 networks are VALID "not
  equivalent". (The Part I ``not_equivalent`` takes a certified sign of the difference and refuses the field.)
- ``binding.bind_layered`` (working tree) compares a layered parameter file's weights with the embedded ones but not
  its ``output_relu``: files sigma(-sigma(x) - 1) (output ReLU) and 0, equal functions, are bound as "equal to the
  embedded parameters" -sigma(x) - 1 and 0, and ``--inputs`` prints VALID deep_not_equivalent; likewise VALID
  deep_equivalent for files sigma(-sigma(x)) and -sigma(x). (Its shallow-form fallback, a {A, b, M, c} file, which
  has no output ReLU, is bound to a one-hidden-layer certificate with output_relu true the same way.)

Resources (far more than linear in the certificate; the work meter sees none of it):
- ``check_deep_equivalent`` builds ``below`` (and, for L = 1, the block's inputs) as lists of m entries before
  anything else. m may be up to 10^9 - 1 and costs nothing in the certificate when the first hidden layer has width
  0: an 855-byte certificate with m = 10^7 took 19 s and 2 GB; with m = 10^9 - 1 it needs about 200 GB (under a
  384 MB address-space limit: "needs more memory than the checker allows" after 2 s).
- ``replay_moves`` does not charge the D2 bias fold b_{l+1}[r] += W_{l+1}[r][j] sigma(b_l[j]) nor the D3 column
  update W_{l+1}[r][i] += lambda W_{l+1}[r][j], for every alive neuron r of the next layer. Two folds of 100,000-
  character rationals with coprime denominators cost one 166,000-bit gcd per output: 404 KB, 10.3 s (D2), 408 KB,
  14.4 s (D3, zero rows: any lambda passes), both VALID with 0 and 5,232 units used; about an hour at 1 MB. One fold
  of a 100,000-digit bias into 20,000 outputs: 681 KB, 1.7 GB resident.
- The block proof (kinds/equivalence.py, shared with Part I ``equivalent``) does not charge ``bias_shift``'s
  c += v_i b_i (406 KB, 9.1 s, VALID, 16 units) nor the merges of ``check_equivalent`` (D.v[i] += lambda D.v[j]).

Other:
- A number-field ``deep_equivalent`` is always refused: ``F.number("1")`` is not a number-field element (the
  producer's own certificates over Q(sqrt 2) are refused: "not a number-field element (coefficient list): '1'").
- A step whose "step" is a list or an object: "malformed certificate (TypeError)" (unhashable), not a reason.

The other tests are attacks that are correctly refused today (each with its reason), and true claims the checker
accepts, confirmed with z3.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import certsym
from certsym_check import check
from certsym_check.budget import WORK_BUDGET, cost, size
from certsym_check.envelope import CLAIMS, check_certificate
from certsym_check.fields import rational

REPO = Path(certsym.__file__).resolve().parent.parent
QQF = {"type": "QQ"}
SQRT2 = {"type": "number_field", "minpoly": ["-2", "0", "1"], "interval": ["1", "2"], "generator": "sqrt(2)"}
# (x^2 - 2)(x - 5) = x^3 - 5x^2 - 2x + 10: squarefree, one root (sqrt 2) in [1, 2], reducible
REDUCIBLE = {"type": "number_field", "minpoly": ["10", "-2", "-5", "1"], "interval": ["1", "2"], "generator": "a"}
HN = "H_n invariance"


def require(condition: bool, what: str) -> None:
    """A precondition of an attack (that the forged certificate is what the attack needs)."""
    if not condition:
        raise RuntimeError(f"precondition failed: {what}")


# ------------------------------------------------------------------------------------------------ builders


def _s(x):
    return [_s(y) for y in x] if isinstance(x, list | tuple) else str(x)


def net(layers: list, m: int, relu: bool = False) -> dict:
    """Layered parameters over QQ: layers = [(W, b), ...], entries ints, Fractions or strings."""
    return {"layers": [{"W": _s(W), "b": _s(b)} for W, b in layers], "m": m, "output_relu": relu}


def doc(kind: str, p1: dict, p2: dict, proof: dict, field: dict = QQF) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind], "field": field,
            "inputs": [{"name": f"theta{i}", "sha256": "0" * 64, "atoms": [], "parameters": p}
                       for i, p in enumerate((p1, p2), 1)],
            "proof": proof}


def block(red1=(), red2=(), matching=(), merges=(), pairs=()) -> dict:
    """A Part I proof for the top blocks."""
    return {"reduction": [list(red1), list(red2)], "matching": list(matching), "merges": list(merges),
            "pairs": list(pairs), "statement": "affine parts cancel"}


def match(i: int, j: int, scale="1") -> dict:
    return {"theta1": i, "theta2": j, "scale": scale, "statement": HN}


def deq(p1, p2, red1=(), red2=(), alignment=(), blk=None, field=QQF) -> dict:
    return doc("deep_equivalent", p1, p2, {"reduction": [list(red1), list(red2)], "alignment": list(alignment),
                                           "block": blk if blk is not None else block(), "statement": "block lemma"},
               field)


def dne(p1, p2, witness, values, field=QQF) -> dict:
    return doc("deep_not_equivalent", p1, p2, {"witness": witness, "values": values,
                                               "statement": "exact evaluation"}, field)


def step(name: str, layer: int, neuron: int) -> dict:
    return {"step": name, "layer": layer, "neuron": neuron}


def merge(layer: int, into: int, frm: int, lam) -> dict:
    return {"step": "D3", "layer": layer, "into": into, "from": frm, "lambda": str(lam)}


def replay(d: dict):
    return check(json.loads(json.dumps(d)))


def digits(rnd: random.Random, n: int) -> str:
    return rnd.choice("123456789") + "".join(rnd.choice("0123456789") for _ in range(n - 1))


def huge_fraction(rnd: random.Random) -> str:
    """A rational of 99,981 characters: numerator and denominator of 49,990 digits (about 166,000 bits)."""
    return f"{digits(rnd, 49_990)}/{digits(rnd, 49_990)}"


def z3_equal(p1: dict, p2: dict) -> bool:
    """rho(theta1) = rho(theta2) on R^m (sigma at the end where output_relu), decided by z3 over the reals."""
    z3 = pytest.importorskip("z3")
    xs = [z3.Real(f"x{q}") for q in range(p1["m"])]

    def realize(p: dict) -> list:
        h = xs
        for ell, layer in enumerate(p["layers"], 1):
            z = [z3.Sum([z3.RealVal(w) * v for w, v in zip(row, h, strict=True)] + [z3.RealVal(b)])
                 for row, b in zip(layer["W"], layer["b"], strict=True)]
            h = [z3.If(v > 0, v, 0) for v in z] if ell < len(p["layers"]) or p["output_relu"] else z
        return h

    solver = z3.Solver()
    solver.add(z3.Or([a != b for a, b in zip(realize(p1), realize(p2), strict=True)]))
    result = solver.check()
    require(result != z3.unknown, "z3 decided")
    return result == z3.unsat


# ============================================================================ soundness


def test_reducible_field_does_not_separate_equal_outputs():
    """Over (x^2 - 2)(x - 5), alpha in [1, 2] is sqrt 2: theta1 = alpha^2 and theta2 = 2 are the same constant
    function. The checker compares residues modulo the reducible polynomial and says VALID "not equivalent"."""
    z3 = pytest.importorskip("z3")
    a = z3.Real("a")
    solver = z3.Solver()
    solver.add(a * a * a - 5 * a * a - 2 * a + 10 == 0, a >= 1, a <= 2, a * a != 2)
    require(solver.check() == z3.unsat, "the only root of the polynomial in [1, 2] satisfies alpha^2 = 2")
    p1 = {"layers": [{"W": [[["0"]]], "b": [["1"]]}, {"W": [[["0", "0", "1"]]], "b": [["0"]]}], "m": 1,
          "output_relu": False}
    p2 = {"layers": [{"W": [[["0"]]], "b": [["1"]]}, {"W": [[["2"]]], "b": [["0"]]}], "m": 1, "output_relu": False}
    rep = replay(dne(p1, p2, [["0"]], [[["0", "0", "1"]], [["2"]]], REDUCIBLE))
    assert not rep.valid, "VALID deep_not_equivalent for two networks that are both the constant 2"


def test_reducible_field_is_refused_by_part_one_not_equivalent():
    """Control: the same pair as one-hidden-layer networks; Part I takes a certified sign and refuses the field."""
    sh1 = {"M": [[["0", "0", "1"]]], "A": [[["0"]]], "b": [["1"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}
    sh2 = {"M": [[["2"]]], "A": [[["0"]]], "b": [["1"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}
    rep = replay(doc("not_equivalent", sh1, sh2, {"witness": [["0"]], "values": [[["0", "0", "1"]], [["2"]]],
                                                   "statement": "exact evaluation"}, REDUCIBLE))
    assert not rep.valid and "reducible" in rep.reason, rep.reason


# ============================================================================ resources


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (384 << 20, 384 << 20))


def test_huge_input_dimension_without_weights_is_bounded(tmp_path):
    """m = 10^9 - 1 and a first hidden layer of width 0: an 855-byte certificate (both networks the constant 0, a
    true claim). The replay builds lists of m entries: under a 384 MB address-space limit it ends in MemoryError."""
    p = net([([], []), ([[]], [0])], 10**9 - 1)
    path = tmp_path / "huge_m.json"
    path.write_text(json.dumps(deq(p, p)))
    require(path.stat().st_size < 1000, "a certificate of less than 1 KB")
    env = dict(os.environ, PYTHONPATH=str(REPO / "checker"))
    proc = subprocess.run([sys.executable, "-m", "certsym_check", str(path)], capture_output=True, env=env,
                          preexec_fn=_limit_memory, timeout=60)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr.decode(errors="replace"), out
    assert "memory" not in out and "malformed" not in out, out


def _charged(rep, folds: int, units: int) -> None:
    """``folds`` operations of ``units`` each, more than the whole budget: a replay that charges them refuses the
    certificate (the claim is true, so the only right refusal is the budget's)."""
    require(folds * units > 1.3 * WORK_BUDGET, "the uncharged operations cost more than the budget")
    assert not rep.valid, f"VALID after {rep.work:,} units, though the folds alone cost {folds * units:,}"
    assert "budget" in rep.reason, rep.reason


def test_d2_bias_folds_are_charged():
    """Two constant neurons with biases of 100,000 characters (coprime denominators), folded by D2 into 24 outputs
    of each network: 48 additions of 166,000-bit fractions (a gcd each), none charged. VALID today, 1.5 s."""
    rnd = random.Random(1)
    b1, b2 = huge_fraction(rnd), huge_fraction(rnd)
    N = 24
    p = net([([[0], [0]], [b1, b2]), ([[1, 1]] * N, [0] * N)], 1)
    red = [step("D2", 1, 0), step("D2", 1, 1)]
    rep = replay(deq(p, p, red, red))
    _charged(rep, 2 * N, cost(size(rational(b1)), size(rational(b2))))


def test_d3_column_updates_are_charged():
    """Three zero neurons (any lambda passes the row test) merged with lambdas of 100,000 characters: every output
    column entry becomes 1 + lambda1 + lambda2, 48 uncharged additions of 166,000-bit fractions. VALID today."""
    rnd = random.Random(2)
    l1, l2 = huge_fraction(rnd), huge_fraction(rnd)
    N = 24
    p = net([([[0], [0], [0]], [0, 0, 0]), ([[1, 1, 1]] * N, [0] * N)], 1)
    red = [merge(1, 0, 1, l1), merge(1, 0, 2, l2)]
    zero = [{"step": "zero", "neuron": 0, "statement": "zeroing lemma"}]
    rep = replay(deq(p, p, red, red, [], block(zero, zero)))
    _charged(rep, 2 * N, cost(size(rational(l1)), size(rational(l2))))


def test_block_bias_shifts_are_charged():
    """The top block's Part I reduction: bias_shift adds v_i b_i to c for every output, uncharged (kinds/
    equivalence.py, shared with Part I's ``equivalent``). 48 additions of 166,000-bit fractions. VALID today."""
    rnd = random.Random(3)
    b1, b2 = huge_fraction(rnd), huge_fraction(rnd)
    N = 24
    p = net([([[0], [0]], [b1, b2]), ([[1, 1]] * N, [0] * N)], 1)
    shifts = [{"step": "bias_shift", "neuron": i, "statement": "bias shifting"} for i in (0, 1)]
    rep = replay(deq(p, p, blk=block(shifts, shifts)))
    _charged(rep, 2 * N, cost(size(rational(b1)), size(rational(b2))))


def test_block_merges_are_charged():
    """The block proof's merges (D.v[i] += lambda D.v[j], kinds/equivalence.py) are not charged: two merges of
    zero neurons with lambdas of 100,000 characters into 40 outputs. Refused today only at the end, for another
    reason ("not accounted for by the pairs"), after the work."""
    rnd = random.Random(4)
    l1, l2 = huge_fraction(rnd), huge_fraction(rnd)
    N = 40
    p = net([([[0], [0], [0]], [0, 0, 0]), ([[1, 1, 1]] * N, [0] * N)], 1)
    merges = [{"into": 0, "from": j, "lambda": lam, "statement": "merge lemma"} for j, lam in ((1, l1), (2, l2))]
    rep = replay(deq(p, p, blk=block(merges=merges)))
    _charged(rep, N, cost(size(rational(l1)), size(rational(l2))))


# ============================================================================ other


def test_number_field_deep_equivalent_is_accepted():
    """A true deep_equivalent over Q(sqrt 2): sigma(x) with output weight sqrt 2 in both networks. Refused today:
    the replay reads F.number("1"), not a number-field element."""
    p = {"layers": [{"W": [[["1"]]], "b": [["0"]]}, {"W": [[["0", "1"]]], "b": [["0"]]}], "m": 1,
         "output_relu": False}
    rep = replay(deq(p, p, blk=block(matching=[match(0, 0, ["1"])]), field=SQRT2))
    assert rep.valid, rep.reason


@pytest.mark.parametrize("name", [["D1"], {"D1": 1}])
def test_unhashable_step_name_is_refused_with_a_reason(name):
    p = net([([[1]], [0]), ([[1]], [0])], 1)
    rep = replay(deq(p, p, [{"step": name, "layer": 1, "neuron": 0}]))
    assert not rep.valid and "malformed" not in rep.reason and "step" in rep.reason, rep.reason


# ============================================================================ binding (the working tree's bind_layered)


def _bound(kind: str, th1: dict, th2: dict, f1: dict, f2: dict, proof: dict):
    """The certificate on the embedded th1, th2, replayed with the layered parameter files f1, f2 as --inputs."""
    files = [json.dumps(f).encode() for f in (f1, f2)]
    d = doc(kind, th1, th2, proof)
    for record, data in zip(d["inputs"], files, strict=True):
        record["sha256"] = hashlib.sha256(data).hexdigest()
    return check_certificate(json.loads(json.dumps(d)), files)


def test_binding_compares_the_files_output_relu_not_equivalent():
    """The files are sigma(-sigma(x) - 1) (output_relu: true), which is 0, and 0: equal functions. The embedded
    networks have output_relu false (-sigma(x) - 1 and 0, different), and bind_layered compares the weights only:
    VALID deep_not_equivalent, both files "equal to the embedded parameters"."""
    th1 = net([([[1]], [0]), ([[-1]], [-1])], 1)
    th2 = net([([[1]], [0]), ([[0]], [0])], 1)
    f1, f2 = dict(th1, output_relu=True), dict(th2, output_relu=True)
    require(z3_equal(f1, f2), "the files' networks are equal")
    rep = _bound("deep_not_equivalent", th1, th2, f1, f2, {"witness": ["0"], "values": [["-1"], ["0"]],
                                                           "statement": "exact evaluation"})
    assert not rep.valid, f"VALID for two files that compute the same function: {rep.bound}"


def test_binding_compares_the_files_output_relu_equivalent():
    """The files are sigma(-sigma(x)) = 0 (output_relu: true) and -sigma(x) (false): different functions; the
    certificate embeds -sigma(x) twice. VALID deep_equivalent today."""
    th = net([([[1]], [0]), ([[-1]], [0])], 1)
    f1 = dict(th, output_relu=True)
    require(not z3_equal(f1, th), "the files' networks differ")
    rep = _bound("deep_equivalent", th, th, f1, th, {"reduction": [[], []], "alignment": [],
                                                      "block": block(matching=[match(0, 0)]),
                                                      "statement": "block lemma"})
    assert not rep.valid, f"VALID for two files that compute different functions: {rep.bound}"


def test_binding_a_shallow_file_to_an_output_relu_network():
    """A {A, b, M, c} file holds rho(theta) with no output ReLU: -sigma(x) here. Bound to the embedded
    sigma(-sigma(x)) = 0 (output_relu true), beside a layered file of that network: VALID deep_equivalent for files
    computing -sigma(x) and 0."""
    th = net([([[1]], [0]), ([[-1]], [0])], 1, True)
    files = [json.dumps({"A": [["1"]], "b": ["0"], "M": [["-1"]], "c": ["0"]}).encode(), json.dumps(th).encode()]
    d = deq(th, th, blk=block(matching=[match(0, 0)]))
    for record, data in zip(d["inputs"], files, strict=True):
        record["sha256"] = hashlib.sha256(data).hexdigest()
    rep = check_certificate(json.loads(json.dumps(d)), files)
    assert not rep.valid, f"VALID for files computing -sigma(x) and 0: {rep.bound}"


# ------------------------------------------------- the second pass (deep_distance_bound, ONNX chains, --keys)
# Found on the ONNX-chain and deep-distance work: bind_layered compared neither a layered file's "m" with the
# embedded input dimension nor a shallow {A, b, M, c} file's keys and declared shape (bind() does).

CONST1 = net([([], []), ([[]], [2])], 1)  # the constant 2 on R^1: an empty first layer


def _files(*docs: dict) -> list[bytes]:
    return [json.dumps(d).encode() for d in docs]


def _bind(d: dict, files: list[bytes]):
    for record, data in zip(d["inputs"], files, strict=True):
        record["sha256"] = hashlib.sha256(data).hexdigest()
    return check_certificate(json.loads(json.dumps(d)), files)


@pytest.mark.parametrize("m", [3, "banana", 5, None])
def test_a_layered_files_m_must_be_the_embedded_input_dimension(m) -> None:
    """The constant 2 on R^3 (or a file the producer refuses: m "banana"; m absent with an empty first layer) is
    not the embedded constant on R^1."""
    file = dict(CONST1, m=m) if m is not None else {k: v for k, v in CONST1.items() if k != "m"}
    rep = _bind(deq(CONST1, CONST1, blk=block()), _files(file, CONST1))
    assert not rep.valid and "m" in rep.reason, rep.reason
    dist = doc("deep_distance_bound", CONST1, CONST1, {"box": [["0", "1"]], "alignment": None, "upper": "0",
                                                       "lower": "0", "witness": ["0"],
                                                       "statement": "interval differences and exact evaluation"})
    rep = _bind(dist, _files(file, CONST1))
    assert not rep.valid, rep.reason


def test_a_layered_file_with_the_embedded_m_is_bound() -> None:
    rep = _bind(deq(CONST1, CONST1, blk=block()), _files(CONST1, CONST1))
    assert rep.valid, rep.reason


def test_a_shallow_file_bound_to_a_deep_kind_has_its_keys_and_shape_checked() -> None:
    """{A, b, M, c} files with an "output_relu": true the producer refuses (and would read as sigma(sigma(x) - 1),
    0 on the box), or a declared shape.m = 4, are not the embedded one-hidden-layer networks on R^1."""
    th = net([([[1]], [0]), ([[1]], [-1])], 1)
    shallow = {"A": [["1"]], "b": ["0"], "M": [["1"]], "c": ["-1"]}
    proof = {"box": [["0", "1"]], "alignment": None, "upper": "1", "lower": "1", "witness": ["0"],
             "statement": "interval differences and exact evaluation"}
    relu_file = dict(shallow, output_relu=True, comment="x")
    rep = _bind(doc("deep_distance_bound", th, ZERO_C, proof), _files(relu_file, ZERO_C))
    assert not rep.valid and "not a parameter file" in rep.reason, rep.reason
    wide = dict(shallow, shape={"m": 4, "n": 1, "k": 1})
    rep = _bind(deq(th, th, blk=block(matching=[match(0, 0)])), _files(wide, th))
    assert not rep.valid and "shape differs" in rep.reason, rep.reason
    rep = _bind(deq(th, th, blk=block(matching=[match(0, 0)])), _files(shallow, th))
    assert rep.valid, rep.reason  # the same file without the extras is bound


ZERO_C = net([([[0]], [0]), ([[0]], [0])], 1)  # 0 on R^1


# ============================================================================ correctly refused today

SIGMA = net([([[1]], [0]), ([[1]], [0])], 1)  # sigma(x)
ZERO = net([([[1]], [0]), ([[0]], [0])], 1)  # 0
TWO_SIGMA = net([([[1], [1]], [0, 0]), ([[1, 1]], [0])], 1)  # 2 sigma(x), from two equal neurons
ABS = net([([[1], [-1]], [0, 0]), ([[1, 1]], [0])], 1)  # |x|
DEEP = net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, 1]], [0])], 1)  # |x| through two layers
DEEP3 = net([([[1], [-1], [1]], [0, 0, 0]), ([[1, 0, 0], [0, 1, 0]], [0, 0]), ([[1, 1]], [0])], 1)  # |x|
DEEP_ODD = net([([[1], [-1]], [0, 0]), ([[1, 0], [0, 1]], [0, 0]), ([[1, -1]], [0])], 1)  # x


def _with(p: dict, ell: int, key: str, value) -> dict:
    q = copy.deepcopy(p)
    q["layers"][ell][key] = _s(value)
    return q


FORGED = {
    # D4 in layer 1: sigma(-x) is not dead on R (the claim sigma(-x) = 0 is false)
    "d4_in_layer_1": (deq(net([([[-1]], [0]), ([[1]], [0])], 1), ZERO, [step("D4", 1, 0)]), "D4 needs a layer"),
    # D3 with lambda <= 0: sigma(x) + sigma(-x) "merged" into 0 * sigma(x)
    "d3_negative_lambda": (deq(ABS, ZERO, [merge(1, 0, 1, -1)], [], [], block(
        [{"step": "zero", "neuron": 0, "statement": "zeroing lemma"}])), "lambda > 0"),
    "d3_zero_lambda": (deq(net([([[1], [0]], [0, 0]), ([[1, 1]], [0])], 1), SIGMA, [merge(1, 0, 1, 0)], [], [],
                           block(matching=[match(0, 0)])), "lambda > 0"),
    "d3_not_proportional": (deq(ABS, TWO_SIGMA, [merge(1, 0, 1, 1)], [merge(1, 0, 1, 1)], [],
                                block(matching=[match(0, 0)])), "not lambda times"),
    "d3_into_itself": (deq(TWO_SIGMA, SIGMA, [merge(1, 0, 0, 1)], [], [], block(matching=[match(0, 0)])),
                       "two neurons"),
    # a constant neuron sigma(2) folded twice: theta1 = 2 would become 4
    "d2_twice": (deq(net([([[0]], [2]), ([[1]], [0])], 1), net([([[0]], [2]), ([[2]], [0])], 1),
                     [step("D2", 1, 0), step("D2", 1, 0)], [step("D2", 1, 0)]), "already deleted"),
    "d2_nonzero_row": (deq(SIGMA, net([([[0]], [0]), ([[1]], [0])], 1), [step("D2", 1, 0)], [step("D2", 1, 0)]),
                       "is not zero"),
    "d1_nonzero_column": (deq(SIGMA, ZERO, [step("D1", 1, 0)], [step("D1", 1, 0)]), "not zero"),
    "step_on_the_output_layer": (deq(SIGMA, SIGMA, [step("D1", 2, 0)]), "out of range"),
    "step_on_layer_0": (deq(SIGMA, SIGMA, [step("D1", 0, 0)]), "numbered from 1"),
    "unknown_step": (deq(SIGMA, ZERO, [step("D5", 1, 0)]), "unknown step"),
    # alignments: theta1 = |x| through two layers, theta2 = x (differ)
    "alignment_duplicate_pair": (deq(DEEP, DEEP_ODD, [], [], [[[0, 0, "1"], [0, 0, "1"]]],
                                     block(matching=[match(0, 0), match(1, 1)])), "one to one"),
    "alignment_missing_neuron": (deq(DEEP, DEEP_ODD, [], [], [[[0, 0, "1"]]],
                                     block(matching=[match(0, 0), match(1, 1)])), "one to one"),
    "alignment_deleted_neuron": (deq(DEEP3, DEEP3, [step("D1", 1, 2)], [step("D1", 1, 2)],
                                     [[[0, 0, "1"], [1, 1, "1"], [2, 2, "1"]]]), "already deleted"),
    # with d = -1 the blocks would be equal: sigma(sigma(x)) = sigma(x) against sigma(-sigma(-x)) = 0
    "alignment_negative_scale": (deq(net([([[1]], [0]), ([[1]], [0]), ([[1]], [0])], 1),
                                     net([([[-1]], [0]), ([[-1]], [0]), ([[1]], [0])], 1), [], [],
                                     [[[0, 0, "-1"]]], block(matching=[match(0, 0)])), "positive"),
    "alignment_wrong_pairs": (deq(DEEP, _with(DEEP, 0, "W", [[2], [-1]]), [], [], [[[0, 0, "1"], [1, 1, "1"]]],
                                  block(matching=[match(0, 0), match(1, 1)])), "z1_"),
    "alignment_too_short": (deq(DEEP, DEEP, [], [], [], block(matching=[match(0, 0), match(1, 1)])),
                            "alignment must be a list of length 1"),
    # the top block's convention: sigma(2x) vs sigma(x) with z1 = 2 z2 on layer 1; the block is 1*sigma(2u) vs
    # 1*sigma(u), which no matching relates
    "top_block_scaling": (deq(net([([[2]], [0]), ([[1]], [0]), ([[1]], [0])], 1),
                              net([([[1]], [0]), ([[1]], [0]), ([[1]], [0])], 1), [], [], [[[0, 0, "2"]]],
                              block(matching=[match(0, 0, "1/2")])), "v2_j * scale != v1_i"),
    # layer L - 1 entirely deleted (constant 2 and constant 3 on top): the blocks are constants that differ
    "zero_width_layer_below_the_block": (deq(net([([[0]], [2]), ([[1]], [0]), ([[1]], [0])], 1),
                                             net([([[0]], [3]), ([[1]], [0]), ([[1]], [0])], 1),
                                             [step("D2", 1, 0)], [step("D2", 1, 0)], [[]],
                                             block(matching=[match(0, 0)])), "times row"),
    "output_relu_mismatch": (deq(SIGMA, dict(SIGMA, output_relu=True), [], [], [], block(matching=[match(0, 0)])),
                             "output ReLU"),
    "depth_mismatch": (deq(DEEP, ABS, [], [], [[[0, 0, "1"], [1, 1, "1"]]]), "depth"),
    "k_mismatch": (deq(SIGMA, net([([[1]], [0]), ([[1], [1]], [0, 0])], 1)), "differ in m, k"),
    "m_mismatch": (deq(SIGMA, net([([[1, 0]], [0]), ([[1]], [0])], 2)), "differ in m, k"),
    "block_statement": (deq(SIGMA, SIGMA, blk=dict(block(matching=[match(0, 0)]), statement="x")), "must cite"),
    "lemma_statement": (dict(deq(SIGMA, SIGMA, blk=block(matching=[match(0, 0)])), proof={
        "reduction": [[], []], "alignment": [], "block": block(matching=[match(0, 0)]), "statement": "trust me"}),
        "must cite"),
    # D1 over a reducible field: the column alpha^2 - 2 is 0 but not a zero residue; its sign is refused
    "reducible_field_d1": (deq({"layers": [{"W": [[["1"]]], "b": [["0"]]}, {"W": [[["-2", "0", "1"]]],
                                                                            "b": [["0"]]}], "m": 1,
                                "output_relu": False},
                               {"layers": [{"W": [[["1"]]], "b": [["0"]]}, {"W": [[["0"]]], "b": [["0"]]}], "m": 1,
                                "output_relu": False}, [step("D1", 1, 0)], [step("D1", 1, 0)], field=REDUCIBLE),
                           "reducible"),
    # deep_not_equivalent
    "values_wrong": (dne(SIGMA, ZERO, ["1"], [["2"], ["0"]]), "stated values"),
    "values_wrong_shape": (dne(SIGMA, ZERO, ["1"], [["1", "0"], ["0"]]), "length 1"),
    "values_three_lists": (dne(SIGMA, ZERO, ["1"], [["1"], ["0"], ["0"]]), "length 2"),
    "witness_wrong_length": (dne(SIGMA, ZERO, ["1", "0"], [["1"], ["0"]]), "length 1"),
    # sigma(-sigma(x) - 1) and sigma(-sigma(x) - 2) are both 0 (output ReLUs)
    "outputs_agree": (dne(net([([[1]], [0]), ([[-1]], [-1])], 1, True), net([([[1]], [0]), ([[-1]], [-2])], 1, True),
                          ["5"], [["0"], ["0"]]), "agree"),
    # sigma(x) with and without an output ReLU agree at x = 3
    "output_relu_only_in_one": (dne(dict(SIGMA, output_relu=True), SIGMA, ["3"], [["3"], ["3"]]), "agree"),
    "deep_not_equivalent_m_mismatch": (dne(SIGMA, net([([[1, 0]], [0]), ([[1]], [0])], 2), ["1"], [["1"], ["1"]]),
                                       "differ in m or k"),
    "witness_beyond_the_numeral_bound": (dne(SIGMA, ZERO, ["1" * 100_001], [["1"], ["0"]]), "not an exact rational"),
    "shape_w_rows": (deq(_with(SIGMA, 0, "W", [[1], [1]]), SIGMA), "must be a list of length 1"),
    "shape_w_columns": (deq(_with(SIGMA, 1, "W", [[1, 1]]), SIGMA), "must be a list of length 1"),
    "not_a_number": (deq(_with(SIGMA, 0, "b", [0.5]), SIGMA), "not an exact rational"),
    "one_layer_only": (deq(net([([[1]], [0])], 1), net([([[1]], [0])], 1)), "at least one hidden layer"),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_forged_certificate_is_refused(case):
    d, reason = FORGED[case]
    rep = replay(d)
    assert not rep.valid, f"{case}: VALID"
    assert reason in rep.reason and "malformed" not in rep.reason, rep.reason


# ============================================================================ true claims accepted (z3 agrees)

ACCEPTED = {
    # D1 on a neuron whose column is zero only on the alive neurons of layer 2 (neuron 1 of layer 2 is dead by D1
    # first, its output weight being 0)
    "d1_zero_on_alive_outputs_only": (
        net([([[1], [1]], [0, -1]), ([[1, 0], [5, 7]], [0, 0]), ([[1, 0]], [0])], 1),
        net([([[1]], [0]), ([[1]], [0]), ([[1]], [0])], 1),
        [step("D1", 2, 1), step("D1", 1, 1)], [], [[[0, 0, "1"]]], block(matching=[match(0, 0)])),
    # D2 with a negative bias: sigma(-3) = 0, nothing is folded
    "d2_negative_bias": (net([([[1], [0]], [0, -3]), ([[1, 9]], [0])], 1), SIGMA, [step("D2", 1, 1)], [], [],
                         block(matching=[match(0, 0)])),
    # D4 in layer 2: -h1 - 1 <= 0 on the orthant
    "d4_in_layer_2": (net([([[1]], [0]), ([[1], [-1]], [0, -1]), ([[1, 4]], [0])], 1),
                      net([([[1]], [0]), ([[1]], [0]), ([[1]], [0])], 1), [step("D4", 2, 1)], [], [[[0, 0, "1"]]],
                      block(matching=[match(0, 0)])),
    # D3 and an alignment with scaling: sigma(x) + sigma(2x) = 3 sigma(x) = sigma(3x) through two layers
    "d3_and_scaled_alignment": (net([([[1], [2]], [0, 0]), ([[1, 1]], [0]), ([[1]], [0])], 1),
                                net([([[3]], [0]), ([[1]], [0]), ([[1]], [0])], 1),
                                [merge(1, 0, 1, 2)], [], [[[0, 0, "1/3"]]], block(matching=[match(0, 0)])),
    # the top block's convention: sigma(2x) with output weight 1 = sigma(x) with output weight 2, z1 = 2 z2
    "top_block_scaling": (net([([[2]], [0]), ([[1]], [0]), ([[1]], [0])], 1),
                          net([([[1]], [0]), ([[1]], [0]), ([[2]], [0])], 1), [], [], [[[0, 0, "2"]]],
                          block(matching=[match(0, 0, "1/2")])),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_true_claim_is_accepted(case):
    p1, p2, red1, red2, alignment, blk = ACCEPTED[case]
    assert z3_equal(p1, p2)
    rep = replay(deq(p1, p2, red1, red2, alignment, blk))
    assert rep.valid, rep.reason


# ------------------------------------------------- the integer sum of a witness's outputs (core._rational_sum)
# Found on its first version: the constants' denominators entered the common denominator (k outputs 1/p_j, distinct
# primes: k integers of ~20k bits each, 2.8 GB for a 972 KB certificate, 23.5 s inside the budget), and a term was
# charged below its size (one 99,999-digit witness coordinate times k output weights 1: 3 GB, 12.8 s).


def _shallow(A, b, M, c, m):
    return {"M": M, "A": A, "b": b, "c": c, "shape": {"m": m, "n": len(b), "k": len(c)}}


def _not_equivalent(p1: dict, p2: dict, witness: list, values: list) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": "not_equivalent", "claim": CLAIMS["not_equivalent"],
            "field": QQF, "inputs": [{"name": f"theta{i}", "sha256": "0" * 64, "atoms": [], "parameters": p}
                                     for i, p in enumerate((p1, p2), 1)],
            "proof": {"witness": witness, "values": values, "statement": "exact evaluation"}}


def _replay_limited(tmp_path, doc: dict) -> str:
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc, separators=(",", ":")))
    require(path.stat().st_size < 1 << 20, "a certificate under 1 MB")
    env = dict(os.environ, PYTHONPATH=str(REPO / "checker"))
    proc = subprocess.run([sys.executable, "-m", "certsym_check", str(path)], capture_output=True, env=env,
                          preexec_fn=_limit_memory, timeout=120)
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode(errors="replace"), out
    assert "memory" not in out, out
    return out


def test_constants_with_distinct_prime_denominators_stay_small(tmp_path):
    sieve = bytearray([1]) * 400_000
    for i in range(2, 633):
        if sieve[i]:
            sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
    primes = [p for p in range(399_999, 1, -1) if sieve[p]][:27_000]
    k = len(primes)
    empty = [[] for _ in range(k)]
    doc = _not_equivalent(_shallow([], [], empty, [f"1/{p}" for p in primes], 1), _shallow([], [], empty, ["0"] * k, 1),
                          ["0"], [["0"] * k, ["0"] * k])
    assert "is not the exact value" in _replay_limited(tmp_path, doc)


def test_a_huge_witness_times_many_outputs_is_charged_before_it_is_formed(tmp_path):
    rnd = random.Random(2)
    q = digits(rnd, 99_999)
    k = 35_000
    doc = _not_equivalent(_shallow([["1"]], ["0"], [["1"]] * k, ["0"] * k, 1),
                          _shallow([], [], [[] for _ in range(k)], ["0"] * k, 1), [q], [["0"] * k, ["0"] * k])
    assert "budget" in _replay_limited(tmp_path, doc)

"""Adversarial review of the independent checker ``certsym_check.check_certificate``.

The ``test_hole_*`` tests are certificates an earlier checker ACCEPTED although their claim was false (or
that made it crash or hang); they are fixed and kept as regression tests, like the other attacks here.
"""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
import textwrap

import pytest
from helpers import HANG_GUARD, cpu_budget, out_of_cpu

from certsym.errors import InputError
from certsym.io import load_networks
from certsym_check import check_certificate

QQ = {"type": "QQ"}
SQRT2 = {"type": "number_field", "minpoly": ["-2", "0", "1"], "interval": ["1", "2"], "generator": "sqrt(2)"}
CLAIMS = {"equivalent": "rho(theta1) = rho(theta2)", "not_equivalent": "rho(theta1) != rho(theta2)",
          "minimal_form": "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)"}
ZERO = {"step": "zero", "neuron": 0, "statement": "zeroing lemma"}


def params(M, A, b, c, m: int | None = None) -> dict:
    return {"M": M, "A": A, "b": b, "c": c, "shape": {"m": m or len(A[0]), "n": len(b), "k": len(c)}}


def rec(p: dict, data: bytes = b"", atoms=()) -> dict:
    return {"name": "p.json", "sha256": hashlib.sha256(data).hexdigest(), "atoms": list(atoms), "parameters": p}


def cert(kind: str, inputs: list, proof: dict, field: dict = QQ) -> dict:
    return copy.deepcopy({"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind],
                          "field": field, "inputs": inputs, "proof": proof})


def eq_proof(red=((), ()), matching=(), merges=(), pairs=()) -> dict:
    return {"reduction": [list(red[0]), list(red[1])], "matching": list(matching), "merges": list(merges),
            "pairs": list(pairs), "statement": "affine parts cancel"}


def match(i: int, j: int, s="1") -> dict:
    return {"theta1": i, "theta2": j, "scale": s, "statement": "H_n invariance"}


def minimal(p: dict, steps=(), field: dict = QQ, out: dict | None = None) -> dict:
    return cert("minimal_form", [rec(p)], {"steps": list(steps), "minimal": out or p}, field)


def jbytes(d: dict) -> bytes:
    return json.dumps(d).encode()


def main_reads(*files: bytes):
    """The networks as certsym's main parser reads the files (the reference the binding must agree with)."""
    return load_networks([f"f{i}" for i in range(len(files))], texts=[f.decode() for f in files])[0]


SIGMA = params([["1"]], [["1"]], ["0"], ["0"])  # σ(x)


def test_sanity_valid() -> None:  # the builders produce certificates the checker accepts
    assert check_certificate(minimal(SIGMA)).valid
    f = jbytes({"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    doc = cert("equivalent", [rec(SIGMA, f), rec(SIGMA, f)], eq_proof(matching=[match(0, 0)]))
    assert check_certificate(doc, [f, f]).valid


# ============================================================================================
# HOLES: false claims accepted
# ============================================================================================


def test_hole_file_layout_not_checked() -> None:
    f1 = jbytes({"M": [["3"], ["4"]], "A": [["1", "2"]], "b": ["0"], "c": ["5", "0"]})
    f2 = jbytes({"M": [["0"], ["5"]], "A": [["2", "1"]], "b": ["3"], "c": ["4", "0"]})
    n1, n2 = main_reads(f1, f2)
    assert n1.evaluate([0, 0]) != n2.evaluate([0, 0])  # the files are NOT equivalent: (5, 0) vs (4, 15) at 0
    # Same flat entry sequences, read as 4σ(x) + 5σ(2x + 3) and 5σ(2x + 3) + 4σ(x): a neuron swap.
    p1 = params([["4", "5"]], [["1"], ["2"]], ["0", "3"], ["0"])
    p2 = params([["5", "4"]], [["2"], ["1"]], ["3", "0"], ["0"])
    doc = cert("equivalent", [rec(p1, f1), rec(p2, f2)], eq_proof(matching=[match(0, 1), match(1, 0)]))
    assert not check_certificate(doc, [f1, f2]).valid


def test_hole_file_shape_ignored() -> None:
    f1 = jbytes({"M": [[]], "A": [], "b": [], "c": ["0"], "shape": {"m": 2, "n": 0, "k": 1}})
    f2 = jbytes({"M": [["0"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    n1, n2 = main_reads(f1, f2)
    assert (n1.m, n2.m) == (2, 1)  # not even comparable: the main tool refuses "input dimensions differ"
    p1 = {"M": [[]], "A": [], "b": [], "c": ["0"], "shape": {"m": 1, "n": 0, "k": 1}}
    p2 = params([["0"]], [["1"]], ["0"], ["0"])
    doc = cert("equivalent", [rec(p1, f1), rec(p2, f2)], eq_proof(red=([], [ZERO])))
    assert not check_certificate(doc, [f1, f2]).valid


def test_hole_atom_key_float_alias_qq() -> None:
    f1 = jbytes({"M": [["cbrt(1e-400)"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    f2 = jbytes({"M": [["0"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    n1, n2 = main_reads(f1, f2)
    assert n1.evaluate([1]) != n2.evaluate([1])  # 10^(-400/3) σ(x) versus 0
    dead = params([["0"]], [["1"]], ["0"], ["0"])
    doc = cert("equivalent", [rec(dead, f1, [{"expr": "cbrt(0.0)", "value": "0"}]), rec(dead, f2)],
               eq_proof(red=([ZERO], [ZERO])))
    assert not check_certificate(doc, [f1, f2]).valid


def test_hole_atom_key_float_alias_sqrt2() -> None:
    f1 = jbytes({"M": [["sqrt(2.00000000000000001)"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    f2 = jbytes({"M": [["sqrt(2)"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    n1, n2 = main_reads(f1, f2)
    assert n1.evaluate([1]) != n2.evaluate([1])
    p = {"M": [[["0", "1"]]], "A": [[["1"]]], "b": [["0"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}
    doc = cert("equivalent", [rec(p, f1, [{"expr": "sqrt(2.0)", "value": ["0", "1"]}]),
                              rec(p, f2, [{"expr": "sqrt(2)", "value": ["0", "1"]}])],
               eq_proof(matching=[match(0, 0, ["1"])]), SQRT2)
    assert not check_certificate(doc, [f1, f2]).valid


def test_hole_false_hn_note() -> None:
    # θ1_min = {0·σ(x), 3σ(0)}, θ2_min = {0·σ(5x + 5), 3σ(0)}: equal functions (0), but no h ∈ H_2 maps
    # row (1, 0) to a row of θ2_min. Only neuron 1 (zero row, v = 3) is matched.
    p1 = params([["0", "3"]], [["1"], ["0"]], ["0", "0"], ["0"])
    p2 = params([["0", "3"]], [["5"], ["0"]], ["5", "0"], ["0"])
    rep = check_certificate(cert("equivalent", [rec(p1), rec(p2)], eq_proof(matching=[match(1, 1)])))
    assert rep.valid  # the claim rho(theta1) = rho(theta2) is true
    assert not any("h . theta1_min" in note for note in rep.notes)


# ============================================================================================
# HOLES: crash / hang (run in a child process with a memory limit and a timeout)
# ============================================================================================

_PRELUDE = """
import resource, sys
sys.set_int_max_str_digits(0)
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from certsym_check import check_certificate
P = {"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"], "shape": {"m": 1, "n": 1, "k": 1}}
def run(kind, claim, field, inputs, proof):
    doc = {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": claim, "field": field,
           "inputs": [{"name": "x", "sha256": "0" * 64, "atoms": a, "parameters": p} for p, a in inputs],
           "proof": proof}
    print("VALID" if check_certificate(doc).valid else "REJECTED")
MIN = "theta_min is a minimal form of theta1 and rho(theta_min) = rho(theta1)"
"""
_TOWER = """run("minimal_form", MIN, {"type": "QQ"}, [(P, [{"expr": "cbrt(((10**1000)**1000)**1000)", "value": "0"}])],
    {"steps": [], "minimal": P})"""
_HUGE_M = """E = {"M": [[]], "A": [], "b": [], "c": ["0"], "shape": {"m": 999_999_999, "n": 0, "k": 1}}
run("equivalent", "rho(theta1) = rho(theta2)", {"type": "QQ"}, [(E, []), (E, [])],
    {"reduction": [[], []], "matching": [], "merges": [], "pairs": [], "statement": "affine parts cancel"})"""
_BISECT = """from math import isqrt
D = 5000
r = isqrt(2 * 10 ** (2 * D))  # r / 10^D is within 10^-D of sqrt(2): the sign of alpha - r/10^D needs ~3.3 D bisections
Q = {"M": [[["-%d/%d" % (r, 10 ** D), "1"]]], "A": [[["1"]]], "b": [["0"]], "c": [["0"]],
     "shape": {"m": 1, "n": 1, "k": 1}}
F = {"type": "number_field", "minpoly": ["-2", "0", "1"], "interval": ["1", "2"], "generator": "s"}
run("minimal_form", MIN, F, [(Q, [])], {"steps": [], "minimal": Q})"""
_DEGREE = """coeffs = ["-1000000"] + [str((7 * i * i + 3 * i) % 19 - 9) for i in range(1, 128)] + ["1"]
F = {"type": "number_field", "minpoly": coeffs, "interval": ["0", "100"], "generator": "s"}
Q = {"M": [[["1"]]], "A": [[["1"]]], "b": [["0"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}
run("minimal_form", MIN, F, [(Q, [])], {"steps": [], "minimal": Q})"""


def _isolated(body: str, cpu: float = 3) -> str:
    """The outcome line of ``body`` in a fresh interpreter given ``cpu`` seconds of its own CPU time (a busy machine
    does not use it up): "TIMEOUT" when it runs out."""
    try:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(_PRELUDE) + body], capture_output=True,
                             text=True, timeout=HANG_GUARD, preexec_fn=cpu_budget(cpu, memory=None))
    except subprocess.TimeoutExpired:
        return "HUNG"
    if out_of_cpu(out.returncode):
        return "TIMEOUT"
    return out.stdout.strip() or f"CRASH: {out.stderr.strip().splitlines()[-1:]}"


@pytest.mark.parametrize("body", [
    pytest.param(_TOWER, id="power-tower"),  # powers bounded in size, not only per level
    pytest.param(_HUGE_M, id="huge-m-n0"),  # n = 0 with m ~ 10^9: no k×m allocation
    pytest.param(_BISECT, id="sign-bisection"),  # a sign budget instead of unbounded bisection
    pytest.param(_DEGREE, id="degree-128-field"),  # primitive remainder sequences
])
def test_denial_of_service(body: str) -> None:
    """The checker answers (accepts a true claim or rejects) within 10 s of CPU and the memory limits."""
    assert _isolated(body, cpu=10) in ("VALID", "REJECTED")


# ============================================================================================
# Attacks correctly rejected (regression tests)
# ============================================================================================

TWO = params([["1", "2"]], [["1"], ["2"]], ["0", "0"], ["0"])  # σ(x) + 2σ(2x) = 5σ(x)


def merge(i, j, lam="2") -> dict:
    return {"step": "merge", "into": i, "from": j, "lambda": lam, "statement": "merge lemma"}


@pytest.mark.parametrize("steps", [
    [merge(0, 0, "1")],                                      # into == from
    [merge(0, 1, "-2")],                                     # λ < 0
    [merge(0, 1, "0")],                                      # λ = 0
    [merge(1, 0, "2")],                                      # wrong direction (r_0 != 2 r_1)
    [{"step": "zero", "neuron": 0, "statement": "zeroing lemma"}],       # a live neuron
    [{"step": "zero", "neuron": True, "statement": "zeroing lemma"}],    # True == 1 as an index
    [{"step": "bias_shift", "neuron": 0, "statement": "bias shifting"}],  # a != 0
    [{"step": "zero", "neuron": 2, "statement": "zeroing lemma"}],       # out of range
    [merge(0, 1, "2") | {"statement": "zeroing lemma"}],    # wrong statement
])
def test_rejected_reduction_steps(steps) -> None:
    out = params([["5", "0"]], [["1"], ["0"]], ["0", "0"], ["0"])
    assert not check_certificate(minimal(TWO, steps, out=out)).valid


def test_merge_then_zeroed_neurons_sound() -> None:
    """Merging two zeroed neurons into each other changes nothing and is accepted; the result is still checked."""
    p = params([["1", "2"]], [["1"], ["2"]], ["0", "0"], ["0"])
    out = params([["5", "0"]], [["1"], ["0"]], ["0", "0"], ["0"])
    assert check_certificate(minimal(p, [merge(0, 1)], out=out)).valid
    bad = params([["5", "7"]], [["1"], ["0"]], ["0", "0"], ["0"])  # v of the zeroed neuron resurrected
    assert not check_certificate(minimal(p, [merge(0, 1)], out=bad)).valid


@pytest.mark.parametrize("p", [
    params([["1", "1"]], [["1"], ["2"]], ["0", "0"], ["0"]),            # positively proportional rows
    params([["1", "0"]], [["1"], ["2"]], ["0", "1"], ["0"]),            # v = 0 (dead)
    params([["1", "1"]], [["1"], ["0"]], ["0", "1"], ["0"]),            # a = 0 (constant)
    params([["1", "1"]], [["1"], ["0"]], ["0", "0"], ["0"]),            # zero row, v != 0
    params([["1", "0"], ["0", "1"]], [["1", "1"], ["2", "2"]], ["1", "2"], ["0", "0"]),  # k = 2, m = 2 proportional
])
def test_rejected_non_minimal(p) -> None:
    assert not check_certificate(minimal(p)).valid


def test_rejected_equivalence_attacks() -> None:
    s = params([["1"]], [["1"]], ["0"], ["0"])
    t = params([["1"]], [["1"]], ["0"], ["1"])  # σ(x) + 1
    assert not check_certificate(cert("equivalent", [rec(s), rec(t)], eq_proof(matching=[match(0, 0)]))).valid
    two = params([["1", "1"]], [["1"], ["1"]], ["0", "0"], ["0"])  # 2σ(x) against σ(x): one neuron matched twice
    doc = cert("equivalent", [rec(two), rec(s)], eq_proof(matching=[match(0, 0), match(1, 0)]))
    assert not check_certificate(doc).valid
    assert not check_certificate(cert("equivalent", [rec(s), rec(s)], eq_proof(matching=[match(0, 0, "0")]))).valid
    assert not check_certificate(cert("equivalent", [rec(s), rec(s)], eq_proof(matching=[match(0, 0, "-1")]))).valid
    # E4-like: σ(x) − σ(−x) = x against x + 1 given as a pair: the affine parts do not cancel
    e4 = params([["1", "-1"]], [["1"], ["-1"]], ["0", "0"], ["0"])
    e4b = params([["1", "-1"]], [["1"], ["-1"]], ["0", "0"], ["-1"])
    pair = {"i": 0, "j": 1, "lambda": "1", "linear": [["1"]], "constant": ["0"],
            "statement": "sigma(z) - sigma(-z) = z"}
    pair2 = dict(pair, i=2, j=3, linear=[["-1"]])
    assert check_certificate(cert("equivalent", [rec(e4), rec(e4)], eq_proof(pairs=[pair, pair2]))).valid
    assert not check_certificate(cert("equivalent", [rec(e4), rec(e4b)], eq_proof(pairs=[pair, pair2]))).valid
    assert not check_certificate(cert("equivalent", [rec(e4), rec(e4)], eq_proof(pairs=[pair, pair]))).valid
    # a neuron in a matching and then again in a pair (index aliasing): it is dead after the matching
    doc = cert("equivalent", [rec(e4), rec(e4)], eq_proof(matching=[match(0, 0)], pairs=[pair, pair2]))
    assert not check_certificate(doc).valid
    # k / m mismatch, empty networks with different constants
    e0 = {"M": [[]], "A": [], "b": [], "c": ["0"], "shape": {"m": 1, "n": 0, "k": 1}}
    assert not check_certificate(cert("equivalent", [rec(e0), rec(dict(e0, c=["1"]))], eq_proof())).valid
    assert not check_certificate(cert("equivalent", [rec(e0), rec(dict(e0, shape={"m": 2, "n": 0, "k": 1}))],
                                      eq_proof())).valid


def test_rejected_not_equivalent_attacks() -> None:
    s, t = SIGMA, params([["1"]], [["1"]], ["0"], ["1"])
    ok = {"witness": ["0"], "values": [["0"], ["1"]], "statement": "exact evaluation"}
    assert check_certificate(cert("not_equivalent", [rec(s), rec(t)], ok)).valid
    assert not check_certificate(cert("not_equivalent", [rec(s), rec(s)], dict(ok, values=[["0"], ["0"]]))).valid
    assert not check_certificate(cert("not_equivalent", [rec(s), rec(s)], ok)).valid  # values lie
    assert not check_certificate(cert("not_equivalent", [rec(s), rec(t)], dict(ok, witness=[0]))).valid
    assert not check_certificate(cert("not_equivalent", [rec(s), rec(t)], dict(ok, witness=[0.0]))).valid


def nf(minpoly, interval) -> dict:
    return {"type": "number_field", "minpoly": minpoly, "interval": interval, "generator": "a"}


def nf_params(v: list) -> dict:
    return {"M": [[v]], "A": [[["1"]]], "b": [["0"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}


@pytest.mark.parametrize("field,v", [
    (nf(["4", "-4", "1"], ["1", "3"]), ["1"]),                  # (x − 2)^2: not squarefree
    (nf(["-2", "0", "1"], ["-2", "2"]), ["1"]),                 # two roots in the interval
    (nf(["-2", "0", "1"], ["0", "1"]), ["1"]),                  # no root in the interval
    (nf(["-2", "0", "1"], ["1", "1"]), ["1"]),                  # lo = hi
    (nf(["6", "-2", "-3", "1"], ["1", "2"]), ["-2", "0", "1"]),  # reducible (x^2−2)(x−3): v = α^2 − 2 = 0 at α
    (nf(["0", "1"], ["-1", "1"]), ["0"]),                        # α = 0: v = 0
    (nf(["-2", "0", "1"], ["1", "2"]), ["1", "2", "3", "4"]),   # too many coefficients
    (nf(["-2", "0", "1"], ["1", "2"]), ["-2", "0", "1"]),       # α^2 − 2: zero, but not reduced (one spelling only)
    (nf(["-2", "0", "1"], ["1", "2"]), "1"),                    # a rational string where a list is expected
    (nf(["-2", "0", "1"], ["1", "2"]), [1]),                    # an int coefficient
])
def test_rejected_number_field_attacks(field, v) -> None:
    assert not check_certificate(minimal(nf_params(v), field=field)).valid


def test_number_field_signs_are_certified() -> None:
    # λ = α − 2 < 0 in Q(√2) although its coefficients look positive-ish; λ = 2 − α > 0 is fine but r_1 != λ r_0
    p = {"M": [[["1"], ["1"]]], "A": [[["1"]], [["-2", "1"]]], "b": [["0"], ["0"]], "c": [["0"]],
         "shape": {"m": 1, "n": 2, "k": 1}}
    out = {**p, "M": [[["-1", "1"], ["0"]]], "A": [[["1"]], [["0"]]], "b": [["0"], ["0"]]}
    assert not check_certificate(minimal(p, [merge(0, 1, ["-2", "1"])], SQRT2, out)).valid
    # a minimal form whose rows are (1, 0) and (√2, 0): positively proportional over Q(√2)
    q = {"M": [[["1"], ["1"]]], "A": [[["1"]], [["0", "1"]]], "b": [["0"], ["0"]], "c": [["0"]],
         "shape": {"m": 1, "n": 2, "k": 1}}
    assert not check_certificate(minimal(q, field=SQRT2)).valid


@pytest.mark.parametrize("edit", [
    lambda d: d.update(version=True), lambda d: d.update(version=1.0), lambda d: d.update(version="1"),
    lambda d: d.update(extra=1), lambda d: d["inputs"][0]["parameters"]["shape"].update(m=True),
    lambda d: d["inputs"][0]["parameters"].update(c=[0]), lambda d: d["inputs"][0]["parameters"].update(c=[0.0]),
    lambda d: d["inputs"][0]["parameters"].update(c=["0.0"]), lambda d: d["inputs"][0]["parameters"].update(c=["1e3"]),
    lambda d: d["inputs"][0].update(sha256="A" * 64), lambda d: d.update(claim=CLAIMS["equivalent"]),
    lambda d: d["field"].update(extra=1), lambda d: d["proof"].update(steps={}),
    lambda d: d["inputs"][0]["parameters"]["c"].__setitem__(0, "1/0"),
    lambda d: d["inputs"][0]["parameters"]["c"].__setitem__(0, "9" * 100_001),
])
def test_rejected_json_oddities(edit) -> None:
    doc = minimal(SIGMA)
    edit(doc)
    assert not check_certificate(doc).valid


@pytest.mark.parametrize("expr,value", [
    ("sqrt(2)", ["0", "-1"]),                     # the negative root
    ("2 ** (1/2)", ["0", "-1"]),
    ("root(2, 2)", ["0", "-1"]),
    ("root(2, 0)", ["1"]),                        # degree 0
    ("root(-2, 2)", ["0", "1"]),                  # even root of a negative number
    ("(-2) ** (1/2)", ["0", "1"]),                # fractional power of a negative base
    ("CRootOf(x**2 - 2, 0)", ["0", "1"]),         # root number 1, not 0
    ("CRootOf(x**2 - 2, -1)", ["0", "1"]),        # sympy-style negative index: not accepted
    ("CRootOf((x**2 - 2)**2, 1)", ["0", "1"]),    # not squarefree
    ("CRootOf(x**2 - 2, 1/2)", ["0", "1"]),       # non-integer index
    ("CRootOf(2, 0)", ["2"]),                     # constant polynomial
    ("sqrt(x)", ["0", "1"]), ("exp(2)", ["0", "1"]), ("sqrt(2) + 1", ["1", "1"]),
])
def test_rejected_atoms(expr, value) -> None:
    p = nf_params(["1"])
    doc = cert("minimal_form", [rec(p, atoms=[{"expr": expr, "value": value}])], {"steps": [], "minimal": p}, SQRT2)
    assert not check_certificate(doc).valid


def test_binding_regressions() -> None:
    f = jbytes({"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    doc = cert("minimal_form", [rec(SIGMA, f)], {"steps": [], "minimal": SIGMA})
    assert check_certificate(doc, [f]).valid
    assert not check_certificate(doc, [f + b" "]).valid                                     # SHA-256
    assert not check_certificate(doc, [f, f]).valid                                         # file count
    for bad in ({"M": [["2"]], "A": [["1"]], "b": ["0"], "c": ["0"]},                         # entry differs
                {"M": [[True]], "A": [["1"]], "b": ["0"], "c": ["0"]},                        # boolean
                {"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["1/0"]},                       # division by zero
                {"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"], "extra": 1},             # unknown key
                {"M": [["sqrt(1)"]], "A": [["1"]], "b": ["0"], "c": ["0"]}):                  # atom not given
        data = jbytes(bad)
        assert not check_certificate(dict(doc, inputs=[rec(SIGMA, data)]), [data]).valid, bad
    nan = b'{"M": [[NaN]], "A": [["1"]], "b": ["0"], "c": ["0"]}'
    assert not check_certificate(dict(doc, inputs=[rec(SIGMA, nan)]), [nan]).valid
    # duplicate keys have two meanings: the producer refuses the file and the checker refuses to bind it
    dup = b'{"M": [["1"]], "A": [["1"]], "b": ["0"], "c": ["0"], "c": ["7"]}'
    with pytest.raises(InputError, match="occurs twice"):
        main_reads(dup)
    seven = params([["1"]], [["1"]], ["0"], ["7"])
    for claimed in (SIGMA, seven):
        report = check_certificate(cert("minimal_form", [rec(claimed, dup)], {"steps": [], "minimal": claimed}), [dup])
        assert not report.valid and "occurs twice" in report.reason
    tenth = jbytes({"M": [[0.1]], "A": [["1"]], "b": ["0"], "c": ["0"]})
    p = params([["1/10"]], [["1"]], ["0"], ["0"])
    assert check_certificate(cert("minimal_form", [rec(p, tenth)], {"steps": [], "minimal": p}), [tenth]).valid
    p = params([["3602879701896397/36028797018963968"]], [["1"]], ["0"], ["0"])
    assert not check_certificate(cert("minimal_form", [rec(p, tenth)], {"steps": [], "minimal": p}), [tenth]).valid


def test_binding_atoms_verified_against_file() -> None:
    f = jbytes({"M": [["sqrt(2)"]], "A": [["CRootOf(x**2 - 2, 0)"]], "b": ["0"], "c": ["0"]})
    p = {"M": [[["0", "1"]]], "A": [[["0", "-1"]]], "b": [["0"]], "c": [["0"]], "shape": {"m": 1, "n": 1, "k": 1}}
    atoms = [{"expr": "sqrt(2)", "value": ["0", "1"]}, {"expr": "CRootOf(x ** 2 - 2, 0)", "value": ["0", "-1"]}]
    doc = cert("minimal_form", [rec(p, f, atoms)], {"steps": [], "minimal": p}, SQRT2)
    assert check_certificate(doc, [f]).valid
    swapped = [dict(atoms[0], value=["0", "-1"]), dict(atoms[1], value=["0", "1"])]
    assert not check_certificate(dict(doc, inputs=[rec(p, f, swapped)]), [f]).valid


def test_malformed_model_files_are_rejected_not_crashed(tmp_path) -> None:
    """Found by review: truncated .npy members, tiny .safetensors files and corrupt zip members used to raise
    struct.error / NotImplementedError / zlib.error out of the checker."""
    import io
    import zipfile

    from certsym_check.errors import Reject
    from certsym_check.readers.files import read_tensors

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("W.npy", b"\x93NUMPY\x01\x00\x00")
    for data, fmt in ((buffer.getvalue(), "npz"), (b"\x01\x02\x03", "safetensors"),
                      (b"\x10\x00\x00\x00\x00\x00\x00\x00{}", "safetensors"), (b"PK\x03\x04garbage", "npz")):
        with pytest.raises(Reject):
            read_tensors(data, fmt)

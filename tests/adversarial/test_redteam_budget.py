"""Red team of the work budget (commits 006a9b5, d3db833): the holes found, each test asserting the CORRECT behaviour.

Found at d3db833 (none is marked xfail). While this file was written, 61df43d (the Sturm signs), 366c80b (crashes,
producer agreement) and cd94dd5/a038ef3 (the replays' rational arithmetic charged, the wide Hessian bounded, referenced
model files bounded) mended all but the torch case, which still fails.

Soundness (a VALID verdict for a false claim):
- ``certsym_check.fields._neg_prem`` takes the sign of lc(b)^δ from δ = deg a − deg b + 1, but the pseudo-division
  skips a step whenever a leading coefficient cancels, so the remainder is multiplied by lc(b)^steps. With lc(b) < 0
  and an odd difference, a Sturm chain element has the wrong sign: CRootOf(-x**3 + 3*x**2 + 3*x - 9, 0), which is
  -sqrt(3), is verified as 3, and ``certsym check --inputs`` prints VALID equivalent for two networks that differ.
  A field x^7 + 2x^5 - 7x^3 + 2x^2 - x + 1 (irreducible) with the interval [-2, 2], which holds three of its roots, is
  accepted as isolating exactly one (as is x^5 - x^3 - 2x on [-6, 2]).

Uncharged work (a small certificate that runs for minutes; measured on the 2-core machine, one replay at a time):
- QQ arithmetic of the replays is not metered: ``Net.evaluate`` (not_equivalent, 2 MB: ~60 s for one of its four
  evaluations), merges accumulating into one neuron (``replay_reduction``, 2 MB: ~100 s), distance_bound with long
  numerators in the networks (only the box, scalings and witness are bounded; 1 MB: ~60 s), Theorem 1's exact
  elimination over Q (0.9 MB: 324 s) and its Gray-code kernel walk on integers of millions of bits (0.9 MB: ~150 s);
- Theorem 1's common denominators (``math.lcm`` over a minor's row, ``_integers`` over a column of R, then one long
  division per entry) are computed before anything is charged: quadratic in the certificate's size (2 MB: 92 s
  VALID, resp. 83 s before the budget refuses; found after cd94dd5, mended in a038ef3);
- ``binding._horner`` over QQ (a CRootOf atom's value of 100,000 characters, degree 64; 100 KB: minutes);
- ``wide._hessian`` costs n(n + k)k² interval operations, which no bound covers (n = 1, k = 240, P = 1: 1.6 KB,
  549 s, VALID);
- a torch archive of 262 KB with an unnamed float16 tensor of 2^27 deflated zeros: every storage is decoded, float16
  into Python floats, 6.6 GB (with a 4 GB limit: "unreadable torch file (MemoryError: )"), still open at a038ef3;
- a referenced npz of 262 KB (deflated zeros, 8192 x 8192 float32, within 2^28 + 64 x the file size) makes
  ``model_net`` build 67 million floats and Fractions per input: 9.9 GB and over 300 s (with a 4 GB limit: refused
  after 40 s only through MemoryError).

Crashes ("malformed certificate (SomeError)" instead of a reason):
- a "kind" that is a list or object (TypeError: unhashable);
- a stabilizer class of 2,000 neurons: str(2000!) exceeds Python's int-to-text limit (ValueError);
- the meet-in-the-middle form hashes str(Fraction) of the entries: an entry of 5,000 digits (ValueError).

Producer and checker disagree (the producer writes a certificate the checker refuses):
- "1e000001" (an exponent with leading zeros: the producer reads 10, the checker refuses more than 5 exponent digits);
- "3\u2003/4" (Unicode whitespace around "/": the producer's regular expression allows it, ast does not);
- "sqrt(0.1000000000000000000001)" and "sqrt(4e400)": the producer records the atom as ast.unparse spells it,
  sqrt(0.1) and sqrt(1e309), whose values are not the ones it records;
- "CRootOf(x**2 - 2**(-1), 1)": inside a CRootOf polynomial the checker refuses powers outside 0..200 even of
  constants ("unsupported exponent"), the producer reads them;
- distance: the producer does not hold the checker's bound on the distinct denominators (2^16 bits in all).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import random
import resource
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import decimal_text

import certsym
from certsym_check.envelope import CLAIMS, check_certificate
from certsym_check.errors import Reject
from certsym_check.fields import NumberField, integer
from certsym_check.readers.files import InputFile

REPO = Path(certsym.__file__).resolve().parent.parent
CPU_SECONDS = 10  # each hang candidate must be decided (or refused) within this much CPU time (RLIMIT_CPU)
WALL_SECONDS = 90.0  # a safety net for the cases side by side (one that exceeds its CPU time is killed by SIGXCPU)


def _doc(kind: str, inputs: list, proof: dict, field: dict | None = None) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": kind, "claim": CLAIMS[kind],
            "field": field or {"type": "QQ"}, "inputs": inputs, "proof": proof}


def _input(params: dict, atoms: list | None = None, name: str = "p", sha: str = "0" * 64) -> dict:
    return {"name": name, "sha256": sha, "atoms": atoms or [], "parameters": params}


def _params(A: list, b: list, M: list, c: list, m: int) -> dict:
    return {"M": M, "A": A, "b": b, "c": c, "shape": {"m": m, "n": len(A), "k": len(c)}}


def _digits(rnd: random.Random, count: int) -> str:
    return str(rnd.randrange(1, 10)) + "".join(rnd.choices("0123456789", k=count - 1))


# ============================================================================ soundness: the Sturm chain's signs


CUBIC = "CRootOf(-x**3 + 3*x**2 + 3*x - 9, 0)"  # -(x - 3)(x^2 - 3): root 0 is -sqrt(3), root 2 is 3


def test_crootof_index_is_counted_with_the_right_signs(tmp_path):
    """The file's entry is CRootOf(-x**3 + 3x**2 + 3x - 9, 0) = -sqrt(3); the certificate says its value is 3 (root 2)
    and that the network equals relu(3x). The checker's Sturm chain counts 0 roots below 3 and prints VALID."""
    p1 = json.dumps({"M": [["1"]], "A": [[CUBIC]], "b": ["0"], "c": ["0"]}).encode()
    p2 = json.dumps({"M": [["1"]], "A": [["3"]], "b": ["0"], "c": ["0"]}).encode()
    par = _params([["3"]], ["0"], [["1"]], ["0"], 1)
    doc = _doc("equivalent",
               [_input(par, [{"expr": CUBIC, "value": "3"}], "p1.json", hashlib.sha256(p1).hexdigest()),
                _input(par, [], "p2.json", hashlib.sha256(p2).hexdigest())],
               {"reduction": [[], []], "matching": [{"theta1": 0, "theta2": 0, "scale": "1",
                                                      "statement": "H_n invariance"}],
                "merges": [], "pairs": [], "statement": "affine parts cancel"})
    rep = check_certificate(doc, [InputFile(p1), InputFile(p2)])
    assert not rep.valid, "VALID for relu(-sqrt(3) x) = relu(3 x)"
    assert "root number" in rep.reason or "not a root" in rep.reason, rep.reason


@pytest.mark.parametrize(("expr", "value", "true_index"), [
    ("CRootOf(-x**3 + 3*x**2 + 3*x - 9, 2)", "3", 2),  # a true statement: must stay accepted
    ("CRootOf(-x**3 + x, 1)", "0", 1),
    ("CRootOf(x**5 - 15*x**3 - 16*x, 2)", "4", 2),  # monic: lc(b) < 0 further down the chain
])
def test_crootof_true_indices_are_accepted(expr, value, true_index):
    par = _params([["1"]], ["0"], [["1"]], ["0"], 1)
    doc = _doc("minimal_form", [_input(par, [{"expr": expr, "value": value}])], {"steps": [], "minimal": par})
    rep = check_certificate(doc)
    assert rep.valid, f"root {true_index} is {value}: {rep.reason}"


@pytest.mark.parametrize(("minpoly", "interval"), [
    (["0", "-2", "0", "-1", "0", "1"], ["-6", "2"]),  # x (x^2 - 2)(x^2 + 1): -sqrt(2), 0, sqrt(2)
    (["1", "-1", "2", "-7", "0", "2", "0", "1"], ["-2", "2"]),  # irreducible; roots -1.477, 0.5515, 1.2466
])
def test_field_interval_with_three_roots_is_refused(minpoly, interval):
    """Both polynomials have three real roots in the interval; the checker's Sturm count says one."""
    with pytest.raises(Reject, match="isolate"):
        NumberField(minpoly, interval)


# ============================================================================ uncharged work: hang candidates


def _not_equivalent_witness(d: Path) -> list[str]:
    """A rational witness of 20 coordinates of 98,000 characters each, 8 neurons: Net.evaluate sums the products
    exactly (denominators grow to 20 x 163,000 bits) per neuron, uncharged. 2 MB."""
    rnd = random.Random(1)
    m, n = 20, 8
    witness = [f"{_digits(rnd, 49_000)}/{_digits(rnd, 49_000)}" for _ in range(m)]

    def par(sign: int) -> dict:
        return _params([[str(sign)] * m for _ in range(n)], [str(i) for i in range(n)], [["1"] * n], ["0"], m)

    doc = _doc("not_equivalent", [_input(par(1)), _input(par(-1))],
               {"witness": witness, "values": [["0"], ["0"]], "statement": "exact evaluation"})
    (d / "witness.json").write_text(json.dumps(doc))
    return [str(d / "witness.json")]


def _merges(d: Path) -> list[str]:
    """Ten merges into neuron 0 with λ of 98,000 characters and 50 outputs: v_0 accumulates ten coprime
    denominators, uncharged (replay_reduction). 2 MB."""
    rnd = random.Random(2)
    count, k = 10, 50
    lams = [f"{_digits(rnd, 49_000)}/{_digits(rnd, 49_000)}" for _ in range(count)]
    n = count + 1
    par = _params([["1"]] + [[x] for x in lams], ["0"] * n, [["1"] * n for _ in range(k)], ["0"] * k, 1)
    steps = [{"step": "merge", "into": 0, "from": j + 1, "lambda": lam, "statement": "merge lemma"}
             for j, lam in enumerate(lams)]
    doc = _doc("minimal_form", [_input(par)], {"steps": steps, "minimal": {}})
    (d / "merges.json").write_text(json.dumps(doc))
    return [str(d / "merges.json")]


def _distance_numerators(d: Path) -> list[str]:
    """distance_bound bounds the numerators of the box, scalings and witness, not the networks': ten stably active
    neurons whose rows have numerators of 160,000 bits over coprime denominators (59,000 bits in all, within the
    bound), and 2,000 outputs: the affine part multiplies every row by a 50,000-bit factor per output. 1 MB."""
    rnd = random.Random(3)
    n, k = 10, 2000
    primes = [3, 7, 11, 13, 17, 19, 23, 29, 31, 37]
    dens = [q ** (5900 // q.bit_length()) for q in primes]

    def numerator(q: int) -> str:
        text = _digits(rnd, 48_000)
        while integer(text) % q == 0:
            text = text[:-1] + str((int(text[-1]) + 1) % 10)
        return text

    A = [[f"{numerator(q)}/{decimal_text(den)}"] for q, den in zip(primes, dens, strict=True)]
    b = [f"{numerator(q)}/{decimal_text(den)}" for q, den in zip(primes, dens, strict=True)]
    p1 = _params(A, b, [["1"] * n for _ in range(k)], ["0"] * k, 1)
    p2 = _params([], [], [[] for _ in range(k)], ["0"] * k, 1)
    doc = _doc("distance_bound", [_input(p1), _input(p2)],
               {"box": [["0", "1"]], "upper": "0", "lower": "0", "pairs": [], "witness": ["1"],
                "statement": "symbolic intervals and exact evaluation"})
    (d / "distance.json").write_text(json.dumps(doc))
    return [str(d / "distance.json")]


def _theorem1_elimination(d: Path) -> list[str]:
    """A 120 x 120 minor singular modulo 2^61 - 1 (one column a multiple of it) of 60-digit integers: the exact
    elimination over Q (at most 120 pivots) runs in Fractions of tens of thousands of bits, uncharged. 0.9 MB."""
    rnd = random.Random(4)
    p = 120
    A = [[_digits(rnd, 60) for _ in range(p)] for _ in range(p)]
    v = [str((1 << 61) - 1)] + ["1"] * (p - 1)
    par = _params(A, ["0"] * p, [v], ["0"], p)
    proof = {"nonzero_v": [0] * p, "nonzero_a": [0] * p, "statement": "Theorem 1",
             "zero_factor": {"rows": list(range(p)), "pivots": list(range(p)), "free": [], "R": [[]] * p}}
    (d / "elimination.json").write_text(json.dumps(_doc("identifiable", [_input(par)], proof)))
    return [str(d / "elimination.json")]


def _theorem1_gray_code(d: Path) -> list[str]:
    """One pivot and 22 free neurons v_f = R_f = 1/q_f of 20,000 digits (distinct q_f): 2^22 Gray-code steps, each
    an addition of integers of 1.4 million bits (the common denominator of R). 0.9 MB."""
    rnd = random.Random(5)
    free = 22
    R = [f"1/{_digits(rnd, 20_000)}" for _ in range(free)]
    n = free + 1
    par = _params([["1"]] * n, [str(i) for i in range(n)], [["1"] + R], ["0"], 1)
    proof = {"nonzero_v": [0] * n, "nonzero_a": [0] * n, "statement": "Theorem 1",
             "zero_factor": {"rows": [0], "pivots": [0], "free": list(range(1, n)), "R": [R]}}
    (d / "gray.json").write_text(json.dumps(_doc("identifiable", [_input(par)], proof)))
    return [str(d / "gray.json")]


def _theorem1_minor_denominators(d: Path) -> list[str]:
    """100 pivots, each neuron with one entry a_c[0] = 1/D_c of 20,000 digits (distinct D_c): the minor's rows are
    brought to integers over their common denominator (math.lcm, then one division per entry) before any charge:
    quadratic in the certificate's size (92 s for 2 MB, VALID)."""
    rnd = random.Random(8)
    p = 100
    A = [[str(rnd.randint(1, 9)) for _ in range(p)] for _ in range(p)]
    for c in range(p):
        A[c][0] = "1/" + _digits(rnd, 20_000)
    par = _params(A, [str(i) for i in range(p)], [["1"] * p], ["0"], p)
    proof = {"nonzero_v": [0] * p, "nonzero_a": [1] * p, "statement": "Theorem 1",
             "zero_factor": {"rows": list(range(p)), "pivots": list(range(p)), "free": [], "R": [[]] * p}}
    (d / "minor.json").write_text(json.dumps(_doc("identifiable", [_input(par)], proof)))
    return [str(d / "minor.json")]


def _theorem1_kernel_denominators(d: Path) -> list[str]:
    """100 pivots and one free column whose R entries are 1/q_s of 20,000 digits (distinct q_s): the column's common
    denominator and the scaled integers (``_integers``) are computed before the kernel description is charged
    (83 s for 2 MB, then refused by the budget)."""
    rnd = random.Random(9)
    p = 100
    A = [[str(rnd.randint(1, 9)) for _ in range(p)] for _ in range(p + 1)]
    par = _params(A, [str(i) for i in range(p + 1)], [["1"] * (p + 1)], ["0"], p)
    R = [["1/" + _digits(rnd, 20_000)] for _ in range(p)]
    proof = {"nonzero_v": [0] * (p + 1), "nonzero_a": [0] * (p + 1), "statement": "Theorem 1",
             "zero_factor": {"rows": list(range(p)), "pivots": list(range(p)), "free": [p], "R": R}}
    (d / "kernel.json").write_text(json.dumps(_doc("identifiable", [_input(par)], proof)))
    return [str(d / "kernel.json")]


def _crootof_horner(d: Path) -> list[str]:
    """CRootOf(x**64 - 2, 0) with a value of 98,000 characters: P(y) by Horner in Fractions (binding._horner over
    QQ) is not charged; the accumulator grows to 64 x 325,000 bits. 100 KB."""
    rnd = random.Random(6)
    value = f"{_digits(rnd, 49_000)}/{_digits(rnd, 49_000)}"
    par = _params([["1"]], ["0"], [["1"]], ["0"], 1)
    doc = _doc("minimal_form", [_input(par, [{"expr": "CRootOf(x**64 - 2, 0)", "value": value}])],
               {"steps": [], "minimal": par})
    (d / "horner.json").write_text(json.dumps(doc))
    return [str(d / "horner.json")]


def _wide_hessian(d: Path) -> list[str]:
    """One student row on M(1, 240), one orbit (a 240-cycle on the columns), minimum: true: the bounds (n·k ≤ 240,
    (n²k/2 + nk)·P² = 360) admit it, and the full Hessian's enclosure costs n (n + k) k² = 13.9 million interval
    entries (549 s, VALID). 1.6 KB."""
    k = 240
    S = math.sqrt(k - 1)
    kappa = (S + math.pi - math.atan2(S, 1)) / (2 * math.pi)
    t = Fraction(2 * kappa).limit_denominator(10**15)  # F(t·1) = k t²/4 − k κ t + const
    proof = {"shape": [1, k], "generators": [[[0], [(c + 1) % k for c in range(k)]]], "center": [str(t)],
             "radius": "1/1000000", "preconditioner": [[str(Fraction(2, k))]], "loss": ["-1000000", "1000000"],
             "minimum": True, "statement": "Krawczyk and symmetric criticality"}
    (d / "wide.json").write_text(json.dumps(_doc("wide_critical_point", [], proof)))
    return [str(d / "wide.json")]


def _referenced_npz(d: Path) -> list[str]:
    """A referenced npz of 262 KB: deflated zeros, W2 of 8192 x 8192 float32 (268 MB inflated, within 2^28 + 64 x
    the file size). model_net reads W2 as 67 million Fractions per input: 9.9 GB and minutes."""
    from certsym_check.readers.files import _ACTIVATION

    n = k = 8192
    path = d / "big.npz"
    np.savez_compressed(path, A=np.zeros((n, 1), np.float32), b=np.zeros(n, np.float32),
                        M=np.zeros((k, n), np.float32), c=np.zeros(k, np.float32))
    data = path.read_bytes()
    assert len(data) < 300_000
    record = {"name": "big.npz", "sha256": hashlib.sha256(data).hexdigest(), "atoms": [],
              "model": {"format": "npz", "rule": "default", "tensors": ["A", "b", "M", "c"], "layout": "out-in",
                        "activation": _ACTIVATION["npz"]}, "shape": {"m": 1, "n": n, "k": k}}
    doc = _doc("not_equivalent", [record, record], {"witness": ["0"], "values": [[], []],
                                                    "statement": "exact evaluation"})
    (d / "npz.json").write_text(json.dumps(doc))
    return [str(d / "npz.json"), "--inputs", str(path), str(path)]


def _torch_unnamed_half_storage(d: Path) -> list[str]:
    """A torch archive of 262 KB whose members are deflated: the four named layers and a tensor "junk" of 2^27 float16
    zeros (268 MB inflated, within 2^28 + 64 x the file size) that the "keys" rule ignores. read_torch decodes every
    storage, float16 through struct.unpack into Python floats: 6.6 GB (with a 4 GB limit: "unreadable torch file
    (MemoryError: )")."""
    import zipfile

    import torch

    from certsym_check.readers.files import _ACTIVATION

    plain, path = d / "plain.pt", d / "half.pt"
    torch.save({"0.weight": torch.ones(1, 1), "0.bias": torch.zeros(1), "2.weight": torch.ones(1, 1),
                "2.bias": torch.zeros(1), "junk": torch.zeros(134_000_000, dtype=torch.float16)}, plain)
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    plain.unlink()
    data = path.read_bytes()
    assert len(data) < 300_000
    record = {"name": "half.pt", "sha256": hashlib.sha256(data).hexdigest(), "atoms": [],
              "model": {"format": "torch", "rule": "keys", "tensors": ["0.weight", "0.bias", "2.weight", "2.bias"],
                        "layout": "out-in", "root": {"path": [], "rule": "auto"}, "activation": _ACTIVATION["npz"]},
              "shape": {"m": 1, "n": 1, "k": 1}}
    doc = _doc("not_equivalent", [record, record], {"witness": ["1"], "values": [["1"], ["1"]],
                                                    "statement": "exact evaluation"})
    (d / "torch.json").write_text(json.dumps(doc))
    return [str(d / "torch.json"), "--inputs", str(path), str(path)]


HANGS = {"not_equivalent_witness": _not_equivalent_witness, "merges": _merges,
         "distance_numerators": _distance_numerators, "theorem1_elimination": _theorem1_elimination,
         "theorem1_gray_code": _theorem1_gray_code, "theorem1_minor_denominators": _theorem1_minor_denominators,
         "theorem1_kernel_denominators": _theorem1_kernel_denominators, "crootof_horner": _crootof_horner,
         "wide_hessian": _wide_hessian,
         "referenced_npz": _referenced_npz, "torch_unnamed_half_storage": _torch_unnamed_half_storage}


def _limit_memory_and_time() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 5))


@pytest.fixture(scope="module")
def hang_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("budget_hangs")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "checker")]))
    argvs = {name: build(d) for name, build in HANGS.items()}
    procs = {name: subprocess.Popen([sys.executable, "-m", "certsym_check", "--quiet", *argv], env=env, cwd=d,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limit_memory_and_time)
             for name, argv in argvs.items()}
    yield procs, time.monotonic()
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


@pytest.mark.parametrize("case", list(HANGS))
def test_small_certificate_is_decided_within_the_budget(hang_runs, case):
    procs, started = hang_runs
    proc = procs[case]
    try:
        out, err = proc.communicate(timeout=max(0.1, started + WALL_SECONDS - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{case}: the checker was still running after {WALL_SECONDS} s") from None
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    assert proc.returncode != -signal.SIGXCPU, f"{case}: the checker used more than {CPU_SECONDS} s of CPU time"
    assert proc.returncode in (0, 1, 2) and "Traceback" not in err, err[-400:]
    assert "malformed certificate" not in out and "more memory than the checker allows" not in out \
        and "MemoryError" not in out, out[-400:]


# ============================================================================ crashes instead of reasons


@pytest.mark.parametrize("kind", [[], {}, ["equivalent"]])
def test_unhashable_kind_is_refused_with_a_reason(kind):
    doc = json.loads((REPO / "tests" / "certificates" / "valid" / "equivalent_E5.json").read_text())
    doc["kind"] = kind
    rep = check_certificate(doc)
    assert not rep.valid and "malformed" not in rep.reason and "kind" in rep.reason, rep.reason


def test_stabilizer_of_a_class_of_2000_neurons():
    """2,000 equal neurons: Stab = S_2000, of order 2000! (5,736 digits); the checker's str(order) raises ValueError."""
    n = 2000
    par = _params([["1"]] * n, ["0"] * n, [["1"] * n], ["0"], 1)
    group = {"zero": [], "classes": [list(range(n))],
             "generators": [{"swap": [i, i + 1], "scale": ["1", "1"]} for i in range(n - 1)],
             "finite_order": decimal_text(math.factorial(n)), "type": f"S_{n}"}
    doc = _doc("stabilizer", [_input(par)], {"theta": group, "rows": group, "statement": "Theorem 2"})
    rep = check_certificate(doc)
    assert rep.valid or not rep.reason.startswith("malformed"), rep.reason


def test_meet_in_the_middle_with_a_5000_digit_entry():
    """relu(N x) + relu(x + 1), N of 5,000 digits: no zero factor; the residues' hash takes str() of each Fraction,
    beyond Python's int-to-text limit (ValueError)."""
    par = _params([["1" * 5000], ["1"]], ["0", "1"], [["1", "1"]], ["0"], 1)
    doc = _doc("identifiable", [_input(par)], {"nonzero_v": [0, 0], "nonzero_a": [0, 0],
                                               "zero_factor": {"split": 1}, "statement": "Theorem 1"})
    rep = check_certificate(doc)
    assert rep.valid or not rep.reason.startswith("malformed"), rep.reason


# ============================================================================ producer and checker agree


def _producer_then_checker(tmp_path: Path, command: str, files: list[Path]) -> None:
    """If the producer writes a certificate for the files, the checker bound to the same files accepts it; else the
    producer refused (exit 2, no certificate)."""
    from certsym.cli import main

    cert = tmp_path / "cert.json"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main([command, *map(str, files), "--cert", str(cert)])
    if not cert.exists():
        assert rc == 2, (rc, err.getvalue())
        return
    rep = check_certificate(json.loads(cert.read_text()), [InputFile(f.read_bytes(), str(f)) for f in files])
    assert rep.valid, f"the producer wrote a certificate (exit {rc}) that the checker refuses: {rep.reason}"


@pytest.mark.parametrize("entry", ["1e000001", "3\u2003/4", "3\u00a0/\u00a04"])
def test_numerals_read_alike(tmp_path, entry):
    p1, p2 = tmp_path / "p1.json", tmp_path / "p2.json"
    p1.write_text(json.dumps({"M": [["1"]], "A": [[entry]], "b": ["0"], "c": ["0"]}))
    p2.write_text(json.dumps({"M": [["1"]], "A": [["10" if "e" in entry else "3/4"]], "b": ["0"], "c": ["0"]}))
    _producer_then_checker(tmp_path, "equiv", [p1, p2])


@pytest.mark.parametrize("entry", ["sqrt(0.1000000000000000000001)", "sqrt(4e400)"])
def test_atoms_recorded_as_written(tmp_path, entry):
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"M": [["1"]], "A": [[entry]], "b": ["0"], "c": ["0"]}))
    _producer_then_checker(tmp_path, "minimal", [p])


def test_distance_certificate_within_the_checkers_denominator_bound(tmp_path):
    """70 neurons whose weights have distinct denominators of about 1,000 bits (64,619 in all): the producer writes a
    distance_bound certificate; with U's and L's denominators the distinct ones exceed the checker's 65,536 bits."""
    primes = [p for p in range(3, 400) if all(p % q for q in range(2, int(p**0.5) + 1))][:70]
    dens = [decimal_text(p ** (1000 // p.bit_length())) for p in primes]
    p1, p2 = tmp_path / "p1.json", tmp_path / "p2.json"
    for path, num in ((p1, 1), (p2, 2)):
        path.write_text(json.dumps({"M": [["1"] * len(dens)], "A": [[f"{num}/{d}"] for d in dens],
                                    "b": ["0"] * len(dens), "c": ["0"]}))
    _producer_then_checker(tmp_path, "distance", [p1, p2])


@pytest.mark.parametrize("entry", ["CRootOf(x**2 - 2**(-1), 1)",
                                   "CRootOf((x - (10**1000)**2 - 1)*(x - (10**1000)**2 - 3), 1)"])
def test_crootof_polynomials_read_alike(tmp_path, entry):
    """Inside a CRootOf polynomial the checker refuses every power outside 0..200 ("unsupported exponent"), constant
    bases included; the producer reads 2**(-1) and 10**1000 there and writes the certificate."""
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"M": [["1"]], "A": [[entry]], "b": ["0"], "c": ["0"]}))
    _producer_then_checker(tmp_path, "minimal", [p])

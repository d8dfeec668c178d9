"""Red-team regressions for ``checker/certsym_check/kinds/identifiable.py`` (``identifiable`` certificates:
kernel, meet in the middle, antiparallel configurations).

Tests marked HOLE fail against the checker as first red-teamed: a false claim accepted, a small certificate that
keeps the checker busy far beyond 10 s, or (one completeness case) a true certificate refused. The others pin
attacks the checker already withstands.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from helpers import HANG_GUARD, cpu_budget, out_of_cpu, q

from certsym.certify import InputRecord, identifiability_certificate
from certsym.core.network import Network
from certsym.decide.identifiability import decide_identifiable
from certsym_check import check_certificate

P61 = (1 << 61) - 1
CLAIM = "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit"
BUDGET = 10.0  # seconds of its own CPU time a small certificate may take


def _doc(params: dict, proof: dict, field: dict | None = None) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": "identifiable", "claim": CLAIM,
            "field": field or {"type": "QQ"},
            "inputs": [{"name": "p", "sha256": "0" * 64, "atoms": [], "parameters": params}],
            "proof": proof}


def _params(M, A, b, c) -> dict:
    s = lambda x: [s(y) for y in x] if isinstance(x, list) else str(x)  # noqa: E731
    return {"M": s(M), "A": s(A), "b": s(b), "c": s(c), "shape": {"m": len(A[0]), "n": len(A), "k": len(M)}}


def _produce(M, A, b, c) -> dict:
    v = decide_identifiable(Network.build(M, A, b, c))
    return identifiability_certificate(v, InputRecord("p", "0" * 64))


def _check_in_subprocess(doc: dict, tmp_path) -> tuple[float, str]:
    """Replay in a child process given BUDGET seconds of its own CPU time (a busy machine does not use it up);
    (BUDGET, verdict or 'TIMEOUT')."""
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    code = ("import json, sys\nfrom certsym_check import check_certificate\n"
            "r = check_certificate(json.load(open(sys.argv[1])))\nprint(r.valid, r.reason[:200])")
    try:
        run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                             timeout=HANG_GUARD, check=False, preexec_fn=cpu_budget(BUDGET, None))
    except subprocess.TimeoutExpired:
        return BUDGET, "TIMEOUT"
    return BUDGET, "TIMEOUT" if out_of_cpu(run.returncode) else run.stdout.strip()


def _assert_clean_verdict(verdict: str) -> None:
    """The child printed a verdict (a crash prints nothing on stdout): VALID, or a refusal that is not a crash."""
    assert verdict.split(" ", 1)[0] in ("True", "False"), verdict
    assert "malformed certificate" not in verdict, verdict


ABS2 = ([[1, 1, 0, 0], [0, 0, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]], [0, 0, 0, 0], [0, 0])  # |x1|e1 + |x2|e2


# ----------------------------------------------------------------------------------------------------- HOLES


def test_hole_split_form_over_reducible_polynomial_accepts_the_clamp():
    """HOLE (false claim accepted). The field's polynomial (x²−2)(x−3) is reducible; α = √2 is isolated in [1, 2]. θ =
    σ(x) + (1 − α²) σ(x − 1) is the clamp σ(x) − σ(x − 1) (E5), NOT identifiable: {1, 2} is a zero factor at α.
    Every sign the checker asks for is certified (gcd with p is 1), but the meet-in-the-middle residues are taken in
    Q[x]/(p), where v_1 a_1 + v_2 a_2 = 2 − x² ≠ 0: no residue match, the zero factor is never compared exactly, and
    the split certificate is accepted. Residue non-matching proves nonzero in the ring, not at α."""
    params = {"M": [[["1"], ["1", "0", "-1"]]], "A": [[["1"]], [["1"]]], "b": [["0"], ["-1"]], "c": [["0"]],
              "shape": {"m": 1, "n": 2, "k": 1}}
    field = {"type": "number_field", "minpoly": ["6", "-2", "-3", "1"], "interval": ["1", "2"],
             "generator": "sqrt(2)"}
    doc = _doc(params, {"nonzero_v": [0, 0], "nonzero_a": [0, 0], "zero_factor": {"split": 1},
                        "statement": "Theorem 1"}, field)
    assert not check_certificate(doc).valid



def _antiparallel_certificate(m: int, doubled: int, singles: int) -> dict:
    """The producer's identifiable certificate of a seeded m = k network with ``doubled`` antiparallel pairs on the
    coordinate hyperplanes and ``singles`` generic neurons."""
    import random

    rng = random.Random(0)
    k = m
    A, b, cols = [], [], []
    for h in range(doubled):
        for s in (1, -1):
            A.append([s if q == h else 0 for q in range(m)])
            b.append(0)
            cols.append([rng.choice([-1, 1]) * rng.randint(1, 9) for _ in range(k)])
    for _ in range(singles):
        A.append([rng.choice([-1, 1]) * rng.randint(1, 9) for _ in range(m)])
        b.append(rng.choice([-1, 1]) * rng.randint(1, 9))
        cols.append([rng.choice([-1, 1]) * rng.randint(1, 9) for _ in range(k)])
    M = [[col[j] for col in cols] for j in range(k)]
    return _produce(M, A, b, [0] * k)

def test_hole_split_form_residue_collisions_cost_k_m_per_match(tmp_path):
    """HOLE (> 10 s, about 60 s, on a 20 KB certificate). Six pairs of neurons with v = e_k and a_{2i} = e_i, a_{2i+1}
    = −e_i + (2^61 − 1) e_m: each pair sums to (2^61 − 1) E_{k,m}, nonzero (the claim is true) but ≡ 0 modulo 2^61 −
    1 under any linear form. With split 6 the 8 × 8 unions of pairs give 63 ≤ 64 residue matches, and each is
    compared exactly over all k·m entries (the single nonzero one comes last), k·m·|F| Fraction products per match
    with k = m = 150: the meet-in-the-middle bounds do not cap this exact comparison work."""
    k = m = 150
    pairs = 6
    n = 2 * pairs
    M = [["0"] * n for _ in range(k - 1)] + [["1"] * n]
    A = []
    for i in range(pairs):
        w, w2 = ["0"] * m, ["0"] * m
        w[i], w2[i], w2[m - 1] = "1", "-1", str(P61)
        A += [w, w2]
    params = {"M": M, "A": A, "b": [str(i) for i in range(n)], "c": ["0"] * k, "shape": {"m": m, "n": n, "k": k}}
    doc = _doc(params, {"nonzero_v": [k - 1] * n, "nonzero_a": [i // 2 for i in range(n)],
                        "zero_factor": {"split": pairs}, "statement": "Theorem 1"})
    elapsed, verdict = _check_in_subprocess(doc, tmp_path)
    assert verdict != "TIMEOUT", f"the checker took more than {elapsed:.0f} s of CPU"
    _assert_clean_verdict(verdict)


def test_hole_configurations_over_high_degree_field_are_unbounded(tmp_path):
    """HOLE (> 10 s, about 30-40 s, on a 13-neuron, 50 KB certificate). A valid 3071-configuration certificate (m = k =
    3, two doubled hyperplanes, six singletons) produced over Q, then θ embedded in Q(2^(1/64)) with M multiplied by
    λ = 1 + α + ... + α^63 > 0: every minor only scales by λ^(g+1), so the certificate stays valid, but every
    configuration now costs degree-64 polynomial products and a certified sign. configuration_bounds counts
    operations without the field's degree (the kernel form has MAX_FIELD_PRODUCTS; this form has no analogue)."""
    base = _antiparallel_certificate(3, 2, 6)
    assert base["kind"] == "identifiable" and check_certificate(base).valid
    degree = 64
    doc = copy.deepcopy(base)
    par = doc["inputs"][0]["parameters"]
    par["M"] = [[[x] * degree for x in row] for row in par["M"]]  # x · λ, λ = Σ α^i
    par["A"] = [[[x] for x in row] for row in par["A"]]
    par["b"], par["c"] = [[x] for x in par["b"]], [[x] for x in par["c"]]
    doc["field"] = {"type": "number_field", "minpoly": ["-2"] + ["0"] * (degree - 1) + ["1"],
                    "interval": ["1", "2"], "generator": "2^(1/64)"}
    elapsed, verdict = _check_in_subprocess(doc, tmp_path)
    assert verdict != "TIMEOUT", f"the checker took more than {elapsed:.0f} s of CPU"
    _assert_clean_verdict(verdict)


def test_hole_configurations_reduction_cost_ignores_p(tmp_path):
    """HOLE (> 10 s, about 60 s, on a 0.33 MB certificate, over Q). A valid configuration certificate (m = k = 4, three
    doubled hyperplanes, four singletons: 1807 configurations, 64 sets T) padded with 6000 zero input columns: the
    minors stay valid. For every T the checker reduces all p normals (length m) modulo span{u_H : H ∈ T}, i.e. Σ_T
    p·|T|·m Fraction operations (≈ 1078·m here), while configuration_bounds charges subsets·d·m (= 192·m)."""
    base = _antiparallel_certificate(4, 3, 4)
    assert base["kind"] == "identifiable" and check_certificate(base).valid
    doc = copy.deepcopy(base)
    par = doc["inputs"][0]["parameters"]
    par["A"] = [row + ["0"] * 6000 for row in par["A"]]
    par["shape"]["m"] += 6000
    elapsed, verdict = _check_in_subprocess(doc, tmp_path)
    assert verdict != "TIMEOUT", f"the checker took more than {elapsed:.0f} s of CPU"
    _assert_clean_verdict(verdict)


def test_hole_split_form_over_number_fields_is_refused_both_sides():
    """The split form was unsound over Q[x]/(p) for a reducible p, and read only the constant coefficient. Now the
    split form is QQ-only: over Q(√2) the producer still decides (its field is irreducible by construction), uses
    the kernel form whenever that fits the budget, and otherwise refuses to write a split certificate; the checker
    rejects any split certificate over a number field."""
    import random

    from flint import fmpq

    from certsym.errors import InputError
    from certsym.reproduce.families import sqrt2_field

    F, root = sqrt2_field()
    rng = random.Random(5)
    n = 24
    M = [[F(fmpq(rng.randint(10**12, 10**13), rng.randint(1, 10**6))) * root for _ in range(n)]]
    A = [[F(fmpq(rng.randint(10**12, 10**13), rng.randint(1, 10**6)))] for _ in range(n)]
    b = [F(rng.randint(1, 10**9)) for _ in range(n)]
    v = decide_identifiable(Network.build(M, A, b, [F(0)], F, 1))
    assert v.identifiable and v.evidence.split is not None
    with pytest.raises(InputError, match="QQ only"):
        identifiability_certificate(v, InputRecord("p", "0" * 64))
    v.evidence.split, v.evidence.free = 12, []
    doc = _forge_split(v)
    report = check_certificate(doc)
    assert not report.valid and "QQ only" in report.reason


def _forge_split(v):
    """The split certificate the producer refuses to write, built by hand."""
    from certsym.certify.envelope import envelope as _envelope

    theta = v.theta
    proof = {"nonzero_v": [0] * theta.n, "nonzero_a": [0] * theta.n, "zero_factor": {"split": v.evidence.split},
             "statement": "Theorem 1"}
    return _envelope("identifiable", theta.field, [(InputRecord("p", "0" * 64), theta)], proof)


# ------------------------------------------------------------------------------------------ attacks withstood


def test_withstood_producer_certificate_is_valid():
    doc = _produce(*ABS2)
    assert check_certificate(doc).valid


def test_withstood_abs_sum_k1_with_any_configuration_proof():
    """|x1| + |x2| with k = 1 (NOT identifiable): the |x1|e1 + |x2|e2 proof, with every 2×2 minor made 1×1, and
    every minor reduced to row 0, is refused (T = ∅ needs rank > 1 of a 1×2 matrix)."""
    good = _produce(*ABS2)
    M = [[1, 1, 1, 1]]
    for shrink in (False, True):
        doc = copy.deepcopy(good)
        doc["inputs"][0]["parameters"] = _params(M, ABS2[1], ABS2[2], [0])
        doc["proof"]["nonzero_v"] = [0, 0, 0, 0]
        if shrink:
            doc["proof"]["configurations"] = [[[[0], [c[1][0]]] for c in layer] for layer in
                                              doc["proof"]["configurations"]]
        else:
            doc["proof"]["configurations"] = [[[[0] * len(c[0]), c[1]] for c in layer] for layer in
                                              doc["proof"]["configurations"]]
        assert not check_certificate(doc).valid


def test_withstood_abs_plus_relu_shift():
    """|x| + σ(x − 1) (NOT identifiable): with T = {H}, m = 1 kills every reduced normal, so no minor exists."""
    params = _params([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1], [0])
    for configs in ([[[[0], [0]]] * 4, [[[0], [0]]], [[[0], [0]]] * 2], [[[[0], [0]]] * 3, [], []]):
        for minor in ([0], [0, 1]):
            doc = _doc(params, {"nonzero_v": [0, 0, 0], "nonzero_a": [0, 0, 0], "hyperplanes": [[0, 1], [2]],
                                "doubled_minor": minor, "configurations": configs,
                                "statement": "Theorem 1 (antiparallel rows)"})
            assert not check_certificate(doc).valid


def test_withstood_hyperplane_listing_manipulations():
    """A doubled pair listed as two singletons, a singleton pair made of positively proportional rows, an
    antisymmetric pair (zero kink), a dead neuron, pairs with a foreign neuron, a missing or repeated neuron."""
    good = _produce(*ABS2)
    for planes in ([[0], [1], [2, 3]], [[0, 2], [1, 3]], [[0, 1], [2]], [[0, 1], [2, 3], [3]], [[0, 1, 2, 3]],
                   [[0, 1], [2, 3], []], [[1, 0], [3, 2], [0]]):
        doc = copy.deepcopy(good)
        doc["proof"]["hyperplanes"] = planes
        assert not check_certificate(doc).valid, planes
    variants = [
        ([[1, 2, 0, 0], [0, 0, 1, 1]], [[1, 0], [2, 0], [0, 1], [0, -1]]),   # rows 0, 1 positively proportional
        ([[1, -1, 0, 0], [0, 0, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]]),  # v_0 + v_1 = 0: zero kink
        ([[1, 0, 0, 0], [0, 0, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]]),   # dead neuron 1
    ]
    for M, A in variants:
        doc = copy.deepcopy(good)
        doc["inputs"][0]["parameters"] = _params(M, A, [0] * 4, [0, 0])
        assert not check_certificate(doc).valid


def test_withstood_form_switching_and_split_edges():
    """Split form for antiparallel rows; split at 0, n, True, a string, huge; a denominator ≡ 0 mod 2^61 − 1;
    the clamp over Q with a split proof; a configuration proof without a doubled hyperplane."""
    for split in (1, 0, 2, True, "1", 10**30, -1, None):
        doc = _doc(_params([[1, 1]], [[1], [-1]], [0, 0], [0]),
                   {"nonzero_v": [0, 0], "nonzero_a": [0, 0], "zero_factor": {"split": split},
                    "statement": "Theorem 1"})
        assert not check_certificate(doc).valid
    clamp = _params([[1, -1]], [[1], [1]], [0, -1], [0])
    assert not check_certificate(_doc(clamp, {"nonzero_v": [0, 0], "nonzero_a": [0, 0],
                                              "zero_factor": {"split": 1}, "statement": "Theorem 1"})).valid
    shifted = _params([[1, 1]], [[1], [-1]], [0, 1], [0])  # σ(x) + σ(−x + 1): a zero factor {1, 2}
    assert not check_certificate(_doc(shifted, {"nonzero_v": [0, 0], "nonzero_a": [0, 0],
                                                "zero_factor": {"split": 1}, "statement": "Theorem 1"})).valid
    assert not check_certificate(_doc(shifted, {"nonzero_v": [0, 0], "nonzero_a": [0, 0], "hyperplanes": [[0], [1]],
                                                "doubled_minor": [], "configurations": [[]],
                                                "statement": "Theorem 1 (antiparallel rows)"})).valid
    pden = {"M": [["1", f"1/{P61}"]], "A": [["1"], ["2"]], "b": ["0", "1"], "c": ["0"],
            "shape": {"m": 1, "n": 2, "k": 1}}
    report = check_certificate(_doc(pden, {"nonzero_v": [0, 0], "nonzero_a": [0, 0], "zero_factor": {"split": 1},
                                           "statement": "Theorem 1"}))
    assert not report.valid and "2^61" in report.reason


def test_withstood_hidden_zero_factor_of_size_four_split():
    """A zero factor {3, 9, 14, 20} of size 4 hidden among 24 generic neurons (m = k = 1): the split proof is
    refused (the cancelling residues are compared exactly)."""
    import random

    rng = random.Random(3)
    n = 24
    v = [rng.randint(10**9, 10**10) for _ in range(n)]
    a = [rng.randint(10**9, 10**10) for _ in range(n)]
    F = [3, 9, 14, 20]
    v[20] = -(v[3] * a[3] + v[9] * a[9] + v[14] * a[14])
    a[20] = 1
    params = _params([v], [[x] for x in a], [rng.randint(1, 10**9) for _ in range(n)], [0])
    for split in (6, 12, 18, 20):
        report = check_certificate(_doc(params, {"nonzero_v": [0] * n, "nonzero_a": [0] * n,
                                                 "zero_factor": {"split": split}, "statement": "Theorem 1"}))
        assert not report.valid and "zero factor" in report.reason, (split, report.reason)
    assert F  # documented subset


@pytest.mark.parametrize("mutation", ["swap_layers", "drop_minor", "bad_row", "repeat_col", "bool_index",
                                      "doubled_minor_repeat", "doubled_minor_short"])
def test_withstood_configuration_list_mutations(mutation):
    doc = copy.deepcopy(_produce(*ABS2))
    pr = doc["proof"]
    if mutation == "swap_layers":
        pr["configurations"][1], pr["configurations"][0] = pr["configurations"][0], pr["configurations"][1]
    elif mutation == "drop_minor":
        pr["configurations"][0].pop()
    elif mutation == "bad_row":
        pr["configurations"][0][0] = [[0, 2], [0, 1]]
    elif mutation == "repeat_col":
        pr["configurations"][0][0] = [[0, 1], [1, 1]]
    elif mutation == "bool_index":
        pr["configurations"][1][0] = [[True], [True]]
    elif mutation == "doubled_minor_repeat":
        pr["doubled_minor"] = [0, 0]
    else:
        pr["doubled_minor"] = [0]
    assert not check_certificate(doc).valid


FORGED_KERNEL = {
    "format": "certsym-certificate", "version": 1, "kind": "identifiable",
    "claim": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit", "field": {"type": "QQ"},
    "inputs": [{"name": "theta", "sha256": "0" * 64, "atoms": [],
                "parameters": {"M": [["1", "-2/5", "-3/5", "1/2"]], "A": [["1"], ["1"], ["1"], ["1"]],
                               "b": ["0", "1", "2", "3"], "c": ["0"], "shape": {"m": 1, "n": 4, "k": 1}}}],
    "proof": {"nonzero_v": [0, 0, 0, 0], "nonzero_a": [0, 0, 0, 0],
              "zero_factor": {"rows": [0], "pivots": [0], "free": [1, 2, 3], "R": [["-2/5", "-3/5", "1/2"]]},
              "statement": "Theorem 1"}}


def test_the_gray_code_walk_compares_with_the_common_denominator_of_r() -> None:
    """HOLE (found by the differential review of the checker's move): the kernel description's loop overwrote D,
    the common denominator of R, with the last free column's, so the walk looked for x_pivot = 1 at the wrong
    scale. Here 1·v_0 − (2/5)·v_1 − (3/5)·v_2 = 0 on the kink: {0, 1, 2} is a zero factor (v_0 + v_1 + v_2 with
    the scalings), the network is NOT identifiable, and this 'identifiable' certificate must be refused."""
    p = FORGED_KERNEL["inputs"][0]["parameters"]
    theta = Network.build([[q(x) for x in row] for row in p["M"]], [[q(x) for x in row] for row in p["A"]],
                          [q(x) for x in p["b"]], [q(x) for x in p["c"]], m=1)
    assert not decide_identifiable(theta).identifiable  # the producer finds the zero factor
    report = check_certificate(FORGED_KERNEL)
    assert not report.valid and "zero factor exists" in report.reason


def test_an_honest_kernel_certificate_with_mixed_denominators_is_accepted() -> None:
    """The same hole the other way: the producer's certificate for an identifiable θ whose kernel columns have
    different denominators (2/5, 41/105, −14/15) was refused ("a zero factor exists"). It must be VALID."""
    A, b = [["-63/64"], ["-3/8"], ["41/32"], ["3/16"]], ["59/64", "37/64", "-41/64", "35/64"]
    M, c = [["-5/16", "-21/64", "3/32", "-49/32"]], ["19/16"]
    theta = Network.build([[q(x) for x in row] for row in M], [[q(x) for x in row] for row in A],
                          [q(x) for x in b], [q(x) for x in c], m=1)
    verdict = decide_identifiable(theta)
    assert verdict.identifiable
    report = check_certificate(identifiability_certificate(verdict, InputRecord("theta", "0" * 64)))
    assert report.valid, report.reason

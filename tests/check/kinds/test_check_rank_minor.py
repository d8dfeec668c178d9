"""Theorem 1 at width: the checker's packed elimination modulo P = 2^61 − 1 (``nonsingular_mod_prime``) against an
exact integer determinant (Bareiss, written here), and the producer's rank minor (``independent_minor``) against
flint's exact rank, with certificates above the old limit of 400 pivots replayed and broken ones refused.
"""

from __future__ import annotations

import copy
import json
import random
import resource
import subprocess
import sys

import numpy as np
import pytest
from flint import fmpq, fmpq_mat, fmpz_mat
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, identifiability_certificate
from certsym.cli import main
from certsym.core.network import Network
from certsym.decide.identifiability import decide_identifiable
from certsym.decide.zerofactor import independent_minor, vectors
from certsym_check import check_certificate
from certsym_check.kinds import identifiable as B
from certsym_check.kinds.identifiable import MAX_PIVOTS, integer_nonsingular, nonsingular_mod_prime

P = (1 << 61) - 1
RECORD = InputRecord("p", "0" * 64)


def _bareiss(M: list[list[int]]) -> int:
    """The exact determinant of an integer matrix (fraction-free elimination)."""
    A = [list(r) for r in M]
    n, sign, prev = len(A), 1, 1
    for c in range(n):
        piv = next((i for i in range(c, n) if A[i][c]), None)
        if piv is None:
            return 0
        if piv != c:
            A[c], A[piv], sign = A[piv], A[c], -sign
        for i in range(c + 1, n):
            for j in range(c + 1, n):
                A[i][j] = (A[i][j] * A[c][c] - A[i][c] * A[c][j]) // prev
        prev = A[c][c]
    return sign * A[-1][-1] if n else 1


entries = st.one_of(st.integers(-3, 3), st.integers(-(1 << 200), 1 << 200), st.sampled_from([P, -P, 2 * P, P + 1]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.lists(st.lists(entries, min_size=n, max_size=n), min_size=n,
                                                    max_size=n)),
       st.integers(0, 2))
def test_packed_elimination_agrees_with_the_determinant_modulo_p(M, dependent) -> None:
    if dependent and len(M) > 1:  # make the matrix singular over Z: one row a combination of two others
        M[-1] = [dependent * x - y for x, y in zip(M[0], M[1 % (len(M) - 1)], strict=True)]
    det = int(fmpz_mat(len(M), len(M), [x for row in M for x in row]).det())
    assert _bareiss(M) == det
    assert nonsingular_mod_prime(M) == (det % P != 0)
    assert integer_nonsingular(M) == (det != 0)


def test_singular_modulo_p_only_is_not_nonsingular() -> None:
    # det = P: nonzero over Z, zero modulo P; the packed form answers for the residues, as it must
    assert _bareiss([[1, 0], [0, P]]) == P and not nonsingular_mod_prime([[1, 0], [0, P]])
    assert nonsingular_mod_prime([[1, 0], [0, P + 1]])
    assert integer_nonsingular([[1, 0], [0, P]])  # then exact elimination decides
    assert not integer_nonsingular([[P, 2 * P], [1, 2]])


def test_slots_stay_bounded_through_hundreds_of_steps() -> None:
    """Entries at P − 1 everywhere but the diagonal drive every slot towards its bound; the verdict must still
    match the determinant (a slot that overflowed into its neighbour would corrupt it)."""
    rng = random.Random(7)
    n = 200
    M = [[P - 1 - (rng.randrange(4) if i == j else 0) for j in range(n)] for i in range(n)]
    expected = int(fmpz_mat(n, n, [x for r in M for x in r]).det()) % P != 0  # exact determinant, then mod P
    assert nonsingular_mod_prime(M) == expected
    M[5] = list(M[3])
    assert not nonsingular_mod_prime(M)


def _network(rng: np.random.Generator, m: int, n: int, k: int) -> Network:
    return Network.build(rng.integers(-9, 10, (k, n)).tolist(), rng.integers(-9, 10, (n, m)).tolist(),
                         rng.integers(-9, 10, n).tolist(), [0] * k)


@pytest.mark.parametrize("m,n,k", [(3, 5, 2), (6, 20, 4), (40, 90, 3)])
def test_the_rank_minor_is_nonsingular_over_q(m: int, n: int, k: int) -> None:
    theta = _network(np.random.default_rng(m * n), m, n, k)
    rows = independent_minor(theta)
    assert rows is not None and len(set(rows)) == n
    w = vectors(theta)
    assert fmpq_mat(n, n, [w[i][r] for r in rows for i in range(n)]).det() != 0


def test_no_rank_minor_when_the_vectors_are_dependent() -> None:
    # v = (1, 1) for all three, a_2 = a_0 + a_1, so w_0 + w_1 − w_2 = 0 (and km = 4 ≥ n = 3)
    theta = Network.build([[1, 1, -1], [1, 1, -1]], [[1, 0], [0, 1], [-1, -1]], [0, 0, 0], [0, 0])
    w = vectors(theta)
    assert fmpq_mat(3, 4, [x for row in w for x in row]).rank() == 2
    assert independent_minor(theta) is None
    assert independent_minor(_network(np.random.default_rng(0), 2, 7, 3)) is None  # n > km


def test_a_certificate_beyond_four_hundred_pivots_replays_and_its_broken_forms_fail() -> None:
    rng = np.random.default_rng(3)
    theta = _network(rng, 50, 420, 9)
    verdict = decide_identifiable(theta)
    assert verdict.identifiable and len(verdict.evidence.rows) == 420 > 400 and MAX_PIVOTS >= 420
    doc = identifiability_certificate(verdict, RECORD)
    assert check_certificate(doc).valid
    z = doc["proof"]["zero_factor"]
    for mutate in (lambda z: z["rows"].__setitem__(1, z["rows"][0]),  # rows not distinct
                   lambda z: z["rows"].pop(),  # one row short
                   lambda z: z["pivots"].pop()):  # a neuron neither pivot nor free
        broken = copy.deepcopy(doc)
        mutate(broken["proof"]["zero_factor"])
        assert broken["proof"]["zero_factor"] != z and not check_certificate(broken).valid


def test_a_singular_minor_is_refused() -> None:
    """Output 1 is twice output 0, so rows (0, q) and (1, q) of W are proportional: a minor holding both is
    singular over Q (and modulo P), though the vectors w_i are independent."""
    rng = np.random.default_rng(5)
    V0 = rng.integers(1, 9, 6).tolist()
    theta = Network.build([V0, [2 * x for x in V0]], rng.integers(-9, 10, (6, 4)).tolist(),
                          rng.integers(-9, 10, 6).tolist(), [0, 0])
    doc = identifiability_certificate(decide_identifiable(theta), RECORD)
    assert check_certificate(doc).valid
    m = 4
    rows = doc["proof"]["zero_factor"]["rows"]
    q = rows[0] % m
    partner = (1 - rows[0] // m) * m + q
    broken = copy.deepcopy(doc)
    broken["proof"]["zero_factor"]["rows"] = [rows[0], partner] + [r for r in rows[1:] if r != partner][:len(rows) - 2]
    assert len(set(broken["proof"]["zero_factor"]["rows"])) == len(rows)
    result = check_certificate(broken)
    assert not result.valid and "singular" in result.reason


def test_a_referenced_model_file_is_bound_by_its_hash(tmp_path, capfd) -> None:
    rng = np.random.default_rng(11)
    tensors = {"0.weight": rng.standard_normal((30, 12)), "0.bias": rng.standard_normal(30),
               "2.weight": rng.standard_normal((4, 30)), "2.bias": rng.standard_normal(4)}
    path, other = tmp_path / "w.npz", tmp_path / "v.npz"
    np.savez(path, **{key: x.astype(np.float32) for key, x in tensors.items()})
    np.savez(other, **{key: (2 * x).astype(np.float32) for key, x in tensors.items()})
    cert = tmp_path / "i.json"
    assert main(["identifiable", str(path), "--cert", str(cert), "--reference"]) == 0
    doc = json.loads(cert.read_text())
    assert "parameters" not in doc["inputs"][0] and doc["inputs"][0]["shape"] == {"m": 12, "n": 30, "k": 4}
    capfd.readouterr()
    assert main(["check", str(cert), "--inputs", str(path)]) == 0
    assert "VALID identifiable" in capfd.readouterr().out
    assert main(["check", str(cert), "--inputs", str(other)]) != 0
    assert "SHA-256" in capfd.readouterr().out
    assert main(["check", str(cert)]) == 2
    assert "CANNOT CHECK" in capfd.readouterr().out


def _shared_denominator_certificate(path, n: int, k: int, m: int, digits: int, singular: bool) -> None:
    """Entries ±c/N_q and ±c/Q_j over distinct odd numbers of ``digits`` digits, shared by every neuron (any two
    have a gcd dividing their small difference): each v_j a_q
    is a small fraction, but a column scaled to integers by its common denominator has entries of about
    2(k + m)·3.3·digits bits. With ``singular`` two columns of A are equal and so are two rows of the minor."""
    rng = random.Random(5)
    base = rng.randrange(10 ** (digits - 1), 10 ** digits) | 1  # base + 2t: odd, pairwise nearly coprime
    N, Q = [base + 2 * q for q in range(m)], [base + 2 * (m + j) for j in range(k)]
    small = lambda: rng.choice([-1, 1]) * rng.randrange(1, 1000)  # noqa: E731
    A = [[f"{small()}/{N[q]}" for q in range(m)] for _ in range(n)]
    rows = rng.sample([r for r in range(k * m) if r not in (0, 1)], n - 2)
    if singular:
        for row in A:
            row[1] = row[0]
        rows = [0] + rows + [1]
    else:
        rows = rng.sample(range(k * m), n)
    params = {"M": [[f"{small()}/{Q[j]}" for _ in range(n)] for j in range(k)], "A": A, "b": ["0"] * n,
              "c": ["0"] * k, "shape": {"m": m, "n": n, "k": k}}
    doc = {"format": "certsym-certificate", "version": 1, "kind": "identifiable",
           "claim": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit", "field": {"type": "QQ"},
           "inputs": [{"name": "p", "sha256": "0" * 64, "atoms": [], "parameters": params}],
           "proof": {"nonzero_v": [0] * n, "nonzero_a": [0] * n, "statement": "Theorem 1",
                     "zero_factor": {"rows": rows, "pivots": list(range(n)), "free": [], "R": [[] for _ in range(n)]}}}
    path.write_text(json.dumps(doc))


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
    resource.setrlimit(resource.RLIMIT_CPU, (60, 65))


@pytest.mark.parametrize("singular", [False, True])
def test_long_shared_denominators_are_not_multiplied_out(tmp_path, singular) -> None:
    """Red-team regression: the minor used to be formed as integers (each column times its common denominator),
    products of about 2·10^5 bits each, uncharged: gigabytes from a certificate of a few MB. Its entries are now
    mapped to F_P one by one."""
    path = tmp_path / "c.json"
    _shared_denominator_certificate(path, n=120, k=12, m=12, digits=3000, singular=singular)
    done = subprocess.run([sys.executable, "-m", "certsym_check", "--quiet", str(path)], capture_output=True,
                          text=True, preexec_fn=_limits, timeout=120)
    assert done.returncode == (1 if singular else 0), done.stdout + done.stderr[-300:]
    # singular: the exact path's integers are charged before they are formed, and exceed the work budget
    assert ("INVALID (identifiable): numbers brought to integers" if singular else "VALID identifiable") in done.stdout


def test_a_singular_minor_is_eliminated_once(tmp_path) -> None:
    """Red-team regression: a minor singular modulo P was eliminated twice (packed, then again on the way to the
    exact path) before the size check refused it; now one packed pass, then the refusal."""
    n = 200
    rng = np.random.default_rng(2)
    A = rng.integers(1, 10, (n, n)) * rng.choice([-1, 1], (n, n))  # no zero entry: the named ones are a_i[0]
    A[:, 1] = A[:, 0]  # two equal rows (0, 0) and (0, 1) of W
    theta = Network.build([rng.integers(1, 9, n).tolist()], A.tolist(), [0] * n, [0])
    rows = [0] + list(range(2, n)) + [1]
    params = {"M": [[str(x) for x in theta.M[0]]], "A": [[str(x) for x in r] for r in theta.A],
              "b": ["0"] * n, "c": ["0"], "shape": {"m": n, "n": n, "k": 1}}
    forged = {"format": "certsym-certificate", "version": 1, "kind": "identifiable",
              "claim": "the fibre of theta1 in Omega(m,n,k) is exactly its H_n-orbit", "field": {"type": "QQ"},
              "inputs": [{"name": "p", "sha256": "0" * 64, "atoms": [], "parameters": params}],
              "proof": {"nonzero_v": [0] * n, "nonzero_a": [0] * n, "statement": "Theorem 1",
                        "zero_factor": {"rows": rows, "pivots": list(range(n)), "free": [],
                                        "R": [[] for _ in range(n)]}}}
    calls = []
    original = B.nonsingular_mod_prime
    B.nonsingular_mod_prime = lambda M: calls.append(len(M)) or original(M)
    try:
        result = check_certificate(forged)
    finally:
        B.nonsingular_mod_prime = original
    assert not result.valid and "too large (200 > 120)" in result.reason and calls == [200]


def test_a_denominator_divisible_by_p_leaves_the_rank_to_exact_elimination() -> None:
    theta = Network.build([[1, 2, 3]], [[fmpq(1, P), 0], [0, 1], [1, 1]], [0, 0, 1], [0])  # km = 2 < n = 3
    assert independent_minor(theta) is None
    theta = Network.build([[1, 2], [3, 5]], [[fmpq(1, P), 0], [0, 1]], [0, 0], [0, 0])
    assert independent_minor(theta) is None
    verdict = decide_identifiable(theta)
    assert verdict.identifiable and check_certificate(identifiability_certificate(verdict, RECORD)).valid

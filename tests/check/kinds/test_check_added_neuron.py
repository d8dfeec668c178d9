"""Red-team review of the ``added_neuron`` replay (``checker/certsym_check/added_neuron.py`` on top of
``checker/certsym_check/landscape.py``).

The claims: (split) row i of W* split in the ratio λ : 1 − λ is a critical point of F on M(k + 1, k) with at least
q negative Hessian eigenvalues (and, with ``base_inertia``, exactly k − 1 + m negative, 1 zero, k² − m positive);
(zero) W* with a zero neuron added in the direction û has g(û) < 0, so it is not a local minimum.

Holes found (each test asserts the fixed behaviour and fails today; nothing is marked xfail):
- hangs: the split replay costs O(n² k q²) jet operations when every row is moved (O(n k q²) when only the two
  copies are), and the bounds allow k = 64, q = 2k = 128: a few MB of small integers keep the checker busy for
  hours (``test_hang_*``). Even a certificate of the producer's own shape at k = 40 (within the producer's
  MAX_K) takes minutes to replay.
- crashes: a slope bound, or the critical point's loss bound, outside the range of a float (OverflowError), or a
  loss bound of more than 4300 digits (ValueError), passes the check and then crashes the fact formatting: a true
  claim ends as "malformed certificate (...)", not as a clean verdict.
- laxity: the zero embedding {"zero": 1} is taken for {"zero": true}; a slope interval [−1, 1] is accepted and
  reported as "g(û) in [-1, 1] < 0".
The other tests are attacks that are refused today (kept for coverage), and checks that the checker's q × q form
is the true Hessian form (a reference Hessian from ``kernel``, with the exactly parallel pair given its limit
blocks), also for directions that move the two copies in non-antiparallel ways and for λ ≠ 1/2.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import HANG_GUARD, cpu_budget, out_of_cpu

import certsym
import certsym_check as C
from certsym.certify import added_neuron_certificates
from certsym.certify.landscape import box_json as _box_json
from certsym.landscape import kernel, restricted
from certsym.landscape.added_neuron import study
from certsym.landscape.certify import critical
from certsym_check.envelope import CLAIMS

REPO = Path(certsym.__file__).resolve().parent.parent
PATIENCE = 10.0  # seconds of its own CPU time: a replay that needs more is a hang
K = 6  # the one-misfit point used for most attacks


# ------------------------------------------------------------------------------------------------ builders


def _q(x: Fraction) -> str:
    x = Fraction(x)
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _dyadic(x: float) -> Fraction:
    return Fraction(round(float(x) * 2**24), 2**24)


def _split_doc(box: dict, row: int, lam: str, dirs: list, negative: int | None = None) -> dict:
    return {"format": "certsym-certificate", "version": 1, "kind": "added_neuron", "claim": CLAIMS["added_neuron"],
            "field": {"type": "QQ"}, "inputs": [], "proof": {
                "critical_point": box, "embedding": {"split": row, "lambda": lam},
                "directions": [[[x if isinstance(x, str) else _q(x) for x in r] for r in U] for U in dirs],
                "negative": len(dirs) if negative is None else negative,
                "statement": "positive homogeneity and Courant-Fischer"}}


def _W(name: str, k: int) -> np.ndarray:
    c = critical(name, k)
    return restricted.expand(c.box.layout, [float(x) for x in c.box.center])


def _reference_hessian(W: np.ndarray, row: int, lam: float) -> np.ndarray:
    """∇²F(W_λ) from ``kernel``'s closed forms, the exactly parallel pair (row, k) given its limit blocks
    (∇²_ww κ = 0, ∇²_wv κ = I/2; ``kernel.hessian`` there divides float noise by sin θ ≈ 1e-8)."""
    k = W.shape[1]
    Wl = np.vstack([W, (1 - lam) * W[row]])
    Wl[row] = lam * W[row]
    n = k + 1
    parallel = {(row, k), (k, row)}
    H = np.zeros((n * k, n * k))
    for a, w in enumerate(Wl):
        block = 0.5 * np.eye(k)
        block += sum(kernel.hess_ww(w, u) for b, u in enumerate(Wl) if b != a and (a, b) not in parallel)
        block -= sum(kernel.hess_ww(w, e) for e in np.eye(k))
        H[a * k:(a + 1) * k, a * k:(a + 1) * k] = block
        for b, u in enumerate(Wl):
            if b != a:
                H[a * k:(a + 1) * k, b * k:(b + 1) * k] = (np.eye(k) / 2 if (a, b) in parallel
                                                           else kernel.hess_wv(w, u))
    return H


def _antisymmetric_negative(W: np.ndarray, row: int) -> list[np.ndarray]:
    """What the producer certifies (``split_directions``, without its full numerical Hessian): at λ = 1/2 the
    eigenvectors y with negative eigenvalue of the Hessian on the directions (y, −y) on the two copies,
    M = 2A − I with A = I/2 + Σ_{j≠row} ∇²_ww κ(w/2, w_j) − Σ_c ∇²_ww κ(w/2, e_c) (the copies' own pair: 0 and I/2)."""
    k = W.shape[1]
    w = W[row] / 2
    A = 0.5 * np.eye(k) + sum(kernel.hess_ww(w, W[j]) for j in range(k) if j != row)
    A = A - sum(kernel.hess_ww(w, e) for e in np.eye(k))
    values, vectors = np.linalg.eigh(A + A.T - np.eye(k))
    return [vectors[:, j] for j in range(k) if values[j] < -1e-8]


def _form(H: np.ndarray, dirs: list) -> np.ndarray:
    U = np.array([np.array([[float(x) for x in r] for r in D]).reshape(-1) for D in dirs])
    return U @ H @ U.T


def _mutated(doc: dict, edit) -> dict:
    out = copy.deepcopy(doc)
    edit(out["proof"])
    return out


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def certs() -> dict:
    """The producer's certificates for one-misfit at k = 6 (a local minimum, m = 0) and two-misfit at k = 5 (a
    saddle with m = 5 negative eigenvalues)."""
    out = {}
    for name, k in (("one-misfit", K), ("two-misfit", 5)):
        docs = added_neuron_certificates(study(name, k, descend=False))
        splits = [d for d in docs if "directions" in d["proof"]]
        zero = next(d for d in docs if "direction" in d["proof"])
        out[name] = (splits, zero)
    return out


@pytest.fixture(scope="module")
def split0(certs) -> dict:
    """One-misfit k = 6, row 0 split in halves, 5 certified directions, without the (slow) base inertia."""
    doc = copy.deepcopy(certs["one-misfit"][0][0])
    doc["proof"].pop("base_inertia", None)
    return doc


@pytest.fixture(scope="module")
def zero(certs) -> dict:
    return certs["one-misfit"][1]


def _hang_certificates() -> dict:
    """Certificates whose replay should end within PATIENCE: a valid k = 64 box (negative-diagonal, k within
    MAX_K = 64) with q = 2k directions, and the producer's own split at k = 40."""
    rng = np.random.default_rng(0)
    k = 64
    box = _box_json(critical("negative-diagonal", k))
    dense = [rng.integers(-3, 4, size=(k + 1, k)).tolist() for _ in range(2 * k)]
    pairs = []
    for _ in range(2 * k):
        U = np.zeros((k + 1, k), dtype=int)
        y = rng.integers(-3, 4, size=k)
        U[0], U[k] = y, -y
        pairs.append(U.tolist())
    few = [rng.integers(-3, 4, size=(k + 1, k)).tolist() for _ in range(4)]
    k40 = 40
    producer = []
    for y in _antisymmetric_negative(_W("negative-diagonal", k40), 0):
        U = [[Fraction(0)] * k40 for _ in range(k40 + 1)]
        U[0] = [_dyadic(v) for v in y]
        U[k40] = [-v for v in U[0]]
        producer.append(U)
    return {"dense": _split_doc(box, 0, "1/2", [[[str(x) for x in r] for r in U] for U in dense]),
            "pairs": _split_doc(box, 0, "1/2", [[[str(x) for x in r] for r in U] for U in pairs]),
            "few": _split_doc(box, 0, "1/2", [[[str(x) for x in r] for r in U] for U in few]),
            "producer_k40": _split_doc(_box_json(critical("negative-diagonal", k40)), 0, "1/2", producer)}



@pytest.fixture(scope="module")
def hangs(tmp_path_factory) -> dict:
    """Replay every hang certificate in its own subprocess, all started together (4 GB each), each given PATIENCE
    seconds of its own CPU time (other processes on a busy machine do not use it up). Returns name -> (finished,
    PATIENCE, return code, output)."""
    folder = tmp_path_factory.mktemp("added_neuron_hangs")
    procs = {}
    for name, doc in _hang_certificates().items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(doc))
        procs[name] = subprocess.Popen([sys.executable, "-m", "certsym_check", str(path)], cwd=REPO,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       preexec_fn=cpu_budget(PATIENCE))
    out = {}
    for name, proc in procs.items():
        try:
            text, _ = proc.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            proc.kill()
            text, _ = proc.communicate()
        finished = proc.returncode is not None and proc.returncode >= 0 and not out_of_cpu(proc.returncode)
        out[name] = (finished, PATIENCE, proc.returncode, text)
    return out


# ------------------------------------------------------------------------------------------------ valid


def test_producer_certificates_are_accepted(certs) -> None:
    splits, zero = certs["one-misfit"]
    assert len(splits) == 2
    for doc in [*splits, zero]:
        rep = C.check(doc)
        assert rep, rep.reason
        if doc in splits:
            assert any("5 negative, 1 zero, 36 positive" in f for f in rep.facts)
        else:  # the zero neuron
            assert any("g(û) in" in f and "not a local minimum" in f for f in rep.facts), rep.facts


def test_exact_inertia_over_a_saddle_matches_the_reference_hessian(certs) -> None:
    """two-misfit at k = 5 has m = 5: the split's inertia is (k − 1 + m, 1, k² − m) = (9, 1, 20)."""
    doc = certs["two-misfit"][0][0]
    rep = C.check(doc)
    assert rep, rep.reason
    assert any("9 negative, 1 zero, 20 positive" in f for f in rep.facts)
    ev = np.linalg.eigvalsh(_reference_hessian(_W("two-misfit", 5), doc["proof"]["embedding"]["split"], 0.5))
    assert ((ev < -1e-9).sum(), (abs(ev) <= 1e-9).sum(), (ev > 1e-9).sum()) == (9, 1, 20)


def _spy(monkeypatch) -> dict:
    from certsym_check.kinds import added_neuron

    seen = {}
    original = added_neuron.negative_count

    def spy(H, Q):
        seen["H"] = np.array([[float(x.mid) for x in r] for r in H])
        return original(H, Q)

    monkeypatch.setattr(added_neuron, "negative_count", spy)
    return seen


@pytest.mark.parametrize("lam", ["1/2", "1/3", "999/1000"])
@pytest.mark.parametrize("kind", ["dense", "copy_i_only", "new_copy_only", "same_way", "antiparallel"])
def test_checker_form_is_the_true_hessian_form(monkeypatch, split0, lam, kind) -> None:
    """The pair of copies contributes the jet of w·v/2 for any directions (the O(θ³) remainder), not only for
    (y, −y): the checker's q × q form agrees with the reference Hessian."""
    rng = np.random.default_rng(len(kind) + len(lam))
    k, row = K, 0
    dirs = []
    for _ in range(3):
        U = np.zeros((k + 1, k))
        y = rng.normal(size=k)
        if kind == "dense":
            U = rng.normal(size=(k + 1, k))
        elif kind == "copy_i_only":
            U[row] = y
        elif kind == "new_copy_only":
            U[k] = y
        elif kind == "same_way":
            U[row], U[k] = y, y
        else:
            U[row], U[k] = y, -y
        dirs.append([[_dyadic(v) for v in r] for r in U])
    seen = _spy(monkeypatch)
    C.check(_split_doc(split0["proof"]["critical_point"], row, lam, dirs))
    reference = _form(_reference_hessian(_W("one-misfit", k), row, float(Fraction(lam))), dirs)
    assert np.abs(seen["H"] - reference).max() <= 1e-9 * max(1.0, np.abs(reference).max())


def test_negative_eigenspace_at_lambda_one_third_is_accepted_and_not_one_more(split0) -> None:
    """At λ = 1/3 the reference Hessian has m_- negative eigenvalues and a zero one (the split segment): its
    negative eigenvectors are certified; adding the null vector (claiming m_- + 1) is refused."""
    k, row = K, 0
    H = _reference_hessian(_W("one-misfit", k), row, 1 / 3)
    values, vectors = np.linalg.eigh(H)
    negative = [vectors[:, j] for j in range(len(values)) if values[j] < -1e-6]
    null = [vectors[:, j] for j in range(len(values)) if abs(values[j]) < 1e-9]
    assert len(null) == 1 and len(negative) == 5

    def mat(v):
        return [[_dyadic(x) for x in v[r * k:(r + 1) * k]] for r in range(k + 1)]

    box = split0["proof"]["critical_point"]
    assert C.check(_split_doc(box, row, "1/3", [mat(v) for v in negative]))
    assert not C.check(_split_doc(box, row, "1/3", [mat(v) for v in negative + null]))


# ------------------------------------------------------------------------------------------------ holes: hangs


def _assert_prompt(hangs: dict, name: str, invalid: bool) -> None:
    finished, seconds, code, text = hangs[name]
    assert finished, f"{name}: the replay was still running after {seconds:.1f} s of CPU (return code {code})"
    if invalid:
        assert code == 1 and "INVALID" in text, text[-400:]
    else:  # a true claim: VALID, or a clean refusal (a stated limit), never a crash
        assert (code == 0 and "VALID" in text) or (code == 1 and "INVALID" in text), text[-400:]
        assert "malformed certificate" not in text and "Traceback" not in text, text[-400:]


def test_hang_k64_with_2k_dense_directions(hangs) -> None:
    """k = 64 ≤ MAX_K, q = 2k = 128 directions of small integers moving every row (2.9 MB): O(n² k q²) jet work,
    hours of replay (not negative definite: should be refused, and promptly)."""
    _assert_prompt(hangs, "dense", invalid=True)


def test_hang_k64_with_2k_directions_on_the_copies_only(hangs) -> None:
    """The producer's shape (y, −y) on the two copies only, q = 128 > k (so linearly dependent): still O(n k q²)
    with 320-bit intervals, about 40 minutes."""
    _assert_prompt(hangs, "pairs", invalid=True)


def test_hang_k64_with_four_dense_directions(hangs) -> None:
    """Only 4 directions (66 KB) moving every row at k = 64: about 30 s."""
    _assert_prompt(hangs, "few", invalid=True)


def test_hang_producer_split_at_k40(hangs) -> None:
    """The producer's own split certificate at k = 40 (its MAX_K), 39 directions: about 130 s to replay."""
    _assert_prompt(hangs, "producer_k40", invalid=False)


# ------------------------------------------------------------------------------------------------ holes: crashes


def _clean(rep) -> bool:
    return bool(rep) or not rep.reason.startswith("malformed certificate")


def test_zero_slope_bound_beyond_float_range_is_not_a_crash(zero) -> None:
    """g(û) ∈ [−(10^399 − 1), hi] is true; the fact line's float() raises OverflowError."""
    rep = C.check(_mutated(zero, lambda p: p["slope"].__setitem__(0, "-" + "9" * 399)))
    assert _clean(rep), rep.reason


def test_critical_point_loss_bound_beyond_float_range_is_not_a_crash(zero) -> None:
    """The loss interval [−10^400, 10^400] contains the enclosure; check_box's fact raises OverflowError."""
    rep = C.check(_mutated(zero, lambda p: p["critical_point"].__setitem__("loss", ["-" + "9" * 400, "9" * 400])))
    assert _clean(rep), rep.reason


def test_critical_point_loss_bound_with_5000_digits_is_not_a_crash(zero) -> None:
    """hi = (10^5000 + 1)/10^5000 ≈ 1 is a true upper bound; str() of it hits Python's 4300-digit limit
    (ValueError)."""
    hi = "1" + "0" * 4999 + "1/1" + "0" * 5000
    rep = C.check(_mutated(zero, lambda p: p["critical_point"]["loss"].__setitem__(1, hi)))
    assert _clean(rep), rep.reason


# ------------------------------------------------------------------------------------------------ holes: laxity


@pytest.mark.parametrize("value", [1, 1.0])
def test_zero_embedding_must_be_literally_true(zero, value) -> None:
    """FORMAT.md: "embedding": {"zero": true}; 1 == True in Python, so {"zero": 1} passes the comparison."""
    assert not C.check(_mutated(zero, lambda p: p.__setitem__("embedding", {"zero": value})))


def test_zero_fact_does_not_call_a_nonnegative_interval_negative(zero) -> None:
    """slope [−1, 1] contains g(û), but the report then says "g(û) in [-1, 1] < 0"."""
    rep = C.check(_mutated(zero, lambda p: p.__setitem__("slope", ["-1", "1"])))
    assert not rep or not any("[-1, 1] < 0" in f for f in rep.facts)


# ------------------------------------------------------------------------------------------------ refused today


def _tangent_like(k: int, row: int) -> list:
    """(w_i, −w_i) rounded to 2^-24: the split segment's tangent, a zero eigenvalue."""
    w = _W("one-misfit", k)[row]
    U = [[Fraction(0)] * k for _ in range(k + 1)]
    U[row] = [_dyadic(v) for v in w]
    U[k] = [-v for v in U[row]]
    return U


SPLIT_MUTANTS = {
    "lambda 0": lambda p: p["embedding"].__setitem__("lambda", "0"),
    "lambda 1": lambda p: p["embedding"].__setitem__("lambda", "1"),
    "lambda -1/2": lambda p: p["embedding"].__setitem__("lambda", "-1/2"),
    "lambda 3/2": lambda p: p["embedding"].__setitem__("lambda", "3/2"),
    "lambda 1/0": lambda p: p["embedding"].__setitem__("lambda", "1/0"),
    "lambda float": lambda p: p["embedding"].__setitem__("lambda", 0.5),
    "lambda 401 chars": lambda p: p["embedding"].__setitem__("lambda", "1/" + "9" * 399),
    "split -1": lambda p: p["embedding"].__setitem__("split", -1),
    "split k": lambda p: p["embedding"].__setitem__("split", K),
    "split True": lambda p: p["embedding"].__setitem__("split", True),
    "split '0'": lambda p: p["embedding"].__setitem__("split", "0"),
    "negative 0": lambda p: p.__setitem__("negative", 0),
    "negative 2k+1": lambda p: p.__setitem__("negative", 2 * K + 1),
    "negative True": lambda p: p.__setitem__("negative", True),
    "negative q+1": lambda p: p.__setitem__("negative", len(p["directions"]) + 1),
    "directions zero": lambda p: p.__setitem__("directions", [[["0"] * K for _ in range(K + 1)]] * 5),
    "directions duplicated": lambda p: p.__setitem__("directions", [p["directions"][0]] * 5),
    "directions k rows": lambda p: p.__setitem__("directions", [U[:K] for U in p["directions"]]),
    "directions same way": lambda p: p.__setitem__("directions", [U[:K] + [U[0]] for U in p["directions"]]),
    "directions 401 chars": lambda p: p["directions"][0][0].__setitem__(0, "9" * 401),
    "plus the segment tangent": lambda p: (p["directions"].append(
        [[_q(x) for x in r] for r in _tangent_like(K, 0)]), p.__setitem__("negative", 6)),
    "embedding zero": lambda p: p.__setitem__("embedding", {"zero": True}),
    "embedding extra key": lambda p: p["embedding"].__setitem__("zero", True),
    "proof extra key": lambda p: p.__setitem__("slope", ["-1", "0"]),
    "statement": lambda p: p.__setitem__("statement", "positive homogeneity"),
    "base inertia of another point": lambda p: p.__setitem__("base_inertia", {"critical_point": {}, "irreps": [],
                                                                             "probes": [], "negative": 0,
                                                                             "statement": "x"}),
}


@pytest.mark.parametrize("name", sorted(SPLIT_MUTANTS))
def test_split_mutant_is_refused(split0, name) -> None:
    rep = C.check(_mutated(split0, SPLIT_MUTANTS[name]))
    assert not rep
    assert not rep.reason.startswith("malformed certificate"), rep.reason


ZERO_MUTANTS = {
    "direction zero": lambda p: p.__setitem__("direction", ["0"] * K),
    "direction e_1 (parallel to a teacher)": lambda p: p.__setitem__("direction", ["1"] + ["0"] * (K - 1)),
    "direction -u (g > 0)": lambda p: p.__setitem__("direction", [_q(-Fraction(x)) for x in p["direction"]]),
    "direction short": lambda p: p.__setitem__("direction", p["direction"][:-1]),
    "slope reversed": lambda p: p.__setitem__("slope", p["slope"][::-1]),
    "slope excludes g": lambda p: p.__setitem__("slope", ["-1/1000", "0"]),
    "slope [0, 1]": lambda p: p.__setitem__("slope", ["0", "1"]),
    "embedding false": lambda p: p.__setitem__("embedding", {"zero": False}),
    "embedding split": lambda p: p.__setitem__("embedding", {"split": 0, "lambda": "1/2"}),
    "base inertia": lambda p: p.__setitem__("base_inertia", {}),
    "statement": lambda p: p.__setitem__("statement", "positive homogeneity and Courant-Fischer"),
}


@pytest.mark.parametrize("name", sorted(ZERO_MUTANTS))
def test_zero_mutant_is_refused(zero, name) -> None:
    rep = C.check(_mutated(zero, ZERO_MUTANTS[name]))
    assert not rep
    assert not rep.reason.startswith("malformed certificate"), rep.reason


def test_base_inertia_needs_half_and_directions_on_the_copies(certs) -> None:
    """The exact inertia is refused for λ ≠ 1/2, for a direction moving a third row, and for a hessian_inertia
    proof of another point."""
    doc = certs["two-misfit"][0][0]
    assert "base_inertia" in doc["proof"]
    other = certs["one-misfit"][0][0]["proof"]["base_inertia"]
    for edit in (lambda p: p["embedding"].__setitem__("lambda", "1/3"),
                 lambda p: p["directions"][0][2].__setitem__(1, "1/1024"),
                 lambda p: p.__setitem__("base_inertia", other)):
        rep = C.check(_mutated(doc, edit))
        assert not rep and not rep.reason.startswith("malformed certificate"), rep.reason

"""The fast exact path (certsym.decide.dyadic) agrees with the general path: same verdicts, same certificates."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord
from certsym.certify import equivalence_proof as _equivalence_proof
from certsym.decide import dyadic
from certsym.decide.dyadic import PLANE_NONZEROS, DyadicNetwork, reduce
from certsym.decide.dyadic import decide as fast_decide
from certsym.decide.equivalence import decide as general_decide
from certsym.io.sources import Model
from certsym.numbers import QQ
from certsym.numbers import rational_from_float as exact_float
from certsym.workflows.audit import canonical_proposal, fast_proposal


def _variant(rng: np.random.Generator, W1, b1, W2, b2, how: str):
    """A float32 network built from (W1, b1, W2, b2) by a function-preserving or a function-changing edit."""
    n = len(b1)
    perm = rng.permutation(n)
    scale = (2.0 ** rng.integers(-3, 4, size=n)).astype(np.float32)  # powers of two: exact in float32
    W1, b1, W2 = W1[perm] * scale[:, None], b1[perm] * scale, W2[:, perm] / scale
    if how == "dead":
        W1, b1 = np.vstack([W1, rng.standard_normal(W1.shape[1])]), np.append(b1, 1)
        W2 = np.hstack([W2, np.zeros((W2.shape[0], 1))])
    elif how == "split":  # one unit split in two halves along the same ray: a merge
        W1, b1 = np.vstack([W1, 2 * W1[:1]]), np.append(b1, 2 * b1[0])
        W2 = np.hstack([W2, W2[:, :1] / 4])
        W2[:, 0] = W2[:, 0] / 2
    elif how == "nudge":
        W1 = W1.copy()
        i, q = rng.integers(0, W1.shape[0]), rng.integers(0, W1.shape[1])
        W1[i, q] = np.nextafter(np.float32(W1[i, q]), np.float32(np.inf))
    return tuple(np.asarray(t, dtype=np.float32) for t in (W1, b1, W2, b2))


def _with_pairs(rng: np.random.Generator, t1: tuple, t2: tuple) -> tuple[tuple, tuple]:
    """Three rows with r1 + r2 + r3 = 0 and one output weight w: θ1 gains σ(r_i·(x,1)) w and θ2 gains
    σ(−r_i·(x,1)) w, so ρ1 − ρ2 gains Σ w r_i·(x,1) = 0 through three antisymmetric pairs."""
    m, k = t1[0].shape[1], t1[2].shape[0]
    r = rng.integers(-3, 4, size=(2, m + 1)).astype(np.float32)
    r = np.vstack([r, -r.sum(axis=0)])
    w = rng.integers(1, 3, size=(k, 1)).astype(np.float32)

    def extend(t, rows):
        W1, b1, W2, b2 = t
        return (np.vstack([W1, rows[:, :-1]]), np.append(b1, rows[:, -1]), np.hstack([W2, np.repeat(w, 3, 1)]), b2)

    return extend(t1, r), extend(t2, -r)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["same", "dead", "split", "split both", "nudge"]),
       st.integers(1, 4), st.integers(0, 6), st.integers(1, 3), st.booleans(), st.booleans())
def test_fast_path_agrees_with_general_path(seed: int, how: str, m: int, n: int, k: int, small: bool,
                                            pairs: bool) -> None:
    _agree(seed, how, m, n, k, small, pairs)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["same", "split", "split both", "nudge"]), st.integers(1, 4),
       st.integers(2, 9), st.booleans(), st.sampled_from([1, 8, 20]))
def test_fast_path_agrees_in_blocks_of_few_rows(seed: int, how: str, m: int, n: int, small: bool,
                                                block: int) -> None:
    """The proportionality test in blocks of one row and up (``_BLOCK_BYTES`` shrunk), as wide rows make them."""
    with patch.object(dyadic, "_BLOCK_BYTES", block):
        _agree(seed, how, m, n, 2, small, False)


def _agree(seed: int, how: str, m: int, n: int, k: int, small: bool, pairs: bool) -> None:
    rng = np.random.default_rng(seed)
    gen = (lambda *s: rng.integers(-2, 3, size=s)) if small else (lambda *s: rng.standard_normal(s))
    base = tuple(np.asarray(gen(*s), dtype=np.float32) for s in ((n, m), (n,), (k, n), (k,)))
    if how == "split both" and n:  # merged neurons on both sides: exact v against exact v
        base = _variant(rng, *base, "split")
    other = _variant(rng, *base, how.removesuffix(" both")) if n else base
    if pairs:
        base, other = _with_pairs(rng, base, other)
    t1, t2 = DyadicNetwork.from_arrays(*base), DyadicNetwork.from_arrays(*other)
    fast = fast_decide(t1, t2)
    general = general_decide(t1.to_network(), t2.to_network())
    assert fast.equivalent == general.equivalent
    assert general.equivalent or how == "nudge"  # the other edits keep the function: the branch below is taken
    assert [s.__dict__ for s in fast.red1.steps] == [s.__dict__ for s in general.red1.steps]
    assert [s.__dict__ for s in fast.red2.steps] == [s.__dict__ for s in general.red2.steps]
    if general.equivalent:
        assert _equivalence_proof(fast, QQ) == _equivalence_proof(general)


def test_fast_path_refuses_wide_floats() -> None:
    W = np.array([[0.1]])  # float64 0.1 has 53 significant bits
    assert DyadicNetwork.from_arrays(W, np.zeros(1), W, np.zeros(1)) is None
    assert DyadicNetwork.from_arrays(W.astype(np.float32), np.zeros(1), W.astype(np.float32), np.zeros(1)) is not None
    with pytest.raises(AssertionError):
        assert DyadicNetwork.from_arrays(np.array([[np.inf]]), np.zeros(1), W, np.zeros(1)) is not None


# -- certificates that reference their model files by SHA-256 -------------------------------------------------------
def _pair_files(tmp_path, fmt: str = "npz", fortran: bool = False, dtype=np.float32):
    rng = np.random.default_rng(7)
    base = tuple(np.asarray(rng.standard_normal(s), dtype=np.float32) for s in ((6, 3), (6,), (2, 6), (2,)))
    other = _variant(rng, *base, "dead")
    base, other = (tuple(t.astype(dtype) for t in net) for net in (base, other))  # float64 holding narrow values
    paths = []
    for name, t in (("a", base), ("b", other)):
        tensors = dict(zip(("0.weight", "0.bias", "2.weight", "2.bias"), t, strict=True))
        if fortran:
            tensors["0.weight"] = np.asfortranarray(tensors["0.weight"])
        if fmt == "npz":
            np.savez(tmp_path / f"{name}.npz", **tensors)
        else:
            import safetensors.numpy  # in the test extra: a missing install fails here, it is not skipped

            safetensors.numpy.save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
                                        str(tmp_path / f"{name}.{fmt}"))
        paths.append(tmp_path / f"{name}.{fmt}")
    return paths


@pytest.mark.parametrize("fmt,fortran,dtype", [("npz", False, np.float32), ("npz", True, np.float32),
                                               ("npz", False, np.float16), ("npz", False, np.float64),
                                               ("safetensors", False, np.float32)])
def test_referenced_certificate_replays_only_with_its_files(tmp_path, capsys, fmt, fortran, dtype) -> None:
    import json

    from certsym.cli import main
    from certsym_check import check_certificate

    a, b = _pair_files(tmp_path, fmt, fortran, dtype)
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(a), str(b), "--reference", "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    assert len(doc["inputs"]) == 2
    assert all("parameters" not in r and r["shape"]["m"] == 3 for r in doc["inputs"])
    files = [a.read_bytes(), b.read_bytes()]
    assert check_certificate(doc, files).valid
    assert "--inputs" in check_certificate(doc).reason
    assert "SHA-256" in check_certificate(doc, files[::-1]).reason
    columns = doc["proof"]["matching"]  # the fast path writes the matching in columns
    assert set(columns) == {"theta1", "theta2", "scale", "statement"} and len(columns["theta1"]) >= 2
    broken = json.loads(cert.read_text())
    broken["proof"]["matching"]["scale"][0] = "3"
    assert not check_certificate(broken, files).valid
    broken = json.loads(cert.read_text())
    theta2 = broken["proof"]["matching"]["theta2"]
    theta2[0], theta2[1] = theta2[1], theta2[0]
    assert not check_certificate(broken, files).valid
    for name in ("theta1", "theta2", "scale"):  # the columns must have one length
        broken = json.loads(cert.read_text())
        broken["proof"]["matching"][name].pop()
        report = check_certificate(broken, files)
        assert not report.valid and "length" in report.reason, name
    broken = json.loads(cert.read_text())
    broken["proof"]["matching"]["statement"] = "merge lemma"
    assert not check_certificate(broken, files).valid
    broken = json.loads(cert.read_text())
    broken["proof"]["matching"]["extra"] = []
    assert "unknown keys" in check_certificate(broken, files).reason
    broken = json.loads(cert.read_text())
    broken["inputs"][1]["shape"]["n"] -= 1
    assert not check_certificate(broken, files).valid
    broken = json.loads(cert.read_text())
    broken["kind"], broken["claim"] = "not_equivalent", "rho(theta1) != rho(theta2)"
    assert not check_certificate(broken, files).valid
    # the same networks through the general path embed the parameters; the proofs are identical
    general = tmp_path / "general.json"
    assert main(["equiv", str(a), str(b), "--path", "general", "--cert", str(general)]) == 0
    records = [{"theta1": i, "theta2": j, "scale": lam, "statement": columns["statement"]}
               for i, j, lam in zip(columns["theta1"], columns["theta2"], columns["scale"], strict=True)]
    assert json.loads(general.read_text())["proof"] == {**doc["proof"], "matching": records}
    as_records = {**doc, "proof": {**doc["proof"], "matching": records}}  # the two forms say the same
    assert check_certificate(as_records, files).valid
    capsys.readouterr()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 6), st.integers(1, 3), st.booleans(),
       st.sampled_from(["nudge", "constant", "linear"]))
@example(103710, 2, 5, 1, False, "nudge")  # moving x0 along one coordinate used to put another hyperplane on it
def test_fast_witness_is_a_point_where_the_networks_differ(seed: int, m: int, n: int, k: int, bias_free: bool,
                                                           how: str) -> None:
    from certsym.decide.dyadic import witness

    rng = np.random.default_rng(seed)
    base = [np.asarray(rng.integers(-2, 3, size=s), dtype=np.float32) for s in ((n, m), (n,), (k, n), (k,))]
    if bias_free:
        base[1][:] = 0  # every hyperplane through the origin: the witness needs more than one coordinate
    other = [t.copy() for t in base]
    if how == "nudge":
        other[0][0, 0] = np.nextafter(other[0][0, 0], np.float32(np.inf))
    elif how == "constant":
        other[3][0] += np.float32(0.5)
    else:  # the same kinks, a different linear part: σ(z) − σ(−z) = z added to θ2 only
        a = rng.integers(1, 3, size=m).astype(np.float32)
        other[0] = np.vstack([other[0], a, -a])
        other[1] = np.append(other[1], [0, 0]).astype(np.float32)
        other[2] = np.hstack([other[2], np.ones((k, 1), np.float32), -np.ones((k, 1), np.float32)])
    t1, t2 = DyadicNetwork.from_arrays(*base), DyadicNetwork.from_arrays(*other)
    fast = fast_decide(t1, t2)
    general = general_decide(t1.to_network(), t2.to_network())
    assert fast.equivalent == general.equivalent
    # constant and linear change the function; a nudge of W1[0, 0] keeps it exactly when unit 0 has v = 0
    assert fast.equivalent == (how == "nudge" and not base[2][:, 0].any())
    if fast.equivalent:
        return  # no witness to check: the networks are equal
    witness(t1, t2, fast)
    x = fast.witness
    assert t1.to_network().evaluate(x) == fast.values[0] and t2.to_network().evaluate(x) == fast.values[1]
    assert fast.values[0] != fast.values[1]


def test_referenced_not_equivalent_certificate(tmp_path, capsys) -> None:
    import json

    from certsym.cli import main
    from certsym_check import check_certificate

    a, b = _pair_files(tmp_path)
    tensors = dict(np.load(b))
    tensors["0.weight"][1, 2] = np.nextafter(tensors["0.weight"][1, 2], np.float32(-np.inf))
    np.savez(tmp_path / "c.npz", **tensors)
    c = tmp_path / "c.npz"
    cert = tmp_path / "cert.json"
    assert main(["equiv", str(a), str(c), "--reference", "--cert", str(cert)]) == 1
    doc = json.loads(cert.read_text())
    assert doc["kind"] == "not_equivalent" and "parameters" not in doc["inputs"][0]
    assert check_certificate(doc, [a.read_bytes(), c.read_bytes()]).valid
    assert not check_certificate(doc, [a.read_bytes(), b.read_bytes()]).valid
    doc["proof"]["values"][0][0] = doc["proof"]["values"][1][0]
    assert not check_certificate(doc, [a.read_bytes(), c.read_bytes()]).valid
    capsys.readouterr()


FLOAT32_BITS = st.integers(0, 2**32 - 1).filter(lambda u: (u >> 23) & 0xFF != 0xFF)  # finite float32 patterns


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_integer_evaluation_is_the_exact_one(data) -> None:
    """``_evaluate`` (exact sums of binary64 products, the active set by a float bound and rationals where it cannot
    decide) equals the general path's exact evaluation, over every finite float32 (subnormals, zeros, the largest)
    and rational points with few nonzero coordinates, some of them on a neuron's hyperplane (z_i = 0 exactly)."""
    from flint import fmpq

    from certsym.decide.dyadic import _evaluate

    m, n, k = data.draw(st.integers(1, 4)), data.draw(st.integers(0, 5)), data.draw(st.integers(1, 3))

    def arr(*shape: int) -> np.ndarray:
        bits = data.draw(st.lists(FLOAT32_BITS, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        return np.array(bits, dtype=np.uint32).view(np.float32).reshape(shape)

    t = DyadicNetwork(arr(n, m), arr(n), arr(k, n), arr(k))
    x = [fmpq(data.draw(st.integers(-10**6, 10**6)), data.draw(st.integers(1, 10**6)))
         if data.draw(st.booleans()) else fmpq(0) for _ in range(m)]
    if n and data.draw(st.booleans()):  # put x on neuron i's hyperplane through coordinate q
        i, q = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, m - 1))
        if t.A[i, q] != 0:
            rest = sum((exact_float(t.A[i, r]) * x[r] for r in range(m) if r != q), exact_float(t.b[i]))
            x[q] = -rest / exact_float(t.A[i, q])
    assert _evaluate(t, x) == t.to_network().evaluate(x)


def test_a_coordinate_below_binary64s_range_does_not_decide_the_active_set() -> None:
    """x_q = 10^-330 rounds to 0 in binary64: with a weight 2^127 the neuron's z is about +1.7e-292, which the float
    estimate (0) must not call inactive. Found by attacking ``_active``."""
    from flint import fmpq

    from certsym.decide.dyadic import _evaluate

    t = DyadicNetwork(np.array([[-1, 2.0**127]], np.float32), np.zeros(1, np.float32), np.ones((1, 1), np.float32),
                      np.zeros(1, np.float32))
    x = [fmpq(1, 10**300), fmpq(1, 10**330)]
    assert _evaluate(t, x) == t.to_network().evaluate(x) != [0]


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_dense_points_are_evaluated_exactly(data) -> None:
    """Points with more nonzero coordinates than the exact sums of products serve (``_SPARSE``) take the integer
    evaluation; both agree with the general path."""
    from flint import fmpq

    from certsym.decide import dyadic

    m, n, k = dyadic._SPARSE + data.draw(st.integers(1, 4)), data.draw(st.integers(0, 6)), data.draw(st.integers(1, 3))

    def arr(*shape: int) -> np.ndarray:
        bits = data.draw(st.lists(FLOAT32_BITS, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        return np.array(bits, dtype=np.uint32).view(np.float32).reshape(shape)

    t = DyadicNetwork(arr(n, m), arr(n), arr(k, n), arr(k))
    x = [fmpq(data.draw(st.integers(-10**6, 10**6).filter(bool)), data.draw(st.integers(1, 10**6))) for _ in range(m)]
    assert dyadic._evaluate(t, x) == t.to_network().evaluate(x)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_the_power_of_two_proportionality_test_is_exact(data) -> None:
    """``_Rows.proportional`` on rows r and ±2^d r (scaled in float32: values that leave its range are rounded or
    saturate, so some pairs are not proportional) or 3r rounded, tested in float32 when every ratio of the block is
    a power of two and in binary64 otherwise, in blocks of one row and up, against Fraction arithmetic."""
    from fractions import Fraction

    from certsym.decide.dyadic import _Rows

    m, pairs = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 6))
    bits = data.draw(st.lists(FLOAT32_BITS, min_size=pairs * (m + 1), max_size=pairs * (m + 1)))
    first = np.array(bits, dtype=np.uint32).view(np.float32).reshape(pairs, m + 1)
    first[:, 0] = np.where(first[:, 0] == 0, np.float32(1), first[:, 0])
    shifts = np.array(data.draw(st.lists(st.integers(-300, 300), min_size=pairs, max_size=pairs)), dtype=np.int32)
    flips = np.array(data.draw(st.lists(st.sampled_from([1, -1]), min_size=pairs, max_size=pairs)), dtype=np.float32)
    threes = np.array(data.draw(st.lists(st.booleans(), min_size=pairs, max_size=pairs)))
    with np.errstate(over="ignore", under="ignore"):
        second = np.ldexp(first, shifts[:, None]) * flips[:, None]
        # a ratio of 3 (rounded in float32: proportional or not) sends its block to the binary64 test
        second[threes] = (first[threes].astype(np.float64) * 3).astype(np.float32)
    second[~np.isfinite(second)] = np.float32(0)
    second[:, 0] = np.where(second[:, 0] == 0, np.float32(2), second[:, 0])
    rows = np.empty((2 * pairs, m + 1), dtype=np.float32)
    rows[0::2], rows[1::2] = first, second
    idx = np.arange(2 * pairs)
    R = _Rows.of(rows[:, :-1], rows[:, -1], idx, np.zeros((2 * pairs, 1), np.float32), idx)
    I, J = idx[0::2], idx[1::2]
    block = data.draw(st.sampled_from([1, 8, 40, dyadic._BLOCK_BYTES]))  # one row per block, a few, all
    for sign in (1, -1):
        with patch.object(dyadic, "_BLOCK_BYTES", block):
            got = R.proportional(I, J, sign)
        for t, (i, j) in enumerate(zip(I.tolist(), J.tolist(), strict=True)):
            li, lj = Fraction(float(R.lam[i])), Fraction(float(R.lam[j]))
            want = all(Fraction(float(y)) * li == sign * Fraction(float(x)) * lj
                       for x, y in zip(rows[i].tolist(), rows[j].tolist(), strict=True))
            assert bool(got[t]) == want


def test_hashing_a_run_of_rows_stops_at_its_end() -> None:
    """Consecutive selected rows are sliced, not gathered: the slice ends where the selection does (rows 2–4 of
    ten, and runs longer than one block), so the hashes and leading entries are those of the gathered rows."""
    from certsym.decide.dyadic import _Rows

    rng = np.random.default_rng(5)
    A = rng.standard_normal((400, 300)).astype(np.float32)
    b = rng.standard_normal(400).astype(np.float32)
    for idx in (np.arange(2, 5), np.arange(7, 390)):
        V = np.zeros((len(idx) + 1, 1), np.float32)
        run = _Rows.of(A, b, idx, V[:-1], idx)
        gapped = np.r_[idx, idx[-1] + 2]  # not consecutive: the rows are gathered
        gathered = _Rows.of(A, b, gapped, V, gapped)
        assert np.array_equal(run.plane, gathered.plane[:-1])
        assert np.array_equal(run.lam, gathered.lam[:-1])
        assert np.array_equal(run.lam, np.abs(A[idx, 0]))


def test_no_inputs_leave_the_fast_path() -> None:
    F = np.float32
    assert DyadicNetwork.from_arrays(np.ones((2, 0), F), np.ones(2, F), np.ones((1, 2), F), np.zeros(1, F)) is None


def _wide(rng: np.random.Generator, n: int, m: int, shared: int) -> tuple:
    """A float32 network of n units on m > PLANE_NONZEROS inputs: ``shared`` units agree (up to a power-of-two
    scale) on the bias and the first PLANE_NONZEROS inputs and differ further on, so they share a plane id; one row
    is sparse (fewer than PLANE_NONZEROS nonzero entries) and one has zeros among its first entries."""
    W1 = rng.integers(-3, 4, size=(n, m)).astype(np.float32)
    W1[W1 == 0] = 1
    b1 = rng.integers(-3, 4, size=n).astype(np.float32)
    for i in range(1, shared):
        d = np.float32(2.0 ** int(rng.integers(-2, 3)))
        W1[i, :PLANE_NONZEROS], b1[i] = W1[0, :PLANE_NONZEROS] * d, b1[0] * d
    W1[shared, 3:] = 0                      # sparse: every column counts
    W1[shared + 1, 2:6] = 0                 # zeros early: the cut moves past them
    W2 = rng.integers(-2, 3, size=(2, n)).astype(np.float32)
    W2[W2 == 0] = 1
    return W1, b1, W2, rng.integers(-2, 3, size=2).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9), st.sampled_from(["same", "split", "late nudge"]))
def test_rows_that_share_a_plane_id_are_decided_exactly(seed: int, shared: int, how: str) -> None:
    """Units that agree on their first PLANE_NONZEROS normalized entries share a plane id (more than _SPLIT of them:
    the bucket is cut by the full hash): the fast path still agrees with the general path, a change beyond the
    hashed columns is found, and the audit's proposal is the canonical one."""
    rng = np.random.default_rng(seed)
    n, m = shared + 4, PLANE_NONZEROS + 8
    base = _wide(rng, n, m, shared)
    other = _variant(rng, *base, "same" if how == "late nudge" else how)
    if how == "late nudge":  # a unit's entry beyond its hashed columns: another hyperplane, the same plane id
        W1 = other[0].copy()
        W1[0, -1] += np.float32(1)
        other = (W1, *other[1:])
    t1, t2 = DyadicNetwork.from_arrays(*base), DyadicNetwork.from_arrays(*other)
    rows = reduce(t1).rows
    assert len(set(rows.plane[:shared].tolist())) == 1  # the shared units collide
    parts = rows.split(list(range(shared)))
    assert len(parts) == (shared if shared > 4 else 1)  # a large bucket is cut into its exact hyperplanes
    fast = fast_decide(t1, t2)
    general = general_decide(t1.to_network(), t2.to_network())
    assert fast.equivalent == general.equivalent == (how != "late nudge")
    assert [s.__dict__ for s in fast.red1.steps] == [s.__dict__ for s in general.red1.steps]
    assert [s.__dict__ for s in fast.red2.steps] == [s.__dict__ for s in general.red2.steps]
    if general.equivalent:
        assert _equivalence_proof(fast, QQ) == _equivalence_proof(general)
    for arrays in (base, other):
        network = Model("x", InputRecord("x", ""), list(arrays)).network
        assert fast_proposal(DyadicNetwork.from_arrays(*arrays)) == canonical_proposal(network)

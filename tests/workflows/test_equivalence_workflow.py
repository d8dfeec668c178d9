"""certsym.workflows.equivalence.equivalent: the fast path (float arrays) and the general path give one verdict, with
certificates the independent checker accepts, and NOT EQUIVALENT witnesses that really separate the networks.

Pairs are float32 networks and edits of them that keep the function (permutation with power-of-two scalings, a
dead neuron, a neuron split along its ray; all exact in float32) or change it (one weight moved by one ulp, an
output bias changed). The oracle for a witness is exact evaluation with certsym.core.network on θ built here
from the arrays through fractions.Fraction, and the certificate's embedded parameters are compared with the
arrays, so a certificate about other numbers would not pass.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.network import Network
from certsym.workflows.equivalence import Equivalence, equivalent
from certsym_check import check

F32 = np.float32


def _base(seed: int, m: int, n: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(F32) for s in ((n, m), (n,), (k, n), (k,))]


def _edit(arrays: list[np.ndarray], seed: int, how: str) -> list[np.ndarray]:
    """A float32 copy: "same" (permuted, scaled by powers of two), "dead" (plus a dead neuron), "split" (neuron 0
    split into halves along its ray), "nudge" (one input weight one ulp up), "bias" (c_0 changed)."""
    W1, b1, W2, b2 = (a.copy() for a in arrays)
    rng = np.random.default_rng(seed + 7)
    n = len(b1)
    perm, d = rng.permutation(n), (2.0 ** rng.integers(-3, 4, n)).astype(F32)
    W1, b1, W2 = W1[perm] * d[:, None], b1[perm] * d, W2[:, perm] / d
    if how == "dead":
        W1, b1 = np.vstack([W1, np.ones((1, W1.shape[1]), F32)]), np.append(b1, F32(1))
        W2 = np.hstack([W2, np.zeros((W2.shape[0], 1), F32)])
    elif how == "split":  # v σ(r·x) = (v/2) σ(r·x) + (v/4) σ(2 r·x)
        W1, b1 = np.vstack([W1, 2 * W1[:1]]), np.append(b1, 2 * b1[0])
        W2 = np.hstack([W2, W2[:, :1] / 4])
        W2[:, 0] /= 2
    elif how == "nudge":
        i, q = rng.integers(0, W1.shape[0]), rng.integers(0, W1.shape[1])
        W1[i, q] = np.nextafter(W1[i, q], F32(np.inf))
    elif how == "bias":
        b2[0] = b2[0] + F32(1)
    return [np.asarray(a, dtype=F32) for a in (W1, b1, W2, b2)]


def _network(arrays: list[np.ndarray]) -> Network:
    """θ from float arrays, built here: each float as the Fraction it denotes."""
    W1, b1, W2, b2 = arrays

    def q(x) -> fmpq:
        f = Fraction(float(x))
        return fmpq(f.numerator, f.denominator)

    return Network.build([[q(x) for x in row] for row in W2], [[q(x) for x in row] for row in W1],
                         [q(x) for x in b1], [q(x) for x in b2], m=W1.shape[1])


def _embedded(cert: dict, i: int) -> list[list[Fraction]]:
    """The certificate's embedded parameters of input i as Fractions: A, b, M, c."""
    p = cert["inputs"][i]["parameters"]
    return [[Fraction(x) for row in p["A"] for x in row], [Fraction(x) for x in p["b"]],
            [Fraction(x) for row in p["M"] for x in row], [Fraction(x) for x in p["c"]]]


def _exact(arrays: list[np.ndarray]) -> list[list[Fraction]]:
    W1, b1, W2, b2 = arrays
    return [[Fraction(float(x)) for x in a.ravel()] for a in (W1, b1, W2, b2)]


def _accepted(verdict: Equivalence, a: list[np.ndarray], b: list[np.ndarray]) -> None:
    """The verdict's certificate: the checker accepts it, its kind is the verdict, and it embeds exactly a and b."""
    cert = verdict.certificate()
    report = check(cert)
    assert report.valid, report.reason
    assert cert["kind"] == ("equivalent" if verdict.equivalent else "not_equivalent")
    assert _embedded(cert, 0) == _exact(a) and _embedded(cert, 1) == _exact(b)


def _witness_separates(verdict: Equivalence, a: list[np.ndarray], b: list[np.ndarray]) -> None:
    """At the witness x, exact evaluation of θ_a and θ_b (built here) differs and gives the verdict's values."""
    x = verdict.witness
    t1, t2 = _network(a), _network(b)
    assert len(x) == t1.m
    v1, v2 = t1.evaluate(x), t2.evaluate(x)
    assert v1 != v2
    assert (list(verdict.values[0]), list(verdict.values[1])) == (v1, v2)


dims = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 6), st.integers(1, 3))


@settings(max_examples=30, deadline=None)
@given(dims, st.sampled_from(["same", "dead", "split"]))
def test_equivalent_pairs_on_both_paths(d: tuple, how: str) -> None:
    """A function-preserving edit: the fast path (auto) and the general path both say EQUIVALENT, with certificates
    the checker accepts and that embed exactly the two networks."""
    seed, m, n, k = d
    a = _base(seed, m, n, k)
    b = _edit(a, seed, how)
    fast, general = equivalent(a, b), equivalent(a, b, path="general")
    assert fast.path == "fast" and general.path == "general"
    assert fast.equivalent and general.equivalent and bool(fast) and bool(general)
    assert fast.witness is None and general.witness is None
    _accepted(fast, a, b)
    _accepted(general, a, b)


@settings(max_examples=30, deadline=None)
@given(dims, st.sampled_from(["nudge", "bias"]))
def test_not_equivalent_pairs_on_both_paths(d: tuple, how: str) -> None:
    """A function-changing edit: the fast path (with its sparse witness, reference=True), the auto choice and the
    general path all say NOT EQUIVALENT; every certificate is accepted, and every witness evaluates differently
    in the two networks by exact evaluation."""
    seed, m, n, k = d
    a = _base(seed, m, n, k)
    b = _edit(a, seed, how)
    verdicts = [equivalent(a, b, reference=True), equivalent(a, b), equivalent(a, b, path="general")]
    assert verdicts[0].path == "fast" and verdicts[2].path == "general"
    for verdict in verdicts:
        assert not verdict.equivalent and not verdict
        _accepted(verdict, a, b)
        _witness_separates(verdict, a, b)
    assert verdicts[0].to_json()["equivalent"] is False


def test_the_same_verdicts_as_json() -> None:
    """to_json has the same fields whichever path decided, and the counts of an H_n match cover every neuron."""
    a = _base(5, 3, 4, 2)
    b = _edit(a, 5, "same")
    fast, general = equivalent(a, b), equivalent(a, b, path="general")
    jf, jg = fast.to_json(), general.to_json()
    assert set(jf) == set(jg) and jf["equivalent"] is jg["equivalent"] is True
    assert fast.counts() == general.counts() and fast.counts()[0] == 4


def test_an_undecided_deep_pair_whose_distance_found_a_difference_is_not_equivalent(tmp_path, monkeypatch) -> None:
    """When the deep decision leaves a pair UNDECIDED but the distance on [0, 1]^m finds L > 0, its witness,
    evaluated exactly, is the verdict: NOT EQUIVALENT, with a deep_not_equivalent certificate that replays."""
    import json

    from certsym.decide.deep import UNDECIDED, DeepVerdict
    from certsym.workflows import equivalence as workflow
    from certsym_check import check

    one = {"W": [["1"], ["-1"]], "b": ["0", "1"]}
    a = {"layers": [one, {"W": [["1", "2"]], "b": ["0"]}, {"W": [["1"]], "b": ["0"]}]}
    b = {"layers": [one, {"W": [["1", "2"]], "b": ["1/8"]}, {"W": [["1"]], "b": ["0"]}]}
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    monkeypatch.setattr(workflow, "decide_deep", lambda t1, t2, **_: DeepVerdict(UNDECIDED, t1, t2, reason="forced"))
    v = workflow.equivalent(str(pa), str(pb))
    assert v.status == "not_equivalent" and v.witness is not None
    assert v.values[0] != v.values[1]
    assert check(json.loads(json.dumps(v.certificate()))).valid


def test_the_default_witness_lies_in_the_unit_box_when_one_does_and_says_so_otherwise() -> None:
    """The witness is moved into [0, 1]^m when the networks differ there; when they agree on [0, 1]^m (here
    relu(x − 2) against relu(−x − 1), both 0 on it) the witness stays outside and the verdict says so."""
    import certsym

    inside = certsym.equivalent({"A": [[1], [-1]], "b": [0, 0], "M": [[1, 1]], "c": [0]},
                                {"A": [[1], [-1]], "b": [0, 0], "M": [[2, 1]], "c": [0]})
    assert 0 <= inside.witness[0] <= 1
    assert inside.values[0] != inside.values[1] and inside.box_note == ""
    outside = certsym.equivalent({"A": [[1]], "b": [-2], "M": [[1]], "c": [0]},
                                 {"A": [[-1]], "b": [-1], "M": [[1]], "c": [0]})
    assert not 0 <= outside.witness[0] <= 1 and outside.values[0] != outside.values[1]
    assert "no point of [0, 1]^m where they differ was found: the witness lies outside it" in str(outside)

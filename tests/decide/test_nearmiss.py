"""certsym.decide.nearmiss: the summary of why two float networks are not equivalent.

NearMiss promises: ``n`` live neurons of θ1 (v_i ≠ 0 and a_i ≠ 0), ``partnered`` of them with an exact partner in
θ2 (same row up to λ > 0, λ v_j = v_i), and ``worst``, for up to three others, (neuron, nearest partner, largest
relative difference, largest difference in ulps of the file's type). The copies below are built so that the
expected values follow from the construction: permutations with power-of-two scalings are exact in binary floats,
and with power-of-two leading weights a change of u ulps in one weight is a change of exactly u ulps after
normalization.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.decide.nearmiss import NearMiss, near_miss


def _weights(rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
    """Entries ±[1.25, 1.75) · 2^e: a few ulps up never leave the binade."""
    mag = rng.uniform(1.25, 1.75, shape) * 2.0 ** rng.integers(-3, 4, shape)
    return (mag * rng.choice([-1.0, 1.0], shape)).astype(dtype)


def _network(seed: int, m: int, n: int, k: int, dtype=np.float32) -> list[np.ndarray]:
    """W1 (n×m) with a power-of-two first column (the normalizing weight), b1, W2 (k×n), b2."""
    rng = np.random.default_rng(seed)
    W1 = _weights(rng, (n, m), dtype)
    W1[:, 0] = (rng.choice([-1.0, 1.0], n) * 2.0 ** rng.integers(-3, 4, n)).astype(dtype)
    return [W1, _weights(rng, (n,), dtype), _weights(rng, (k, n), dtype), _weights(rng, (k,), dtype)]


def _permuted(arrays: list[np.ndarray], seed: int, dead: bool) -> tuple[list[np.ndarray], np.ndarray]:
    """An equivalent copy: neurons permuted and scaled by powers of two (exact), plus a dead neuron (v = 0) if
    asked; returns the copy and perm (neuron perm[j] of the original is neuron j of the copy)."""
    W1, b1, W2, b2 = arrays
    rng = np.random.default_rng(seed + 1)
    n = len(b1)
    perm = rng.permutation(n)
    d = (2.0 ** rng.integers(-2, 3, n)).astype(W1.dtype)
    V1, c1, V2 = W1[perm] * d[:, None], b1[perm] * d, W2[:, perm] / d
    if dead:
        V1 = np.vstack([V1, np.ones((1, W1.shape[1]), W1.dtype)])
        c1, V2 = np.append(c1, W1.dtype.type(1)), np.hstack([V2, np.zeros((W2.shape[0], 1), W1.dtype)])
    return [V1.astype(W1.dtype), c1.astype(W1.dtype), V2.astype(W1.dtype), b2.copy()], perm


def _live(arrays: list[np.ndarray]) -> int:
    W1, _, W2, _ = arrays
    return sum(1 for i in range(W1.shape[0]) if W1[i].any() and W2[:, i].any())


def _bump(x, ulps: int):
    """x moved ``ulps`` ulps away from zero."""
    for _ in range(ulps):
        x = np.nextafter(x, np.copysign(np.inf, x).astype(x.dtype))
    return x


dims = st.tuples(st.integers(0, 2**32 - 1), st.integers(2, 5), st.integers(1, 8), st.integers(1, 3))


@settings(max_examples=30, deadline=None)
@given(dims, st.booleans(), st.sampled_from([np.float32, np.float16]))
def test_an_equivalent_copy_has_every_neuron_partnered(d: tuple, dead: bool, dtype) -> None:
    """A permuted, power-of-two-scaled copy (with an extra dead neuron in θ2, and one in θ1): every live neuron of
    θ1 has an exact partner, nothing is listed as worst, and dtype names the files' type."""
    seed, m, n, k = d
    a = _network(seed, m, n, k, dtype)
    b, perm = _permuted(a, seed, dead)
    a[2][:, 0] = 0  # neuron 0 of θ1 is dead: not counted (and its copy in θ2 is dead too)
    b[2][:, list(perm).index(0)] = 0
    summary = near_miss(a, b)
    assert isinstance(summary, NearMiss)
    assert summary.n == _live(a) == n - 1
    assert summary.partnered == summary.n
    assert summary.worst == []
    assert summary.dtype == np.dtype(dtype).name
    assert summary.to_json()["partnered"] == summary.n


@settings(max_examples=30, deadline=None)
@given(dims, st.data(), st.sampled_from([np.float32, np.float16]))
def test_one_ulp_in_a_row_is_found_and_measured(d: tuple, data, dtype) -> None:
    """One input weight or bias of neuron i changed by one ulp (then the copy permuted and rescaled): n − 1 neurons
    are partnered, worst is the single (i, the copy's index of i, relative difference, 1.0 ulp)."""
    seed, m, n, k = d
    a = _network(seed, m, n, k, dtype)
    i = data.draw(st.integers(0, n - 1))
    q = data.draw(st.integers(1, m))  # column q of (W1 | b1), never the leading column 0
    changed = [x.copy() for x in a]
    if q < m:
        changed[0][i, q] = _bump(changed[0][i, q], 1)
        x, y = a[0][i, q], changed[0][i, q]
    else:
        changed[1][i] = _bump(changed[1][i], 1)
        x, y = a[1][i], changed[1][i]
    assert x != y
    b, perm = _permuted(changed, seed, False)
    summary = near_miss(a, b)
    assert (summary.n, summary.partnered) == (n, n - 1)
    assert len(summary.worst) == 1
    neuron, partner, rel, ulps, part = summary.worst[0]
    assert neuron == i and partner == list(perm).index(i) and part == "row"
    assert ulps == 1.0
    expected_rel = abs(float(y) - float(x)) / abs(float(x))
    assert rel == pytest.approx(expected_rel, rel=1e-9)
    assert any(f"neuron {i}:" in line for line in summary.lines())


def test_worst_lists_the_three_largest_differences_in_order() -> None:
    """Neurons 0..4 changed by 1..5 ulps in one input weight: none is partnered, and worst lists neurons 4, 3, 2
    with 5, 4 and 3 ulps, each paired with its own copy."""
    a = _network(7, 3, 6, 2)
    b = [x.copy() for x in a]
    for i in range(5):
        b[0][i, 1] = _bump(b[0][i, 1], i + 1)
    summary = near_miss(a, b)
    assert (summary.n, summary.partnered) == (6, 1)
    assert [(w[0], w[1], w[3]) for w in summary.worst] == [(4, 4, 5.0), (3, 3, 4.0), (2, 2, 3.0)]


def test_one_ulp_is_never_an_exact_partner() -> None:
    """(L, x) against (L, x + 1 ulp) with L = 1.543625, x = 1.9350724 (float32): the rows are not proportional, so
    the neuron has no exact partner."""
    f = np.float32
    W1, b1, W2, b2 = np.array([[1.543625, 1.9350724]], f), np.array([0.5], f), np.array([[1.0]], f), np.zeros(1, f)
    V1 = W1.copy()
    V1[0, 1] = np.nextafter(V1[0, 1], f(np.inf))
    assert float(V1[0, 1]) * float(W1[0, 0]) != float(W1[0, 1]) * float(V1[0, 0])  # exact in binary64
    assert near_miss([W1, b1, W2, b2], [V1, b1, W2, b2]).partnered == 0


def test_one_ulp_in_an_output_weight_is_measured() -> None:
    """The README's example: one output weight moved by one ulp; the unpartnered neuron's reported difference is
    not zero."""
    a = _network(3, 2, 3, 1)
    b = [x.copy() for x in a]
    b[2][0, 0] = _bump(b[2][0, 0], 1)
    summary = near_miss(a, b)
    assert summary.partnered == 2 and len(summary.worst) == 1
    assert summary.worst[0][3] > 0


@pytest.mark.parametrize("seed", range(4))
def test_the_blocks_do_not_change_the_summary(monkeypatch, seed: int) -> None:
    """Blocks of 2 rows (every loop over several blocks, partners and nearest neurons across block borders) give
    the summary of one block holding everything."""
    from certsym.decide import nearmiss

    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((9, 4)).astype(np.float32)
    b1, W2, b2 = (rng.standard_normal(s).astype(np.float32) for s in (9, (3, 9), 3))
    perm = rng.permutation(9)
    V1, c1, V2 = W1[perm] * np.float32(2), b1[perm] * np.float32(2), W2[:, perm] / np.float32(2)
    V1[rng.integers(0, 9, 3), rng.integers(0, 4, 3)] += np.float32(0.5)  # up to three rows without a partner
    whole = nearmiss.near_miss([W1, b1, W2, b2], [V1, c1, V2, b2])
    monkeypatch.setattr(nearmiss, "_CHUNK", 2)
    assert nearmiss.near_miss([W1, b1, W2, b2], [V1, c1, V2, b2]) == whole
    assert whole.partnered < 9 and whole.worst


def test_a_change_in_the_output_weights_and_an_extra_unit_are_named() -> None:
    """A last-bit change in one output weight is reported as such (the rows agree), not as "0 ulp" of the rows; a
    unit only θ2 has is counted."""
    rng = np.random.default_rng(4)
    W1, b1 = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    W2, b2 = rng.standard_normal((2, 6)).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    V = W2.copy()
    V[1, 4] = np.nextafter(V[1, 4], np.float32(np.inf))
    nm = near_miss([W1, b1, W2, b2], [W1, b1, V, b2])
    (i, j, rel, ulps, part), = nm.worst
    assert (i, j, part) == (4, 4, "output") and 0 < ulps <= 2 and 0 < rel < 1e-6
    assert "its row is that of neuron 4 of θ2; their output weights differ" in "\n".join(nm.lines())
    A = np.vstack([W1, rng.standard_normal((1, 3)).astype(np.float32)])
    extra = near_miss([W1, b1, W2, b2], [A, np.append(b1, np.float32(0.5)), np.hstack([W2, np.ones((2, 1),
                                                                                                    np.float32)]), b2])
    assert (extra.n, extra.partnered, extra.n2, extra.partnered2) == (6, 6, 7, 6)
    assert "1 of the 7 neurons of θ2 has none in θ1" in extra.lines()
    assert extra.to_json()["partnered2"] == 6


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 4), st.booleans(), st.booleans(), st.booleans())
def test_the_decisions_partners_give_the_same_summary(seed: int, ulps: int, dead: bool, duplicate: bool,
                                                      output: bool) -> None:
    """near_miss with the fast decision's matches (``Equivalence.exact_partners``) equals the hashing path on
    permuted copies with a weight moved by a few ulps, a dead neuron, and a duplicated neuron (a merge: then the
    decision's matches are not used)."""
    from certsym.workflows.equivalence import equivalent

    a = _network(seed, 5, 7, 3)
    b, _ = _permuted(a, seed, dead)
    if output:
        b[2][1, 2] = _bump(b[2][1, 2], ulps)
    else:
        b[0][3, 2] = _bump(b[0][3, 2], ulps)
    if duplicate:  # θ2's neuron 0 split into two positively proportional halves
        b = [np.vstack([b[0], b[0][:1] * 2]), np.append(b[1], b[1][0] * 2), np.hstack([b[2], b[2][:, :1] / 4]),
             b[3]]
        b[2][:, 0] /= 2
    verdict = equivalent(a, b, reference=True)  # the fast path also for a small pair
    partners = verdict.exact_partners()
    assert verdict.path == "fast" and (partners is None) is duplicate
    assert near_miss(a, b, partners) == near_miss(a, b)


def test_a_partner_behind_a_row_of_the_same_hash_is_found() -> None:
    """Found by review: a/L and nextafter(a)/L round to the same float32, so θ2's first neuron (one ulp off) shares
    the hash of θ1's row; the exact partner after it used to be missed by both counts."""
    f = np.float32
    L, a = f(1.5), f(1.99)
    a2 = np.nextafter(a, f(10))
    A = [np.array([[L, a]], f), np.array([0.25], f), np.ones((1, 1), f), np.zeros(1, f)]
    B = [np.array([[L, a2], [L, a]], f), np.array([0.25, 0.25], f), np.ones((1, 2), f), np.zeros(1, f)]
    for first, second in ((A, B), (B, A)):  # one exact partner either way
        summary = near_miss(first, second)
        assert (summary.partnered, summary.partnered2) == (1, 1)
    assert near_miss(A, B).worst == []


@pytest.mark.parametrize("given_partners", [False, True])
def test_the_nearest_neuron_is_one_without_a_partner(given_partners: bool) -> None:
    """θ1's neuron 1 lies next to neuron 0 (one ulp apart), and θ2 holds neuron 0's exact copy and a copy of neuron
    1 moved far: the summary names the far copy, θ2's one neuron without a partner, not the partnered near one."""
    f = np.float32
    W1 = np.array([[1.0, 0.5], [1.0, np.nextafter(f(0.5), f(1))]], f)
    b1, W2, b2 = np.zeros(2, f), np.ones((1, 2), f), np.zeros(1, f)
    V1 = np.array([[1.0, 0.5], [1.0, 3.0]], f)
    partners = ([0], [0]) if given_partners else None
    nm = near_miss([W1, b1, W2, b2], [V1, b1, W2, b2], partners)
    assert (nm.n, nm.partnered, nm.n2, nm.partnered2) == (2, 1, 2, 1)
    (i, j, rel, ulps, part), = nm.worst
    assert (i, j, part) == (1, 1, "row") and rel > 1


def test_weights_set_to_zero_are_counted_and_said() -> None:
    """A pruned row (3 of its 6 input weights set to 0 in θ2): the summary counts them on θ2's side and says so in
    words, where the relative figure (1) hides what happened; a row whose weights moved is not called pruned."""
    a = _network(11, 6, 5, 2)
    b = [x.copy() for x in a]
    b[0][2, [0, 2, 4]] = 0
    b[0][4, 1] = _bump(b[0][4, 1], 3)
    summary = near_miss(a, b)
    by_neuron = {w[0]: z for w, z in zip(summary.worst, summary.zeroed, strict=True)}
    assert by_neuron[2] == (3, 0) and by_neuron[4] == (0, 0)
    lines = summary.lines()
    assert "  neuron 2: 3 of its weights are 0 in neuron 2 of θ2 and not in θ1 (set to 0: pruned?)" in lines
    assert not any(line.startswith("  neuron 4: ") and "set to 0" in line for line in lines)


def _float32_net(seed: int, n: int = 12, m: int = 5, k: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(np.float32) for s in ((n, m), (n,), (k, n), (k,))]


def test_the_common_edits_of_a_copy_are_named_in_words() -> None:
    """``changes``: pruning, rounding to a type, a scaled output layer and an 8-bit grid, each named; two unrelated
    networks and an equal copy get no words."""
    from certsym.decide.nearmiss import changes

    a = _float32_net(0)
    pruned = [x.copy() for x in a]
    pruned[0][[1, 4, 7], [0, 2, 3]] = 0
    assert changes(a, pruned) == ["θ2 is θ1 with 3 weights set to 0 and every other weight the same (a pruned copy)"]
    half = [x.astype(np.float16) for x in a]
    changed = sum(int((x != h.astype(np.float32)).sum()) for x, h in zip(a, half, strict=True))
    assert changes(a, half) == [f"θ2 is θ1 rounded to float16: {changed} weights changed, each to the float16 "
                                "nearest it"]
    scaled = [a[0], a[1], a[2] * np.float32(0.5), a[3] * np.float32(0.5)]
    assert changes(a, scaled) == ["θ2 is θ1 with its output layer scaled by 0.5"]
    big = [np.random.default_rng(1).normal(size=s).astype(np.float32) for s in ((40, 30), (40,), (3, 40), (3,))]
    grid = [np.round(x / (np.abs(x).max() / 127)) * (np.abs(x).max() / 127) if x.ndim == 2 else x for x in big]
    assert "quantized to 8 bits" in changes(big, grid)[0]
    assert changes(a, _float32_net(1)) == [] and changes(a, [x.copy() for x in a]) == []


def test_python_str_carries_what_the_cli_prints(tmp_path) -> None:
    """str(certsym.equivalent(...)) of a NOT EQUIVALENT pair holds the witness point, the near-miss lines and the
    edit in words, as ``certsym equiv`` prints them; the witness lies in [0, 1]^m, where the two differ."""
    import certsym
    from certsym.cli import main

    a = _float32_net(2)
    pruned = [x.copy() for x in a]
    pruned[0][3, 1] = 0
    v = certsym.equivalent(a, pruned)
    text = str(v)
    assert text.startswith("NOT EQUIVALENT: at ") and "ρ(θ1)(x) = [" in text
    assert "θ2 is θ1 with 1 weight set to 0" in text and "neuron 3: 1 of its weights are 0" in text
    assert all(0 <= t <= 1 for t in v.witness) and v.values[0] != v.values[1]
    for name, arrays in (("a", a), ("b", pruned)):
        np.savez(tmp_path / f"{name}.npz", W1=arrays[0], b1=arrays[1], W2=arrays[2], b2=arrays[3])
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--keys", "W1,b1,W2,b2", "equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")])
    assert code == 1
    printed = out.getvalue()
    for line in text.splitlines()[3:]:  # past the headline and the two reading lines (they name the files)
        assert line in printed

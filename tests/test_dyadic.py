"""The fast exact path (certsym.dyadic) agrees with the general path: same verdicts, same certificates."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certificate import _equivalence_proof
from certsym.dyadic import DyadicNetwork
from certsym.dyadic import decide as fast_decide
from certsym.equivalence import decide as general_decide
from certsym.numbers import QQ


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
@given(st.integers(0, 2**32 - 1), st.sampled_from(["same", "dead", "split", "nudge"]),
       st.integers(1, 4), st.integers(0, 6), st.integers(1, 3), st.booleans(), st.booleans())
def test_fast_path_agrees_with_general_path(seed: int, how: str, m: int, n: int, k: int, small: bool,
                                            pairs: bool) -> None:
    rng = np.random.default_rng(seed)
    gen = (lambda *s: rng.integers(-2, 3, size=s)) if small else (lambda *s: rng.standard_normal(s))
    base = tuple(np.asarray(gen(*s), dtype=np.float32) for s in ((n, m), (n,), (k, n), (k,)))
    other = _variant(rng, *base, how) if n else base
    if pairs:
        base, other = _with_pairs(rng, base, other)
    t1, t2 = DyadicNetwork.from_arrays(*base), DyadicNetwork.from_arrays(*other)
    fast = fast_decide(t1, t2)
    general = general_decide(t1.to_network(), t2.to_network())
    assert fast.equivalent == general.equivalent
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

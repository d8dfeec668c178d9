"""The fast path's witness on a hyperplane (certsym.decide.dyadic._kink_points): the move of x0 within H."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from certsym.decide import dyadic
from certsym.workflows.equivalence import equivalent
from certsym_check import check_certificate


def _fan(N: int, seed: int = 1) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Found by review: H = (3, u_q | β) carries θ1's only differing kink; a neuron through x0 = (−β/3, 0) forces a
    move of x_q, and N neurons vanish exactly at x_q = 1, 2, …, N, with rows whose computed slope along the move
    loses up to 1e-2 of its value when formed as a_q − a_p·(u_q/u_p). Every integer value is then forbidden in
    turn."""
    f, rng = np.float32, np.random.default_rng(seed)
    U = int(rng.integers(2**23, 2**24))
    U += U % 3 == 0
    uq = f(U * 2.0**-23)
    fams = []
    while len(fams) < 12:
        P = int(rng.integers(2**23, 2**24))
        A = round(U * P / (3 * 2**23))
        D = 3 * A * 2**23 - U * P
        if P % 3 and D and abs(D) < 64 and A < 2**24:
            fams += [(f(P * 2.0**-23), f(A * 2.0**-23)), (f(P * 2.0**-22), f(A * 2.0**-22))]
    beta = Fraction(1, 2**23)
    rows, bs = [], []
    for c in range(1, N + 1):
        for ap, aq in fams:
            b = (Fraction(float(ap)) * beta - c * (3 * Fraction(float(aq)) - Fraction(float(ap)) * Fraction(float(uq))))
            b /= 3
            if Fraction(float(f(float(b)))) == b:
                rows.append([ap, aq])
                bs.append(f(float(b)))
                break
        else:
            rows.append([f(0), f(1)])
            bs.append(f(-c))
    W1 = np.array([[3, float(uq)], [3, 0], *rows], f)
    b1 = np.array([float(beta), float(beta), *bs], f)
    W2, c0 = np.ones((1, len(rows) + 2), f), np.zeros(1, f)
    return [W1, b1, W2, c0], [W1[1:], b1[1:], W2[:, 1:], c0]


def test_a_fan_of_forbidden_values_costs_few_passes(monkeypatch) -> None:
    calls = []
    original = dyadic._Hyperplanes.zeros

    def counted(self, x):
        calls.append(1)
        return original(self, x)

    monkeypatch.setattr(dyadic._Hyperplanes, "zeros", counted)
    a, b = _fan(1500)
    v = equivalent(a, b, reference=True)
    assert v.path == "fast" and not v.equivalent
    assert len(calls) <= 4  # one per move and the start: the forbidden values are found in one vectorized pass
    report = check_certificate(v.certificate())
    assert report.valid, report.reason

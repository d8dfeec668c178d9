"""The teacher–student loss in closed form: float, ball and symbolic versions against each other, finite
differences and a Monte Carlo estimate."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from flint import arb, fmpq

from certsym.landscape import balls, kernel, symbolic


def _random(k: int, seed: int) -> tuple[list[list[fmpq]], np.ndarray]:
    rng = np.random.default_rng(seed)
    Wq = [[fmpq(int(rng.integers(-40, 40)), 23) for _ in range(k)] for _ in range(k)]
    return Wq, np.array([[float(x.p) / float(x.q) for x in row] for row in Wq])


@pytest.mark.parametrize("k, seed", [(2, 0), (3, 1), (5, 2)])
def test_gradient_and_hessian_match_finite_differences(k: int, seed: int) -> None:
    _, W = _random(k, seed)
    h = 1e-6
    G = kernel.gradient(W)
    H = kernel.hessian(W)
    for a in range(k * k):
        E = np.zeros(k * k)
        E[a] = h
        E = E.reshape(k, k)
        assert abs((kernel.loss(W + E) - kernel.loss(W - E)) / (2 * h) - G.ravel()[a]) < 1e-7
        column = (kernel.gradient(W + E) - kernel.gradient(W - E)).ravel() / (2 * h)
        assert np.abs(column - H[:, a]).max() < 1e-6
    assert np.abs(H - H.T).max() < 1e-12


def test_known_values() -> None:
    k = 5
    assert kernel.loss(np.eye(k)) == pytest.approx(0, abs=1e-14)  # the global minimum W = V
    assert np.abs(kernel.gradient(np.eye(k))).max() < 1e-14
    assert kernel.loss(np.zeros((k, k))) == pytest.approx(k / 4 + k * (k - 1) / (4 * np.pi))  # F(0) = MATH.md


def test_monte_carlo_agrees() -> None:
    _, W = _random(3, 7)
    rng = np.random.default_rng(11)
    X = rng.standard_normal((400_000, 3))
    f = np.maximum(X @ W.T, 0).sum(1) - np.maximum(X, 0).sum(1)
    estimate, stderr = 0.5 * np.mean(f**2), 0.5 * np.std(f**2) / np.sqrt(len(X))
    assert abs(estimate - kernel.loss(W)) < 5 * stderr


@pytest.mark.parametrize("k, seed", [(3, 3), (4, 4)])
def test_balls_enclose_the_float_values(k: int, seed: int) -> None:
    Wq, W = _random(k, seed)
    L = balls.loss(Wq)
    assert L.rad() < 1e-30 and abs(float(L.mid()) - kernel.loss(W)) < 1e-12
    G = balls.gradient(Wq)
    assert all(abs(float(G[i][j].mid()) - kernel.gradient(W)[i, j]) < 1e-12 for i in range(k) for j in range(k))
    identity = [[fmpq(int(i == j)) for j in range(k)] for i in range(k)]
    assert balls.loss(identity).contains(arb(0))  # F(I) = 0 exactly, near-parallel angles included


def test_symbolic_loss_agrees() -> None:
    Wq, W = _random(2, 5)
    expr = symbolic.loss([[sympy.Rational(int(x.p), int(x.q)) for x in row] for row in Wq])
    assert float(sympy.N(expr, 30)) == pytest.approx(kernel.loss(W), abs=1e-12)
    a = sympy.symbols("a", positive=True)
    diagonal = symbolic.loss([[a, 0], [0, a]])  # the ΔS_2-fixed line W = aI, as a function of a
    assert float(diagonal.subs(a, sympy.Rational(1, 3))) == pytest.approx(kernel.loss(np.eye(2) / 3), abs=1e-12)


def test_three_arithmetics_agree_on_gradient_and_hessian() -> None:
    """sympy's derivatives of the symbolic loss, the float closed forms and the arb balls (the restricted Hessian on
    the layout of singletons, i.e. all of M(k, k)) agree at one point."""
    import sympy
    from flint import arb

    from certsym.landscape import restricted, symbolic

    k = 2
    point = np.array([[0.9, -0.3], [0.2, 1.1]])
    W, H = symbolic.hessian(k)
    _, G = symbolic.gradient(k)
    subs = {w: sympy.Float(point[i, j], 30) for i, row in enumerate(W) for j, w in enumerate(row)}
    G_sym = np.array([float(g.evalf(30, subs=subs)) for g in G])
    H_sym = np.array(H.evalf(30, subs=subs).tolist(), dtype=float)
    assert np.abs(G_sym - kernel.gradient(point).ravel()).max() < 1e-12
    assert np.abs(H_sym - kernel.hessian(point)).max() < 1e-12
    layout = restricted.Layout((1, 1))
    x = restricted.project(layout, point)
    H_arb = restricted.hessian(layout, [arb(float(v)) for v in x])
    order = [layout.index[n] for n in ("d1", "c12", "c21", "d2")]  # w11, w12, w21, w22
    for a, pa in enumerate(order):
        for b, pb in enumerate(order):
            assert H_arb[pa][pb].contains(arb(H_sym[a, b])) or abs(float(H_arb[pa][pb].mid()) - H_sym[a, b]) < 1e-12

"""The Hessian at W = I: the exact factorization equals the closed form and the float kernel's spectrum."""

from __future__ import annotations

import numpy as np
import pytest

from certsym.landscape import kernel, spectrum


@pytest.mark.parametrize("k", [3, 4, 5])
def test_exact_factorization_is_the_closed_form(k: int) -> None:
    assert spectrum.exact_factors(k) == spectrum.closed_form(k)


@pytest.mark.parametrize("k", [4, 7])
def test_closed_form_eigenvalues_match_the_float_hessian(k: int) -> None:
    exact = np.sort(np.concatenate([[float(r)] * m for r, m in spectrum.eigenvalues(k)]))
    assert exact.shape == (k * k,)
    assert np.abs(exact - np.sort(np.linalg.eigvalsh(kernel.hessian(np.eye(k))))).max() < 1e-12

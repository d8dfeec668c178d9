"""Corollary 9 (Ramakrishnan 2026: non-identifiability), in the form of ../docs/MATH.md ("Stabilizers (Theorem 2)
and Corollary 9"):

    If Stab_{H_n}(A, b) ≠ 1 then the fibre ρ^{-1}(ρ(θ)) is strictly larger than H_n·θ. Witnesses: a zero row
    lets its output weight v_i change freely; two positively proportional rows r_j = λ r_i let output weight
    move between them, (v_i, v_j) ↦ (v_i + λ t, v_j − t). The converse fails: the clamp E5,
    σ(x) − σ(x − 1) = σ(−x) − σ(1 − x) + 1, has a trivial Stab_{H_2}(A, b) and independent rows, yet
    Σ v_i a_i = 1 − 1 = 0, so its fibre holds two H_2-orbits.

Checked through ``certsym.stabilizer(of_rows=True)``, ``certsym.identifiable``, ``certsym.equivalent``,
``certsym.fibre`` and ``certsym.canon`` on MATH.md's E2 (identical rows, t = 2 gives its second parameter), on a
positively proportional pair (λ = 2), a zero row, an m = 2, k = 2 network over Q(√2) with a copy scaled by √2,
and on E5. certsym's θ' is outside H_n·θ: the replay of the identifiability certificate checks it (the multisets
of normalized neurons differ); MATH.md's θ' is certified to realize ρ(θ), and for E2 to lie in another orbit (the
stabilizers of one orbit are conjugate, E2's two are not). Every certificate (``not_identifiable``,
``equivalent``) is replayed VALID, bound to its files.
"""

from __future__ import annotations

import pytest

import certsym
from paper_checks.support import EXAMPLES, identifiability_certificate, replay, write

# (θ, MATH.md's θ' in its fibre, Stab_{H_n}(A, b))
NONTRIVIAL = {
    # identical rows: (v_1, v_2) = (1, 1) ↦ (1 + 2, 1 − 2)
    "E2": (*EXAMPLES["E2"], "S_2"),
    # r_2 = 2 r_1: 1·σ(x + 1) + 3·σ(2x + 2) = 7σ(x + 1); t = 1 gives (1 + 2, 3 − 1)
    "proportional": ({"M": [[1, 3]], "A": [[1], [2]], "b": [1, 2], "c": [0]},
                     {"M": [[3, 2]], "A": [[1], [2]], "b": [1, 2], "c": [0]}, "S_2"),
    # a zero row: its output weight is free
    "zero_row": ({"M": [[1, 5]], "A": [[1], [0]], "b": [0, 0], "c": [0]},
                 {"M": [[1, -4]], "A": [[1], [0]], "b": [0, 0], "c": [0]}, "H_1"),
    # m = 2, k = 2 over Q(√2): r_3 = √2 r_1 (λ = √2); in the first output (v_1, v_3) = (1, √2) ↦ (1 + √2 t, √2 − t),
    # t = 1
    "sqrt2_copy": ({"M": [[1, 2, "sqrt(2)"], [0, 1, 3]], "A": [[1, 2], [-1, 1], ["sqrt(2)", "2*sqrt(2)"]],
                    "b": [1, 0, "sqrt(2)"], "c": [0, 0]},
                   {"M": [["1 + sqrt(2)", 2, "sqrt(2) - 1"], [0, 1, 3]],
                    "A": [[1, 2], [-1, 1], ["sqrt(2)", "2*sqrt(2)"]], "b": [1, 0, "sqrt(2)"], "c": [0, 0]}, "S_2"),
}


@pytest.mark.parametrize("name", list(NONTRIVIAL))
def test_a_nontrivial_row_stabilizer_makes_the_fibre_larger_than_the_orbit(tmp_path, name: str) -> None:
    theta, other, group = NONTRIVIAL[name]
    path, stated = write(tmp_path, "theta", theta), write(tmp_path, "theta_prime", other)
    assert certsym.stabilizer(path, of_rows=True).type == group
    verdict = certsym.identifiable(path)
    assert not verdict and verdict.counterexample is not None
    report = replay(identifiability_certificate(path, verdict), path)
    # the checker recomputed that θ' realizes ρ(θ) and that it lies outside H_n·θ
    assert report.kind == "not_identifiable" and any("orbit separation" in check for check in report.checks)
    same = certsym.equivalent(path, stated)  # MATH.md's move gives a θ' in the fibre too
    assert same
    replay(same.certificate(), path, stated)


def test_e2_second_parameter_lies_in_another_orbit(tmp_path) -> None:
    """Stab(h·θ) = h Stab(θ) h^{-1}: an orbit has one stabilizer type, and E2's two parameters have two."""
    theta, other = (write(tmp_path, f"e2_{i}", doc) for i, doc in enumerate(EXAMPLES["E2"]))
    assert (certsym.stabilizer(theta).type, certsym.stabilizer(other).type) == ("S_2", "1")


def test_the_converse_fails_the_clamp(tmp_path) -> None:
    theta, partner = EXAMPLES["E5"]
    path, other = write(tmp_path, "e5", theta), write(tmp_path, "e5_partner", partner)
    assert certsym.stabilizer(path, of_rows=True).is_trivial and certsym.stabilizer(path).is_trivial
    verdict = certsym.identifiable(path)
    assert not verdict and verdict.zero_factor == [0, 1]
    assert verdict.counterexample == certsym.load(other).network  # exactly MATH.md's second parameter
    assert replay(identifiability_certificate(path, verdict), path).kind == "not_identifiable"
    assert certsym.fibre(path).zero_factors == [[0, 1]]  # two H_2-orbits: F = ∅ and F = {1, 2}
    assert certsym.canon(path).hash == certsym.canon(other).hash

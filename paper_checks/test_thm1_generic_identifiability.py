"""Theorem 1 (Ramakrishnan 2026: generic identifiability), with the exact condition of ../docs/MATH.md ("Fibres,
genericity (Theorem 1) and its exact condition"):

    Let θ ∈ Ω(m, n, k) have all v_i ≠ 0, all a_i ≠ 0 and its rows r_i = (a_i, b_i) pairwise linearly
    independent. For F ⊆ {1..n} let θ^F negate the rows r_i, i ∈ F, and add Σ_{i∈F} v_i b_i to c. Then
        ρ^{-1}(ρ(θ)) ∩ Ω(m, n, k) = ⊔ H_n·θ^F over the F with Σ_{i∈F} v_i a_i^T = 0 (F = ∅ included),
    so θ is identifiable (its fibre is H_n·θ ≅ H_n) iff it has no nonempty zero factor F. These are finitely
    many proper algebraic conditions: the identifiable parameters contain a dense Zariski-open set (Theorem 1).

The conditions are sufficient, not necessary, and the identifiable set is not open: |x| = σ(x) + σ(−x) has
antiparallel rows and is identifiable, while σ(x) + σ(−x + δ) is not for any δ > 0 although it tends to |x|.
MATH.md's configurations decide the antiparallel case completely (|x| + σ(x − 1) and |x1| + |x2| with k = 1 are
not identifiable, |x1| e1 + |x2| e2 with k = 2 is).

Checked through ``certsym.identifiable`` and ``certsym.fibre`` on MATH.md's instances (E1, E5, E6, S1 over Q(√2),
the antiparallel examples), on a generic network and on E5 perturbed by 10^-6 (density). Every verdict's
certificate (``identifiable``: the rank and zero-factor evidence; ``not_identifiable``: θ' with ρ(θ') = ρ(θ)
outside H_n·θ) is replayed VALID, bound to its parameter file.
"""

from __future__ import annotations

import certsym
from paper_checks.support import EXAMPLES, identifiability_certificate, replay, write

E1, E5, S1 = EXAMPLES["E1"][0], EXAMPLES["E5"][0], EXAMPLES["S1"][0]
E6, E6_FLIPPED = EXAMPLES["E6"]  # E6_FLIPPED is θ^F, F = {1, 2, 3}
E5_PERTURBED = {"M": [[1, -1]], "A": [[1], ["1 + 1/1000000"]], "b": [0, -1], "c": [0]}  # within 10^-6 of E5
GENERIC = {"M": [["3/7", -2, "5/11", 1], [1, "2/3", -4, "9/5"]],
           "A": [[1, "-2/5"], ["7/3", 4], [-3, "1/8"], ["5/2", "-13/6"]],
           "b": ["1/2", -1, "3/4", 2], "c": [0, 1]}
ABS = {"M": [[1, 1]], "A": [[1], [-1]], "b": [0, 0], "c": [0]}
ABS_PLUS_KINK = {"M": [[1, 1, 1]], "A": [[1], [-1], [1]], "b": [0, 0, -1], "c": [0]}  # |x| + σ(x − 1)
ABS_PLUS_KINK_OTHER = {"M": [[2, 1, 0]], "A": [[1], [-1], [5]], "b": [0, 1, 7], "c": [-1]}  # 2σ(x) + σ(1 − x) − 1
ABS_SUM_K1 = {"M": [[1, 1, 1, 1]], "A": [[1, 0], [-1, 0], [0, 1], [0, -1]], "b": [0, 0, 0, 0], "c": [0]}
ABS_SUM_K1_OTHER = {"M": [[2, 2, -1, 1]], "A": [[1, 0], [0, 1], [1, 1], [-1, -1]], "b": [0, 0, 0, 0], "c": [0]}
ABS_SUM_K2 = {"M": [[1, 1, 0, 0], [0, 0, 1, 1]], "A": [[1, 0], [-1, 0], [0, 1], [0, -1]], "b": [0, 0, 0, 0],
              "c": [0, 0]}


def _identifiable(tmp_path, name: str, doc: dict):
    path = write(tmp_path, name, doc)
    verdict = certsym.identifiable(path)
    report = replay(identifiability_certificate(path, verdict), path)
    assert report.kind == ("identifiable" if verdict else "not_identifiable")
    return path, verdict


def test_generic_parameters_are_identifiable(tmp_path) -> None:
    for name, doc in (("e1", E1), ("generic", GENERIC), ("s1_sqrt2", S1)):
        path, v = _identifiable(tmp_path, name, doc)
        assert v.identifiable and v.counterexample is None
        fibre = certsym.fibre(path)
        assert fibre.minimal and fibre.complete and fibre.zero_factors == []  # the fibre is H_n·θ


def test_a_zero_factor_gives_a_second_orbit_theta_F(tmp_path) -> None:
    """E5 (F = {1, 2}: 1 − 1 = 0) and E6 (m = 2, F = all three rows: (1,0) + (0,1) + (−1,−1) = 0)."""
    verdicts = {}
    for name, doc, factor in (("e5", E5, [0, 1]), ("e6", E6, [0, 1, 2])):
        path, verdicts[name] = _identifiable(tmp_path, name, doc)
        assert not verdicts[name].identifiable and verdicts[name].zero_factor == factor
        assert certsym.fibre(path).zero_factors == [factor]
    flipped = write(tmp_path, "e6_flipped", E6_FLIPPED)  # MATH.md's θ^F for E6 is the certified counterexample
    assert verdicts["e6"].counterexample == certsym.load(flipped).network
    same = certsym.equivalent(path, flipped)
    assert same
    replay(same.certificate(), path, flipped)


def test_density_a_perturbation_within_1e_6_is_identifiable(tmp_path) -> None:
    _, v = _identifiable(tmp_path, "e5_perturbed", E5_PERTURBED)
    assert v.identifiable


def test_antiparallel_rows_abs_x_is_identifiable_the_condition_is_not_necessary(tmp_path) -> None:
    _, v = _identifiable(tmp_path, "abs", ABS)
    assert v.identifiable


def test_the_identifiable_set_is_not_open(tmp_path) -> None:
    """σ(x) + σ(−x + δ) → |x| as δ → 0, and none of them is identifiable: F = {1, 2} is a zero factor."""
    for delta in ("1/10", "1/1000", "1/1000000"):
        doc = {"M": [[1, 1]], "A": [[1], [-1]], "b": [0, delta], "c": [0]}
        _, v = _identifiable(tmp_path, f"near_abs_{delta.split('/')[1]}", doc)
        assert not v.identifiable and v.zero_factor == [0, 1]


def test_antiparallel_configurations_decide_math_md_examples(tmp_path) -> None:
    for name, doc, other in (("abs_plus_kink", ABS_PLUS_KINK, ABS_PLUS_KINK_OTHER),
                             ("abs_sum_k1", ABS_SUM_K1, ABS_SUM_K1_OTHER)):
        path, v = _identifiable(tmp_path, name, doc)
        assert not v.identifiable and v.counterexample is not None
        stated = write(tmp_path, f"{name}_other", other)  # MATH.md's θ' realizes ρ(θ) too
        same = certsym.equivalent(path, stated)
        assert same
        replay(same.certificate(), path, stated)
    _, v = _identifiable(tmp_path, "abs_sum_k2", ABS_SUM_K2)
    assert v.identifiable

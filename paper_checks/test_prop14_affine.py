"""Proposition 14 (Ramakrishnan 2026, "A complete symmetry classification of shallow ReLU networks"), in the form
of ../docs/MATH.md ("Complete classification", consequences):

    For θ = (M, A, b, c) ∈ Ω(m, n, k), ρ(θ)(x) = M σ(Ax + b) + c is an affine map iff, after the moves 1–3
    (zeroing dead neurons, shifting the bias of constant neurons into c, merging positively proportional
    neurons), the remaining neurons split into antisymmetric pairs r_j = −λ r_i, v_j = −v_i / λ (λ > 0).
    Then ρ(θ)(x) = Σ_pairs v_i (a_i·x + b_i) + c, by σ(z) − σ(−z) = z.

Checked through ``certsym.affine`` on MATH.md's E4 (both parameters realize x ↦ x) and E5 (the clamp, not affine),
on |x| = σ(x) + σ(−x) (a pair with the wrong output weights), and on a network over Q(√2) that needs every move
before it pairs (a split neuron, a dead one, a constant one); the stated map is certified equal to ρ(θ) by
``certsym.equivalent``. Every verdict's certificate (``affine`` / ``not_affine``) is replayed VALID.
"""

from __future__ import annotations

import certsym
from paper_checks.support import EXAMPLES, affine_certificate, replay, write

E4, E4_SHIFTED = EXAMPLES["E4"]  # σ(x) − σ(−x) = x, and σ(x − 3) − σ(3 − x) + 3 = x
E5 = EXAMPLES["E5"][0]  # σ(x) − σ(x − 1): the clamp
ABS = {"M": [[1, 1]], "A": [[1], [-1]], "b": [0, 0], "c": [0]}  # |x|: antiparallel, but v_j ≠ −v_i / λ
# m = 2 over Q(√2): a split neuron (two positively proportional halves, merged by move 3), its antisymmetric partner
# (λ = 2), a dead neuron (move 1) and a constant neuron (move 2). ρ(θ)(x) = x1 + 2 x2 + 1/3 + 2√2 + 1.
NEEDS_MOVES = {"M": [["1/2", "1/6", "-1/2", 0, "sqrt(2)"]],
               "A": [[1, 2], [3, 6], [-2, -4], [5, -1], [0, 0]],
               "b": ["1/3", 1, "-2/3", 1, 2], "c": [1]}
# the stated map x ↦ x1 + 2 x2 + (4/3 + 2√2), written with the pairs σ(x_q) − σ(−x_q) = x_q
ITS_MAP = {"M": [[1, -1, 2, -2]], "A": [[1, 0], [-1, 0], [0, 1], [0, -1]], "b": [0, 0, 0, 0], "c": ["4/3 + 2*sqrt(2)"]}


def _decide(tmp_path, name: str, doc: dict):
    path = write(tmp_path, name, doc)
    verdict = certsym.affine(path)
    report = replay(affine_certificate(path, verdict), path)
    assert report.kind == ("affine" if verdict.affine else "not_affine")
    return path, verdict


def test_e4_both_parameters_are_the_identity_map(tmp_path) -> None:
    for name, doc in (("e4", E4), ("e4_shifted", E4_SHIFTED)):
        _, v = _decide(tmp_path, name, doc)
        assert v.affine and len(v.pairs) == 1
        assert [list(row) for row in v.linear] == [[1]] and list(v.constant) == [0]


def test_e5_clamp_is_not_affine(tmp_path) -> None:
    _, v = _decide(tmp_path, "e5", E5)
    assert not v.affine and v.points is not None  # two points where the midpoint rule fails, replayed exactly


def test_an_antiparallel_pair_with_the_wrong_weights_is_not_affine(tmp_path) -> None:
    _, v = _decide(tmp_path, "abs", ABS)
    assert not v.affine


def test_moves_1_to_3_then_pairs_give_the_stated_map(tmp_path) -> None:
    path, v = _decide(tmp_path, "needs_moves", NEEDS_MOVES)
    assert v.affine and len(v.pairs) == 1  # the split halves merged, the dead and constant neurons removed
    assert [list(row) for row in v.linear] == [[1, 2]]
    stated = write(tmp_path, "its_map", ITS_MAP)
    same = certsym.equivalent(path, stated)
    assert same
    replay(same.certificate(), path, stated)


def test_one_live_kink_more_is_not_affine(tmp_path) -> None:
    kinked = {"M": [NEEDS_MOVES["M"][0] + [1]], "A": NEEDS_MOVES["A"] + [[1, 0]], "b": NEEDS_MOVES["b"] + [0],
              "c": NEEDS_MOVES["c"]}
    _, v = _decide(tmp_path, "kinked", kinked)
    assert not v.affine

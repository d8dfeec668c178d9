"""Theorems 3 and 4 (Ramakrishnan 2026: the complete classification), in the form of ../docs/MATH.md ("Complete
classification (kink invariants)", consequences):

    ρ(θ1) = ρ(θ2) iff θ1 ⊖ θ2 = ([M1 | −M2], [A1; A2], [b1; b2], c1 − c2) reduces by the moves 1–3 (zeroing,
    bias shifting, merging) to a parameter made only of antisymmetric pairs (σ(z) − σ(−z) = z) whose affine
    parts cancel the constant. The merges of a neuron of θ1 with one of θ2 form an H_n element between the
    minimal forms; the pairs are the only symmetry beyond H_n. Equivalently: ρ(θ1) = ρ(θ2) iff both have the
    same kink J_H on every hyperplane H with J_H ≠ 0, the same linear part and the same constant.

Checked through ``certsym.equivalent``, ``certsym.canon``, ``certsym.affine`` and ``certsym.minimal`` on every
pair of MATH.md's worked examples (E1–E6, and S1 over Q(√2)), each also with its constant moved by 1/1000 (NOT
EQUIVALENT, at a rational witness): EQUIVALENT by an H_n element alone for E1 and S1, after merges (E2), zeroing
(E3a) and bias shifting (E3b), and only by cancellation pairs for E4, E5 and E6. Every verdict's certificate is
replayed VALID bound to both files, and so are the ``affine`` certificates of θ1 ⊖ θ2 and the ``minimal_form``
certificates (``certsym minimal --cert``: the API's ``minimal`` returns a network without one).
"""

from __future__ import annotations

import pytest

import certsym
from paper_checks.support import EXAMPLES, affine_certificate, command, replay, write

# (neurons matched by H_n, cross merges, antisymmetric pairs) in the certified decision of each pair
COUNTS = {"E1": (2, 0, 0), "E2": (1, 0, 0), "E3a": (1, 0, 0), "E3b": (1, 0, 0), "E4": (0, 0, 2), "E5": (0, 0, 2),
          "E6": (0, 0, 3), "S1": (2, 0, 0)}


def _negated(x):
    return -x if isinstance(x, int) else f"-({x})"


def difference(p: dict, q: dict) -> dict:
    """θ1 ⊖ θ2: ρ(θ1 ⊖ θ2) = ρ(θ1) − ρ(θ2)."""
    return {"M": [row_p + [_negated(x) for x in row_q] for row_p, row_q in zip(p["M"], q["M"], strict=True)],
            "A": p["A"] + q["A"], "b": p["b"] + q["b"],
            "c": [f"({x}) - ({y})" for x, y in zip(p["c"], q["c"], strict=True)]}


def moved(doc: dict) -> dict:
    """``doc`` with its first constant moved by 1/1000."""
    return {**doc, "c": [f"({doc['c'][0]}) + 1/1000", *doc["c"][1:]]}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_worked_pair_is_equivalent_with_its_certificate(tmp_path, name: str) -> None:
    p, q = write(tmp_path, "theta1", EXAMPLES[name][0]), write(tmp_path, "theta2", EXAMPLES[name][1])
    verdict = certsym.equivalent(p, q)
    assert verdict and verdict.counts() == COUNTS[name]
    assert replay(verdict.certificate(), p, q).kind == "equivalent"
    assert certsym.canon(p).hash == certsym.canon(q).hash  # the kink invariants agree


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_pair_with_a_constant_moved_differs_at_a_rational_witness(tmp_path, name: str) -> None:
    p, q = write(tmp_path, "theta1", EXAMPLES[name][0]), write(tmp_path, "theta2", moved(EXAMPLES[name][1]))
    verdict = certsym.equivalent(p, q)
    assert not verdict and verdict.witness is not None
    assert replay(verdict.certificate(), p, q).kind == "not_equivalent"  # both exact values at the witness
    assert certsym.canon(p).hash != certsym.canon(q).hash


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_difference_reduces_to_cancelling_pairs_exactly_when_equal(tmp_path, name: str) -> None:
    """θ1 ⊖ θ2 is affine with zero linear part and zero constant; with θ2's constant moved, the constant is
    −1/1000: the pairs' affine parts no longer cancel it."""
    p, q = EXAMPLES[name]
    for other, thousand_times_constant in ((q, 0), (moved(q), -1)):
        path = write(tmp_path, "difference", difference(p, other))
        verdict = certsym.affine(path)
        assert replay(affine_certificate(path, verdict), path).kind == "affine"
        assert all(x == 0 for row in verdict.linear for x in row)
        assert [1000 * x for x in verdict.constant] == [thousand_times_constant]


def test_a_kink_moved_is_not_equivalent_and_its_difference_is_not_affine(tmp_path) -> None:
    p, q = EXAMPLES["E6"]
    kinked = {**q, "b": [0, 0, "-1 + 1/1000"]}  # one hyperplane moved: a kink no other neuron cancels
    a, b = write(tmp_path, "theta1", p), write(tmp_path, "theta2", kinked)
    verdict = certsym.equivalent(a, b)
    assert not verdict
    replay(verdict.certificate(), a, b)
    path = write(tmp_path, "difference", difference(p, kinked))
    not_affine = certsym.affine(path)
    assert not not_affine.affine
    assert replay(affine_certificate(path, not_affine), path).kind == "not_affine"


@pytest.mark.parametrize("name, reduced", [("E2", "2σ(x)"), ("E3a", "σ(x)"), ("E3b", "σ(x) + 10")])
def test_moves_1_to_3_give_the_minimal_form_with_its_certificate(tmp_path, capsys, name: str, reduced: str) -> None:
    path = write(tmp_path, "theta", EXAMPLES[name][0])
    theta_min = certsym.minimal(path)
    live = [i for i in range(theta_min.n) if theta_min.M[0][i] != 0]
    assert len(live) == 1 and list(theta_min.A[live[0]]) == [1] and theta_min.b[live[0]] == 0
    assert (theta_min.M[0][live[0]], theta_min.c[0]) == {"2σ(x)": (2, 0), "σ(x)": (1, 0), "σ(x) + 10": (1, 10)}[reduced]
    cert, out = str(tmp_path / "minimal.cert.json"), str(tmp_path / "theta_min.json")
    assert command(capsys, "minimal", path, "-o", out, "--cert", cert)[0] == 0
    assert replay(cert, path).kind == "minimal_form"
    assert certsym.equivalent(path, out) and certsym.minimal(out).M == theta_min.M

"""Arjevani & Field (2020), "Symmetry & critical points for a model shallow neural network": the symmetric families
of critical points, in the form of ../docs/MATH.md (Part II, "Symmetry" and "What the second paper reports"):

    The loss F(W) = ½ E_x[(Σ_i σ(w_i·x) − Σ_i σ(v_i·x))²], x ~ N(0, I_k), teacher V = I_k, is invariant under
    Γ = S_k × S_k, W ↦ P_π W P_ρ^T, and the isotropy groups of its symmetric critical points are diagonal
    subgroups Δ(S_p1 × … × S_pr). By symmetric criticality, a critical point of F restricted to the fixed-point
    space Fix(Δ(S_p1 × … × S_pr)) (a few block parameters, k entering as a parameter) is a critical point of F
    on all of M(k, k). The families: one-misfit, isotropy ΔS_{k−1} (k − 1 neurons near their targets e_i, one
    misfit neuron near −e_k: the spurious minima Safran & Shamir found for 6 ≤ k ≤ 20), 5 parameters;
    negative-diagonal, ΔS_k, 2 parameters; two-misfit, Δ(S_{k−2} × S_2), 6 parameters; good-plus-negative,
    ΔS_{k−1}, 5 parameters; and misfit-M, Δ(S_{k−M} × S_M).

certsym exposes the second paper through its command line only (``certsym landscape …``; no function of
``certsym.api``), so these checks run it in-process with ``--json``: ``landscape families`` (the families and their
fixed-point spaces), ``landscape point`` (the matrix W, whose exact isotropy is checked by permuting it), and
``landscape critical --cert`` at the instances the paper and the reproduction use (one-misfit at k = 6, the first
k of Safran & Shamir's range; the others at k = 10; misfit-3 at k = 12, a spurious minimum gradient descent
reaches):
a Krawczyk box holding exactly one critical point of the restricted loss, hence a critical point of F, whose
``critical_point`` certificate (re-derived by the checker in interval arithmetic) is replayed VALID.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from paper_checks.support import command, landscape, replay

# family: (isotropy as certsym prints it, number of block parameters, block sizes at k, k)
FAMILIES = {"one-misfit": ("ΔS_{k−1}", 5, [5, 1], 6), "negative-diagonal": ("ΔS_k", 2, [10], 10),
            "two-misfit": ("Δ(S_{k−2} × S_2)", 6, [8, 2], 10), "good-plus-negative": ("ΔS_{k−1}", 5, [9, 1], 10)}


def _fixed_by_swap(W: np.ndarray, i: int, j: int) -> bool:
    """Is W fixed by the diagonal transposition (π, π), π = (i j): rows and columns i, j exchanged?"""
    order = list(range(len(W)))
    order[i], order[j] = j, i
    return bool(np.array_equal(W[np.ix_(order, order)], W))


def test_the_families_and_their_fixed_point_spaces(capsys, tmp_path) -> None:
    code, rows, _ = landscape(capsys, tmp_path, "families")
    assert code == 0
    assert {r["name"]: (r["isotropy"], len(r["parameters"])) for r in rows} == \
        {name: spec[:2] for name, spec in FAMILIES.items()}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_critical_point_has_exactly_its_isotropy(capsys, family: str) -> None:
    """Adjacent diagonal transpositions fix W exactly when they stay inside one block of Δ(S_p1 × … × S_pr)."""
    sizes, k = FAMILIES[family][2:]
    code, out = command(capsys, "landscape", "point", "--family", family, "--k", str(k))
    assert code == 0
    W = np.array(json.loads(out)["W"])
    assert W.shape == (k, k)
    block = np.repeat(np.arange(len(sizes)), sizes)
    assert [_fixed_by_swap(W, i, i + 1) for i in range(k - 1)] == [block[i] == block[i + 1] for i in range(k - 1)]


def test_one_misfit_has_k_minus_1_neurons_near_their_targets_and_one_near_minus_e_k(capsys) -> None:
    code, out = command(capsys, "landscape", "point", "--family", "one-misfit", "--k", "10")
    assert code == 0
    W = np.array(json.loads(out)["W"])
    targets = np.vstack([np.eye(10), -np.eye(10)])  # ±e_j
    nearest = [int(np.argmin(np.linalg.norm(targets - w, axis=1))) for w in W]
    assert nearest == [*range(9), 19]  # row i nearest e_i for i < k, the misfit row nearest −e_k


@pytest.mark.parametrize("family, k", [("one-misfit", 6), ("negative-diagonal", 10), ("two-misfit", 10),
                                       ("good-plus-negative", 10), ("misfit-3", 12)])
def test_a_certified_critical_point_of_the_restricted_loss_is_one_of_F(capsys, tmp_path, family: str, k: int) -> None:
    code, out, files = landscape(capsys, tmp_path, "critical", "--family", family, "--k", str(k), cert="cp.json")
    assert code == 0 and out["certified"] and out["family"] == family and out["k"] == k
    report = replay(files["--cert"])
    assert report.kind == "critical_point"

"""Arjevani & Field (2020): where each family of symmetric critical points turns from a saddle into a spurious
local minimum, as certsym certifies it (../README.md, "The teacher–student landscape"; MATH.md Part II):

    Each family is one continuous branch of critical points for real k (k enters the restricted loss as a
    parameter). There is an integer k0 such that the family is a certified saddle at k0 − 1 and a certified
    local minimum at k0, and a real threshold k* ∈ (k0 − 1, k0) at which the Hessian's smallest eigenvalue
    crosses 0: one-misfit turns into a minimum at k0 = 6 (k* ≈ 5.59; Safran & Shamir's range starts at k = 6),
    negative-diagonal at 6 (k* ≈ 5.76), good-plus-negative at 7 (k* ≈ 6.74), two-misfit at 8 (k* ≈ 7.56),
    misfit-3 at 10 (k* ≈ 9.32).

Checked through ``certsym landscape threshold --json --cert``: the integer k0, a bracket [a, b] ⊂ (k0 − 1, k0)
of exact dyadic rationals holding k* (one Krawczyk box for every k in it; a negative eigenvalue at a, none at b),
the ``landscape_threshold`` certificate replayed VALID; and ``landscape critical`` at k0 − 1 and k0 (a saddle,
then a local minimum) with both ``hessian_inertia`` certificates replayed VALID.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from paper_checks.support import landscape, replay

# family: (k0, k* to two decimals)
THRESHOLDS = {"one-misfit": (6, "5.59"), "negative-diagonal": (6, "5.76"), "good-plus-negative": (7, "6.74"),
              "two-misfit": (8, "7.56"), "misfit-3": (10, "9.32")}


@pytest.mark.parametrize("family", list(THRESHOLDS))
def test_the_family_turns_from_saddle_into_minimum(capsys, tmp_path, family: str) -> None:
    k0, near = THRESHOLDS[family]
    code, out, files = landscape(capsys, tmp_path, "threshold", "--family", family, cert="threshold.json")
    assert code == 0 and out["certified"] and out["minimum_from_k"] == k0
    a, b = (Fraction(x) for x in out["bracket"])
    assert k0 - 1 < a < b < k0 and b - a < Fraction(1, 10**6)
    assert abs(a - Fraction(near)) < Fraction(1, 100)
    assert replay(files["--cert"]).kind == "landscape_threshold"
    for k, minimum in ((k0 - 1, False), (k0, True)):
        code, point, files = landscape(capsys, tmp_path, "critical", "--family", family, "--k", str(k),
                                       inertia_cert=f"inertia_{k}.json")
        assert code == 0 and point["certified"] and point["is_local_minimum"] is minimum
        assert replay(files["--inertia-cert"]).kind == "hessian_inertia"


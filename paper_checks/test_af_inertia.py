"""Arjevani & Field (2020): the Hessian at a symmetric critical point, its inertia certified for any k, in the
form of ../docs/MATH.md (Part II, "Symmetry"):

    The Hessian of F at a point with isotropy G commutes with G, so it splits over the isotypic components of
    M(k, k) under G. For G = ΔS_{k−1}, R^k = 2·(trivial) ⊕ (standard), so as S_{k−1}-representations
    M(k, k) = 5·trivial ⊕ 5·[k−2, 1] ⊕ [k−3, 2] ⊕ [k−3, 1, 1]: the Hessian has at most 12 distinct eigenvalues
    (a 5×5 block, a 5×5 block of multiplicity k − 2, and two scalars), and its inertia, hence whether the
    critical point is a local minimum or a saddle, can be certified for any k. For G = ΔS_k:
    M(k, k) = 2·trivial ⊕ 3·[k−1, 1] ⊕ [k−2, 2] ⊕ [k−2, 1, 1].

Checked through ``certsym landscape critical --json --inertia-cert`` on the second paper's instances: one-misfit a
saddle at k = 5 (3 negative eigenvalues) and a spurious local minimum at k = 6 and 10 (Safran & Shamir's range)
and at k = 10^6; negative-diagonal a local minimum at k = 10^4; two-misfit and good-plus-negative local minima at
k = 10; misfit-3 a saddle at k = 9 and a local minimum at k = 12. Every ``hessian_inertia`` certificate is replayed
VALID; the negative count it states is the verdict's, and its isotypic blocks are MATH.md's (their dimensions
times their multiplicities add up to k²).
"""

from __future__ import annotations

import json

import pytest

from paper_checks.support import landscape, replay

# MATH.md's decompositions: (isotypic component, block size = multiplicity in M(k, k))
DELTA_S_K_MINUS_1 = [("trivial", 5), ("[k-2,1]", 5), ("[k-3,2]", 1), ("[k-3,1,1]", 1)]
DELTA_S_K = [("trivial", 2), ("[k-1,1]", 3), ("[k-2,2]", 1), ("[k-2,1,1]", 1)]

CASES = [("one-misfit", 5, 3, DELTA_S_K_MINUS_1), ("one-misfit", 6, 0, DELTA_S_K_MINUS_1),
         ("one-misfit", 10, 0, DELTA_S_K_MINUS_1), ("one-misfit", 10**6, 0, DELTA_S_K_MINUS_1),
         ("negative-diagonal", 10**4, 0, DELTA_S_K), ("good-plus-negative", 10, 0, DELTA_S_K_MINUS_1),
         ("two-misfit", 10, 0, None), ("misfit-3", 9, 5, None), ("misfit-3", 12, 0, None)]


@pytest.mark.parametrize("family, k, negative, blocks", CASES)
def test_the_certified_inertia(capsys, tmp_path, family: str, k: int, negative: int, blocks) -> None:
    code, out, files = landscape(capsys, tmp_path, "critical", "--family", family, "--k", str(k),
                                 inertia_cert="inertia.json")
    assert code == 0 and out["certified"]
    assert out["hessian_negative_eigenvalues"] == negative and out["is_local_minimum"] is (negative == 0)
    assert replay(files["--inertia-cert"]).kind == "hessian_inertia"
    with open(files["--inertia-cert"]) as f:
        proof = json.load(f)["proof"]
    assert proof["negative"] == negative
    assert sum(irrep["block"] * irrep["dim"] for irrep in proof["irreps"]) == k * k  # the blocks cover M(k, k)
    if blocks is not None:
        assert [(irrep["name"], irrep["block"]) for irrep in proof["irreps"]] == blocks

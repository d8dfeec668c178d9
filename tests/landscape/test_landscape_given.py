"""misfit-M families and certifying a given point W (descent end points included)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from certsym.cli import main
from certsym.landscape.certify import critical
from certsym.landscape.families import family
from certsym.landscape.given import certify_matrix, isotropy
from certsym.landscape.restricted import expand
from certsym_check import check_certificate


def test_misfit_three_at_eighteen_is_the_descent_point() -> None:
    """The "other" end point of the descent at k = 18 (F = 0.03473, isotropy Δ(S_15 × S_3)) is misfit-3."""
    c = critical("misfit-3", 18)
    assert c.certified and c.inertia.negative == 0
    assert abs(float(c.box.loss.mid()) - 0.03473) < 5e-6
    from certsym.certify import critical_point_certificate

    report = check_certificate(critical_point_certificate(c))
    assert report.valid and any("misfit-3" in fact for fact in report.facts)


def test_misfit_names() -> None:
    assert family("misfit-1").name == "one-misfit" and family("misfit-2").name == "two-misfit"
    assert family("misfit-5").layout(12).sizes == (7, 5)
    for bad in ("misfit-0", "misfit-x", "misfit-03", "misfit"):
        with pytest.raises(KeyError):
            family(bad)


def test_a_given_point_is_certified_up_to_symmetry_and_noise() -> None:
    """A family member scrambled by Γ = S_k × S_k and perturbed by 1e-7 is recognized and certified."""
    c = critical("misfit-3", 9)
    W = expand(c.box.layout, [float(x) for x in c.box.center])
    rng = np.random.default_rng(0)
    rows, cols = rng.permutation(9), rng.permutation(9)
    scrambled = W[rows][:, cols] + 1e-7 * rng.standard_normal((9, 9))
    assert isotropy(scrambled)[2] == [6, 3]
    given = certify_matrix(scrambled)
    assert given.critical is not None and given.name == "misfit-3"
    assert abs(float(given.critical.box.loss.mid()) - float(c.box.loss.mid())) < 1e-15


def test_a_point_far_from_any_critical_point_is_refused_with_the_reason() -> None:
    W = np.random.default_rng(1).standard_normal((6, 6))
    given = certify_matrix(W)
    assert given.critical is None and given.reason


def test_cli_certify_and_descent_certificates(tmp_path, capfd) -> None:
    c = critical("one-misfit", 7)
    W = expand(c.box.layout, [float(x) for x in c.box.center])
    np.savez(tmp_path / "w.npz", W=W)
    cert = tmp_path / "w.json"
    assert main(["landscape", "certify", str(tmp_path / "w.npz"), "--cert", str(cert), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["family"] == "one-misfit" and out["certified"] and out["isotropy"] == "Δ(S_6 × S_1)"
    assert main(["check", str(cert)]) == 0
    (tmp_path / "bad.json").write_text(json.dumps({"W": [[1, 2], [3]]}))
    assert main(["landscape", "certify", str(tmp_path / "bad.json")]) == 2
    capfd.readouterr()
    folder = tmp_path / "certs"
    assert main(["landscape", "descent", "--k", "10", "--runs", "6", "--seed", "3", "--certs", str(folder),
                 "--json"]) == 0
    data = json.loads(capfd.readouterr().out)
    spurious = [name for name in data["lands_in"] if name != "global minimum"]
    assert spurious and all(data["certified"][name]["certified"] for name in spurious)
    written = sorted(folder.glob("*.json"))
    assert len(written) == len({data["certified"][name]["family"] for name in spurious})
    assert all(check_certificate(json.loads(p.read_text())).valid for p in written)


@pytest.mark.parametrize("M, k", [(3, 9), (4, 9), (5, 11)])
def test_misfit_inertia_by_isotypic_blocks_replays_and_matches_the_full_hessian(M: int, k: int) -> None:
    """The isotypic table of Δ(S_{k−M} × S_M) (M ≥ 3): the producer's count equals the full Hessian's, the
    checker replays it with its own table, and a wrong count is rejected."""
    import copy

    from flint import ctx

    from certsym.certify import hessian_inertia_certificate
    from certsym.landscape.certify import _full_inertia, certificate_inertia
    from certsym_check.kinds.landscape import decomposition

    c = critical(f"misfit-{M}", k)
    iso = certificate_inertia(c)
    with ctx.workprec(c.box.prec):
        full = _full_inertia(c.box, k)
    assert iso.method == "isotypic" and iso.negative == full.negative and iso.negative is not None
    irreps, _ = decomposition([k - M, M])
    assert sum(ir["block"] * ir["dim"] for ir in irreps) == k * k
    doc = hessian_inertia_certificate(c, iso)
    assert check_certificate(doc).valid
    wrong = copy.deepcopy(doc)
    wrong["proof"]["negative"] += 1
    assert not check_certificate(wrong).valid


@pytest.mark.parametrize("p, M", [(4, 3), (5, 3), (9, 3), (4, 4), (6, 5), (12, 7)])
def test_checker_table_of_two_blocks_is_consistent(p: int, M: int) -> None:
    """The checker's own table for Δ(S_p × S_M): the blocks fill M(k, k) (Σ block·dim = k²), and every probe's
    fixed dimensions add up to the number of parameters of the refined layout (Σ block·m_ρ(K) = dim Fix(K))."""
    from certsym_check.kinds.landscape import decomposition, names

    irreps, probes = decomposition([p, M])
    assert len(irreps) == (8 if M >= 4 else 7)
    assert sum(ir["block"] * ir["dim"] for ir in irreps) == (p + M) ** 2
    assert len(probes) == len(irreps)  # one probe per unknown multiplicity
    for probe in probes:
        sizes = [s for part in probe["parts"] for s in part]
        assert sum(ir["block"] * f for ir, f in zip(irreps, probe["fixed"], strict=True)) == len(names(sizes))

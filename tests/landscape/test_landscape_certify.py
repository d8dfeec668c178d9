"""Certified critical points (Krawczyk) and Hessian inertia: the isotypic method agrees with the full Hessian."""

from __future__ import annotations

import numpy as np
import pytest
from flint import arb, fmpq

from certsym.landscape import kernel, restricted
from certsym.landscape.certify import certified_signs, critical, inertia, krawczyk
from tests.helpers import edited


@pytest.mark.parametrize("name", ["one-misfit", "negative-diagonal", "two-misfit", "good-plus-negative"])
@pytest.mark.parametrize("k", [6, 7, 9])
def test_isotypic_inertia_equals_full_hessian_inertia(name: str, k: int) -> None:
    c = critical(name, k)
    assert c.box.certified
    full = inertia(c.family, k, c.box, "full")
    iso = inertia(c.family, k, c.box, "isotypic")
    assert full.negative is not None and full.negative == iso.negative
    # and with the float Hessian of the independent kernel on the expanded matrix
    W = restricted.expand(c.box.layout, [float(x) for x in c.box.center])
    assert int((np.linalg.eigvalsh(kernel.hessian(W)) < 0).sum()) == full.negative
    assert float(c.box.loss.mid()) == pytest.approx(kernel.loss(W), abs=1e-12)


def test_one_misfit_is_a_saddle_at_5_and_a_minimum_from_6() -> None:
    assert critical("one-misfit", 5).inertia.negative > 0
    assert critical("one-misfit", 6).inertia.negative == 0


def test_krawczyk_refuses_a_box_without_the_critical_point() -> None:
    c = critical("one-misfit", 8)
    shifted = [x + fmpq(1, 1000) for x in c.box.center]
    assert not krawczyk(c.box.layout, shifted, c.box.radius, c.box.prec).certified
    assert krawczyk(c.box.layout, c.box.center, c.box.radius, c.box.prec).certified


def test_certified_signs() -> None:
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    D = np.diag([3.0, -2.0, 1e-3, -5.0, 2.0, 7.0])
    H = [[arb(x) for x in row] for row in Q @ D @ Q.T]
    signs = certified_signs(H)
    assert (signs.negative, signs.positive) == (2, 4)
    D[2, 2] = 0.0  # singular: not certifiable
    assert certified_signs([[arb(x) for x in row] for row in Q @ D @ Q.T]).negative is None


@pytest.fixture(scope="module")
def certificates() -> tuple[dict, dict]:
    import json

    from certsym.certify import critical_point_certificate, hessian_inertia_certificate
    from certsym.landscape.certify import certificate_inertia

    c = critical("one-misfit", 5)
    inn = certificate_inertia(c)
    return (json.loads(json.dumps(critical_point_certificate(c))),
            json.loads(json.dumps(hessian_inertia_certificate(c, inn))))


@pytest.mark.parametrize("which,path,value", [
    (0, ("proof", "center", 0), lambda s: str(fmpq(*map(int, s.split("/"))) + fmpq(1, 10**6)) if "/" in s else "2"),
    (0, ("proof", "radius"), "1/1000000000000000000000000000000000000000000000000000000000000000000000000"),
    (0, ("proof", "loss", 0), lambda s: str(fmpq(*map(int, s.split("/"))) + fmpq(1, 10**9)) if "/" in s else "1"),
    (0, ("proof", "sizes"), [3, 2]),
    (0, ("proof", "statement"), "Newton"),
    (1, ("proof", "negative"), lambda n: n + 1),
    (1, ("proof", "irreps", 1, "dim"), lambda n: n + 1),
    (1, ("proof", "probes", 0, "fixed"), [1, 1, 0, 0]),
    (1, ("proof", "probes", 1, "Q", 0), lambda row: ["0"] * len(row)),
    (1, ("proof", "probes"), lambda probes: probes[:1]),
    # found by review: a made-up table whose totals add up used to be trusted
    (1, ("proof", "irreps"), lambda irs: [dict(ir, dim=d) for ir, d in zip(irs, [1, 3, 3, 2], strict=True)]),
    (1, ("proof", "probes", 2, "parts"), [[3, -1, 1, 1], [1]]),
    (1, ("proof", "probes"), lambda probes: [dict(probes[0], fixed=[1, 1])]),
])
def test_tampered_landscape_certificates_are_rejected(certificates, which, path, value) -> None:
    from certsym_check import check_certificate

    assert check_certificate(certificates[which]).valid
    report = check_certificate(edited(certificates[which], path, value))
    assert not report.valid and report.reason


def test_real_k_crossing_of_one_misfit_lies_between_5_and_6() -> None:
    from certsym.landscape.certify import at_real_k, crossing

    t = crossing("one-misfit", 5, 6, steps=8)
    a, b = t.bracket
    assert 5 <= a < b <= 6 and b - a <= fmpq(1, 2**8) and t.branch.certified
    assert any(at_real_k("one-misfit", a)[0].negative)
    assert not any(at_real_k("one-misfit", b)[0].negative)

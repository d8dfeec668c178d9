"""Theorem 2: stabilizers, against a brute-force enumeration of S_n, and their certificates."""

from __future__ import annotations

import itertools
import json
import math

from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, stabilizer_certificate
from certsym.cli import main
from certsym.core.network import Network
from certsym.decide.stabilizer import stabilizer
from certsym_check import check_certificate

RECORD = InputRecord("p", "0" * 64)


def _positive_ratio(x: tuple, y: tuple) -> fmpq | None:
    """d > 0 with x = d·y, if any (independent of certsym's normal forms)."""
    ratios = {xi / yi for xi, yi in zip(x, y, strict=True) if yi != 0}
    if len(ratios) != 1 or any((yi == 0) != (xi == 0) for xi, yi in zip(x, y, strict=True)):
        return None
    (d,) = ratios
    return d if d > 0 else None


def _fixing_permutations(theta: Network, rows_only: bool) -> int:
    """How many π ∈ S_n extend to an h = DP fixing θ (or (A, b)): brute force over S_n."""
    count = 0
    for perm in itertools.permutations(range(theta.n)):
        ok = True
        for i, p in enumerate(perm):
            ri, rp = (*theta.A[i], theta.b[i]), (*theta.A[p], theta.b[p])
            vi, vp = tuple(row[i] for row in theta.M), tuple(row[p] for row in theta.M)
            if all(x == 0 for x in ri) and all(x == 0 for x in rp):
                d = _positive_ratio(vp, vi) if not rows_only and any(vi) else fmpq(1)
                ok = d is not None and (rows_only or all(x == 0 for x in vi) == all(x == 0 for x in vp))
            else:
                d = _positive_ratio(ri, rp)  # d_i r_π(i) = r_i
                ok = d is not None and (rows_only or all(vp[j] == d * vi[j] for j in range(theta.k)))
            if not ok:
                break
        count += ok
    return count


small = st.integers(-2, 2).map(fmpq)


@st.composite
def networks_with_repeats(draw) -> Network:
    m, k = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    base = draw(st.integers(1, 3))
    neurons = [([draw(small) for _ in range(m)], draw(small), [draw(small) for _ in range(k)]) for _ in range(base)]
    for _ in range(draw(st.integers(0, 3))):  # repeats, positively rescaled
        a, b, v = neurons[draw(st.integers(0, base - 1))]
        d = fmpq(draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        neurons.append(([d * x for x in a], d * b, [x / d for x in v]))
    order = draw(st.permutations(range(len(neurons))))
    neurons = [neurons[i] for i in order]
    return Network.build([[nu[2][j] for nu in neurons] for j in range(k)], [nu[0] for nu in neurons],
                         [nu[1] for nu in neurons], [fmpq(0)] * k)


@settings(max_examples=60, deadline=None)
@given(networks_with_repeats())
def test_stabilizer_matches_brute_force(theta: Network) -> None:
    for rows_only in (False, True):
        g = stabilizer(theta, of_rows=rows_only)
        assert g.finite_order * math.factorial(len(g.zero)) == _fixing_permutations(theta, rows_only)
        for t in g.generators:
            h = t.element(theta.n, theta.field.one).act(theta)
            assert (h.A, h.b) == (theta.A, theta.b) if rows_only else h == theta
        assert g.within_bound()
    report = check_certificate(stabilizer_certificate(theta, (stabilizer(theta), stabilizer(theta, True)), RECORD))
    assert report.valid, report.reason


def test_examples_and_cli(tmp_path, capfd) -> None:
    p = tmp_path / "e2.json"
    p.write_text(json.dumps({"M": [[1, 1]], "A": [[1], [1]], "b": [0, 0], "c": [0]}))
    cert = tmp_path / "c.json"
    assert main(["stabilizer", str(p), "--json", "--cert", str(cert)]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["theta"]["type"] == "S_2" and out["theta"]["finite_order"] == 2 and out["theta"]["n_zero"] == 0
    assert set(out["theta"]) >= {"n_zero", "classes", "generators", "finite_order"}
    assert main(["check", str(cert)]) == 0
    capfd.readouterr()
    p.write_text(json.dumps({"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [0]}))  # E1: trivial
    assert main(["stabilizer", str(p), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["theta"]["type"] == "1" and out["rows"]["type"] == "1"


def _valid_doc() -> dict:
    theta = Network.build([[1, 1, 2, 0]], [[1], [1], [2], [0]], [0, 0, 0, 0], [0])
    return stabilizer_certificate(theta, (stabilizer(theta), stabilizer(theta, True)), RECORD)


def test_broken_stabilizer_certificates_rejected() -> None:
    doc = _valid_doc()
    assert check_certificate(doc).valid
    attacks = [
        lambda d: d["proof"]["theta"]["classes"].__setitem__(0, [0]) or d["proof"]["theta"]["classes"].append([1]),
        lambda d: d["proof"]["rows"]["generators"].pop(),
        lambda d: d["proof"]["rows"]["generators"][0]["scale"].__setitem__(0, "2"),
        lambda d: d["proof"]["rows"]["generators"][0]["scale"].__setitem__(0, "-1"),
        lambda d: d["proof"]["theta"].__setitem__("finite_order", "6"),
        lambda d: d["proof"]["theta"].__setitem__("zero", []),
        lambda d: d["proof"]["theta"].__setitem__("type", "S_3"),
    ]
    for attack in attacks:
        broken = json.loads(json.dumps(doc))
        attack(broken)
        assert not check_certificate(broken).valid

"""``certsym reproduce`` and the m = 1 oracle of certsym.reproduce, cross-checked exhaustively."""

from __future__ import annotations

import contextlib
import io
import json
from collections import defaultdict
from itertools import product
from pathlib import Path

import pytest
from flint import fmpq

from certsym.cli import main
from certsym.core.network import Network
from certsym.io import load_networks
from certsym.reproduce import Context, statement_modules
from certsym.reproduce.examples import EXAMPLES
from certsym.reproduce.oracle import breakpoints, probe_points, same_function_m1
from certsym.reproduce.worked_examples import claims, load_pair
from certsym_check import check_certificate

# Grid −4, −15/4, ..., 4 (step 1/4). With entries in {−1, 0, 1} every breakpoint −b/a lies in
# {−1, 0, 1} ⊂ grid; between consecutive grid points both functions are affine, and on each of
# (−∞, −1] and [1, ∞) they are affine with at least two grid points there. So agreement on the
# grid is equivalent to equality on R: an independent reference verdict.
GRID = [fmpq(i, 4) for i in range(-16, 17)]


def grid_signature(net: Network) -> tuple:
    return tuple(tuple(net.evaluate([t])) for t in GRID)


def all_networks(n: int, values: tuple[int, ...] = (-1, 0, 1)) -> list[Network]:
    """Every θ ∈ Ω(1, n, 1) with all entries of M, A, b, c in ``values``."""
    nets = []
    for entries in product(values, repeat=3 * n + 1):
        M, A, b, c = entries[:n], entries[n:2 * n], entries[2 * n:3 * n], entries[3 * n]
        nets.append(Network.build([list(M)], [[a] for a in A], list(b), [c]))
    return nets


# --------------------------------------------------------------------------------------------
# certsym reproduce
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def representative(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """One run of ``certsym reproduce --json`` (the default, representative run) shared by the tests below: the
    output folder, the JSON document on stdout and the progress lines and table on stderr."""
    out = tmp_path_factory.mktemp("reproduce") / "report"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["reproduce", "--json", "--out", str(out)])
    assert code == 0, stderr.getvalue()[-2000:]
    return out, json.loads(stdout.getvalue()), stderr.getvalue()


def test_reproduce_writes_report_and_certificates(representative) -> None:
    out, _, text = representative
    assert "FAILED" not in text and "reproduced" in text
    for module in statement_modules():
        assert module.STATEMENT in text
        assert (out / "certificates" / module.SLUG).is_dir()
    report = (out / "REPORT.md").read_text()
    assert "Every statement reproduced" in report
    for png in ("E5_m1.png", "E4_m1.png", "E6_m2.png"):
        assert (out / png).stat().st_size > 1000 and png in report and png in (out / "report.html").read_text()
    page = (out / "report.html").read_text()
    assert "certsym 0.1.0, written " in page  # the version and the date, then the figures before the tables
    assert page.index("E5_m1.png") < page.index("<h2>Statements</h2>") < page.index("<h2>Certificates</h2>")
    assert not any(python in page for python in ("**", "sqrt(", "*pi", "pi*"))  # the math rendered, not Python
    certs = sorted((out / "certificates").rglob("*.json"))
    assert len(certs) > 100
    assert all(f"href='./certificates/{p.relative_to(out / 'certificates')}'" in page for p in certs)
    assert all(check_certificate(json.loads(p.read_text())).valid for p in certs[::7])


def test_reproduce_prints_progress_with_estimates_and_a_whole_table(representative) -> None:
    _, _, text = representative
    lines = text.splitlines()
    count = len(statement_modules())
    assert lines[0].startswith(f"reproduce: {count} statements, the representative run (about ")
    for number, module in enumerate(statement_modules(), 1):
        assert f"reproduce: [{number}/{count}] {module.STATEMENT} (about " in text
    assert any(line.startswith("reproduce: done in ") for line in lines)
    table = [line for line in lines if "reproduced" in line and "│" in line]
    assert len(table) == count and max(map(len, table)) > 80  # not cut at 80 columns in a log


def test_reproduce_json(representative) -> None:
    _, data, _ = representative
    assert data["reproduced"] is True and data["mode"] == "representative"
    assert {row["statement"] for row in data["rows"]} == {m.STATEMENT for m in statement_modules()}
    assert all(row["agreeing"] == row["instances"] > 0 and row["checked"] == row["certificates"]
               for row in data["rows"])
    assert all(row["refusals"] == 0 and row["disagreements"] == {"certsym_yes_oracle_no": 0, "certsym_no_oracle_yes": 0}
               for row in data["rows"])
    independent = {row["statement"]: row["independent"] for row in data["rows"]}
    modules = statement_modules()
    assert "landscape" in {module.SLUG for module in modules} and len(modules) > 1
    for module in modules:
        if module.SLUG != "landscape":
            assert independent[module.STATEMENT] > 0, module.STATEMENT
        else:  # the landscape statements are checked by self-consistency and certificates, with no outside oracle
            assert independent[module.STATEMENT] == 0, module.STATEMENT


def test_full_and_quick_are_exclusive(capfd) -> None:
    assert main(["reproduce", "--full", "--quick"]) == 2
    assert "not allowed with" in capfd.readouterr().err


def test_disagreements_and_refusals_are_counted() -> None:
    """Disagreements with an oracle are counted by kind, self-consistency apart; one refusal fails the row."""
    ctx = Context(quick=True)
    ctx.compare("S", "s", "a", True, False, "oracle")
    ctx.compare("S", "s", "b", False, True, "oracle")
    ctx.compare("S", "s", "c", True, True, "oracle")
    ctx.compare("S", "s", "d", True, None, "oracle")  # the oracle could not answer
    ctx.record("S", "s", "e", True)
    row = ctx.rows["S"]
    assert (row.instances, row.independent, row.yes_no, row.no_yes, row.self_consistency) == (5, 3, 1, 1, 2)
    assert row.failures == ["a: certsym True, oracle False", "b: certsym False, oracle True"]
    ctx.record("R", "r", "f", True)
    assert ctx.rows["R"].reproduced
    ctx.refuse("R", "g", "too big")
    assert not ctx.rows["R"].reproduced and ctx.rows["R"].cells()[5] == "1"


def test_a_failing_instance_is_reported() -> None:
    """The tally can fail: a wrong verdict or a rejected certificate makes a row not reproduced."""
    ctx = Context(quick=True)
    ctx.record("S", "s", "wrong verdict", False)
    ctx.record("T", "t", "bad certificate", True, {"format": "nonsense"})
    assert not ctx.rows["S"].reproduced and not ctx.rows["T"].reproduced


def test_worked_example_claims_hold() -> None:
    results = claims()
    assert len(results) >= 10 and all(r.ok for r in results)


# --------------------------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------------------------


def test_oracle_accepts_the_m1_examples() -> None:
    checked = 0
    for name, pair in EXAMPLES.items():
        if len(pair[0]["A"][0]) != 1:  # m = 2 (E6): not for the m = 1 oracle
            continue
        p, q = load_pair(name)
        verdict, npts = same_function_m1(p, q)
        assert verdict, name
        assert npts == len(probe_points(p, q))
        checked += 1
    assert checked >= 7  # E1, E2, E3a, E3b, E4, E5 and S1


def test_oracle_can_fail() -> None:
    # E5 with its constant changed from 1 to 2: the functions differ by 1 everywhere.
    p_dict, q_dict = EXAMPLES["E5"]
    changed = dict(q_dict, c=[2])
    (p, q), _ = load_networks(["E5[0]", "E5[1]*"], texts=[json.dumps(p_dict), json.dumps(changed)])
    assert same_function_m1(p, q)[0] is False
    # E1 with one output weight changed: differs only right of the kink at x = 1
    (p, q), _ = load_networks(
        ["E1", "E1*"],
        texts=[json.dumps(EXAMPLES["E1"][0]), json.dumps(dict(EXAMPLES["E1"][0], M=[[1, 3]]))],
    )
    assert same_function_m1(p, q)[0] is False


def test_oracle_against_affine_callable() -> None:
    p, q = load_pair("E4")  # both realize x ↦ x
    assert same_function_m1(p, lambda x: [x])[0]
    assert same_function_m1(q, lambda x: [x])[0]
    assert not same_function_m1(p, lambda x: [x + 1])[0]
    assert not same_function_m1(p, lambda x: [2 * x])[0]


def test_oracle_over_q_sqrt2_can_fail() -> None:
    p_dict, q_dict = EXAMPLES["S1 (over Q(sqrt 2))"]
    changed = dict(q_dict, b=[0, "-sqrt(2) + 1/1000"])  # moves the kink slightly
    (p, q), _ = load_networks(["S1", "S1*"], texts=[json.dumps(p_dict), json.dumps(changed)])
    assert same_function_m1(p, q)[0] is False


def test_breakpoints() -> None:
    net = Network.build([[1, 1, 1]], [[2], [0], [-4]], [-1, 5, 2], [0])
    # −b/a for a ≠ 0: −(−1)/2 = 1/2 and −2/(−4) = 1/2; the a = 0 neuron has none
    assert breakpoints(net) == [fmpq(1, 2), fmpq(1, 2)]
    assert probe_points(net) == [fmpq(-1, 2), fmpq(1, 2), fmpq(3, 2)]
    with pytest.raises(ValueError):
        breakpoints(Network.build([[1]], [[1, 1]], [0], [0]))


def test_oracle_exhaustive_width_1() -> None:
    """All 81 × 81 pairs of Ω(1, 1, 1) with entries in {−1, 0, 1}: oracle = grid verdict."""
    nets = all_networks(1)
    assert len(nets) == 81
    sigs = [grid_signature(net) for net in nets]
    equal = unequal = 0
    for (f, sf), (g, sg) in product(zip(nets, sigs, strict=True), repeat=2):
        verdict, _ = same_function_m1(f, g)
        assert verdict == (sf == sg), (f, g)
        if verdict and f != g:
            equal += 1
        elif not verdict:
            unequal += 1
    # both verdicts occur, including equalities between different parameters
    # (e.g. a dead neuron: M = 0 with any (A, b) and the same c)
    assert equal > 0
    assert unequal > 0


def test_oracle_width_2_classes() -> None:
    """All 3^7 networks of Ω(1, 2, 1) with entries in {−1, 0, 1}, grouped by grid values: the
    oracle identifies every network with the representative of its class and separates it
    from the representative of another class."""
    nets = all_networks(2)
    assert len(nets) == 3**7
    classes: dict[tuple, list[Network]] = defaultdict(list)
    for net in nets:
        classes[grid_signature(net)].append(net)
    keys = list(classes)
    assert 1 < len(keys) < len(nets)
    for i, key in enumerate(keys):
        rep = classes[key][0]
        other = classes[keys[(i + 1) % len(keys)]][0]
        for net in classes[key]:
            assert same_function_m1(net, rep)[0], (net, rep)
            assert not same_function_m1(net, other)[0], (net, other)


def test_the_heartbeat_prints_when_three_seconds_have_passed(monkeypatch, capsys) -> None:
    """``certsym reproduce`` is never silent for long: every instance and every replay tells the heartbeat, which
    prints a line when 3 s have passed since its last (a fake clock here: nothing races the real one)."""
    from certsym.cli import reproduce

    now = [100.0]
    monkeypatch.setattr(reproduce.time, "monotonic", lambda: now[0])
    beat = reproduce._Heartbeat()
    beat("1 instance")
    now[0] += 2.9
    beat("2 instances")
    assert capsys.readouterr().err == ""
    now[0] += 0.2
    beat("3 instances")
    assert capsys.readouterr().err == "reproduce:   … 3 instances\n"
    ctx = Context(True, None, beat)
    now[0] += 6
    ctx.record("S", "s", "i", True)
    assert "1 instances, 0 certificates" in capsys.readouterr().err

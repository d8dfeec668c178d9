"""Theorem 1 and Corollary 9: identifiability decisions, counterexamples and their certificates."""

from __future__ import annotations

import itertools
import json
import random
from collections import defaultdict

import pytest
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, identifiability_certificate
from certsym.cli import main
from certsym.core.network import Network
from certsym.decide.identifiability import Undecided, decide_identifiable
from certsym.reproduce.examples import EXAMPLES
from certsym_check import check_certificate

RECORD = InputRecord("p", "0" * 64)


def _certified(theta: Network):
    verdict = decide_identifiable(theta)
    report = check_certificate(identifiability_certificate(verdict, RECORD))
    assert report.valid, report.reason
    return verdict


def _random_network(rng: random.Random, m: int, n: int, k: int) -> Network:
    def q() -> fmpq:
        return fmpq(rng.choice([-1, 1]) * rng.randint(1, 60), rng.randint(1, 7))

    return Network.build([[q() for _ in range(n)] for _ in range(k)], [[q() for _ in range(m)] for _ in range(n)],
                         [q() for _ in range(n)], [q() for _ in range(k)])


@pytest.mark.parametrize("m, n, k", [(1, 3, 1), (2, 4, 1), (3, 3, 2), (2, 6, 2), (1, 8, 1)])
def test_random_networks_are_identifiable(m: int, n: int, k: int) -> None:
    rng = random.Random(1000 * m + 10 * n + k)
    for _ in range(10):
        assert _certified(_random_network(rng, m, n, k)).identifiable


@pytest.mark.parametrize("m, n, k", [(1, 3, 1), (2, 3, 2)])
def test_adding_an_identical_neuron_breaks_identifiability(m: int, n: int, k: int) -> None:
    rng = random.Random(7 + n)
    for _ in range(5):
        theta = _random_network(rng, m, n, k)
        i = rng.randrange(n)
        twin = Network.build([list(row) + [row[i]] for row in theta.M], list(theta.A) + [theta.A[i]],
                             list(theta.b) + [theta.b[i]], theta.c)
        verdict = _certified(twin)
        assert not verdict.identifiable
        assert verdict.counterexample.evaluate([fmpq(1, 3)] * m) == twin.evaluate([fmpq(1, 3)] * m)


def test_math_md_examples() -> None:
    expected = {"E1": True, "E2": False, "E3a": False, "E3b": False, "E4": False, "E5": False, "E6": False}
    for name, want in expected.items():
        d = EXAMPLES[name][0]
        theta = Network.build(d["M"], d["A"], d["b"], d["c"])
        assert _certified(theta).identifiable is want, name


PROBES = {  # the audit's probes: (M, A, b, c), identifiable?
    "|x| + σ(x − 1)": (([[1, 1, 1]], [[1], [-1], [1]], [0, 0, -1], [0]), False),
    "|x1| + |x2|, k = 1": (([[1, 1, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]], [0] * 4, [0]), False),
    "|x1| e1 + |x2| e2, k = 2": (([[1, 1, 0, 0], [0, 0, 1, 1]], [[1, 0], [-1, 0], [0, 1], [0, -1]], [0] * 4, [0, 0]),
                                 True),
    "|x|": (([[1, 1]], [[1], [-1]], [0, 0], [0]), True),
    "σ(x) + σ(−x + 1)": (([[1, 1]], [[1], [-1]], [0, 1], [0]), False),
    "2|x| + |x − 1|, m = 1, n = 4": (([[2, 2, 1, 1]], [[1], [-1], [1], [-1]], [0, 0, -1, 1], [0]), False),
    # the three normals are dependent: t σ(z) − t σ(−z) = t z added on each hyperplane with t1 = t2 = −t3 (and c
    # adjusted) re-splits the output weights outside the orbit
    # (certsym.reproduce.oracle.identifiable_by_definition agrees)
    "|x1| + |x2| + |x1 + x2 − 1|, k = 3": (([[1, 1, 0, 0, 1, 1], [0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]],
                                            [[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1]],
                                            [0, 0, 0, 0, -1, 1], [0, 0, 0]), False),
}


@pytest.mark.parametrize("name", list(PROBES))
def test_audit_probes_are_decided_and_certified(name: str) -> None:
    """Antiparallel rows with nonzero kinks are decided (MATH.md's configurations), never refused; a NOT
    verdict's θ' realizes the same function and lies outside the orbit (both replayed by the checker)."""
    (M, A, b, c), want = PROBES[name]
    theta = Network.build(M, A, b, c)
    verdict = _certified(theta)
    assert verdict.identifiable is want, verdict.reason
    if not want:  # NOT identifiable: the counterexample realizes the same function
        from certsym.decide.equivalence import decide

        assert decide(theta, verdict.counterexample).equivalent
        assert verdict.counterexample.evaluate([fmpq(3, 7)] * theta.m) == theta.evaluate([fmpq(3, 7)] * theta.m)


def test_wide_searches_find_small_zero_factors_and_go_past_two_to_the_sixteen() -> None:
    """m = k = 1 with n = 18 (kernel dimension 17): an obvious two-neuron zero factor is found; without one,
    the meet in the middle decides and its certificate replays; n = 40 with a planted six-neuron factor."""
    rng = random.Random(18)

    def q() -> fmpq:
        return fmpq(rng.randint(1, 10**6), rng.randint(1, 997))

    M = [[1, -1] + [q() for _ in range(16)]]
    A = [[1], [1]] + [[q()] for _ in range(16)]
    b = [0, -1] + [q() for _ in range(16)]
    verdict = _certified(Network.build(M, A, b, [0]))
    assert not verdict.identifiable and verdict.zero_factor == [0, 1]
    verdict = _certified(Network.build([[q() for _ in range(18)]], [[q()] for _ in range(18)],
                                       [q() for _ in range(18)], [0]))
    assert verdict.identifiable and "meet in the middle" in verdict.reason
    w = [q() for _ in range(40)]
    w[39] = -sum(w[33:39], fmpq(0))  # w_33 + … + w_39 = 0: seven neurons, no pair or triple
    theta = Network.build([w], [[1]] * 40, [fmpq(-i) for i in range(40)], [0])
    verdict = decide_identifiable(theta, max_search=1 << 22)
    assert not verdict.identifiable and sum(w[i] for i in verdict.zero_factor) == 0


def _fingerprint(theta: Network) -> tuple:
    grid = [fmpq(t, 2) for t in range(-8, 9)]  # contains every breakpoint −b/a with a, b ∈ {−1, 0, 1}
    return tuple(theta.evaluate([x])[0] for x in grid)


def _orbit(theta: Network) -> tuple:
    """H_n-orbit invariant computed here: sorted positively normalized neurons, and c."""
    out = []
    for i in range(theta.n):
        a, b, v = theta.A[i][0], theta.b[i], theta.M[0][i]
        lead = next((x for x in (a, b) if x != 0), None)
        lam = abs(lead) if lead is not None else (abs(v) if v != 0 else fmpq(1))
        out.append((a / lam, b / lam, v * lam) if lead is not None else (a, b, v / lam))
    return tuple(sorted(out)), theta.c


def _grid_classes() -> tuple[list[Network], dict]:
    """All of Ω(1,2,1) with entries in {−1, 0, 1}, and its classes by realized function."""
    vals = [fmpq(-1), fmpq(0), fmpq(1)]
    nets = [Network.build([[v1, v2]], [[a1], [a2]], [b1, b2], [c])
            for v1, v2, a1, a2, b1, b2, c in itertools.product(vals, repeat=7)]
    classes = defaultdict(list)
    for t in nets:
        classes[_fingerprint(t)].append(t)
    return nets, classes


def test_exhaustive_grid_against_brute_force_fibres() -> None:
    """Ω(1,2,1) with entries in {−1, 0, 1}: θ is identifiable only if no θ' of the grid with the same
    function lies outside its orbit; and a certified counterexample exists whenever one does."""
    nets, classes = _grid_classes()
    refused = decided = 0
    seen = {"outside": 0, "identifiable": 0}
    for t in nets:
        outside = any(_orbit(o) != _orbit(t) for o in classes[_fingerprint(t)])
        try:
            verdict = _certified(t)  # decided, and its certificate (a counterexample when NOT) replays
        except Undecided:
            refused += 1
            continue
        decided += 1
        assert not (outside and verdict.identifiable), t
        seen["outside"] += outside
        seen["identifiable"] += verdict.identifiable
    assert decided == len(nets) and refused == 0
    assert seen["outside"] > 0 and seen["identifiable"] > 0  # both sides of the implication occur


def test_cli_identifiable_and_counterexample(tmp_path, capfd) -> None:
    p = tmp_path / "e5.json"
    p.write_text(json.dumps(EXAMPLES["E5"][0]))
    assert main(["identifiable", str(p), "--json"]) == 1
    assert json.loads(capfd.readouterr().out)["zero_factor"] == [0, 1]
    out, cert = tmp_path / "ce.json", tmp_path / "ce.cert.json"
    assert main(["counterexample", str(p), "-o", str(out), "--cert", str(cert)]) == 0
    assert main(["equiv", str(p), str(out)]) == 0
    assert main(["check", str(cert)]) == 0
    p.write_text(json.dumps(EXAMPLES["E1"][0]))
    assert main(["counterexample", str(p), "--cert", str(cert)]) == 1
    capfd.readouterr()
    assert main(["check", str(cert)]) == 0
    assert "VALID identifiable" in capfd.readouterr().out


def test_search_limit_refuses(tmp_path, capfd) -> None:
    rng = random.Random(3)
    theta = _random_network(rng, 1, 12, 1)  # kernel of dimension 11: 2047 candidates, or 2^6 + 2^6 subset sums
    p = tmp_path / "p.json"
    from certsym.io import dump_network

    p.write_text(dump_network(theta))
    assert main(["identifiable", str(p), "--max-search", "100"]) == 3  # UNDECIDED: a limit, not bad input
    out = capfd.readouterr().out
    assert out.startswith("UNDECIDED: ") and "over the limit 100" in out and "= 128 subset sums" in out
    assert "2047" in out
    assert main(["identifiable", str(p), "--max-search", "100", "--json"]) == 3
    doc = json.loads(capfd.readouterr().out)
    assert doc["verdict"] == "undecided" and "over the limit 100" in doc["reason"]
    assert main(["identifiable", str(p), "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["search_size"] == 126


def test_broken_identifiability_certificates_rejected() -> None:
    theta = Network.build([[1, 2]], [[1], [1]], [0, -1], [0])  # E1
    doc = identifiability_certificate(decide_identifiable(theta), RECORD)
    assert check_certificate(doc).valid and doc["proof"]["zero_factor"]["R"] == [["2"]]  # every mutation applies
    for mutate in (lambda d: d["proof"]["zero_factor"]["R"][0].__setitem__(0, "-1"),
                   lambda d: d["proof"]["zero_factor"].__setitem__("free", []),
                   lambda d: d["proof"]["nonzero_v"].__setitem__(0, 1)):
        broken = json.loads(json.dumps(doc))
        mutate(broken)
        assert broken != doc
        assert not check_certificate(broken).valid
    # a false IDENTIFIABLE claim for E5 (it has the zero factor {0, 1}) is rejected
    e5 = Network.build([[1, -1]], [[1], [1]], [0, -1], [0])
    forged = json.loads(json.dumps(doc))
    forged["inputs"][0]["parameters"]["M"] = [["1", "-1"]]
    forged["inputs"][0]["parameters"]["b"] = ["0", "-1"]
    forged["proof"]["zero_factor"]["R"] = [["1"]]
    assert not check_certificate(forged).valid
    doc = identifiability_certificate(decide_identifiable(e5), RECORD)
    forged = json.loads(json.dumps(doc))
    forged["proof"]["counterexample"] = forged["inputs"][0]["parameters"]  # θ' = θ: inside the orbit
    assert not check_certificate(forged).valid


def test_fibre_against_brute_force_grid() -> None:
    """Minimal θ ∈ Ω(1,2,1) (entries {−1, 0, 1}) with independent rows: every θ' of the grid with the same
    function lies in one of the orbits H_2·θ^F that `describe_fibre` lists."""
    from certsym.decide.identifiability import describe_fibre, flip

    nets, classes = _grid_classes()
    checked = 0
    for t in nets:
        fibre = describe_fibre(t)
        if not fibre.minimal or fibre.free_directions:
            continue
        orbits = {_orbit(t)} | {_orbit(flip(t, F)) for F in fibre.zero_factors}
        assert all(_orbit(o) in orbits for o in classes[_fingerprint(t)])
        checked += 1
    assert checked > 100


def test_fibre_cap_and_free_directions(tmp_path, capfd) -> None:
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"M": [[1, -1, 1, -1]], "A": [[1], [1], [1], [1]], "b": [0, -1, -2, -3], "c": [0]}))
    assert main(["fibre", str(p), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert sorted(map(sorted, out["zero_factors"])) == [[0, 1], [0, 1, 2, 3], [0, 3], [1, 2], [2, 3]]
    assert main(["fibre", str(p), "--json", "--cap", "2"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert len(out["zero_factors"]) == 2 and not out["complete"] and "cap" in out["note"]
    p.write_text(json.dumps(EXAMPLES["E3a"][0]))
    assert main(["fibre", str(p), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert any("dead" in line for line in out["free_directions"])


def test_perturb_gives_a_close_identifiable_network(tmp_path) -> None:
    p, out, cert = tmp_path / "e5.json", tmp_path / "o.json", tmp_path / "c.json"
    p.write_text(json.dumps(EXAMPLES["E5"][0]))
    assert main(["perturb", str(p), "--eps", "1e-6", "-o", str(out), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(out)]) == 0
    theta = Network.build(**{key: EXAMPLES["E5"][0][key] for key in ("M", "A", "b", "c")})
    from certsym.io import load_networks

    (other,), _ = load_networks([out])
    eps = fmpq(1, 10**6)
    for r1, r2 in zip(theta.M + theta.A + (theta.b, theta.c), other.M + other.A + (other.b, other.c), strict=True):
        assert all(abs(x - y) <= eps for x, y in zip(r1, r2, strict=True))
    assert decide_identifiable(other).identifiable


def test_converse_failure_search(tmp_path, capfd) -> None:
    out = tmp_path / "cx"
    assert main(["counterexample", "--search", "1,2,1", "--out", str(out), "--limit", "5"]) == 0
    certs = sorted(out.glob("*.cert.json"))
    assert len(certs) == 5
    assert main(["check", "--quiet", *map(str, certs)]) == 0
    for cert in certs:
        theta = json.loads(cert.read_text())["inputs"][0]["parameters"]
        rows = {(a[0], b) for a, b in zip(theta["A"], theta["b"], strict=True)}
        assert len(rows) == 2  # trivial stabilizer of (A, b): the two rows differ
    capfd.readouterr()
    assert main(["counterexample", "--search", "9,9,9", "--out", str(out)]) == 3  # a grid beyond its limit
    assert capfd.readouterr().out.startswith("UNDECIDED: the grid has")


@st.composite
def _antiparallel_networks(draw) -> Network:
    """Small integer networks with one or two antiparallel pairs (any kink) among single neurons."""
    m, k = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    small = st.integers(-3, 3)
    A, b, cols = [], [], []
    for _ in range(draw(st.integers(1, 2))):
        a = [draw(small) for _ in range(m)]
        beta, lam = draw(small), draw(st.integers(1, 2))
        A += [a, [-lam * x for x in a]]
        b += [beta, -lam * beta]
        cols += [[draw(small) for _ in range(k)] for _ in range(2)]
    for _ in range(draw(st.integers(0, 2))):
        A.append([draw(small) for _ in range(m)])
        b.append(draw(small))
        cols.append([draw(small) for _ in range(k)])
    return Network.build([[col[j] for col in cols] for j in range(k)], A, b, [0] * k)


@settings(max_examples=60, deadline=None)
@given(_antiparallel_networks())
def test_decision_agrees_with_brute_force_oracle(theta: Network) -> None:
    """certsym's decision (rank search, configurations) equals an independent brute-force implementation of
    MATH.md's decision; the certificate replays either way."""
    from certsym.reproduce.oracle import identifiable_by_definition

    assert _certified(theta).identifiable == identifiable_by_definition(theta)

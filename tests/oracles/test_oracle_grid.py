"""Exhaustive comparison on Ω(1, 2, 1) with entries in {−1, 0, 1, 2} (4^7 = 16384 networks).

Each network ρ(x) = m1 σ(a1 x + b1) + m2 σ(a2 x + b2) + c gets a FINGERPRINT: its values on the grid
G = {−5, −9/2, ..., 9/2, 5}, computed here with plain integer arithmetic (no certsym code).

Why G determines the function. A breakpoint is t = −b/a with a ∈ {−1, 1, 2}, b ∈ {−1, 0, 1, 2}, so
t ∈ {−2, −1, −1/2, 0, 1/2, 1, 2} ⊂ G. Between two consecutive grid points there is no breakpoint of
any of the networks, so every network is affine there and is determined on [−5, 5] by its grid values
(linear interpolation). On (−∞, −2] and [2, ∞) every network is affine, and G holds at least two points
of each ray (−5, −9/2 and 9/2, 5), which determine the affine function on the whole ray. Hence two of
these networks realize the same function iff their fingerprints agree.

Checked: the classes of ``canonical_form(θ).hash`` are exactly the fingerprint classes; the outside
oracle ``certsym.reproduce.oracle.same_function_m1`` agrees with the fingerprint for every network against
its class representative; and on a deterministic sample of pairs, ``decide`` agrees with both and its
certificate (EQUIVALENT or NOT EQUIVALENT) is accepted by the independent checker.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from fractions import Fraction

import pytest

from certsym.certify import InputRecord, equivalence_certificate
from certsym.core.canonical import canonical_form
from certsym.core.network import Network
from certsym.decide.equivalence import decide, equivalent
from certsym.reproduce.oracle import same_function_m1
from certsym_check import check_certificate

VALUES = (-1, 0, 1, 2)
HALF_GRID = range(-10, 11)  # the grid points are i/2 for these i
RECORDS = (InputRecord("p", "0" * 64), InputRecord("q", "1" * 64))
STRIDE = 97


def fingerprint(entries: tuple[int, ...]) -> tuple[int, ...]:
    """2 ρ(i/2) for i in HALF_GRID, in integers: 2 σ(a i/2 + b) = σ(a i + 2 b)."""
    m1, m2, a1, a2, b1, b2, c = entries
    return tuple(m1 * max(a1 * i + 2 * b1, 0) + m2 * max(a2 * i + 2 * b2, 0) + 2 * c for i in HALF_GRID)


def build(entries: tuple[int, ...]) -> Network:
    m1, m2, a1, a2, b1, b2, c = entries
    return Network.build([[m1, m2]], [[a1], [a2]], [b1, b2], [c])


class Universe:
    def __init__(self) -> None:
        self.entries = list(itertools.product(VALUES, repeat=7))
        self.nets = [build(e) for e in self.entries]
        self.prints = [fingerprint(e) for e in self.entries]
        self.classes: dict[tuple, list[int]] = defaultdict(list)
        for idx, fp in enumerate(self.prints):
            self.classes[fp].append(idx)


@pytest.fixture(scope="module")
def universe() -> Universe:
    return Universe()


def test_grid_contains_every_breakpoint_and_two_points_per_ray() -> None:
    grid = sorted(Fraction(i, 2) for i in HALF_GRID)
    breaks = {Fraction(-b, a) for a in VALUES if a for b in VALUES}
    assert breaks <= set(grid)
    assert grid[1] < min(breaks) and max(breaks) < grid[-2]


def test_canonical_hash_classes_are_the_function_classes(universe: Universe) -> None:
    hash_to_print: dict[str, tuple] = {}
    print_to_hash: dict[tuple, str] = {}
    for net, fp in zip(universe.nets, universe.prints, strict=True):
        h = canonical_form(net).hash
        assert hash_to_print.setdefault(h, fp) == fp, "one canonical hash for two different functions"
        assert print_to_hash.setdefault(fp, h) == h, "one function with two canonical hashes"
    assert len(hash_to_print) == len(universe.classes)
    # a sanity bound: the zero function alone has many parameters, and there are many classes
    assert len(universe.classes) > 1000
    assert len(universe.classes[(0,) * len(HALF_GRID)]) > 100


def test_oracle_agrees_with_fingerprint_against_class_representative(universe: Universe) -> None:
    for members in universe.classes.values():
        rep = universe.nets[members[0]]
        for idx in members:
            assert same_function_m1(rep, universe.nets[idx])[0], universe.entries[idx]
    # and the oracle separates the representatives of neighbouring classes (sorted by fingerprint)
    reps = [universe.nets[members[0]] for _, members in sorted(universe.classes.items())]
    for p, q in itertools.pairwise(reps):
        assert not same_function_m1(p, q)[0]


def sample_pairs(universe: Universe) -> list[tuple[int, int]]:
    """Deterministic: every 97th network paired with a member of its own class (a few steps further
    round the class), and with the network 16384 // 3 + 7 places further (almost always another class)."""
    total = len(universe.nets)
    pairs = []
    for idx in range(0, total, STRIDE):
        members = universe.classes[universe.prints[idx]]
        pos = members.index(idx)
        pairs.append((idx, members[(pos + 1 + idx % 5) % len(members)]))
        pairs.append((idx, (idx + total // 3 + 7) % total))
    return pairs


def test_decide_and_checker_on_sampled_pairs(universe: Universe) -> None:
    pairs = sample_pairs(universe)
    assert len(pairs) > 300
    verdicts = {True: 0, False: 0}
    for i, j in pairs:
        p, q = universe.nets[i], universe.nets[j]
        same = universe.prints[i] == universe.prints[j]
        verdict = decide(p, q)
        assert verdict.equivalent == same == same_function_m1(p, q)[0] == equivalent(p, q), (
            universe.entries[i], universe.entries[j])
        report = check_certificate(equivalence_certificate(verdict, RECORDS))
        assert report.valid, (universe.entries[i], universe.entries[j], report.reason)
        if not same:
            x = verdict.witness
            assert p.evaluate(x) != q.evaluate(x)
        verdicts[same] += 1
    # both kinds of answer occur many times (the sample is not degenerate)
    assert verdicts[True] > 100 and verdicts[False] > 100


def test_every_network_is_certified_equivalent_to_its_class_representative(universe: Universe) -> None:
    """All 16384 networks: decide(rep, θ) is EQUIVALENT and the checker replays the certificate
    (this covers every reduction, match and pair pattern of Ω(1, 2, 1) over these entries). Cross merges
    cannot occur here: with two neurons, equal kinks and equal linear parts on a hyperplane force matches;
    they are exercised in test_equivalence_properties and test_checker_mutation."""
    kinds = {"matches": 0, "pairs": 0, "steps": 0}
    for members in universe.classes.values():
        rep = universe.nets[members[0]]
        for idx in members:
            verdict = decide(rep, universe.nets[idx])
            assert verdict.equivalent, universe.entries[idx]
            report = check_certificate(equivalence_certificate(verdict, RECORDS))
            assert report.valid, (universe.entries[members[0]], universe.entries[idx], report.reason)
            kinds["matches"] += bool(verdict.matches)
            kinds["pairs"] += bool(verdict.pairs)
            kinds["steps"] += bool(verdict.red2.steps)
    assert all(count > 50 for count in kinds.values()), kinds

"""Red team of the top-1 kinds and the region walk they share with distance_bound (two rounds): each certificate
below states a TRUE claim but made the checker run for minutes or take gigabytes (measured before the fixes: 181 s;
349 s; 73 s and 3.25 GB; 233 s). Each must now be refused before the work, with the reason. And the producer's
side: a tree the checker refused for its work meter, a pairing that divided by zero."""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction

import numpy as np
from flint import fmpq
from helpers import no_time_limit

from certsym.api import load
from certsym.certify import distance_certificate
from certsym.certify.distance import RELAXATION_STATEMENT, box_inputs
from certsym.certify.envelope import InputRecord, document
from certsym.core.network import Network
from certsym.decide.distance import distance
from certsym.decide.top1 import top1
from certsym.numbers import QQ
from certsym_check import check_certificate

RECORDS = (InputRecord("a", "0" * 64), InputRecord("b", "1" * 64))


def _doc(net: Network, box: list, regions: list) -> dict:
    inputs = box_inputs(RECORDS, (net, net), True, [], box)
    proof = {"box": [[str(lo), str(hi)] for lo, hi in box], "pairs": [], "regions": regions,
             "statement": RELAXATION_STATEMENT}
    return json.loads(json.dumps(document("top1_agreement", QQ, inputs, proof)))


def _net(A: list, b: list, M: list, c: list) -> Network:
    return Network.build([[fmpq(x) for x in row] for row in M], [[fmpq(x) for x in row] for row in A],
                         [fmpq(x) for x in b], [fmpq(x) for x in c])


def test_multipliers_with_huge_distinct_denominators_are_charged() -> None:
    """200 unstable neurons, each with t and h multipliers 1/q and (q − 1)/q for distinct 4,095-bit q: the z terms
    cancel (no row is combined), but the running constant's denominator grows to ~400,000 bits. Its sums are now
    charged to the work budget."""
    n = 200
    rng = random.Random(1)
    qs = [rng.getrandbits(4095) | (1 << 4094) | 1 for _ in range(n // 2)]
    mus = [f"1/{q}" for q in qs] + [f"{q - 1}/{q}" for q in qs]
    net = _net([[1, 0]] * n, [0] * n, [[0] * n, [0] * n], [n, 0])

    def bound(side: str) -> list:
        mult = [[tag + side, i, mus[i]] for i in range(n) for tag in ("t", "h")]
        return [side, 0, 1, str(fmpq(-n + n // 2)), mult]

    leaf = {"class": 0, "bounds": [bound("A"), bound("B")]}
    report = check_certificate(_doc(net, [(fmpq(-1), fmpq(1)), (fmpq(0), fmpq(1))], [{"split": ["x", 1]}, leaf,
                                                                                       dict(leaf)]))
    assert not report.valid and "work budget" in report.reason


def test_long_rows_and_box_ends_count_in_the_region_work() -> None:
    """600-bit rows and box ends make every integer operation ~10 times a word's: the region work counts the words
    (2,001 regions of 40 neurons, m = 359, would have replayed for about 35 s while the meter showed nothing)."""
    rng = random.Random(0)
    m, n = 359, 20

    def big() -> int:
        return rng.getrandbits(600) * rng.choice([1, -1])

    net = _net([[big() for _ in range(m)] for _ in range(n)], [big() for _ in range(n)], [[0] * n, [0] * n], [1, 0])
    lo = fmpq(rng.getrandbits(600), 1 << 600)

    def tree(count: int, depth: int) -> list:
        if count == 1:
            return [{"class": 0}]
        return [{"split": ["x", depth % m]}] + tree(count // 2, depth + 1) + tree(count - count // 2, depth + 1)

    regions = tree(1001, 0)
    regions[0]["bounds"] = [["A", 0, 1, "-1", []], ["B", 0, 1, "-1", []]]
    report = check_certificate(_doc(net, [(lo, lo + 1)] * m, regions))
    assert not report.valid and "beyond the checker's bounds: the regions need" in report.reason


def test_many_outputs_count_in_the_region_work() -> None:
    """k = 20,000 outputs, the root stating all 2(k − 1) margins, a path of 1,000 splits: every leaf reads 2(k − 1)
    bounds (and the walk used to copy them at every node: 3.25 GB at k = 10^5)."""
    k, leaves = 20_000, 1000
    net = _net([[1]], [0], [[0] for _ in range(k)], [1] + [0] * (k - 1))
    regions = [{"split": ["A", 0]}] + [{"split": ["x", 0]} for _ in range(leaves - 2)] + [{"class": 0}] * leaves
    regions[0]["bounds"] = [[side, 0, j, "-1", []] for side in "AB" for j in range(1, k)]
    report = check_certificate(_doc(net, [(fmpq(0), fmpq(1))], regions))
    assert not report.valid and "beyond the checker's bounds: the regions need" in report.reason


def test_an_unhashable_constraint_name_is_refused_with_a_reason() -> None:
    net = _net([[1]], [0], [[1], [0]], [0, 1])
    leaf = {"class": 1, "bounds": [["A", 1, 0, "-1", [[["tA"], 0, "1"]]]]}
    report = check_certificate(_doc(net, [(fmpq(0), fmpq(1))], [leaf]))
    assert not report.valid and "string tag and an integer index" in report.reason


def test_networks_without_neurons_count_their_input_dimension() -> None:
    """n1 = n2 = 0 and m = 200,000: every node handles an m-coordinate box, which the region work now counts
    (8 per coordinate per node: 241 nodes here; a comb of 121 nodes at m = 2·10^6 replayed for 233 s)."""
    m, splits = 200_000, 120
    net = Network.build([[], []], [], [], [fmpq(1), fmpq(0)], m=m)
    regions = [{"split": ["x", 0], "bounds": [["A", 0, 1, "-1", []], ["B", 0, 1, "-1", []]]}]
    for i in range(splits - 1):
        regions += [{"class": 0}, {"split": ["x", i + 1]}]
    regions += [{"class": 0}, {"class": 0}]
    report = check_certificate(_doc(net, [(fmpq(0), fmpq(1))] * m, regions))
    assert not report.valid and "beyond the checker's bounds: the regions need" in report.reason


def test_the_producer_stays_within_the_checker_bounds() -> None:
    """m = 2, 100 neurons against their float16 copy, a target the search cannot reach: the producer's tree (many
    small regions, many multipliers; up to 300 regions, a count, not a time) used to pass the checker's work meter; it
    must replay."""
    rng = np.random.default_rng(0)
    a = [(rng.normal(size=(100, 2)) / np.sqrt(2)).astype(np.float32), (rng.normal(size=100) * 0.3).astype(np.float32),
         (rng.normal(size=(4, 100)) / 10).astype(np.float32), (rng.normal(size=4) * 0.1).astype(np.float32)]
    A, B = load(a).network, load([x.astype(np.float16) for x in a]).network
    d = distance(A, B, [(fmpq(-1), fmpq(1))] * 2, deadline=no_time_limit(), target=1.000001, max_regions=300)
    doc = json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))
    report = check_certificate(doc)
    assert report.valid, report.reason


def test_rows_of_very_different_scales_are_not_paired() -> None:
    """A neuron x/10,000 with output weight 10,000 against x with weight 1: the norm ratio rounds to d = 0, which
    used to divide by zero; such rows are left unpaired."""
    A = _net([[fmpq(1, 10_000)]], [0], [[10_000], [0]], [1, 0])
    B = _net([[1]], [0], [[1], [0]], [fmpq(1, 2), 0])
    d = distance(A, B, [(fmpq(0), fmpq(1))])
    assert d.lower <= d.upper and check_certificate(json.loads(json.dumps(distance_certificate(d, RECORDS, (A, B))))
                                                    ).valid
    r = top1(A, B, [(fmpq(0), fmpq(1))])
    assert r.verdict != "unknown"


def test_long_refined_ranges_are_charged_in_every_chord() -> None:
    """Refinements with forty 4,095-bit multipliers give a neuron a range of ~164,000-bit ends; every chord
    multiplier (even μ = 0) then takes u − l and u·l of those ends. A true claim (two copies of one network, every
    leaf a shift leaf) that replayed for minutes while the meter charged ~5 ms per multiplier; now refused for the
    work budget."""
    P, k = 40, 200
    rng = random.Random(2)
    q = [rng.getrandbits(4095) | (1 << 4094) | 1 for _ in range(2 * P)]
    T = 2 * P  # the refined neuron: z = x; neurons 0..P−1 are −x, P..2P−1 are x, all phased z ≥ 0 (so x = 0)
    net = _net([[-1]] * P + [[1]] * (P + 1), [0] * (2 * P + 1), [[1] * (2 * P) + [0] for _ in range(k)], [0] * k)
    shifts = [["=", t, s, "0", []] for t in range(1, k) for s in (1, -1)]
    regions = [{"split": ["A", 0], "bounds": shifts}]
    for i in range(2 * P):
        regions.append({"shift": True})
        if i + 1 < 2 * P:
            regions.append({"split": ["A", i + 1]})
    digits = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the ends have ~50,000 digits
    try:  # max over x of x(1 − Σμ), μ on the phases −x ≥ 0; the lower end the same on the phases x ≥ 0
        upper, lower = str(1 - sum(Fraction(1, x) for x in q[:P])), str(sum(Fraction(1, x) for x in q[P:]) - 1)
    finally:
        sys.set_int_max_str_digits(digits)
    regions.append({"shift": True,
                    "refine": [["A", T, "upper", upper, [["pA", i, f"1/{q[i]}"] for i in range(P)]],
                               ["A", T, "lower", lower, [["pA", P + i, f"1/{q[P + i]}"] for i in range(P)]]],
                    "bounds": [["=", t, s, "0", [["tA", T, "0"]]] for t in range(1, k) for s in (1, -1)]})
    report = check_certificate(_doc(net, [(fmpq(-1), fmpq(1))], regions))
    assert not report.valid and "work budget" in report.reason, report.reason


def test_a_refinement_side_of_the_wrong_type_is_refused_with_a_reason() -> None:
    net = _net([[1], [1]], [0, 0], [[1, 0], [0, 1]], [0, 1])
    regions = [{"split": ["A", 0]}, {"class": 1, "refine": [["A", 1, [], "0", [["pA", 0, "1"]]]]}, {"class": 1}]
    report = check_certificate(_doc(net, [(fmpq(0), fmpq(1))], regions))
    assert not report.valid and "a refinement is" in report.reason, report.reason

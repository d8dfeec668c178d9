"""The work budget charges every step of the distance replays (certificates/FORMAT.md, Bounds), counted, not timed.

Two holes of the fourth red-team round, rebuilt: ``distance_bound``'s exact affine part (k × active × (m + 1)
multiply-adds of small integers, charged 0 units each) and the walk of a tree of regions (per-region box work of
O(m), 8 units per neuron whatever m is): certificates of 0.3 to 1 MB replayed for minutes within the budget. Both
are now refused, the budget named, before their expensive work starts.

The measure of work here is the interpreter's: the bytecode instructions a replay executes (sys.settrace with
opcode events), counted inside the replay's arithmetic (``distance._upper``, ``_evaluate``, ``check_regions``).
Every loop that grows with the input executes instructions, so a loop left uncharged shows up as instructions per
unit that grow with the size. The seconds per unit (and so the budget's worst case against its 60-s promise) are
measured by benchmarks/check_budget.py; no test here reads a clock.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import pytest

from certsym_check import budget
from certsym_check.envelope import CLAIMS, check_certificate
from certsym_check.kinds import distance, relaxation

# At most this many bytecode instructions per unit charged in the distance replays: about 100 to 140 are measured,
# at 5 to 7 ns each on the reference machine (benchmarks/check_budget.py), so a unit pays for about a microsecond.
BYTECODES_PER_UNIT = 200
RELAX = "linear relaxations with rational multipliers over a tree of regions"


def _doc(p1: dict, p2: dict, proof: dict) -> dict:
    inputs = [{"name": name, "sha256": "0" * 64, "atoms": [], "parameters": p} for name, p in (("a", p1), ("b", p2))]
    return {"format": "certsym-certificate", "version": 1, "kind": "distance_bound",
            "claim": CLAIMS["distance_bound"], "field": {"type": "QQ"}, "inputs": inputs, "proof": proof}


def _params(m: int, k: int, weight: str) -> dict:
    """One neuron z = 1 + Σx (stably active on a nonnegative box) whose output weights are all ``weight``."""
    return {"M": [[weight] for _ in range(k)], "A": [["1"] * m], "b": ["1"], "c": ["0"] * k,
            "shape": {"m": m, "n": 1, "k": k}}


def affine_certificate(m: int, k: int) -> dict:
    """The affine-part hole: the pair z, 2z paired (d = 1), both stably active on [0, 1]^m, so the affine part does
    k × 2 × (m + 1) multiply-adds. True: D = −z, U = L = m + 1 at x = (1, …, 1)."""
    return _doc(_params(m, k, "1"), _params(m, k, "2"),
                {"box": [["0", "1"]] * m, "upper": str(m + 1), "lower": str(m + 1), "pairs": [[0, 0, "1"]],
                 "witness": ["1"] * m, "statement": "symbolic intervals and exact evaluation"})


def walk_certificate(m: int, regions: int, dens: list[int] | None = None) -> dict:
    """The walk hole: the same pair with k = 1, a comb of ``regions`` nodes split on the coordinates in turn, the
    root stating both bounds without multipliers: max(−z) = −1 and max(z) = 1 + Σ hi. With ``dens`` the box's upper
    ends are 1/p for the p in turn (distinct denominators make every region's common denominator long). True."""
    box = [["0", "1" if dens is None else f"1/{dens[q % len(dens)]}"] for q in range(m)]
    top = 1 + sum(Fraction(hi) for _, hi in box)
    nodes = [{"split": ["x", 0], "bounds": [[0, 1, "-1", []], [0, -1, f"{top.numerator}/{top.denominator}", []]]}]
    for i in range((regions - 1) // 2 - 1):
        nodes += [{}, {"split": ["x", (i + 1) % m]}]
    nodes += [{}, {}]
    return _doc(_params(m, 1, "1"), _params(m, 1, "2"),
                {"box": box, "upper": f"{top.numerator}/{top.denominator}", "lower": "1", "pairs": [[0, 0, "1"]],
                 "witness": ["0"] * m, "statement": RELAX, "regions": nodes})


def _counted(monkeypatch) -> list[tuple[int, int]]:
    """Wrap the distance replay's arithmetic so that each call records (bytecodes executed, units charged)."""
    log: list[tuple[int, int]] = []

    def wrap(fn):
        def counting(*args, **kwargs):
            meter, count = budget._METER.get(), [0]

            def local(frame, event, arg):
                if event == "opcode":
                    count[0] += 1
                return local

            def enter(frame, event, arg):
                frame.f_trace_opcodes = True
                return local

            before = meter.used
            sys.settrace(enter)
            try:
                return fn(*args, **kwargs)
            finally:
                sys.settrace(None)
                log.append((count[0], meter.used - before))
        return counting

    for name in ("_upper", "evaluate", "check_regions"):
        monkeypatch.setattr(distance, name, wrap(getattr(distance, name)))
    return log


def _per_unit(doc: dict, monkeypatch) -> tuple[int, int]:
    with monkeypatch.context() as patch:
        log = _counted(patch)
        rep = check_certificate(doc)
    assert rep.valid, rep.reason
    bytecodes, units = sum(b for b, _ in log), sum(u for _, u in log)
    assert units > 0
    return bytecodes, units


@pytest.mark.parametrize("build", [lambda s: affine_certificate(50 * s, 50 * s),
                                   lambda s: walk_certificate(25 * s, 41 * s)], ids=["affine part", "walk of regions"])
def test_every_interpreted_step_is_charged(build, monkeypatch):
    """Instructions per unit stay below BYTECODES_PER_UNIT and do not grow with the size (doubling m and k, or m and
    the regions, quadruples the work). Before the charges, at 100 then 200: 635 then 1,101 (affine); at 50 × 101 then
    100 × 201, 1,100 then 2,072 (walk)."""
    small, large = _per_unit(build(1), monkeypatch), _per_unit(build(2), monkeypatch)
    for bytecodes, units in (small, large):
        assert bytecodes <= BYTECODES_PER_UNIT * units, (bytecodes, units)
    # the charge grows like the work (the mix of loops shifts towards the multiply-adds, about 160 instructions a
    # unit, as the size grows: 82 then 97 for the affine part; uncharged, 635 then 1,101)
    assert large[0] / large[1] <= 1.3 * small[0] / small[1], (small, large)


def test_the_affine_part_is_charged_by_its_multiply_adds():
    """Each of the k × 2 × (m + 1) multiply-adds, and each entry of the k outputs' extremes, is charged."""
    m = k = 300
    rep = check_certificate(affine_certificate(m, k))
    assert rep.valid, rep.reason
    assert rep.work >= (k * 2 * (m + 1) + k * 2 * (m + 1)) / budget.OPS_PER_UNIT, rep.work


def _calls(monkeypatch, module, name: str) -> list:
    """Record the calls of ``module.name`` (arguments only), still calling it."""
    calls: list = []
    fn = getattr(module, name)

    def recording(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return calls


def test_an_affine_part_beyond_the_budget_is_refused_before_it_starts(monkeypatch):
    """m = k = 12,000 (the red team's 1 MB certificate had 24,000 and ran 121 s of CPU unfinished): 2.9·10^8
    multiply-adds, refused before the first output's common denominator is formed."""
    lcms = _calls(monkeypatch, distance, "lcm")
    rep = check_certificate(affine_certificate(12_000, 12_000))
    assert not rep.valid and "the affine part of U: beyond the checker's work budget" in rep.reason, rep.reason
    assert not [args for args in lcms if args[1] == "the affine part of U"]


@pytest.mark.parametrize("dens", [None, "primes"])
def test_a_walk_beyond_the_budget_is_refused_before_it_starts(dens, monkeypatch):
    """19,501 regions, m = 1,300, one neuron per network (the red team's tree of 19,999 regions, 262 KB, replayed VALID
    after 217 s of CPU), and the same with the 12-bit primes as the box's denominators: refused before the first
    region is built."""
    primes = [p for p in range(2049, 4096, 2) if all(p % q for q in range(3, 64, 2))] if dens else None
    built = _calls(monkeypatch, relaxation, "_Region")
    rep = check_certificate(walk_certificate(1300, 19_501, primes))
    assert not rep.valid and "regions' boxes (m = 1,300): beyond the checker's work budget" in rep.reason, rep.reason
    assert not built


def test_a_walk_within_the_budget_replays():
    """The same tree at 1,001 regions and m = 130 fits, and is charged at least its box work."""
    m, regions = 130, 1001
    rep = check_certificate(walk_certificate(m, regions))
    assert rep.valid, rep.reason
    assert rep.work >= regions * (2 * (m + 1) * 3 + 8 * m) / budget.OPS_PER_UNIT, rep.work


def test_lcm_steps_are_never_free():
    """Every lcm step is charged, word-sized or not, and coprime denominators cost more than repeated ones."""
    with budget.metered() as meter:
        budget.lcm([3] * 1000, "x")
        repeated = meter.used
    with budget.metered() as meter:
        budget.lcm([p for p in range(3, 8000, 2) if all(p % q for q in range(3, 90, 2))][:1000], "x")
        coprime = meter.used
    assert repeated >= 1000 * 2 / budget.OPS_PER_UNIT and coprime > 10 * repeated, (repeated, coprime)
    assert budget.int_ops(1, 1) >= 1 and budget.gcd_ops(1, 1) >= 1

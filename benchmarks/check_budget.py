"""The checker's work budget: the worst valid certificate within it, replayed in a fresh process.

certsym_check charges every exact operation to one meter of ``WORK_BUDGET`` units (certificates/FORMAT.md, Bounds)
and promises that a certificate within the budget replays in at most 60 s. The cost per unit is highest for
mid-size rational arithmetic, so the worst cases here are certificates of true atoms sqrt((s)**2) = |s|, with s a
sum of random fractions: ``terms`` fractions of ``digits`` digits, atoms added until the replay uses 96% of the
budget. The distance replays are charged by their loops' lengths and operand sizes (``budget.OPS_PER_UNIT``
small-integer operations a unit): their worst cases are true ``distance_bound`` certificates of the red team's two
shapes (tests/check/test_check_budget_ops.py), grown until the replay uses about 96% of the budget: the exact affine
part (one stably active neuron per network, m = k) and the walk of a tree of regions (m coordinates, a comb of
splits; with word-sized box ends, and with 12-bit primes as their denominators). Each case is replayed ``--repeat``
times by ``python -m certsym_check``; the table gives the median time, the units used, the seconds per unit and
the budget's worst case at that rate (seconds per unit × WORK_BUDGET, at most 60 s).

    python benchmarks/check_budget.py [--repeat 3] [--only expressions|distance]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from certsym_check import budget
from certsym_check.envelope import check_certificate

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "certificates" / "valid" / "equivalent_E5.json"
PROMISE = 60.0  # seconds: the replay time FORMAT.md states for a certificate within the budget
CASES = [(40, 20), (8, 400)]  # (terms, digits)
FILL = 0.96  # of the budget, for each worst case


def _atoms(count: int, terms: int, digits: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    atoms = []
    for _ in range(count):
        fracs = [Fraction(rnd.randrange(10 ** (digits - 1), 10**digits), rnd.randrange(10 ** (digits - 1), 10**digits))
                 for _ in range(terms)]
        s = sum(fracs)
        atoms.append({"expr": "sqrt((" + " + ".join(f"{f.numerator}/{f.denominator}" for f in fracs) + ")**2)",
                      "value": f"{s.numerator}/{s.denominator}"})
    return atoms


def _worst(terms: int, digits: int) -> dict:
    """The template with atoms added until the replay's work is 96% of the budget."""
    doc = json.loads(TEMPLATE.read_text())
    doc["inputs"][0]["atoms"] = _atoms(4, terms, digits, seed=digits)
    report = check_certificate(doc)
    if not report.valid:
        raise SystemExit(f"the template does not replay: {report.reason}")
    per_atom = report.work / 4
    doc["inputs"][0]["atoms"] = _atoms(int(0.96 * budget.WORK_BUDGET / per_atom), terms, digits, seed=digits)
    return doc


def _distance_cases() -> list[tuple[str, dict]]:
    """The distance replays' worst cases, each grown from a probe (units grow like m·k, resp. m·regions) to FILL of
    the budget within the checker's other bounds (at most 20,000 regions, region work at most 3·10^8)."""
    sys.path.insert(0, str(ROOT / "tests" / "check"))
    from test_check_budget_ops import affine_certificate, walk_certificate

    primes = [p for p in range(2049, 4096, 2) if all(p % q for q in range(3, 64, 2))]
    cases = []
    probe = check_certificate(affine_certificate(500, 500)).work
    m = int(500 * (FILL * budget.WORK_BUDGET / probe) ** 0.5)
    cases.append((f"distance affine part, m = k = {m:,}", affine_certificate(m, m)))
    for label, m, dens in (("distance walk", 800, None), ("distance walk, 12-bit prime denominators", 400, primes)):
        # units = a + b·regions, from two probes
        small, large = (check_certificate(walk_certificate(m, r, dens)).work for r in (1001, 2001))
        slope = (large - small) / 1000
        regions = int(1001 + (FILL * budget.WORK_BUDGET - small) / slope) | 1
        cases.append((f"{label}, m = {m:,}, {regions:,} regions", walk_certificate(m, regions, dens)))
    return cases


def _replay(path: Path, repeat: int) -> tuple[float, int]:
    """The median CPU time of ``repeat`` replays in fresh processes (resource usage of the children) and the units."""
    import resource

    times, used = [], 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([sys.executable, "-m", "certsym_check", str(path)], capture_output=True, text=True,
                             timeout=10 * PROMISE)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if out.returncode != 0 or "VALID" not in out.stdout:
            raise SystemExit(f"the worst case did not replay: {out.stdout}{out.stderr}")
        used = int(re.search(r"work: ([0-9,]+) of", out.stdout).group(1).replace(",", ""))
    return statistics.median(times), used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["expressions", "distance"])
    args = parser.parse_args()
    print(f"| worst case | units used (of {budget.WORK_BUDGET:,}) | replay (CPU s, median) | µs per unit | "
          "budget at that rate (s, at most 60) |")
    print("|---|---|---|---|---|")
    cases: list[tuple[str, dict]] = []
    if args.only != "distance":
        cases += [(f"atoms: {terms} terms x {digits} digits", _worst(terms, digits)) for terms, digits in CASES]
    if args.only != "expressions":
        cases += _distance_cases()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, doc) in enumerate(cases):
            path = Path(tmp) / f"worst_{i}.json"
            path.write_text(json.dumps(doc))
            seconds, used = _replay(path, args.repeat)
            rate = seconds / used
            print(f"| {label} | {used:,} | {seconds:.1f} | {rate * 1e6:.2f} | {rate * budget.WORK_BUDGET:.1f} |")


if __name__ == "__main__":
    main()

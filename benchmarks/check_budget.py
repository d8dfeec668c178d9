"""The checker's work budget: the worst valid certificate within it, replayed in a fresh process.

certsym_check charges every exact operation to one meter of ``WORK_BUDGET`` units (certificates/FORMAT.md, Bounds)
and promises that a certificate within the budget replays in at most 60 s. The cost per unit is highest for
mid-size rational arithmetic, so the worst cases here are certificates of true atoms sqrt((s)**2) = |s|, with s a
sum of random fractions: ``terms`` fractions of ``digits`` digits, atoms added until the replay uses 96% of the
budget. Each case is replayed ``--repeat`` times by ``python -m certsym_check``; the table gives the median time,
the units used and the ratio of the time to the 60-s promise (at most 1).

    python benchmarks/check_budget.py [--repeat 3]
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
import time
from fractions import Fraction
from pathlib import Path

from certsym_check import budget
from certsym_check.envelope import check_certificate

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "certificates" / "valid" / "equivalent_E5.json"
PROMISE = 60.0  # seconds: the replay time FORMAT.md states for a certificate within the budget
CASES = [(40, 20), (8, 400)]  # (terms, digits)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"| atoms: terms x digits | units used (of {budget.WORK_BUDGET:,}) | replay (s, median) | ratio to 60 s |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for terms, digits in CASES:
            path = Path(tmp) / f"worst_{terms}_{digits}.json"
            path.write_text(json.dumps(_worst(terms, digits)))
            times, used = [], 0
            for _ in range(args.repeat):
                start = time.perf_counter()
                out = subprocess.run([sys.executable, "-m", "certsym_check", str(path)], capture_output=True,
                                     text=True, timeout=10 * PROMISE)
                times.append(time.perf_counter() - start)
                if out.returncode != 0 or "VALID" not in out.stdout:
                    raise SystemExit(f"the worst case did not replay: {out.stdout}{out.stderr}")
                used = int(re.search(r"work: ([0-9,]+) of", out.stdout).group(1).replace(",", ""))
            median = statistics.median(times)
            print(f"| {terms} x {digits} | {used:,} | {median:.1f} | {median / PROMISE:.2f} |")


if __name__ == "__main__":
    main()

"""Reproductions of the first paper's statements on concrete instances; ``certsym reproduce`` runs them.

Each statement module exposes ``STATEMENT`` (its name), ``SLUG`` (its certificate folder) and
``run(ctx)``: it builds instances (MATH.md examples, seeded random families over Q and over real number
fields, exhaustive small grids), runs certsym's certified procedures and reports every instance to the
``Context``, which writes the certificate (through the writer the caller gives) and replays it with the
independent checker. Nothing here prints.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from certsym_check import check_certificate


@dataclass(frozen=True)
class CheckResult:
    """One verified (or failed) claim: what was checked, how, and whether it held."""

    statement: str
    instance: str
    claim: str
    method: str
    ok: bool


@dataclass
class Row:
    """One statement's tally. ``independent`` instances were compared with an oracle that shares no code with
    certsym's decision (``oracles`` names them); the others are self-consistency checks (certsym's verdict
    against the instance's construction, or against its own certificate). Disagreements with an oracle are
    counted by kind; refusals are counted, never dropped."""

    statement: str
    instances: int = 0
    agreeing: int = 0
    certificates: int = 0
    checked: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    independent: int = 0
    yes_no: int = 0  # certsym says yes, the oracle says no
    no_yes: int = 0  # certsym says no, the oracle says yes
    refusals: int = 0
    oracles: set[str] = field(default_factory=set)

    HEADERS = ("statement", "instances", "independent checks (oracles)", "disagreements (certsym yes / oracle no, "
               "certsym no / oracle yes)", "self-consistency checks", "refusals", "certificates checked", "time (s)",
               "result")

    @property
    def self_consistency(self) -> int:
        return self.instances - self.independent

    def cells(self) -> tuple[str, ...]:
        """The report's table row, in the order of ``HEADERS``."""
        oracles = f" ({', '.join(sorted(self.oracles))})" if self.oracles else ""
        return (self.statement, str(self.instances), f"{self.independent}{oracles}", f"{self.yes_no} / {self.no_yes}",
                str(self.self_consistency), str(self.refusals), f"{self.checked}/{self.certificates}",
                f"{self.seconds:.1f}", "reproduced" if self.reproduced else "FAILED")

    def as_json(self) -> dict:
        return {"statement": self.statement, "instances": self.instances, "agreeing": self.agreeing,
                "independent": self.independent, "oracles": sorted(self.oracles),
                "disagreements": {"certsym_yes_oracle_no": self.yes_no, "certsym_no_oracle_yes": self.no_yes},
                "self_consistency": self.self_consistency, "refusals": self.refusals,
                "certificates": self.certificates, "checked": self.checked, "seconds": round(self.seconds, 2),
                "failures": self.failures[:10]}

    @property
    def reproduced(self) -> bool:
        return (self.instances > 0 and self.agreeing == self.instances and self.checked == self.certificates
                and self.refusals == 0)


class Context:
    """Collects verdicts; writes and replays certificates. ``write(relative_path, document)`` may be None."""

    def __init__(self, quick: bool, write: Callable[[str, dict], None] | None = None,
                 progress: Callable[[str], None] | None = None):
        self.quick = quick
        self.write = write
        self.progress = progress  # told of every instance recorded (the caller decides what to print, and when)
        self.rows: dict[str, Row] = {}
        self.figures: list[tuple[str, str]] = []  # (caption, relative path)
        self.written: list[str] = []
        self.landscape: dict[str, list[tuple[int, float, int | None]]] = {}  # family -> (k, loss, negatives)
        self.crossings: dict[str, int] = {}
        self.findings: dict[str, list] = {}  # the landscape's tables for the report

    def row(self, statement: str) -> Row:
        return self.rows.setdefault(statement, Row(statement))

    def record(self, statement: str, slug: str, instance: str, agrees: bool, certificate: dict | None = None,
               detail: str = "") -> None:
        """A self-consistency instance: does certsym's verdict agree with the statement on an instance built to
        satisfy it? Its certificate is written under ``slug/`` and replayed by the independent checker."""
        row = self.row(statement)
        row.instances += 1
        row.agreeing += agrees
        if self.progress is not None:
            self.progress(f"{row.instances} instances, {row.certificates + (certificate is not None)} certificates")
        if not agrees:
            row.failures.append(instance + detail)
        if certificate is not None:
            row.certificates += 1
            report = check_certificate(certificate)
            row.checked += report.valid
            if not report.valid:
                row.failures.append(f"{instance}: certificate rejected ({report.reason})")
            if self.write is not None:
                path = f"{slug}/{re.sub(r'[^A-Za-z0-9_.-]+', '_', instance)}.json"
                self.write(path, certificate)
                self.written.append(path)

    def compare(self, statement: str, slug: str, instance: str, certsym: bool, oracle: bool | None, oracle_name: str,
                certificate: dict | None = None) -> None:
        """An independent instance: certsym's verdict against an oracle sharing none of its code. ``oracle``
        None means the oracle could not answer (for example z3 timed out): the instance is not counted as
        independent. Certificates as in ``record``."""
        row = self.row(statement)
        if oracle is not None:
            row.independent += 1
            row.oracles.add(oracle_name)
            row.yes_no += certsym and not oracle
            row.no_yes += oracle and not certsym
        self.record(statement, slug, instance, oracle is None or certsym == oracle, certificate,
                    f": certsym {certsym}, {oracle_name} {oracle}")

    def refuse(self, statement: str, instance: str, reason: str) -> None:
        """certsym refused to decide: counted and shown, never dropped."""
        row = self.row(statement)
        row.refusals += 1
        row.failures.append(f"{instance}: refused ({reason})")


REPLAY_SECONDS = (20, 80)  # replaying every certificate written and writing the report: representative, --full


def statement_modules() -> list:
    """The statement modules, in the order ``certsym reproduce`` runs them."""
    from certsym.reproduce import (  # the statement modules import this package: not at the top
        cor9_non_identifiability,
        landscape_families,
        minimal_uniqueness,
        prop14_affine,
        thm1_generic_identifiability,
        thm2_stabilizer,
        thm3_4_classification,
        worked_examples,
    )

    return [worked_examples, thm3_4_classification, minimal_uniqueness, thm1_generic_identifiability,
            thm2_stabilizer, prop14_affine, cor9_non_identifiability, landscape_families]


def run_module(module, ctx: Context) -> Row:
    start = time.perf_counter()
    module.run(ctx)
    row = ctx.row(module.STATEMENT)
    row.seconds += time.perf_counter() - start
    return row

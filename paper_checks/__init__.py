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

from certsym.check import check_certificate


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
    """One statement's tally."""

    statement: str
    instances: int = 0
    agreeing: int = 0
    certificates: int = 0
    checked: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return self.instances > 0 and self.agreeing == self.instances and self.checked == self.certificates


class Context:
    """Collects verdicts; writes and replays certificates. ``write(relative_path, document)`` may be None."""

    def __init__(self, quick: bool, write: Callable[[str, dict], None] | None = None):
        self.quick = quick
        self.write = write
        self.rows: dict[str, Row] = {}
        self.figures: list[tuple[str, str]] = []  # (caption, relative path)
        self.written: list[str] = []
        self.landscape: dict[str, list[tuple[int, float, int | None]]] = {}  # family -> (k, loss, negatives)
        self.crossings: dict[str, int] = {}
        self.findings: dict[str, list] = {}  # the landscape's tables for the report

    def row(self, statement: str) -> Row:
        return self.rows.setdefault(statement, Row(statement))

    def record(self, statement: str, slug: str, instance: str, agrees: bool, certificate: dict | None = None) -> None:
        """One instance: did certsym's verdict agree with the statement? Its certificate is written
        under ``slug/`` and replayed by the independent checker."""
        row = self.row(statement)
        row.instances += 1
        row.agreeing += agrees
        if not agrees:
            row.failures.append(instance)
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


def statement_modules() -> list:
    """The statement modules, in the order ``certsym reproduce`` runs them."""
    from paper_checks import (
        cor9_non_identifiability,
        landscape_families,
        prop14_affine,
        thm1_generic_identifiability,
        thm2_stabilizer,
        thm3_4_classification,
        worked_examples,
    )

    return [worked_examples, thm3_4_classification, thm1_generic_identifiability, thm2_stabilizer, prop14_affine,
            cor9_non_identifiability, landscape_families]


def run_module(module, ctx: Context) -> Row:
    start = time.perf_counter()
    module.run(ctx)
    row = ctx.row(module.STATEMENT)
    row.seconds += time.perf_counter() - start
    return row

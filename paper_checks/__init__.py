"""Reproductions of the papers' statements on concrete instances; ``certsym reproduce`` runs them.

Each check module exposes ``run() -> list[CheckResult]``; nothing here prints or writes files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """One verified (or failed) claim: what was checked, how, and whether it held."""

    statement: str
    instance: str
    claim: str
    method: str
    ok: bool


def all_checks() -> list[tuple[str, Callable[[], list[CheckResult]]]]:
    """The check modules, in the order ``certsym reproduce`` runs them."""
    from paper_checks import theorems, worked_examples

    return [("MATH.md worked examples", worked_examples.run), ("Theorems on the examples", theorems.run)]

"""What every ``certsym`` command family shares: exit codes, the argument parser that turns usage errors into one
line, handlers imported when their command runs, and JSON output. Light: ``certsym --help`` imports this module and
the parser only."""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable

EXIT_OK, EXIT_NEGATIVE, EXIT_INPUT, EXIT_UNDECIDED = 0, 1, 2, 3

# The one table from an outcome to its exit code: 0 the claim holds, 1 it fails (with a witness), 3 no verdict within
# the budget (UNKNOWN, UNDECIDED: a search beyond its limit included, and a certificate that would not replay);
# 2 is bad input or usage only. ``None`` is a question without a claim to hold or fail (a distance without ε).
EXIT = {None: EXIT_OK, "holds": EXIT_OK, "equivalent": EXIT_OK, "verified": EXIT_OK, "agree": EXIT_OK,
        "identifiable": EXIT_OK,
        "fails": EXIT_NEGATIVE, "not equivalent": EXIT_NEGATIVE, "violated": EXIT_NEGATIVE, "differ": EXIT_NEGATIVE,
        "not identifiable": EXIT_NEGATIVE,
        "unknown": EXIT_UNDECIDED, "undecided": EXIT_UNDECIDED}


# The defaults of certsym.numbers (numerals' digits) and certsym.decide.branch_and_bound (regions), stated here for
# the parser's options and help, so that the parser imports neither; ``inputs`` and ``search`` check that they agree.
DEFAULT_MAX_DIGITS = 10_000
MAX_REGIONS = 2000


class UsageError(Exception):
    """A command-line usage error (one line, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors become one line and exit code 2 through ``main``."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def emit_json(data) -> None:
    """Print ``data`` as indented JSON on standard output."""
    print(json.dumps(data, indent=1))


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The handler ``name`` of ``certsym.cli.<module>``, imported on its first call (start-up time: the parser
    imports no command's code)."""
    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(f"certsym.cli.{module}"), name)(args)
    run.__name__ = name
    return run

"""What every ``certsym`` command family shares: exit codes, the argument parser that turns usage errors into one
line, and JSON output."""

from __future__ import annotations

import argparse
import json

EXIT_OK, EXIT_NEGATIVE, EXIT_INPUT, EXIT_UNDECIDED = 0, 1, 2, 3

# The one table from an outcome to its exit code: 0 the claim holds, 1 it fails (with a witness), 3 no verdict within
# the budget (UNKNOWN, UNDECIDED: a search beyond its limit included, and a certificate that would not replay);
# 2 is bad input or usage only. ``None`` is a question without a claim to hold or fail (a distance without ε).
EXIT = {None: EXIT_OK, "holds": EXIT_OK, "equivalent": EXIT_OK, "verified": EXIT_OK, "agree": EXIT_OK,
        "identifiable": EXIT_OK,
        "fails": EXIT_NEGATIVE, "not equivalent": EXIT_NEGATIVE, "violated": EXIT_NEGATIVE, "differ": EXIT_NEGATIVE,
        "not identifiable": EXIT_NEGATIVE,
        "unknown": EXIT_UNDECIDED, "undecided": EXIT_UNDECIDED}


class UsageError(Exception):
    """A command-line usage error (one line, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors become one line and exit code 2 through ``main``."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def emit_json(data) -> None:
    """Print ``data`` as indented JSON on standard output."""
    print(json.dumps(data, indent=1))

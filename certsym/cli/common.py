"""What every ``certsym`` command family shares: exit codes, the argument parser that turns usage errors into one
line, and JSON output."""

from __future__ import annotations

import argparse
import json

EXIT_OK, EXIT_NEGATIVE, EXIT_INPUT, EXIT_UNDECIDED = 0, 1, 2, 3


class UsageError(Exception):
    """A command-line usage error (one line, exit code 2)."""


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors become one line and exit code 2 through ``main``."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def emit_json(data) -> None:
    """Print ``data`` as indented JSON on standard output."""
    print(json.dumps(data, indent=1))

"""The ``certsym`` command.

``certsym check`` runs the independent checker (``python -m certsym_check``) in a clean process of its own, so
that a replay runs holding only the standard library (and mpmath for landscape certificates): nothing of certsym,
neither sympy nor python-flint nor numpy. Every other command is in ``commands``, the
``landscape`` family in ``landscape``; ``common`` holds what they share (exit codes, the parser, JSON output).
Exit codes: 0 success or positive verdict, 1 negative verdict, 2 bad input or usage, 3 undecided (deep `equiv`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

_GLOBAL_VALUE_OPTIONS = {"--keys", "--max-digits"}  # global options that take a value


def _command_index(argv: list[str]) -> int | None:
    """Index of the subcommand in ``argv`` (skipping global options and their values), or None."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _GLOBAL_VALUE_OPTIONS:
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return i
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``certsym`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    at = _command_index(args)
    if at is not None and args[at] == "check":
        try:  # isolated (-I): neither the working directory nor PYTHON* variables can put other code on its path
            return subprocess.run([sys.executable, "-I", "-m", "certsym_check", *args[at + 1:]]).returncode
        except KeyboardInterrupt:
            return 130
    from certsym.cli.commands import main as commands_main  # here, so that ``certsym check`` imports none of it

    return commands_main(args)


def run() -> None:  # pragma: no cover
    sys.exit(main())

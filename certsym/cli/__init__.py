"""The ``certsym`` command.

``certsym check`` goes straight to the independent checker (``certsym_check``) before anything else of
certsym is imported, so that a replay runs in a process holding only the standard library (and mpmath for
landscape certificates): neither sympy nor python-flint nor numpy. Every other command is in ``commands``, the
``landscape`` family in ``landscape``; ``common`` holds what they share (exit codes, the parser, JSON output).
Exit codes: 0 success or positive verdict, 1 negative verdict, 2 bad input or usage.
"""

from __future__ import annotations

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
        from certsym_check.main import main as check_main

        try:
            return check_main(args[at + 1:])
        except BrokenPipeError:  # the reader of our output went away (certsym check ... | head)
            return 0
    from certsym.cli.commands import main as commands_main

    return commands_main(args)


def run() -> None:  # pragma: no cover
    sys.exit(main())

"""The ``certsym`` command.

``certsym check`` runs the independent checker (``python -m certsym_check``) in a clean process of its own, so
that a replay runs holding only the standard library (and mpmath for landscape certificates): nothing of certsym,
neither sympy nor python-flint nor numpy. Every other command goes through ``parser`` (the options, the dispatch and
the one error handler), which imports a command's module when it runs: ``equivalence`` (eval, minimal, canon, equiv,
stabilizer, affine), ``distance`` (with ``top1`` and ``search``, what the two share), ``identifiability``
(identifiable, counterexample, fibre, perturb), ``audit``, ``reproduce``, and the ``landscape`` family
(``landscape``, ``landscape_commands``); ``inputs`` reads their files, ``common`` holds what they all share (the exit
table, the parser class, JSON output).
Exit codes: 0 success or positive verdict, 1 negative verdict, 2 bad input or usage, 3 no verdict within the
budget (UNKNOWN, UNDECIDED).
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


_NEGATIVE_VALUE_OPTIONS = {"--box"}  # options whose value may begin with "-" ("--box -1,1")


def _join_negative_values(args: list[str]) -> list[str]:
    """``--box -1,1`` as ``--box=-1,1``: argparse takes a value that begins with "-" (and is not one plain negative
    number) for an option, and would stop with "expected one argument"."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] in _NEGATIVE_VALUE_OPTIONS and i + 1 < len(args) and args[i + 1].startswith("-") and \
                args[i + 1][1:2].isdigit():
            out.append(f"{args[i]}={args[i + 1]}")
            i += 2
        else:
            out.append(args[i])
            i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``certsym`` console script; returns the exit code."""
    args = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    at = _command_index(args)
    if at is not None and args[at] == "check":
        try:  # isolated (-I): neither the working directory nor PYTHON* variables can put other code on its path
            return subprocess.run([sys.executable, "-I", "-m", "certsym_check", *args[at + 1:]]).returncode
        except KeyboardInterrupt:
            return 130
    from certsym.cli.parser import main as parser_main  # here, so that ``certsym check`` imports none of it

    return parser_main(args)


def run() -> None:  # pragma: no cover
    sys.exit(main())

"""The ``certsym`` command: the only place that prints or exits.

Exit codes, for every command: 0 success or positive verdict, 1 negative verdict, 2 bad input or
usage. Bad input prints one line ``certsym: error: ...`` on stderr and no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from certsym import __version__
from certsym.errors import InputError
from certsym.io import load_networks, parse_point
from certsym.numbers import DEFAULT_MAX_DIGITS

EXIT_OK, EXIT_NEGATIVE, EXIT_INPUT = 0, 1, 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors become one line and exit code 2 through ``main``."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{message} (see '{self.prog} --help')")


def _emit_json(data) -> None:
    print(json.dumps(data, indent=1))


def cmd_eval(args: argparse.Namespace) -> int:
    point = parse_point(args.at, args.max_digits)
    (net,), x = load_networks([args.params], extra_values=point, max_digits=args.max_digits)
    values = net.evaluate(x)
    strings = [net.field.pretty(v) for v in values]
    if args.json:
        _emit_json({"field": net.field.name, "x": [net.field.pretty(t) for t in x],
                    "value": strings})
    else:
        for s in strings:
            print(s)
    return EXIT_OK


def cmd_reproduce(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from paper_checks import all_checks

    console = Console()
    table = Table(title="certsym reproduce")
    for col in ("statement", "instance", "claim", "checked by", "result"):
        table.add_column(col)
    all_ok, rows = True, []
    start = time.perf_counter()
    for _, run in all_checks():
        for r in run():
            all_ok &= r.ok
            rows.append(r)
            table.add_row(r.statement, r.instance, r.claim, r.method,
                          "[green]holds[/green]" if r.ok else "[red]FAILED[/red]")
    if args.json:
        _emit_json([r.__dict__ for r in rows])
    else:
        console.print(table)
        held = sum(r.ok for r in rows)
        console.print(f"{held} of {len(rows)} claims hold "
                      f"({time.perf_counter() - start:.1f} s).")
    return EXIT_OK if all_ok else EXIT_NEGATIVE


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="certsym", description="Exact, certified symmetries of shallow ReLU networks.")
    parser.add_argument("--version", action="version", version=f"certsym {__version__}")
    parser.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                        help=f"refuse numerals with more than N digits (default {DEFAULT_MAX_DIGITS})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("eval", help="evaluate ρ(θ)(x) exactly")
    p.add_argument("params", help="parameter file (JSON)")
    p.add_argument("--at", required=True, metavar="X", help='the point, e.g. "1/2,3" or "sqrt(2)"')
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("reproduce", help="reproduce the papers' statements on concrete instances")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``certsym`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_INPUT
        if args.max_digits < 1:
            raise InputError("--max-digits must be at least 1")
        return args.func(args)
    except (_UsageError, InputError) as exc:
        print(f"certsym: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("certsym: error: interrupted", file=sys.stderr)
        return EXIT_INPUT


def run() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()

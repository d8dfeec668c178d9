"""``reproduce``: do the papers' statements hold on their concrete instances? The runner at scale
(``certsym.reproduce``), every certificate it writes replayed from disk by the independent checker; exit 0 when
every statement is reproduced and every certificate replays, else 1."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from certsym.cli.common import EXIT_NEGATIVE, EXIT_OK, emit_json
from certsym.io import write_json_atomic


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Every statement on concrete instances (certsym.reproduce): the representative run by default, everything
    with --full. A progress line per statement on stderr, with an estimate, then the summary table (on stderr with
    --json, whose stdout is the JSON document)."""
    # start-up time: the statements, their oracles and the report (sympy, matplotlib), the summary table (rich) and
    # the replays (the checker, with mpmath) only for this command
    from rich.console import Console
    from rich.table import Table

    from certsym.reproduce import REPLAY_SECONDS, Context, run_module, statement_modules
    from certsym.reproduce.report import write_report
    from certsym_check import check_certificate

    out = Path(args.out)
    certs = out / "certificates"

    def write(relative: str, doc: dict) -> None:
        (certs / relative).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(certs / relative, doc)

    # a log file gets the whole table: rich would cut it at 80 columns
    console = Console(stderr=args.json, width=None if (sys.stderr if args.json else sys.stdout).isatty() else 200)
    beat = _Heartbeat()
    ctx = Context(not args.full, write, beat)
    modules = statement_modules()
    mode = "full" if args.full else "representative"
    total = sum(module.SECONDS[args.full] for module in modules) + REPLAY_SECONDS[args.full]
    print(f"reproduce: {len(modules)} statements, the {mode} run (about {total // 60} min {total % 60} s on a "
          "2-core machine)", file=sys.stderr, flush=True)
    started = time.monotonic()
    for number, module in enumerate(modules, 1):
        print(f"reproduce: [{number}/{len(modules)}] {module.STATEMENT} (about {module.SECONDS[args.full]} s)",
              file=sys.stderr, flush=True)
        row = run_module(module, ctx)
        print(f"reproduce: [{number}/{len(modules)}] {row.instances} instances, {row.certificates} certificates in "
              f"{row.seconds:.0f} s ({time.monotonic() - started:.0f} s so far)", file=sys.stderr, flush=True)
    # replay every certificate written, from disk, with the independent checker
    print(f"reproduce: replaying the {len(ctx.written)} certificates from disk with the independent checker",
          file=sys.stderr, flush=True)
    rejected = []
    for count, rel in enumerate(ctx.written, 1):
        if not check_certificate(json.loads((certs / rel).read_text())).valid:
            rejected.append(rel)
        beat(f"{count} of {len(ctx.written)} replayed")
    print(f"reproduce: done in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    rows = list(ctx.rows.values())
    ok = all(r.reproduced for r in rows) and not rejected
    figures = write_report(out, ctx, rows, rejected)
    if args.json:
        emit_json({"reproduced": ok, "mode": mode, "rows": [r.as_json() for r in rows],
                   "report": str(out / "REPORT.md")})
    table = Table(title="certsym reproduce" + (" --full" if args.full else ""))
    for col in rows[0].HEADERS if rows else ():
        table.add_column(col)
    for r in rows:
        *cells, result = r.cells()
        table.add_row(*cells, "[green]reproduced[/green]" if r.reproduced else "[red]FAILED[/red]")
    console.print(table)
    for r in rows:
        for failure in r.failures[:5]:
            console.print(f"[red]failed[/red] {r.statement}: {failure}")
    for rel in rejected:
        console.print(f"[red]certificate rejected on replay[/red]: {rel}")
    console.print(f"{len(ctx.written)} certificates in {certs}/ replayed from disk by the independent checker; "
                  f"report: {out / 'REPORT.md'}, {out / 'report.html'} ({len(figures)} figures).")
    return EXIT_OK if ok else EXIT_NEGATIVE


class _Heartbeat:
    """A progress line on stderr when ``SECONDS`` have passed since the last one: the run is never silent for long
    (the clock only paces the printing; nothing is decided by it)."""

    SECONDS = 3.0

    def __init__(self) -> None:
        self.last = time.monotonic()

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.SECONDS:
            print(f"reproduce:   … {text}", file=sys.stderr, flush=True)
            self.last = now

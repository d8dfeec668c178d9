"""``audit``: which of many files realize the same function? Classes of equal functions, each member
certified against its class (``certsym.workflows.audit``); exit 0, or 2 when a file could not be read."""

from __future__ import annotations

import argparse
import sys
import time

from certsym.cli.common import EXIT_INPUT, EXIT_OK, emit_json
from certsym.cli.inputs import tensor_selections
from certsym.errors import InputError
from certsym.workflows.audit import Job, audit


def cmd_audit(args: argparse.Namespace) -> int:
    """Classes of equal functions among many files (certsym.workflows.audit), with a progress bar on a terminal and
    plain progress lines on stderr otherwise (at most about one per second per stage, and the last)."""
    if args.workers < 1:
        raise InputError("--workers must be at least 1")
    job = Job(tensor_selections(args, 1)[0], args.max_digits)
    display = None
    if sys.stderr.isatty():
        # start-up time: rich only for a terminal's progress bar (every command pays for what this module imports)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        display = Progress(TextColumn("audit: {task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        bars: dict[str, int] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if not bars:  # started here, after the local worker processes were forked: they inherit no thread
                display.start()
            if stage not in bars:
                bars[stage] = display.add_task(stage, total=total)
            display.update(bars[stage], completed=done, total=total)
    else:
        last: dict[str, tuple[float, int, int]] = {}

        def progress(stage: str, done: int, total: int) -> None:
            now = time.monotonic()
            since, *shown = last.setdefault(stage, (now, -1, -1))
            if total and shown != [done, total] and (done >= total or now - since >= 1.0):
                print(f"audit: {done}/{total} {stage}", file=sys.stderr, flush=True)
                last[stage] = (now, done, total)

    try:
        result = audit(args.paths, job, args.workers, args.dask, args.cert_dir, progress)
    finally:
        if display is not None:
            display.stop()
    if args.json:
        emit_json(result.to_json())
    else:
        count = sum(len(c.members) for c in result.classes)
        undecided = [p for p in result.deep_pairs if p["status"] not in ("not_equivalent", "equivalent")]
        same = [p for p in result.deep_pairs if p["status"] == "equivalent"]
        what = "distinct functions" if not undecided and not same else "classes"
        print(f"{count} networks, {len(result.classes)} {what}"
              + (f", {len(result.unreadable)} unreadable" if result.unreadable else "") + f" (on {result.engine})")
        for number, cls in enumerate(result.classes):
            m, n, k = cls.shape
            shape = f"widths {'-'.join(map(str, cls.widths))}" if cls.widths else f"m={m} n={n} k={k}"
            print(f"class {number}: {len(cls.members)} network(s), {shape}, hash {cls.hash[:16]}…")
            for member in cls.members:
                against = cls.against.get(member, cls.representative)
                via = "" if against == cls.representative else f", against {against}"
                units = cls.hidden.get(member, n)
                size = f", {units} hidden units as stored" if units != n and not cls.widths else ""
                note = ("  (representative)" if member == cls.representative else
                        f"  (certificate {cls.certificates[member]}{via}{size})" if member in cls.certificates
                        else f"  ({size[2:]})" if size else "")
                print(f"  {member}{note}")
        for pair in result.deep_pairs:
            i, j = pair["classes"]
            if pair["status"] == "not_equivalent":
                print(f"classes {i} and {j}: different functions (witness x = ({', '.join(pair['witness'])}))")
            else:
                print(f"classes {i} and {j}: {pair['status']}: {pair['reason']}")
        if undecided or same:
            print("deep networks: members of one class are certified equal (block lemma, MATH.md Part III)"
                  + (f"; {len(same)} pair(s) of classes realize one function (phase splitting, MATH.md Part IV)"
                     if same else "")
                  + (f"; {len(undecided)} pair(s) of classes are not decided and may realize one function"
                     if undecided else ""))
        for near in result.near_misses:
            lacking = near["neurons"] - near["partnered"]
            detail = (f"{lacking} of its {near['neurons']} neurons without an exact partner, their rows within "
                      f"{near['ulps']:.3g} ulp of their nearest" if lacking else
                      "every neuron with an exact partner (the output weights or biases differ)")
            print(f"near miss: {near['member']} is not in class {near['class']} ({near['representative']}): "
                  f"{detail}")
        for path, error in result.unreadable.items():
            print(f"unreadable: {path}: {error}")
    return EXIT_INPUT if result.unreadable else EXIT_OK

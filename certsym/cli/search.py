"""What ``distance`` and ``distance --top1`` share: the command's budget and the search's share of it, the
certificate replayed by the independent checker before the verdict is printed (an UNKNOWN with the checker's reason
when it refuses), and the lines both print (regions, readings, progress, where the search stopped)."""

from __future__ import annotations

import argparse
import sys

from certsym.cli import common
from certsym.decide.branch_and_bound import MAX_REGIONS, budget
from certsym.decide.deadline import Deadline
from certsym.errors import InputError, NotReplayed
from certsym.io import write_json_atomic

if common.MAX_REGIONS != MAX_REGIONS:  # stated twice so that the parser imports no search code
    raise ImportError("certsym.cli.common.MAX_REGIONS differs from certsym.decide.branch_and_bound.MAX_REGIONS")


# the share of what is left of --seconds, once the files are read, that the search may take: the rest is for the
# certificate and its replay by the checker (measured: the replay of a deep tree of halvings takes 40-50% of its
# search's time; of a tree of linear relaxations on 784-256-10 float pairs, 5.4 s after 8.2 s of search;
# benchmarks/seconds_budget.py)
_SEARCH_SHARE, _SEARCH_SHARE_UNCERTIFIED = 0.5, 0.95


def command_budget(args: argparse.Namespace) -> tuple[Deadline, int]:
    """The time budget of a whole ``distance`` command, started now (before the files are read, so that
    ``--seconds`` bounds reading, search, certificate and replay; none when --regions is given alone:
    ``branch_and_bound.budget``), and the region budget; --target checked to be at least 1."""
    if not args.target >= 1:
        raise InputError("--target must be at least 1")
    seconds, regions = budget(args.seconds, args.regions)
    return Deadline(seconds), regions


def search_deadline(args: argparse.Namespace, deadline: Deadline) -> Deadline:
    """The search's share of what is left of the command's budget (``_SEARCH_SHARE``): all but the certificate's."""
    return deadline.share(_SEARCH_SHARE if args.cert else _SEARCH_SHARE_UNCERTIFIED)


def certify(args: argparse.Namespace, result) -> str | None:
    """With --cert, the result's certificate, replayed VALID by the independent checker (``certificate()``) and
    only then written: no verdict is printed on a certificate that does not replay. The checker's reason when it
    refuses (nothing written), else None; an answer without a certificate (UNKNOWN top-1) is said on stderr. Cost:
    the checker's replay."""
    if not args.cert:
        return None
    if not result.has_certificate:
        print("note: no certificate for UNKNOWN", file=sys.stderr)
        return None
    if args.reference and result.embedded:
        print("note: parameter files are embedded in the certificate, and so are deep networks (only "
              "one-hidden-layer model files are referenced)", file=sys.stderr)
    try:
        doc = result.certificate()
    except NotReplayed as exc:
        return exc.reason
    write_json_atomic(args.cert, doc)
    return None


def refused_line(reason: str, path: str) -> str:
    """The verdict line when the certificate does not replay: UNKNOWN, with the checker's reason."""
    return (f"UNKNOWN: the certificate does not replay within the checker's bounds, so no verdict is given and "
            f"nothing was written to {path} (the checker: {reason})")


def regions_text(count: int) -> str:
    """"1 region", "5 regions"."""
    return f"{count} region" + ("" if count == 1 else "s")


_RAISE = {"the time budget": "raise --seconds", "the region budget": "raise --regions",
          "the checker's bounds": "the checker's bounds are fixed: split the box", "the checker's work bound":
          "the checker's bounds are fixed: split the box"}


def stopped_hint(stopped: str) -> str:
    """What to raise for an UNKNOWN against ε, from the limit that stopped the search."""
    more = _RAISE.get(stopped)
    return f"stopped at {stopped}" + (f": {more}" if more else "") + "; see [L, U] below"


def stop_text(r) -> str:
    """Where a top-1 search stopped, in how many regions and seconds, and what would go further."""
    more = _RAISE.get(r.stopped)
    return f"stopped at {r.stopped} ({regions_text(r.regions)} in {r.seconds:.1f} s" + (f"; {more})" if more else ")")


def print_readings(readings: list[tuple[str, str]]) -> None:
    """How each model file was read (its activation), one indented line per file."""
    for name, text in readings:
        print(f"  {name}: {text}")


def print_progress(text: str) -> None:
    """A progress line of the search on stderr (given to the search on a terminal only)."""
    print(f"  … {text}", file=sys.stderr, flush=True)

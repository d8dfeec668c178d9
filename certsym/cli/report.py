"""``report``: one HTML page about two networks (``certsym.workflows.report``): the verdicts, the witnesses, a
figure, the files read and the certificates, replayed before they are linked. Exit 0 when the page is written."""

from __future__ import annotations

import argparse
from pathlib import Path

from certsym.cli.distance import _epsilon
from certsym.cli.inputs import read_region, tensor_selections
from certsym.decide.branch_and_bound import budget
from certsym.decide.deadline import Deadline
from certsym.errors import InputError
from certsym.io.models import is_model_file
from certsym.io.sources import load
from certsym.workflows.report import pair_report


def cmd_report(args: argparse.Namespace) -> int:
    """``report A B [--box … | --center … --radius …] [--epsilon E] [-o report.html]``: write the page and say
    where, with the three verdicts in one line each."""
    out = Path(args.output)
    if out.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"-o {args.output}: the report is an HTML page; name it …/report.html")
    if not out.parent.is_dir():
        raise InputError(f"-o {args.output}: no such folder {out.parent}")
    seconds, _ = budget(args.seconds, args.regions)
    deadline = Deadline(seconds)
    selections = tensor_selections(args, 2)
    A, B = (load(path, sel.keys, sel.layout, sel.state_key, sel.activation) if is_model_file(path) else load(path)
            for path, sel in zip((args.params1, args.params2), selections, strict=True))
    box, where = read_region(args, A.m)
    r = pair_report(A, B, box, where, out, _epsilon(args.epsilon), deadline, args.regions)
    print(f"wrote {out} ({len(r.certificates)} certificates in {out.stem}_certificates/, each replayed VALID"
          + (f"; figure {r.figure}" if r.figure else "") + ")")
    print(f"  equivalence on R^m: {r.equivalence.status.replace('_', ' ')}")
    print(f"  distance on {where}: [{float(r.distance.lower):.6g}, {float(r.distance.upper):.6g}]"
          + (f", {r.distance.verdict}" if r.distance.epsilon is not None else ""))
    print(f"  top-1 on {where}: {r.top1.verdict}")
    return 0

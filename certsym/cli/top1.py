"""``distance --top1``: do both networks have the same unique largest output at every point of the box? AGREE
(exit 0), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3), for one hidden layer and for deep networks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from certsym.certify import deep_top1_certificate, top1_certificate
from certsym.cli.common import EXIT, emit_json
from certsym.cli.inputs import embeds_inputs
from certsym.cli.search import (
    print_progress,
    print_readings,
    refused_line,
    regions_text,
    search_deadline,
    stop_text,
    write_certificate,
)
from certsym.decide.deadline import Deadline
from certsym.decide.deep_top1 import deep_top1
from certsym.decide.top1 import top1
from certsym.io.models import reading


def _certified(args: argparse.Namespace, verdict: str, certify: Callable[[], str | None]) -> str | None:
    """With --cert, ``certify()`` (write the certificate once the checker replays it: its reason when refused);
    an UNKNOWN answer has none, said on stderr. Cost: the replay."""
    if not args.cert:
        return None
    if verdict == "unknown":
        print("note: no certificate for UNKNOWN", file=sys.stderr)
        return None
    return certify()


def run_top1(args: argparse.Namespace, t1, t2, records, box, deadline: Deadline, regions: int) -> int:
    """``distance --top1``: AGREE (exit 0, a tree of per-leaf margins or an equivalence proof), DIFFER (exit 1, an
    exact witness) or UNKNOWN (exit 3, no certificate)."""
    r = top1(t1, t2, box, seed=args.seed, deadline=search_deadline(args, deadline, "relaxations"), max_regions=regions,
             progress=print_progress if sys.stderr.isatty() else None)
    def certify() -> str | None:
        embed = embeds_inputs(args, records, (t1, t2))
        return write_certificate(args, top1_certificate(r, records, (t1, t2), embed), embed)

    refused = _certified(args, r.verdict, certify)
    where = "the default box [0, 1]^m" if args.box is None else f"the box {args.box}"
    readings = [(path, reading(rec.model)) for path, rec in zip((args.params1, args.params2), records, strict=True)
                if reading(rec.model)]
    code = EXIT[r.verdict if refused is None else "unknown"]
    leaves = r.root.leaves() if r.root is not None else []
    if args.json:
        emit_json(_top1_json(r, args, box, len(leaves), sorted({leaf.label for leaf in leaves}), readings, refused))
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
        print_readings(readings)
        return code
    if r.verdict == "differ":
        a, b = r.classes
        print(f"DIFFER on {where}: at a witness x* (exact in --json), ρ(θ1)'s unique largest output is {a} and "
              f"ρ(θ2)'s is {b}, evaluated exactly")
        print(f"  margins at x*: {float(_margin(r.outputs[0], a)):.6g} (θ1), {float(_margin(r.outputs[1], b)):.6g} "
              "(θ2)")
    elif r.verdict == "agree" and r.equivalence is not None:
        print(f"AGREE on {where}: ρ(θ1) = ρ(θ2) exactly (Theorems 3/4), so the largest outputs are the same at "
              "every point")
    elif r.verdict == "agree":
        print(f"AGREE on {where}: at every point both networks have the same unique largest output (classes "
              f"{sorted({leaf.label for leaf in leaves})})")
        print(f"  certified by margin bounds below 0 on {regions_text(len(leaves))} covering the box (linear "
              f"relaxations with rational multipliers; {regions_text(r.regions)} in {r.seconds:.1f} s)")
    else:
        print(f"UNKNOWN on {where}: no disagreement found and not every region certified; {stop_text(r)}")
    print_readings(readings)
    return code


def run_deep_top1(args: argparse.Namespace, t1, t2, records, box, readings: list, deadline: Deadline) -> int:
    """``distance --top1`` for deep networks (``certsym.decide.deep_top1``): AGREE (exit 0; halvings of the box
    with interval margins, or the block lemma), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3)."""
    r = deep_top1(t1, t2, box, seed=args.seed, deadline=search_deadline(args, deadline, "deep"),
                  max_regions=args.regions, progress=print_progress if sys.stderr.isatty() else None)
    def certify() -> str | None:
        if args.reference:
            print("note: deep networks are embedded in the certificate", file=sys.stderr)
        return write_certificate(args, deep_top1_certificate(r, records, (t1, t2)))

    refused = _certified(args, r.verdict, certify)
    where = "the default box [0, 1]^m" if args.box is None else f"the box {args.box}"
    code = EXIT[r.verdict if refused is None else "unknown"]
    classes = sorted({c for kind, c in r.tree if kind == "leaf"})
    if args.json:
        emit_json(_top1_json(r, args, box, r.leaves, classes, readings, refused) | {"deep": True})
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
        print_readings(readings)
        return code
    if r.verdict == "differ":
        a, b = r.classes
        print(f"DIFFER on {where}: at a witness x* (exact in --json), f1's unique largest output is {a} and f2's is "
              f"{b}, evaluated exactly (deep networks)")
    elif r.equivalence is not None:
        print(f"AGREE on {where}: f1 = f2 exactly (the block lemma, MATH.md Part III), so the largest outputs are the "
              "same at every point")
    elif r.verdict == "agree":
        print(f"AGREE on {where}: at every point both networks have the same unique largest output (classes "
              f"{classes}; deep networks)")
        print(f"  certified by interval margins > 0 on {regions_text(r.leaves)} (halvings of the box; "
              f"{regions_text(r.regions)} in {r.seconds:.1f} s)")
    else:
        print(f"UNKNOWN on {where}: no disagreement found and not every region certified; {stop_text(r)}")
    print_readings(readings)
    return code


def _top1_json(r, args: argparse.Namespace, box, leaves: int, classes: list[int], readings,
               refused: str | None = None) -> dict:
    """The fields of ``distance --top1 --json`` (one-hidden-layer and deep networks alike); with a certificate the
    checker refused, the verdict is "unknown" and ``refused`` its reason."""
    return {"top1": r.verdict if refused is None else "unknown", "refused": refused,
            "box": [[str(a), str(b)] for a, b in box], "default_box": args.box is None,
            "equivalent": r.equivalence is not None, "stopped": r.stopped, "regions": r.regions, "leaves": leaves,
            "classes": classes, "witness": None if r.witness is None else [str(x) for x in r.witness],
            "witness_classes": None if r.classes is None else list(r.classes), "seconds": round(r.seconds, 3),
            "readings": dict(readings)}


def _margin(values: list, c: int):
    """How far output c leads the others."""
    return values[c] - max(v for i, v in enumerate(values) if i != c)

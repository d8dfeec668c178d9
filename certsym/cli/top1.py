"""``distance --top1``: do both networks have the same unique largest output at every point of the box? AGREE
(exit 0), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3), for one hidden layer and for deep networks."""

from __future__ import annotations

import argparse

from certsym.cli.common import EXIT, emit_json
from certsym.cli.search import certify, print_readings, refused_line, regions_text, stop_text
from certsym.core.decision import UNKNOWN
from certsym.workflows.bounds import Top1


def report_top1(args: argparse.Namespace, r: Top1) -> int:
    """``distance --top1`` at any depth: AGREE (exit 0: margins certified on a tree of regions, or exact
    equivalence), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3, no certificate); with --cert the verdict
    is printed only once the certificate replays."""
    refused = certify(args, r)
    where = args.where
    code = EXIT[r.outcome if refused is None else UNKNOWN]
    deep = r.depth > 1
    if args.json:
        emit_json(_top1_json(r, args, refused) | ({"deep": True} if deep else {}))
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
    elif r.verdict == "differ":
        a, b = r.classes
        print(f"DIFFER on {where}: at a witness x* (exact in --json), f1's unique largest output is {a} and "
              f"f2's is {b}, evaluated exactly")
        print(f"  margins at x*: {float(_margin(r.outputs[0], a)):.6g} (f1), {float(_margin(r.outputs[1], b)):.6g} "
              "(f2)")
    elif r.equivalent:
        why = "the block lemma, MATH.md Part III" if deep else "Theorems 3/4"
        print(f"AGREE on {where}: f1 = f2 exactly ({why}), so the largest outputs are the same at every point")
    elif r.verdict == "agree":
        how = f"{getattr(r.evidence, 'method', 'intervals').replace('intervals', 'interval')} margins > 0 on {{}} " \
            "(halvings of the box" if deep else \
            "margin bounds below 0 on {} covering the box (linear relaxations with rational multipliers"
        print(f"AGREE on {where}: at every point both networks have the same unique largest output (classes "
              f"{r.labels})")
        print(f"  certified by {how.format(regions_text(r.leaves))}; {regions_text(r.regions)} in {r.seconds:.1f} s)")
    else:
        print(f"UNKNOWN on {where}: no disagreement found and not every region certified; {stop_text(r)}")
    print_readings(r.readings)
    return code


def _top1_json(r: Top1, args: argparse.Namespace, refused: str | None = None) -> dict:
    """The fields of ``distance --top1 --json`` (one-hidden-layer and deep networks alike); with a certificate the
    checker refused, the verdict is "unknown" and ``refused`` its reason."""
    return {"top1": r.verdict if refused is None else "unknown", "refused": refused,
            "box": [[str(a), str(b)] for a, b in r.box], "default_box": args.box is None and args.center is None,
            "equivalent": r.equivalent, "stopped": r.stopped, "regions": r.regions, "leaves": r.leaves,
            "classes": r.labels, "witness": None if r.witness is None else [str(x) for x in r.witness],
            "witness_classes": None if r.classes is None else list(r.classes), "seconds": round(r.seconds, 3),
            "readings": dict(r.readings)}


def _margin(values: list, c: int):
    """How far output c leads the others."""
    return values[c] - max(v for i, v in enumerate(values) if i != c)

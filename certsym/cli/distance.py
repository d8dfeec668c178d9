"""``distance``: exact bounds [L, U] on sup over a box of ‖ρ(θ1) − ρ(θ2)‖∞ (one hidden layer: linear relaxations
of the aligned networks; deep: interval differences), with --epsilon the verdict against ε: VERIFIED (exit 0),
VIOLATED (exit 1) or UNKNOWN (exit 3). With --cert the verdict is printed only after the independent checker has
replayed the certificate VALID. ``--top1`` is answered in ``certsym.cli.top1``."""

from __future__ import annotations

import argparse
import sys

from certsym.cli.common import EXIT, emit_json
from certsym.cli.inputs import read_region, tensor_selections
from certsym.cli.search import (
    certify,
    command_budget,
    print_progress,
    print_readings,
    refused_line,
    regions_text,
    search_deadline,
    stopped_hint,
)
from certsym.cli.top1 import report_top1
from certsym.core.decision import UNKNOWN
from certsym.errors import InputError
from certsym.io.models import is_model_file
from certsym.io.sources import load
from certsym.numbers import parse_rational
from certsym.workflows import bounds


def cmd_distance(args: argparse.Namespace) -> int:
    """``distance``: exact bounds [L, U] on sup over the box of ‖ρ(θ1) − ρ(θ2)‖∞, the verdict against --epsilon
    (exit 0 VERIFIED, 1 VIOLATED, 3 UNKNOWN), or with --top1 whether the largest outputs agree; at any depth."""
    selections = tensor_selections(args, 2)
    deadline, _ = command_budget(args)
    A, B = (load(path, sel.keys, sel.layout, sel.state_key, sel.activation) if is_model_file(path) else load(path)
            for path, sel in zip((args.params1, args.params2), selections, strict=True))
    epsilon = _epsilon(args.epsilon)
    if args.top1 and epsilon is not None:
        raise InputError("--top1 and --epsilon ask different questions: give one of them")
    if args.points is not None:
        if args.box is not None or args.center is not None or args.cert:
            raise InputError("--points asks on a ball around each point: --box, --center and --cert go without it "
                             "(--cert-dir writes a certificate per point)")
        from certsym.cli.points import report_points

        return report_points(args, A, B, epsilon, search_deadline(args, deadline))
    if args.cert_dir:
        raise InputError("--cert-dir goes with --points (one certificate per point); give --cert for one question")
    box, args.where = read_region(args, A.m)
    common = dict(seed=args.seed, deadline=search_deadline(args, deadline), regions=args.regions,
                  reference=args.reference, progress=print_progress if sys.stderr.isatty() else None)
    if args.top1:
        return report_top1(args, bounds.top1(A, B, box, **common))
    d = bounds.distance(A, B, box, epsilon=epsilon, target=args.target, sized=bool(args.cert), **common)
    refused = certify(args, d)
    verdict = d.verdict if refused is None else UNKNOWN
    code = EXIT[d.outcome if refused is None else UNKNOWN]
    where = args.where
    if args.json:
        emit_json(_bounds_json(d, args.box or args.center) | _evidence_json(d) | {
            "regions": d.regions, "leaves": d.leaves, "stopped": d.stopped,
            "epsilon": None if epsilon is None else str(epsilon), "verdict": verdict, "refused": refused})
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
    elif epsilon is not None:
        print(_epsilon_line(d.verdict, d.lower, epsilon, where, stopped_hint(d.stopped)))
    m = len(box)
    if d.equivalent:
        why = "ρ(θ1) = ρ(θ2) exactly (Theorems 3/4)" if d.depth == 1 else \
            "f1 = f2 exactly (the block lemma, MATH.md Part III)"
        print(f"DISTANCE 0 on {where} (m = {m}): {why}, so L = U = 0")
        print_readings(d.readings)
        return code
    print(f"DISTANCE on {where} (m = {m}): sup ‖f1(x) − f2(x)‖∞ ∈ [L, U], exact rationals" +
          ("" if d.depth == 1 else " (deep networks)"))
    print(f"  L ≈ {float(d.lower):.6g}  (‖f1(x*) − f2(x*)‖∞ at a witness x* in the box, evaluated exactly; exact "
          "in --json)")
    for line in _evidence_lines(d):
        print(line)
    print_readings(d.readings)
    return code


def _evidence_lines(d: bounds.Distance) -> list[str]:
    """How U was certified, the ratio and the search, in the depth's terms."""
    e = d.evidence
    if d.depth == 1:
        how = (f"linear relaxations of the aligned networks with rational multipliers, the largest leaf bound, "
               f"{regions_text(d.leaves)} covering the box; symbolic intervals alone give {float(e.interval):.6g}")
    elif e.method == "symbolic":
        how = (f"symbolic differences, affine bounds in x on both networks and on their difference layer by layer "
               f"(MATH.md Part IV), {regions_text(d.leaves)} of the box")
    else:
        kind = "interval differences over an alignment of every hidden layer" if e.alignment is not None else \
            "intervals of each network (the widths or endings differ: no alignment)"
        one = e.plain if e.aligned is None else min(e.plain, e.aligned)
        how = f"{kind}, {regions_text(d.leaves)} of the box; one region gives {float(one):.6g}"
    lines = [f"  U ≈ {float(d.upper):.6g}  (sound: {how})",
             f"  U/L = {d.ratio:.3g}" if d.ratio is not None else "  U/L undefined (L = 0)",
             f"  branch and bound: {regions_text(d.regions)} in {d.seconds:.1f} s, stopped at {d.stopped}"]
    if d.depth == 1:
        t1, t2 = e.unpaired
        lines.append(f"  alignment: {len(e.pairs)} neuron pairs (an H_n element), {t1} + {t2} unpaired; "
                     f"{e.stable} stable and {e.unstable} unstable terms on the box")
    return lines


def _evidence_json(d: bounds.Distance) -> dict:
    """The fields of ``distance --json`` that say how U was certified, in the depth's terms."""
    e = d.evidence
    if d.depth == 1:
        return {"pairs": len(e.pairs), "stable_terms": e.stable, "unstable_terms": e.unstable,
                "upper_interval": None if e.interval is None else str(e.interval)}
    return {"deep": True, "method": e.method, "aligned": e.alignment is not None, "upper_plain": str(e.plain),
            "upper_aligned": None if e.aligned is None else str(e.aligned)}


def _bounds_json(d: bounds.Distance, spec: str | None) -> dict:
    """The fields of ``distance --json`` that every distance has: [L, U] exactly and as floats, the box, the
    witness and the readings."""
    return {"lower": str(d.lower), "upper": str(d.upper), "lower_float": float(d.lower),
            "upper_float": float(d.upper), "ratio": d.ratio, "box": [[str(a), str(b)] for a, b in d.box],
            "default_box": spec is None, "equivalent": d.equivalent,
            "witness": [str(x) for x in d.witness], "readings": dict(d.readings)}


def _epsilon(text: str | None):
    """--epsilon as an exact nonnegative rational, or None."""
    if text is None:
        return None
    value = parse_rational(text)
    if value is None or value < 0:
        raise InputError(f"--epsilon: not an exact nonnegative number: {text!r}")
    if value > 2**1000:
        raise InputError(f"--epsilon {text}: beyond 2^1000, where the search's floating point ends; a network's "
                         "difference that large is refused anyway")
    return value


def _epsilon_line(verdict: str, lower, epsilon, where: str,
                  hint: str = "raise --seconds, or see [L, U] below") -> str:
    """The verdict against ε, first: VERIFIED, VIOLATED with the witness's value, or UNKNOWN with [L, U]."""
    if verdict == "verified":
        return f"VERIFIED: sup ‖ρ(θ1)(x) − ρ(θ2)(x)‖∞ ≤ U ≤ ε = {epsilon} on {where}"
    if verdict == "violated":
        return (f"VIOLATED: ‖ρ(θ1)(x*) − ρ(θ2)(x*)‖∞ = L ≈ {float(lower):.6g} > ε = {epsilon} at an exact witness "
                "x* in the box (in --json and the certificate)")
    return f"UNKNOWN within the budget: L ≤ ε = {epsilon} < U ({hint})"

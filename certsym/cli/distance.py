"""``distance``: exact bounds [L, U] on sup over a box of ‖ρ(θ1) − ρ(θ2)‖∞ (one hidden layer: linear relaxations
of the aligned networks; deep: interval differences), with --epsilon the verdict against ε: VERIFIED (exit 0),
VIOLATED (exit 1) or UNKNOWN (exit 3). With --cert the verdict is printed only after the independent checker has
replayed the certificate VALID. ``--top1`` is answered in ``certsym.cli.top1``."""

from __future__ import annotations

import argparse
import sys

from certsym.certify import deep_distance_certificate, distance_certificate, replay_share
from certsym.cli.common import EXIT, emit_json
from certsym.cli.inputs import embeds_inputs, read_box, tensor_selections
from certsym.cli.search import (
    command_budget,
    print_progress,
    print_readings,
    refused_line,
    regions_text,
    search_deadline,
    stopped_hint,
    write_certificate,
)
from certsym.cli.top1 import run_deep_top1, run_top1
from certsym.decide import deep
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import deep_distance
from certsym.decide.distance import distance
from certsym.errors import InputError
from certsym.io.models import is_model_file, reading
from certsym.io.sources import load, read_pair
from certsym.numbers import parse_rational


def cmd_distance(args: argparse.Namespace) -> int:
    """``distance``: exact bounds [L, U] on sup over the box of ‖ρ(θ1) − ρ(θ2)‖∞, the verdict against --epsilon
    (exit 0 VERIFIED, 1 VIOLATED, 3 UNKNOWN), or with --top1 whether the largest outputs agree."""
    selections = tensor_selections(args, 2)
    deadline, regions = command_budget(args)
    sources = [load(path, sel.keys, sel.layout, sel.state_key) if is_model_file(path) else load(path)
               for path, sel in zip((args.params1, args.params2), selections, strict=True)]
    if any(x.is_deep for x in sources):
        return _deep_distance(args, sources, deadline)
    t1, t2, records = read_pair(*sources)
    spec = args.box
    box = read_box(spec, t1.m)
    epsilon = _epsilon(args.epsilon)
    if args.top1:
        if epsilon is not None:
            raise InputError("--top1 and --epsilon ask different questions: give one of them")
        return run_top1(args, t1, t2, records, box, deadline, regions)
    d = distance(t1, t2, box, seed=args.seed, deadline=search_deadline(args, deadline, "relaxations"),
                 target=args.target, epsilon=epsilon, max_regions=regions,
                 progress=print_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        embed = embeds_inputs(args, records, (t1, t2))
        refused = write_certificate(args, distance_certificate(d, records, (t1, t2), embed), embed)
    where = "the default box [0, 1]^m" if spec is None else f"the box {spec}"
    readings = [(path, reading(rec.model)) for path, rec in zip((args.params1, args.params2), records, strict=True)
                if reading(rec.model)]
    verdict = d.verdict if refused is None else "unknown"
    code = EXIT[verdict]
    search = d.search
    if args.json:
        emit_json(_bounds_json(d, box, spec, readings) | {
            "pairs": len(d.pairs), "stable_terms": d.stable, "unstable_terms": d.unstable,
            "upper_interval": None if d.interval is None else str(d.interval),
            "regions": None if search is None else search.regions,
            "leaves": None if search is None else len(search.root.leaves()),
            "stopped": None if search is None else search.stopped,
            "epsilon": None if epsilon is None else str(epsilon), "verdict": verdict, "refused": refused})
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
    elif epsilon is not None:
        print(_epsilon_line(d.verdict, d.lower, epsilon, where,
                            stopped_hint(d.search.stopped if d.search is not None else "")))
    if d.equivalence is not None:
        print(f"DISTANCE 0 on {where} (m = {t1.m}): ρ(θ1) = ρ(θ2) exactly (Theorems 3/4), so L = U = 0")
        print_readings(readings)
        return code
    print(f"DISTANCE on {where} (m = {t1.m}): sup ‖ρ(θ1)(x) − ρ(θ2)(x)‖∞ ∈ [L, U], exact rationals")
    print(f"  L ≈ {float(d.lower):.6g}  (‖D(x*)‖∞ at a witness x* in the box, evaluated exactly; exact in --json)")
    print(f"  U ≈ {float(d.upper):.6g}  (sound: linear relaxations of the aligned networks with rational multipliers, "
          f"the largest leaf bound, {regions_text(len(search.root.leaves()))} covering the box; symbolic intervals "
          f"alone give {float(d.interval):.6g})")
    print(f"  U/L = {d.ratio:.3g}" if d.ratio is not None else "  U/L undefined (L = 0)")
    print(f"  branch and bound: {regions_text(search.regions)} in {search.seconds:.1f} s, stopped at {search.stopped}")
    print(f"  alignment: {len(d.pairs)} neuron pairs (an H_n element), {t1.n - len(d.pairs)} + "
          f"{t2.n - len(d.pairs)} unpaired; {d.stable} stable and {d.unstable} unstable terms on the box")
    print_readings(readings)
    return code


def _deep_distance(args: argparse.Namespace, models: list, deadline: Deadline) -> int:
    """``distance`` when either network is deep or ends in a ReLU (``certsym.decide.deep_distance``), within
    ``deadline``."""
    epsilon = _epsilon(args.epsilon)
    t1, t2 = (x.deep_network() for x in models)
    records = tuple(x.record for x in models)
    spec = args.box
    if args.top1:
        if epsilon is not None:
            raise InputError("--top1 and --epsilon ask different questions: give one of them")
        return run_deep_top1(args, t1, t2, records, read_box(spec, t1.m), [(x.name, x.reading) for x in models
                                                                     if x.reading], deadline)
    box = read_box(spec, t1.m)
    verdict = deep.decide(t1, t2, args.seed)
    regions = args.regions
    if args.cert and not verdict.equivalent:
        regions = _replayable_regions(deep_distance(t1, t2, box, seed=args.seed, verdict=verdict), records, (t1, t2),
                                      epsilon, regions)
    d = deep_distance(t1, t2, box, seed=args.seed, verdict=verdict, deadline=search_deadline(args, deadline, "deep"),
                      target=args.target, epsilon=epsilon, max_regions=regions,
                      progress=print_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        if args.reference:
            print("note: deep networks are embedded in the certificate", file=sys.stderr)
        refused = write_certificate(args, deep_distance_certificate(d, records, (t1, t2), epsilon))
    where = "the default box [0, 1]^m" if spec is None else f"the box {spec}"
    readings = [(x.name, x.reading) for x in models if x.reading]
    verdict = d.verdict if refused is None else "unknown"
    code = EXIT[verdict]
    if args.json:
        emit_json(_bounds_json(d, d.box, spec, readings) | {
            "deep": True, "aligned": d.alignment is not None, "upper_plain": str(d.plain),
            "upper_aligned": None if d.aligned is None else str(d.aligned),
            "regions": d.regions, "leaves": d.leaves, "stopped": d.stopped,
            "epsilon": None if epsilon is None else str(epsilon), "verdict": verdict, "refused": refused})
        return code
    if refused is not None:
        print(refused_line(refused, args.cert))
    elif epsilon is not None:
        print(_epsilon_line(verdict, d.lower, epsilon, where, stopped_hint(d.stopped)))
    if d.equivalence is not None:
        print(f"DISTANCE 0 on {where} (m = {t1.m}): f1 = f2 exactly (the block lemma, MATH.md Part III), so L = U = 0")
        print_readings(readings)
        return code
    print(f"DISTANCE on {where} (m = {t1.m}): sup ‖f1(x) − f2(x)‖∞ ∈ [L, U], exact rationals (deep networks)")
    print(f"  L ≈ {float(d.lower):.6g}  (at a witness x* in the box, evaluated exactly; exact in --json)")
    how = "interval differences over an alignment of every hidden layer" if d.alignment is not None else \
        "intervals of each network (the widths or endings differ: no alignment)"
    print(f"  U ≈ {float(d.upper):.6g}  (sound: {how}, {regions_text(d.leaves)} of the box; one region gives "
          f"{float(d.plain if d.aligned is None else min(d.plain, d.aligned)):.6g})")
    print(f"  U/L = {d.ratio:.3g}" if d.ratio is not None else "  U/L undefined (L = 0)")
    print(f"  branch and bound: {regions_text(d.regions)} in {d.seconds:.1f} s, stopped at {d.stopped}")
    print_readings(readings)
    return code


def _bounds_json(d, box, spec: str | None, readings: list[tuple[str, str]]) -> dict:
    """The fields of ``distance --json`` that every distance has: [L, U] exactly and as floats, the box, the
    witness and the readings."""
    return {"lower": str(d.lower), "upper": str(d.upper), "lower_float": float(d.lower),
            "upper_float": float(d.upper), "ratio": d.ratio, "box": [[str(a), str(b)] for a, b in box],
            "default_box": spec is None, "equivalent": d.equivalence is not None,
            "witness": [str(x) for x in d.witness], "readings": dict(readings)}


# the share of the checker's work budget a deep distance tree is sized for, from its root's replay: a leaf costs
# about what the root does without its one-time work (the moved network, the differences, the witness), and a
# halving adds a bit to one coordinate, so the margin covers the leaves' slightly longer box numbers
_TREE_SHARE = 0.8


def _replayable_regions(root, records, nets, epsilon, regions: int | None) -> int | None:
    """The regions a deep distance tree may have so that its certificate replays within the checker's work budget:
    the root's certificate is replayed and the tree sized to _TREE_SHARE of the budget at that cost per leaf (at
    most ``regions`` when given). Cost: one replay of the root's certificate."""
    share = replay_share(deep_distance_certificate(root, records, nets, epsilon))
    leaves = 1 if share is None else max(1, int(_TREE_SHARE / max(share, 1e-9)))
    return min(2 * leaves - 1, regions) if regions is not None else 2 * leaves - 1


def _epsilon(text: str | None):
    """--epsilon as an exact nonnegative rational, or None."""
    if text is None:
        return None
    value = parse_rational(text)
    if value is None or value < 0:
        raise InputError(f"--epsilon: not an exact nonnegative number: {text!r}")
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

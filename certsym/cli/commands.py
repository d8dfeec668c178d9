"""The ``certsym`` commands (all but ``check``, which ``certsym.cli`` hands to the checker, and the ``landscape``
family, in ``certsym.cli.landscape``); with those, the only place that prints or exits.

Exit codes, for every command: 0 success or positive verdict, 1 negative verdict, 2 bad input or
usage, 3 no verdict within the budget (UNKNOWN, UNDECIDED), or a certificate that would not replay. Bad input
prints one line ``certsym: error: ...`` on stderr and no traceback. A ``distance`` or ``--top1`` verdict with
``--cert`` is printed only after the independent checker has replayed its certificate VALID.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from certsym import __version__
from certsym.audit.classes import Job, audit
from certsym.audit.pair import EMBED_LIMIT, DeepEquivalence, equivalent
from certsym.certify import (
    InputRecord,
    affine_certificate,
    deep_certificate,
    deep_distance_certificate,
    deep_top1_certificate,
    distance_certificate,
    identifiability_certificate,
    layered_json,
    minimal_form_certificate,
    replay_failure,
    replay_share,
    stabilizer_certificate,
    top1_certificate,
)
from certsym.cli import landscape
from certsym.cli.common import EXIT, EXIT_INPUT, EXIT_NEGATIVE, EXIT_OK, Parser, UsageError, emit_json
from certsym.core.canonical import canonical_form
from certsym.core.reduction import reduce
from certsym.decide import deep
from certsym.decide.affine import decide_affine
from certsym.decide.branch_and_bound import MAX_REGIONS, budget
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import deep_distance
from certsym.decide.deep_top1 import deep_top1
from certsym.decide.distance import distance, parse_box, parse_vnnlib
from certsym.decide.identifiability import converse_failures, decide_identifiable, describe_fibre, perturb
from certsym.decide.nearmiss import near_miss
from certsym.decide.stabilizer import stabilizer
from certsym.decide.top1 import top1
from certsym.errors import InputError, Undecided
from certsym.io import (
    dump_layered,
    dump_network,
    load_inputs,
    load_networks,
    parse_point,
    read_text,
    write_json_atomic,
    write_text_atomic,
)
from certsym.io.models import Selection, is_model_file, parse_keys, reading
from certsym.io.sources import Model, load, read_pair
from certsym.numbers import DEFAULT_MAX_DIGITS, parse_rational

_VALUE_OPTIONS = {"--at"}


def cmd_eval(args: argparse.Namespace) -> int:
    point = parse_point(args.at, args.max_digits)
    (item,), x = load_inputs([args.params], extra_values=point, max_digits=args.max_digits,
                             keys=_selections(args, 1), deep=True)
    _note_absent_biases([item.model], [item.name])
    net = item.network
    values = net.evaluate(x)
    strings = [net.field.pretty(v) for v in values]
    if args.json:
        emit_json({"field": net.field.name, "x": [net.field.pretty(t) for t in x],
                    "value": strings})
    else:
        for s in strings:
            print(s)
    return EXIT_OK


def _selections(args: argparse.Namespace, count: int) -> list:
    """How the tensors of each of ``count`` input files are chosen: --keys (before or after the command),
    --keys1/--keys2 per file, --layout and --state-key (docs/FORMATS.md, "the selection rule")."""
    def per_file(name: str, i: int, shared):
        own = getattr(args, f"{name}{i + 1}", None) if count == 2 else None
        return own if own is not None else shared

    shared_keys = getattr(args, "sub_keys", None) or args.keys
    out = []
    for i in range(count):
        keys = per_file("keys", i, shared_keys)
        state_key = per_file("state_key", i, getattr(args, "state_key", None))
        out.append(Selection(keys=parse_keys(keys) if keys else None,
                             layout=per_file("layout", i, getattr(args, "layout", None)) or "out-in",
                             state_key=tuple(state_key.split(".")) if state_key else None))
    return out


def _load(args: argparse.Namespace, paths: Sequence[str]):
    """Networks over one common field, and the input records (name, SHA-256, atoms) for certificates."""
    loaded, _ = load_inputs(paths, max_digits=args.max_digits, keys=_selections(args, len(paths)))
    records = [InputRecord(item.name, item.sha256, item.atoms, item.model) for item in loaded]
    _note_absent_biases([r.model for r in records], [r.name for r in records])
    return [item.network for item in loaded], records


def _note_absent_biases(models: list, names: list[str], readings: bool = True) -> None:
    """Say on stderr how each model file was read: its activation (docs/FORMATS.md: a tensor file holds none, so it
    is read as a ReLU network; ``readings`` False when the verdict says it) and which biases were absent and read
    as 0."""
    for model, name in zip(models, names, strict=True):
        if readings and reading(model):
            print(f"note: {name}: {reading(model)}", file=sys.stderr)
        first = ((model or {}).get("tensors") or [None])[0]
        if (model or {}).get("rule") == "default" and first and first.endswith("0.weight") and first != "0.weight":
            print(f"note: {name}: the prefix {first[:-len('0.weight')]!r} was removed from every tensor name "
                  "(docs/FORMATS.md, the default rule)", file=sys.stderr)
        biases = (model or {}).get("tensors", [0, 0, 0, 0])[1::2]
        labels = ("the first", "the second") if len(biases) == 2 else [f"layer {ell}" for ell in range(1, 99)]
        absent = [label for label, t in zip(labels, biases, strict=False) if t is None]
        if absent:
            print(f"note: {name}: no bias in {' and '.join(absent)} layer (Linear(bias=False)); read as 0",
                  file=sys.stderr)


def _step_text(F, step) -> str:
    if step.kind == "merge":
        return f"merge neuron {step.source} into {step.neuron} (λ = {F.pretty(step.lam)}) [{step.statement}]"
    what = "zero neuron" if step.kind == "zero" else "shift the constant neuron into c and zero neuron"
    return f"{what} {step.neuron} [{step.statement}]"


def _load_any_depth(args: argparse.Namespace, path: str):
    """One network of any depth (a DeepNetwork) and its input record."""
    (item,), _ = load_inputs([path], max_digits=args.max_digits, keys=_selections(args, 1), deep=True)
    record = InputRecord(item.name, item.sha256, item.atoms, item.model)
    _note_absent_biases([record.model], [record.name])
    return item.network, record


_DEEP_NOTE = ("note: a deep network: the moves D1–D4 of MATH.md Part III are sound, not complete, so a smaller "
              "network may still compute the same function")


def _deep_step_text(F, step: dict) -> str:
    if step["step"] == "D3":
        return (f"D3 merge neuron {step['from']} of layer {step['layer']} into {step['into']} "
                f"(λ = {F.pretty(step['lambda'])})")
    what = {"D1": "zero output column", "D2": "constant neuron", "D4": "dead on the orthant"}[step["step"]]
    return f"{step['step']} {what}: delete neuron {step['neuron']} of layer {step['layer']}"


def _deep_minimal(args: argparse.Namespace, theta, record: InputRecord) -> int:
    """``minimal`` on a deep network: the parameter after D1–D4, as a layered parameter file; its certificate is a
    deep_equivalent certificate of θ against it."""
    red = deep.reduce(theta)
    reduced = deep.reduced_network(red)
    text = dump_layered(reduced)
    trace = [_deep_step_text(theta.field, st) for st in red.steps]
    if args.cert:
        verdict = deep.decide(theta, reduced)
        if not verdict.equivalent:  # each move preserves ρ; the block lemma must see it
            raise InputError(f"internal: the reduced network was not shown equivalent ({verdict.reason})")
        name = args.output or "<standard output>"
        out_record = InputRecord(name, hashlib.sha256(text.encode()).hexdigest(), record.atoms)
        write_json_atomic(args.cert, deep_certificate(verdict, (record, out_record)))
    print(_DEEP_NOTE, file=sys.stderr)
    if args.output:
        write_text_atomic(args.output, text)
        print(f"reduced parameter written to {args.output}: widths {'-'.join(map(str, theta.widths))} → "
              f"{'-'.join(map(str, reduced.widths))} ({len(red.steps)} moves D1–D4)"
              + (f"; certificate {args.cert}" if args.cert else ""))
        if args.trace:
            print("\n".join(trace) if trace else "already reduced: no move applies")
    else:
        if args.trace:
            print("\n".join(trace) if trace else "already reduced: no move applies", file=sys.stderr)
        sys.stdout.write(text)
    return EXIT_OK


def cmd_minimal(args: argparse.Namespace) -> int:
    theta, record = _load_any_depth(args, args.params)
    if not theta.is_shallow():
        return _deep_minimal(args, theta, record)
    net = theta.to_shallow()
    red = reduce(net)
    if args.cert:
        write_json_atomic(args.cert, minimal_form_certificate(red, record))
    trace = [_step_text(net.field, st) for st in red.steps]
    if args.output:
        write_text_atomic(args.output, dump_network(red.minimal))
        counts = {kind: sum(st.kind == kind for st in red.steps) for kind in ("zero", "bias_shift", "merge")}
        left = net.n - len(red.steps)
        print(f"θ_min written to {args.output}: {net.n} → {left} neuron{'' if left == 1 else 's'} "
              f"({counts['zero']} zeroed, {counts['bias_shift']} folded into c by bias shifting, "
              f"{counts['merge']} merged)"
              + (f"; certificate {args.cert}" if args.cert else ""))
        if args.trace:
            print("\n".join(trace) if trace else "already minimal: no move applies")
    else:
        if args.trace:
            print("\n".join(trace) if trace else "already minimal: no move applies", file=sys.stderr)
        sys.stdout.write(dump_network(red.minimal))
    return EXIT_OK


def _deep_canon(args: argparse.Namespace, theta) -> int:
    """``canon`` on a deep network: the layerwise canonical form of its reduced parameter (MATH.md Part III), an
    invariant of the H-orbit of the reduced parameter, not of the function."""
    canon = deep.canonical_network(deep.reduce(theta))
    doc = layered_json(canon)
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    if args.json:
        emit_json({"hash": digest, "field": theta.field.name, "form": "layerwise", **doc})
        return EXIT_OK
    F = theta.field
    print(f"hash      {digest}")
    print(f"field     {F.name}")
    print("form      layerwise canonical form after D1–D4 (MATH.md Part III): equal for H-related reduced "
          "parameters; equal functions may still differ here")
    print(f"widths    {' → '.join(str(w) for w in canon.widths)}" + (" → ReLU" if canon.output_relu else ""))
    for ell, layer in enumerate(canon.layers, 1):
        name = "output" if ell == len(canon.layers) else f"layer {ell}"
        for row, bias in zip(layer.W, layer.b, strict=True):
            print(f"{name:<9} [{', '.join(F.pretty(x) for x in row)}] + {F.pretty(bias)}")
    return EXIT_OK


def cmd_canon(args: argparse.Namespace) -> int:
    theta, _ = _load_any_depth(args, args.params)
    if not theta.is_shallow():
        return _deep_canon(args, theta)
    net = theta.to_shallow()
    canon = canonical_form(net)
    if args.json:
        emit_json({"hash": canon.hash, **canon.to_json()})
        return EXIT_OK
    F = net.field
    print(f"hash      {canon.hash}")
    print(f"field     {F.name}")
    for key, J in sorted(canon.kinks.items(), key=lambda kv: [str(x) for x in kv[0]]):
        plane = ", ".join(F.pretty(x) for x in key)
        print(f"kink      (u, β) = ({plane})  J = [{', '.join(F.pretty(x) for x in J)}]")
    print(f"linear    {[[F.pretty(x) for x in row] for row in canon.linear]}")
    print(f"constant  {[F.pretty(x) for x in canon.constant]}")
    return EXIT_OK


def cmd_equiv(args: argparse.Namespace) -> int:
    selections = _selections(args, 2)
    sources = []
    for path, sel in zip((args.params1, args.params2), selections, strict=True):
        sources.append(load(path, sel.keys, sel.layout, sel.state_key) if _is_model(path) else path)
    models = [s.record.model if isinstance(s, Model) else None for s in sources]
    _note_absent_biases(models, [args.params1, args.params2], readings=False)
    verdict = equivalent(sources[0], sources[1], path=args.path, reference=args.reference)
    if isinstance(verdict, DeepEquivalence):
        return _deep_equiv(args, verdict)
    inside = None
    if args.box and not verdict.equivalent:
        inside = verdict.prefer_witness_in(_box(args.box, len(verdict.witness)))
    if args.cert:
        write_json_atomic(args.cert, verdict.certificate(reference=True if args.reference else None))
    explained = None
    if not verdict.equivalent and all(isinstance(x, Model) and x.arrays is not None for x in sources) and \
            all(np_float(a) for x in sources for a in x.arrays):
        explained = near_miss(sources[0].arrays, sources[1].arrays, verdict.exact_partners())
    if args.json:
        emit_json(verdict.to_json() | ({"near_miss": explained.to_json()} if explained else {}))
    elif verdict.equivalent:
        print(verdict)
    else:
        print(_not_equivalent_text(verdict))
        if inside is False:
            print("  no point of --box where they differ was found: the witness lies outside it")
        for line in verdict.reading_lines():
            print(line)
        for line in explained.lines() if explained else ():
            print(line)
    return EXIT["equivalent" if verdict.equivalent else "not equivalent"]


def _deep_equiv(args: argparse.Namespace, verdict: DeepEquivalence) -> int:
    """``equiv`` on deep networks: exit 0 EQUIVALENT, 1 NOT EQUIVALENT, 3 UNDECIDED (no certificate then)."""
    if args.cert and not verdict.undecided:
        write_json_atomic(args.cert, verdict.certificate())
    if args.json:
        emit_json(verdict.to_json())
    else:
        print(verdict)
    if args.cert and verdict.undecided:
        print(f"certsym: no certificate written to {args.cert}: an UNDECIDED verdict has none", file=sys.stderr)
    return EXIT["equivalent" if verdict.equivalent else "undecided" if verdict.undecided else "not equivalent"]


def _box(spec: str | None, m: int):
    if spec is not None and (spec.endswith(".vnnlib") or Path(spec).is_file()):
        return parse_vnnlib(read_text(spec), m)
    return parse_box(spec, m)


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


def _print_readings(readings: list[tuple[str, str]]) -> None:
    for name, text in readings:
        print(f"  {name}: {text}")


# the share of what is left of --seconds, once the files are read, that the search may take: the rest is for the
# certificate and its replay by the checker (measured: the replay of a deep tree of halvings takes 40-50% of its
# search's time; of a tree of linear relaxations on 784-256-10 float pairs, 5.4 s after 8.2 s of search;
# benchmarks/seconds_budget.py)
_SEARCH_SHARE = {"deep": 0.5, "relaxations": 0.5, None: 0.95}


def _budget(args: argparse.Namespace) -> tuple[Deadline, int]:
    """The time budget of a whole ``distance`` command, started now (before the files are read, so that
    ``--seconds`` bounds reading, search, certificate and replay; none when --regions is given alone:
    ``branch_and_bound.budget``), and the region budget; --target checked to be at least 1."""
    if not args.target >= 1:
        raise InputError("--target must be at least 1")
    seconds, regions = budget(args.seconds, args.regions)
    return Deadline(seconds), regions


def _search(args: argparse.Namespace, deadline: Deadline, kind: str) -> Deadline:
    """The search's share of what is left of the command's budget (``_SEARCH_SHARE``): all but the certificate's."""
    return deadline.share(_SEARCH_SHARE[kind] if args.cert else _SEARCH_SHARE[None])


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
        return _deep_top1(args, t1, t2, records, _box(spec, t1.m), [(x.name, x.reading) for x in models
                                                                     if x.reading], deadline)
    box = _box(spec, t1.m)
    verdict = deep.decide(t1, t2, args.seed)
    regions = args.regions
    if args.cert and not verdict.equivalent:
        regions = _replayable_regions(deep_distance(t1, t2, box, seed=args.seed, verdict=verdict), records, (t1, t2),
                                      epsilon, regions)
    d = deep_distance(t1, t2, box, seed=args.seed, verdict=verdict, deadline=_search(args, deadline, "deep"),
                      target=args.target, epsilon=epsilon, max_regions=regions,
                      progress=_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        if args.reference:
            print("note: deep networks are embedded in the certificate", file=sys.stderr)
        refused = _write_certificate(args, deep_distance_certificate(d, records, (t1, t2), epsilon))
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
        print(_refused_line(refused, args.cert))
    elif epsilon is not None:
        print(_epsilon_line(verdict, d.lower, epsilon, where, _stopped_hint(d.stopped)))
    if d.equivalence is not None:
        print(f"DISTANCE 0 on {where} (m = {t1.m}): f1 = f2 exactly (the block lemma, MATH.md Part III), so L = U = 0")
        _print_readings(readings)
        return code
    print(f"DISTANCE on {where} (m = {t1.m}): sup ‖f1(x) − f2(x)‖∞ ∈ [L, U], exact rationals (deep networks)")
    print(f"  L ≈ {float(d.lower):.6g}  (at a witness x* in the box, evaluated exactly; exact in --json)")
    how = "interval differences over an alignment of every hidden layer" if d.alignment is not None else \
        "intervals of each network (the widths or endings differ: no alignment)"
    print(f"  U ≈ {float(d.upper):.6g}  (sound: {how}, {_regions(d.leaves)} of the box; one region gives "
          f"{float(d.plain if d.aligned is None else min(d.plain, d.aligned)):.6g})")
    print(f"  U/L = {d.ratio:.3g}" if d.ratio is not None else "  U/L undefined (L = 0)")
    print(f"  branch and bound: {_regions(d.regions)} in {d.seconds:.1f} s, stopped at {d.stopped}")
    _print_readings(readings)
    return code


def cmd_distance(args: argparse.Namespace) -> int:
    selections = _selections(args, 2)
    deadline, regions = _budget(args)
    sources = [load(path, sel.keys, sel.layout, sel.state_key) if _is_model(path) else load(path)
               for path, sel in zip((args.params1, args.params2), selections, strict=True)]
    if any(x.is_deep for x in sources):
        return _deep_distance(args, sources, deadline)
    t1, t2, records = read_pair(*sources)
    spec = args.box
    box = _box(spec, t1.m)
    epsilon = _epsilon(args.epsilon)
    if args.top1:
        if epsilon is not None:
            raise InputError("--top1 and --epsilon ask different questions: give one of them")
        return _top1(args, t1, t2, records, box, deadline, regions)
    d = distance(t1, t2, box, seed=args.seed, deadline=_search(args, deadline, "relaxations"), target=args.target,
                 epsilon=epsilon, max_regions=regions, progress=_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        embed = _embed(args, records, (t1, t2))
        refused = _write_certificate(args, distance_certificate(d, records, (t1, t2), embed), embed)
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
        print(_refused_line(refused, args.cert))
    elif epsilon is not None:
        print(_epsilon_line(d.verdict, d.lower, epsilon, where,
                            _stopped_hint(d.search.stopped if d.search is not None else "")))
    if d.equivalence is not None:
        print(f"DISTANCE 0 on {where} (m = {t1.m}): ρ(θ1) = ρ(θ2) exactly (Theorems 3/4), so L = U = 0")
        _print_readings(readings)
        return code
    print(f"DISTANCE on {where} (m = {t1.m}): sup ‖ρ(θ1)(x) − ρ(θ2)(x)‖∞ ∈ [L, U], exact rationals")
    print(f"  L ≈ {float(d.lower):.6g}  (‖D(x*)‖∞ at a witness x* in the box, evaluated exactly; exact in --json)")
    print(f"  U ≈ {float(d.upper):.6g}  (sound: linear relaxations of the aligned networks with rational multipliers, "
          f"the largest leaf bound, {_regions(len(search.root.leaves()))} covering the box; symbolic intervals alone "
          f"give {float(d.interval):.6g})")
    print(f"  U/L = {d.ratio:.3g}" if d.ratio is not None else "  U/L undefined (L = 0)")
    print(f"  branch and bound: {_regions(search.regions)} in {search.seconds:.1f} s, stopped at {search.stopped}")
    print(f"  alignment: {len(d.pairs)} neuron pairs (an H_n element), {t1.n - len(d.pairs)} + "
          f"{t2.n - len(d.pairs)} unpaired; {d.stable} stable and {d.unstable} unstable terms on the box")
    _print_readings(readings)
    return code


def _top1(args: argparse.Namespace, t1, t2, records, box, deadline: Deadline, regions: int) -> int:
    """``distance --top1``: AGREE (exit 0, a tree of per-leaf margins or an equivalence proof), DIFFER (exit 1, an
    exact witness) or UNKNOWN (exit 3, no certificate)."""
    r = top1(t1, t2, box, seed=args.seed, deadline=_search(args, deadline, "relaxations"), max_regions=regions,
             progress=_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        if r.verdict == "unknown":
            print("note: no certificate for UNKNOWN", file=sys.stderr)
        else:
            embed = _embed(args, records, (t1, t2))
            refused = _write_certificate(args, top1_certificate(r, records, (t1, t2), embed), embed)
    where = "the default box [0, 1]^m" if args.box is None else f"the box {args.box}"
    readings = [(path, reading(rec.model)) for path, rec in zip((args.params1, args.params2), records, strict=True)
                if reading(rec.model)]
    code = EXIT[r.verdict if refused is None else "unknown"]
    leaves = r.root.leaves() if r.root is not None else []
    if args.json:
        emit_json(_top1_json(r, args, box, len(leaves), sorted({leaf.label for leaf in leaves}), readings, refused))
        return code
    if refused is not None:
        print(_refused_line(refused, args.cert))
        _print_readings(readings)
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
        print(f"  certified by margin bounds below 0 on {_regions(len(leaves))} covering the box (linear "
              f"relaxations with rational multipliers; {_regions(r.regions)} in {r.seconds:.1f} s)")
    else:
        print(f"UNKNOWN on {where}: no disagreement found and not every region certified; {_stop_text(r)}")
    _print_readings(readings)
    return code


def _deep_top1(args: argparse.Namespace, t1, t2, records, box, readings: list, deadline: Deadline) -> int:
    """``distance --top1`` for deep networks (``certsym.decide.deep_top1``): AGREE (exit 0; halvings of the box
    with interval margins, or the block lemma), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3)."""
    r = deep_top1(t1, t2, box, seed=args.seed, deadline=_search(args, deadline, "deep"), max_regions=args.regions,
                  progress=_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert:
        if r.verdict == "unknown":
            print("note: no certificate for UNKNOWN", file=sys.stderr)
        else:
            if args.reference:
                print("note: deep networks are embedded in the certificate", file=sys.stderr)
            refused = _write_certificate(args, deep_top1_certificate(r, records, (t1, t2)))
    where = "the default box [0, 1]^m" if args.box is None else f"the box {args.box}"
    code = EXIT[r.verdict if refused is None else "unknown"]
    classes = sorted({c for kind, c in r.tree if kind == "leaf"})
    if args.json:
        emit_json(_top1_json(r, args, box, r.leaves, classes, readings, refused) | {"deep": True})
        return code
    if refused is not None:
        print(_refused_line(refused, args.cert))
        _print_readings(readings)
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
        print(f"  certified by interval margins > 0 on {_regions(r.leaves)} (halvings of the box; "
              f"{_regions(r.regions)} in {r.seconds:.1f} s)")
    else:
        print(f"UNKNOWN on {where}: no disagreement found and not every region certified; {_stop_text(r)}")
    _print_readings(readings)
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


def _write_certificate(args: argparse.Namespace, doc: dict, embedded: bool = True) -> str | None:
    """Replay ``doc`` with the independent checker (bound to the two model files when it references them) and
    write it to ``--cert`` only when it replays VALID: no verdict is printed on a certificate that does not replay.
    The checker's reason when it refuses (nothing written), else None. Cost: the checker's replay."""
    files = None if embedded else [args.params1, args.params2]
    reason = replay_failure(doc, files)
    if reason is None:
        write_json_atomic(args.cert, doc)
    return reason


def _refused_line(reason: str, path: str) -> str:
    """The verdict line when the certificate does not replay: UNKNOWN, with the checker's reason."""
    return (f"UNKNOWN: the certificate does not replay within the checker's bounds, so no verdict is given and "
            f"nothing was written to {path} (the checker: {reason})")


def _regions(count: int) -> str:
    return f"{count} region" + ("" if count == 1 else "s")


def _epsilon(text: str | None):
    """--epsilon as an exact nonnegative rational, or None."""
    if text is None:
        return None
    value = parse_rational(text)
    if value is None or value < 0:
        raise InputError(f"--epsilon: not an exact nonnegative number: {text!r}")
    return value


_RAISE = {"the time budget": "raise --seconds", "the region budget": "raise --regions",
          "the checker's bounds": "the checker's bounds are fixed: split the box", "the checker's work bound":
          "the checker's bounds are fixed: split the box"}


def _stopped_hint(stopped: str) -> str:
    """What to raise for an UNKNOWN against ε, from the limit that stopped the search."""
    more = _RAISE.get(stopped)
    return f"stopped at {stopped}" + (f": {more}" if more else "") + "; see [L, U] below"


def _stop_text(r) -> str:
    """Where a top-1 search stopped, in how many regions and seconds, and what would go further."""
    more = _RAISE.get(r.stopped)
    return f"stopped at {r.stopped} ({_regions(r.regions)} in {r.seconds:.1f} s" + (f"; {more})" if more else ")")


def _epsilon_line(verdict: str, lower, epsilon, where: str,
                  hint: str = "raise --seconds, or see [L, U] below") -> str:
    """The verdict against ε, first: VERIFIED, VIOLATED with the witness's value, or UNKNOWN with [L, U]."""
    if verdict == "verified":
        return f"VERIFIED: sup ‖ρ(θ1)(x) − ρ(θ2)(x)‖∞ ≤ U ≤ ε = {epsilon} on {where}"
    if verdict == "violated":
        return (f"VIOLATED: ‖ρ(θ1)(x*) − ρ(θ2)(x*)‖∞ = L ≈ {float(lower):.6g} > ε = {epsilon} at an exact witness "
                "x* in the box (in --json and the certificate)")
    return f"UNKNOWN within the budget: L ≤ ε = {epsilon} < U ({hint})"


def _progress(text: str) -> None:
    print(f"  … {text}", file=sys.stderr, flush=True)


def np_float(array) -> bool:
    """A floating-point array (a near-miss summary compares floats in units of their last place)."""
    return getattr(getattr(array, "dtype", None), "kind", "") == "f"


def _is_model(path: str) -> bool:
    return is_model_file(path)


def _not_equivalent_text(verdict) -> str:
    """NOT EQUIVALENT with the witness: its nonzero coordinates when it is sparse, each exact value followed by a
    decimal; a witness longer than a line is left to --json and the certificate."""
    F = verdict._field()
    x = verdict.witness
    nonzero = [(q, t) for q, t in enumerate(x) if t != 0]
    point = ", ".join(f"x{q} = {t}" for q, t in nonzero) or "x = 0"
    if len(point) > 200:
        point = f"a rational point with {len(nonzero)} nonzero coordinates (see --json or the certificate)"
    elif len(nonzero) < len(x):
        point = f"the point with {point} (other coordinates 0)"
    else:
        point = f"x = ({', '.join(str(t) for t in x)})"

    def shown(vals) -> str:
        return "[" + ", ".join(F.pretty(y) + _decimal(y) for y in vals) + "]"

    v1, v2 = (shown(vals) for vals in verdict.values)
    if len(v1) + len(v2) > 400 and all(hasattr(y, "q") for vals in verdict.values for y in vals):
        v1, v2 = ("≈ [" + ", ".join(_decimal(y, 9).strip(" (≈)") for y in vals) + "]" for vals in verdict.values)
        return (f"NOT EQUIVALENT: at {point}, ρ(θ1)(x) {v1} and ρ(θ2)(x) {v2} (exact values in --json and the "
                "certificate)")
    return f"NOT EQUIVALENT: at {point}, ρ(θ1)(x) = {v1} and ρ(θ2)(x) = {v2}"


def _decimal(y, digits: int = 6) -> str:
    """" (≈ 0.123457)" for a rational that is not an integer, else ""."""
    if not hasattr(y, "q") or int(y.q) == 1:
        return "" if digits == 6 else f" (≈ {int(y.p)})"
    return f" (≈ {float(Fraction(int(y.p), int(y.q))):.{digits}g})"


def cmd_stabilizer(args: argparse.Namespace) -> int:
    (net,), (record,) = _load(args, [args.params])
    groups = (stabilizer(net), stabilizer(net, of_rows=True))
    if args.cert:
        write_json_atomic(args.cert, stabilizer_certificate(net, groups, record))
    F = net.field

    def describe(g) -> dict:
        return {"n_zero": len(g.zero), "classes": [list(c) for c in g.classes],
                "generators": [{"swap": [t.i, t.j], "scale": [F.pretty(t.d_i), F.pretty(t.d_j)]}
                               for t in g.generators],
                "finite_order": g.finite_order, "type": g.type, "within_bound": g.within_bound()}

    if args.json:
        emit_json({"theta": describe(groups[0]), "rows": describe(groups[1])})
        return EXIT_OK
    for title, g in (("Stab_{H_n}(θ)", groups[0]), ("Stab_{H_n}(A,b)", groups[1])):
        count, limit = len(g.generators), math.comb(net.n - len(g.zero), 2)
        within = "at most" if g.within_bound() else "BEYOND"
        print(f"{title} ≅ {g.type}   (finite part of order {g.finite_order}; n' = {len(g.zero)} zero neurons; "
              f"{count} generating transposition{'' if count == 1 else 's'}, {within} C(n − n', 2) = {limit} "
              "by Theorem 2)")
        for c in g.classes:
            if len(c) > 1:
                print(f"  class {list(c)}")
        for t in g.generators:
            print(f"  generator: swap {t.i} ↔ {t.j} with scalings {F.pretty(t.d_i)}, {F.pretty(t.d_j)}")
    return EXIT_OK


def cmd_affine(args: argparse.Namespace) -> int:
    (net,), (record,) = _load(args, [args.params])
    verdict = decide_affine(net)
    if args.cert:
        write_json_atomic(args.cert, affine_certificate(verdict, record))
    F = net.field
    if verdict.affine:
        L = [[F.pretty(x) for x in row] for row in verdict.linear]
        C = [F.pretty(x) for x in verdict.constant]
        if args.json:
            emit_json({"affine": True, "linear": L, "constant": C, "pairs": len(verdict.pairs)})
        else:
            print(f"AFFINE: ρ(θ)(x) = L x + C with L = {L}, C = {C} ({len(verdict.pairs)} antisymmetric pairs)")
        return EXIT_OK
    x, y = ([str(t) for t in pt] for pt in verdict.points)
    if args.json:
        emit_json({"affine": False, "x": x, "y": y})
    else:
        print(f"NOT AFFINE: f((x+y)/2) ≠ (f(x)+f(y))/2 at x = ({', '.join(x)}), y = ({', '.join(y)})")
    return EXIT_NEGATIVE


def _embed(args: argparse.Namespace, records, nets) -> bool:
    """Whether a certificate embeds its inputs: parameter files always (the checker re-reads model files only),
    model files up to EMBED_LIMIT weights in all unless --reference asks for references."""
    embed = any(rec.model is None for rec in records) or \
        (not args.reference and sum(t.n * (t.m + t.k) for t in nets) <= EMBED_LIMIT)
    if args.reference and embed:
        print("note: parameter files are embedded in the certificate (only model files are referenced)",
              file=sys.stderr)
    return embed


def _identifiability(args: argparse.Namespace) -> tuple:
    """(the Theorem 1 verdict, whether --cert was asked for and refused)."""
    (net,), (record,) = _load(args, [args.params])
    verdict = decide_identifiable(net, args.max_search)
    if args.cert:
        try:
            write_json_atomic(args.cert, identifiability_certificate(verdict, record,
                                                                     _embed(args, [record], [net])))
        except InputError as exc:  # the verdict is still printed; the exit code says no certificate was written
            print(f"certsym: error: {exc}", file=sys.stderr)
            return verdict, True
    return verdict, False


def cmd_identifiable(args: argparse.Namespace) -> int:
    verdict, refused = _identifiability(args)
    size = verdict.evidence.search_size if verdict.evidence else 0
    if args.json:
        emit_json({"identifiable": verdict.identifiable, "reason": verdict.reason, "search_size": size,
                    "zero_factor": verdict.zero_factor})
    else:
        print(f"{'IDENTIFIABLE' if verdict.identifiable else 'NOT IDENTIFIABLE'}: {verdict.reason}")
    if refused:
        return EXIT_INPUT
    return EXIT["identifiable" if verdict.identifiable else "not identifiable"]


def _search_counterexamples(args: argparse.Namespace) -> int:
    try:
        m, n, k = (int(t) for t in args.search.split(","))
    except ValueError:
        raise InputError(f"--search expects m,n,k (three integers), not {args.search!r}") from None
    if min(m, n, k) < 1 or args.range < 1:
        raise InputError("--search needs m, n, k >= 1 and --range >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for count, verdict in enumerate(converse_failures(m, n, k, args.range, args.limit), start=1):
        stem = out / f"converse_{m}_{n}_{k}_{count:03d}"
        text = dump_network(verdict.theta)
        write_text_atomic(f"{stem}.json", text)
        write_text_atomic(f"{stem}.counterexample.json", dump_network(verdict.counterexample))
        record = InputRecord(f"{stem.name}.json", hashlib.sha256(text.encode()).hexdigest())
        write_json_atomic(f"{stem}.cert.json", identifiability_certificate(verdict, record))
        print(f"{stem.name}: {verdict.reason}")
    print(f"{count} counterexamples with trivial Stab(A,b) and independent rows written to {out}/")
    return EXIT_OK if count else EXIT_NEGATIVE


def cmd_counterexample(args: argparse.Namespace) -> int:
    if args.search:
        return _search_counterexamples(args)
    if not args.params:
        raise InputError("counterexample needs a parameter file, or --search m,n,k")
    verdict, refused = _identifiability(args)
    if verdict.identifiable:
        print(f"IDENTIFIABLE: {verdict.reason}; no counterexample exists (Theorem 1)")
        return EXIT_INPUT if refused else EXIT_NEGATIVE
    text = dump_network(verdict.counterexample)
    if args.output:
        write_text_atomic(args.output, text)
        print(f"COUNTEREXAMPLE (Corollary 9): {verdict.reason}; θ' written to {args.output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_fibre(args: argparse.Namespace) -> int:
    (net,), _ = _load(args, [args.params])
    if args.cap < 1:
        raise InputError("--cap must be at least 1")
    fibre = describe_fibre(net, args.cap, args.max_search)
    if args.json:
        emit_json({"minimal": fibre.minimal, "zero_factors": fibre.zero_factors, "complete": fibre.complete,
                    "free_directions": fibre.free_directions, "configurations": fibre.configurations,
                    "note": fibre.note})
        return EXIT_OK
    more = "" if fibre.complete else " at least"
    if fibre.free_directions:
        print("the fibre has free directions:")
        for line in fibre.free_directions:
            print(f"  {line}")
    elif fibre.configurations:
        print(f"θ is minimal, with antiparallel rows: besides its own orbit, the fibre holds{more} "
              f"{len(fibre.configurations)} families of other orbits (MATH.md, antiparallel rows; hyperplanes named "
              "by their first neuron):")
        for line in fibre.configurations:
            print(f"  {line}")
    elif fibre.minimal:
        orbits = len(fibre.zero_factors) + 1
        print(f"θ is minimal: the fibre is the union of{more} {orbits} H_n-orbits H_n·θ^F (MATH.md, Fibres):")
        print("  F = ∅ (the orbit of θ itself)")
        for F in fibre.zero_factors:
            print(f"  F = {F}: Σ_F v_i a_i^T = 0")
    if fibre.note:
        print(f"note: {fibre.note}")
    return EXIT_OK


def cmd_perturb(args: argparse.Namespace) -> int:
    (net,), _ = _load(args, [args.params])
    eps = net.field(load_networks([], extra_values=parse_point(args.eps, args.max_digits))[1][0])
    verdict = perturb(net, eps, args.max_search)
    other = verdict.theta
    text = dump_network(other)
    gap = max((abs(x - y) for r1, r2 in zip(net.M + net.A + (net.b, net.c), other.M + other.A + (other.b, other.c),
                                                 strict=True) for x, y in zip(r1, r2, strict=True)), default=0)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    if args.cert:
        digest = hashlib.sha256(text.encode()).hexdigest()
        record = InputRecord(args.output or "<stdout>", digest)
        write_json_atomic(args.cert, identifiability_certificate(verdict, record))
    print(f"IDENTIFIABLE θ' at max-norm distance {net.field.pretty(gap)} ≤ eps = {args.eps}",
          file=sys.stderr if not args.output else sys.stdout)
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    """Classes of equal functions among many files (certsym.audit.classes), with a progress bar on a terminal and
    plain progress lines on stderr otherwise (at most about one per second per stage, and the last)."""
    if args.workers < 1:
        raise InputError("--workers must be at least 1")
    job = Job(_selections(args, 1)[0], args.max_digits)
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
        undecided = [p for p in result.deep_pairs if p["status"] != "not_equivalent"]
        what = "distinct functions" if not undecided else "classes"
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
        if undecided:
            print(f"deep networks: members of one class are certified equal (block lemma, MATH.md Part III); "
                  f"{len(undecided)} pair(s) of classes are not decided and may realize one function")
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
    ctx = Context(not args.full, write)
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
    rejected = [rel for rel in ctx.written if not check_certificate(json.loads((certs / rel).read_text())).valid]
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


_PARAMS = "parameter or model file (JSON, .npz, .safetensors, .pt, .onnx)"
_REFERENCE = ("reference model files by SHA-256 in the certificate instead of embedding them (automatic beyond "
              "200,000 weights; then check with --inputs)")
_MAX_SEARCH = 1 << 22


def _command(sub, name: str, text: str, func, *, params: str | None = "params", cert: str | None = None,
             json_flag: bool = True, max_search: bool = False) -> argparse.ArgumentParser:
    """A subcommand with the options most commands share."""
    p = sub.add_parser(name, help=text, description=text)
    if params == "params?":
        p.add_argument("params", nargs="?", help=_PARAMS)
    elif params:
        p.add_argument(params, help=_PARAMS)
    if cert:
        p.add_argument("--cert", metavar="OUT", help=cert)
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output")
    if params or name == "audit":
        _selection_options(p, two=params == "params1")
    if max_search:
        p.add_argument("--max-search", type=int, default=_MAX_SEARCH, metavar="N",
                       help=f"refuse searches over N steps: kernel candidates, subset sums or configurations "
                       f"(default {_MAX_SEARCH})")
    p.set_defaults(func=func)
    return p


def _selection_options(p: argparse.ArgumentParser, two: bool) -> None:
    """The options that choose the tensors of model files (docs/FORMATS.md, "the selection rule")."""
    p.add_argument("--keys", dest="sub_keys", metavar="W1,b1,W2,b2",
                   help="tensor names in model files, a weight and a bias per layer (W1,b1,W2,b2,W3,b3,… for a deep "
                        "network; '-' for an absent bias); default: the file holds exactly 0.weight, 0.bias, "
                        "2.weight, 2.bias, … (module./_orig_mod. prefixes allowed) or A, b, M, c")
    p.add_argument("--layout", choices=("out-in", "in-out"), default=None,
                   help="how weights are stored: out-in (torch, default) or in-out (Flax and Keras kernels)")
    p.add_argument("--state-key", metavar="PATH", help="where the state dict lies in a torch checkpoint, keys joined "
                   "by '.' (e.g. model or state_dict); default: found when exactly one entry holds the layers")
    if two:  # the same options for one file only (a Lightning checkpoint against a plain state dict, say)
        for i, which in ((1, "first"), (2, "second")):
            p.add_argument(f"--keys{i}", metavar="W1,b1,W2,b2", help=f"tensor names in the {which} file only")
            p.add_argument(f"--layout{i}", choices=("out-in", "in-out"), default=None,
                           help=f"--layout for the {which} file only")
            p.add_argument(f"--state-key{i}", dest=f"state_key{i}", metavar="PATH",
                           help=f"--state-key for the {which} file only")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand."""
    parser = Parser(prog="certsym", description="Exact, certified symmetries of ReLU networks.")
    parser.add_argument("--version", action="version", version=f"certsym {__version__}")
    parser.add_argument("--keys", metavar="W1,b1,W2,b2",
                        help="tensor names in model files (default 0.weight,0.bias,2.weight,2.bias, or A,b,M,c)")
    parser.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                        help=f"refuse numerals with more than N digits (default {DEFAULT_MAX_DIGITS})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    verdict = "write the certificate of the verdict"

    p = _command(sub, "eval", "evaluate ρ(θ)(x) exactly", cmd_eval)
    p.add_argument("--at", required=True, metavar="X", help='the point, e.g. "1/2,3" or "sqrt(2)"')
    p = _command(sub, "minimal", "the minimal form θ_min (moves 1-3) as a parameter file; for a deep network the "
                 "parameter after the moves D1–D4", cmd_minimal,
                 cert="write a minimal_form certificate (deep: a deep_equivalent one of θ and the output)",
                 json_flag=False)
    p.add_argument("-o", "--output", metavar="OUT", help="write θ_min here (default: standard output)")
    p.add_argument("--trace", action="store_true", help="print the moves applied")
    _command(sub, "canon", "the canonical form of the realized function (kink invariants); for a deep network the "
             "layerwise canonical form after D1–D4", cmd_canon)
    p = _command(sub, "equiv", "decide ρ(θ1) = ρ(θ2) exactly (exit 0 equivalent, 1 not; for deep networks 3 "
                 "undecided)", cmd_equiv, params="params1", cert=verdict)
    p.add_argument("params2", help=_PARAMS)
    p.add_argument("--path", choices=("auto", "general"), default="auto",
                   help="auto: the fast exact path for model files of float16/float32 weights (default)")
    p.add_argument("--reference", action="store_true",
                   help="in certificates of the fast path, reference the model files by SHA-256 instead "
                        "of embedding them (automatic beyond 200,000 weights; then check with --inputs)")
    p.add_argument("--box", metavar="SPEC", help="when NOT EQUIVALENT, look for a witness inside this box ('lo,hi' "
                   "for every coordinate, 'lo1,hi1;…', or a VNN-LIB file), verified exactly")
    p = _command(sub, "distance", "exact bounds [L, U] on sup over a box of ‖ρ(θ1) − ρ(θ2)‖∞", cmd_distance,
                 params="params1", cert="write a distance_bound certificate")
    p.add_argument("params2", help=_PARAMS)
    p.add_argument("--box", metavar="SPEC", help="'lo,hi' for every coordinate, 'lo1,hi1;lo2,hi2;…', or a VNN-LIB "
                   "file (its input bounds); default [0, 1]^m")
    p.add_argument("--seed", type=int, default=0, help="seed of the witness search (default 0)")
    p.add_argument("--epsilon", metavar="E", help="decide sup ‖ρ(θ1) − ρ(θ2)‖∞ ≤ E: VERIFIED (exit 0), VIOLATED "
                   "(exit 1, an exact witness above E) or UNKNOWN within the budget (exit 3)")
    p.add_argument("--top1", action="store_true", help="decide instead whether both networks have the same largest "
                   "output on the whole box: AGREE (exit 0), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3)")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="time budget of the whole command: reading, search, certificate and its replay (default 10; "
                   "none when --regions is given alone)")
    p.add_argument("--regions", type=int, default=None, metavar="N",
                   help=f"region budget of the branch and bound (default {MAX_REGIONS}); given without --seconds, no "
                   "time limit applies, so U, L and the certificate depend only on the inputs and --seed")
    p.add_argument("--target", type=float, default=1.1, metavar="R",
                   help="stop the branch and bound once U/L ≤ R (default 1.1; 1: until U = L or the budget ends)")
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    _command(sub, "stabilizer", "Theorem 2: Stab_{H_n}(θ) and Stab_{H_n}(A, b)", cmd_stabilizer,
             cert="write a stabilizer certificate")
    _command(sub, "affine", "Proposition 14: is ρ(θ) affine? (exit 0 yes, 1 no)", cmd_affine, cert=verdict)
    p = _command(sub, "identifiable", "Theorem 1: is the fibre exactly the H_n-orbit? (exit 0 yes, 1 no)",
                 cmd_identifiable, cert=verdict, max_search=True)
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    p = _command(sub, "counterexample", "Corollary 9: a θ' with ρ(θ') = ρ(θ) outside H_n·θ (exit 0 found)",
                 cmd_counterexample, params="params?", cert=verdict, json_flag=False, max_search=True)
    p.add_argument("-o", "--output", metavar="OUT", help="write θ' here (default: standard output)")
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    p.add_argument("--search", metavar="M,N,K", help="enumerate an integer grid for the converse-failure family")
    p.add_argument("--range", type=int, default=1, metavar="R", help="grid entries in -R..R (default 1)")
    p.add_argument("--out", default="counterexamples", metavar="DIR", help="where --search writes")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="stop after N counterexamples")
    p = _command(sub, "fibre", "describe the fibre ρ^{-1}(ρ(θ)) in Ω(m,n,k)", cmd_fibre, max_search=True)
    p.add_argument("--cap", type=int, default=1000, metavar="N", help="list at most N zero-factor sets (default 1000)")
    p = _command(sub, "perturb", "Theorem 1 (density): an identifiable θ' within eps of θ", cmd_perturb,
                 cert="write the identifiability certificate of θ'", json_flag=False, max_search=True)
    p.add_argument("--eps", required=True, metavar="EPS", help='max-norm distance, e.g. "1e-6" (exact)')
    p.add_argument("-o", "--output", metavar="OUT", help="write θ' here (default: standard output)")
    p = _command(sub, "audit", "group many networks by the function they realize, and certify each class",
                 cmd_audit, params=None)
    p.add_argument("paths", nargs="+", metavar="PATH", help="parameter or model files, directories (searched "
                   "recursively for the files certsym reads) and glob patterns (*, ?, [...], ** across directories)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="local processes (1: in this process; default: one per CPU)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on Dask: 'local' or 'local:N' starts a LocalCluster of "
                   "N single-threaded worker processes (default N: --workers); anything else is a scheduler address")
    p.add_argument("--cert-dir", metavar="DIR", help="write a certificate for each member against the member it "
                   "was decided equal to, the representative or an earlier member (model files referenced by "
                   "SHA-256: certsym check CERT --inputs OTHER MEMBER)")
    # listed for --help only: certsym.cli hands "check" to the checker before this parser is built
    sub.add_parser("check", help="replay certificates with the independent checker (see 'certsym check --help')",
                   add_help=False)
    landscape.add_parsers(sub, _command)
    p = _command(sub, "reproduce", "reproduce the papers' statements on concrete instances", cmd_reproduce,
                 params=None)
    p.add_argument("--out", default="reproduce-report", metavar="DIR",
                   help="where REPORT.md, report.html, figures and certificates go (default reproduce-report/)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--full", action="store_true",
                       help="every instance of every statement (about 25 minutes on 2 cores); default: a "
                            "representative run of every statement (about 1 minute)")
    scope.add_argument("--quick", action="store_true", help="the default representative run (kept for scripts)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``certsym`` console script; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # A value may begin with "-" ("--at -1/2"); argparse would take it for an option.
    for i in range(len(argv) - 1):
        if argv[i] in _VALUE_OPTIONS and argv[i + 1].startswith("-"):
            argv[i : i + 2] = [f"{argv[i]}={argv[i + 1]}", ""]
    argv = [a for a in argv if a != ""]
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required (see 'certsym --help')")
        if args.max_digits < 1:
            raise InputError("--max-digits must be at least 1")
        return args.func(args)
    except (UsageError, InputError) as exc:
        print(f"certsym: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Undecided as exc:  # a search beyond its stated limit: no verdict, and not bad input
        if getattr(args, "json", False):
            emit_json({"verdict": "undecided", "reason": str(exc)})
        else:
            print(f"UNDECIDED: {exc}")
        return EXIT["undecided"]
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # a file or folder that cannot be written or read
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"certsym: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("certsym: error: interrupted", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:  # a bug: one line, not a traceback (CERTSYM_DEBUG=1 shows it)
        if os.environ.get("CERTSYM_DEBUG"):
            raise
        print(f"certsym: internal error ({type(exc).__name__}: {exc}); rerun with CERTSYM_DEBUG=1 and report it",
              file=sys.stderr)
        return EXIT_INPUT



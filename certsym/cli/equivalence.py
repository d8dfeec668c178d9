"""The commands on one function and its parameters: ``eval`` (ρ(θ)(x) exactly), ``minimal`` (θ_min, or the
parameter after D1–D4 of a deep network), ``canon`` (the canonical form), ``equiv`` (is ρ(θ1) = ρ(θ2)?),
``stabilizer`` (Theorem 2) and ``affine`` (Proposition 14)."""

from __future__ import annotations

import argparse
import hashlib
import math
import sys

from certsym.certify import (
    InputRecord,
    affine_certificate,
    deep_certificate,
    layered_json,
    minimal_form_certificate,
    stabilizer_certificate,
)
from certsym.cli.common import EXIT, EXIT_NEGATIVE, EXIT_OK, emit_json
from certsym.cli.inputs import note_absent_biases, read_any_depth, read_box, read_networks, tensor_selections
from certsym.core.canonical import canonical_form
from certsym.core.reduction import reduce
from certsym.decide import deep
from certsym.decide.affine import decide_affine
from certsym.decide.stabilizer import stabilizer
from certsym.errors import InputError
from certsym.io import dump_layered, dump_network, load_inputs, parse_point, write_json_atomic, write_text_atomic
from certsym.io.models import is_model_file
from certsym.io.sources import Model, load
from certsym.workflows.equivalence import Equivalence, equivalent


def cmd_eval(args: argparse.Namespace) -> int:
    """``eval``: the exact value ρ(θ)(x) at the point --at, for a network of any depth (exit 0)."""
    point = parse_point(args.at, args.max_digits)
    (item,), x = load_inputs([args.params], extra_values=point, max_digits=args.max_digits,
                             keys=tensor_selections(args, 1), deep=True)
    note_absent_biases([item.model], [item.name])
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


def _step_text(F, step) -> str:
    if step.kind == "merge":
        return f"merge neuron {step.source} into {step.neuron} (λ = {F.pretty(step.lam)}) [{step.statement}]"
    what = "zero neuron" if step.kind == "zero" else "shift the constant neuron into c and zero neuron"
    return f"{what} {step.neuron} [{step.statement}]"


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
    return _write_reduced(args, text, trace, "already reduced",
                          f"reduced parameter written to {args.output}: widths {'-'.join(map(str, theta.widths))} → "
                          f"{'-'.join(map(str, reduced.widths))} ({len(red.steps)} moves D1–D4)")


def cmd_minimal(args: argparse.Namespace) -> int:
    """``minimal``: the minimal form θ_min (moves 1–3; a deep network: the parameter after D1–D4) as a parameter file,
    with its certificate on --cert (exit 0)."""
    theta, record = read_any_depth(args, args.params)
    if not theta.is_shallow():
        return _deep_minimal(args, theta, record)
    net = theta.to_shallow()
    red = reduce(net)
    if args.cert:
        write_json_atomic(args.cert, minimal_form_certificate(red, record))
    trace = [_step_text(net.field, st) for st in red.steps]
    counts = {kind: sum(st.kind == kind for st in red.steps) for kind in ("zero", "bias_shift", "merge")}
    left = net.n - len(red.steps)
    return _write_reduced(args, dump_network(red.minimal), trace, "already minimal",
                          f"θ_min written to {args.output}: {net.n} → {left} neuron{'' if left == 1 else 's'} "
                          f"({counts['zero']} zeroed, {counts['bias_shift']} folded into c by bias shifting, "
                          f"{counts['merge']} merged)")


def _write_reduced(args: argparse.Namespace, text: str, trace: list[str], none: str, summary: str) -> int:
    """The reduced parameter to --output (with ``summary`` and the certificate's path) or to stdout, and the moves
    with --trace (on stderr when the parameter goes to stdout); exit 0."""
    moves = "\n".join(trace) if trace else f"{none}: no move applies"
    if args.output:
        write_text_atomic(args.output, text)
        print(summary + (f"; certificate {args.cert}" if args.cert else ""))
        if args.trace:
            print(moves)
    else:
        if args.trace:
            print(moves, file=sys.stderr)
        sys.stdout.write(text)
    return EXIT_OK


def _deep_canon(args: argparse.Namespace, theta) -> int:
    """``canon`` on a deep network: the layerwise canonical form of its reduced parameter (MATH.md Part III), an
    invariant of the H-orbit of the reduced parameter, not of the function."""
    canon = deep.canonical_network(deep.reduce(theta))
    doc = layered_json(canon)
    digest = canon.hash  # the hash certsym.canon gives (Canonical.hash)
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
    """``canon``: the canonical form of the realized function: its hash, kinks, linear and constant part (a deep
    network: the layerwise canonical form after D1–D4) (exit 0)."""
    theta, _ = read_any_depth(args, args.params)
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
    """``equiv``: is ρ(θ1) = ρ(θ2)? Exit 0 EQUIVALENT, 1 NOT EQUIVALENT with an exact witness (deep networks: 3
    UNDECIDED)."""
    selections = tensor_selections(args, 2)
    sources = []
    for path, sel in zip((args.params1, args.params2), selections, strict=True):
        sources.append(load(path, sel.keys, sel.layout, sel.state_key, sel.activation) if is_model_file(path) else path)
    models = [s.record.model if isinstance(s, Model) else None for s in sources]
    note_absent_biases(models, [args.params1, args.params2], readings=False)
    verdict = equivalent(sources[0], sources[1], path=args.path, reference=args.reference, seconds=args.seconds)
    if verdict.path == "deep":
        if args.box and verdict.status == "not_equivalent":
            verdict.prefer_witness_in(read_box(args.box, len(verdict.witness)), where="--box")
        return _deep_equiv(args, verdict)
    if args.box and not verdict.equivalent:
        verdict.prefer_witness_in(read_box(args.box, len(verdict.witness)), where="--box")
    if args.cert:
        write_json_atomic(args.cert, verdict.certificate(reference=True if args.reference else None))
    if args.json:
        emit_json(verdict.to_json())
    else:
        print(verdict)
    return EXIT[verdict.outcome]


def _deep_equiv(args: argparse.Namespace, verdict: Equivalence) -> int:
    """``equiv`` on deep networks: exit 0 EQUIVALENT, 1 NOT EQUIVALENT, 3 UNDECIDED (no certificate then)."""
    if args.cert and not verdict.undecided:
        write_json_atomic(args.cert, verdict.certificate(reference=True if args.reference else None))
    if args.json:
        emit_json(verdict.to_json())
    else:
        print(verdict)
    if args.cert and verdict.undecided:
        print(f"certsym: no certificate written to {args.cert}: an UNDECIDED verdict has none", file=sys.stderr)
    return EXIT[verdict.outcome]


def cmd_stabilizer(args: argparse.Namespace) -> int:
    """``stabilizer``: Theorem 2, Stab_{H_n}(θ) and Stab_{H_n}(A, b): their type, classes and generators (exit 0)."""
    (net,), (record,) = read_networks(args, [args.params])
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
    """``affine``: Proposition 14, is ρ(θ) affine? Exit 0 AFFINE with L and C, 1 NOT AFFINE with two points."""
    (net,), (record,) = read_networks(args, [args.params])
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

"""The commands of the first paper's identifiability: ``identifiable`` (Theorem 1: is the fibre exactly the
H_n-orbit?), ``counterexample`` (Corollary 9, and the converse failures on a grid), ``fibre`` (the fibre's orbits)
and ``perturb`` (Theorem 1's density: an identifiable θ' near θ)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from certsym.certify import InputRecord, identifiability_certificate
from certsym.cli.common import EXIT, EXIT_INPUT, EXIT_NEGATIVE, EXIT_OK, emit_json
from certsym.cli.inputs import embeds_inputs, read_networks
from certsym.decide.identifiability import converse_failures, decide_identifiable, describe_fibre, perturb
from certsym.errors import InputError
from certsym.io import dump_network, load_networks, parse_point, write_json_atomic, write_text_atomic


def _identifiability(args: argparse.Namespace) -> tuple:
    """(the Theorem 1 verdict, whether --cert was asked for and refused)."""
    (net,), (record,) = read_networks(args, [args.params])
    verdict = decide_identifiable(net, args.max_search)
    if args.cert:
        try:
            write_json_atomic(args.cert, identifiability_certificate(verdict, record,
                                                                     embeds_inputs(args, [record], [net])))
        except InputError as exc:  # the verdict is still printed; the exit code says no certificate was written
            print(f"certsym: error: {exc}", file=sys.stderr)
            return verdict, True
    return verdict, False


def cmd_identifiable(args: argparse.Namespace) -> int:
    """``identifiable``: Theorem 1, is the fibre exactly the H_n-orbit? Exit 0 yes, 1 no, 2 when --cert was
    asked for and could not be written."""
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
    """``counterexample``: Corollary 9, a θ' with ρ(θ') = ρ(θ) outside H_n·θ (exit 0 found, 1 none); with
    --search, the converse failures on an integer grid."""
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
    """``fibre``: the fibre ρ^{-1}(ρ(θ)) in Ω(m, n, k): its free directions, or the H_n-orbits it is the union of
    (zero-factor sets, antiparallel configurations) (exit 0)."""
    (net,), _ = read_networks(args, [args.params])
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
    """``perturb``: Theorem 1's density, an identifiable θ' within max-norm distance --eps of θ (exit 0)."""
    (net,), _ = read_networks(args, [args.params])
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

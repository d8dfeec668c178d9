"""``vnnlib``: a VNN-LIB property answered as written (``certsym.workflows.vnnlib``): **unsat** (the property
holds; exit 0), **sat** (exit 1, an exact counterexample) or **unknown** (exit 3), with what the file asks in words.
With --cert the answer is printed only after the independent checker has replayed the certificate VALID."""

from __future__ import annotations

import argparse
import os
import sys

from certsym.cli.common import EXIT, emit_json
from certsym.cli.search import print_progress, refused_line
from certsym.core.decision import UNKNOWN
from certsym.decide.deadline import Deadline
from certsym.errors import InputError, NotReplayed
from certsym.io.params import write_json_atomic
from certsym.io.sources import load
from certsym.io.vnnlib import read_property, read_spec
from certsym.numbers import QQ
from certsym.workflows import vnnlib


def _networks(args: argparse.Namespace, spec) -> list[str]:
    """The files of the networks the property declares, in its order: --net NAME=FILE for each (one network: its
    file alone too)."""
    named: dict[str, str] = {}
    plain: list[str] = []
    for item in args.net:
        name, eq, path = item.partition("=")
        if eq and name and not os.path.exists(item):
            if name in named:
                raise InputError(f"--net {name} is given twice")
            named[name] = path
        else:
            plain.append(item)
    declared = [d.name for d in spec.networks]
    if plain and (len(plain) > 1 or named or len(declared) != 1):
        raise InputError(f"the property declares the networks {', '.join(declared) or '(one, unnamed)'}: give "
                         "each as --net NAME=FILE")
    if plain:
        return plain
    if set(named) != set(declared):
        raise InputError(f"the property declares the networks {', '.join(declared)}; --net gave "
                         f"{', '.join(sorted(named)) or 'none'}")
    return [named[name] for name in declared]


def cmd_vnnlib(args: argparse.Namespace) -> int:
    """``vnnlib SPEC --net f=F --net g=G``: unsat (exit 0), sat (exit 1) or unknown (exit 3)."""
    deadline = Deadline(args.seconds)
    text, digest = read_property(args.spec)
    spec = read_spec(text)
    paths = _networks(args, spec)
    models = [load(path) for path in paths]
    nets = tuple(m.layered() for m in models)
    for d, t, path in zip(spec.networks, nets, paths, strict=True):
        if (t.m, t.k) != (d.m, d.k) or t.field is not QQ and not isinstance(t.field, type(QQ)):
            raise InputError(f"{path}: {t.m} inputs and {t.k} outputs; the property declares {d.m} and {d.k} for "
                             f"network {d.name or '(unnamed)'}")
    record = vnnlib.spec_json(os.path.basename(args.spec), digest, text)
    a = vnnlib.answer(spec, nets, tuple(m.record for m in models), record, deadline.share(0.7), args.seed,
                      print_progress if sys.stderr.isatty() else None)
    refused = None
    if args.cert and a.result != "unknown":
        try:
            write_json_atomic(args.cert, a.certificate())
        except NotReplayed as exc:
            refused = exc.reason
    code = EXIT[UNKNOWN if refused else a.outcome]
    if args.json:
        emit_json({"result": "unknown" if refused else a.result, "question": a.question, "reason": a.reason,
                   "witness": None if a.witness is None else [str(x) for x in a.witness],
                   "outputs": None if a.outputs is None else [[str(y) for y in ys] for ys in a.outputs],
                   "upper": [str(d.upper) for d in a.distances], "refused": refused})
        return code
    print(f"the property asks: {a.question}")
    if refused is not None:
        print(refused_line(refused, args.cert))
        return code
    if a.result == "sat":
        print("SAT: a counterexample, checked exactly (every atom of one disjunct holds at the exact outputs)")
        print(f"  x ≈ [{', '.join(f'{float(x):.6g}' for x in a.witness)}]  (exact in --json)")
        for d, ys in zip(spec.networks, a.outputs, strict=True):
            print(f"  {d.outputs or 'Y'} ≈ [{', '.join(f'{float(y):.6g}' for y in ys)}]")
    elif a.result == "unsat":
        bounds = ", ".join(f"{float(d.upper):.6g}" for d in a.distances)
        print(f"UNSAT: the property holds: no input of the region makes the output part true (certified "
              f"sup ‖f − g‖∞ ≤ {bounds} on its {len(a.distances)} box(es) refutes every disjunct)")
    else:
        print(f"UNKNOWN: {a.reason}")
    return code

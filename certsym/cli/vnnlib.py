"""``vnnlib``: a VNN-LIB property answered as written (``certsym.workflows.vnnlib``): **unsat** (the property
holds; exit 0), **sat** (exit 1, an exact counterexample) or **unknown** (exit 3), with what the file asks in words.
With --cert the answer is printed only after the independent checker has replayed the certificate VALID."""

from __future__ import annotations

import argparse
import ast
import csv
import os
import sys
import time
from pathlib import Path

from certsym.cli.common import EXIT, emit_json
from certsym.cli.search import print_progress, refused_line
from certsym.core.decision import UNKNOWN
from certsym.decide.deadline import Deadline
from certsym.errors import InputError, NotReplayed
from certsym.io.params import write_json_atomic
from certsym.io.sources import load
from certsym.io.vnnlib import read_property, read_spec
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


def _answer(spec_path: str, paths: list[str] | None, args: argparse.Namespace, deadline: Deadline,
            cert: str | None) -> tuple[vnnlib.VnnlibAnswer, str | None, list]:
    """One property over its networks: the answer, the checker's reason when --cert's certificate does not replay
    (else None), and the declared networks."""
    if not os.path.isfile(spec_path) and os.path.isfile(spec_path + ".gz"):
        spec_path += ".gz"
    text, digest = read_property(spec_path)
    spec = read_spec(text)
    paths = paths if paths is not None else _networks(args, spec)
    models = [load(path if os.path.exists(path) or not os.path.isfile(path + ".gz") else path + ".gz")
              for path in paths]
    nets = tuple(m.layered() for m in models)
    for d, t, path in zip(spec.networks, nets, paths, strict=True):
        if (t.m, t.k) != (d.m, d.k):
            raise InputError(f"{path}: {t.m} inputs and {t.k} outputs; the property declares {d.m} and {d.k} for "
                             f"network {d.name or '(unnamed)'}")
    record = vnnlib.spec_json(os.path.basename(spec_path), digest, text)
    a = vnnlib.answer(spec, nets, tuple(m.record for m in models), record, deadline.share(0.7), args.seed,
                      print_progress if sys.stderr.isatty() else None)
    refused = None
    if cert and a.result != "unknown":
        try:
            write_json_atomic(cert, a.certificate())
        except NotReplayed as exc:
            refused = exc.reason
    return a, refused, spec.networks


def cmd_vnnlib(args: argparse.Namespace) -> int:
    """``vnnlib SPEC --net f=F --net g=G``: unsat (exit 0), sat (exit 1) or unknown (exit 3); with --instances,
    a benchmark folder's instances.csv."""
    if args.instances:
        return _instances(args)
    if args.spec is None or not args.net:
        raise InputError("give a property and its networks (SPEC --net NAME=FILE …), or --instances CSV")
    a, refused, declared = _answer(args.spec, None, args, Deadline(args.seconds), args.cert)
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
        for d, ys in zip(declared, a.outputs, strict=True):
            print(f"  {d.outputs or 'Y'} ≈ [{', '.join(f'{float(y):.6g}' for y in ys)}]")
    elif a.result == "unsat":
        bounds = ", ".join(f"{float(d.upper):.6g}" for d in a.distances)
        print(f"UNSAT: the property holds: no input of the region makes the output part true (certified "
              f"sup ‖f − g‖∞ ≤ {bounds} on its {len(a.distances)} box(es) refutes every disjunct)")
    else:
        print(f"UNKNOWN: {a.reason}")
    return code


def _instance_networks(field: str, where: str) -> list[str]:
    """An instances.csv network field: a path, or a Python list of (name, path) pairs (VNN-COMP 2026's form)."""
    field = field.strip()
    if not field.startswith("["):
        return [field]
    try:
        pairs = ast.literal_eval(field)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(f"{where}: the network field is neither a path nor a list of (name, path) pairs") from None
    if not isinstance(pairs, list) or not pairs or not all(
            isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
        raise InputError(f"{where}: the network field is neither a path nor a list of (name, path) pairs")
    return [path for _, path in pairs]


def _instances(args: argparse.Namespace) -> int:
    """Every instance of a benchmark's instances.csv (network field, property, timeout in seconds), paths relative
    to its folder: VNN-COMP's result word per instance (sat, unsat, unknown, error), then a summary; certificates in
    --cert-dir. Exit 0 when every instance was answered sat or unsat, 3 otherwise."""
    csv_path = Path(args.instances)
    try:
        rows = [r for r in csv.reader(csv_path.read_text(encoding="utf-8").splitlines()) if r and any(r)]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{csv_path}: {getattr(exc, 'strerror', None) or 'not UTF-8 text'}") from None
    folder = csv_path.parent
    if args.cert_dir:
        os.makedirs(args.cert_dir, exist_ok=True)
    counts: dict[str, int] = {}
    for n, row in enumerate(rows, 1):
        where = f"{csv_path}:{n}"
        start = time.monotonic()
        try:
            if len(row) != 3:
                raise InputError(f"{where}: expected three fields (networks, property, timeout), found {len(row)}")
            nets = [str(folder / p) for p in _instance_networks(row[0], where)]
            timeout = float(row[2]) if args.timeout is None else args.timeout
            cert = os.path.join(args.cert_dir, f"instance_{n}.json") if args.cert_dir else None
            a, refused, _ = _answer(str(folder / row[1].strip()), nets, args, Deadline(timeout), cert)
            word = "unknown" if refused else a.result
            detail = refused or a.reason
        except (InputError, ValueError) as exc:
            word, detail = "error", str(exc)
        counts[word] = counts.get(word, 0) + 1
        seconds = time.monotonic() - start
        print(f"{n}\t{word}\t{seconds:.1f}s\t{row[1].strip() if len(row) > 1 else ''}" +
              (f"\t{detail}" if detail and word != "unsat" and word != "sat" else ""), flush=True)
    summary = ", ".join(f"{counts[w]} {w}" for w in ("sat", "unsat", "unknown", "error") if w in counts)
    print(f"{len(rows)} instances: {summary}")
    return 0 if set(counts) <= {"sat", "unsat"} else 3

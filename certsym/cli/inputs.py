"""How the commands read their inputs: the tensor selection of each file (--keys, --layout, --state-key), the
networks with the records their certificates name, the box of a question on a box, the notes on how a model file was
read, and whether a certificate embeds its inputs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.certify import InputRecord
from certsym.cli import common
from certsym.errors import InputError
from certsym.io import load_inputs
from certsym.io.models import Selection, parse_keys, reading
from certsym.numbers import DEFAULT_MAX_DIGITS, parse_rational
from certsym.workflows.equivalence import EMBED_LIMIT

if common.DEFAULT_MAX_DIGITS != DEFAULT_MAX_DIGITS:  # stated twice so that the parser imports no number code
    raise ImportError("certsym.cli.common.DEFAULT_MAX_DIGITS differs from certsym.numbers.DEFAULT_MAX_DIGITS")


def tensor_selections(args: argparse.Namespace, count: int) -> list:
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
                             state_key=tuple(state_key.split(".")) if state_key else None,
                             activation=getattr(args, "activation", None)))
    return out


def read_networks(args: argparse.Namespace, paths: Sequence[str]):
    """Networks over one common field, and the input records (name, SHA-256, atoms) for certificates."""
    loaded, _ = load_inputs(paths, max_digits=args.max_digits, keys=tensor_selections(args, len(paths)))
    records = [InputRecord(item.name, item.sha256, item.atoms, item.model) for item in loaded]
    note_absent_biases([r.model for r in records], [r.name for r in records])
    return [item.network for item in loaded], records


def note_absent_biases(models: list, names: list[str], readings: bool = True) -> None:
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


def read_any_depth(args: argparse.Namespace, path: str):
    """One network of any depth (a LayeredNetwork) and its input record."""
    (item,), _ = load_inputs([path], max_digits=args.max_digits, keys=tensor_selections(args, 1), deep=True)
    record = InputRecord(item.name, item.sha256, item.atoms, item.model)
    note_absent_biases([record.model], [record.name])
    return item.network, record


def read_box(spec: str | None, m: int):
    """The box of --box: 'lo,hi' for every coordinate, 'lo1,hi1;…', or a VNN-LIB file (gzipped too) whose input
    part is one box, its output asserts named on stderr as not read; None: [0, 1]^m."""
    if spec is not None and (spec.endswith((".vnnlib", ".vnnlib.gz")) or Path(spec).is_file()):
        from certsym.io.vnnlib import input_boxes, read_vnnlib  # here: the other commands start without it

        prop = input_boxes(read_vnnlib(spec), m)
        if len(prop.boxes) != 1:
            raise InputError(f"--box {spec}: the property's input part is a disjunction of {len(prop.boxes)} boxes; "
                             "--box takes one (split the file, one box each)")
        if prop.outputs:
            print(f"note: --box {spec}: the input box is read; the {len(prop.outputs)} output assert(s) are not "
                  "(this command answers its own question on the box)", file=sys.stderr)
        return prop.boxes[0]
    from certsym.decide.distance import parse_box  # here: the commands without a box start without it

    return parse_box(spec, m)


def radius_and_clip(args: argparse.Namespace) -> tuple[fmpq, tuple[fmpq, fmpq] | None]:
    """--radius as an exact number, and --clip 'lo,hi' (None when absent)."""
    radius = parse_rational(args.radius)
    if radius is None:
        raise InputError(f"--radius: not an exact number: {args.radius!r}")
    if args.clip is None:
        return radius, None
    ends = [parse_rational(x.strip()) for x in args.clip.split(",")]
    if len(ends) != 2 or None in ends:
        raise InputError(f"--clip: expected 'lo,hi', not {args.clip!r}")
    return radius, (ends[0], ends[1])


def read_region(args: argparse.Namespace, m: int) -> tuple[list, str]:
    """The box a distance or top-1 question is asked on, and its words: --center C --radius R [--clip lo,hi] (the
    L∞ ball around a test point: C a .npy file, whose floats are the dyadic rationals they are, or 'x1,x2,…' exact
    numbers), or --box (``read_box``), or [0, 1]^m."""
    center = getattr(args, "center", None)
    if center is None:
        if getattr(args, "radius", None) is not None or getattr(args, "clip", None) is not None:
            raise InputError("--radius and --clip go with --center")
        return read_box(args.box, m), ("the default box [0, 1]^m" if args.box is None else f"the box {args.box}")
    if args.box is not None:
        raise InputError("--box and --center ask for two regions: give one of them")
    if args.radius is None:
        raise InputError("--center needs --radius (the L∞ radius of the ball around it)")
    if center.endswith(".npy") or Path(center).is_file():
        try:
            values = np.load(center, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"--center {center}: not a readable .npy file ({exc})") from None
        if values.dtype.kind not in "fiu" or not np.isfinite(values).all():
            raise InputError(f"--center {center}: an array of finite numbers is needed, not {values.dtype}")
        point = [fmpq(*float(x).as_integer_ratio()) if values.dtype.kind == "f" else fmpq(int(x))
                 for x in values.ravel().tolist()]
    else:
        point = [parse_rational(x.strip()) for x in center.split(",")]
        if any(x is None for x in point):
            raise InputError(f"--center: not exact numbers: {center[:60]!r} (give 'x1,x2,…' or a .npy file)")
    if len(point) != m:
        raise InputError(f"--center has {len(point)} coordinates; the networks read {m}")
    radius, clip = radius_and_clip(args)
    words = f"the L∞ ball of radius {args.radius} around {Path(center).name if Path(center).is_file() else center}"
    from certsym.decide.distance import ball

    return ball(point, radius, clip), words + (f" clipped to [{args.clip}]" if clip else "")


def embeds_inputs(args: argparse.Namespace, records, nets) -> bool:
    """Whether a certificate embeds its inputs: parameter files always (the checker re-reads model files only),
    model files up to EMBED_LIMIT weights in all unless --reference asks for references."""
    embed = any(rec.model is None or rec.model.get("format") == "nnet" for rec in records) or \
        (not args.reference and sum(t.n * (t.m + t.k) for t in nets) <= EMBED_LIMIT)
    if args.reference and embed:
        print("note: parameter and NNet files are embedded in the certificate (only tensor and ONNX files are "
              "referenced)", file=sys.stderr)
    return embed

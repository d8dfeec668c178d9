"""``distance --points X.npy --radius R``: one question per test point, asked on the L∞ ball of radius R around it
(cut to --clip), in one process: top-1 agreement (--top1) or ε-equivalence (--epsilon) per point, one line each,
then the counts ("verified accuracy" over a test set, in auto_LiRPA's words: the points where the answer is
certified). With --cert-dir, each answered point's certificate (replayed VALID first) as point_N.json. Exit 0 when
every point holds, 1 when one fails (a certified disagreement or violation), 3 otherwise."""

from __future__ import annotations

import argparse
import os

import numpy as np
from flint import fmpq

from certsym.cli.common import EXIT, emit_json
from certsym.cli.inputs import radius_and_clip
from certsym.core.decision import FAILS, HOLDS, UNKNOWN
from certsym.decide.deadline import Deadline
from certsym.errors import InputError
from certsym.io.params import write_json_atomic
from certsym.workflows.points import Points, ask

MAX_POINTS = 100_000


def _points(path: str, m: int) -> list[list[fmpq]]:
    """The rows of an .npy file of shape (N, m) (or (m,): one point), floats read as the dyadics they are."""
    try:
        X = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"--points {path}: not a readable .npy file ({exc})") from None
    X = X.reshape(1, -1) if X.ndim == 1 else X.reshape(len(X), -1) if X.ndim > 2 else X
    if X.dtype.kind not in "fiu" or X.ndim != 2 or X.shape[1] != m or not np.isfinite(X).all():
        raise InputError(f"--points {path}: an array of N points of {m} finite numbers is needed, not "
                         f"{X.dtype} of shape {X.shape}")
    if len(X) > MAX_POINTS:
        raise InputError(f"--points {path}: {len(X):,} points; at most {MAX_POINTS:,} in one command")
    return [[fmpq(*float(v).as_integer_ratio()) if X.dtype.kind == "f" else fmpq(int(v)) for v in row]
            for row in X.tolist()]


def report_points(args: argparse.Namespace, A, B, epsilon, deadline: Deadline) -> int:
    """The question per point (``certsym.workflows.points``), one line each as it is answered, then the counts.
    Cost: that of ``points.ask``, and one replay per certificate written."""
    if args.radius is None:
        raise InputError("--points needs --radius (the L∞ radius of the ball around each point)")
    if not args.top1 and epsilon is None:
        raise InputError("--points asks a question per point: give --top1 or --epsilon")
    radius, clip = radius_and_clip(args)
    points = _points(args.points, A.m)
    if args.cert_dir:
        os.makedirs(args.cert_dir, exist_ok=True)
    answers = []
    for a in ask(A, B, points, radius, clip, top1=args.top1, epsilon=epsilon, deadline=deadline,
                 regions=args.regions, seed=args.seed, target=args.target, reference=args.reference,
                 certify=bool(args.cert_dir)):
        if a.certificate is not None:
            write_json_atomic(os.path.join(args.cert_dir, f"point_{a.index}.json"), a.certificate)
        answers.append(a)
        if not args.json:
            print(f"point {a.index}: {a.word}" + (f" ({a.detail})" if a.detail else ""), flush=True)
    result = Points("top1" if args.top1 else "epsilon", answers)
    summary = result.summary(args.radius, args.clip if clip else None)
    if args.json:
        emit_json({"points": [{"point": a.index, "answer": a.word.lower(), "detail": a.detail} for a in answers],
                   "summary": summary})
    else:
        print(summary)
    counts = result.counts()
    return EXIT[FAILS if counts[FAILS] else HOLDS if counts[HOLDS] == len(points) else UNKNOWN]

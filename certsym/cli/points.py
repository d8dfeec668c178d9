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
from certsym.decide.distance import ball
from certsym.errors import InputError, NotReplayed
from certsym.io.params import write_json_atomic
from certsym.workflows import bounds

MAX_POINTS = 100_000
_WORDS = {"top1": {HOLDS: "AGREE", FAILS: "DIFFER", UNKNOWN: "UNKNOWN"},
          "epsilon": {HOLDS: "VERIFIED", FAILS: "VIOLATED", UNKNOWN: "UNKNOWN"}}


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
    """The question per point (module docstring). Cost: one search per point, each given an equal share of what is
    left of ``deadline``, and one replay per certificate written."""
    if args.radius is None:
        raise InputError("--points needs --radius (the L∞ radius of the ball around each point)")
    if not args.top1 and epsilon is None:
        raise InputError("--points asks a question per point: give --top1 or --epsilon")
    radius, clip = radius_and_clip(args)
    points = _points(args.points, A.m)
    if args.cert_dir:
        os.makedirs(args.cert_dir, exist_ok=True)
    question = "top1" if args.top1 else "epsilon"
    counts = {HOLDS: 0, FAILS: 0, UNKNOWN: 0}
    rows = []
    for n, x in enumerate(points):
        share = deadline.share(1 / (len(points) - n))
        common = dict(seed=args.seed, deadline=share, regions=args.regions, reference=args.reference)
        box = ball(x, radius, clip)
        r = bounds.top1(A, B, box, **common) if args.top1 else \
            bounds.distance(A, B, box, epsilon=epsilon, target=args.target, sized=bool(args.cert_dir), **common)
        outcome, note = r.outcome, ""
        if args.cert_dir and outcome != UNKNOWN and r.has_certificate:
            try:
                write_json_atomic(os.path.join(args.cert_dir, f"point_{n}.json"), r.certificate())
            except NotReplayed as exc:
                outcome, note = UNKNOWN, f"the certificate does not replay ({exc.reason})"
        counts[outcome] += 1
        word = _WORDS[question][outcome]
        detail = note or (f"U ≈ {float(r.upper):.6g}" if question == "epsilon" else
                          f"classes {r.labels}" if outcome == HOLDS and not r.equivalent else
                          "f1 = f2 exactly" if outcome == HOLDS else
                          f"classes {r.classes} at an exact witness" if outcome == FAILS else r.reason)
        rows.append({"point": n, "answer": word.lower(), "detail": detail})
        if not args.json:
            print(f"point {n}: {word}" + (f" ({detail})" if detail else ""), flush=True)
    summary = (f"{len(points)} points, L∞ radius {args.radius}" + (f" clipped to [{args.clip}]" if clip else "") +
               f": {counts[HOLDS]} {_WORDS[question][HOLDS]}, {counts[FAILS]} {_WORDS[question][FAILS]}, "
               f"{counts[UNKNOWN]} UNKNOWN")
    if args.json:
        emit_json({"points": rows, "summary": summary})
    else:
        print(summary)
    return EXIT[FAILS if counts[FAILS] else HOLDS if counts[HOLDS] == len(points) else UNKNOWN]

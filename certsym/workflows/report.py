"""``certsym report``: one page about two networks, for a reader who wants the answers and their evidence together.

The page holds, in this order: the three verdicts side by side (exact equivalence on all of R^m; the certified
distance [L, U] on the region, with the verdict against ε when one is given; top-1 agreement on the region), each
with its witness when there is one; a figure of both networks along a segment of the region (through the witness
when there is one: a float drawing, for the eye only); the files read, with their SHA-256 and how each was read;
and the certificates, written beside the page and replayed VALID by the independent checker before they are
linked, with the one command that replays them all. Cost: one equivalence decision, one distance and one top-1
search within the budget (a third of it each), their certificates' replays, and one drawing.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.core.decision import FAILS, HOLDS
from certsym.core.deep import float_forward, float_layers
from certsym.decide.deadline import Deadline
from certsym.errors import InputError, NotReplayed
from certsym.io import html
from certsym.io.sources import Model
from certsym.workflows import bounds
from certsym.workflows.equivalence import Equivalence, approx, equivalent

TONE = {HOLDS: "holds", FAILS: "fails"}
NAMES = ("equivalence", "distance", "top1")  # the certificates a page may link, in this order


@dataclass
class PairReport:
    """What the page says: the three answers, the certificate files written (relative to the page) and the page."""

    equivalence: Equivalence
    distance: bounds.Distance
    top1: bounds.Top1
    page: Path
    certificates: list[str] = field(default_factory=list)
    figure: str | None = None


def _decimal(x: fmpq) -> str:
    """A bound for the page: 10 significant digits, enough to tell it from ε (exact in the certificate)."""
    return approx(Fraction(int(x.p), int(x.q)))


def _point(x: list) -> str:
    """A witness for the page: its coordinates as decimals (exact in the certificate)."""
    shown = ", ".join(f"{float(t):.6g}" for t in x[:8])
    return f"({shown}{', …' if len(x) > 8 else ''})"


def _segment(box: list, witness: list | None) -> tuple[np.ndarray, np.ndarray]:
    """Two ends of a segment through the region: from its centre through the witness to the region's edge, or its
    main diagonal."""
    lo = np.array([float(a) for a, _ in box])
    hi = np.array([float(b) for _, b in box])
    if witness is None:
        return lo, hi
    centre, w = (lo + hi) / 2, np.array([float(t) for t in witness])
    d = w - centre
    if not d.any():
        return lo, hi
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.where(d > 0, (hi - centre) / d, np.where(d < 0, (lo - centre) / d, np.inf))
    t = float(np.nanmin(steps)) if np.isfinite(steps).any() else 1.0
    return centre - t * d, centre + t * d


def _draw(A: Model, B: Model, box: list, witness: list | None, out: Path) -> str | None:
    """The figure (a PNG beside the page), or None without matplotlib. Float evaluations, for the eye only."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    a, b = _segment(box, witness)
    t = np.linspace(0, 1, 400)
    X = a[None, :] + t[:, None] * (b - a)[None, :]
    f1, f2 = (float_forward(float_layers(M.layered()), X, M.layered().output_relu) for M in (A, B))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.2), sharex=True, height_ratios=(2, 1))
    for j in range(min(f1.shape[1], 10)):
        line, = top.plot(t, f1[:, j], lw=1.4, label=f"output {j}")
        top.plot(t, f2[:, j], lw=1.4, ls="--", color=line.get_color())
    top.set_ylabel("outputs (θ1 solid, θ2 dashed)")
    top.legend(fontsize=7, ncol=5, loc="best")
    bottom.plot(t, np.abs(f1 - f2).max(axis=1), color="k", lw=1.2)
    bottom.set_ylabel("‖f1 − f2‖∞")
    bottom.set_xlabel("position on the segment" + (" (through the witness)" if witness is not None else
                                                   " (the region's diagonal)"))
    fig.tight_layout()
    name = out.with_suffix(".png").name
    fig.savefig(out.with_suffix(".png"), dpi=90)
    plt.close(fig)
    return name


def _certify(doc_of, name: str, folder: Path, files: list[str]) -> str | None:
    """Write one certificate (replayed VALID first: ``NotReplayed`` otherwise is reported as its absence)."""
    from certsym_check import check

    try:
        doc = doc_of()
    except (NotReplayed, Exception):  # noqa: BLE001 - an answer without a certificate is shown as such
        return None
    if not check(doc, files if any("parameters" not in entry for entry in doc["inputs"]) else None):
        return None
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    return f"{folder.name}/{name}.json"  # relative to the page


def pair_report(A: Model, B: Model, box: list, where: str, out: Path, epsilon: fmpq | None = None,
                deadline: Deadline | None = None, regions: int | None = None) -> PairReport:
    """Decide, certify and write the page (module docstring) to ``out``, its certificates in ``<out stem>_
    certificates/`` beside it and its figure in ``<out stem>.png``. Cost: see the module."""
    deadline = deadline or Deadline(30.0)
    folder = out.with_name(out.stem + "_certificates")
    files = [str(M.path) for M in (A, B) if M.path is not None]
    written = {out.resolve(), out.with_suffix(".png").resolve(), *((folder / f"{name}.json").resolve()
                                                                    for name in NAMES)}
    clash = [f for f in files if Path(f).resolve() in written or Path(f).resolve() == folder.resolve()]
    if clash:
        raise InputError(f"-o {out}: the page, its figure or its certificates would overwrite the input {clash[0]}")
    for name in NAMES:  # a page links only what this run wrote and replayed
        (folder / f"{name}.json").unlink(missing_ok=True)
    seconds = deadline.remaining()
    eq = equivalent(A, B, seconds=seconds / 3 if seconds != float("inf") else None)
    d = bounds.distance(A, B, box, epsilon=epsilon, deadline=deadline.share(0.5), regions=regions)
    t = bounds.top1(A, B, box, deadline=deadline.share(1.0), regions=regions)
    certs = [c for c in (_certify(lambda: eq.certificate(), "equivalence", folder, files),
                         _certify(d.certificate, "distance", folder, files),
                         _certify(t.certificate, "top1", folder, files)) if c]
    report = PairReport(eq, d, t, out, certs)
    report.figure = _draw(A, B, box, d.witness if d.lower > 0 else None, out)
    out.write_text(_page(A, B, report, where, files), encoding="utf-8")
    return report


def _page(A: Model, B: Model, r: PairReport, where: str, files: list[str]) -> str:
    eq, d, t = r.equivalence, r.distance, r.top1
    eq_lines = [f"at x = {_point(eq.witness)}" if eq.witness is not None else "",
                eq.reason if eq.undecided else ""]
    eq_card = html.card("Equal functions on all of R^m?", eq.status.replace("_", " ").upper(),
                        TONE.get(eq.outcome, "unknown"), [line for line in eq_lines if line])
    dist_lines = [f"sup ‖f1 − f2‖∞ ∈ [{_decimal(d.lower)}, {_decimal(d.upper)}]", f"on {where}"]
    if d.witness is not None and d.lower > 0:
        dist_lines.append(f"L attained at {_point(d.witness)}")
    dist_verdict = (d.verdict or "bounds").upper() if d.epsilon is not None else \
        ("0" if d.upper == 0 else f"≤ {float(d.upper):.4g}")
    dist_card = html.card("Distance" + (f" against ε = {_decimal(d.epsilon)}" if d.epsilon is not None else ""),
                          dist_verdict, TONE.get(d.outcome, "unknown") if d.epsilon is not None else "holds",
                          dist_lines)
    top_lines = [f"on {where}"]
    if t.verdict == "differ" and t.witness is not None:
        top_lines.append(f"classes {t.classes} at {_point(t.witness)}")
    top_card = html.card("Same top-1 class everywhere?", t.verdict.upper(), TONE.get(t.outcome, "unknown"), top_lines)
    body = [html.cards([eq_card, dist_card, top_card])]
    if r.figure:
        body.append(html.figure(r.figure, "Both networks along a segment of the region" +
                                (", through the witness of L" if d.lower > 0 else "") +
                                " (float evaluation, for the eye: the verdicts above are exact)"))
    rows = [[M.name, M.record.sha256, M.reading or "a parameter file (σ = ReLU by its format)"] for M in (A, B)]
    body += ["<h2>The files</h2>", html.table(["file", "SHA-256", "read as"], rows)]
    body.append("<h2>Certificates</h2>")
    if r.certificates:
        body.append(html.links([(c, c) for c in r.certificates]))
        # the command as typed where the page was written: the certificates beside the page, the inputs as given
        paths = [str(r.page.parent / c) for c in r.certificates]
        command = shlex.join(["certsym", "check", *paths, *(["--inputs", *files] if files else [])])
        body.append("<p>Each was replayed VALID by the independent checker before it was linked. Replay them all: "
                    f"<code>{html.esc(command)}</code></p>")
    linked = {Path(c).stem for c in r.certificates}
    missing = [words for name, words in zip(NAMES, ("equivalence", "distance", "top-1"), strict=True)
               if name not in linked]
    if missing:
        body.append(f"<p>No certificate for {' and '.join(missing)}: an UNKNOWN or UNDECIDED answer proves nothing, "
                    "and an answer whose certificate did not replay is not linked.</p>")
    return html.page("certsym report", body)

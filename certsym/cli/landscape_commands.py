"""The handlers of the ``certsym landscape`` commands (``certsym.cli.landscape`` defines their options): the
teacher–student loss of the second paper (MATH.md, Part II) — families, certified critical points, exact series,
one neuron added, gradient descent, certifying a given W."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import numpy as np

from certsym.certify import (
    added_neuron_certificates,
    critical_point_certificate,
    hessian_inertia_certificate,
    threshold_certificate,
    wide_critical_point_certificate,
)
from certsym.cli.common import EXIT_NEGATIVE, EXIT_OK, emit_json
from certsym.errors import InputError
from certsym.io import read_text, write_bytes_atomic, write_json_atomic, write_text_atomic
from certsym.landscape.added_neuron import MAX_K, study
from certsym.landscape.certify import certificate_inertia, critical, isotypic_table, threshold
from certsym.landscape.descent import experiment
from certsym.landscape.expansion import MAX_ORDER, ExpansionError, agreement, expand
from certsym.landscape.families import FAMILIES, family
from certsym.landscape.given import certify_matrix
from certsym.landscape.restricted import expand as expand_layout
from certsym.landscape.restricted import loss
from certsym.landscape.series import fit
from certsym.landscape.wide import WideError, certify_wide
from certsym.numbers import rational_from_arb
from certsym_check import check

MAX_LANDSCAPE_K = 10**6
MAX_POINT_K = 2000


def _landscape_k(k: int, limit: int = MAX_LANDSCAPE_K) -> int:
    if not 3 <= k <= limit:
        raise InputError(f"k must be an integer from 3 to {limit:,}, got {k}")
    return k


def _family(name: str):
    try:
        return family(name)
    except KeyError:
        raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}, or misfit-M (M ≥ 1)") \
            from None


def cmd_landscape_families(args: argparse.Namespace) -> int:
    rows = [{"name": f.name, "isotropy": f.isotropy, "parameters": list(f.layout(10).names),
             "description": f.description} for f in FAMILIES.values()]
    if args.json:
        emit_json(rows)
    else:
        for r in rows:
            print(f"{r['name']:<20} {r['isotropy']:<18} ({', '.join(r['parameters'])})  {r['description']}")
    return EXIT_OK


def cmd_landscape_series(args: argparse.Namespace) -> int:
    """The exact series in t = k^(-1/2) of a family's critical point and critical value, beside the fits."""
    _family(args.family)
    if not 0 <= args.order <= MAX_ORDER:
        raise InputError(f"--order must be from 0 to {MAX_ORDER}, got {args.order}")
    try:
        e = expand(args.family, args.order)
    except ExpansionError as exc:
        print(f"certsym: {args.family}: the series cannot be derived: {exc}", file=sys.stderr)
        return EXIT_NEGATIVE
    rows = agreement(e, fit(e.family, report=9) if not args.no_fit and e.family in FAMILIES else [])
    if args.json:
        emit_json({"family": e.family, "t": "k^(-1/2)", "order": args.order, "seconds": round(e.seconds, 3),
                    "series": [{"name": s.name, "valuation": s.valuation,
                                "coefficients": [{"power": p, "exact": str(c)} for p, c in s.terms()]}
                               for s in (*e.parameters, e.loss)],
                    "fits": [{"name": r.name, "power": r.power, "value": repr(r.value), "fit": repr(r.fit),
                              "fit_uncertainty": repr(r.uncertainty), "difference": repr(r.difference)}
                             for r in rows if r.fit is not None]})
        return EXIT_OK
    print(f"{e.family}: exact series in t = k^(-1/2), derived order by order in {e.seconds:.1f} s "
          f"({e.rounds} rounds); {e.loss.name} is the critical value")
    for r in rows:
        fitted = "" if r.fit is None else f"   fit {r.fit:+.12e} ± {r.uncertainty:.1e}, |difference| {r.difference:.1e}"
        print(f"  {r.name:>4}  t^{r.power:<2} {str(r.exact):<40} = {r.value:+.15e}{fitted}")
    return EXIT_OK


def cmd_landscape_add_neuron(args: argparse.Namespace) -> int:
    """One neuron added to a certified critical point (n = k + 1): splits and the zero neuron, certified."""
    _family(args.family)
    a = study(args.family, _landscape_k(args.k, MAX_K))
    named = {}
    for c in added_neuron_certificates(a):
        e = c["proof"]["embedding"]
        named[f"split{e['split']}" if "split" in e else "zero"] = c
    escapes = [(f"split{s.row}", s.escape) for s in a.splits] + [("zero", a.zero.escape)]
    for tag, out in escapes:
        if out is not None and out.end is not None:
            named[f"{tag}_escape"] = wide_critical_point_certificate(out.end)
    certs = list(named.values())
    replayed = [bool(check(c)) for c in certs]
    if args.certs:
        Path(args.certs).mkdir(parents=True, exist_ok=True)
        for tag, c in named.items():
            write_json_atomic(str(Path(args.certs) / f"{a.base.family.name}_k{args.k}_{tag}.json"), c)
    splits = [{"row": s.row, "certified_negative_at_least": s.negative,
               "spectrum": dict(zip(("negative", "zero", "positive"), s.spectrum, strict=True)),
               "smallest_eigenvalue": s.smallest} for s in a.splits]
    zero = {"direction": [str(x) for x in a.zero.direction], "slope": a.zero.slope}
    for row, (_, out) in zip([*splits, zero], escapes, strict=True):
        row["escape"] = None if out is None else {
            "loss": out.loss, "steps": out.steps, "certified_end": out.end is not None,
            "minimum": None if out.end is None else out.end.minimum, "error": out.error}
    ok = all(replayed) and all(tag in named for tag in [*(f"split{s.row}" for s in a.splits), "zero"])
    if args.json:
        emit_json({"family": a.base.family.name, "k": args.k, "n": args.k + 1, "loss": float(a.base.box.loss.mid()),
                    "splits": splits, "zero_neuron": zero, "certified": ok})
        return EXIT_OK if ok else EXIT_NEGATIVE
    value = float(a.base.box.loss.mid())
    print(f"{a.base.family.name}, k = {args.k}: the certified critical point W* (F = {value:.10g}, "
          f"{a.base.inertia.negative} negative eigenvalues) with one neuron added, in M({args.k + 1}, {args.k}):")
    exact = {c["proof"]["embedding"]["split"]: c["proof"]["base_inertia"]["negative"]
             for c in certs if "base_inertia" in c["proof"]}
    for s in a.splits:
        neg, zer, pos = s.spectrum
        k = args.k
        certified = (f"certified inertia: {k - 1 + exact[s.row]} negative, 1 zero, {k * k - exact[s.row]} positive"
                     if s.row in exact else f"certified: at least {s.negative} negative eigenvalues")
        print(f"  row {s.row} split in halves: a critical point (positive homogeneity), a saddle; {certified}. "
              f"Numerically: {neg} negative (smallest {s.smallest:.4g}), {zer} zero, {pos} positive")
    print(f"  zero neuron: g(û) = {a.zero.slope:.6g} < 0 (certified) in a direction û, so "
          f"F([W*; εû]) = F(W*) + ε g(û) + ε²|û|²/4 < F(W*): not a local minimum")
    for tag, out in escapes:
        if out is not None:
            print(f"  descent from {tag} (a step of 1e-3 along its descent direction): {_escape_text(out)}")
    verdict = "all replayed by the independent checker" if all(replayed) else "NOT all replayed"
    print(f"{len(certs)} certificates, {verdict}" + (f"; written to {args.certs}" if args.certs else ""))
    return EXIT_OK if ok else EXIT_NEGATIVE


def _escape_text(out) -> str:
    if out.end is not None:
        kind = "a strict local minimum" if out.end.minimum else "a critical point (not a minimum numerically)"
        return (f"ends at F = {float(out.end.loss[0]):.10g} after {out.steps} steps: certified {kind} in its "
                f"{len(out.end.orbits)}-dimensional fixed-point space")
    if out.error:
        return f"ends at F = {out.loss:.6g} after {out.steps} steps, not certified ({out.error})"
    return f"ends at the global minimum (F = {out.loss:.1e}) after {out.steps} steps"


def cmd_landscape_threshold(args: argparse.Namespace) -> int:
    """The integer k at which the family turns into a minimum and the certified bracket of the real k* below it."""
    _family(args.family)
    if isotypic_table(args.family) is None:
        raise InputError(f"{args.family} has no isotypic table (misfit-1 and misfit-2 are one-misfit and two-misfit)")
    if not 1 <= args.steps <= 40:
        raise InputError(f"--steps must be from 1 to 40, got {args.steps}")
    k, t = threshold(args.family, steps=args.steps)
    if t is not None and args.cert:
        write_json_atomic(args.cert, threshold_certificate(t))
    a, b = t.bracket if t is not None else (None, None)
    out = {"family": args.family, "certified": t is not None, "minimum_from_k": k,
           "bracket": None if t is None else [str(a), str(b)],
           "negative_below": None if t is None else t.below.negative}
    if args.json:
        emit_json(out)
    elif k is None:
        print(f"{args.family}: no integer k ≤ 64 with a certified saddle at k − 1 and a certified minimum at k")
    elif t is None:
        print(f"{args.family}: a certified saddle at k = {k - 1} and minimum at k = {k}, but no certified bracket")
    else:
        print(f"{args.family}: a certified saddle at k = {k - 1}, a certified local minimum at k = {k}; the threshold "
              f"k* lies in [{a}, {b}] = [{float(a):.10f}, {float(b):.10f}]")
        print(f"  one branch of critical points for every k in it (Krawczyk over the interval); at k = a the probes' "
              f"negative eigenvalues {t.below.negative}, at k = b none")
    return EXIT_OK if t is not None else EXIT_NEGATIVE


def cmd_landscape_critical(args: argparse.Namespace) -> int:
    _family(args.family)
    c = critical(args.family, _landscape_k(args.k))
    return _emit_critical(c, args, {"family": args.family, "k": args.k})


def _emit_critical(c, args: argparse.Namespace, head: dict) -> int:
    """Certificates (--cert, --inertia-cert) and the report of a certified critical point (text or --json)."""
    box = c.box
    if args.cert and box.certified:
        write_json_atomic(args.cert, critical_point_certificate(c))
    if args.inertia_cert and c.certified:
        replayable = certificate_inertia(c)  # the decomposition the checker replays (isotypic where it applies)
        if replayable.negative is None or (replayable.method == "full" and c.k * c.k > 40):
            raise InputError("the Hessian's signs are certified here but not by a decomposition the checker replays "
                             "(isotypic tables for (k), (k−1, 1), (k−2, 2); the full Hessian for k² ≤ 40); no "
                             "hessian_inertia certificate written")
        write_json_atomic(args.inertia_cert, hessian_inertia_certificate(c, replayable))
    neg = c.inertia.negative
    name = c.family.name
    out = {**head, "certified": c.certified,
           "loss": box.loss.mid().str(20, radius=False) if box.loss is not None else None,
           "loss_enclosure": [str(rational_from_arb(box.loss.lower())), str(rational_from_arb(box.loss.upper()))]
           if box.loss is not None else None,
           "point": {n: float(x) for n, x in zip(box.layout.names, box.center, strict=True)},
           "box_radius": str(box.radius), "hessian_negative_eigenvalues": neg,
           "hessian_method": c.inertia.method, "is_local_minimum": None if neg is None else neg == 0}
    if args.json:
        emit_json(out)
    elif not box.certified:
        value = float(loss(box.layout, [float(x) for x in box.center]))
        hint = (" F ≈ 0 there: the family has run into the global minimum, where rows are parallel to targets and F "
                "is not twice differentiable." if abs(value) < 1e-9 else "")
        print(f"{name} at k = {c.k:,}: NOT certified: Krawczyk's test failed on every box tried around "
              f"the Newton point ({', '.join(f'{n} = {v:.6g}' for n, v in out['point'].items())}).{hint}")
    else:
        status = "certified" if c.certified else "NOT certified (the Hessian's signs could not be certified)"
        kind = "?" if neg is None else ("local minimum" if neg == 0 else f"saddle ({neg} negative eigenvalues)")
        print(f"{name} at k = {c.k:,}: {kind}, {status}")
        print(f"  F = {out['loss']}   (enclosure {box.loss.str(20)})")
        print("  point: " + ", ".join(f"{n} = {v:.12g}" for n, v in out["point"].items()))
        print(f"  unique critical point within ± {float(box.radius):.3g} (Krawczyk); Hessian inertia by the "
              f"{c.inertia.method} method")
    return EXIT_OK if c.certified else EXIT_NEGATIVE


def _read_matrix(path: str):
    """W from a .npz (its array "W", or its only array; never pickles) or a JSON file ({"W": rows} or rows)."""
    if path.endswith(".npz"):
        try:
            with np.load(path, allow_pickle=False) as data:
                names = list(data.files)
                key = "W" if "W" in names else names[0] if len(names) == 1 else None
                if key is None:
                    raise InputError(f"{path}: name the matrix W (the archive holds {names})")
                W = np.asarray(data[key], dtype=float)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable .npz ({exc})") from None
    else:
        doc = json.loads(read_text(path))
        rows = doc.get("W") if isinstance(doc, dict) else doc
        try:
            W = np.asarray(rows, dtype=float)
        except (TypeError, ValueError):
            raise InputError(f"{path}: expected a k × k matrix of numbers") from None
    return W


def cmd_landscape_certify(args: argparse.Namespace) -> int:
    W = _read_matrix(args.W)
    if args.k is not None and W.shape[1] != args.k:
        raise InputError(f"W has shape {W.shape}, not k = {args.k} columns")
    if not args.tol > 0:
        raise InputError("--tol must be positive")
    if W.shape[0] != W.shape[1]:
        return _certify_wide(W, args)
    given = certify_matrix(W, args.tol)
    head = {"k": given.k, "isotropy": "Δ(" + " × ".join(f"S_{p}" for p in given.sizes) + ")",
            "family": given.name, "projection_distance": given.projection_distance,
            "newton_distance": given.newton_distance}
    if given.critical is None:
        if args.json:
            emit_json({**head, "certified": False, "reason": given.reason})
        else:
            print(f"NOT certified: {given.reason} (isotropy {head['isotropy']}, W within "
                  f"{given.projection_distance:.3g} of its fixed-point space)")
        return EXIT_NEGATIVE
    if not args.json:
        print(f"W (k = {given.k}) has isotropy {head['isotropy']} within {given.projection_distance:.3g}; Newton "
              f"moved the projection by {given.newton_distance:.3g}")
    return _emit_critical(given.critical, args, head)


def _certify_wide(W, args: argparse.Namespace) -> int:
    """``landscape certify`` for n ≠ k: the isotropy as transposition pairs, Krawczyk in its fixed-point space."""
    n, k = W.shape
    try:
        p = certify_wide(W, min(args.tol, 1e-3))
    except WideError as exc:
        if args.json:
            emit_json({"n": n, "k": k, "certified": False, "reason": str(exc)})
        else:
            print(f"NOT certified: {exc}")
        return EXIT_NEGATIVE
    if args.inertia_cert:
        raise InputError("--inertia-cert is for square W; with n ≠ k the minimum claim is in the --cert certificate")
    if args.cert:
        write_json_atomic(args.cert, wide_critical_point_certificate(p))
    out = {"n": n, "k": k, "certified": True, "parameters": len(p.orbits), "generators": len(p.generators),
           "loss": [float(p.loss[0]), float(p.loss[1])], "minimum": p.minimum,
           "smallest_eigenvalue": p.smallest_eigenvalue}
    if args.json:
        emit_json(out)
    else:
        kind = "a strict local minimum (Hessian positive definite, checked by the checker's interval Cholesky)" \
            if p.minimum else f"not a minimum numerically (smallest eigenvalue {p.smallest_eigenvalue:.3g})"
        print(f"W in M({n}, {k}): a certified critical point in the {len(p.orbits)}-dimensional fixed-point space "
              f"of {len(p.generators)} transposition pairs; F in [{float(p.loss[0]):.12g}, {float(p.loss[1]):.12g}]; "
              f"{kind}")
    return EXIT_OK


def cmd_landscape_point(args: argparse.Namespace) -> int:
    _family(args.family)
    c = critical(args.family, _landscape_k(args.k, MAX_POINT_K))
    W = expand_layout(c.box.layout, [float(x) for x in c.box.center])
    if args.output and args.output.endswith(".npz"):
        buffer = io.BytesIO()
        np.savez(buffer, W=W)
        write_bytes_atomic(args.output, buffer.getvalue())
    else:
        text = json.dumps({"family": args.family, "k": args.k, "certified": c.certified, "W": W.tolist()})
        if args.output:
            write_text_atomic(args.output, text + "\n")
        else:
            print(text)
    return EXIT_OK


def cmd_landscape_descent(args: argparse.Namespace) -> int:
    k = _landscape_k(args.k, 200)
    if args.runs < 1:
        raise InputError("--runs must be positive")
    if not 0 <= args.extra <= k:
        raise InputError(f"--extra must be from 0 to k = {k}")
    runs, max_steps = (min(args.runs, 4), min(args.max_steps, 5000)) if args.quick else (args.runs, args.max_steps)
    e = experiment(k, runs, args.seed, max_steps=max_steps, init=args.init, extra=args.extra)
    ends = {} if args.no_certify else (_wide_ends(e, args) if args.extra else _square_ends(e, args))
    out = {"k": k, "n": k + args.extra, "runs": runs, "seed": args.seed, "init": args.init,
           "spurious_fraction": e.spurious_fraction, "lands_in": dict(e.counts),
           "converged": sum(r.converged for r in e.runs), "certified": ends}
    if args.json:
        emit_json(out)
        return EXIT_OK
    width = f", n = {k + args.extra} student neurons" if args.extra else ""
    print(f"k = {k}{width}: {runs} runs, {out['converged']} converged, spurious fraction {e.spurious_fraction:.3f}")
    for name, count in e.counts.most_common():
        row = ends.get(name)
        if row is None:
            print(f"  {count:>4}  {name}")
        elif row["certified"]:
            what = f" {row['family']}" if "family" in row else ""
            print(f"  {count:>4}  {name}: certified{what}, F in [{row['loss'][0]:.12g}, {row['loss'][1]:.12g}], "
                  f"{row['kind']}")
        else:
            print(f"  {count:>4}  {name}: not certified ({row['reason']})")
    return EXIT_OK


def _square_ends(e, args: argparse.Namespace) -> dict:
    """Each distinct end point certified in its Δ(S_p1 × … × S_pr) fixed-point space (critical_point files)."""
    certified = e.certified_end_points()
    if args.certs:
        Path(args.certs).mkdir(parents=True, exist_ok=True)
        for g in certified.values():
            if g.critical is not None and g.critical.box.certified:
                write_json_atomic(Path(args.certs) / f"k{e.k}_{g.name}_critical_point.json",
                                  critical_point_certificate(g.critical))
    return {name: _given_json(g) for name, g in certified.items()}


def _wide_ends(e, args: argparse.Namespace) -> dict:
    """With added neurons: each distinct spurious end point certified in its fixed-point space."""
    certified = e.certified_wide_end_points()
    if args.certs:
        Path(args.certs).mkdir(parents=True, exist_ok=True)
        for i, p in enumerate(v for v in certified.values() if not isinstance(v, str)):
            write_json_atomic(Path(args.certs) / f"k{e.k}_n{e.k + args.extra}_end{i}_wide_critical_point.json",
                              wide_critical_point_certificate(p))
    return {name: {"certified": False, "reason": p} if isinstance(p, str) else
            {"certified": True, "loss": [float(p.loss[0]), float(p.loss[1])], "minimum": p.minimum,
             "parameters": len(p.orbits), "kind": "a strict local minimum" if p.minimum else
             "a critical point, not a minimum numerically"} for name, p in certified.items()}


def _given_json(g) -> dict:
    c = g.critical
    if c is None:
        return {"certified": False, "reason": g.reason, "family": g.name}
    lo, hi = c.box.loss.lower(), c.box.loss.upper()
    negative = c.inertia.negative
    return {"certified": c.box.certified, "family": c.family.name, "loss": [float(lo), float(hi)],
            "negative": negative, "inertia_method": c.inertia.method,
            "kind": "?" if negative is None else "local minimum" if negative == 0 else f"saddle ({negative} negative)"}




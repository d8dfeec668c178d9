"""Arjevani & Field (second paper), as certsym formalizes it: the symmetric families of critical points of the
teacher–student loss, certified (Krawczyk box, loss enclosure, Hessian inertia) for concrete k.

Instances: one-misfit is a certified saddle at k = 5 and a certified spurious local minimum for every k from 6
to 20 and at k = 10², 10³, 10⁴ (and 10⁶ in the full run); its loss times k approaches 1/2 − 2/π² (observed
constant, the a ≈ 0.3 of the paper); negative-diagonal's loss approaches the positive constant 1/2 − 1/π; every
family turns from saddle into minimum between two consecutive integers k, certified on both sides. The losses of
all four families against k are collected for the report's log-log figure. misfit-M (M ≥ 3, isotropy
Δ(S_{k−M} × S_M)) is a certified saddle at k = 9 and a certified local minimum at k = 18 (misfit-3, the descent's
F = 0.03473 point) and k = 20 (misfit-4, misfit-5), with inertia certificates from its isotypic blocks.
"""

from __future__ import annotations

import math

import numpy as np

from certsym.certify import (
    added_neuron_certificates,
    hessian_inertia_certificate,
    threshold_certificate,
    wide_critical_point_certificate,
)
from certsym.landscape import kernel, restricted, spectrum
from certsym.landscape.added_neuron import study
from certsym.landscape.certify import certificate_inertia, critical, threshold
from certsym.landscape.descent import PUBLISHED_PLUS_ONE, PUBLISHED_SHARES, experiment
from certsym.landscape.expansion import agreement, expand
from certsym.landscape.families import FAMILIES
from certsym.landscape.series import fit
from certsym.reproduce import Context

STATEMENT = "Arjevani-Field: symmetric critical points"
SLUG = "landscape"
SECONDS = (55, 960)  # about this long on a 2-core machine: the representative run, --full

ONE_MISFIT_CONSTANT = 0.5 - 2 / math.pi**2
NEGATIVE_DIAGONAL_LIMIT = 0.5 - 1 / math.pi


def _certified(ctx: Context, name: str, k: int, want_minimum: bool | None, write: bool = True):
    c = critical(name, k)
    neg = c.inertia.negative
    agrees = c.certified and (want_minimum is None or (neg == 0) is want_minimum)
    replayable = certificate_inertia(c) if c.certified and write else None
    agrees = agrees and (replayable is None or replayable.negative == neg)
    cert = hessian_inertia_certificate(c, replayable) if replayable and replayable.negative is not None else None
    ctx.record(STATEMENT, SLUG, f"{name}_k{k}", agrees, cert)
    ctx.landscape.setdefault(name, []).append((k, float(c.box.loss.mid()), neg))
    return c


def run(ctx: Context) -> None:
    _families(ctx)
    _added_neuron(ctx)
    _added_neuron_families(ctx)
    run_findings(ctx)


def _added_neuron(ctx: Context) -> None:
    """Over-parameterization (n = k + 1): the one-misfit minimum with one neuron added. Each split row (the first
    row of each block, in halves) is a critical point with certified inertia (k − 1, 1, k²); the zero neuron has a
    certified descent direction; gradient descent from each, a small step along its descent direction, ends at the
    global minimum or at a spurious critical point certified in its fixed-point space. Every certificate is
    replayed."""
    rows = []
    for k in [6, 7] if ctx.quick else range(6, 13):
        a = study("one-misfit", k)
        certs = added_neuron_certificates(a)
        ok = (len(certs) == len(a.splits) + 1 and a.zero.slope < 0
              and all(s.negative == k - 1 and "base_inertia" in c["proof"] for s, c in zip(a.splits, certs,
                                                                                           strict=False)))
        for c in certs:
            e = c["proof"]["embedding"]
            tag = f"split{e['split']}" if "split" in e else "zero"
            ctx.record(STATEMENT, SLUG, f"one-misfit_k{k}_plus_one_{tag}", ok, c)
        for tag, out in [*((f"split{s.row}", s.escape) for s in a.splits), ("zero", a.zero.escape)]:
            if out is not None and out.end is not None:
                ctx.record(STATEMENT, SLUG, f"one-misfit_k{k}_plus_one_{tag}_escape", True,
                           wide_critical_point_certificate(out.end))
        rows.append((k, float(a.base.box.loss.mid()), a.zero.slope, _end_words(a.zero.escape),
                     [(s.row, s.negative, s.spectrum, s.smallest, _end_words(s.escape)) for s in a.splits]))
    ctx.findings["added_neuron"] = rows


# the families whose real threshold k* is certified (misfit-3, -4, -5 turn into minima at k* ≈ 9.32, 10.98, 12.57);
# the representative run takes misfit-3 only
THRESHOLD_FAMILIES = (*FAMILIES, "misfit-3", "misfit-4", "misfit-5")
QUICK_THRESHOLD_FAMILIES = (*FAMILIES, "misfit-3")

# the spurious-minimum families beyond one-misfit, at k where each is a certified local minimum
ADDED_NEURON_FAMILIES = {"negative-diagonal": ([6], [6, 7, 8]), "two-misfit": ([8], [8, 9, 10]),
                         "misfit-3": ([], [12]), "misfit-4": ([], [20])}


def _added_neuron_families(ctx: Context) -> None:
    """One neuron added to each other family that is a spurious minimum (negative-diagonal from k = 6, two-misfit
    from k = 8, misfit-3 at k = 12, misfit-4 at k = 20): W* is a certified minimum at n = k, and at n = k + 1 each
    split of a block's first row is a certified saddle (negative directions (y, −y)) and the zero neuron has a
    certified descent direction, so neither embedding is a minimum; descent from each shows where it leads, its
    spurious end points certified in their fixed-point spaces. Every certificate is replayed."""
    rows = []
    for name, (quick, full) in ADDED_NEURON_FAMILIES.items():
        for k in quick if ctx.quick else full:
            a = study(name, k)
            certs = added_neuron_certificates(a)
            saddle = (a.base.inertia.negative == 0 and a.zero.slope < 0 and len(certs) == len(a.splits) + 1
                      and all(sp.negative >= 1 for sp in a.splits))
            for c in certs:
                e = c["proof"]["embedding"]
                tag = f"split{e['split']}" if "split" in e else "zero"
                ctx.record(STATEMENT, SLUG, f"{name}_k{k}_plus_one_{tag}", saddle, c)
            ends = []
            for tag, out in [("zero", a.zero.escape), *((f"split{sp.row}", sp.escape) for sp in a.splits)]:
                if out is not None and out.end is not None:
                    ctx.record(STATEMENT, SLUG, f"{name}_k{k}_plus_one_{tag}_escape", True,
                               wide_critical_point_certificate(out.end))
                ends.append(_end_words(out))
            rows.append((name, k, float(a.base.box.loss.mid()), a.zero.slope,
                         [(sp.row, sp.negative) for sp in a.splits], ends))
    ctx.findings["added_neuron_families"] = rows


def _end_words(out) -> str:
    """Where a descent from an added-neuron saddle ended, in the report's words."""
    if out is None:
        return "—"
    if out.end is None:
        return "global minimum" if out.error is None else f"F = {out.loss:.6f}, not certified"
    return f"F = {float(out.end.loss[0]):.7f}, certified " + ("minimum" if out.end.minimum else "saddle")


def _families(ctx: Context) -> None:
    ks = [6, 7, 10, 20] if ctx.quick else list(range(6, 21))
    _certified(ctx, "one-misfit", 5, False)
    for k in ks:
        _certified(ctx, "one-misfit", k, True, write=k in (6, 10, 20))
    large = [100, 1000, 10**4] + ([] if ctx.quick else [10**6])
    for k in large:
        c = _certified(ctx, "one-misfit", k, True)
        ctx.record(STATEMENT, SLUG, f"one-misfit_kF_{k}",
                   abs(k * float(c.box.loss.mid()) - ONE_MISFIT_CONSTANT) < 3 / math.sqrt(k))
    for name in ("negative-diagonal", "two-misfit", "good-plus-negative"):
        for k in [10, *large] if ctx.quick else [10, 20, *large]:
            c = _certified(ctx, name, k, True, write=k in (10, 10**4))
        if name == "negative-diagonal":
            ctx.record(STATEMENT, SLUG, "negative-diagonal_limit",
                       bool(c.box.loss > 0)  # certified: the whole enclosure is positive
                       and abs(float(c.box.loss.mid()) - NEGATIVE_DIAGONAL_LIMIT) < 3 / math.sqrt(large[-1]))
    # misfit-M (M ≥ 3): the end points gradient descent reaches most often at large k, Δ(S_{k−M} × S_M)
    for name, k in ([("misfit-3", 9), ("misfit-3", 18)] if ctx.quick else
                    [("misfit-3", 9), ("misfit-3", 18), ("misfit-4", 9), ("misfit-4", 20), ("misfit-5", 20)]):
        _certified(ctx, name, k, k >= 12)
    # the integer k at which each family turns from saddle into minimum, certified on both sides, and the real k*
    # between k − 1 and k, a landscape_threshold certificate
    for name in QUICK_THRESHOLD_FAMILIES if ctx.quick else THRESHOLD_FAMILIES:
        k, t = threshold(name)
        ctx.crossings[name] = k
        ctx.record(STATEMENT, SLUG, f"{name}_turns_minimum_at_{k}", k is not None)
        ctx.findings.setdefault("crossing", []).append((name, t and (str(t.bracket[0]), str(t.bracket[1]))))
        ctx.record(STATEMENT, SLUG, f"{name}_real_k_threshold", t is not None, t and threshold_certificate(t))


def run_findings(ctx: Context) -> None:
    """The series in k^{-1/2}, the spectrum at W = I and its distance from one-misfit's, and gradient descent."""
    # the series in t = k^{-1/2}: derived exactly, order by order, then set beside least-squares fits
    ctx.findings["series"] = []
    plan = [("one-misfit", 2 if ctx.quick else 4), ("negative-diagonal", 3 if ctx.quick else 5),
            ("good-plus-negative", 2 if ctx.quick else 3)]
    # the √M families take about 15 s each: the full run only (misfit-M has no least-squares fit: no family at
    # k = 10^4 …)
    plan += [] if ctx.quick else [("two-misfit", 1), ("misfit-3", 1)]
    for name, order in plan:
        e = expand(name, order)
        rows = agreement(e, fit(name, report=9) if name in FAMILIES else [])
        ctx.findings["series"].append((name, round(e.seconds, 1), [
            (r.name, r.power, str(r.exact), f"{r.value:.12g}", None if r.fit is None else f"{r.fit:.12g}",
             None if r.fit is None else f"{r.difference:.1e}", None if r.fit is None else f"{r.uncertainty:.1e}")
            for r in rows]))
        loss = [r for r in rows if r.name == e.loss.name]
        # the critical value to t² beyond its leading term agrees with the fit to ≥ 8 digits; every coefficient
        # agrees with its fit within the fit's own uncertainty (misfit-M has no fit: its series is checked by its
        # limit below)
        if name in FAMILIES:
            ctx.record(STATEMENT, SLUG, f"{name}_series_exact_equals_fit",
                       all(r.agrees(8) for r in loss[:3])
                       and all(r.difference <= 2 * r.uncertainty + 1e-15 for r in rows if r.fit is not None))
    # the limits of k·F: M(1/2 − 2/π²) for M misfit neurons (one-misfit M = 1, two-misfit M = 2, misfit-M)
    limits = []
    for name, _, rows in ctx.findings["series"]:
        kF0 = next((float(v) for n, p, _, v, *_ in rows if n == "k*F" and p == 0), None)
        misfits = {"one-misfit": 1, "two-misfit": 2}.get(name) or (int(name[7:]) if name.startswith("misfit-") else 0)
        if kF0 is not None and misfits:
            exact = next(ex for n, p, ex, *_ in rows if n == "k*F" and p == 0)
            limits.append((name, exact, kF0, misfits))
            ctx.record(STATEMENT, SLUG, f"{name}_kF_series", abs(kF0 - misfits * ONE_MISFIT_CONSTANT) < 1e-12)
    for name, _, rows in ctx.findings["series"]:  # the families whose loss tends to 1/2 − 1/π
        F0 = next(((ex, float(v)) for n, p, ex, v, *_ in rows if n == "F" and p == 0), None)
        if F0 is not None:
            limits.append((name, F0[0], F0[1], 0))
            ctx.record(STATEMENT, SLUG, f"{name}_F_series", abs(F0[1] - (0.5 - 1 / math.pi)) < 1e-12)
    ctx.findings["limits"] = limits
    ks = [4, 5] if ctx.quick else [3, 4, 5, 6]
    for k in ks:  # the exact factorization of det(λ − ∇²F(I)) is the closed form
        ctx.record(STATEMENT, SLUG, f"hessian_at_identity_k{k}", spectrum.exact_factors(k) == spectrum.closed_form(k))
    ctx.findings["spectrum"] = [(str(r), m) for r, m in spectrum.eigenvalues(10)]
    distances = []
    for k in [6, 10] if ctx.quick else [6, 8, 10, 14, 20]:
        c = critical("one-misfit", k)
        W = restricted.expand(c.box.layout, [float(x) for x in c.box.center])
        ev = np.sort(np.linalg.eigvalsh(kernel.hessian(W)))
        ex = np.sort(np.concatenate([[float(r)] * m for r, m in spectrum.eigenvalues(k)]))
        distances.append((k, float(np.abs(ev - ex).max()), float(np.abs(ev - ex).mean())))
    ctx.findings["distance"] = distances
    ctx.record(STATEMENT, SLUG, "one-misfit_spectrum_approaches_identity's",
               all(a[1] > b[1] and a[2] > b[2] for a, b in zip(distances, distances[1:], strict=False)))
    _descent(ctx)
    _wide_descent(ctx)


def _descent(ctx: Context) -> None:
    """Safran and Shamir's experiment (n = k, W_ij ~ N(0, 1/k), their protocol): the spurious share of 500 runs per
    k = 6 … 20 (100 runs at k = 8 and 10 in the representative run), with its 95% Wilson interval beside the
    published share, and the end points grouped by family (each family's critical point is certified above)."""
    runs = 100 if ctx.quick else 500
    table = []
    for k in [8, 10] if ctx.quick else range(6, 21):
        e = experiment(k, runs, seed=2018)
        spurious = sum(r.loss >= 1e-3 for r in e.runs)
        table.append((k, runs, spurious, PUBLISHED_SHARES.get(k), dict(e.counts.most_common())))
    ctx.findings["descent"] = table


def _wide_descent(ctx: Context) -> None:
    """Safran and Shamir's experiment with one neuron added (n = k + 1, W_ij ~ N(0, 1/k) for all (k + 1) × k
    weights): the spurious shares of 500 runs per k = 6 … 20 (40 at k = 8 in the representative run) beside the
    published ones, each distinct spurious end point certified in its fixed-point space."""
    runs = 40 if ctx.quick else 500
    table = []
    for k in [8] if ctx.quick else range(6, 21):
        e = experiment(k, runs, seed=2018, extra=1, max_steps=20000 if ctx.quick else 50000)
        ends = []
        for name, p in e.certified_wide_end_points().items():
            count = e.counts[name]
            if isinstance(p, str):  # e.g. a run that stopped before it converged: shown as not certified
                ends.append((count, name, None, None))
                continue
            ctx.record(STATEMENT, SLUG, f"plus_one_descent_k{k}_{float(p.loss[0]):.6f}", True,
                       wide_critical_point_certificate(p))
            ends.append((count, name, float(p.loss[0]), p.minimum))
        spurious = sum(r.lands_in != "global minimum" for r in e.runs)
        table.append((k, runs, spurious, PUBLISHED_PLUS_ONE.get(k), ends))
    ctx.findings["plus_one_descent"] = table

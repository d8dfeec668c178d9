"""REPORT.md and report.html of a reproduction run, with its figures."""

from __future__ import annotations

import html
import re
from fractions import Fraction
from pathlib import Path

from certsym.io import html as page
from certsym.landscape.descent import wilson
from certsym.reproduce import Context, Row
from certsym.reproduce import figures as fig
from certsym.reproduce.worked_examples import load_pair

INDEPENDENCE = (
    "Independent checks compare certsym's verdict with an oracle that shares none of its decision code: the m = 1 "
    "breakpoint oracle (values at every breakpoint and beyond), the restriction oracle for m >= 2 (the difference is "
    "restricted to every hyperplane of the arrangement, recursively down to m = 1), z3 over the reals where it is "
    "installed, a brute-force implementation of MATH.md's identifiability decision with sympy ranks, brute-force "
    "fibres inside integer grids, brute-force stabilizers over S_n, and a reduction by moves 1-3 in random order. "
    "Self-consistency checks compare certsym with the construction of the instance (a planted copy, a disguise) or "
    "with its own certificate. Disagreements are counted by kind; refusals are counted and must be 0.")

NO_FIGURES = "No figures: drawing them needs matplotlib (pip install certsym[figures])."


def _figures(out: Path, ctx: Context) -> list[tuple[str, str]]:
    """Draw the report's figures into ``out``: (caption, file) for each."""
    figures = []
    for name in ("E5", "E4"):
        t1, t2 = load_pair(name)
        title = fig.m1_pair(t1, t2, f"{name}: two parameters, one function", out / f"{name}_m1.png")
        figures.append((f"{title}: both realized functions of an equivalent pair (solid and dashed coincide)",
                        f"{name}_m1.png"))
    t1, _ = load_pair("E6")
    fig.m2_arrangement(t1, "E6: hyperplane arrangement and kinks", out / "E6_m2.png")
    figures.append(("E6 (m = 2): the hyperplane arrangement with its kink values J_H", "E6_m2.png"))
    if ctx.landscape:
        fig.loss_against_k(ctx.landscape, out / "landscape_loss.png")
        figures.append(("Teacher-student loss: certified critical values of each family against k (log-log; filled "
                        "markers are certified local minima, open ones saddles; negative-diagonal, wide and pale, lies "
                        "just under good-plus-negative)", "landscape_loss.png"))
    return figures


def write_report(out: Path, ctx: Context, rows: list[Row], rejected: list[str]) -> list[tuple[str, str]]:
    """Write the figures, REPORT.md and report.html into ``out``; return the (caption, file) figures."""
    out.mkdir(parents=True, exist_ok=True)
    figures = _figures(out, ctx) if fig.available() else []
    ok = all(r.reproduced for r in rows) and not rejected
    head = Row.HEADERS
    cells = [r.cells() for r in rows]
    verdict = "Every statement reproduced and every certificate checked." if ok else "NOT everything reproduced."
    md = ["# certsym reproduce", "", verdict, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(c) + " |" for c in cells]
    md += ["", INDEPENDENCE, ""]
    md += ["", f"Certificates: {len(ctx.written)} written under `certificates/`, each replayed from disk by the "
           "independent checker" + (f"; rejected: {', '.join(rejected)}" if rejected else "."), ""]
    extra = [f"- {r.statement}: failed instance {f}" for r in rows for f in r.failures[:10]]
    extra += _landscape_tables(ctx)
    md += extra
    md += ["", "## Figures", ""] + ([f"![{cap}]({file})\n\n{cap}\n" for cap, file in figures] or [NO_FIGURES])
    (out / "REPORT.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    # the page: the verdict, then the figures (seen without scrolling), then the tables and the certificates
    body = [f"<p class='verdict {'holds' if ok else 'fails'}'>{page.esc(verdict)}</p>",
            "<h2>Figures</h2>", "".join(page.figure(f, c) for c, f in figures) or f"<p>{page.esc(NO_FIGURES)}</p>",
            "<h2>Statements</h2>", page.table(list(head), [list(c) for c in cells]),
            f"<p>{page.esc(INDEPENDENCE)}</p>", _html(extra), "<h2>Certificates</h2>",
            f"<p>{len(ctx.written)} certificates written under certificates/ and replayed from disk by the independent "
            "checker" + (f"; rejected: {page.esc(', '.join(rejected))}" if rejected else "") + ". Replay them all: "
            "<code>certsym check certificates/*/*.json</code></p>",
            page.links([(rel, f"certificates/{rel}") for rel in ctx.written], f"the {len(ctx.written)} certificates")]
    (out / "report.html").write_text(page.page("certsym reproduce", body), encoding="utf-8")
    return figures


def _share_row(k: int, runs: int, spurious: int, published: float | None, cells: str) -> str:
    """A row of a descent table: the share with its 95% Wilson interval, the published share, and whether the
    interval holds it."""
    lo, hi = wilson(spurious, runs)
    inside = "—" if published is None else "yes" if 100 * lo <= published <= 100 * hi else "no"
    shown = "—" if published is None else f"{published}%"
    return (f"| {k} | {runs} | {spurious} | {100 * spurious / runs:.1f}% ({100 * lo:.1f}–{100 * hi:.1f}%) | {shown} "
            f"| {inside} | {cells} |")


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def formula(text: str) -> str:
    """A sympy expression as the report prints it: π for pi, superscript powers, √ for sqrt and · for a
    product ("(-2 + pi)*(2 + pi)/(2*pi**2)" becomes "(−2 + π)·(2 + π)/(2·π²)")."""
    text = re.sub(r"\bpi\b", "π", text)
    text = re.sub(r"\*\*(?:\((-?\d+)\)|(\d+))", lambda m: (m[1] or m[2]).translate(_SUPERSCRIPT), text)
    text = text.replace("sqrt(", "√(").replace("*", "·")
    return re.sub(r"(?<![\w)])-", "−", text)


def _inline(text: str) -> str:
    """One line of the report's Markdown as HTML: escaped, `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _html(lines: list[str]) -> str:
    """The report's Markdown lines (headings, tables, bullets, paragraphs) as HTML, so that report.html carries
    every table REPORT.md has."""
    esc = _inline
    out, table, bullets = [], [], []

    def flush() -> None:
        if table:
            head, *body = table
            out.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in head) + "</tr>" + "".join(
                "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in body) + "</table>")
            table.clear()
        if bullets:
            out.append("<ul>" + "".join(f"<li>{esc(b)}</li>" for b in bullets) + "</ul>")
            bullets.clear()

    for line in lines:
        if line.startswith("|"):
            if bullets:
                flush()
            if not set(line) <= set("|-: "):
                table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        if line.startswith("- "):
            if table:
                flush()
            bullets.append(line[2:])
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{esc(line[3:])}</h2>")
        elif line.strip():
            out.append(f"<p>{esc(line)}</p>")
    flush()
    return "".join(out)


def _landscape_tables(ctx: Context) -> list[str]:
    """The second paper's findings as Markdown tables (empty when the landscape module did not run)."""
    f = ctx.findings
    md: list[str] = []
    if ctx.crossings:
        md += ["", "## Teacher-student landscape", "", "Saddle → local minimum (certified at k − 1 and k): "
               + ", ".join(f"{name} at k = {k}" for name, k in ctx.crossings.items()) + "."]
    if "crossing" in f:
        md += ["", "The restricted loss is analytic in the block sizes, so it makes sense for real k. Bisecting on "
               "exact dyadic k between those two integers, each family's branch of critical points is certified for "
               "every k in a bracket [a, b] at once (one Krawczyk box over the interval of k), with a compressed "
               "Hessian certified to have a negative eigenvalue at a and every compressed Hessian of the isotypic "
               "table certified positive definite at b: the threshold k* lies in (a, b). Each bracket is a "
               "`landscape_threshold` certificate (landscape/NAME_real_k_threshold.json), replayed by `certsym check`:",
               ""]
        md += [f"- {name}: k* in [{b[0]}, {b[1]}] = [{float(Fraction(b[0])):.9f}, {float(Fraction(b[1])):.9f}]"
               if b else f"- {name}: not bracketed" for name, b in f["crossing"]]
    if "series" in f:
        md += ["", "Critical points and critical values as series in t = k^(-1/2), derived exactly by solving the "
               "restricted critical-point equations order by order (certsym/landscape/expansion.py; "
               "`certsym landscape series --family NAME --order N`), beside least-squares fits of the certified "
               "critical points at k = 10^4 … 10^12 (certsym/landscape/series.py; fit uncertainty = change between "
               "fit degrees 8 and 9). k*F and F are the critical values."]
        for name, seconds, rows in f["series"]:
            md += ["", f"{name} (derived in {seconds} s):", "",
                   "| series | power | exact | value | fit | difference | fit uncertainty |",
                   "|---|---|---|---|---|---|---|"]
            md += [f"| {n} | t^{p} | {formula(ex)} | {v} | {ft or '—'} | {d or '—'} | {u or '—'} |"
                   for n, p, ex, v, ft, d, u in rows]
    if "limits" in f:
        md += ["", "Limits as k → ∞, the leading exact coefficients above: M misfit neurons cost k·F → M times "
               "one-misfit's 1/2 − 2/π² = 0.29736…; the families with negative entries keep a loss F → 1/2 − 1/π."]
        md += [f"- {name}: k·F → {formula(ex)} = {value:.12f} = {m} × (1/2 − 2/π²)" if m else
               f"- {name}: F → {formula(ex)} = {value:.12f} = 1/2 − 1/π" for name, ex, value, m in f["limits"]]
    if ctx.landscape:
        ks = sorted({k for points in ctx.landscape.values() for k, _, _ in points})
        names = sorted(ctx.landscape)
        scaled = [n for n in names if "misfit" in n]  # their loss decays like 1/k: k·F tends to a constant
        md += ["", "The certified critical values against k: F, and k·F for the misfit families, whose loss decays "
               "like 1/k (the others tend to a positive constant); “min” marks a certified local minimum, "
               "“saddle” a certified saddle.", "",
               "| k | " + " | ".join(f"{n}: F" + (f" | {n}: k·F" if n in scaled else "") for n in names) + " |",
               "|---|" + "---|" * (len(names) + len(scaled))]
        for k in ks:
            cells = []
            for n in names:
                hit = next(((F, neg) for kk, F, neg in ctx.landscape[n] if kk == k), None)
                kind = "" if hit is None else "min" if hit[1] == 0 else "saddle" if hit[1] else "inertia not certified"
                cells.append("—" if hit is None else f"{hit[0]:.6g} ({kind})")
                if n in scaled:
                    cells.append("—" if hit is None else f"{k * hit[0]:.6g}")
            md.append(f"| {k:g} | " + " | ".join(cells) + " |")
    if "added_neuron" in f:
        md += ["", "One neuron added (n = k + 1) to the certified one-misfit minimum W* "
               "(certsym/landscape/added_neuron.py; `certsym landscape add-neuron --family one-misfit --k K`). "
               "Splitting a row w_i into w_i/2 and w_i/2 gives a critical point of F on M(k+1, k) (positive "
               "homogeneity); the certificates show k − 1 negative eigenvalues on directions (y, −y) of the two "
               "copies (Courant–Fischer): a saddle; with W*'s certified inertia (0 negative) for the swap-symmetric "
               "part and the split segment's tangent in the kernel, the inertia is exactly (k − 1, 1, k²). "
               "The zero neuron [W*; 0] has a direction û with "
               "g(û) < 0, so F([W*; εû]) < F(W*): not a local minimum either. So W* "
               "is a minimum of the k-neuron loss that does not survive as a minimum in either embedding. The "
               "spectrum counts (negative / zero / positive) are the floating-point check of the certified "
               "inertia; the smallest eigenvalue is floating point.", "",
               "| k | F(W*) | zero neuron: g(û); descent ends at | split good row: certified inertia (numerical "
               "spectrum); smallest eigenvalue; descent ends at | split misfit row: the same |",
               "|---|---|---|---|---|"]
        for k, value, g, zero_end, splits in f["added_neuron"]:
            cells = [f"({q}, 1, {k * k}) ({s[0]}/{s[1]}/{s[2]}); {low:.4f}; {end}" for _, q, s, low, end in splits]
            md.append(f"| {k} | {value:.6f} | {g:.5f}; {zero_end} | " + " | ".join(cells) + " |")
        md += ["", "Descent from a saddle starts 10^-3 along its most negative certified direction (the zero neuron: "
               "along û), step 4/k, until max |∇F| < 10^-9. The spurious end points from the split misfit row are "
               "certified (kind wide_critical_point: Krawczyk in the fixed-point space of their isotropy, found as "
               "row-and-column transposition pairs, and interval Cholesky of the full Hessian): from k = 7 a new "
               "spurious minimum below F(W*), two misfit neurons sharing the uncovered teacher; at k = 6 a saddle."]
    if "added_neuron_families" in f:
        md += ["", "One neuron added to the other families that are spurious minima, at k where each is a certified "
               "local minimum (inertia 0 negative at n = k). At n = k + 1 every split of a block's first row in "
               "halves is a certified saddle (at least the number of negative eigenvalues shown, on directions "
               "(y, −y)) and the zero neuron has a certified descent direction (g(û) < 0): one added neuron leaves "
               "neither embedding a minimum, for every family. The families differ in where descent from those "
               "saddles leads: the columns give its end points, each spurious one certified in its fixed-point "
               "space. A certified minimum there is a spurious minimum of the (k + 1)-neuron loss that the added "
               "neuron did not remove (the annihilation paper's point that minima of lower symmetry need more "
               "added neurons, seen here at n = k + 1 only).", "",
               "| family | k | F(W*) | zero neuron: g(û); descent ends at | splits: row (negative directions); "
               "descent ends at |", "|---|---|---|---|---|"]
        for name, k, value, g, splits, ends in f["added_neuron_families"]:
            cells = "; ".join(f"row {row} ({neg}): {end}" for (row, neg), end in zip(splits, ends[1:], strict=True))
            md.append(f"| {name} | {k} | {value:.6f} | {g:.5f}; {ends[0]} | {cells} |")
    if "spectrum" in f:
        md += ["", "Exact spectrum of the Hessian at W = I for k = 10 (the closed form for every k is in "
               "certsym/landscape/spectrum.py): " + ", ".join(f"{formula(str(r))} (×{m})" for r, m in f["spectrum"])
               + "."]
    if "distance" in f:
        md += ["", "| k | max distance one-misfit ↔ W = I spectra | mean distance |", "|---|---|---|"]
        md += [f"| {k} | {a:.4f} | {b:.4f} |" for k, a, b in f["distance"]]
    if "descent" in f:
        md += ["", "Safran and Shamir's experiment: gradient descent on the exact population loss from W_ij ~ "
               "N(0, 1/k) (their protocol; seed 2018, step 4/k, until max |∇F| < 10^-6; spurious: F ≥ 10^-3), "
               "beside the published shares (1000 runs each). The end points are grouped by the family they reach "
               "(each family's critical point is certified above).", "",
               "| k | runs | spurious | share (95% interval) | published | inside | end points (runs) |",
               "|---|---|---|---|---|---|---|"]
        for k, runs, spurious, published, counts in f["descent"]:
            md.append(_share_row(k, runs, spurious, published,
                                 ", ".join(f"{name}: {c}" for name, c in counts.items())))
    if "plus_one_descent" in f:
        md += ["", "The same with one neuron added (n = k + 1; W_ij ~ N(0, 1/k) for all (k + 1) × k weights), beside "
               "the published shares at n = k + 1 (0.0: about 0). Every distinct spurious end point is certified in "
               "its fixed-point space (wide_critical_point, replayed).", "",
               "| k | runs | spurious | share (95% interval) | published | inside | spurious end points "
               "(runs: certified F) |", "|---|---|---|---|---|---|---|"]
        for k, runs, spurious, published, ends in f["plus_one_descent"]:
            cells = "; ".join(f"{c}: F = {v:.7f}" + (" minimum" if m else " saddle") if v is not None else
                              f"{c}: {name} (not certified)" for c, name, v, m in ends) or "—"
            md.append(_share_row(k, runs, spurious, published, cells))
    return md

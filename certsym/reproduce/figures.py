"""Pictures for the reproduction report (matplotlib, written as PNG; an optional extra, ``certsym[figures]``).
Floats are used only to draw."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from certsym.core.canonical import canonical_form
from certsym.core.network import Network
from certsym.reproduce.oracle import probe_points


def available() -> bool:
    """Whether matplotlib is installed (the report is written without figures otherwise)."""
    return importlib.util.find_spec("matplotlib") is not None


def _pyplot():
    import matplotlib  # optional: the figures extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the backend

    return plt


def m1_pair(t1: Network, t2: Network, title: str, path: Path) -> str:
    """Both realized functions of an equivalent univariate pair, with the function's kinks (the hyperplanes with
    J_H ≠ 0) marked; returns the title used, which says when there is no kink (a neuron's breakpoint is a kink of
    the function only when the kinks on it do not cancel)."""
    plt = _pyplot()
    pts = probe_points(t1, t2)
    span = float(pts[-1] - pts[0]) or 1.0
    xs = [pts[0] - t1.field(1)] + pts + [pts[-1] + t1.field(1)]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for net, style, label in ((t1, "-", "ρ(θ1)"), (t2, "--", "ρ(θ2)")):
        ys = [float(net.field.approx(net.evaluate([x])[0]).mid()) if hasattr(net.field, "approx")
              else float(net.evaluate([x])[0]) for x in xs]
        ax.plot([float(x) for x in xs], ys, style, lw=2, label=label)
    kinks = [-key[1] for key, J in canonical_form(t1).kinks.items() if any(j != 0 for j in J)]
    for b in kinks:
        ax.plot([float(b)], [float(t1.evaluate([b])[0])], "o", color="black", label="kink" if b == kinks[0] else None)
    title = f"{title} (kinks marked)" if kinks else f"{title} (no kink: the function is affine)"
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel("ρ(θ)(x)")
    ax.set_xlim(float(xs[0]) - 0.05 * span, float(xs[-1]) + 0.05 * span)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return title


def _equation(coeffs: list, names: list[str], constant) -> str:
    """'x − y + 1 = 0' from exact coefficients (zero terms dropped, signs written once)."""
    terms = []
    for c, name in [*zip(coeffs, names, strict=True), (constant, "")]:
        if c == 0:
            continue
        magnitude = abs(c)
        body = name if magnitude == 1 and name else f"{magnitude}{'·' + name if name else ''}"
        terms.append(("−" if c < 0 else "+", body))
    if not terms:
        return "0 = 0"
    first_sign, first = terms[0]
    text = ("−" if first_sign == "−" else "") + first
    return text + "".join(f" {sign} {body}" for sign, body in terms[1:]) + " = 0"


def m2_arrangement(t: Network, title: str, path: Path) -> None:
    """The hyperplane (line) arrangement of an m = 2 network, each line labelled with its kink J_H."""
    plt = _pyplot()
    canon = canonical_form(t)
    fig, ax = plt.subplots(figsize=(4.6, 4.6))
    lim = 3.0
    for key, J in canon.kinks.items():
        u1, u2, beta = (float(x) for x in key)
        if abs(u2) > 1e-12:
            xs = [-lim, lim]
            ys = [-(u1 * x + beta) / u2 for x in xs]
        else:
            xs, ys = [-beta / u1] * 2, [-lim, lim]
        ax.plot(xs, ys, lw=2, label=f"{_equation([key[0], key[1]], ['x', 'y'], key[2])}:  J = "
                f"{', '.join(str(j) for j in J)}")
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=8, loc="lower left", title="J = the jump in slope across the line", title_fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def loss_against_k(data: dict[str, list[tuple[int, float, int | None]]], path: Path) -> None:
    """Log-log plot of the certified loss of each family against k (filled: local minimum, open: saddle)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    # (line style, marker, width, marker size, alpha): negative-diagonal and good-plus-negative nearly coincide, so
    # the first is drawn wide and pale underneath, the second thin on top, and both stay visible
    styles = {"negative-diagonal": ("-", "s", 7.0, 11, 0.35)}
    others = [("-", "o", 2.0, 6, 1.0), (":", "^", 2.0, 6, 1.0), ("-", "D", 1.2, 4, 1.0), ("-.", "v", 2.0, 6, 1.0)]
    plain = iter(others * len(data))
    for name, points in data.items():
        points = sorted(points)
        dash, marker, width, size, alpha = styles[name] if name in styles else next(plain)
        line, = ax.loglog([k for k, _, _ in points], [f for _, f, _ in points], dash, lw=width, label=name,
                          alpha=alpha, zorder=2 if name in styles else 3)
        for k, f, neg in points:
            ax.plot([k], [f], marker, ms=size, alpha=alpha, color=line.get_color(),
                    fillstyle="full" if neg == 0 else "none", zorder=2 if name in styles else 3)
    ax.set_xlabel("k")
    ax.set_ylabel("F at the critical point")
    ax.set_title("Certified critical values against k")
    # the marker fill is a second key: say it in the legend, not only in the caption
    ax.plot([], [], "o", color="0.4", fillstyle="full", label="filled: certified local minimum")
    ax.plot([], [], "o", color="0.4", fillstyle="none", label="open: certified saddle")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

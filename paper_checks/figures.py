"""Pictures for the reproduction report (matplotlib, written as PNG). Floats are used only to draw."""

from __future__ import annotations

from pathlib import Path

from certsym.canonical import canonical_form
from certsym.network import Network
from paper_checks.oracle import breakpoints, probe_points


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def m1_pair(t1: Network, t2: Network, title: str, path: Path) -> None:
    """Both realized functions of an equivalent univariate pair, kinks marked."""
    plt = _pyplot()
    pts = probe_points(t1, t2)
    span = float(pts[-1] - pts[0]) or 1.0
    xs = [pts[0] - t1.field(1)] + pts + [pts[-1] + t1.field(1)]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for net, style, label in ((t1, "-", "ρ(θ1)"), (t2, "--", "ρ(θ2)")):
        ys = [float(net.field.approx(net.evaluate([x])[0]).mid()) if hasattr(net.field, "approx")
              else float(net.evaluate([x])[0]) for x in xs]
        ax.plot([float(x) for x in xs], ys, style, lw=2, label=label)
    for net, marker in ((t1, "o"), (t2, "x")):
        for b in breakpoints(net):
            ax.plot([float(b)], [float(net.evaluate([b])[0])], marker, color="black")
    ax.set_title(title)
    ax.set_xlim(float(xs[0]) - 0.05 * span, float(xs[-1]) + 0.05 * span)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
        line = " + ".join(f"{c}·{v}" for c, v in ((key[0], "x"), (key[1], "y")) if c != 0)
        ax.plot(xs, ys, lw=2, label=f"{line} + {key[2]} = 0:  J = {', '.join(str(j) for j in J)}")
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def loss_against_k(data: dict[str, list[tuple[int, float, int | None]]], path: Path) -> None:
    """Log-log plot of the certified loss of each family against k (filled: local minimum, open: saddle)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in data.items():
        points = sorted(points)
        line, = ax.loglog([k for k, _, _ in points], [f for _, f, _ in points], "-", label=name)
        for k, f, neg in points:
            ax.plot([k], [f], "o", color=line.get_color(), fillstyle="full" if neg == 0 else "none")
    ax.set_xlabel("k")
    ax.set_ylabel("F at the critical point")
    ax.set_title("Certified critical values against k")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

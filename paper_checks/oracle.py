"""An outside oracle for m = 1: a univariate piecewise-linear function is determined by its values
at its breakpoints and at one point beyond each end.

It uses only exact evaluation of ρ(θ) (no reduction, no kink invariants), so it can check the
decision procedures of certsym from the outside. Cost: O(n log n) evaluations of O(n) each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from certsym.network import Network
from certsym.numbers import Scalar


def breakpoints(net: Network) -> list[Scalar]:
    """The points t = −b_i / a_i where a neuron of a univariate network may kink."""
    if net.m != 1:
        raise ValueError("breakpoints are defined for m = 1 only")
    return [-bi / row[0] for row, bi in zip(net.A, net.b, strict=True) if row[0] != 0]


def probe_points(*nets: Network) -> list[Scalar]:
    """Sorted breakpoints of all networks plus one point left and one right of them all.

    Two univariate PL functions whose breakpoints lie in this set agree everywhere iff they
    agree at these points: on each bounded piece both are affine and agree at its ends, and on
    each unbounded piece they agree at two points.
    """
    pts = sorted(set(t for net in nets for t in breakpoints(net)))
    if not pts:
        field = nets[0].field
        return [field.zero, field.one]
    return [pts[0] - 1, *pts, pts[-1] + 1]


def same_function_m1(
    f: Network, g: Network | Callable[[Scalar], Sequence[Scalar]]
) -> tuple[bool, int]:
    """Decide f = g on R for m = 1 (g a network, or an affine map given as a callable).

    Returns (verdict, number of points evaluated).
    """
    nets = [f] + ([g] if isinstance(g, Network) else [])
    pts = probe_points(*nets)
    other = g.evaluate if isinstance(g, Network) else (lambda x: list(g(x[0])))
    return all(f.evaluate([t]) == other([t]) for t in pts), len(pts)

"""The closed forms of ``kernel`` in arb ball arithmetic: every result is a ball that contains the exact
value for the (exact, rational) input. Used to certify, never to decide equality.

The angle is computed as 2 atan2(‖ŵ − v̂‖, ‖ŵ + v̂‖), which stays a finite ball near parallel vectors; the
kernel is only C¹ there.
Cost: as in ``kernel``, times the cost of ball operations at the working precision.
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import arb, ctx

Vector = list[arb]


def _dot(a: Sequence[arb], b: Sequence[arb]) -> arb:
    acc = arb(0)
    for x, y in zip(a, b, strict=True):
        acc += x * y
    return acc


def _norm(a: Sequence[arb]) -> arb:
    return _dot(a, a).nonnegative_part().sqrt()


def _angle(w: Sequence[arb], v: Sequence[arb]) -> tuple[arb, arb, arb, arb]:
    """‖w‖, ‖v‖, cos θ, θ; θ = 2 atan2(‖ŵ − v̂‖, ‖ŵ + v̂‖) stays finite for (nearly) parallel vectors,
    where acos of a ball around ±1 would not."""
    nw, nv = _norm(w), _norm(v)
    u = [x / nw for x in w]
    t = [x / nv for x in v]
    theta = 2 * arb.atan2(_norm([a - b for a, b in zip(u, t, strict=True)]),
                          _norm([a + b for a, b in zip(u, t, strict=True)]))
    return nw, nv, theta.cos(), theta


def kappa(w: Sequence[arb], v: Sequence[arb]) -> arb:
    """E[σ(w·x)σ(v·x)]; zero when w or v is zero."""
    if all(x == 0 for x in w) or all(x == 0 for x in v):
        return arb(0)
    nw, nv, cos, theta = _angle(w, v)
    return nw * nv * (theta.sin() + (arb.pi() - theta) * cos) / (2 * arb.pi())


def loss(W: Sequence[Sequence], prec: int = 128) -> arb:
    """F(W) for the teacher V = I_k, as a ball (entries of W: anything arb accepts, e.g. fmpq)."""
    with ctx.workprec(prec):
        Wb = [[arb(x) for x in row] for row in W]
        k = len(Wb[0])  # the teacher is I_k, k = the number of columns
        V = [[arb(int(i == j)) for j in range(k)] for i in range(k)]
        total = arb(0)
        for a in Wb:
            for b in Wb:
                total += kappa(a, b) / 2
            for b in V:
                total -= kappa(a, b)
        for a in V:
            for b in V:
                total += kappa(a, b) / 2
        return total


def gradient(W: Sequence[Sequence], prec: int = 128) -> list[list[arb]]:
    """∇F(W) as balls, row i = ∇_{w_i} F."""
    with ctx.workprec(prec):
        Wb = [[arb(x) for x in row] for row in W]
        d = len(Wb[0])
        V = [[arb(int(i == j)) for j in range(d)] for i in range(d)]
        out = []
        for w in Wb:
            g = [arb(0)] * d
            for u, sign in [(u, 1) for u in Wb] + [(v, -1) for v in V]:
                if all(x == 0 for x in w) or all(x == 0 for x in u):
                    continue
                nw, nu, cos, theta = _angle(w, u)
                coef_w = nu * theta.sin() / nw / (2 * arb.pi())
                coef_u = (arb.pi() - theta) / (2 * arb.pi())
                g = [gi + sign * (coef_w * wi + coef_u * ui) for gi, wi, ui in zip(g, w, u, strict=True)]
            out.append(g)
        return out

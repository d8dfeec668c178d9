"""A family's critical points as power series in t = k^{-1/2}, fitted numerically (MATH.md, Part II).

The numerical counterpart of ``expansion`` (which derives the coefficients exactly) and its independent check:
the critical point is computed at k = 10^4 … 10^12 (continuation in k, then Newton in arb at 300 bits,
``certify.refine``), and each parameter is fitted by a polynomial in t of degree J by least squares in mpmath at
60 digits, for two degrees J and J + 1. A coefficient is reported with the change between the two fits as its
uncertainty. The loss is fitted too, as k·F (or F for the families whose loss has a positive limit).
Cost: about a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath as mpm
from flint import arb, ctx

from certsym.landscape import restricted
from certsym.landscape.certify import refine
from certsym.landscape.families import FAMILIES, continue_in_k
from certsym.landscape.restricted import ArbBackend

KS = tuple(int(10 ** (4 + 0.5 * i)) for i in range(17))


@dataclass
class Coefficient:
    """The coefficient of t^power in one parameter's series."""

    power: int            # the coefficient of t^power
    value: mpm.mpf
    uncertainty: mpm.mpf  # |fit(J) − fit(J + 1)|


@dataclass
class ParameterSeries:
    """One parameter's (or k·F's) leading coefficients and the fit residual."""

    name: str
    coefficients: list[Coefficient]
    residual: mpm.mpf     # max |fit − value| over the sample, degree J


def fit(family: str = "one-misfit", degree: int = 8, report: int = 6) -> list[ParameterSeries]:
    """The first ``report`` coefficients of each parameter's series in t = k^{-1/2} and of k^{v/2}·F (v = 2 for
    one-misfit and two-misfit, whose loss decays like 1/k, else 0), by least squares (module docstring)."""
    fam = FAMILIES[family]
    scale = 1 if family in ("one-misfit", "two-misfit") else 0
    with mpm.workdps(60):
        points = []
        for p in continue_in_k(fam, list(KS)):
            if p.k in KS:
                layout = fam.layout(p.k)
                center = refine(layout, p.result.x, 300)
                with ctx.workprec(300):
                    kF = restricted.loss(layout, [arb(v) for v in center], ArbBackend(300)) * p.k**scale
                values = [mpm.mpf(int(v.p)) / int(v.q) for v in center] + [mpm.mpf(kF.mid().str(70, radius=False))]
                points.append((1 / mpm.sqrt(p.k), values))
        out = []
        for index, name in enumerate([*fam.layout(KS[0]).names, "k*F" if scale else "F"]):
            fits = [_fit(points, index, J) for J in (degree, degree + 1)]
            coefficients = []
            for j in range(report):
                value, other = fits[0][0][j], fits[1][0][j]
                uncertainty = abs(value - other)
                coefficients.append(Coefficient(j, value, uncertainty))
            out.append(ParameterSeries(name, coefficients, fits[0][1]))
        return out


def _fit(points: list, index: int, J: int) -> tuple[list, mpm.mpf]:
    A = mpm.matrix([[t**j for j in range(J + 1)] for t, _ in points])
    b = mpm.matrix([x[index] for _, x in points])
    coef, _ = mpm.qr_solve(A, b)
    residual = max(abs(sum(coef[j] * t**j for j in range(J + 1)) - x[index]) for t, x in points)
    return [coef[j] for j in range(J + 1)], residual

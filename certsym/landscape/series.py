"""The one-misfit critical points as power series in t = k^{-1/2} (MATH.md, Part II; Arjevani & Field).

Evidence, not proof: the critical point is computed at k = 10^4 … 10^12 (continuation in k, then Newton in arb
at 300 bits, ``certify.refine``), and each parameter is fitted by a polynomial in t of degree J by least
squares in mpmath at 60 digits, for two degrees J and J + 1. A coefficient is reported with the change between
the two fits as its uncertainty, and with a closed form when ``mpmath.identify`` finds one with small rationals in
terms of 1/π that agrees to the stated uncertainty. The loss is fitted too, as k·F. Cost: about a second.
"""

from __future__ import annotations

import re
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
    closed_form: str | None


@dataclass
class ParameterSeries:
    """One parameter's (or k·F's) leading coefficients and the fit residual."""

    name: str
    coefficients: list[Coefficient]
    residual: mpm.mpf     # max |fit − value| over the sample, degree J


def one_misfit_series(degree: int = 8, report: int = 6, family: str = "one-misfit") -> list[ParameterSeries]:
    """The first ``report`` coefficients of each parameter's series in t = k^{-1/2} (module docstring)."""
    fam = FAMILIES[family]
    with mpm.workdps(60):
        points = []
        for p in continue_in_k(fam, list(KS)):
            if p.k in KS:
                layout = fam.layout(p.k)
                center = refine(layout, p.result.x, 300)
                with ctx.workprec(300):
                    kF = restricted.loss(layout, [arb(v) for v in center], ArbBackend(300)) * p.k
                values = [mpm.mpf(int(v.p)) / int(v.q) for v in center] + [mpm.mpf(kF.mid().str(70, radius=False))]
                points.append((1 / mpm.sqrt(p.k), values))
        out = []
        for index, name in enumerate([*fam.layout(KS[0]).names, "k*F"]):
            fits = [_fit(points, index, J) for J in (degree, degree + 1)]
            coefficients = []
            for j in range(report):
                value, other = fits[0][0][j], fits[1][0][j]
                uncertainty = abs(value - other)
                coefficients.append(Coefficient(j, value, uncertainty, _identify(value, uncertainty)))
            out.append(ParameterSeries(name, coefficients, fits[0][1]))
        return out


def _fit(points: list, index: int, J: int) -> tuple[list, mpm.mpf]:
    A = mpm.matrix([[t**j for j in range(J + 1)] for t, _ in points])
    b = mpm.matrix([x[index] for _, x in points])
    coef, _ = mpm.qr_solve(A, b)
    residual = max(abs(sum(coef[j] * t**j for j in range(J + 1)) - x[index]) for t, x in points)
    return [coef[j] for j in range(J + 1)], residual


def _identify(value: mpm.mpf, uncertainty: mpm.mpf) -> str | None:
    """A closed form in 1/π that agrees with ``value`` within its uncertainty (and at least 8 digits)."""
    if uncertainty > 1e-9 * max(1, abs(value)):
        return None
    if abs(value) <= 10 * uncertainty:
        return "0"
    found = mpm.identify(value, ["1/pi", "1/pi**2"], tol=float(max(uncertainty * 10, mpm.mpf(10) ** -40)))
    # only small rationals count: with enough freedom identify() fits anything
    return found if found and all(int(n) <= 32 for n in re.findall(r"\d+", found)) else None

"""Critical points and critical values as exact power series in t = k^{-1/2} (MATH.md, Part II; Arjevani & Field
derive them by the implicit function theorem, order by order).

Setting. A family's fixed-point space has block sizes p_α = a_α k + b_α, that is p_α = a_α t^{-2} + b_α. Each
parameter is a power series x_p(t) = Σ_{j ≥ v_p} x_{p,j} t^j. The restricted gradient ∂F/∂x_p (``restricted``,
run over the exact series of ``powerseries``: the arccos kernel expanded through √ and atan of series) is then a
Laurent series in t whose coefficients are rational functions of π and of the x_{p,j}; at a critical point every
one of them vanishes.

Method (undetermined coefficients, solved order by order). With the coefficients found so far substituted
exactly and the next coefficient of every parameter left as an unknown, each coefficient of each ∂F/∂x_p that the
inputs determine is a polynomial equation in the unknowns. The system is solved with sympy; an unknown whose value
comes out free of the other unknowns is accepted, an unknown the equations do not yet fix stays open while one
more order of every parameter is added, and so on until every parameter has the requested number of
coefficients. At the leading orders the equations are nonlinear (the implicit function theorem's base point:
d = 1, −1, c = 2, 4/π, …); above them they are linear in the new unknowns, with the matrix of the scaled Jacobian.
The loss F(x(t)) is then expanded the same way; the constant F(0) = k/4 + k(k−1)/(4π) is O(t^{-4}), so the
cancellation costs four orders, which the precision tracking of ``powerseries`` accounts for exactly.

Square roots. A leading coefficient M·q² (M square-free, as for two-misfit: the misfit block has size 2) has no
square root in Q(π, ξ); the solution then restarts over Q(√M)(π, ξ) (``powerseries.RationalFunctions`` with a
root), and the coefficients come out in Q(π, √M).

What numerics decide. The valuations v_p and the approximate leading coefficients come from the numerical
critical point at k = 10^6 and 10^8 (continuation in k). They choose the branch — the root of a polynomial
equation nearest the numerical point and the sign of a square root — and never a coefficient: every coefficient
is an exact element of Q(π), and the gradient series vanish identically to the stated order.

Cost: each round evaluates the restricted gradient once over series of length N with a few unknowns, O(r⁴ N²)
operations in Q(π, ξ), then one small sympy solve; a second or two for N = 8 for the two-block families.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sympy

from certsym.landscape import restricted
from certsym.landscape.families import Family, NewtonError, continue_in_k, family
from certsym.landscape.powerseries import NeedsRoot, RationalFunctions, Series, SeriesBackend, SeriesError
from certsym.landscape.restricted import Layout

REFERENCE_KS = (10**6, 10**8)
ROOT = sympy.Symbol("R")  # √M in the equations handed to sympy (kept a symbol: a polynomial domain)
MAX_ROUNDS = 60
MAX_ORDER = 10


class ExpansionError(RuntimeError):
    """The order-by-order solution failed: inconsistent equations, no progress, or a series the calculus of
    ``powerseries`` cannot expand."""


@dataclass(frozen=True)
class ExactSeries:
    """Σ_j coefficients[j] t^(valuation + j) + O(t^(valuation + len(coefficients))), coefficients exact in Q(π)."""

    name: str
    valuation: int
    coefficients: tuple[sympy.Expr, ...]

    def terms(self) -> list[tuple[int, sympy.Expr]]:
        """(power, coefficient) pairs."""
        return [(self.valuation + j, c) for j, c in enumerate(self.coefficients)]

    def evaluate(self, t: float, digits: int = 30) -> sympy.Float:
        """The truncated sum at t (for comparison with numerics)."""
        tt = sympy.Rational(t) if isinstance(t, int) else sympy.Float(t, digits)
        return sympy.N(sum(c * tt**p for p, c in self.terms()), digits)


@dataclass(frozen=True)
class Expansion:
    """A family's critical point as series in t = k^{-1/2}: its parameters and the scaled critical value
    t^{-v} F = k^{v/2} F (``loss.name`` is "k*F" when v = 2, "F" when v = 0)."""

    family: str
    parameters: tuple[ExactSeries, ...]
    loss: ExactSeries
    rounds: int
    seconds: float


def expand(name: str, order: int = 3) -> Expansion:
    """The series of family ``name``'s critical point to ``order`` coefficients beyond each leading term, and of
    its critical value (scaled to a nonzero limit) to ``order`` terms beyond its leading term (module docstring).
    Raises ExpansionError. Cost: about a second per order for the two-block families."""
    if not 0 <= order <= MAX_ORDER:
        raise ValueError(f"order must be from 0 to {MAX_ORDER}, got {order}")
    start = time.perf_counter()
    fam = family(name)
    structure, slopes = _structure(fam)
    valuations, reference = _reference(fam, structure)
    root = None  # √M joins the coefficients when a leading coefficient is M · (a square)
    while True:
        try:
            return _expand(fam.name, order, structure, slopes, valuations, reference, root, start)
        except NeedsRoot as exc:
            if root is not None:
                raise ExpansionError(f"the coefficients need √{root} and √{exc.M}") from None
            root = exc.M


def _expand(name: str, order: int, structure: Layout, slopes: list[tuple[int, int]], valuations: dict[str, int],
            reference: dict[str, float], root: int | None, start: float) -> Expansion:
    known: dict[str, list[sympy.Expr]] = {n: [] for n in structure.names}
    rounds = 0
    want = order + 1
    while True:
        rounds += _solve(structure, slopes, valuations, reference, known, want, root)
        loss = _loss(structure, slopes, valuations, known, root)
        if len(loss.coefficients) >= order + 1:
            loss = ExactSeries(loss.name, loss.valuation, loss.coefficients[:order + 1])
            break
        want += 2
        if want > MAX_ORDER + 8:
            raise ExpansionError("the loss series did not reach the requested order")
    def exact(c: sympy.Expr) -> sympy.Expr:
        return sympy.factor(c.subs(ROOT, sympy.sqrt(root))) if root else c

    parameters = tuple(ExactSeries(n, valuations[n], tuple(exact(c) for c in known[n][:order + 1]))
                       for n in structure.names)
    return Expansion(name, parameters, loss, rounds, time.perf_counter() - start)


def _structure(fam: Family) -> tuple[Layout, list[tuple[int, int]]]:
    """The layout (for its parameter names) and each block size as a·k + b."""
    small, large = fam.layout(20), fam.layout(40)
    slopes = []
    for p, q in zip(small.sizes, large.sizes, strict=True):
        a = (q - p) // 20
        slopes.append((a, p - 20 * a))
    return small, slopes


def _sizes(K: RationalFunctions, slopes: Sequence[tuple[int, int]]) -> list[Series]:
    return [Series.monomial(K, a, -2) + b if a else Series.constant(K, b) for a, b in slopes]


def _reference(fam: Family, structure: Layout) -> tuple[dict[str, int], dict[str, float]]:
    """Valuation and approximate leading coefficient of each parameter, from the numerical critical point at
    the two REFERENCE_KS."""
    try:
        points = continue_in_k(fam, [10**4, *REFERENCE_KS])[1:]
    except NewtonError as exc:
        raise ExpansionError(f"the family cannot be followed to k = {REFERENCE_KS[-1]:.0e}: {exc}") from None
    (k1, x1), (k2, x2) = [(p.k, dict(zip(p.result.layout.names, p.result.x, strict=True))) for p in points]
    t1, t2 = k1**-0.5, k2**-0.5
    valuations, reference = {}, {}
    for n in structure.names:
        a, b = abs(x1[n]), abs(x2[n])
        if a == 0 or b == 0:
            raise ExpansionError(f"parameter {n} vanishes at the reference points")
        v = round(math.log(a / b) / math.log(t1 / t2))
        valuations[n] = v
        reference[f"{n}_{v}"] = x2[n] / t2**v
    return valuations, reference


def _symbol(n: str, power: int) -> str:
    return f"{n}_{power}"


def _solve(structure: Layout, slopes: Sequence[tuple[int, int]], valuations: Mapping[str, int],
           reference: Mapping[str, float], known: dict[str, list[sympy.Expr]], want: int, root: int | None) -> int:
    """Extend ``known`` (exact coefficients from each valuation up) to ``want`` coefficients per parameter.
    Returns the number of rounds."""
    names = structure.names
    pending = {n: 0 for n in names}
    for rounds in range(1, MAX_ROUNDS + 1):
        if all(len(known[n]) >= want for n in names):
            return rounds - 1
        for n in names:
            pending[n] += 1
        unknowns = [_symbol(n, valuations[n] + len(known[n]) + j) for n in names for j in range(pending[n])]
        K = RationalFunctions(["P", *unknowns], root)
        gens = dict(zip(unknowns, K.gens[len(K.gens) - len(unknowns):], strict=True))
        x = []
        for n in names:
            coeffs = [K(c) for c in known[n]]
            coeffs += [gens[_symbol(n, valuations[n] + len(known[n]) + j)] for j in range(pending[n])]
            x.append(Series(K, valuations[n], coeffs, valuations[n] + len(coeffs)))
        B = SeriesBackend(K, {"P": math.pi, **{u: reference.get(u, 0.0) for u in unknowns}}, order=want + 8)
        try:
            G = restricted.gradient(structure, x, B, _sizes(K, slopes))
        except NeedsRoot:
            raise
        except SeriesError as exc:
            raise ExpansionError(str(exc)) from None
        equations = [sympy.fraction(sympy.together(c.as_expr(keep_root=True)))[0]
                     for g in G for c in B.number(g).coeffs if c != 0]
        symbols = [sympy.Symbol(u) for u in unknowns]
        solutions = sympy.solve(equations, symbols, dict=True) if equations else [{}]
        if not solutions:
            raise ExpansionError(f"the equations at round {rounds} have no solution")
        solution = min(solutions, key=lambda s: _distance(s, reference, root))
        for n in names:
            while pending[n]:
                value = solution.get(sympy.Symbol(_symbol(n, valuations[n] + len(known[n]))))
                if value is None or value.free_symbols - {ROOT}:
                    break
                known[n].append(sympy.factor(value))
                pending[n] -= 1
    raise ExpansionError(f"no solution after {MAX_ROUNDS} rounds")


def _distance(solution: Mapping[sympy.Symbol, sympy.Expr], reference: Mapping[str, float], root: int | None) -> float:
    """How far a solution's determined leading coefficients lie from the numerical point (branch choice)."""
    total = 0.0
    for s, v in solution.items():
        if not v.free_symbols - {ROOT} and s.name in reference:
            total += abs(complex(sympy.N(v.subs(ROOT, sympy.sqrt(root or 1)))) - reference[s.name])
    return total


def _loss(structure: Layout, slopes: Sequence[tuple[int, int]], valuations: Mapping[str, int],
          known: Mapping[str, list[sympy.Expr]], root: int | None) -> ExactSeries:
    """F(x(t)) from the known coefficients, scaled by t^{-v} to a nonzero limit."""
    K = RationalFunctions(["P"], root)
    x = [Series(K, valuations[n], [K(c) for c in known[n]], valuations[n] + len(known[n])) for n in structure.names]
    B = SeriesBackend(K, {"P": math.pi}, order=max(len(c) for c in known.values()) + 8)
    F = restricted.loss(structure, x, B, _sizes(K, slopes))
    if F.is_zero:
        return ExactSeries("F", F.prec, ())
    coefficients = tuple(sympy.factor(F.coefficient(j).as_expr()) for j in range(F.v, F.prec))
    name = "F" if F.v == 0 else "k*F" if F.v == 2 else f"k^{F.v}/2*F"
    return ExactSeries(name, 0, coefficients)


@dataclass(frozen=True)
class Agreement:
    """One exact coefficient beside its least-squares fit (``series.fit``): |exact − fit| and the fit's own
    uncertainty (the change between two fit degrees)."""

    name: str
    power: int
    exact: sympy.Expr
    value: float
    fit: float | None
    uncertainty: float | None

    @property
    def difference(self) -> float | None:
        return None if self.fit is None else abs(self.value - self.fit)

    def agrees(self, digits: int = 8) -> bool:
        """|exact − fit| ≤ 10^{-digits} · max(1, |exact|)."""
        return self.fit is not None and self.difference <= 10.0**-digits * max(1.0, abs(self.value))


def agreement(expansion: Expansion, fits: Sequence) -> list[Agreement]:
    """Pair each exact coefficient with the fitted coefficient of the same power and name (``series.fit``
    output: ParameterSeries, coefficient j of t^j). Cost: O(number of coefficients)."""
    fitted = {s.name: {c.power: c for c in s.coefficients} for s in fits}
    out = []
    for series in (*expansion.parameters, expansion.loss):
        for power, exact in series.terms():
            c = fitted.get(series.name, {}).get(power)
            out.append(Agreement(series.name, power, exact, float(sympy.N(exact, 30)),
                                 None if c is None else float(c.value), None if c is None else float(c.uncertainty)))
    return out

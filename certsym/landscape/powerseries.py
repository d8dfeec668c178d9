"""Truncated Laurent series in t with exact coefficients, and the arithmetic backend that lets ``restricted`` run
over them (MATH.md, Part II: the critical points as series in t = k^{-1/2}).

A ``Series`` is Σ_{i ≥ v} c_i t^i + O(t^prec): the coefficients lie in a rational function field
K = Q(P, ξ_1, ..., ξ_m) (``RationalFunctions``: fractions of python-flint ``fmpq_mpoly`` in lowest terms), where P
stands for π (transcendental, so Q(P) ≅ Q(π) and the zero test in K is exact) and the ξ are unknowns of the
order-by-order solution (``expansion``). Every operation tracks the absolute precision: a coefficient is
returned only if the inputs determine it, so cancellation (F(0) = k/4 + k(k−1)/(4π) is O(t^{-4}) while F is
O(t^2)) costs precision, never correctness.

Functions. 1/s, √s and atan(s) are the usual compositions with the binomial and arctangent series; √s needs an
even valuation and a leading coefficient that is a square in K (its square root is chosen positive at the
reference values, see ``SeriesBackend``), atan(s) needs s = O(t) or s = 1 + O(t) (then atan s = π/4 +
atan((s − 1)/(s + 1))) or 1/s = O(t) — the only cases the families' leading terms produce (angles 0, π/2, π at
k = ∞); anything else raises ``SeriesError``.

Cost: a product of two series with n known coefficients costs n² operations in K; a composition n³.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import flint
import sympy
from flint.utils.flint_exceptions import DomainError

INFINITE = 10**9  # the precision of an exact (finite) series


class SeriesError(ArithmeticError):
    """An operation the series calculus cannot perform exactly (a non-square leading coefficient, an odd
    valuation under √, an angle other than 0, π/4 or π/2 at t = 0, too little precision)."""


class NeedsRoot(SeriesError):
    """A leading coefficient is M · (a square) for a square-free integer M > 1: the coefficients need √M."""

    def __init__(self, M: int) -> None:
        super().__init__(f"the coefficients need √{M}")
        self.M = M


class RationalFunctions:
    """The field Q(g_1, ..., g_m) of rational functions in the named generators (the first one is P = π), or, with
    ``root`` = M (square-free, > 1), Q(√M)(g_1, …): the generator named "R" stands for √M, every numerator is
    reduced modulo R² − M and every denominator made free of R (multiplied by its conjugate), so that the
    representation stays canonical and the zero test exact (√M is irrational over Q(π, ξ))."""

    def __init__(self, names: Sequence[str], root: int | None = None) -> None:
        if root is not None:
            names = [names[0], "R", *names[1:]]
        self.ctx = flint.fmpq_mpoly_ctx.get(tuple(names), "lex")
        self.names = tuple(names)
        self.root = root
        self.gens = tuple(Fraction_(self, g, self.ctx.constant(1)) for g in self.ctx.gens())
        self.zero = self(0)
        self.one = self(1)

    def __call__(self, value: Any) -> Fraction_:
        if isinstance(value, Fraction_):
            if value.K is self:
                return value
            return self.from_expr(value.as_expr())
        if isinstance(value, Fraction):
            return Fraction_(self, self.ctx.constant(flint.fmpq(value.numerator, value.denominator)),
                             self.ctx.constant(1))
        if isinstance(value, int):
            return Fraction_(self, self.ctx.constant(value), self.ctx.constant(1))
        if isinstance(value, sympy.Expr):
            return self.from_expr(value)
        raise TypeError(f"cannot convert {value!r} to a rational function")

    def from_expr(self, expr: sympy.Expr) -> Fraction_:
        """A sympy expression in the generators (and π, read as P) as an element."""
        expr = sympy.sympify(expr).subs(sympy.pi, sympy.Symbol(self.names[0]))
        if self.root is not None:
            expr = expr.subs(sympy.sqrt(self.root), sympy.Symbol("R"))
        num, den = sympy.fraction(sympy.cancel(sympy.together(expr)))
        gens = [sympy.Symbol(n) for n in self.names]
        return self._poly(num, gens) / self._poly(den, gens)

    def _poly(self, expr: sympy.Expr, gens: list[sympy.Symbol]) -> Fraction_:
        poly = sympy.Poly(expr, *gens, domain=sympy.QQ)
        terms = {m: flint.fmpq(int(c.p), int(c.q)) for m, c in poly.terms()}
        return Fraction_(self, self.ctx.from_dict(terms) if terms else self.ctx.constant(0), self.ctx.constant(1))


class Fraction_:
    """An element n/d of ``RationalFunctions``: gcd(n, d) = 1 and d has leading coefficient 1."""

    __slots__ = ("K", "n", "d")

    def __init__(self, K: RationalFunctions, n: flint.fmpq_mpoly, d: flint.fmpq_mpoly) -> None:
        if d.is_zero():
            raise ZeroDivisionError("division by zero in Q(π, ξ)")
        if K.root is not None:
            n, d = _rationalize(K, n, d)
        if n.is_zero():
            d = K.ctx.constant(1)
        elif not d.is_constant():
            g = n.gcd(d)
            if not g.is_one():
                n, d = n / g, d / g
        lc = d.leading_coefficient()
        if lc != 1:
            n, d = n / lc, d / lc
        self.K, self.n, self.d = K, n, d

    def _lift(self, other: Any) -> Fraction_:
        return other if isinstance(other, Fraction_) else self.K(other)

    def __add__(self, other: Any) -> Fraction_:
        o = self._lift(other)
        if self.d == o.d:
            return Fraction_(self.K, self.n + o.n, self.d)
        return Fraction_(self.K, self.n * o.d + o.n * self.d, self.d * o.d)

    __radd__ = __add__

    def __neg__(self) -> Fraction_:
        return Fraction_(self.K, -self.n, self.d)

    def __sub__(self, other: Any) -> Fraction_:
        return self + (-self._lift(other))

    def __rsub__(self, other: Any) -> Fraction_:
        return self._lift(other) - self

    def __mul__(self, other: Any) -> Fraction_:
        o = self._lift(other)
        return Fraction_(self.K, self.n * o.n, self.d * o.d)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Fraction_:
        o = self._lift(other)
        if o.n.is_zero():
            raise ZeroDivisionError("division by zero in Q(π, ξ)")
        return Fraction_(self.K, self.n * o.d, self.d * o.n)

    def __rtruediv__(self, other: Any) -> Fraction_:
        return self._lift(other) / self

    def __pow__(self, e: int) -> Fraction_:
        return Fraction_(self.K, self.n**e, self.d**e) if e >= 0 else 1 / (self ** (-e))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Fraction, Fraction_)):
            diff = self - other
            return bool(diff.n.is_zero())
        return NotImplemented

    def __hash__(self) -> int:
        return hash((str(self.n), str(self.d)))

    def free(self) -> set[str]:
        """The generators this element depends on."""
        used = [sum(col) for col in zip(*(self.n.monoms() + self.d.monoms()), strict=True)]
        return {name for name, e in zip(self.K.names, used, strict=True) if e}

    def evaluate(self, values: Mapping[str, float]) -> float:
        """The value at the given (float) generators."""
        point = [math.sqrt(self.K.root) if name == "R" and self.K.root else values.get(name, 0.0)
                 for name in self.K.names]

        def ev(poly: flint.fmpq_mpoly) -> float:
            return sum(float(c) * _prod(point, m) for m, c in poly.to_dict().items())

        return ev(self.n) / ev(self.d)

    def as_expr(self, keep_root: bool = False) -> sympy.Expr:
        """The element as a sympy expression, P read back as π (and R as √M, unless ``keep_root``: then R stays a
        symbol, which keeps sympy's linear algebra in a polynomial domain)."""
        gens = [sympy.Symbol(n) for n in self.K.names]

        def expr(poly: flint.fmpq_mpoly) -> sympy.Expr:
            return sympy.Add(*[sympy.Rational(int(c.p), int(c.q))
                               * sympy.Mul(*[g ** int(e) for g, e in zip(gens, m, strict=True)])
                               for m, c in poly.to_dict().items()])

        out = (expr(self.n) / expr(self.d)).subs(gens[0], sympy.pi)
        return out.subs(sympy.Symbol("R"), sympy.sqrt(self.K.root)) if self.K.root and not keep_root else out

    def __repr__(self) -> str:
        return f"({self.n})/({self.d})" if not self.d.is_one() else f"{self.n}"


def _split(K: RationalFunctions, poly: flint.fmpq_mpoly) -> tuple[flint.fmpq_mpoly, flint.fmpq_mpoly]:
    """(A, B) free of R with poly ≡ A + B·R modulo R² − M (R the second generator)."""
    even: dict = {}
    odd: dict = {}
    for m, c in poly.to_dict().items():
        e = int(m[1])
        target = odd if e % 2 else even
        key = (m[0], 0, *m[2:])
        target[key] = target.get(key, 0) + c * K.root ** (e // 2)
    zero = K.ctx.constant(0)
    return (K.ctx.from_dict(even) if even else zero), (K.ctx.from_dict(odd) if odd else zero)


def _rationalize(K: RationalFunctions, n: flint.fmpq_mpoly, d: flint.fmpq_mpoly):
    """n/d with n reduced modulo R² − M and d free of R."""
    R = K.ctx.gens()[1]
    a, b = _split(K, d)
    if not b.is_zero():
        n, d = n * (a - b * R), a * a - b * b * K.root
    A, B = _split(K, n)
    return A + B * R, d


def _prod(point: list[float], m: tuple[int, ...]) -> float:
    out = 1.0
    for x, e in zip(point, m, strict=True):
        if e:
            out *= x ** int(e)
    return out


class Series:
    """Σ_{i} coeffs[i] t^(v + i) + O(t^prec), coeffs in the field ``K`` (coeffs[0] ≠ 0 unless the series is a
    bare O(t^prec), in which case v = prec)."""

    __slots__ = ("K", "v", "coeffs", "prec")

    def __init__(self, K: RationalFunctions, v: int, coeffs: list[Fraction_], prec: int) -> None:
        i = 0
        while i < len(coeffs) and v + i < prec and coeffs[i] == 0:
            i += 1
        coeffs = coeffs[i:max(i, prec - v)]
        self.K, self.v, self.prec = K, (v + i if coeffs else prec), prec
        self.coeffs = coeffs

    # construction --------------------------------------------------------------------------------------------
    @classmethod
    def constant(cls, K: RationalFunctions, c: Any, prec: int = INFINITE) -> Series:
        c = _element(K, c)
        return cls(K, 0, [c], prec) if c != 0 else cls(K, prec, [], prec)

    @classmethod
    def monomial(cls, K: RationalFunctions, c: Any, power: int, prec: int = INFINITE) -> Series:
        return cls(K, power, [_element(K, c)], prec)

    def coefficient(self, power: int) -> Fraction_:
        """The coefficient of t^power (raises SeriesError beyond the known precision)."""
        if power >= self.prec:
            raise SeriesError(f"the coefficient of t^{power} is not determined (known to O(t^{self.prec}))")
        i = power - self.v
        return self.coeffs[i] if 0 <= i < len(self.coeffs) else self.K.zero

    def truncate(self, prec: int) -> Series:
        return Series(self.K, self.v, self.coeffs, min(prec, self.prec))

    @property
    def is_zero(self) -> bool:
        """No nonzero coefficient is known (the series is O(t^prec))."""
        return not self.coeffs

    # arithmetic ----------------------------------------------------------------------------------------------
    def _lift(self, other: Any) -> Series:
        return other if isinstance(other, Series) else Series.constant(self.K, other)

    def __add__(self, other: Any) -> Series:
        other = self._lift(other)
        prec = min(self.prec, other.prec)
        v = min(self.v, other.v)
        top = max((s.v + len(s.coeffs) for s in (self, other) if s.coeffs), default=v)
        out = [self.K.zero] * max(0, min(prec, top) - v)
        for s in (self, other):
            for i, c in enumerate(s.coeffs):
                if s.v + i < prec:
                    out[s.v + i - v] += c
        return Series(self.K, v, out, prec)

    __radd__ = __add__

    def __neg__(self) -> Series:
        return Series(self.K, self.v, [-c for c in self.coeffs], self.prec)

    def __sub__(self, other: Any) -> Series:
        return self + (-self._lift(other))

    def __rsub__(self, other: Any) -> Series:
        return self._lift(other) - self

    def __mul__(self, other: Any) -> Series:
        if not isinstance(other, Series):
            c = _element(self.K, other)
            return Series(self.K, self.v, [a * c for a in self.coeffs], self.prec if c != 0 else INFINITE)
        prec = min(self.prec + other.v, other.prec + self.v)
        v = self.v + other.v
        n = max(0, min(prec - v, len(self.coeffs) + len(other.coeffs) - 1))
        out = [self.K.zero] * n
        for i, a in enumerate(self.coeffs[:n]):
            for j, b in enumerate(other.coeffs[:n - i]):
                out[i + j] += a * b
        return Series(self.K, v, out, prec)

    __rmul__ = __mul__

    def inverse(self) -> Series:
        """1/s = t^{-v} / c_0 · Σ_j (−u)^j with s = c_0 t^v (1 + u)."""
        if self.is_zero:
            raise SeriesError("division by a series with no known nonzero coefficient")
        c0 = self.coeffs[0]
        n = _relative(self)
        u = _unit_tail(self, n)
        return _compose(u, [(-1) ** j for j in range(n)], n).shift(-self.v) * (1 / c0)

    def __truediv__(self, other: Any) -> Series:
        if not isinstance(other, Series):
            return self * (1 / _element(self.K, other))
        return self * other.inverse()

    def __rtruediv__(self, other: Any) -> Series:
        return self._lift(other) * self.inverse()

    def shift(self, power: int) -> Series:
        """t^power · s."""
        return Series(self.K, self.v + power, self.coeffs, self.prec + power if self.prec < INFINITE else INFINITE)

    def __repr__(self) -> str:
        terms = " + ".join(f"({c.as_expr()})*t^{self.v + i}" for i, c in enumerate(self.coeffs) if c != 0)
        return f"{terms or '0'} + O(t^{self.prec})"


def _element(K: RationalFunctions, c: Any) -> Fraction_:
    if isinstance(c, Fraction_):
        return c
    if isinstance(c, Fraction):
        return K(c.numerator) / K(c.denominator)
    return K(c)


_ORDER: contextvars.ContextVar[int] = contextvars.ContextVar("order", default=16)


@contextlib.contextmanager
def working_order(n: int):
    """Within the block, 1/s, √s and atan s of an exact series (known to all orders) are computed to relative
    order n (their own series do not terminate)."""
    token = _ORDER.set(n)
    try:
        yield
    finally:
        _ORDER.reset(token)


def _relative(s: Series) -> int:
    """The relative precision of s, capped by the working order."""
    return min(s.prec - s.v, _ORDER.get())


def _unit_tail(s: Series, n: int) -> Series:
    """u with s = c_0 t^v (1 + u), known to O(t^n)."""
    c0 = s.coeffs[0]
    return Series(s.K, 1, [c / c0 for c in s.coeffs[1:n]], n)


def _compose(u: Series, f: list, n: int) -> Series:
    """Σ_j f_j u^j to O(t^n) (u = O(t))."""
    if u.v < 1:
        raise SeriesError("composition needs a series of positive valuation")
    total = Series.constant(u.K, 0, n)
    power = Series.constant(u.K, 1, n)
    for j, fj in enumerate(f):
        if power.v >= n:
            break
        if j:
            power = (power * u).truncate(n)
        if fj:
            total = total + power * _element(u.K, fj)
    return total.truncate(n)


def _binomial(alpha: Fraction, n: int) -> list[Fraction]:
    out, c = [], Fraction(1)
    for j in range(n):
        out.append(c)
        c = c * (alpha - j) / (j + 1)
    return out


class SeriesBackend:
    """``restricted``'s arithmetic backend over ``Series``. ``reference`` gives numerical values of the field's
    generators (P ↦ π and a value for each unknown ξ): they only choose between two exact formulas (the sign of
    g, the sign of a square root), never a coefficient."""

    name = "series"

    def __init__(self, K: RationalFunctions, reference: Mapping[str, float], order: int = 16) -> None:
        self.K, self.order = K, order
        self.reference = dict(reference)

    def value(self, c: Fraction_) -> float:
        """c at the reference values (a float, used for sign choices only)."""
        return c.evaluate(self.reference)

    def number(self, value: Any) -> Series:
        return value if isinstance(value, Series) else Series.constant(self.K, value)

    def pi(self) -> Series:
        return Series.constant(self.K, self.K.gens[0])

    def nonnegative_hint(self, s: Series) -> bool:
        return s.is_zero or self.value(s.coeffs[0]) >= 0

    def sqrt(self, s: Series) -> Series:
        """√s: t^{v/2} √c_0 (1 + u)^{1/2}."""
        if s.is_zero:
            if s.prec >= INFINITE:
                return s
            return Series(self.K, (s.prec + 1) // 2, [], (s.prec + 1) // 2)
        if s.v % 2:
            raise SeriesError(f"√ of a series of odd valuation {s.v}")
        n = _relative(s)
        root = self.square_root(s.coeffs[0])
        return _compose(_unit_tail(s, n), _binomial(Fraction(1, 2), n), n).shift(s.v // 2) * root

    def square_root(self, c: Fraction_) -> Fraction_:
        """The square root of c in K, positive at the reference values; SeriesError if c is not a square."""
        try:
            root = Fraction_(self.K, c.n.sqrt(), c.d.sqrt())
        except DomainError:
            M = _squarefree_part(c)
            if M is not None and self.K.root == M:  # c = M · q²: √c = q √M
                root = self.square_root(c / M) * self.K.gens[1]
            elif M is not None and self.K.root is None:
                raise NeedsRoot(M) from None
            else:
                raise SeriesError(f"the leading coefficient {c.as_expr()} is not a square in Q(π, ξ)") from None
        return root if self.value(root) > 0 else -root

    def atan(self, s: Series) -> Series:
        """atan s for s = O(t), s = 1 + O(t) (π/4 + atan((s − 1)/(s + 1))) or 1/s = O(t) (π/2 − atan(1/s), s > 0)."""
        if s.is_zero:
            return s
        if s.v > 0:
            n = min(s.prec, s.v + _ORDER.get())
            return _compose(s, [Fraction((-1) ** (j // 2), j) if j % 2 else 0 for j in range(n + 1)], n)
        if s.v < 0:
            if self.value(s.coeffs[0]) < 0:
                raise SeriesError("atan of a series tending to −∞")
            return self.pi() * Fraction(1, 2) - self.atan(1 / s)
        if s.coeffs[0] == 1:
            return self.pi() * Fraction(1, 4) + self.atan((s - 1) / (s + 1))
        raise SeriesError(f"atan at the leading value {s.coeffs[0].as_expr()} (only 0, 1 and ∞ are supported)")

    def atan2(self, y: Series, x: Series) -> Series:
        """atan2(y, x) for x > 0 (``restricted`` only calls it with x ≥ √N > 0)."""
        return self.atan(y / x)

    def context(self) -> contextlib.AbstractContextManager:
        return working_order(self.order)


def _squarefree_part(c: Fraction_) -> int | None:
    """M > 1 square-free with c / M a square in K (c's numerator and denominator being squares up to their
    rational contents), else None."""
    num, den = c.n, c.d
    if num.is_zero():
        return None
    q = num.leading_coefficient() / den.leading_coefficient()
    try:
        (num / num.leading_coefficient()).sqrt()
        (den / den.leading_coefficient()).sqrt()
    except DomainError:
        return None
    value = int(q.p) * int(q.q)  # q·q² has the square class of q
    if value <= 0:
        return None
    M = 1
    for p, e in sympy.factorint(value).items():
        if e % 2:
            M *= int(p)
    return M if M > 1 else None

"""Real number fields Q(α) with exact arithmetic and a certified sign.

α is given by its minimal polynomial p ∈ Q[x] (irreducible, checked) and a rational interval
[lo, hi] holding exactly one real root of p (checked exactly by Sturm counting). An element is a
polynomial in α of degree < deg p, stored as an ``fmpq_poly`` reduced modulo p.

- Zero test: exact. Since p is irreducible, an element is zero iff its reduced polynomial is 0.
- Sign of a nonzero element: α's interval is refined by exact rational bisection, the element is
  evaluated in arb ball arithmetic, and the precision doubles until the ball excludes 0. Because
  the element is known to be nonzero, this terminates; a ball is never used to decide zero.
- Arithmetic: O(d²) rational operations per product (d = deg p); inverse by the extended
  Euclidean algorithm in Q[x].
"""

from __future__ import annotations

from functools import total_ordering

from flint import arb, ctx, fmpq, fmpq_poly, fmpz

from certsym.errors import InputError
from certsym.numbers.field import Field

_MAX_PREC = 1 << 20


def _poly_sign_at(p: fmpq_poly, x: fmpq) -> int:
    v = p(x)
    return (v > 0) - (v < 0)


class NumberField(Field):
    """Q(α) ⊂ R: α the unique root of ``minpoly`` in the closed interval [lo, hi].

    ``expr`` is a string naming α (for example "sqrt(2)") that the expression parser reads back;
    elements print as polynomials in it.
    """

    def __init__(self, minpoly: fmpq_poly, lo: fmpq, hi: fmpq, expr: str):
        minpoly = fmpq_poly(minpoly)
        if minpoly.degree() < 1:
            raise InputError("a minimal polynomial must have degree at least 1")
        minpoly = minpoly / minpoly.leading_coefficient()
        _, factors = minpoly.factor()
        if len(factors) != 1 or factors[0][1] != 1:
            raise InputError(f"polynomial {minpoly} is not irreducible over Q")
        lo, hi = fmpq(lo), fmpq(hi)
        if lo > hi:
            raise InputError("isolating interval has lo > hi")
        import sympy  # start-up time: sympy is imported only where a number field is built or printed

        x = sympy.Symbol("x")
        poly = sympy.Poly([sympy.Rational(int(c.p), int(c.q)) for c in reversed(minpoly.coeffs())], x)
        count = poly.count_roots(sympy.Rational(int(lo.p), int(lo.q)), sympy.Rational(int(hi.p), int(hi.q)))
        if count != 1:
            raise InputError(f"interval [{lo}, {hi}] holds {count} roots of {minpoly}, not exactly one")
        self.minpoly = minpoly
        self.degree = minpoly.degree()
        self.lo, self.hi = lo, hi
        self.expr = expr
        self.name = f"QQ<{expr}>"
        # Refined copy of the isolating interval; shrinks monotonically as signs are asked for.
        self._lo, self._hi = lo, hi
        if self.degree == 1:
            root = -minpoly.coeffs()[0]
            self._lo = self._hi = root
        self._sign_lo = _poly_sign_at(minpoly, self._lo)
        self.gen = NFElement(self, fmpq_poly([0, 1]))

    # -- Field interface ---------------------------------------------------------------------
    def __call__(self, x):
        if isinstance(x, NFElement):
            if x.field is not self and x.field != self:
                raise TypeError(f"element of {x.field.name} is not in {self.name}")
            return x
        if isinstance(x, int | fmpz | fmpq):
            return NFElement(self, fmpq_poly([x]))
        raise TypeError(f"cannot convert {x!r} to {self.name}")

    def from_coefficients(self, coeffs: list[fmpq]) -> NFElement:
        """The element Σ coeffs[i] α^i (lowest degree first), reduced modulo the minimal polynomial."""
        return NFElement(self, fmpq_poly(coeffs) % self.minpoly)

    def coefficients(self, x) -> list[fmpq]:
        """The rational coordinates of ``x`` in the power basis 1, α, α², … (lowest first; trailing zeros cut)."""
        return [fmpq(c) for c in self(x).poly.coeffs()]

    def sign(self, x) -> int:
        x = self(x)
        if x.poly.is_zero():
            return 0
        if x.poly.degree() == 0:
            c = x.poly.coeffs()[0]
            return (c > 0) - (c < 0)
        prec = 64
        while prec <= _MAX_PREC:
            ball = self._eval_ball(x.poly, prec)
            if ball > 0:
                return 1
            if ball < 0:
                return -1
            prec *= 2
        raise ArithmeticError("sign not certified within the precision cap")  # pragma: no cover

    def to_string(self, x) -> str:
        x = self(x)
        coeffs = x.poly.coeffs()
        terms = []
        for i, c in enumerate(coeffs):
            if c == 0:
                continue
            if i == 0:
                terms.append(f"({c})")
            elif i == 1:
                terms.append(f"({c})*({self.expr})")
            else:
                terms.append(f"({c})*({self.expr})**{i}")
        return " + ".join(terms) if terms else "0"

    def pretty(self, x) -> str:
        x = self(x)
        if x.poly.degree() <= 0:
            return str(self.to_rational(x))
        import sympy  # start-up time: sympy is imported only where a number field is built or printed

        from certsym.numbers.expr import parse_expression  # the safe reader, no eval; expr imports this module

        alpha = parse_expression(self.expr)
        value = sum((sympy.Rational(int(c.p), int(c.q)) * alpha**i
                     for i, c in enumerate(x.poly.coeffs())), sympy.Integer(0))
        return str(sympy.expand(value)).replace("**", "^")

    def is_rational(self, x) -> bool:
        return self(x).poly.degree() <= 0

    def to_rational(self, x) -> fmpq:
        x = self(x)
        if x.poly.degree() > 0:
            raise ValueError(f"{self.to_string(x)} is not rational")
        return fmpq(x.poly.coeffs()[0]) if not x.poly.is_zero() else fmpq(0)

    def approx(self, x, prec: int = 64) -> arb:
        """A ball enclosing ``x`` (for display and certification, never for decisions)."""
        return self._eval_ball(self(x).poly, prec)

    # -- certified evaluation ----------------------------------------------------------------
    def _refine(self, bits: int) -> None:
        width = fmpq(1, 2**bits)
        while self._hi - self._lo > width:
            mid = (self._lo + self._hi) / 2
            s = _poly_sign_at(self.minpoly, mid)
            if s == 0:  # only possible in degree 1, handled at construction
                self._lo = self._hi = mid
                break
            if s == self._sign_lo:
                self._lo = mid
            else:
                self._hi = mid

    def _eval_ball(self, poly: fmpq_poly, prec: int) -> arb:
        self._refine(prec + 8)
        with ctx.workprec(prec + 16):
            alpha = arb(self._lo).union(arb(self._hi))
            acc = arb(0)
            for c in reversed(poly.coeffs()):
                acc = acc * alpha + arb(c)
            return acc

    def __repr__(self) -> str:
        return f"NumberField({self.minpoly}, [{self.lo}, {self.hi}], {self.expr!r})"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, NumberField)
            and self.minpoly == other.minpoly
            and self.lo == other.lo
            and self.hi == other.hi
        )

    def __hash__(self) -> int:
        return hash((str(self.minpoly), self.lo, self.hi))


@total_ordering
class NFElement:
    """An element of a real number field; ordered by the certified sign of the difference."""

    __slots__ = ("field", "poly")

    def __init__(self, field: NumberField, poly: fmpq_poly):
        self.field = field
        self.poly = poly

    def _coerce(self, other) -> NFElement | None:
        if isinstance(other, NFElement):
            if other.field is not self.field and other.field != self.field:
                raise TypeError("elements of different number fields")
            return other
        if isinstance(other, int | fmpz | fmpq):
            return NFElement(self.field, fmpq_poly([other]))
        return None

    def __add__(self, other):
        o = self._coerce(other)
        return NotImplemented if o is None else NFElement(self.field, self.poly + o.poly)

    __radd__ = __add__

    def __sub__(self, other):
        o = self._coerce(other)
        return NotImplemented if o is None else NFElement(self.field, self.poly - o.poly)

    def __rsub__(self, other):
        o = self._coerce(other)
        return NotImplemented if o is None else NFElement(self.field, o.poly - self.poly)

    def __mul__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return NFElement(self.field, (self.poly * o.poly) % self.field.minpoly)

    __rmul__ = __mul__

    def inverse(self) -> NFElement:
        if self.poly.is_zero():
            raise ZeroDivisionError("division by zero in a number field")
        g, _, t = self.field.minpoly.xgcd(self.poly)
        # g is a nonzero constant because the minimal polynomial is irreducible.
        return NFElement(self.field, (t / g.coeffs()[0]) % self.field.minpoly)

    def __truediv__(self, other):
        o = self._coerce(other)
        return NotImplemented if o is None else self * o.inverse()

    def __rtruediv__(self, other):
        o = self._coerce(other)
        return NotImplemented if o is None else o * self.inverse()

    def __pow__(self, e: int):
        if not isinstance(e, int):
            return NotImplemented
        base = self if e >= 0 else self.inverse()
        result = NFElement(self.field, fmpq_poly([1]))
        e = abs(e)
        while e:
            if e & 1:
                result = result * base
            base = base * base
            e >>= 1
        return result

    def __neg__(self):
        return NFElement(self.field, -self.poly)

    def __pos__(self):
        return self

    def __abs__(self):
        return -self if self.sign() < 0 else self

    def sign(self) -> int:
        return self.field.sign(self)

    def __bool__(self) -> bool:
        return not self.poly.is_zero()

    def __eq__(self, other) -> bool:
        try:
            o = self._coerce(other)
        except TypeError:
            return False
        return o is not None and self.poly == o.poly

    def __lt__(self, other) -> bool:
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return (self - o).sign() < 0

    def __hash__(self) -> int:
        if self.poly.degree() <= 0:
            return hash(self.field.to_rational(self))
        return hash(tuple(self.poly.coeffs()))

    def __str__(self) -> str:
        return self.field.to_string(self)

    def __repr__(self) -> str:
        return f"NFElement({self.field.to_string(self)} in {self.field.name})"

"""Exact arithmetic for the checker: Q as ``fractions.Fraction``, and real number fields Q(α).

Standard library only. Polynomials are lists of Fractions, lowest degree first.
- Equality of number-field elements: the difference is 0 modulo the declared polynomial p.
  That is sound for any p with p(α) = 0.
- Nonzero and sign: certified only when gcd(e, p) = 1 (then e(α) ≠ 0 for every root α of p);
  the sign is read from rational interval arithmetic on a bisected isolating interval of α.
  If gcd(e, p) ≠ 1 the declared polynomial is reducible and the certificate is rejected.
- α exists and is unique in [lo, hi]: p squarefree and a Sturm count of exactly one root.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

MAX_NUMBER_CHARS = 100_000
MAX_DEGREE = 64          # of a field's polynomial, or of a CRootOf polynomial after expansion
MAX_POLY_BITS = 1 << 14  # total bits of that polynomial's coefficients (the Sturm chain costs ~ degree² × bits²)
SIGN_ROUNDS = 64  # × 16 bisections: signs of numbers within 2^-1024 of zero are refused, not hung on
_RATIONAL = re.compile(r"-?[0-9]+(?:/[0-9]+)?")


class Reject(Exception):
    """The certificate is not accepted; the message says why."""


class CannotCheck(Reject):
    """The certificate cannot be checked here (an input it needs is not available): neither valid nor invalid."""


def integer(digits: str) -> int:
    """int(digits) without Python's 4300-digit cap on str -> int (divide and conquer)."""
    if len(digits) <= 4000:
        return int(digits)
    half = len(digits) // 2
    return integer(digits[:-half]) * 10**half + integer(digits[-half:])


def rational(s: object) -> Fraction:
    """An exact rational from a "p/q" string (no 4300-digit cap); anything else is rejected."""
    if not isinstance(s, str) or len(s) > MAX_NUMBER_CHARS or not _RATIONAL.fullmatch(s):
        raise Reject(f"not an exact rational string: {str(s)[:60]!r}")
    num, _, den = s.partition("/")
    sign = -1 if num.startswith("-") else 1
    d = integer(den) if den else 1
    if d == 0:
        raise Reject(f"zero denominator in {s[:60]!r}")
    return Fraction(sign * integer(num.lstrip("-")), d)


def _trim(p: list) -> list:
    while p and p[-1] == 0:
        p.pop()
    return p


def _sub(p: list, q: list) -> list:
    n = max(len(p), len(q))
    return _trim([(p[i] if i < len(p) else 0) - (q[i] if i < len(q) else 0) for i in range(n)])


def _mul(p: list, q: list) -> list:
    out = [Fraction(0)] * max(len(p) + len(q) - 1, 0)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return _trim(out)


def _divmod(p: list, q: list) -> tuple[list, list]:
    r, quo = list(p), [Fraction(0)] * max(len(p) - len(q) + 1, 1)
    while len(r) >= len(q):
        c, s = r[-1] / q[-1], len(r) - len(q)
        quo[s] = c
        r = _sub(r, [Fraction(0)] * s + [c * x for x in q])
    return _trim(quo), r


def primitive(p: list) -> list:
    """p times a positive rational making it a primitive integer polynomial (signs unchanged): keeps
    remainder sequences from growing."""
    if not p:
        return p
    den = 1
    for c in p:
        den = den * c.denominator // math.gcd(den, c.denominator)
    ints = [int(c * den) for c in p]
    g = 0
    for c in ints:
        g = math.gcd(g, c)
    return [Fraction(c, g) for c in ints]


def poly_bound(p: list, what: str) -> list:
    """p itself, if its degree and coefficient sizes are within the checker's bounds (checked before any
    gcd or Sturm chain is computed)."""
    bits = sum(c.numerator.bit_length() + c.denominator.bit_length() for c in p)
    if len(p) - 1 > MAX_DEGREE or bits > MAX_POLY_BITS:
        raise Reject(f"{what}: degree {len(p) - 1} with {bits} coefficient bits is beyond the checker's bounds "
                     f"(degree ≤ {MAX_DEGREE}, {MAX_POLY_BITS} bits)")
    return p


def _gcd(p: list, q: list) -> list:
    while q:
        p, q = q, primitive(_divmod(p, q)[1])
    return p


def _value(p: list, x: Fraction) -> Fraction:
    acc = Fraction(0)
    for c in reversed(p):
        acc = acc * x + c
    return acc


def _sign(x: Fraction) -> int:
    return (x > 0) - (x < 0)


def _sign_at(p: list[int], x: Fraction) -> int:
    """The sign of the integer polynomial p at x = a/b, from b^d p(a/b) in integers (no gcds: the bisection's
    cost stays a few big-integer products per degree)."""
    a, b = x.numerator, x.denominator
    acc, power = p[-1], 1
    for c in reversed(p[:-1]):
        power *= b
        acc = acc * a + c * power
    return _sign(acc)


def _interval_sign(p: list[int], lo: Fraction, hi: Fraction) -> int:
    """The sign of the integer polynomial p on all of [lo, hi] by interval Horner in integers (scaled by D^d for
    the common denominator D of lo and hi), or 0 when the enclosure contains 0."""
    D = math.lcm(lo.denominator, hi.denominator)
    t_lo, t_hi = lo.numerator * (D // lo.denominator), hi.numerator * (D // hi.denominator)
    low = high = p[-1]
    power = 1
    for c in reversed(p[:-1]):
        power *= D
        prods = (low * t_lo, low * t_hi, high * t_lo, high * t_hi)
        low, high = min(prods) + c * power, max(prods) + c * power
    return 1 if low > 0 else -1 if high < 0 else 0


class QQ:
    """The rational field; numbers are "p/q" strings."""

    zero, one = Fraction(0), Fraction(1)

    def number(self, s: object) -> Fraction:
        return rational(s)

    def sign(self, x: Fraction) -> int:
        return _sign(x)

    def inverse(self, x: Fraction) -> Fraction:
        return 1 / x

    def is_rational(self, x: Fraction) -> bool:
        return True


class Elt:
    """An element of a NumberField: a polynomial in α reduced modulo p (tuple, low degree first)."""

    __slots__ = ("F", "c")

    def __init__(self, F: NumberField, coeffs: list):
        self.F, self.c = F, tuple(_divmod(_trim(list(coeffs)), F.p)[1])

    def _co(self, o) -> Elt:
        return o if isinstance(o, Elt) else Elt(self.F, [Fraction(o)])

    def __add__(self, o):
        o = self._co(o)
        return Elt(self.F, _sub(list(self.c), [-x for x in o.c]))

    __radd__ = __add__

    def __sub__(self, o):
        return Elt(self.F, _sub(list(self.c), list(self._co(o).c)))

    def __rsub__(self, o):
        return self._co(o) - self

    def __mul__(self, o):
        return Elt(self.F, _mul(list(self.c), list(self._co(o).c)))

    __rmul__ = __mul__

    def __neg__(self):
        return Elt(self.F, [-x for x in self.c])

    def __eq__(self, o) -> bool:  # exact: the difference is 0 modulo p
        return isinstance(o, Elt | Fraction | int) and not (self - o).c

    def __hash__(self) -> int:
        return hash(self.c) if len(self.c) > 1 else hash(self.c[0] if self.c else 0)


class NumberField:
    """Q(α), α the only root of the declared polynomial p in [lo, hi] (Sturm-checked)."""

    def __init__(self, minpoly: object, interval: object):
        if not isinstance(minpoly, list) or not isinstance(interval, list) or len(interval) != 2:
            raise Reject("field: minpoly must be a list and interval a pair")
        if len(minpoly) > MAX_DEGREE + 1:
            raise Reject(f"field: the polynomial must have degree 1..{MAX_DEGREE}")
        p = poly_bound(_trim([rational(c) for c in minpoly]), "field")
        if len(p) < 2:
            raise Reject(f"field: the polynomial must have degree 1..{MAX_DEGREE}")
        self.p = [c / p[-1] for c in p]
        self.lo, self.hi = rational(interval[0]), rational(interval[1])
        if not self.lo < self.hi or _value(self.p, self.lo) == 0 or _value(self.p, self.hi) == 0:
            raise Reject("field: the interval must satisfy lo < hi with p(lo), p(hi) nonzero")
        deriv = _trim([i * c for i, c in enumerate(self.p)][1:])
        if len(_gcd(self.p, deriv)) > 1:
            raise Reject("field: the polynomial is not squarefree")
        chain = [self.p, deriv]
        while len(chain[-1]) > 1:
            chain.append(primitive([-x for x in _divmod(chain[-2], chain[-1])[1]]))

        def changes(x):
            signs = [s for s in (_sign(_value(q, x)) for q in chain) if s]
            return sum(a != b for a, b in zip(signs, signs[1:], strict=False))

        if changes(self.lo) - changes(self.hi) != 1:
            raise Reject("field: the interval does not isolate exactly one root")
        self.s_lo = _sign(_value(self.p, self.lo))
        den = math.lcm(*(c.denominator for c in self.p))
        self.ints = [c.numerator * (den // c.denominator) for c in self.p]
        self.zero, self.one = Elt(self, []), Elt(self, [Fraction(1)])

    def number(self, s: object) -> Elt:
        if not isinstance(s, list) or not s:
            raise Reject(f"not a number-field element (coefficient list): {str(s)[:60]!r}")
        if len(s) >= len(self.p):  # one spelling per element: reduced modulo the minimal polynomial
            raise Reject(f"number-field element not reduced (degree >= {len(self.p) - 1}): {str(s)[:60]!r}")
        return Elt(self, [rational(x) for x in s])

    def sign(self, x) -> int:
        x = x if isinstance(x, Elt) else Elt(self, [Fraction(x)])
        if len(x.c) <= 1:
            return _sign(x.c[0]) if x.c else 0
        if len(_gcd(self.p, list(x.c))) > 1:
            raise Reject("field: the declared polynomial is reducible; a sign cannot be certified")
        den = math.lcm(*(c.denominator for c in x.c))
        ints = [c.numerator * (den // c.denominator) for c in x.c]  # den · e: same sign, integer coefficients
        for _ in range(SIGN_ROUNDS):
            sign = _interval_sign(ints, self.lo, self.hi)
            if sign:
                return sign
            for _ in range(16):
                mid = (self.lo + self.hi) / 2
                if _sign_at(self.ints, mid) == self.s_lo:
                    self.lo = mid
                else:
                    self.hi = mid
        raise Reject("a sign could not be certified within the checker's budget")

    def inverse(self, x: Elt) -> Elt:
        if self.sign(x) == 0:
            raise Reject("division by zero")
        r0, r1, t0, t1 = list(self.p), list(x.c), [], [Fraction(1)]
        while len(r1) > 1:
            q, r = _divmod(r0, r1)
            r0, r1, t0, t1 = r1, r, t1, _sub(t0, _mul(q, t1))
        return Elt(self, [c / r1[0] for c in t1])

    def is_rational(self, x: Elt) -> bool:
        return len(x.c) <= 1


def make_field(spec: object):
    """The field declared by a certificate's "field" entry."""
    if not isinstance(spec, dict):
        raise Reject("field must be an object")
    if spec.get("type") == "QQ" and set(spec) == {"type"}:
        return QQ()
    if spec.get("type") == "number_field" and set(spec) == {"type", "minpoly", "interval", "generator"} \
            and isinstance(spec["generator"], str):
        return NumberField(spec["minpoly"], spec["interval"])
    raise Reject(f"unknown field specification {sorted(spec)}")

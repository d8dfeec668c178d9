"""The rational field Q on python-flint ``fmpq``, and exact parsing of rational numerals.

Accepted numerals: integers ("-12"), fractions ("3/4", "-3/-4" is not), decimals ("0.1" is
1/10, "1e-3", "-2.5E+4"). Every numeral is exact. Parsing costs O(digits); numerals with more
than ``max_digits`` digits, or decimal exponents beyond it, are refused before any big-integer
work is done. Binary floats (float64, float32, float16) are dyadic rationals and convert exactly.
"""

from __future__ import annotations

import math
import re

from flint import fmpq, fmpz

from certsym.errors import InputError
from certsym.numbers.field import Field

DEFAULT_MAX_DIGITS = 10_000

# ASCII only (re.ASCII): \d and \s would otherwise take other scripts' digits and Unicode spaces, which the
# checker (and Python's own parser, for expressions) do not read.
_INT = r"[+-]?\d+"
_FRACTION = re.compile(rf"\s*({_INT})\s*/\s*(\d+)\s*", re.ASCII)
_DECIMAL = re.compile(r"\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*", re.ASCII)
_DIGIT_RUN = re.compile(r"\d+", re.ASCII)


def check_digits(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> None:
    """Refuse ``text`` if it holds a run of more than ``max_digits`` digits. O(len(text))."""
    if len(text) > max_digits:
        longest = max((len(run) for run in _DIGIT_RUN.findall(text)), default=0)
        if longest > max_digits:
            raise InputError(
                f"numeral with {longest} digits exceeds the limit of {max_digits} digits"
            )


def parse_rational(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> fmpq | None:
    """Parse an exact rational numeral; None when ``text`` is not one.

    Raises InputError for a zero denominator or a numeral over the size limit.
    """
    check_digits(text, max_digits)
    match = _FRACTION.fullmatch(text)
    if match:
        num, den = fmpz(match.group(1).lstrip("+")), fmpz(match.group(2))
        if den == 0:
            raise InputError(f"division by zero in {text.strip()!r}")
        return fmpq(num, den)
    match = _DECIMAL.fullmatch(text)
    if not match or not (match.group(2) or match.group(3)):
        return None
    sign, whole, frac, exp = match.groups()
    frac = frac or ""
    if len(whole) + len(frac) > max_digits:
        raise InputError(f"numeral with {len(whole) + len(frac)} digits exceeds the limit of {max_digits} digits")
    exponent = int(exp) if exp else 0
    if abs(exponent) > max_digits:
        raise InputError(
            f"decimal exponent {exponent} exceeds the limit of {max_digits} digits"
        )
    mantissa = fmpz((whole or "0") + frac)  # flint reads long numerals without Python's digit cap
    exponent -= len(frac)
    value = fmpq(mantissa * 10 ** exponent) if exponent >= 0 else fmpq(mantissa, 10 ** (-exponent))
    return -value if sign == "-" else value


def rational_from_float(x: float) -> fmpq:
    """The exact dyadic rational of a binary float (float64, or a float32/float16 widened)."""
    x = float(x)
    if not math.isfinite(x):
        raise InputError(f"non-finite float {x!r} is not a real number")
    num, den = x.as_integer_ratio()
    return fmpq(num, den)


def rational_from_arb(x) -> fmpq:
    """The exact dyadic rational of an arb ball's midpoint (or of an exact endpoint from ``lower``/``upper``)."""
    man, exp = x.mid().man_exp()
    return fmpq(int(man)) * fmpq(2) ** int(exp) if exp >= 0 else fmpq(int(man), 2 ** int(-exp))


SHORT_BITS = 64  # significant bits of a bound rounded outward: a stated bound stays a few words long
MIN_EXPONENT = -4000  # the least power of two a rounded bound is given in (below it, rounding up gives 2^-4000)


def outward(x: fmpq, up: bool, bits: int = SHORT_BITS, dyadic: bool = False) -> fmpq:
    """``x`` itself when its numerator and denominator have at most ``bits`` bits (with ``dyadic``, when it is
    moreover a dyadic: a power of two below), else the dyadic p·2^e next to it on the safe side: the least such
    number ≥ x (``up``) or the greatest ≤ x, with |p| ≤ 2^bits and e ≥ MIN_EXPONENT. An upper bound rounded up
    (a lower bound rounded down) is still one (MATH.md Part IV, "a stated bound may be looser than the one its
    multipliers give, never tighter"). Cost O(size of x)."""
    num, den = int(x.p), int(x.q)
    if max(abs(num).bit_length(), den.bit_length()) <= bits and not (dyadic and den & (den - 1)):
        return x
    # e with 2^(bits−2) < |x|·2^(−e) < 2^bits (or e = MIN_EXPONENT for a tiny x): |x| < 2^(bits(num) − bits(den) + 1)
    e = max(abs(num).bit_length() - den.bit_length() + 1 - bits, MIN_EXPONENT)
    scaled_num, scaled_den = (num, den << e) if e >= 0 else (num << -e, den)
    p = -((-scaled_num) // scaled_den) if up else scaled_num // scaled_den
    return fmpq(p << e) if e >= 0 else fmpq(p, 1 << -e)


class RationalField(Field):
    """Q, with elements ``fmpq``. Every operation is exact; the sign is a comparison."""

    name = "QQ"

    def __call__(self, x):
        if isinstance(x, fmpq):
            return x
        if isinstance(x, int | fmpz):
            return fmpq(x)
        if hasattr(x, "field") and x.field.is_rational(x):
            return x.field.to_rational(x)
        raise TypeError(f"cannot convert {x!r} to QQ")

    def sign(self, x) -> int:
        return (x > 0) - (x < 0)

    def to_string(self, x) -> str:
        return str(x)

    def is_rational(self, x) -> bool:
        return True

    def to_rational(self, x) -> fmpq:
        return fmpq(x)

    def __repr__(self) -> str:
        return "QQ"

    def __eq__(self, other) -> bool:
        return isinstance(other, RationalField)

    def __hash__(self) -> int:
        return hash("QQ")


QQ = RationalField()

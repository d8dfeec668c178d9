"""One work budget for the whole certificate: the checker's exact arithmetic is charged before it is done.

Standard library only. Every exact operation whose cost grows with its operands is charged on one meter per
replay, in units of about a microsecond each, *before* it runs: products, sums and quotients of rationals in
expressions and in the replays (witnesses, merges, eliminations, the distance bound), polynomial and number-field
arithmetic, remainder sequences, Horner evaluations, resultants modulo a prime. The charge for an operation on
numbers with numerators of n1, n2 bits and denominators of d1, d2 bits is

    cost = 4 + (n1 + d1 + n2 + d2) / 512 + (n1 n2 + d1 d2) / 409,600 + (n1 d2 + n2 d1) / 102,400,

which bounds CPython's products and the cross gcds that Fraction takes to normalize every result, from above
(measured: within a factor of about 3). When a charge would take the meter past ``WORK_BUDGET`` the certificate
is rejected at once, the budget named; work whose cost is known before it starts (a Sturm chain, from the
subresultant bounds; a Gray-code walk) is refused before it starts when it cannot fit. The replay's time is then
at most about ``WORK_BUDGET`` microseconds of arithmetic plus work linear in the certificate's size.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from fractions import Fraction

from certsym_check.errors import BudgetExceeded

WORK_BUDGET = 20_000_000  # units (about a microsecond each): the arithmetic of one certificate's replay


class _Meter:
    """What is left of one replay's budget, and what it started with."""

    __slots__ = ("left", "units")

    def __init__(self, units: int):
        self.left = self.units = units

    @property
    def used(self) -> int:
        return self.units - self.left


_METER: contextvars.ContextVar[_Meter | None] = contextvars.ContextVar("certsym_check_meter", default=None)


@contextlib.contextmanager
def metered(units: int | None = None) -> Iterator[_Meter]:
    """A fresh meter of ``units`` (default WORK_BUDGET) for the replay inside the ``with`` block (nested blocks get
    their own)."""
    meter = _Meter(WORK_BUDGET if units is None else units)
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def cost(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The units charged for one operation on numbers of sizes ``a`` and ``b``, each (numerator bits,
    denominator bits): products of numerators and of denominators, and the cross gcds that Fraction takes."""
    (na, da), (nb, db) = a, b
    return 4 + (na + da + nb + db) // 512 + (na * nb + da * db) // 409_600 + (na * db + nb * da) // 102_400


def int_cost(a: int, b: int) -> int:
    """The units charged for a product (or gcd) of integers of ``a`` and ``b`` bits: nothing for word-sized ones,
    whose count the certificate's size already bounds; the superlinear part for long ones."""
    return a * b // 409_600 + (a + b) // 4096


def charge(units: int, what: str) -> None:
    """Take ``units`` from the current meter, or raise BudgetExceeded naming ``what`` and the budget."""
    meter = _METER.get()
    if meter is None:
        return
    meter.left -= units
    if meter.left < 0:
        raise BudgetExceeded(f"{what}: beyond the checker's work budget of {meter.units:,} units (about a "
                             "microsecond of exact arithmetic each) for one certificate (certificates/FORMAT.md, "
                             "Bounds)")


def fits(units: int) -> bool:
    """Whether ``units`` more would stay within the current budget (no meter: always)."""
    meter = _METER.get()
    return meter is None or units <= meter.left


def size(x) -> tuple[int, int]:
    """(numerator bits, denominator bits) of a Fraction or int."""
    if isinstance(x, int):
        return x.bit_length(), 1
    return x.numerator.bit_length(), x.denominator.bit_length()


def max_size(xs) -> tuple[int, int]:
    """The largest numerator and the largest denominator sizes among the numbers ``xs``."""
    n = d = 1
    for x in xs:
        if isinstance(x, int):
            n = max(n, x.bit_length())
        else:
            n, d = max(n, x.numerator.bit_length()), max(d, x.denominator.bit_length())
    return n, d


def plus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """A bound on the size of a product of numbers of sizes ``a`` and ``b``."""
    return a[0] + b[0], a[1] + b[1]


def charge_products(xs, ys, what: str, accumulate: bool = True) -> None:
    """Charge the products x·y of the rationals (or ints) xs and ys taken pairwise, and, with ``accumulate``,
    their running sum, whose denominators may grow term by term (the size bound adds up the terms' sizes).
    Number-field elements are charged by their own arithmetic and skipped here. Linear in len(xs)."""
    total, acc = 0, (0, 0)
    for x, y in zip(xs, ys, strict=False):
        if not isinstance(x, int | Fraction) or not isinstance(y, int | Fraction):
            return
        sx, sy = size(x), size(y)
        total += cost(sx, sy)
        if accumulate:
            term = (sx[0] + sy[0], sx[1] + sy[1])
            total += cost(acc, term)
            acc = (acc[0] + term[0] + term[1], acc[1] + term[1])
    charge(total, what)


def charge_axpy(out, v, z, what: str) -> None:
    """Charge out[t] + v[t]·z for every t (rationals; number-field elements are charged by their arithmetic)."""
    if not isinstance(z, int | Fraction):
        return
    sz, total = size(z), 0
    for o, w in zip(out, v, strict=False):
        if not isinstance(o, int | Fraction) or not isinstance(w, int | Fraction):
            return
        sw = size(w)
        total += cost(sw, sz) + cost(size(o), (sw[0] + sz[0], sw[1] + sz[1]))
    charge(total, what)


def lcm(dens, what: str) -> int:
    """The least common multiple of the positive integers ``dens``, each step charged by the sizes it works on, and
    the scaling of one number by it for each (many coprime denominators make it large; powers of two do not)."""
    acc, widest, count = 1, 1, 0
    for d in dens:
        charge(2 * int_cost(acc.bit_length(), d.bit_length()), what)
        acc = acc * d // math.gcd(acc, d)
        widest, count = max(widest, d.bit_length()), count + 1
    charge(count * 2 * int_cost(acc.bit_length(), widest), what)
    return acc


def charge_int_products(xs, ys, what: str) -> None:
    """Charge the integer products x·y taken pairwise (and their sum)."""
    charge(sum(int_cost(abs(x).bit_length(), abs(y).bit_length()) for x, y in zip(xs, ys, strict=False)), what)

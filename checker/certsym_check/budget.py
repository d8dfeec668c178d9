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
# Elementary integer operations to a unit: one is a step of an interpreted loop over word-sized integers (a
# multiply-add, a sign test and a pick, a copy), 35 to 60 ns on the reference 2-core machine, so that 16 of them
# take about a microsecond or less (benchmarks/check_budget.py measures the seconds per unit of the loops charged
# this way, and tests/check/test_check_budget_ops.py that every interpreted step of them is charged).
OPS_PER_UNIT = 16


class _Meter:
    """What is left of one replay's budget, what it started with, and what meters nested in it used (``allowed``:
    its units and theirs)."""

    __slots__ = ("allowed", "left", "nested", "units")

    def __init__(self, units: int):
        self.left = self.units = self.allowed = units
        self.nested = 0

    @property
    def used(self) -> int:
        """The units taken from this meter and from those nested in it."""
        return self.units - self.left + self.nested


_METER: contextvars.ContextVar[_Meter | None] = contextvars.ContextVar("certsym_check_meter", default=None)


@contextlib.contextmanager
def metered(units: int | None = None) -> Iterator[_Meter]:
    """A fresh meter of ``units`` (default WORK_BUDGET) for the replay inside the ``with`` block (nested blocks get
    their own, whose use the enclosing meter reports in ``used`` without charging it)."""
    outer = _METER.get()
    meter = _Meter(WORK_BUDGET if units is None else units)
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)
        if outer is not None:
            outer.nested += meter.used
            outer.allowed += meter.allowed


def cost(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The units charged for one operation on numbers of sizes ``a`` and ``b``, each (numerator bits,
    denominator bits): products of numerators and of denominators, and the cross gcds that Fraction takes."""
    (na, da), (nb, db) = a, b
    return 4 + (na + da + nb + db) // 512 + (na * nb + da * db) // 409_600 + (na * db + nb * da) // 102_400


def int_cost(a: int, b: int) -> int:
    """The size-dependent units of a product (or gcd) of integers of ``a`` and ``b`` bits: nothing for word-sized
    ones, the superlinear part for long ones. Callers charge the fixed part of each operation themselves (a few
    units for a rational; ``int_ops``, ``OPS_PER_UNIT`` to a unit, for loops over integers)."""
    return a * b // 409_600 + (a + b) // 4096


def int_ops(a: int, b: int) -> int:
    """The elementary operations charged for one product, sum or quotient of integers of ``a`` and ``b`` bits
    (with the step of the interpreted loop that does it): 1 for word-sized ones, plus their copies ((a + b)/256)
    and schoolbook product (a·b/40,960), which bound CPython's from above (measured: 4,000 by 4,000 bits, 11 µs
    for 26 µs charged; 1,000 by 1,000 bits, 1.0 µs for 2 µs; 200 by 200 bits, 0.12 µs for 0.12 µs).
    ``OPS_PER_UNIT`` of them make a unit."""
    return 1 + (a + b) // 256 + a * b // 40_960


def gcd_ops(a: int, b: int) -> int:
    """The elementary operations charged for the gcd of integers of ``a`` and ``b`` bits (four times a product's
    size part: Lehmer's algorithm; measured 200 by 200 bits, 0.7 µs for 0.7 µs charged; 1,000 by 1,000, 4.4 µs for
    8 µs), never 0."""
    return 2 + (a + b) // 64 + a * b // 10_240


def charge_ops(ops: int, what: str) -> None:
    """Charge ``ops`` elementary operations: ⌈ops / OPS_PER_UNIT⌉ units (each call at least one unit when ops > 0,
    which also pays for the call and its set-up)."""
    if ops > 0:
        charge(-(-ops // OPS_PER_UNIT), what)


def products_ops(xs: list[int], ys: list[int]) -> int:
    """The elementary operations of the products x·y taken pairwise and their sum: one each, plus the size part of
    ``int_ops`` bounded through the sums and maxima of the bit lengths (Σ a_i·b_i ≤ min(Σa·max b, max a·Σb)).
    Computed by C-level passes over the lists, so that the charge costs a fraction of the work it charges."""
    n = min(len(xs), len(ys))
    if n == 0:
        return 0
    la, lb = list(map(int.bit_length, xs[:n])), list(map(int.bit_length, ys[:n]))
    return products_ops_bound(n, max(la), sum(lb), max(lb), sum(la))


def products_ops_bound(n: int, ma: int, sb: int, mb: int, sa: int | None = None) -> int:
    """``products_ops`` from bounds: n products of x's of at most ``ma`` bits (``sa`` bits in all, at most n·ma) and
    y's of ``sb`` bits in all, ``mb`` at most."""
    if n == 0:
        return 0
    sa = n * ma if sa is None else sa
    return n + (sa + sb + n * n.bit_length()) // 256 + min(sa * mb, ma * sb) // 40_960


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
    """The least common multiple of the positive integers ``dens``, charged before it is computed: a pass over them
    (2 operations each: reading, hashing), then for each distinct one a gcd, a product and a quotient at the sizes
    of the lcm so far (at most the distinct ones' bits added up), never 0 (many coprime denominators make it large;
    powers of two do not); then the scaling of one number by it for each (a quotient and a product, at the size of
    the result and the widest denominator)."""
    dens = list(dens)
    charge_ops(2 * len(dens), what)
    distinct = set(dens)
    sizes = list(map(int.bit_length, distinct))
    ops, acc_bits = 0, 1
    for b in sizes:  # one step per distinct denominator, charged from a bound on the lcm's size before it is taken
        ops += gcd_ops(acc_bits, b) + 2 * int_ops(acc_bits + b, b)
        acc_bits += b
    charge_ops(ops, what)
    acc = 1
    for d in distinct:
        acc = acc * d // math.gcd(acc, d)
    charge_ops(len(dens) * 2 * int_ops(acc.bit_length(), max(sizes, default=1)), what)
    return acc


def charge_int_products(xs, ys, what: str) -> None:
    """Charge the integer products x·y taken pairwise (and their sum): ``products_ops`` of the two lists."""
    charge_ops(products_ops(list(xs), list(ys)), what)

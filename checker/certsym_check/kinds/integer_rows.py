"""Networks' neuron rows in integer form, shared by the distance replays: each row (a_i, b_i) scaled to integers
once, and the exact extremes of an integer row over a box, charged to the work budget. Standard library only."""

from __future__ import annotations

from fractions import Fraction

from certsym_check.budget import charge, cost, int_cost, lcm
from certsym_check.core import Net


def _ints(xs: list) -> tuple[list[int], int]:
    d = lcm((x.denominator for x in xs), "numbers brought to integers")
    return [x.numerator * (d // x.denominator) for x in xs], d


class _Rows:
    """A network's neurons as integer rows: (a_i, b_i) = ints_i / den_i, scaled by d_i for the paired ones."""

    def __init__(self, t: Net, scale: dict[int, Fraction]):
        self.rows, self.dens = [], []
        for i, r in enumerate(t.rows):
            ints, den = _ints(r)
            d = scale.get(i, Fraction(1))
            self.rows.append([x * d.numerator for x in ints] if d.numerator != 1 else ints)
            self.dens.append(den * d.denominator)
        self.v = [[x / scale.get(i, Fraction(1)) for x in v] for i, v in enumerate(t.v)]

    def extremes(self, i: int, LO: list[int], HI: list[int], Db: int) -> tuple[Fraction, Fraction]:
        """(min, max) of a_i·x + b_i over the box lo = LO/Db, hi = HI/Db."""
        return _extremes(self.rows[i], self.dens[i], LO, HI, Db)


def _extremes(row: list[int], den: int, LO: list[int], HI: list[int], Db: int) -> tuple[Fraction, Fraction]:
    a, b = row[:-1], row[-1]
    width = max(abs(x).bit_length() for x in row)
    ends = max((abs(x).bit_length() for x in (*LO, *HI, Db)), default=1)
    # the sums, and the two Fractions they become: each reduced by a gcd of its numerator and denominator, which
    # costs about four products of those sizes (Lehmer's algorithm)
    gcds = 2 * 4 * int_cost(width + ends + len(row).bit_length(), den.bit_length() + ends)
    charge(2 * len(row) * int_cost(width, ends) + 2 * cost((width + ends, den.bit_length()), (ends, 1)) + gcds,
           "a neuron's extremes on the box")
    top = sum(x * (H if x > 0 else L) for x, H, L in zip(a, HI, LO, strict=True))
    bottom = sum(x * (L if x > 0 else H) for x, H, L in zip(a, HI, LO, strict=True))
    return Fraction(bottom + b * Db, den * Db), Fraction(top + b * Db, den * Db)

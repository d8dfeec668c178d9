"""Networks' neuron rows in integer form, shared by the distance replays: each row (a_i, b_i) scaled to integers
once, and the exact extremes of an integer row over a box, charged to the work budget. Every loop here is charged
before it runs, by its length and the sizes of its integers (``budget.int_ops``, ``OPS_PER_UNIT`` to a unit), and
the charges are computed by C-level passes (``map``, ``max``, ``sum``) so that computing them costs a fraction of the
work they charge. Standard library only."""

from __future__ import annotations

from fractions import Fraction

from certsym_check.budget import charge, charge_ops, cost, int_cost, int_ops, lcm


def bits(xs: list[int]) -> int:
    """The largest bit length among the integers ``xs`` (1 for none): one C-level pass."""
    return max(map(int.bit_length, xs), default=1)


def integer_form(xs: list, what: str = "numbers brought to integers") -> tuple[list[int], int]:
    """The rationals ``xs`` as integers over their least common denominator d. Cost: the lcm's steps (charged by
    ``budget.lcm``, with the scaling of each number by d at the denominators' sizes) and one product per number at
    the sizes of its numerator and d, charged before the products."""
    d = lcm((x.denominator for x in xs), what)
    nums = [x.numerator for x in xs]
    charge_ops(len(nums) * int_ops(bits(nums), d.bit_length()), what)
    return [n * (d // x.denominator) for n, x in zip(nums, xs, strict=True)], d


def scaled(row: list[int], factor: int, what: str) -> list[int]:
    """``factor``·row, charged before: one product per entry at the sizes of the row and the factor."""
    charge_ops(len(row) * int_ops(bits(row), factor.bit_length()), what)
    return [x * factor for x in row]


def combine(a: list[int], p: int, b: list[int], q: int, what: str) -> list[int]:
    """p·a − q·b entrywise, charged before: two products and a difference per entry at the rows' and factors'
    sizes."""
    ops = len(a) * (int_ops(bits(a), p.bit_length()) + int_ops(bits(b), q.bit_length()) + 1)
    charge_ops(ops, what)
    return [x * p - y * q for x, y in zip(a, b, strict=True)]


class IntegerRows:
    """A network's neurons as integer rows: (a_i, b_i) = ints_i / den_i, scaled by d_i for the paired ones; v_i
    divided by d_i. Cost: each row brought to integers (``integer_form``), each paired row and column scaled (charged
    as products and rational quotients), every row's width read once (C-level)."""

    def __init__(self, t, scale: dict[int, Fraction]):
        self.rows, self.dens = [], []
        for i, r in enumerate(t.rows):
            ints, den = integer_form(r, "a network's rows brought to integers")
            d = scale.get(i)
            if d is not None and d.numerator != 1:
                ints = scaled(ints, d.numerator, "a network's rows scaled by the pairing")
            self.rows.append(ints)
            self.dens.append(den if d is None else den * d.denominator)
        self.widths = [bits(row) for row in self.rows]  # each row's largest integer, for the charges below
        self.v = []
        for i, v in enumerate(t.v):
            d = scale.get(i)
            if d is None or d == 1:
                self.v.append(v)  # unscaled: the certificate's own column, shared (nothing is written into it)
                continue
            sv = max((max(map(int.bit_length, (x.numerator for x in v)), default=1),
                      max(map(int.bit_length, (x.denominator for x in v)), default=1)))
            charge(len(v) * cost((sv, sv), (d.numerator.bit_length(), d.denominator.bit_length())),
                   "a network's output weights scaled by the pairing")
            self.v.append([x / d for x in v])

    def extremes(self, i: int, LO: list[int], HI: list[int], Db: int, ends: int | None = None) -> tuple[Fraction,
                                                                                                 Fraction]:
        """(min, max) of a_i·x + b_i over the box lo = LO/Db, hi = HI/Db (``ends`` the bits of the box's integers)."""
        return row_extremes(self.rows[i], self.dens[i], LO, HI, Db, ends, self.widths[i])


def box_ends(LO: list[int], HI: list[int], Db: int) -> int:
    """The bits of the largest integer of a box over one denominator: two C-level passes."""
    return max(bits(LO), bits(HI), Db.bit_length())


def row_extremes(row: list[int], den: int, LO: list[int], HI: list[int], Db: int, ends: int | None = None,
              width: int | None = None) -> tuple[Fraction, Fraction]:
    """(min, max) of row·(x, 1)/den over the box LO/Db ≤ x ≤ HI/Db. Cost, charged before: per entry and end, a
    step (a sign test, a product and a sum) at the sizes of the row's integers and the box's (``int_ops``); the two
    Fractions the sums become, each reduced by a gcd of its numerator and denominator (about four products of those
    sizes, Lehmer's algorithm). ``ends`` and ``width`` may be passed when already known (else two C-level
    passes)."""
    a, b = row[:-1], row[-1]
    width = bits(row) if width is None else width
    ends = box_ends(LO, HI, Db) if ends is None else ends
    gcds = 2 * 4 * int_cost(width + ends + len(row).bit_length(), den.bit_length() + ends)
    charge(2 * cost((width + ends, den.bit_length()), (ends, 1)) + gcds, "a neuron's extremes on the box")
    charge_ops(2 * len(row) * int_ops(width, ends + len(row).bit_length()), "a neuron's extremes on the box")
    top = sum(x * (H if x > 0 else L) for x, H, L in zip(a, HI, LO, strict=True))
    bottom = sum(x * (L if x > 0 else H) for x, H, L in zip(a, HI, LO, strict=True))
    return Fraction(bottom + b * Db, den * Db), Fraction(top + b * Db, den * Db)

"""Dual numbers over arb balls: a value and its derivative in one real parameter (a block size, i.e. k).

Forward differentiation: (u, u′) ∘ (v, v′) carries the chain rule, so a function evaluated on Dual(K, 1), with K a
ball, returns an enclosure of f(K) and of f′ over all of K (every operation encloses its exact value and
derivative on the balls it is given). ``restricted`` runs over ``DualBackend`` with the block sizes as duals: the
gradient's derivative parts are then ∂g/∂k over the ball, the mean-value term of a Krawczyk test that holds for
every k in it (``certify.branch_box``). Cost: about three times that of the arb evaluation.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from flint import arb, ctx


class Dual:
    """u + u′ε with ε² = 0, u and u′ arb balls."""

    __slots__ = ("v", "d")

    def __init__(self, v: Any, d: Any = 0) -> None:
        self.v = v if isinstance(v, arb) else arb(v)
        self.d = d if isinstance(d, arb) else arb(d)

    @staticmethod
    def of(x: Any) -> Dual:
        return x if isinstance(x, Dual) else Dual(x)

    def __add__(self, o: Any) -> Dual:
        o = Dual.of(o)
        return Dual(self.v + o.v, self.d + o.d)

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.v, -self.d)

    def __sub__(self, o: Any) -> Dual:
        return self + (-Dual.of(o))

    def __rsub__(self, o: Any) -> Dual:
        return Dual.of(o) - self

    def __mul__(self, o: Any) -> Dual:
        o = Dual.of(o)
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Dual:
        o = Dual.of(o)
        q = self.v / o.v
        return Dual(q, (self.d - q * o.d) / o.v)

    def __rtruediv__(self, o: Any) -> Dual:
        return Dual.of(o) / self


@dataclass(frozen=True)
class DualBackend:
    """``restricted.Backend`` over ``Dual``: √ of the nonnegative part (as ``ArbBackend``), atan2 with
    d atan2(y, x) = (x dy − y dx)/(x² + y²)."""

    prec: int = 128
    name = "dual"

    def number(self, value: Any) -> Dual:
        return Dual.of(value)

    def sqrt(self, value: Dual) -> Dual:
        value = Dual.of(value)
        root = value.v.nonnegative_part().sqrt()
        return Dual(root, value.d / (2 * root))

    def atan2(self, y: Dual, x: Dual) -> Dual:
        y, x = Dual.of(y), Dual.of(x)
        return Dual(arb.atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / (x.v * x.v + y.v * y.v))

    def pi(self) -> Dual:
        return Dual(arb.pi())

    def nonnegative_hint(self, value: Dual) -> bool:
        """Used only to choose between two equivalent formulas."""
        return float(value.v.mid()) >= 0

    def context(self) -> contextlib.AbstractContextManager:
        return ctx.workprec(self.prec)

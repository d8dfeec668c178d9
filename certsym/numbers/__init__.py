"""Exact scalars: Q (python-flint ``fmpq``) and real number fields Q(α), behind one Field interface.

Public surface:

- ``Field``: the interface (conversion, exact sign, re-readable strings).
- ``QQ``: the rational field; ``NumberField`` / ``NFElement``: real number fields.
- ``parse_rational``, ``parse_number``, ``rational_from_float``: exact readers.
- ``to_field``: put numbers parsed from one or several files into one common field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from flint import fmpq

from certsym.numbers.algebraic import NFElement, NumberField
from certsym.numbers.field import Field, Scalar
from certsym.numbers.rational import (
    DEFAULT_MAX_DIGITS,
    QQ,
    RationalField,
    outward,
    parse_rational,
    rational_from_arb,
    rational_from_float,
)

if TYPE_CHECKING:
    import sympy

__all__ = [
    "DEFAULT_MAX_DIGITS",
    "QQ",
    "Field",
    "NFElement",
    "NumberField",
    "RationalField",
    "outward",
    "Scalar",
    "common_field",
    "parse_expression",
    "parse_number",
    "parse_number_atoms",
    "rational_from_arb",
    "parse_rational",
    "rational_from_float",
    "to_field",
]


# The readers of expressions (radicals, roots) build sympy expressions; a rational numeral needs none of that, so
# sympy (a third of a second to import) is imported the first time an irrational number is read.


def parse_number_atoms(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> tuple[Any, dict]:
    """A number (an ``fmpq``, or a sympy expression for a real algebraic irrational) and the radicals and roots
    written in it (``certsym.numbers.expr``). Cost: linear in the text for a rational numeral."""
    q = parse_rational(text, max_digits)
    if q is not None:
        return q, {}
    from certsym.numbers import expr  # start-up time: sympy only for numbers that are not rational numerals

    return expr.parse_number_atoms(text, max_digits)


def parse_number(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """``parse_number_atoms`` without the atoms."""
    return parse_number_atoms(text, max_digits)[0]


def parse_expression(text: str, max_digits: int = DEFAULT_MAX_DIGITS) -> sympy.Expr:
    """The sympy expression of a whitelisted arithmetic text (``certsym.numbers.expr``)."""
    from certsym.numbers import expr  # start-up time: sympy only when an expression is read

    return expr.parse_expression(text, max_digits)


def common_field(exprs: Iterable[sympy.Expr]) -> tuple[NumberField, dict]:
    """One real number field holding every expression (``certsym.numbers.expr.common_field``)."""
    from certsym.numbers import expr  # start-up time: sympy only for irrational numbers

    return expr.common_field(exprs)


def to_field(values: Sequence[Any]) -> tuple[Field, list[Scalar]]:
    """Q if every value is rational; else the common number field of all irrational values.

    Cost: O(len(values)) for rational input; otherwise one primitive-element computation.
    """
    irrational = [v for v in values if not isinstance(v, fmpq)]
    if not irrational:
        return QQ, list(values)
    field, table = common_field(irrational)
    return field, [field(v) if isinstance(v, fmpq) else table[v] for v in values]

"""Exact scalars: Q (python-flint ``fmpq``) and real number fields Q(α), behind one Field interface.

Public surface:

- ``Field``: the interface (conversion, exact sign, re-readable strings).
- ``QQ``: the rational field; ``NumberField`` / ``NFElement``: real number fields.
- ``parse_rational``, ``parse_number``, ``rational_from_float``: exact readers.
- ``to_field``: put numbers parsed from one or several files into one common field.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from flint import fmpq

from certsym.numbers.algebraic import NFElement, NumberField
from certsym.numbers.expr import common_field, parse_expression, parse_number, parse_number_atoms
from certsym.numbers.field import Field, Scalar
from certsym.numbers.rational import (
    DEFAULT_MAX_DIGITS,
    QQ,
    RationalField,
    parse_rational,
    rational_from_arb,
    rational_from_float,
)

__all__ = [
    "DEFAULT_MAX_DIGITS",
    "QQ",
    "Field",
    "NFElement",
    "NumberField",
    "RationalField",
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


def to_field(values: Sequence[fmpq | sympy.Expr]) -> tuple[Field, list[Scalar]]:
    """Q if every value is rational; else the common number field of all irrational values.

    Cost: O(len(values)) for rational input; otherwise one primitive-element computation.
    """
    irrational = [v for v in values if not isinstance(v, fmpq)]
    if not irrational:
        return QQ, list(values)
    field, table = common_field(irrational)
    return field, [field(v) if isinstance(v, fmpq) else table[v] for v in values]

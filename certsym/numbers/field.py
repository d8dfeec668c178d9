"""The Field interface: what every exact ordered field of certsym offers.

Elements support ``+ - * /``, unary minus, ``==`` and the order comparisons with exact
semantics, and mix with Python ``int`` and flint ``fmpq``. The field object adds conversion,
a certified sign and a re-readable string form, so that code above this package never
needs to know whether it runs over Q or over a real number field Q(α).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from flint import fmpq

Scalar = Any  # an element of some Field: fmpq for Q, NFElement for Q(α)


class Field(ABC):
    """An exact ordered subfield of R."""

    name: str

    @property
    def zero(self) -> Scalar:
        return self(0)

    @property
    def one(self) -> Scalar:
        return self(1)

    @abstractmethod
    def __call__(self, x: int | fmpq | Scalar) -> Scalar:
        """Convert an integer, a rational or an element of this field into this field."""

    @abstractmethod
    def sign(self, x: Scalar) -> int:
        """The exact sign of ``x`` (-1, 0 or 1). Zero is decided exactly, never from a ball."""

    @abstractmethod
    def to_string(self, x: Scalar) -> str:
        """A string that the parameter-file parser reads back to the same number."""

    def pretty(self, x: Scalar) -> str:
        """A short human-readable form (also re-readable); may cost more than ``to_string``."""
        return self.to_string(x)

    @abstractmethod
    def is_rational(self, x: Scalar) -> bool:
        """True when ``x`` lies in Q."""

    @abstractmethod
    def to_rational(self, x: Scalar) -> fmpq:
        """``x`` as a rational; raises ValueError when it is not rational."""

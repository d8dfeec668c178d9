"""The checker's outcomes other than VALID, as exceptions raised anywhere in a replay and reported by the envelope."""

from __future__ import annotations


class Reject(Exception):
    """The certificate is not accepted; the message says why."""


class CannotCheck(Reject):
    """The certificate cannot be checked here (an input it needs is not available): neither valid nor invalid."""


class WrongInputs(CannotCheck):
    """The call gave a number of input files other than the certificate's: a usage error."""


class BudgetExceeded(Reject):
    """The replay would exceed the certificate's work budget (``budget.WORK_BUDGET``)."""

"""What every decision's result can do besides stating its answer: give its certificate.

A result is computed by ``certsym.decide``, which knows the networks but not where they came from; the certificate
binds the answer to its inputs' records (names, SHA-256, the model files' readings), which the layer that read the
inputs holds. That layer attaches the writer (``attach``); ``certificate()`` then builds the document, has the
independent checker replay it, and returns it only when it replays VALID.
"""

from __future__ import annotations

from collections.abc import Callable

from certsym.errors import InputError


class Certifiable:
    """A result whose ``certificate()`` is written by the writer attached to it (``attach``)."""

    _certify: Callable[[], dict] | None = None

    def attach(self, certify: Callable[[], dict]) -> None:
        """Give the result the function that writes (and replays) its certificate (frozen results too). Cost
        O(1)."""
        object.__setattr__(self, "_certify", certify)

    def certificate(self) -> dict:
        """The certificate (a dict), replayed VALID by the checker before it is returned; InputError when the result
        has none (an UNKNOWN answer, or a result built without its inputs' records). Cost: writing and replaying
        it."""
        if self._certify is None:
            raise InputError("this result has no certificate: it was not computed from records of its inputs "
                             "(use certsym.distance / certsym.top1)")
        return self._certify()


# The one vocabulary of outcomes: the claim holds (a certificate), fails (a witness), or is unknown (a reason).
HOLDS, FAILS, UNKNOWN = "holds", "fails", "unknown"


class Decision(Certifiable):
    """What every decision's result says, whatever the question and the depth: ``outcome`` (HOLDS, FAILS or
    UNKNOWN), truthy iff it holds; ``witness`` when it fails; ``reason`` when unknown; ``certificate()``. The
    subclasses add the evidence of their question (``certsym.workflows``)."""

    @property
    def outcome(self) -> str:  # pragma: no cover - every subclass states it
        raise NotImplementedError

    def __bool__(self) -> bool:
        return self.outcome == HOLDS

"""A time budget as a deadline on an injectable clock.

Every time-limited search in ``certsym.decide`` reads the time only through a ``Deadline``, for two reasons: a
command can start one budget before it reads its files, so that ``--seconds S`` bounds the whole command and not
only the search; and a test can drive the budget with a fake clock (one that advances a fixed amount per call, or
one the test advances), so that what a test asserts never depends on the machine's speed.

The clock only says when to stop searching. No verdict depends on it: a search stopped early answers UNKNOWN, or
with a looser bound, and says that the time budget stopped it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from certsym.errors import InputError

Clock = Callable[[], float]  # seconds, nondecreasing (time.monotonic, or a test's fake)


class Deadline:
    """A budget of ``seconds`` on ``clock``, started at ``start`` (default: when built). ``seconds`` may be
    ``math.inf`` (no time limit: a search is then bounded by its counts alone) or 0 (already spent). Each method
    reads the clock once; cost O(1)."""

    __slots__ = ("clock", "seconds", "start")

    def __init__(self, seconds: float, clock: Clock = time.monotonic, start: float | None = None) -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or \
                (isinstance(seconds, float) and math.isnan(seconds)) or seconds < 0:
            raise InputError(f"a time budget is a number of seconds, at least 0, not {seconds!r}")
        self.seconds = float(seconds) if seconds < 1e300 else math.inf  # a budget beyond binary64: no limit
        self.clock = clock
        self.start = clock() if start is None else start

    @property
    def end(self) -> float:
        """The clock's reading at which the budget is spent."""
        return self.start + self.seconds

    def elapsed(self) -> float:
        """The seconds since the start."""
        return self.clock() - self.start

    def remaining(self) -> float:
        """The seconds left, at least 0 (``math.inf`` without a time limit)."""
        return max(0.0, self.end - self.clock())

    def expired(self) -> bool:
        """Whether the budget is spent: the clock has reached the end (at once for a budget of 0; never for
        ``math.inf``)."""
        return self.clock() >= self.end

    def share(self, fraction: float) -> Deadline:
        """A budget on the same clock, starting now, of ``fraction`` (in [0, 1]) of what remains: it ends no later
        than this one, so the parts of a search together keep the whole budget."""
        if not 0 <= fraction <= 1:
            raise ValueError(f"a share of a budget is in [0, 1], not {fraction!r}")
        now = self.clock()
        left = max(0.0, self.end - now)
        return Deadline(0.0 if fraction == 0 else left * fraction, self.clock, now)

    def within(self, seconds: float) -> Deadline:
        """A budget on the same clock, starting now, of ``seconds`` or what remains of this one if less."""
        now = self.clock()
        return Deadline(min(max(0.0, seconds), max(0.0, self.end - now)), self.clock, now)

    def __repr__(self) -> str:
        return f"Deadline(seconds={self.seconds!r}, elapsed={self.elapsed():.3f})"


def deadline_of(seconds: float, deadline: Deadline | None) -> Deadline:
    """``deadline`` when given (it replaces ``seconds``), else a budget of ``seconds`` on the monotonic clock
    started now: the rule of every public search that takes both. Cost O(1)."""
    return deadline if deadline is not None else Deadline(seconds)

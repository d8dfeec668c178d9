"""certsym.decide.deadline: a time budget on an injectable clock, driven here by fake clocks only."""

from __future__ import annotations

import math

import pytest
from helpers import Ticks, frozen_clock

from certsym.decide.deadline import Deadline, deadline_of
from certsym.errors import InputError


class Manual:
    """A clock the test advances."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_deadline_counts_from_its_start_on_its_clock() -> None:
    clock = Manual()
    d = Deadline(10, clock=clock)
    assert (d.start, d.end, d.elapsed(), d.remaining(), d.expired()) == (100.0, 110.0, 0.0, 10.0, False)
    clock.now = 109.5
    assert d.elapsed() == 9.5 and d.remaining() == 0.5 and not d.expired()
    clock.now = 110.0
    assert d.expired() and d.remaining() == 0.0  # the end itself is spent
    clock.now = 130.0
    assert d.expired() and d.remaining() == 0.0 and d.elapsed() == 30.0
    assert Deadline(5, clock=clock, start=128.0).remaining() == 3.0  # started earlier, by the caller


def test_shares_end_within_their_parent() -> None:
    clock = Manual()
    d = Deadline(20, clock=clock)
    clock.now = 104.0
    part = d.share(0.5)
    assert part.start == 104.0 and part.seconds == 8.0 and part.end <= d.end
    walk = d.within(1.0)
    assert walk.seconds == 1.0
    clock.now = 119.5
    assert d.within(1.0).seconds == 0.5  # never past the parent's end
    clock.now = 125.0
    assert d.share(0.95).seconds == 0.0 and d.share(0.95).expired() and d.within(3).expired()
    with pytest.raises(ValueError):
        d.share(1.5)


def test_no_time_limit_and_a_spent_budget() -> None:
    never = Deadline(math.inf, clock=Ticks(1000.0))
    assert not never.expired() and never.remaining() == math.inf
    assert never.share(0.95).seconds == math.inf and never.within(5).seconds == 5 and never.share(0).seconds == 0
    assert Deadline(0, clock=frozen_clock).expired()
    assert not Deadline(1, clock=frozen_clock).expired()  # a clock that never moves never spends a budget
    for bad in (-1, float("nan"), "10", True):
        with pytest.raises(InputError):
            Deadline(bad)


def test_deadline_of_prefers_the_deadline_given() -> None:
    given = Deadline(3, clock=frozen_clock)
    assert deadline_of(10.0, given) is given
    made = deadline_of(10.0, None)
    assert made.seconds == 10.0 and made.clock is not frozen_clock


def test_a_ticking_clock_reads_the_same_on_every_machine() -> None:
    clock = Ticks(0.5)
    d = Deadline(2, clock=clock)  # one read: start at 0.5
    reads = 0
    while not d.expired():
        reads += 1
    assert reads == 3 and clock.reads == 5  # 1.0, 1.5, 2.0 not expired; 2.5 expired

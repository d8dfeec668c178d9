"""Shared test helpers: number fields built once, and hypothesis strategies for exact scalars."""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from pathlib import Path

from flint import fmpq
from hypothesis import strategies as st

from certsym.numbers import Field, NFElement, NumberField, parse_number, to_field

TESTS = Path(__file__).resolve().parent  # tests/, where the checker corpora live
REPO = TESTS.parent


class Strictness(UserWarning):
    """A project reader refuses a file that the format's runtime reads (allowed; reported). Defined here, not in its
    test module, so that a parallel run's main process can rebuild the warning a worker sends it."""


def q(x: int | str | Fraction, den: int = 1) -> fmpq:
    """fmpq from an int, a Fraction or a string "p/q"."""
    if isinstance(x, str):
        return fmpq(*map(int, x.split("/"))) if "/" in x else fmpq(int(x))
    if isinstance(x, Fraction):
        return fmpq(x.numerator, x.denominator)
    return fmpq(x, den)


@cache
def field_of(*exprs: str) -> tuple[NumberField, tuple]:
    """The common number field of the given expressions, and the expressions as elements."""
    field, values = to_field([parse_number(e) for e in exprs])
    assert isinstance(field, NumberField)
    return field, tuple(values)


def sqrt2_field() -> tuple[NumberField, NFElement]:
    """Q(√2) and √2."""
    field, (s,) = field_of("sqrt(2)")
    return field, s


def cbrt2_field() -> tuple[NumberField, NFElement]:
    """Q(∛2) and ∛2."""
    field, (c,) = field_of("2^(1/3)")
    return field, c


# Small rationals p/q with |p| <= 6, 1 <= q <= 4 (so exact arithmetic stays cheap; built from
# integers because hypothesis' fractions() strategy is comparatively slow to generate).
small_rationals = st.builds(fmpq, st.integers(-6, 6), st.integers(1, 4))
positive_rationals = st.builds(fmpq, st.integers(1, 6), st.integers(1, 4))


def elements(field: Field, degree: int) -> st.SearchStrategy:
    """Random Σ q_i α^i with small rational q_i, i < degree."""
    return st.lists(small_rationals, min_size=degree, max_size=degree).map(
        field.from_coefficients
    )


def decimal_text(n: int) -> str:
    """n in decimal, beyond Python's int-to-text limit (for certificates with very long numbers)."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(n)
    finally:
        sys.set_int_max_str_digits(old)


def torch_chain(widths: list[int], output_relu: bool, seed: int):
    """torch's Sequential(Linear, ReLU, …, Linear[, ReLU]) of the given widths, seeded."""
    import torch  # the callers' tests need torch (in the test extra)

    torch.manual_seed(seed)
    mods: list = []
    for i in range(len(widths) - 1):
        mods += [torch.nn.Linear(widths[i], widths[i + 1]), torch.nn.ReLU()]
    return torch.nn.Sequential(*(mods if output_relu else mods[:-1]))


def export_onnx(net, path: Path, m: int) -> Path:
    """The TorchScript ONNX export (dynamo=False, which needs only onnx) with input x and output y."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(1, m),), str(path), dynamo=False, input_names=["x"], output_names=["y"])
    return path


def edited(doc: dict, path: tuple, value) -> dict:
    """A deep copy of a certificate with the entry at ``path`` replaced by ``value`` (or by value(old) when it is
    callable): the tampering of the rejection tests."""
    import copy

    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value(node[path[-1]]) if callable(value) else value
    return out


class Ticks:
    """A fake clock for ``certsym.decide.deadline.Deadline``: every read advances it by ``step`` seconds, so a
    search stopped by a time budget stops after the same number of looks at the clock on any machine."""

    def __init__(self, step: float = 1.0) -> None:
        self.now, self.step, self.reads = 0.0, step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.reads += 1
        return self.now


def frozen_clock() -> float:
    """A clock that never moves: with it a budget of any finite length never runs out."""
    return 0.0


def no_time_limit():
    """A time budget that never runs out, on a clock that never moves: the search is bounded by its counts
    (regions, the checker's bounds) alone, so its result depends only on its inputs and its seed."""
    import math

    from certsym.decide.deadline import Deadline

    return Deadline(math.inf, clock=frozen_clock)


HANG_GUARD = 900.0  # wall-clock seconds after which a child process counts as hung: only so that a hang cannot
# stall the run; far beyond any CPU budget below even on a loaded machine, so it never decides a test


def cpu_budget(seconds: float, memory: int | None = 4 << 30):
    """A ``preexec_fn`` for a child process: at most ``seconds`` of its own CPU time (RLIMIT_CPU; then SIGXCPU, and
    SIGKILL a second later) and ``memory`` bytes of address space (RLIMIT_AS; None: no limit). CPU time is what the
    child itself spends: other processes on a busy machine do not use it up, as they use up wall-clock time."""
    import math
    import resource

    cpu = max(1, math.ceil(seconds))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return limit


def out_of_cpu(returncode: int | None) -> bool:
    """Whether a child ended by its CPU budget (``cpu_budget``): killed by SIGXCPU, or SIGKILL after it."""
    import signal

    return returncode in (-signal.SIGXCPU, -signal.SIGKILL)


def peak_bytes(action) -> int:
    """The peak of the memory Python allocates (tracemalloc) while ``action()`` runs: a count, the same on a fast
    machine and a busy one, for tests that a reader refuses before it does the work (a decompression, a table of
    2^31 entries) a hostile file asks for."""
    import tracemalloc

    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# z3's deterministic resource count for one query of the tests' oracles: the largest any of them uses is about
# 7.8·10^6 (measured with the solver's "rlimit count" statistic), so an answer of unknown at this limit is a count
# run out, the same on any machine, never a clock.
Z3_RLIMIT = 10**8

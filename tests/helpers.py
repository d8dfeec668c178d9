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

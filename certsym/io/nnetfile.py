"""The producer's reader of the NNet text format (``.nnet``: ReluVal, NeuroDiff, Marabou, ACAS Xu), as
docs/FORMATS.md ("NNet") says.

A file is UTF-8 text: header lines starting with ``//``, then comma-separated lines (a trailing comma allowed):
numLayers, inputSize, outputSize, maxLayerSize; the numLayers + 1 layer sizes; one flag (unused, an integer);
the inputSize minimums and maximums; inputSize + 1 means and ranges (the last ones the outputs'); then for each
layer its rows of weights, one line per neuron, and its biases, one line each. Every number is read as the exact
decimal written (``0.1`` is 1/10: a ``.nnet`` and its binary64 rounding are different networks).

The network read is what NNet's evaluator computes on inputs inside [minimums, maximums]: x ↦ (x − mean)/range
into the first layer, a ReLU after every layer but the last, and the output y·range_out + mean_out. The means and
ranges are folded into the first and last layers exactly; the evaluator's clamp of the inputs to
[minimums, maximums] is not part of the network read (it is not affine), and the reading says so: answers about
boxes inside [minimums, maximums] are answers about the file's function. A range of 0, a line of the wrong length,
sizes that disagree or text after the last bias are refused. Cost: linear in the file.
"""

from __future__ import annotations

import os
import re

import numpy as np
from flint import fmpq

from certsym.errors import InputError
from certsym.numbers import parse_rational

MAX_UNITS = 10**6  # neurons of all layers together, and inputs
MAX_WEIGHTS = 10**8
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\Z")
MAX_NUMBER_CHARS = 400  # characters of a number (the checker reads as many)
MAX_EXPONENT = 999
_BREAKS = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f\x85\u2028\u2029]")  # NNet's readers break lines at \n only
READING = ("a ReLU network (NNet: its means and ranges folded in; the evaluator's clamp of the inputs to "
           "[minimums, maximums] is not, so answers hold on boxes inside them)")


def _numbers(line: str, where: str) -> list[str]:
    """The fields of a line: comma-separated decimals, each line ending in a comma (as NNet writes them: NNet's
    Python reader drops the last field, its C readers do not, so a line without it is read two ways by NNet),
    spaces and tabs around them."""
    parts = [p.strip(" \t") for p in line.strip(" \t").split(",")]
    if len(parts) < 2 or parts[-1] != "":
        raise InputError(f"{where}: a line of comma-separated numbers ends in a comma, as NNet writes it; found "
                         f"{line.strip()[:60]!r}")
    parts = parts[:-1]
    for p in parts:
        match = _NUMBER.match(p)
        if not match or len(p) > MAX_NUMBER_CHARS or (match[1] and abs(int(match[1])) > MAX_EXPONENT):
            raise InputError(f"{where}: expected decimal numbers of at most {MAX_NUMBER_CHARS} characters and "
                             f"exponents of at most {MAX_EXPONENT}, found {p[:60]!r}")
    return parts


def _exact(token: str, where: str) -> fmpq:
    value = parse_rational(token)
    if value is None:  # pragma: no cover - _NUMBER admits decimals only
        raise InputError(f"{where}: {token!r} is not a number")
    return value


def read_nnet(path: str | os.PathLike) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict]:
    """The layers of a .nnet file, exact (object arrays of rationals, the normalization folded in), and its model
    record {"format": "nnet", "rule": "file", "activation"}. InputError with the line for anything else."""
    label = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"{label}: not a regular file")
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{label}: not UTF-8 text") from None
    bad = _BREAKS.search(text)
    if bad:
        raise InputError(f"{label}: holds the control character {bad.group()!r}; NNet's readers break lines at \\n "
                         "only, and certsym refuses what they would read otherwise")
    lines = [(n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), 1) if line.strip(" \t\r")]
    while lines and lines[0][1].lstrip(" \t").startswith("//"):
        lines.pop(0)
    at = iter(lines)

    def row(count: int | None, what: str) -> list[str]:
        try:
            n, line = next(at)
        except StopIteration:
            raise InputError(f"{label}: the file ends before {what}") from None
        values = _numbers(line, f"{label}:{n}")
        if count is not None and len(values) != count:
            raise InputError(f"{label}:{n}: {what} has {len(values)} numbers, expected {count}")
        return values

    head = row(4, "the sizes line (numLayers, inputSize, outputSize, maxLayerSize)")
    if not all(re.fullmatch(r"[0-9]{1,7}", h) for h in head):
        raise InputError(f"{label}: the sizes line holds numbers that are not counts: {', '.join(head)[:60]}")
    layers_count, m, k, _ = (int(h) for h in head)
    sizes = row(layers_count + 1, "the layer sizes")
    if not all(re.fullmatch(r"[0-9]{1,7}", x) for x in sizes):
        raise InputError(f"{label}: the layer sizes are not counts")
    widths = [int(x) for x in sizes]
    if layers_count < 1 or widths[0] != m or widths[-1] != k or min(widths) < 1 or sum(widths) > MAX_UNITS:
        raise InputError(f"{label}: layer sizes {widths[:8]} disagree with inputSize {m} and outputSize {k}, or a "
                         "layer is empty")
    if sum(a * b for a, b in zip(widths, widths[1:], strict=False)) > MAX_WEIGHTS:
        raise InputError(f"{label}: more than {MAX_WEIGHTS:,} weights")
    row(None, "the flag line")
    [_exact(x, label) for x in row(m, "the input minimums")]
    [_exact(x, label) for x in row(m, "the input maximums")]
    means = [_exact(x, label) for x in row(m + 1, "the means")]
    ranges = [_exact(x, label) for x in row(m + 1, "the ranges")]
    if any(r == 0 for r in ranges):
        raise InputError(f"{label}: a range of 0 (the normalization would divide by 0)")
    layers = []
    for ell in range(1, layers_count + 1):
        rows = [[_exact(x, label) for x in row(widths[ell - 1], f"layer {ell}'s weights")]
                for _ in range(widths[ell])]
        bias = [_exact(row(1, f"layer {ell}'s biases")[0], label) for _ in range(widths[ell])]
        layers.append((rows, bias))
    if next(at, None) is not None:
        raise InputError(f"{label}: text after the last layer's biases")
    # x ↦ (x − mean)/range into the first layer; y ↦ y·range_out + mean_out out of the last
    rows, bias = layers[0]
    layers[0] = ([[w / r for w, r in zip(row_, ranges[:m], strict=True)] for row_ in rows],
                 [c - sum((w * mu / r for w, mu, r in zip(row_, means[:m], ranges[:m], strict=True)), fmpq(0))
                  for row_, c in zip(rows, bias, strict=True)])
    rows, bias = layers[-1]
    layers[-1] = ([[w * ranges[m] for w in row_] for row_ in rows], [c * ranges[m] + means[m] for c in bias])
    out = []
    for rows, bias in layers:
        W = np.empty((len(rows), len(rows[0])), dtype=object)
        for i, row_ in enumerate(rows):
            W[i, :] = row_
        b = np.empty(len(bias), dtype=object)
        b[:] = bias
        out.append((W, b))
    return out, {"format": "nnet", "rule": "file", "activation": ACTIVATION_NNET}


ACTIVATION_NNET = "relu, the format's: after every layer but the last"

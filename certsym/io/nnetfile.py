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
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
READING = ("a ReLU network (NNet: its means and ranges folded in; the evaluator's clamp of the inputs to "
           "[minimums, maximums] is not, so answers hold on boxes inside them)")


def _numbers(line: str, where: str) -> list[str]:
    parts = [p.strip() for p in line.strip().split(",")]
    if parts and parts[-1] == "":
        parts = parts[:-1]
    if not parts or any(not _NUMBER.match(p) for p in parts):
        raise InputError(f"{where}: expected comma-separated decimal numbers, found {line.strip()[:60]!r}")
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
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    while lines and lines[0][1].lstrip().startswith("//"):
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

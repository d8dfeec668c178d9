"""The checker's own reading of an NNet text file (``.nnet``; docs/FORMATS.md, "NNet"), written apart from the
producer's: header lines starting with ``//``; comma-separated lines (a trailing comma allowed) of numLayers,
inputSize, outputSize, maxLayerSize; the layer sizes; a flag; the input minimums and maximums; the means and
ranges (inputSize + 1 each, the last the outputs'); then each layer's rows of weights and its biases, one line
each. Numbers are the exact decimals written. The network is the layers with x ↦ (x − mean)/range folded into the
first and y ↦ y·range_out + mean_out into the last, exactly; a ReLU after every layer but the last; the
evaluator's clamp of the inputs is not part of it (the reading says so).

Standard library only. Bounds before the work: MAX_UNITS neurons and MAX_WEIGHTS weights from the sizes line,
numbers of at most MAX_NUMBER_CHARS characters; the reading is linear in the file.
"""

from __future__ import annotations

import re
from fractions import Fraction

from certsym_check.budget import charge, charge_products
from certsym_check.errors import Reject

MAX_UNITS = 10**6
MAX_WEIGHTS = 10**8
MAX_NUMBER_CHARS = 400
_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?\Z")
MAX_EXPONENT = 999
# characters NNet's readers do not read as a line break where str.splitlines would, and other controls
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x85\u2028\u2029]")
_COUNT = re.compile(r"[0-9]{1,7}\Z")


def _number(token: str) -> Fraction:
    m = _DECIMAL.match(token)
    if not m or len(token) > MAX_NUMBER_CHARS or not (m.group(2) or m.group(3)):
        raise Reject(f"the NNet file holds {token[:40]!r}, not a decimal number")
    sign, whole, frac, exp = m.groups()
    if exp and abs(int(exp)) > MAX_EXPONENT:
        raise Reject(f"an NNet number's exponent is beyond {MAX_EXPONENT}")
    value = Fraction(int((whole or "0") + (frac or "")), 10 ** len(frac or ""))
    if exp:
        value *= Fraction(10) ** int(exp)
    return -value if sign == "-" else value


def read_nnet(data: bytes, expected: tuple | None = None) -> tuple[list, tuple[int, ...]]:
    """The layers [(W rows, b)] of an NNet file with its normalization folded in, and the widths; with
    ``expected`` widths, a file of others is refused right after its sizes line, before its numbers are read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Reject("the NNet file is not UTF-8 text") from None
    if _CONTROL.search(text):
        raise Reject("the NNet file holds a control character (NNet breaks lines at \\n only)")
    rows = [line.removesuffix("\r") for line in text.split("\n") if line.strip(" \t\r")]
    start = 0
    while start < len(rows) and rows[start].lstrip(" \t").startswith("//"):
        start += 1
    lines = iter(rows[start:])

    def line(count: int | None) -> list[str]:
        try:
            parts = [p.strip(" \t") for p in next(lines).strip(" \t").split(",")]
        except StopIteration:
            raise Reject("the NNet file ends early") from None
        if len(parts) < 2 or parts[-1] != "":
            raise Reject("an NNet line of numbers does not end in a comma (NNet's readers read such a line two ways)")
        parts.pop()
        if count is not None and len(parts) != count:
            raise Reject(f"an NNet line has {len(parts)} numbers, expected {count}")
        return parts

    head = line(4)
    if not all(_COUNT.match(h) for h in head):
        raise Reject("the NNet sizes line holds numbers that are not counts")
    count, m, k = int(head[0]), int(head[1]), int(head[2])
    sizes = line(count + 1)
    if not all(_COUNT.match(x) for x in sizes):
        raise Reject("the NNet layer sizes are not counts")
    widths = tuple(int(x) for x in sizes)
    if count < 1 or widths[0] != m or widths[-1] != k or min(widths) < 1 or sum(widths) > MAX_UNITS or \
            sum(a * b for a, b in zip(widths, widths[1:], strict=False)) > MAX_WEIGHTS:
        raise Reject("the NNet layer sizes disagree with its input and output sizes, or are beyond the checker's "
                     "bounds")
    if expected is not None and widths != tuple(expected):
        raise Reject(f"the NNet file's layer sizes {list(widths)[:8]} are not the certificate's {list(expected)[:8]}")
    charge(sum(a * b + b for a, b in zip(widths, widths[1:], strict=False)) + 4 * m, "the NNet file's numbers")
    [_number(x) for x in line(None)]  # the flag: numbers, unused
    for _ in range(2):  # the minimums and maximums: checked as numbers, not applied
        [_number(x) for x in line(m)]
    means = [_number(x) for x in line(m + 1)]
    ranges = [_number(x) for x in line(m + 1)]
    if 0 in ranges:
        raise Reject("an NNet range of 0")
    layers = []
    for ell in range(1, count + 1):
        W = [[_number(x) for x in line(widths[ell - 1])] for _ in range(widths[ell])]
        b = [_number(line(1)[0]) for _ in range(widths[ell])]
        layers.append((W, b))
    if next(lines, None) is not None:
        raise Reject("the NNet file goes on after the last layer's biases")
    W, b = layers[0]
    shift = [mu / r for mu, r in zip(means, ranges, strict=False)]
    charge_products(means[:m], ranges[:m], "the NNet normalization")
    folded_b = []
    for row, c in zip(W, b, strict=True):
        charge_products(row, shift, "the NNet normalization folded")  # with the running sum's growth
        folded_b.append(c - sum(w * t for w, t in zip(row, shift, strict=False)))
    charge_products([w for row in W for w in row], [r for _ in W for r in ranges[:m]], "the NNet scales",
                    accumulate=False)
    layers[0] = ([[w / r for w, r in zip(row, ranges, strict=False)] for row in W], folded_b)
    W, b = layers[-1]
    charge_products([w for row in W for w in row], [ranges[m]] * sum(map(len, W)), "the NNet output scale",
                    accumulate=False)
    layers[-1] = ([[w * ranges[m] for w in row] for row in W], [c * ranges[m] + means[m] for c in b])
    return layers, widths

"""Quantized weights, as docs/FORMATS.md ("Quantized weights") reads them: integers q of type int8 or uint8 with a
scale s and a zero point z, per tensor or per channel along one axis, denote the rationals s·(q − z). Each is
computed as a Fraction and kept only when it is a binary64 number, which it always is for a scale of at most 44
significant bits (|q − z| < 2^9); a scale that is not a positive finite float, a zero point outside q's range, or a
product that is not a binary64 number refuses the tensor. Cost: O(entries) exact products of small integers.
"""

from __future__ import annotations

import math
from fractions import Fraction

from certsym_check.errors import Reject
from certsym_check.readers.tensor import Tensor

_RANGE = {"int8": (-128, 127), "uint8": (0, 255)}
SCALE_BITS = 44


def _bits(x: float) -> int:
    """Significant bits of a finite float: those of the odd numerator of x as a dyadic fraction."""
    p = abs(Fraction(x).numerator)
    while p and p % 2 == 0:
        p //= 2
    return p.bit_length()


def dequantized(ints: Tensor, scales: list, zeros: list, axis: int | None, kind: str) -> Tensor:
    """The float64 Tensor of s·(q − z) for the integer Tensor ``ints`` (``scales``, ``zeros``: one entry per tensor
    when ``axis`` is None, else one per index along ``axis``), marked with how it was stored."""
    lo, hi = _RANGE[kind]
    shape = tuple(ints.shape)
    if axis is None:
        if len(scales) != 1 or len(zeros) != 1:
            raise Reject("a per-tensor quantization with more than one scale")
    elif not (0 <= axis < len(shape)) or len(scales) != shape[axis] or len(zeros) != len(scales):
        raise Reject(f"per-channel scales and zero points are not one per index of axis {axis} of shape "
                     f"{shape[:8]}")
    for s in scales:
        if type(s) is not float or not math.isfinite(s) or s <= 0:
            raise Reject("a quantization scale that is not a positive finite float")
        if _bits(s) > SCALE_BITS:
            raise Reject(f"a quantization scale of more than {SCALE_BITS} significant bits (its products s·(q − z) "
                         "are not all binary64 numbers)")
    if any(type(z) is not int or not lo <= z <= hi for z in zeros):
        raise Reject(f"a zero point outside [{lo}, {hi}], the range of {kind}")
    inner = math.prod(shape[axis + 1:]) if axis is not None else 1
    count = shape[axis] if axis is not None else 1
    exact_scales = [Fraction(s) for s in scales]
    values = []
    for index, q in enumerate(ints.flat()):
        c = (index // inner) % count
        x = exact_scales[c] * (q - zeros[c])
        try:
            f = float(x)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f) or Fraction(f) != x:
            raise Reject("a dequantized weight s·(q − z) that is not a binary64 number")
        values.append(f)
    out = Tensor(shape, values, False, "f8")
    out.quantized = f"{kind}, {'per-tensor' if axis is None else f'per-channel (axis {axis})'} scale"
    out.qaxis, out.qscales = axis, list(scales)
    return out

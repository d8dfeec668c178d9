"""Quantized weights as the exact numbers they denote: docs/FORMATS.md, "Quantized weights".

A quantized tensor holds integers q (int8 or uint8) with a scale s and a zero point z, per tensor or per channel
along one axis, and denotes the real numbers s·(q − z). certsym reads them as exactly those rationals: with
|q − z| ≤ 510 < 2^9, every product is a binary64 number when s has at most 44 significant bits (float16 and float32
scales, what ONNX stores and what torch's observers compute, always do), and the array returned holds it exactly.
A scale of more significant bits, a scale that is not positive and finite, a zero point outside q's range, or a
product beyond binary64's range refuses the tensor. The runtimes round s·(q − z) to float32 when they dequantize
(torch's quantized kernels also round the activations to 8 bits); a verdict is about the exact weights, and says
they were dequantized.

Cost: O(entries) numpy operations.
"""

from __future__ import annotations

import numpy as np

from certsym.errors import InputError

SCALE_BITS = 44  # significant bits of a scale whose products with |q − z| < 2^9 are binary64 numbers
RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


class Dequantized(np.ndarray):
    """The exact values s·(q − z) of a quantized tensor, as float64; ``scheme`` says how they were stored (e.g.
    "int8, per-tensor scale"), for the record and the verdict's reading line."""

    scheme: str = ""
    axis: int | None = None  # the per-channel axis, None per tensor
    scales: tuple[float, ...] = ()  # the scale, or one per index of ``axis``

    def __array_finalize__(self, obj: object) -> None:
        self.scheme = getattr(obj, "scheme", "")
        self.axis, self.scales = getattr(obj, "axis", None), getattr(obj, "scales", ())


def significant_bits(x: float) -> int:
    """The significant bits of a finite binary64 number: those of the odd integer p in x = p·2^e."""
    p, _ = float(x).as_integer_ratio()
    p = abs(p)
    return (p // (p & -p)).bit_length() if p else 0


def dequantize(q: np.ndarray, scale: object, zero_point: object, axis: int | None, kind: str,
               where: str) -> Dequantized:
    """s·(q − z) exactly (module docstring): ``scale`` and ``zero_point`` scalars (``axis`` None) or 1-D arrays
    along ``axis`` of ``q``; ``kind`` "int8" or "uint8", the type of q. InputError (one line, starting with
    ``where``) when the tensor is refused. Cost O(entries)."""
    lo, hi = RANGES[kind]
    ints = np.asarray(q).astype(np.int64)
    s = np.asarray(scale, dtype=np.float64)
    z = np.asarray(zero_point)
    if z.dtype.kind not in "iu" and not (z.dtype.kind == "f" and np.array_equal(z, np.round(z))):
        raise InputError(f"{where}: a zero point that is not an integer")
    z = z.astype(np.int64)
    if axis is None:
        if s.shape != () or z.shape != ():
            raise InputError(f"{where}: a per-tensor scale and zero point must be single numbers")
    else:
        if not 0 <= axis < ints.ndim or s.shape != (ints.shape[axis],) or z.shape != s.shape:
            raise InputError(f"{where}: per-channel scales and zero points must be one per entry of axis {axis} "
                             f"of a tensor of shape {tuple(ints.shape)}")
        shape = [1] * ints.ndim
        shape[axis] = -1
        s, z = s.reshape(shape), z.reshape(shape)
    if not (np.isfinite(s).all() and (s > 0).all()):
        raise InputError(f"{where}: a quantization scale that is not a positive finite number")
    if ((z < lo) | (z > hi)).any():
        raise InputError(f"{where}: a zero point outside the range [{lo}, {hi}] of {kind}")
    if any(significant_bits(x) > SCALE_BITS for x in np.unique(s).tolist()):
        raise InputError(f"{where}: a quantization scale of more than {SCALE_BITS} significant bits, whose products "
                         "s·(q − z) are not all binary64 numbers (float16 and float32 scales always are)")
    with np.errstate(over="ignore"):
        values = (ints - z).astype(np.float64) * s  # exact: at most 44 + 9 significant bits, checked above
    if not np.isfinite(values).all():
        raise InputError(f"{where}: s·(q − z) overflows binary64")
    out = np.ascontiguousarray(values).view(Dequantized)
    out.scheme = f"{kind}, {'per-tensor' if axis is None else f'per-channel (axis {axis})'} scale"
    out.axis, out.scales = axis, tuple(float(x) for x in np.ravel(scale))
    return out

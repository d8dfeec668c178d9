"""Floating-point arrays read as the exact dyadic rationals they denote: the test that they denote numbers, and
their exact sums.

Cost: vectorized passes over the array, with no Python number per entry.
"""

from __future__ import annotations

import math

import numpy as np
from flint import fmpq

from certsym.errors import InputError

_HALF = 26  # a binary64 significand (53 bits) as two halves of at most 27 bits
_TERMS = 1 << 24  # terms per exact bin sum: 2^24 halves of < 2^27 each stay below 2^53, exact in binary64


def refuse_flushed_subnormals() -> None:
    """InputError when this process's floating point flushes subnormal numbers to zero (the FTZ/DAZ modes that
    ``torch.set_flush_denormal(True)`` sets): every float comparison and product, numpy's and Python's alike, then
    reads a subnormal weight as 0, so floats could no longer be read as the numbers they denote. Cost O(1)."""
    tiny = math.ldexp(1.0, -1074)
    if not (tiny > 0.0 and tiny * 2.0 > tiny and np.float32(tiny * 2.0**925) != 0):
        raise InputError("this process flushes subnormal numbers to zero (torch.set_flush_denormal(True)?): floats "
                         "would not be read as the numbers they denote; call torch.set_flush_denormal(False) first")


def all_finite(array: np.ndarray) -> bool:
    """Whether every entry is finite (no NaN, no ±inf). An IEEE sum that meets a NaN or an infinity stays NaN or
    infinite, whatever the order of its additions, so a finite sum proves every entry finite in one pass; only
    a sum that is not finite (an entry that is not, or an overflow) is settled by min and max, which propagate
    a NaN and reach an infinity. Cost O(size), without the boolean array of ``np.isfinite``."""
    if array.dtype.kind != "f" or array.size == 0:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(array, axis=None)):
            return True
    return bool(np.isfinite(array.min()) and np.isfinite(array.max()))


def exact_row_sums(values: np.ndarray) -> list[fmpq]:
    """Σ_i values[r, i] exactly, for each row r of a 2-D array of finite binary64 numbers.

    Each entry is F·2^E with F an integer of at most 53 bits (``frexp``); F splits into a high half H and a low half
    L < 2^26, F = H·2^26 + L. Entries are binned by (row, E) and each bin's halves summed in binary64: at most 2^24
    halves of magnitude < 2^27 per pass, so every partial sum is an integer below 2^53 and exact. Only the bins are
    then combined as Python integers. Cost O(size) vectorized plus O(rows × distinct exponents) integer work."""
    rows, count = values.shape
    totals = [fmpq(0)] * rows
    for s in range(0, count, _TERMS):
        block = values[:, s:s + _TERMS]
        fraction, exponent = np.frexp(block)
        whole = (fraction * 2.0**53).astype(np.int64)  # exact: |fraction| < 1 has at most 53 significant bits
        exponent = exponent.astype(np.int64) - 53
        low = exponent.min(initial=0)
        span = int(exponent.max(initial=0) - low) + 1
        key = (np.arange(rows, dtype=np.int64)[:, None] * span + (exponent - low)).ravel()
        high_sums = np.bincount(key, weights=(whole >> _HALF).ravel().astype(np.float64), minlength=rows * span)
        low_sums = np.bincount(key, weights=(whole & ((1 << _HALF) - 1)).ravel().astype(np.float64),
                               minlength=rows * span)
        high_sums, low_sums = high_sums.reshape(rows, span), low_sums.reshape(rows, span)
        scale = 1 << abs(int(low))
        for r in range(rows):
            total = 0
            for e in np.flatnonzero((high_sums[r] != 0) | (low_sums[r] != 0)).tolist():
                total += ((int(high_sums[r, e]) << _HALF) + int(low_sums[r, e])) << e
            totals[r] += fmpq(total * scale) if low >= 0 else fmpq(total, scale)
    return totals


_LIMB = 15  # bits per limb of the exact products: a sum of n products of two limbs stays below 2^(30 + log2 n)


def _limbs(values: list[int], count: int) -> np.ndarray:
    """Nonnegative integers as ``count`` columns of 15-bit limbs (binary64, exact), the lowest first."""
    mask = (1 << _LIMB) - 1
    out = np.empty((len(values), count))
    for t in range(count):
        out[:, t] = [(v >> (_LIMB * t)) & mask for v in values]
    return out


def exact_matvec(W: np.ndarray, b: np.ndarray, h: list[fmpq]) -> list[fmpq] | None:
    """W h + b exactly, for a 2-D array W and a vector b of finite binary floats and a vector h of dyadic rationals
    (denominators powers of two); None when h is not dyadic or W's entries span more than binary64's range.

    W = W_int · 2^e0 with W_int integers (2^e0 the smallest unit in the last place among W's entries) and h = H / 2^s
    with H integers. Both are cut into 15-bit limbs, W_int = Σ_a W_a 2^(15a) and H = Σ_t H_t 2^(15t) (signs kept on
    the limbs), and every W_a H_t is one binary64 matrix product whose partial sums stay below 2^(30 + log2 n) < 2^53
    for n < 2^23 columns: exact in any summation order, BLAS's included. The limbs' products are combined as Python
    integers per row. Cost: (#limbs of W) × (#limbs of H) binary64 products of O(rows × columns) each, plus
    O(rows × limbs) integer work."""
    rows, cols = W.shape
    if cols >= 1 << 23:
        raise ValueError("exact_matvec: at most 2^23 columns")
    if any(int(x.q) & (int(x.q) - 1) for x in h):
        return None
    bias = [fmpq(*float(t).as_integer_ratio()) for t in b.tolist()]
    W64 = W.astype(np.float64)
    if not any(h) or not W64.any():
        return bias
    bits = 24 if W.dtype.itemsize <= 4 else 53  # significant bits of an entry: a multiple of 2^(exponent − bits)
    exponents = np.frexp(W64)[1]
    e0 = int(exponents.min(initial=1 << 20, where=W64 != 0)) - bits
    with np.errstate(over="ignore"):
        magnitude = np.ldexp(np.abs(W64), -e0)  # the integers |W_int|, exact unless beyond binary64's range
    if not np.isfinite(magnitude).all():
        return None
    sign, unit = np.sign(W64), float(1 << _LIMB)
    parts = []
    while magnitude.any():
        high = np.floor(magnitude / unit)  # exact: a power of two divides, floor and its product are exact
        parts.append(sign * (magnitude - high * unit))
        magnitude = high
    s = max(int(x.q).bit_length() - 1 for x in h)
    H = [int(x.p) << (s - int(x.q).bit_length() + 1) for x in h]
    count = max(1, -(-max(abs(v) for v in H).bit_length() // _LIMB))
    limbs = _limbs([abs(v) for v in H], count)
    limbs[[v < 0 for v in H]] *= -1
    totals = [0] * rows
    for a, part in enumerate(parts):
        product = part @ limbs  # rows × count integers, exact
        for t in range(count):
            shift = _LIMB * (a + t)
            totals = [acc + (int(v) << shift) for acc, v in zip(totals, product[:, t].tolist(), strict=True)]
    den = s - e0  # W h = W_int H · 2^(e0 − s)
    return [(fmpq(acc << -den) if den <= 0 else fmpq(acc, 1 << den)) + c for acc, c in zip(totals, bias, strict=True)]

"""Floating-point arrays read as the exact dyadic rationals they denote: the test that they denote numbers, and
their exact sums.

Cost: vectorized passes over the array, with no Python number per entry.
"""

from __future__ import annotations

import numpy as np
from flint import fmpq

_HALF = 26  # a binary64 significand (53 bits) as two halves of at most 27 bits
_TERMS = 1 << 24  # terms per exact bin sum: 2^24 halves of < 2^27 each stay below 2^53, exact in binary64


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

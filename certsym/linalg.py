"""Exact linear algebra over any certsym field: reduced row echelon form, rank, kernel.

Gauss–Jordan elimination with exact zero tests: O(r · rows · cols) field operations for rank r.
"""

from __future__ import annotations

from collections.abc import Sequence

from certsym.numbers import Field, Scalar

Matrix = list[list[Scalar]]


def rref(F: Field, rows: Sequence[Sequence[Scalar]]) -> tuple[Matrix, list[int]]:
    """The reduced row echelon form (nonzero rows only) and the pivot columns."""
    R = [list(row) for row in rows]
    pivots: list[int] = []
    ncols = len(R[0]) if R else 0
    r = 0
    for col in range(ncols):
        pivot = next((i for i in range(r, len(R)) if R[i][col] != 0), None)
        if pivot is None:
            continue
        R[r], R[pivot] = R[pivot], R[r]
        inv = F.one / R[r][col]
        R[r] = [x * inv for x in R[r]]
        for i in range(len(R)):
            if i != r and R[i][col] != 0:
                f = R[i][col]
                R[i] = [x - f * y for x, y in zip(R[i], R[r], strict=True)]
        pivots.append(col)
        r += 1
    return R[:r], pivots


def independent_rows(F: Field, rows: Sequence[Sequence[Scalar]]) -> list[int]:
    """Indices of a maximal set of linearly independent rows (the pivots of the transpose)."""
    if not rows:
        return []
    transpose = [[row[j] for row in rows] for j in range(len(rows[0]))]
    return rref(F, transpose)[1]


def determinant(F: Field, rows: Sequence[Sequence[Scalar]]) -> Scalar:
    """det of a square matrix by Gaussian elimination."""
    R = [list(row) for row in rows]
    det = F.one
    for col in range(len(R)):
        pivot = next((i for i in range(col, len(R)) if R[i][col] != 0), None)
        if pivot is None:
            return F.zero
        if pivot != col:
            R[col], R[pivot] = R[pivot], R[col]
            det = -det
        det = det * R[col][col]
        inv = F.one / R[col][col]
        for i in range(col + 1, len(R)):
            f = R[i][col] * inv
            if f != 0:
                R[i] = [x - f * y for x, y in zip(R[i], R[col], strict=True)]
    return det

"""Exact linear algebra over any certsym field: reduced row echelon form, rank, kernel.

Gauss–Jordan elimination with exact zero tests: O(r · rows · cols) field operations for rank r. Over Q the
work goes to python-flint's ``fmpq_mat.rref`` (fraction-free, in C), the same result far faster.
"""

from __future__ import annotations

from collections.abc import Sequence

from flint import fmpq_mat, nmod_mat

from certsym.numbers import QQ, Field, Scalar

Matrix = list[list[Scalar]]


def rref(F: Field, rows: Sequence[Sequence[Scalar]]) -> tuple[Matrix, list[int]]:
    """The reduced row echelon form (nonzero rows only) and the pivot columns."""
    if F is QQ and rows and rows[0]:
        ncols = len(rows[0])
        R, rank = fmpq_mat(len(rows), ncols, [x for row in rows for x in row]).rref()
        flat = R.entries()
        out = [flat[t * ncols:(t + 1) * ncols] for t in range(rank)]
        return out, [next(j for j, x in enumerate(row) if x != 0) for row in out]
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


PRIME = (1 << 61) - 1  # the checker tests minors modulo this prime first (certificates/FORMAT.md, "Bounds")


def independent_rows(F: Field, rows: Sequence[Sequence[Scalar]]) -> list[int]:
    """Indices of a maximal set of linearly independent rows (the pivots of the transpose). Over Q they are
    first sought modulo PRIME: rows independent there are independent over Q (their minor's determinant is
    nonzero modulo PRIME), and the checker confirms that minor the same way; when the rank drops modulo PRIME,
    exact elimination decides. Cost O(rows · cols · rank) word operations, or field operations."""
    if not rows:
        return []
    ncols = len(rows[0])
    if F is QQ and ncols:
        inverses: dict[int, int] = {}  # denominators repeat (powers of two for float weights)

        def residue(x) -> int:
            q = int(x.q)
            if q not in inverses:
                inverses[q] = pow(q, -1, PRIME) if q % PRIME else 0
            return int(x.p) * inverses[q] % PRIME

        flat = [residue(row[j]) for j in range(ncols) for row in rows]
        unreducible = 0 in inverses.values()  # a denominator divisible by PRIME: decide exactly
        R, rank = nmod_mat(ncols, len(rows), flat, PRIME).rref()
        if not unreducible and (rank == ncols or rank == fmpq_mat(len(rows), ncols,
                                                                    [x for row in rows for x in row]).rank()):
            entries = R.entries()
            return [next(j for j in range(len(rows)) if int(entries[t * len(rows) + j])) for t in range(rank)]
    transpose = [[row[j] for row in rows] for j in range(ncols)]
    return rref(F, transpose)[1]

"""The checker's leaf: the Report of a replay, the strict readers of JSON values (``keys``, ``index``, ``seq``), θ as
the kinds replay it (``Net``, and the rows of a referenced model file read lazily), and the statements cited."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cmp_to_key, lru_cache

from certsym_check.budget import charge, charge_axpy, charge_products, cost, int_cost, lcm
from certsym_check.errors import Reject

ZERO, SHIFT, MERGE, HN = "zeroing lemma", "bias shifting", "merge lemma", "H_n invariance"


PAIR, AFFINE, EVAL = "sigma(z) - sigma(-z) = z", "affine parts cancel", "exact evaluation"


@dataclass
class Report:
    """The outcome of one replay: ``valid``, or the ``reason`` it is not; ``cannot_check`` when an input the
    certificate needs was not available (neither valid nor invalid). ``checks`` counts the statements
    verified, ``bound`` says what each input was bound to, ``facts`` what a landscape certificate proved. ``usage``
    marks a call that gave the wrong number of input files (a usage error, not a verdict); ``work`` is the part of
    the work budget the replay used, of ``allowed`` units (budget.WORK_BUDGET, and the own meter of a part that has
    one, such as a symbolic tree's)."""

    valid: bool = False
    kind: str = "?"
    reason: str = ""
    cannot_check: bool = False
    usage: bool = False
    unbound: bool = False  # VALID about the embedded parameters only: no file was compared with them
    work: int = 0
    allowed: int = 0
    checks: Counter = field(default_factory=Counter)
    notes: list = field(default_factory=list)
    bound: list = field(default_factory=list)
    facts: list = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.valid

    def __str__(self) -> str:
        head = (f"VALID {self.kind}" + (" about the embedded parameters (no file bound)" if self.unbound else "")
                if self.valid else f"CANNOT CHECK ({self.kind}): {self.reason}"
                if self.cannot_check else f"INVALID ({self.kind}): {self.reason}")
        lines = [head] + ([f"  {x}" for x in self.bound + self.facts] +
                          [f"  verified {n} x {s}" for s, n in self.checks.items()] if self.valid else [])
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The report in a notebook: its text, escaped, in a <pre>."""
        import html  # standard library

        return f"<pre>{html.escape(str(self))}</pre>"


def keys(obj: object, required: set, where: str) -> dict:
    """The object, if it is a dict with exactly the ``required`` keys; otherwise reject."""
    if not isinstance(obj, dict):
        raise Reject(f"{where} must be an object")
    if set(obj) != required:
        extra, missing = sorted(set(obj) - required), sorted(required - set(obj))
        raise Reject(f"{where}: unknown keys {extra}" if extra else f"{where}: missing keys {missing}")
    return obj


def index(x: object, bound: int, where: str) -> int:
    """An int index in 0..bound−1 (booleans refused); otherwise reject."""
    if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < bound:
        raise Reject(f"{where}: index {x!r} out of range 0..{bound - 1}")
    return x


def seq(x: object, length: int | None, where: str) -> list:
    """The list, if it is one (of the given length); otherwise reject."""
    if not isinstance(x, list) or (length is not None and len(x) != length):
        raise Reject(f"{where} must be a list" + (f" of length {length}" if length is not None else ""))
    return x


class Net:
    """θ as neuron rows r_i = (a_i, b_i), output columns v_i and the constant c."""

    def __init__(self, F, params: object, where: str):
        p = keys(params, {"M", "A", "b", "c", "shape"}, where)
        shape = keys(p["shape"], {"m", "n", "k"}, f"{where}.shape")
        m, n, k = (index(shape[s], 10**9, f"{where}.shape.{s}") for s in "mnk")
        if m < 1 or k < 1:
            raise Reject(f"{where}: m and k must be positive")
        A = [seq(row, m, f"{where}.A[{i}]") for i, row in enumerate(seq(p["A"], n, f"{where}.A"))]
        M = [seq(row, n, f"{where}.M[{j}]") for j, row in enumerate(seq(p["M"], k, f"{where}.M"))]
        b, c = seq(p["b"], n, f"{where}.b"), seq(p["c"], k, f"{where}.c")
        self.F, self.m, self.n, self.k = F, m, n, k
        self.rows = [[F.number(x) for x in A[i]] + [F.number(b[i])] for i in range(n)]
        self.v = [[F.number(M[j][i]) for j in range(k)] for i in range(n)]
        self.c = [F.number(x) for x in c]

    def evaluate(self, x: list) -> list:
        """ρ(θ)(x) exactly; only the nonzero coordinates of x are read (witnesses are often sparse)."""
        support = [q for q, t in enumerate(x) if t != 0]
        sparse = getattr(self.rows, "sparse", None)
        active = []  # (z_i, v_i) of the neurons with z_i > 0
        for i, v in enumerate(self.v):
            if sparse is not None:
                coeffs, b = sparse(i, support)
            else:
                r = self.rows[i]
                coeffs, b = [r[q] for q in support], r[-1]
            charge_products(coeffs + [b], [x[q] for q in support] + [1], "evaluating a witness")
            z = b + sum((a * x[q] for a, q in zip(coeffs, support, strict=True)), self.F.zero)
            if self.F.sign(z) > 0:
                active.append((z, v))
        rational = all(type(t) is Fraction for t in self.c) and all(
            type(z) is Fraction and all(type(w) is Fraction for w in v) for z, v in active)
        if rational:
            return _rational_sum(self.c, active)
        out = list(self.c)
        for z, v in active:
            charge_axpy(out, v, z, "evaluating a witness")
            out = [o + vj * z for o, vj in zip(out, v, strict=True)]
        return out


def _rational_sum(c: list[Fraction], active: list) -> list[Fraction]:
    """c + Σ_i v_i z_i over Q in integers: the terms v_ij z_i over one common denominator L (for float weights a
    power of two times the witness's, so L stays small), summed, and one Fraction per output at the end, instead
    of a Fraction addition (and its gcd) per term. Each term is charged as the Fraction product it replaces, by
    the sizes of v_ij and z_i (which also bounds the memory its integers take), plus its division of L; each
    output's final reduction by its sizes. The constant is added last, outside L."""
    what = "evaluating a witness"
    L = lcm((w.denominator * z.denominator for z, v in active for w in v if w), what)
    width = L.bit_length()
    totals = [0] * len(c)
    for z, v in active:
        zn, zd = z.numerator, z.denominator
        zs = (abs(zn).bit_length(), zd.bit_length())
        # charged from the sizes before any product is formed, so that a refusal comes before the memory is taken
        # and the size of each term over L, which its addition to the running total costs and keeps
        charge(sum(cost((abs(w.numerator).bit_length(), w.denominator.bit_length()), zs)
                   + 2 * int_cost(width, w.denominator.bit_length() + zs[1])
                   + (abs(w.numerator).bit_length() + zs[0] + width) // 512 for w in v if w), what)
        for j, w in enumerate(v):
            if w:
                totals[j] += w.numerator * zn * (L // (w.denominator * zd))
    charge(sum(1 + 4 * int_cost(abs(t).bit_length(), width) for t in totals), what)
    return [cj + Fraction(t, L) for cj, t in zip(c, totals, strict=True)]


def _float32_storage(values) -> bool:
    """Entries stored as native float32: an array('f'), or a float view of a file's bytes."""
    return getattr(values, "typecode", None) == "f" or (isinstance(values, memoryview) and values.format == "f")


_HIGH = 3 if sys.byteorder == "little" else 0  # the byte of a native float32 with its sign and 7 high exponent bits


def float32_below_range_top(values) -> bool:
    """True only if every entry of native float32 storage is finite, decided on bytes: a float32 is NaN or ±inf
    exactly when its 8-bit exponent field is 255, and a high byte (the sign and the field's 7 upper bits) that is
    neither 0x7F nor 0xFF puts the field at 253 or below. One C-level search of those bytes, 4 MiB of storage
    at a time; False (a byte 0x7F or 0xFF: |x| ≥ 2^127 or not finite) only says this test does not decide. Cost
    O(len(values)) byte operations."""
    if not _float32_storage(values) or not memoryview(values).c_contiguous:
        return False  # a strided view is left to the sum
    raw = memoryview(values).cast("B")
    step = 1 << 22  # bytes per chunk, a multiple of 4: every chunk starts on a float32
    for start in range(0, len(raw), step):
        high = raw[start:start + step].tobytes()[_HIGH::4]  # a contiguous copy sliced: 4x a strided view's speed
        if b"\x7f" in high or b"\xff" in high:
            return False
    return True


class FloatRows:
    """The rows r_i = (a_i, b_i) of a model file referenced by a certificate, read as Fractions only when
    used (a 10^5 × 784 layer would take gigabytes as Fractions). Rows of float16/float32 tensors also
    give their raw floats (``raw``), on which ``proportional`` tests exactly with binary64 products."""

    def __init__(self, W1, b1: list, narrow: bool):
        self.W1, self.b1, self.narrow, self.killed = W1, b1, narrow, {}

    def __len__(self) -> int:
        return len(self.b1)

    def raw(self, i: int) -> list | None:
        return None if i in self.killed or not self.narrow else self.W1.row(i) + [self.b1[i]]

    def bits(self, i: int) -> tuple[memoryview, float] | None:
        """The float32 storage of a_i (native byte order) and b_i, while row i is unchanged, both tensors are
        float16/float32 (so b_i · 2^e is exact in binary64 for |e| ≤ 253) and a_i is stored contiguously as
        float32; else None."""
        W = self.W1
        if i in self.killed or not self.narrow or W.fortran or not _float32_storage(W.values):
            return None
        cols = W.shape[1]
        return memoryview(W.values)[i * cols:(i + 1) * cols], self.b1[i]

    def __getitem__(self, i: int) -> list:
        if i in self.killed:
            return self.killed[i]
        return [Fraction(x) for x in self.W1.row(i)] + [Fraction(self.b1[i])]

    def sparse(self, i: int, columns: list[int]) -> tuple[list, Fraction]:
        """The entries of row i in ``columns``, and b_i, as Fractions."""
        if i in self.killed:
            row = self.killed[i]
            return [row[q] for q in columns], row[-1]
        return [Fraction(self.W1.at(i, q)) for q in columns], Fraction(self.b1[i])

    def __setitem__(self, i: int, row: list) -> None:
        self.killed[i] = row

    def __iter__(self):
        return (self[i] for i in range(len(self)))


class FloatColumns:
    """The output columns v_i of a model file referenced by a certificate (W2 is k × n), read as Fractions only
    when used and then kept; while a column is unchanged and its tensor is float16/float32, ``raw`` gives its
    floats. Assigning a column replaces it."""

    def __init__(self, W2, narrow: bool):
        self.W2, self.narrow, self.k, self.n = W2, narrow, W2.shape[0], W2.shape[1]
        self.exact: dict[int, list] = {}
        self.replaced: dict[int, list] = {}

    def __len__(self) -> int:
        return self.n

    def raw(self, i: int) -> list | None:
        if i in self.replaced or not self.narrow:
            return None
        return self.W2.column(i)

    def __getitem__(self, i: int) -> list:
        if i in self.replaced:
            return self.replaced[i]
        if not 0 <= i < self.n:
            raise IndexError(i)
        column = self.exact.get(i)
        if column is None:
            column = self.exact[i] = [Fraction(x) for x in self.W2.column(i)]
        return column

    def __setitem__(self, i: int, column: list) -> None:
        self.replaced[i] = column

    def __iter__(self):
        return (self[i] for i in range(self.n))


class ColumnChain:
    """The output columns of D = θ1 ⊖ θ2: θ1's, then θ2's negated (each negated when read, its raw floats
    too; negation is exact)."""

    def __init__(self, first, second):
        self.first, self.second, self.n1, self.replaced = first, second, len(first), {}

    def __len__(self) -> int:
        return self.n1 + len(self.second)

    def raw(self, i: int) -> list | None:
        if i in self.replaced:
            return None
        if i < self.n1:
            return raw_row(self.first, i)
        r = raw_row(self.second, i - self.n1)
        return None if r is None else [-x for x in r]

    def __getitem__(self, i: int) -> list:
        if i in self.replaced:
            return self.replaced[i]
        return self.first[i] if i < self.n1 else [-x for x in self.second[i - self.n1]]

    def __setitem__(self, i: int, column: list) -> None:
        self.replaced[i] = column

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def negated_after(first, second):
    """The columns of θ1 followed by those of θ2 negated (lists, or model columns read on demand)."""
    if isinstance(first, list) and isinstance(second, list):
        return first + [[-x for x in v] for v in second]
    return ColumnChain(first, second)


class RowChain:
    """Two row sequences one after the other (the neurons of D = θ1 ⊖ θ2)."""

    def __init__(self, first, second):
        self.parts = (first, second)

    def _at(self, i: int):
        first = self.parts[0]
        return (first, i) if i < len(first) else (self.parts[1], i - len(first))

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def raw(self, i: int) -> list | None:
        part, j = self._at(i)
        return part.raw(j) if hasattr(part, "raw") else None

    def bits(self, i: int) -> tuple[memoryview, float] | None:
        part, j = self._at(i)
        return part.bits(j) if hasattr(part, "bits") else None

    def __getitem__(self, i: int) -> list:
        part, j = self._at(i)
        return part[j]

    def __setitem__(self, i: int, row: list) -> None:
        part, j = self._at(i)
        part[j] = row


def concat(first, second):
    """``first + second`` for row sequences (lists, or model rows read on demand)."""
    return first + second if isinstance(first, list) and isinstance(second, list) else RowChain(first, second)


def raw_row(rows, i: int) -> list | None:
    """The raw floats of row i when it comes unmodified from a float16/float32 tensor, else None."""
    return rows.raw(i) if hasattr(rows, "raw") else None


def row_bits(rows, i: int) -> tuple[memoryview, float] | None:
    """Row i's float32 storage and bias (``FloatRows.bits``), else None."""
    return rows.bits(i) if hasattr(rows, "bits") else None


@lru_cache(maxsize=4)
def _words(count: int) -> tuple[int, int, int]:
    """Σ_t 2^(32 t) over ``count`` words (a 1 in each), times 1, 0x7FFFFFFF and 0xFF."""
    ones = int.from_bytes(b"\x01\x00\x00\x00" * count, "little")
    return ones, ones * 0x7FFFFFFF, ones * 0xFF


@lru_cache(maxsize=8)  # a matching has few distinct scales; the cache holds at most 8 pairs of words
def _exponent_bounds(count: int, e: int) -> tuple[int, int]:
    """The words added to the exponent fields E to test E ≤ hi and E ≥ lo for a scaling by 2^e."""
    ones = _words(count)[0]
    lo, hi = max(1, 1 - e), min(254, 254 - e)
    return ones * (255 - hi), ones * (256 - lo)


def forget_scalings() -> None:
    """Empty the caches of ``scaled_float32`` (at most 3 + 16 integers of 32 bits per row entry while a replay
    runs; none after it)."""
    _words.cache_clear()
    _exponent_bounds.cache_clear()


def scaled_float32(x: memoryview, y: memoryview, e: int) -> bool:
    """True only if the float32 vector y equals 2^e · x exactly, decided on whole vectors as integers.

    With X and Y the vectors' bytes read as integers (word t = the bits of entry t) and Z the indicator of
    the nonzero words, Y = X + e·2^23·Z holds word by word when every nonzero x_t has its exponent field E_t
    in [1, 254] with E_t + e in [1, 254] too: then each word stays in [0, 2^32), nothing carries between
    words, and adding e to a normal float32's exponent field multiplies it by 2^e exactly (zeros, of either
    sign, are unchanged). Those bounds are checked on all words at once (E + 255 − hi has bit 8 set iff
    E > hi; E + 256 − lo iff E ≥ lo). False means only that this test does not prove it (subnormal entries,
    exponents out of range, −0 against +0, or y ≠ 2^e·x): the caller then compares the floats. Cost: a few
    big-integer operations on 32·len(x) bits."""
    count = len(x)
    if len(y) != count or not -253 <= e <= 253:
        return False
    ones, magnitude, field = _words(count)
    above, below = _exponent_bounds(count, e)
    X, Y = int.from_bytes(x, sys.byteorder), int.from_bytes(y, sys.byteorder)
    nonzero = (((X & magnitude) + magnitude) >> 31) & ones
    E = (X >> 23) & field
    if (((E + above) >> 8) & ones) or ((E + below) >> 8) & ones != nonzero:
        return False
    return X + e * (nonzero << 23) == Y


def row_is_zero(rows, i: int) -> bool:
    raw = raw_row(rows, i)
    return not any(raw) if raw is not None else is_zero(rows[i])


def is_zero(vec: list) -> bool:
    """Every entry exactly zero (remainder test over number fields)."""
    return all(x == 0 for x in vec)


def distinct_sorted(F, keyed: list, what: str) -> None:
    """Sort normalized keys with certified comparisons; equal neighbours mean a repeated key."""

    def cmp(u, w):
        return next((s for s in (F.sign(x - y) for x, y in zip(u, w, strict=True)) if s), 0)

    keyed.sort(key=cmp_to_key(cmp))
    if any(cmp(u, w) == 0 for u, w in zip(keyed, keyed[1:], strict=False)):
        raise Reject(what)


def normal_form(F, r: list, v: list | None) -> list:
    """The neuron (or row) scaled by a positive factor so that its first nonzero entry is +-1."""
    if any(F.sign(x) for x in r):
        lead = next(x for x in r if F.sign(x))
        lam = lead if F.sign(lead) > 0 else -lead
        inv = F.inverse(lam)
        return [x * inv for x in r] + ([] if v is None else [x * lam for x in v])
    lead = next(x for x in v if F.sign(x))
    inv = F.inverse(lead if F.sign(lead) > 0 else -lead)
    return list(r) + [x * inv for x in v]

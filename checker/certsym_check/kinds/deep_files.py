"""Deep networks read from the model files a certificate references by SHA-256 (``deep_equivalent``,
``deep_not_equivalent``): the layers stay in the file's tensors and are read as Fractions only where the replay
needs them.

A weight matrix (``FloatMatrix``) gives a row as Fractions when asked (then kept, and changed in place by the
moves), and while the row is unchanged and its tensor is float16/bfloat16/float32, its raw floats. Three exact
facts of binary64 let the replay compare raw floats instead of Fractions:
1. a float's sign is its rational's sign, and equality of two floats is equality of the rationals they denote;
2. x·2^e is exact for a float32 x and |e| ≤ 128 (the result stays a normal binary64 number), so rows scaled by
   powers of two are compared as floats (``Aligned``, ``BlockRows``);
3. x·2^149 is an integer for every float32 x, exact in binary64 (|x| < 2^128), so a layer is evaluated at a
   rational point with one integer product per weight (``evaluate_layer``).
Nothing here decides by rounding: each fact holds exactly or the Fraction path runs. Standard library only.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import repeat
from operator import itemgetter, mul

from certsym_check.budget import (
    charge,
    charge_int_products,
    charge_ops,
    charge_products,
    int_cost,
    lcm,
    products_ops_bound,
)
from certsym_check.core import keys
from certsym_check.errors import Reject

SCALE_BITS = 128  # |e| of the powers of two 2^e by which raw float32 rows are scaled (fact 2)
_UNIT = 2.0 ** 149  # every float32 is an integer multiple of 2^-149


def power_of_two(d: Fraction) -> float | None:
    """d as a float when d = 2^e with |e| ≤ SCALE_BITS, else None."""
    num, den = d.numerator, d.denominator
    if num <= 0 or num & (num - 1) or den & (den - 1) or max(num, den).bit_length() > SCALE_BITS + 1:
        return None
    return float(d)


def narrow_float(x: Fraction) -> float | None:
    """x as a float when it is a float32 value scaled by at most 2^SCALE_BITS (a dyadic of ≤ 24 significant bits
    with its exponent in range), else None: what a raw row may hold beside its weights."""
    num, den = x.numerator, x.denominator
    if den & (den - 1):
        return None
    odd = abs(num) >> ((abs(num) & -abs(num)).bit_length() - 1) if num else 0
    top = abs(num).bit_length() - den.bit_length()
    if odd.bit_length() > 24 or not -149 - SCALE_BITS <= top <= 128 + SCALE_BITS:
        return None
    return float(x)


class FloatMatrix:
    """W_ℓ (rows × columns) of a referenced model file: ``[i]``, row i as Fractions on demand (kept: the moves
    change it in place), ``raw(i)`` the row's floats while it was never asked for as Fractions and the tensor is
    float16/bfloat16/float32."""

    def __init__(self, tensor, narrow: bool):
        self.t, self.narrow, self.exact = tensor, narrow, {}
        self.rows, self.cols = tensor.shape

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, i: int) -> list:
        row = self.exact.get(i)
        if row is None:
            if not 0 <= i < self.rows:
                raise IndexError(i)
            charge_ops(4 * self.cols, "a model row read as rationals")
            row = self.exact[i] = [Fraction(x) for x in self.t.row(i)]
        return row

    def __iter__(self):
        return (self[i] for i in range(self.rows))

    def raw(self, i: int) -> list | None:
        return None if i in self.exact or not self.narrow else self.t.row(i)

    def entries(self, j: int, rows: list[int]) -> list:
        """Column j on ``rows``: the tensor's own numbers (floats, ints: exact) for rows never read as Fractions,
        else their (current) Fractions; for sign tests and exact sums."""
        charge_ops(self.rows + len(rows), "a model column read")
        column = self.t.column(j)
        return [self.exact[r][j] if r in self.exact else column[r] for r in rows]


def _gather(columns: list[int]):
    """A C-level picker of ``columns`` from a row, always returning a tuple."""
    if len(columns) == 1:
        q = columns[0]
        return lambda row: (row[q],)
    return itemgetter(*columns) if columns else (lambda row: ())


class Aligned:
    """The test W1[i][i']·d' = d·W2[j][j'] for every pair (i', j', d') of the layer below, on raw floats (fact 2), set
    up once per layer: ``test`` gives None when the rows are not raw or a scaling is not a power of two 2^e with
    |e| ≤ SCALE_BITS (the caller then compares Fractions)."""

    def __init__(self, below: list[tuple[int, int, Fraction]]):
        charge_ops(2 * len(below), "an alignment's scalings")
        scales = [power_of_two(e) if type(e) is Fraction else None for _, _, e in below]
        self.scales = None if None in scales else scales
        self.plain = self.scales is not None and all(s == 1.0 for s in self.scales)
        self.left, self.right = _gather([a for a, _, _ in below]), _gather([b for _, b, _ in below])
        self.count = len(below)

    def test(self, W1: FloatMatrix, i: int, W2: FloatMatrix, j: int, d: Fraction) -> bool | None:
        r1, r2 = W1.raw(i), W2.raw(j)
        scale = power_of_two(d) if type(d) is Fraction else None
        if r1 is None or r2 is None or scale is None or self.scales is None:
            return None
        charge_ops(4 * self.count, "an alignment on raw floats")
        left, right = self.left(r1), self.right(r2)
        if not self.plain:
            left = tuple(map(mul, left, self.scales))
        if scale != 1.0:
            right = tuple(map(mul, right, repeat(scale)))
        return left == right


class BlockRows:
    """The rows of a top block (``kinds.deep``): for neuron j of layer L its weights on the block's inputs
    [(q, d)] times d, then its bias. Fractions on demand; raw floats (``raw``) while the row is unchanged, every d
    is a power of two 2^e with |e| ≤ SCALE_BITS and the bias is a float32 value scaled so (fact 2: the shallow
    replay's tests on raw rows stay exact). Assigning a row replaces it (a killed neuron)."""

    def __init__(self, W: FloatMatrix, bias: list, neurons: list[int], inputs: list[tuple[int, object]]):
        self.W, self.bias, self.neurons, self.inputs, self.killed, self.made = W, bias, neurons, inputs, {}, {}
        scales = [power_of_two(d) if isinstance(d, Fraction) else None for _, d in inputs]
        self.scales = None if None in scales else scales
        self.plain = self.scales is not None and all(s == 1.0 for s in self.scales)
        self.pick = _gather([q for q, _ in inputs])

    def __len__(self) -> int:
        return len(self.neurons)

    def raw(self, i: int) -> list | None:
        if i in self.killed or self.scales is None:
            return None
        row = self.W.raw(self.neurons[i])
        b = narrow_float(self.bias[self.neurons[i]])
        if row is None or b is None:
            return None
        picked = self.pick(row) if self.inputs else (0.0,)
        return [*(picked if self.plain else map(mul, picked, self.scales)), b]

    def __getitem__(self, i: int) -> list:
        if i in self.killed:
            return self.killed[i]
        made = self.made.get(i)
        if made is None:  # made once, its products charged by their sizes (as an embedded block's are)
            j = self.neurons[i]
            if not self.inputs:  # no alive neuron below: one input with a zero column
                made = [Fraction(0), self.bias[j]]
            else:
                row = self.W[j]
                weights = [row[q] for q, _ in self.inputs]
                charge_products(weights, [d for _, d in self.inputs], "a top block", accumulate=False)
                made = [w * d for w, (_, d) in zip(weights, self.inputs, strict=True)] + [self.bias[j]]
            self.made[i] = made
        return made

    def __setitem__(self, i: int, row: list) -> None:
        self.killed[i] = row

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def evaluate_layer(W: FloatMatrix, bias: list, h: list[Fraction]) -> list[Fraction]:
    """W h + b exactly: h over its common denominator D as integers H, only its nonzero entries read, each raw
    float32 row as the integers w·2^149 (fact 3, each below 2^277), so that z_r = (Σ_q W_rq H_q) / (2^149 D) + b_r;
    rows that are not raw are read as Fractions. Charged before: per raw row, its products as ``products_ops``
    charges them with every w·2^149 taken at 277 bits."""
    what = "evaluating a witness"
    D = lcm((t.denominator for t in h), what)
    H = [t.numerator * (D // t.denominator) for t in h]
    support = [q for q, v in enumerate(H) if v]
    pick, Hs = _gather(support), [H[q] for q in support]
    n, sizes = len(Hs), list(map(int.bit_length, Hs))
    per_row = 3 * n + products_ops_bound(n, 277, sum(sizes), max(sizes, default=1))
    out = []
    for r in range(W.rows):
        raw = W.raw(r)
        if raw is None:
            row = W[r]
            den = lcm((w.denominator for w in row), what)
            nums = [w.numerator * (den // w.denominator) for w in row]
            charge_int_products(nums, H, what)
            total = sum(map(mul, nums, H))
        else:
            charge_ops(per_row, what)
            den = 1 << 149
            total = sum(map(mul, map(int, map(mul, pick(raw), repeat(_UNIT))), Hs))
        charge(2 * int_cost(total.bit_length(), den.bit_length() + D.bit_length()), what)
        out.append(Fraction(total, den * D) + bias[r])
    return out


def referenced_layers(record: dict, file, where: str, rep) -> tuple[int, list, list, bool]:
    """(m, [FloatMatrix W_ℓ], [b_ℓ as Fractions], output ReLU) of the model file a deep certificate references by
    SHA-256, its widths and output ReLU (certificates/FORMAT.md, "Inputs"); what was bound goes in ``rep.bound``.
    Memory O(file size)."""
    from certsym_check.envelope import MODEL_SLACK, finite_tensor
    from certsym_check.readers.files import NARROW, layered_tensors, model_bytes

    widths = record["widths"]
    if not isinstance(widths, list) or len(widths) < 4 or not all(
            type(w) is int and 1 <= w <= 10**9 for w in widths):
        raise Reject(f"{where}.widths must list m, at least two hidden widths and k, each a positive int")
    if record["output_relu"] is not False:
        raise Reject(f"{where}: a referenced tensor file holds no activation: output_relu must be false")
    entries = sum(a * b + b for a, b in zip(widths, widths[1:], strict=False))
    try:
        size = model_bytes(file, record["model"])
    except Reject as exc:
        raise Reject(f"{where}: {exc}") from None
    if entries > size + MODEL_SLACK:
        raise Reject(f"{where}: {entries:,} weights from a file of {size:,} bytes: beyond the checker's bound of one "
                     f"weight per byte of the file (+ {MODEL_SLACK:,})")
    try:
        tensors, bound = layered_tensors(file, record["model"], tuple(widths))
    except Reject as exc:
        raise Reject(f"{where}: {exc}") from None
    rep.bound.append(f"{where} {record['name']} (sha256 {record['sha256'][:16]}…, read from the file): {bound}")
    Ws, bs = [], []
    for W, b in tensors:
        if not finite_tensor(W):
            raise Reject(f"{where}: the model file holds a NaN or infinite weight")
        Ws.append(FloatMatrix(W, W.code in NARROW))
        bs.append(b.exact())
    return widths[0], Ws, bs, False


def check_record(r: dict, where: str) -> dict:
    """A referenced deep input: {name, sha256, atoms, model, widths, output_relu}."""
    return keys(r, {"name", "sha256", "atoms", "model", "widths", "output_relu"}, where)

"""A fast exact path for networks whose weights are binary floats with at most 24 significant bits.

Trained networks come as float16/float32 tensors: every weight is a dyadic rational, and two exactness
facts of IEEE binary64 arithmetic let numpy do the work of the general path (``reduction``,
``equivalence``) without creating one rational per weight:

1. Division is correctly rounded. If r_j = μ r_i with μ ≠ 0 and p is the first index with a_p ≠ 0, then
   r_j/a_{j,p} and r_i/a_{i,p} are the same real vector, so their binary64 roundings are the same bits.
   Equal hashes of these normalized rows (or of any fixed part of them, as the plane id below) are therefore
   NECESSARY for proportionality (a hash bucket collects every candidate).
2. A number with ≤ 24 significant bits times another is exact in binary64 (48 ≤ 53 bits, and float32
   exponents stay far inside binary64's range). So r_j = (|a_{j,p}|/|a_{i,p}|) r_i holds iff
   r_j·|a_{i,p}| = r_i·|a_{j,p}| entrywise in binary64: a SUFFICIENT, exact test, vectorized.

Everything else (merged output weights, λ's, pairs, the affine identity) is exact rational arithmetic on
O(n k) numbers. The verdicts, steps, matches, merges and pairs are those of the general path, in the
same order; ``tests/test_dyadic.py`` compares both on many inputs.
Cost: O(n(m + k)) vectorized float operations, one O(n log n) sort of hashes, and O(n k) rational
operations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.core.network import Network
from certsym.core.reduction import BIAS_SHIFT, MERGE, ZEROING, Step
from certsym.decide.equivalence import Match, Matching, Merge, Pair
from certsym.numbers import QQ
from certsym.numbers import rational_from_float as exact_float
from certsym.numbers.floats import all_finite, exact_row_sums

# The odd 64-bit weights of the row hash (shared with the audit's proposal hash, which must use the same ones).
HASH_WEIGHTS = np.random.default_rng(20260101).integers(1, 2**63, size=1 << 16, dtype=np.uint64) | np.uint64(1)
# The plane id of a row hashes its normalized bias and its normalized entries up to its PLANE_NONZEROS-th nonzero
# one (every entry when it has fewer): a function of the hyperplane, found on the first PLANE_NONZEROS columns of a
# dense row. Distinct hyperplanes that share an id cost only time: exact tests split them, by the hash of every
# column first in a bucket of more than _SPLIT rows.
PLANE_NONZEROS, _SPLIT = 16, 4
# bytes of one network's rows per block of the proportionality test: the block's two gathered copies and their
# comparison stay in a core's cache (2 MiB here); 256-row blocks of 784 float32 columns (0.8 MB) ran 20% slower
_BLOCK_BYTES = 1 << 19


@dataclass(frozen=True)
class DyadicNetwork:
    """θ = (M, A, b, c) held as float32 arrays (every entry has ≤ 24 significant bits)."""

    A: np.ndarray
    b: np.ndarray
    M: np.ndarray
    c: np.ndarray

    @property
    def m(self) -> int:
        """Input dimension."""
        return self.A.shape[1]

    @property
    def n(self) -> int:
        """Hidden units."""
        return self.A.shape[0]

    @property
    def k(self) -> int:
        """Output dimension."""
        return self.M.shape[0]

    @classmethod
    def from_arrays(cls, W1, b1, W2, b2, finite: bool = False) -> DyadicNetwork | None:
        """The network, or None when some entry is not a finite float with ≤ 24 significant bits (then
        the general path applies); ``finite``: the caller has verified every entry finite (a model file's
        reader refuses anything else). Cost O(n(m + k))."""
        arrays = [np.asarray(t) for t in (W1, b1, W2, b2)]
        if any(t.dtype.kind != "f" for t in arrays) or arrays[0].ndim != 2 or arrays[0].shape[1] == 0:
            return None  # no inputs (m = 0): the general path says why
        out = []
        for t in arrays:
            x = t.astype(np.float32, copy=False)  # exact for float16; checked below for float64
            if not (finite or all_finite(x)) or (t.dtype.itemsize > 4 and not np.array_equal(x, t)):
                return None
            out.append(x)
        return cls(*out)

    def to_network(self) -> Network:
        """The same network for the general path (one rational per weight)."""
        def conv(rows):
            return [[exact_float(x) for x in row] for row in rows.tolist()]

        return Network.build(conv(self.M), conv(self.A), [exact_float(x) for x in self.b.tolist()],
                             [exact_float(x) for x in self.c.tolist()], QQ, self.m)


@dataclass
class _Rows:
    """Rows r_i = (a_i, b_i) of selected neurons with their normalized-row hash, orientation and |a_{i,p}|.

    The rows stay in the caller's float32 arrays (``parts``: (A, b, selected row indices) blocks, one
    after the other); ``gather`` widens only the rows it is asked for."""

    parts: list            # [(A, b, idx)]: position p of block t is row idx[p] of A
    V: np.ndarray          # (len, k) output weights as floats (exact while ``vex`` has no entry)
    ids: np.ndarray        # neuron ids (in D: θ2's shifted by n1)
    plane: np.ndarray      # plane id: a uint64 hash of r/a_p (PLANE_NONZEROS), orientation-free
    sign: np.ndarray       # sign of a_p
    lam: np.ndarray        # |a_p| (binary64)
    vex: dict = field(default_factory=dict)  # position -> exact v (fmpq) once merges changed it

    @classmethod
    def of(cls, A: np.ndarray, b: np.ndarray, idx: np.ndarray, V: np.ndarray, ids: np.ndarray) -> _Rows:
        # Fact 1 holds in float32 as well (its division is correctly rounded too), so the normalized rows are
        # hashed in the arrays' own precision without widening them.
        n, m = len(idx), A.shape[1]
        plane = np.empty(n, dtype=np.uint64)
        lam = np.empty(n)
        head = min(m, PLANE_NONZEROS)
        block = max(16, (1 << 16) // (head + 1))  # rows whose temporaries stay in cache
        run = n > 0 and int(idx[-1]) - int(idx[0]) == n - 1 and bool((np.diff(idx) == 1).all())
        for s in range(0, n, block):
            rows = A[idx[0] + s:idx[0] + min(s + block, n)] if run else A[idx[s:s + block]]
            bias = b[idx[s:s + block]]
            # a dense row's first PLANE_NONZEROS entries are its first nonzero ones: its id needs those columns
            # alone; the other rows are hashed on every column
            ids_, lead = _plane_ids(rows[:, :head], bias, None, m)
            other = ~(rows[:, :head] != 0).all(axis=1) if head < m else np.zeros(len(rows), dtype=bool)
            if other.any():
                ids_[other], lead[other] = _plane_ids(rows[other], bias[other], PLANE_NONZEROS)
            plane[s:s + len(rows)], lam[s:s + len(rows)] = ids_, lead
        return cls([(A, b, idx)], V, ids, plane, np.sign(lam).astype(np.int8), np.abs(lam))

    def planes(self, bucket: list[int]) -> list[list[int]]:
        """The ascending positions of a bucket grouped by exact hyperplane: rows equal up to a nonzero factor (of
        either sign, fact 2), each group ascending. Cost: ``split``, then one exact test per row and group of its
        part."""
        out: list[list[int]] = []
        for part in self.split(bucket):
            planes: list[list[int]] = []
            for j in part:
                home = next((g for g in planes if any(self.proportional(np.array([g[0]]), np.array([j]), sign)[0]
                                                      for sign in (1, -1))), None)
                if home is None:
                    planes.append([j])
                else:
                    home.append(j)
            out += planes
        return out

    def split(self, bucket: list[int]) -> list[list[int]]:
        """A bucket of positions that share a plane id, cut by the hash of every column of the normalized rows
        (proportional rows agree on it, fact 1), each part ascending; a bucket of at most _SPLIT positions is
        returned whole. Cost O(len(bucket) m) vectorized."""
        if len(bucket) <= _SPLIT:
            return [bucket]
        a, b = self.raw(np.array(bucket))
        full, _ = _plane_ids(a, b, None)
        parts: dict[int, list[int]] = {}
        for p, h in zip(bucket, full.tolist(), strict=True):
            parts.setdefault(h, []).append(p)
        return list(parts.values())

    def __len__(self) -> int:
        return len(self.ids)

    def raw(self, P: np.ndarray, out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The rows at positions P in the arrays' own precision: (a's, b's), written into ``out`` when given."""
        A0 = self.parts[0][0]
        a, b = out or (np.empty((len(P), A0.shape[1]), dtype=A0.dtype), np.empty(len(P), dtype=A0.dtype))
        start = 0
        for A, bias, idx in self.parts:
            offset = P - start
            mine = (offset >= 0) & (offset < len(idx))
            if mine.all():
                a[...], b[...] = A[idx[offset]], bias[idx[offset]]
            elif mine.any():
                a[mine], b[mine] = A[idx[offset[mine]]], bias[idx[offset[mine]]]
            start += len(idx)
        return a, b

    def gather(self, P: np.ndarray) -> np.ndarray:
        """The rows (a, b) at positions P, as binary64."""
        a, b = self.raw(P)
        out = np.empty((len(P), a.shape[1] + 1))
        out[:, :-1], out[:, -1] = a, b
        return out

    def select(self, keep: np.ndarray) -> _Rows:
        """The rows at the ascending positions ``keep``. Cost O(len(keep)) vectorized plus O(merged)."""
        (A, b, idx), = self.parts
        vex = {}
        if self.vex:
            old = np.fromiter(self.vex, dtype=np.int64, count=len(self.vex))
            new = np.searchsorted(keep, old)
            kept = new < len(keep)
            kept[kept] = keep[new[kept]] == old[kept]
            vex = {q: self.vex[p] for q, p in zip(new[kept].tolist(), old[kept].tolist(), strict=True)}
        return _Rows([(A, b, idx[keep])], self.V[keep], self.ids[keep], self.plane[keep], self.sign[keep],
                     self.lam[keep], vex)

    def proportional(self, I: np.ndarray, J: np.ndarray, sign: int = 1) -> np.ndarray:
        """r_J = sign·(λ_J/λ_I) r_I exactly (fact 2), for position arrays I, J; vectorized. The float32 rows are
        multiplied into binary64 by the ufunc itself, in blocks whose buffers are allocated once: fresh pages for
        every block cost more than the arithmetic. A block whose ratios λ_J/λ_I are all powers of two 2^d (a
        permutation, or a rescaling by powers of two) is tested in the rows' own precision instead, scaling up the
        row of the smaller λ: 2^|d| x is the float32 it denotes unless it overflows, and then it is ±inf, equal to no
        finite entry, so r_J = ±2^d r_I is one equality of float32 numbers per entry."""
        out = np.empty(len(I), dtype=bool)
        A0 = self.parts[0][0]
        rows = max(1, min(len(I), _BLOCK_BYTES // (A0.shape[1] * A0.itemsize + 1)))
        ai, aj = (np.empty((rows, A0.shape[1]), dtype=A0.dtype) for _ in range(2))
        bi, bj = (np.empty(rows, dtype=A0.dtype) for _ in range(2))
        equal = np.empty((rows, A0.shape[1]), dtype=bool)
        wide: list[np.ndarray] = []  # the binary64 products, allocated when a block needs them
        for s in range(0, len(I), rows):
            i, j = I[s:s + rows], J[s:s + rows]
            c = len(i)
            (fi, ei), (fj, ej) = np.frexp(self.lam[i]), np.frexp(self.lam[j])
            if (fi == fj).all():
                d = (ej - ei).astype(np.int32)
                up = d >= 0
                self.raw(np.where(up, i, j), (ai[:c], bi[:c]))  # the row scaled up
                self.raw(np.where(up, j, i), (aj[:c], bj[:c]))
                e = np.abs(d)
                with np.errstate(over="ignore"):
                    np.ldexp(ai[:c], e[:, None], out=ai[:c])
                    scaled_b = np.ldexp(bi[:c], e)
                if sign < 0:
                    np.negative(ai[:c], out=ai[:c])
                    np.negative(scaled_b, out=scaled_b)
                np.equal(ai[:c], aj[:c], out=equal[:c])
                out[s:s + c] = equal[:c].all(axis=1) & (scaled_b == bj[:c])
                continue
            self.raw(i, (ai[:c], bi[:c]))
            self.raw(j, (aj[:c], bj[:c]))
            if not wide:
                wide.extend(np.empty((rows, A0.shape[1])) for _ in range(2))
            pi, pj = wide
            li, lj = self.lam[i], sign * self.lam[j]
            np.multiply(aj[:c], li[:, None], out=pj[:c])
            np.multiply(ai[:c], lj[:, None], out=pi[:c])
            np.equal(pj[:c], pi[:c], out=equal[:c])
            out[s:s + c] = equal[:c].all(axis=1) & (bj[:c] * li == bi[:c] * lj)
        return out

    def v(self, pos: int) -> tuple:
        return self.vex.get(pos) or tuple(exact_float(x) for x in self.V[pos].tolist())

    def ratio(self, i: int, j: int) -> fmpq:
        return exact_float(self.lam[j]) / exact_float(self.lam[i])

    def ratios(self, I: np.ndarray, J: np.ndarray) -> list[fmpq]:
        """[λ_J/λ_I] exactly, as ``ratio`` gives them one by one, with one rational made per pair: each λ is
        o·2^t with o an odd integer (λ has at most 24 significant bits), so λ_j/λ_i is (o_j/g)/(o_i/g)·2^(t_j − t_i)
        with g = gcd(o_i, o_j), already in lowest terms. Equal ratios share one rational object (a matching has few
        distinct scales). Cost O(len log len) vectorized plus one rational per distinct ratio."""
        mantissa, exponent = np.frexp(self.lam)  # λ = f·2^e, f in [1/2, 1): f·2^24 is an integer
        whole = (mantissa * 2.0**24).astype(np.int64)
        low = whole & -whole  # the lowest set bit: odd part and power of two apart
        odd, shift = whole // low, exponent.astype(np.int64) - 24 + np.frexp(low.astype(np.float64))[1] - 1
        g = np.gcd(odd[I], odd[J])
        triples = np.stack([odd[J] // g, odd[I] // g, shift[J] - shift[I]], axis=1)
        order = np.lexsort(triples.T)  # equal triples become neighbours (np.unique(axis=0) is 15x slower here)
        ordered = triples[order]
        first = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)] if len(order) else np.zeros(0, bool)
        which = np.empty(len(order), dtype=np.int64)
        which[order] = np.cumsum(first) - 1
        made = [fmpq(p << d, q) if d >= 0 else fmpq(p, q << -d) for p, q, d in ordered[first].tolist()]
        return [made[w] for w in which.tolist()]


def _plane_ids(rows: np.ndarray, bias: np.ndarray, nonzeros: int | None,
               m: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For rows (a, b) of float32 (or float64) numbers, a the first columns of a's with m entries (all of them by
    default): the uint64 id Σ_q w_q bits(a_q/a_p) + w_m bits(b/a_p) over the columns q up to the ``nonzeros``-th
    nonzero entry of a (every column when None, or when a has fewer), with a_p its first nonzero entry and w the
    HASH_WEIGHTS; and a_p (0 for a zero row, hashed but never used). ±inf and 0 are correctly rounded quotients too,
    and −0 counts as 0. A float32 row whose quotients leave float32's normal range (an overflow to ±inf, a nonzero
    entry rounded to a subnormal or to 0) is hashed on its binary64 quotients instead, which stay within 2^±277: that
    choice depends only on the normalized row, so proportional rows still share their id, and rows that differ do not
    collide in one bucket because float32 rounded them alike. Cost O(rows × columns) vectorized."""
    c, width = rows.shape
    weights = HASH_WEIGHTS[np.arange(width) % len(HASH_WEIGHTS)]
    last = HASH_WEIGHTS[(width if m is None else m) % len(HASH_WEIGHTS)]
    bits = np.uint32 if rows.dtype == np.float32 else np.uint64
    nonzero = rows != 0
    lead = rows[np.arange(c), np.argmax(nonzero, axis=1)]
    zero = rows.dtype.type(0)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        normal = rows / lead[:, None] + zero
        offset = bias / lead + zero
    hashed = nonzero
    if nonzeros is not None:
        count = np.cumsum(nonzero, axis=1, dtype=np.int32)
        cut = np.where(count[:, -1] < nonzeros, width, np.argmax(count >= nonzeros, axis=1) + 1)
        beyond = np.arange(width) >= cut[:, None]
        normal[beyond] = zero
        hashed = nonzero & ~beyond
    ids = np.matmul(normal.view(bits), weights, dtype=np.uint64) + offset.view(bits).astype(np.uint64) * last
    if rows.dtype == np.float32:
        # a nonzero quotient whose exponent field is 0 (rounded to a subnormal or to 0) or 255 (to ±inf)
        field, shift = (normal.view(np.uint32) >> 23) & 0xFF, (offset.view(np.uint32) >> 23) & 0xFF
        wide = (((field == 0) & hashed) | (field == 255)).any(axis=1) | ((shift == 0) & (bias != 0)) | (shift == 255)
        wide &= lead != 0  # a zero row's id is never used
        if wide.any():
            ids[wide] = _plane_ids(rows[wide].astype(np.float64), bias[wide].astype(np.float64), nonzeros, m)[0]
    return ids, lead


def _buckets(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions sorted by key (stably, so ascending within a key), and the start and size of each run."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(order) else np.zeros(0, np.int64)
    return order, starts, np.diff(np.r_[starts, len(order)])


def _widen(A: np.ndarray, b: np.ndarray, idx: np.ndarray) -> np.ndarray:
    R = np.empty((len(idx), A.shape[1] + 1))
    R[:, :-1] = A[idx]
    R[:, -1] = b[idx]
    return R


@dataclass
class FastReduction:
    """θ → θ_min on the fast path: the steps, the constant, the surviving neurons and their exact v."""

    steps: list[Step]
    c: list[fmpq]
    rows: _Rows  # the surviving (minimal-form) neurons


def reduce(net: DyadicNetwork) -> FastReduction:
    """Moves 1–3 of MATH.md exactly as ``reduction.reduce`` records them (same steps, same order), computed once
    per network (an audit decides every member of a class against one representative; nothing mutates a
    FastReduction once built). Cost O(n(m + k)) vectorized plus O(#merges · k) rational operations."""
    cached = net.__dict__.get("_reduction")
    if cached is None:
        cached = _reduce(net)
        object.__setattr__(net, "_reduction", cached)  # a cache beside the frozen fields
    return cached


def _reduce(net: DyadicNetwork) -> FastReduction:
    zero_v = ~(net.M != 0).any(axis=0)
    every = np.arange(net.n)
    hashed = _Rows.of(net.A, net.b, every, net.M.T, every)  # one pass over A: a row's leading entry is 0 iff a = 0
    zero_a = hashed.lam == 0
    steps: list[Step] = []
    c = [exact_float(x) for x in net.c.tolist()]
    already = zero_v & zero_a & (net.b == 0)  # zero neurons: no move applies (as in the general path)
    for i in np.flatnonzero((zero_v | zero_a) & ~already).tolist():
        if not zero_v[i] and net.b[i] > 0:
            b = exact_float(net.b[i])
            c = [cj + exact_float(vj) * b for cj, vj in zip(c, net.M[:, i].tolist(), strict=True)]
            steps.append(Step("bias_shift", i, statement=BIAS_SHIFT))
        else:
            steps.append(Step("zero", i, statement=ZEROING))
    alive = np.flatnonzero(~(zero_v | zero_a))
    rows = hashed if len(alive) == net.n else hashed.select(alive)
    key = rows.plane * np.uint64(2) + (rows.sign < 0).astype(np.uint64)
    order, starts, sizes = _buckets(key)
    merges: list[tuple[int, int, fmpq]] = []  # (source position, into position, μ)
    # a bucket of two (the common case), vectorized: the second row merges into the first iff proportional
    two = starts[sizes == 2]
    I, J = order[two], order[two + 1]
    same = rows.proportional(I, J) if len(two) else np.zeros(0, bool)
    merges.extend((j, i, rows.ratio(i, j)) for i, j in zip(I[same].tolist(), J[same].tolist(), strict=True))
    for start, size in zip(starts[sizes > 2].tolist(), sizes[sizes > 2].tolist(), strict=True):
        for part in rows.split(order[start:start + size].tolist()):
            reps: list[int] = []
            for j in part:  # positions ascend with neuron ids: the first one found is the general path's
                hit = next((i for i in reps if rows.proportional(np.array([i]), np.array([j]))[0]), None)
                if hit is None:
                    reps.append(j)
                else:
                    merges.append((j, hit, rows.ratio(hit, j)))
    merges.sort()
    gone = set()
    for j, i, mu in merges:
        rows.vex[i] = tuple(x + mu * y for x, y in zip(rows.v(i), rows.v(j), strict=True))
        steps.append(Step("merge", int(rows.ids[i]), source=int(rows.ids[j]), lam=mu, statement=MERGE))
        gone.add(j)
    for i in sorted({i for _, i, _ in merges}):
        if all(x == 0 for x in rows.vex[i]):
            steps.append(Step("zero", int(rows.ids[i]), statement=ZEROING))
            gone.add(i)
    keep = np.setdiff1d(np.arange(len(rows)), np.array(sorted(gone), dtype=np.int64))
    return FastReduction(steps, c, rows.select(keep) if gone else rows)


@dataclass
class FastVerdict:
    """The decision with the evidence of its certificate: for EQUIVALENT the general path's ``Verdict`` fields;
    for NOT EQUIVALENT what ``witness`` needs (a differing hyperplane, or the nonzero affine difference)."""

    equivalent: bool
    red1: FastReduction
    red2: FastReduction
    matches: Sequence[Match] = field(default_factory=list)  # a Matching when no other evidence interleaves
    merges: list[Merge] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    kink_plane: int | None = None       # its hash (``_Rows.plane``)
    kink_row: np.ndarray | None = None  # NOT EQUIVALENT: (a, b) of a hyperplane whose kinks differ, or None when
    affine: tuple | None = None         # all kinks agree and ρ1 − ρ2 is this affine map (L, C) ≠ 0
    witness: list[fmpq] | None = None
    values: tuple[list[fmpq], list[fmpq]] | None = None


def decide(t1: DyadicNetwork, t2: DyadicNetwork) -> FastVerdict:
    """Theorems 3/4: ρ(θ1) = ρ(θ2)? The evidence (matches, cross merges, antisymmetric pairs) is built as
    ``equivalence.pairing`` builds it, and equivalence holds iff every neuron of D = θ1_min ⊖ θ2_min is
    accounted for and the affine parts cancel. Cost O((n1 + n2)(m + k)) vectorized plus O(n k) exact."""
    red1, red2 = reduce(t1), reduce(t2)
    n1 = t1.n
    r1, r2 = red1.rows, red2.rows
    D = _Rows(r1.parts + r2.parts, np.concatenate([r1.V, -r2.V]),
              np.concatenate([r1.ids, r2.ids + n1]), np.concatenate([r1.plane, r2.plane]),
              np.concatenate([r1.sign, r2.sign]), np.concatenate([r1.lam, r2.lam]),
              {**r1.vex, **{len(r1.ids) + p: tuple(-x for x in v) for p, v in r2.vex.items()}})
    verdict = FastVerdict(False, red1, red2)
    order, starts, sizes = _buckets(D.plane)
    # The common case, vectorized: a bucket of two same-oriented neurons, one from each network.
    two = starts[sizes == 2]
    I, J = order[two], order[two + 1]
    simple = (D.ids[I] < n1) & (D.ids[J] >= n1) & (D.sign[I] == D.sign[J])
    if simple.any():
        simple[simple] = D.proportional(I[simple], J[simple])
        cancel = (D.V[I] * D.lam[I, None] == -(D.V[J] * D.lam[J, None])).all(axis=1)  # fact 2: exact
        if D.vex:  # a merged neuron's v is exact, not D.V's: v_i + (λ_j/λ_i) v_j = 0 in rationals
            merged = simple & (np.isin(I, list(D.vex)) | np.isin(J, list(D.vex)))
            for p in np.flatnonzero(merged).tolist():
                i, j = int(I[p]), int(J[p])
                mu = D.ratio(i, j)
                cancel[p] = all(x + mu * y == 0 for x, y in zip(D.v(i), D.v(j), strict=True))
        simple &= cancel
    I1, J1 = I[simple], J[simple]
    by_first = np.argsort(I1, kind="stable")
    I1, J1 = I1[by_first], J1[by_first]
    matched = Matching(D.ids[I1].tolist(), (D.ids[J1] - n1).tolist(), D.ratios(I1, J1))
    planes: list[tuple[int, list]] = []  # the other buckets: (first position in D, evidence)
    rest = np.concatenate([two[~simple], starts[sizes != 2]])
    leftover = False
    for start in np.sort(rest).tolist():
        bucket = order[start:start + int(sizes[np.searchsorted(starts, start)])]
        for first, evidence, ok in (_pair_plane(D, plane, n1) for plane in D.planes(sorted(bucket.tolist()))):
            planes.append((first, evidence))
            if not ok and not leftover:
                verdict.kink_row, verdict.kink_plane = D.gather(np.array([first]))[0], D.plane[first]
            leftover |= not ok
    if planes:
        kinds = {Match: verdict.matches, Merge: verdict.merges, Pair: verdict.pairs}
        for item in _by_first(I1.tolist(), matched, planes):
            kinds[type(item)].append(item)
    else:
        verdict.matches = matched
    if leftover:
        return verdict
    k, m = t1.k, t1.m
    const = [x - y for x, y in zip(red1.c, red2.c, strict=True)]
    linear_zero = True
    for pair in verdict.pairs:
        const = [x + y for x, y in zip(const, pair.constant, strict=True)]
    if verdict.pairs:
        total = [[sum((p.linear[j][q] for p in verdict.pairs), fmpq(0)) for q in range(m)] for j in range(k)]
        linear_zero = all(x == 0 for row in total for x in row)
    verdict.equivalent = linear_zero and all(x == 0 for x in const)
    if not verdict.equivalent:
        verdict.affine = (total if verdict.pairs else [[fmpq(0)] * m for _ in range(k)], const)
    return verdict


def _by_first(firsts: list[int], matched: list[Match], planes: list[tuple[int, list]]):
    """The evidence in first-appearance order (the general path's): the simple matches (their first positions
    ``firsts`` ascending) merged with the other buckets' evidence."""
    planes.sort(key=lambda fe: fe[0])
    p = 0
    for first, match in zip(firsts, matched, strict=True):
        while p < len(planes) and planes[p][0] < first:
            yield from planes[p][1]
            p += 1
        yield match
    for _, evidence in planes[p:]:
        yield from evidence


def _pair_plane(D: _Rows, plane: list[int], n1: int) -> tuple[int, list, bool]:
    """``equivalence.pairing`` on the neurons of one exact hyperplane (``_Rows.planes``): match or merge per
    orientation and pair the two sides. Returns (first position, evidence, accounted)."""
    evidence: list = []
    live = {p: D.v(p) for p in plane}
    sides = {s: [p for p in plane if D.sign[p] == s] for s in (1, -1)}
    for s in (1, -1):
        if len(sides[s]) == 2:
            i, j = sides[s]
            mu = D.ratio(i, j)
            merged = tuple(x + mu * y for x, y in zip(live[i], live[j], strict=True))
            if all(x == 0 for x in merged):
                evidence.append(Match(int(D.ids[i]), int(D.ids[j]) - n1, mu))
                sides[s] = []
            else:
                evidence.append(Merge(int(D.ids[i]), int(D.ids[j]), mu))
                live[i] = merged
                sides[s] = [i]
    plus, minus = sides[1], sides[-1]
    ok = len(plus) <= 1 and len(minus) <= 1 and len(plus) == len(minus)
    if ok and plus:
        i, j = plus[0], minus[0]
        lam = D.ratio(i, j)
        v_i = live[i]
        ok = all(y * lam == -x for x, y in zip(v_i, live[j], strict=True))
        if ok:
            a = [exact_float(x) for x in D.gather(np.array([i]))[0].tolist()]
            evidence.append(Pair(int(D.ids[i]), int(D.ids[j]), lam,
                                 tuple(tuple(vj * aq for aq in a[:-1]) for vj in v_i),
                                 tuple(vj * a[-1] for vj in v_i)))
    return plane[0], evidence, ok


# -- a witness for NOT EQUIVALENT at scale ------------------------------------------------------------------
def witness(t1: DyadicNetwork, t2: DyadicNetwork, verdict: FastVerdict) -> None:
    """A rational point where ρ(θ1) ≠ ρ(θ2), with both exact values, stored in ``verdict``.

    When a hyperplane H = {u·x + β = 0} carries different kinks: a point x0 ∈ H with few nonzero coordinates that
    lies on no other neuron's hyperplane (coordinates are added while some other hyperplane passes through
    x0), and ε > 0 (a power of two) such that x0 ± ε e_p (u_p ≠ 0) crosses no other hyperplane. Along that
    segment ρ1 − ρ2 has second difference ε u_p (J1_H − J2_H)-proportional, nonzero, so it differs at one of the
    three points. When every kink agrees the difference is the affine map (L, C) ≠ 0: x = 0 if C ≠ 0, else e_q.
    Only θ_min's neurons count (dead and constant neurons have no kink, a merged one the hyperplane of its
    representative). Cost O(n) vectorized float operations per move of x0 within H and O(n s) integer operations
    per exact evaluation, for s nonzero coordinates (usually 1 or 2)."""
    m = t1.m
    if verdict.kink_row is None:
        L, C = verdict.affine
        q = None if any(x != 0 for x in C) else next(q for q in range(m) if any(row[q] != 0 for row in L))
        points = [[fmpq(int(i == q)) for i in range(m)]]
    else:
        base, *sides = _kink_points((t1, t2), (verdict.red1.rows, verdict.red2.rows), verdict.kink_row,
                                    verdict.kink_plane)
        points = [*sides, base]  # the difference is usually 0 at the base point, on H: try the two sides first
    for x in points:
        values = (_evaluate(t1, x), _evaluate(t2, x))
        if values[0] != values[1]:
            verdict.witness, verdict.values = x, values
            return
    raise AssertionError("no witness among the probe points")  # pragma: no cover - excluded by the argument


def _kink_points(nets: tuple[DyadicNetwork, DyadicNetwork], reduced: tuple[_Rows, _Rows], h: np.ndarray,
                 plane: int) -> list[list[fmpq]]:
    """x0 ∈ H on no other hyperplane of θ_min's neurons (``reduced``) and x0 ± ε e_p (``witness``). A row on H
    has H's hash; those rows are tested exactly (fact 2). Cost O(n) vectorized float operations per move of x0
    within H (usually none or one), a rational per neuron only where the float bound cannot decide."""
    p = int(np.flatnonzero(h[:-1])[0])
    off = []  # per network, the neurons of θ_min not on H
    for t, rows in zip(nets, reduced, strict=True):
        ids = rows.ids
        near = np.flatnonzero(rows.plane == np.uint64(plane))
        R = _widen(t.A, t.b, ids[near])
        on = (R * h[p] == h[None, :] * R[:, p:p + 1]).all(axis=1)  # fact 2: exact
        off.append(np.setdiff1d(ids, ids[near[on]]))
    t1 = nets[0]
    planes = _Hyperplanes(nets, off)
    u_p, beta = exact_float(h[p]), exact_float(h[-1])
    coords: dict[int, fmpq] = {}

    def point() -> dict[int, fmpq]:
        x = dict(coords)
        x[p] = -(beta + sum((exact_float(h[q]) * y for q, y in coords.items()), fmpq(0))) / u_p
        return x

    x0 = point()
    zeros = planes.zeros(x0)
    # While some neuron's hyperplane passes through x0, move x0 within H along a coordinate q that separates that
    # neuron from H (a_q u_p ≠ a_p u_q), to an integer value that keeps every other neuron off x0: along this
    # move each ℓ_i is affine in the value, so each neuron forbids at most one value (found in floats, confirmed
    # exactly). The set of neurons through x0 shrinks at every step.
    while zeros:
        row = planes.row(zeros[0])
        separates = row[:-1] * float(h[p]) != row[p] * h[:-1]  # products of ≤ 24-bit numbers: exact
        separates[p] = False
        q = int(np.flatnonzero(separates)[0])
        # moving x_q by δ moves x_p by −δ u_q/u_p, to stay on H: ℓ_i changes by δ s_i/u_p with
        # s_i = a_iq u_p − a_ip u_q, a difference of exact products, so ŝ_i has relative error ≤ 2^-53 (no
        # cancellation: the operands are exact). ℓ_i vanishes at x_q = old − u_p ℓ_i / s_i; with v̂ ± e for ℓ_i,
        # the integers within the rounding-aware radius of that root are the values it may forbid.
        up = float(h[p])
        value, error = planes.approx(x0)
        s = planes.column(q) * up - planes.column(p) * float(h[q])
        old = coords.get(q, fmpq(0))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            root = float(old) - up * value / s
            radius = 2 * abs(up) * (error + np.abs(value) * 2.0**-50) / np.abs(s) + 2.0**-40 * np.abs(root)
        near = np.isfinite(root) & np.isfinite(radius) & (radius < 4)
        taken = {c for r, e in zip(root[near].tolist(), radius[near].tolist(), strict=True)
                 for c in range(math.ceil(r - e), math.floor(r + e) + 1)}
        allowed = set(zeros[1:])
        c = 1
        while True:
            while c in taken:
                c += 1
            coords[q] = fmpq(c)
            moved = point()
            now = planes.zeros(moved)
            if set(now) < set(zeros) and set(now) <= allowed:
                break
            taken.add(c)
        x0, zeros = moved, now
    eps = fmpq(1)
    bound = planes.clearance(x0, p)
    while bound is not None and eps >= bound:
        eps /= 2
    base = [x0.get(q, fmpq(0)) for q in range(t1.m)]
    return [base] + [[y + (sign * eps if q == p else 0) for q, y in enumerate(base)] for sign in (1, -1)]


class _Hyperplanes:
    """ℓ_i(x) = b_i + a_i·x for the chosen neurons of both networks, at sparse rational points x: in binary64 with
    a rigorous error bound, exactly (rationals) only where that bound cannot decide. With s nonzero coordinates,
    the computed value v̂ satisfies |v̂ − ℓ(x)| ≤ (s + 3)·2^-51·(|b| + Σ_q |a_q||x̂_q|) + (s + 2)·2^-1070: each
    coordinate is rounded once (x̂_q), each product and sum once, γ_(s+2) < (s + 3)·2^-53 ≤ a quarter of the
    factor used (which also covers the rounding of the magnitude itself), and the absolute term underflow."""

    def __init__(self, nets: tuple[DyadicNetwork, DyadicNetwork], off: list[np.ndarray]) -> None:
        self.nets, self.off = nets, off
        self.b = np.concatenate([t.b[idx].astype(np.float64) for t, idx in zip(nets, off, strict=True)])
        self._columns: dict[int, np.ndarray] = {}

    def column(self, q: int) -> np.ndarray:
        if q not in self._columns:
            self._columns[q] = np.concatenate([t.A[idx, q].astype(np.float64)
                                               for t, idx in zip(self.nets, self.off, strict=True)])
        return self._columns[q]

    def _where(self, j: int) -> tuple[DyadicNetwork, int]:
        first = len(self.off[0])
        return (self.nets[0], int(self.off[0][j])) if j < first else (self.nets[1], int(self.off[1][j - first]))

    def row(self, j: int) -> np.ndarray:
        """(a_j | b_j) in binary64 (exact)."""
        t, i = self._where(j)
        return np.append(t.A[i].astype(np.float64), np.float64(t.b[i]))

    def exact(self, j: int, x: dict[int, fmpq]) -> fmpq:
        t, i = self._where(j)
        return exact_float(t.b[i]) + sum((exact_float(t.A[i, q]) * y for q, y in x.items()), fmpq(0))

    def approx(self, x: dict[int, fmpq]) -> tuple[np.ndarray, np.ndarray]:
        """(v̂, its error bound) for every neuron (class docstring). Cost O(n s) float operations."""
        value, size = self.b.copy(), np.abs(self.b)
        for q, y in x.items():
            column, yf = self.column(q), int(y.p) / int(y.q)  # int / int is correctly rounded
            value += column * yf
            size += np.abs(column) * abs(yf)
        s = len(x)
        return value, (s + 3) * 2.0**-51 * size + (s + 2) * 2.0**-1070

    def zeros(self, x: dict[int, fmpq]) -> list[int]:
        """The neurons with ℓ_j(x) = 0 exactly: those the float bound cannot exclude, evaluated exactly."""
        value, error = self.approx(x)
        return [int(j) for j in np.flatnonzero(np.abs(value) <= error) if self.exact(int(j), x) == 0]

    def clearance(self, x: dict[int, fmpq], p: int) -> fmpq | None:
        """A lower bound of min_j |ℓ_j(x)| / (2 |a_jp|) over the neurons with a_jp ≠ 0 (none of them through x):
        x ± ε e_p crosses no hyperplane for ε below it. None when no neuron depends on x_p."""
        value, error = self.approx(x)
        a = self.column(p)
        moving = a != 0
        if not moving.any():
            return None
        sure = moving & (np.abs(value) > 2 * error)
        lowest = None
        if sure.any():  # two roundings (the difference, the quotient), each absorbed by the factor
            ratio = float(((np.abs(value[sure]) - error[sure]) / (2 * np.abs(a[sure]))).min())
            lowest = exact_float(ratio) * (1 - fmpq(1, 2**48))
        for j in np.flatnonzero(moving & ~sure).tolist():
            b = abs(self.exact(j, x)) / (2 * abs(exact_float(a[j])))
            lowest = b if lowest is None or b < lowest else lowest
        return lowest


def evaluate(t: DyadicNetwork, x: list[fmpq]) -> list[fmpq]:
    """ρ(θ)(x) exactly (``_evaluate``). Cost O(n (s + k)) vectorized operations for s nonzero coordinates of x."""
    return _evaluate(t, x)


def _evaluate(t: DyadicNetwork, x: list[fmpq]) -> list[fmpq]:
    """ρ(θ)(x) exactly, touching only the nonzero coordinates of x: ρ_j(x) = c_j + Σ_{i active} M_ji b_i
    + Σ_q x_q Σ_{i active} M_ji A_iq, where every product of two float32 numbers is exact in binary64 and its sums
    are exact (``exact_row_sums``). The active neurons (z_i = b_i + Σ_q A_iq x_q > 0) come from binary64 with a
    rigorous error bound, z_i exactly where the bound cannot decide its sign. Cost O(n k s) vectorized for s ≤
    _SPARSE nonzero coordinates (a witness has one or two), plus one rational per undecided neuron; a denser x
    goes to ``_evaluate_dense``, O(n (s + k)) integer operations."""
    nonzero = [(q, y) for q, y in enumerate(x) if y != 0]
    if len(nonzero) > _SPARSE:
        return _evaluate_dense(t, x)
    active = _active(t, nonzero)
    M = t.M[:, active].astype(np.float64)
    terms = [M * t.b[active].astype(np.float64)] + [M * t.A[active, q].astype(np.float64) for q, _ in nonzero]
    sums, k = exact_row_sums(np.concatenate(terms)), t.k
    return [exact_float(c) + sums[j] + sum((y * sums[(1 + r) * k + j] for r, (_, y) in enumerate(nonzero)), fmpq(0))
            for j, c in enumerate(t.c.tolist())]


_SPARSE = 8  # nonzero coordinates up to which the exact sums of products beat one integer per weight
_SCALE = 149  # every float32 is an integer times 2^-149 (the smallest subnormal)


def _scaled(values: np.ndarray) -> list[int]:
    """The float32 entries v as the exact integers v · 2^149: frexp gives v = F · 2^(e − 24) with |F| < 2^24 (for a
    subnormal e − 24 + 149 < 0, and F is then divisible by the power of two that shift removes)."""
    mantissa, exponent = np.frexp(values.astype(np.float64))
    F = (mantissa * float(1 << 24)).astype(np.int64).tolist()
    return [f << s if s >= 0 else f >> -s
            for f, s in zip(F, (exponent.astype(np.int64) - 24 + _SCALE).tolist(), strict=True)]


def _evaluate_dense(t: DyadicNetwork, x: list[fmpq]) -> list[fmpq]:
    """ρ(θ)(x) exactly in integers: with x = P / D (D > 0) and every weight w = W / 2^149, z_i · D · 2^149 =
    B_i D + Σ_q A_iq P_q and ρ_j · D · 2^298 = C_j D 2^149 + Σ_{z_i > 0} M_ji Z_i. Cost O(n (s + k)) integer
    operations for s nonzero coordinates."""
    D = math.lcm(1, *(int(y.q) for y in x if y != 0))
    Z = [b * D for b in _scaled(t.b)]
    for q, y in enumerate(x):
        if y != 0:
            P = int(y.p) * (D // int(y.q))
            Z = [z + a * P for z, a in zip(Z, _scaled(t.A[:, q]), strict=True)]
    active = [i for i, z in enumerate(Z) if z > 0]
    Za = [Z[i] for i in active]
    den = D << (2 * _SCALE)
    return [fmpq(c * (D << _SCALE) + sum(row[i] * z for i, z in zip(active, Za, strict=True)), den)
            for c, row in zip(_scaled(t.c), (_scaled(t.M[j]) for j in range(t.k)), strict=True)]


def _active(t: DyadicNetwork, nonzero: list[tuple[int, fmpq]]) -> np.ndarray:
    """The neurons with z_i = b_i + Σ_q A_iq x_q > 0, exactly. In binary64, with each x_q correctly rounded (integer
    true division: |x̃_q − x_q| ≤ 2^-53 |x̃_q| + 2^-1074, the second term for a subnormal or zero x̃_q) and
    s = len(nonzero): |z̃_i − z_i| ≤ (s + 3)·2^-53 (|b_i| + Σ_q |A_iq x̃_q|)(1 + O(2^-50)) + Σ_q |A_iq|·2^-1074
    + (s + 1)·2^-1074 (each operation's underflow), within the bound used below; a neuron inside the bound (or not
    finite) is decided with rationals."""
    z = t.b.astype(np.float64)
    size, tiny = np.abs(z), np.zeros_like(z)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for q, y in nonzero:
            try:
                approx = int(y.p) / int(y.q)
            except OverflowError:
                approx = math.inf
            column = t.A[:, q].astype(np.float64)
            z = z + column * approx
            size = size + np.abs(column) * abs(approx)
            tiny = tiny + np.abs(column)
        bound = (len(nonzero) + 4) * 2.0**-52 * size + tiny * 2.0**-1072 + (len(nonzero) + 2) * 2.0**-1070
        sure = np.isfinite(z) & np.isfinite(bound) & (np.abs(z) > bound)
    active = sure & (z > 0)
    for i in np.flatnonzero(~sure).tolist():
        exact = exact_float(t.b[i]) + sum((exact_float(t.A[i, q]) * y for q, y in nonzero), fmpq(0))
        active[i] = exact > 0
    return np.flatnonzero(active)

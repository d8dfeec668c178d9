"""Why two float networks that are NOT EQUIVALENT almost are: a summary for the reader, never a verdict.

Neuron i of θ1 has an exact partner j in θ2 when (a_j, b_j) = λ (a_i, b_i) with λ > 0 and λ v_j = v_i exactly,
the H_n relation. Rows are compared through their normalized form r / |r_p| (p the first nonzero input
weight): IEEE division is correctly rounded, so positively proportional rows of ≤ 24-bit floats have
bit-identical normalized rows, and the output weights scaled by |r_p| are exact in binary64. For a neuron
without an exact partner, the nearest neuron of θ2 by normalized row (among θ2's neurons without an exact partner
in θ1, when there are any) is reported with the largest difference,
relative and in units in the last place (ulps) of the file's element type, after scaling the partner onto
the neuron; when that row is the same bit for bit, the difference reported is that of the output weights. The
neurons of θ2 without a partner in θ1 (an extra unit) are counted too. Cost: O((n1 + n2)(m + k)) plus one
n1' × n2 matrix product over the unpartnered neurons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class NearMiss:
    """``partnered`` of ``n`` live neurons of θ1 have an exact partner in θ2 (and ``partnered2`` of ``n2`` of θ2
    one in θ1); ``worst`` lists, for up to three others of θ1, (neuron, nearest partner, largest relative
    difference, largest difference in ulps, "row" or "output"): "row" when the nearest rows differ, "output"
    when the rows are the same bit for bit and the output weights differ (then the figures are theirs)."""

    n: int
    partnered: int
    worst: list[tuple[int, int, float, float, str]]
    dtype: str
    n2: int = 0
    partnered2: int = 0
    zeroed: list[tuple[int, int]] = field(default_factory=list)  # per ``worst`` row: weights 0 in θ2 only, in θ1 only
    whole: list[str] = field(default_factory=list)  # what happened to the whole network, in words (``changes``)

    def lines(self) -> list[str]:
        """The summary as short lines of text."""
        out = [*self.whole,
               f"{self.partnered} of {self.n} neurons of θ1 have an exact partner in θ2 (a positive rescaling)"]
        if self.n2 != self.partnered2:
            lone = self.n2 - self.partnered2
            out.append(f"{lone} of the {self.n2} neurons of θ2 {'has' if lone == 1 else 'have'} none in θ1")
        for i, j, rel, ulps, part in self.worst:
            if part == "output":
                out.append(f"  neuron {i}: its row is that of neuron {j} of θ2; their output weights differ by at "
                           f"most {rel:.3g} relative ({ulps:.3g} ulp of {self.dtype}) after rescaling")
            else:
                out.append(f"  neuron {i}: nearest is neuron {j} of θ2, differing by at most {rel:.3g} relative "
                           f"({ulps:.3g} ulp of {self.dtype}) after rescaling")
        for (i, j, _, _, part), (in2, in1) in zip(self.worst, self.zeroed, strict=False):
            if part == "row" and (in2 or in1):  # what happened, where the relative figure hides it
                said = [f"{k} of its weights are 0 in {side} and not in {other}" for k, side, other in
                        ((in2, f"neuron {j} of θ2", "θ1"), (in1, "θ1", f"neuron {j} of θ2")) if k]
                out.append(f"  neuron {i}: " + "; ".join(said) + " (set to 0: pruned?)")
        return out

    def to_json(self) -> dict:
        return {"changes": list(self.whole), "neurons": self.n, "partnered": self.partnered, "dtype": self.dtype,
                "neurons2": self.n2, "partnered2": self.partnered2,
                "nearest": [{"neuron": i, "partner": j, "relative": _finite(rel), "ulps": _finite(ulps),
                             "differs_in": part} for i, j, rel, ulps, part in self.worst]}


def _finite(x: float) -> float | None:
    """x, or None where it is not finite (an overflowing scale: JSON has no NaN)."""
    return x if np.isfinite(x) else None


_CHUNK = 4096  # rows per block: the temporaries stay a few tens of MB (fresh pages cost more than the arithmetic)


def _live(W1: np.ndarray, W2: np.ndarray) -> np.ndarray:
    """The neurons with a nonzero input row and a nonzero output column."""
    return np.flatnonzero(W1.any(axis=1) & W2.any(axis=0))


def _normalized(W1: np.ndarray, b1: np.ndarray, W2: np.ndarray,
                live: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of the neurons ``live`` (default: every live one) divided by |first nonzero input weight| (in the
    file's type), their output weights multiplied by it (binary64, exact), and their indices. One output array,
    filled in blocks."""
    live = _live(W1, W2) if live is None else live
    rows = np.empty((len(live), W1.shape[1] + 1), dtype=W1.dtype)
    lead = np.empty(len(live), dtype=W1.dtype)
    for s, block, block_lead in _normalized_blocks(W1, b1, live):
        rows[s:s + len(block)], lead[s:s + len(block)] = block, block_lead
    return rows, W2[:, live].T.astype(np.float64) * lead[:, None], live


def _normalized_blocks(W1: np.ndarray, b1: np.ndarray, live: np.ndarray):
    """(start, normalized rows, |first nonzero input weight|) of the neurons ``live``, _CHUNK rows at a time."""
    for s in range(0, len(live), _CHUNK):
        idx = live[s:s + _CHUNK]
        block = W1[idx]
        lead = np.abs(block[np.arange(len(idx)), np.argmax(block != 0, axis=1)])
        rows = np.empty((len(idx), W1.shape[1] + 1), dtype=W1.dtype)
        rows[:, :-1] = block / lead[:, None]
        rows[:, -1] = b1[idx] / lead
        yield s, rows, lead


def _bits(a: np.ndarray) -> np.ndarray:
    """The entries' bit patterns (unsigned integers of their size), a view."""
    return np.ascontiguousarray(a).view(f"u{a.itemsize}").reshape(a.shape)


def _hashes(R: np.ndarray, V: np.ndarray, wr: np.ndarray, wv: np.ndarray) -> np.ndarray:
    out = np.empty(len(R), dtype=np.uint64)
    for s in range(0, len(R), _CHUNK):  # integer products and sums wrap modulo 2^64
        out[s:s + _CHUNK] = R[s:s + _CHUNK].astype(np.uint64) @ wr + V[s:s + _CHUNK].astype(np.uint64) @ wv
    return out


def _partnered(r1: np.ndarray, v1: np.ndarray, r2: np.ndarray, v2: np.ndarray,
               exact: tuple | None = None) -> np.ndarray:
    """For each neuron of θ1, whether θ2 has a neuron with the same normalized row and scaled output weights,
    bit for bit: rows hashed to 64 bits (odd random weights, sums modulo 2^64), looked up by sorting, and every
    hit compared entry for entry; a neuron whose hash collides only with a different row's is reported without a
    partner (a summary, never a verdict). Cost O((n1 + n2)(m + k)) in blocks, plus sorting the hashes."""
    if not len(r2):
        return np.zeros(len(r1), dtype=bool)
    rng = np.random.default_rng(20261202)
    wr = rng.integers(1, 2**63, size=r1.shape[1], dtype=np.uint64) | np.uint64(1)
    wv = rng.integers(1, 2**63, size=v1.shape[1], dtype=np.uint64) | np.uint64(1)
    R1, V1, R2, V2 = _bits(r1), _bits(v1), _bits(r2), _bits(v2)
    h1, h2 = _hashes(R1, V1, wr, wv), _hashes(R2, V2, wr, wv)
    order = np.argsort(h2, kind="stable")
    sorted2 = h2[order]
    first = np.searchsorted(sorted2, h1)
    j = order[np.minimum(first, len(order) - 1)]
    hit = h2[j] == h1
    same = hit.copy()
    for s in range(0, len(r1), _CHUNK):
        block, js = slice(s, s + _CHUNK), j[s:s + _CHUNK]
        same[block] &= _equal(R1[block], V1[block], R2[js], V2[js], exact, live_pos=(block, js))
    # a hash shared by several rows of θ2 (one ulp apart before the division, or a collision): try the others
    for i in np.flatnonzero(hit & ~same).tolist():
        end = int(np.searchsorted(sorted2, h1[i], side="right"))
        for j2 in order[int(first[i]) + 1:end].tolist():
            if _equal(R1[i:i + 1], V1[i:i + 1], R2[j2:j2 + 1], V2[j2:j2 + 1], exact, live_pos=(slice(i, i + 1),
                                                                                            np.array([j2])))[0]:
                same[i] = True
                break
    return same


def _equal(R1: np.ndarray, V1: np.ndarray, R2: np.ndarray, V2: np.ndarray, exact: tuple | None,
           live_pos: tuple) -> np.ndarray:
    """Rows of θ1 against the paired rows of θ2: the normalized bits and scaled outputs equal, and (with
    ``exact``) the original rows proportional, by cross-multiplying (rounding in the division can merge two rows
    one ulp apart)."""
    same = (R1 == R2).all(axis=1) & (V1 == V2).all(axis=1)
    if exact is not None:
        (W1, b1, live1), (W2, b2, live2) = exact
        block, js = live_pos
        a1, a2 = _rows(W1, b1, live1[block]), _rows(W2, b2, live2[js])
        same &= (a1 * _lead(a2)[:, None] == a2 * _lead(a1)[:, None]).all(axis=1)
    return same


def _rows(W: np.ndarray, b: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Rows (a_i | b_i) in binary64, where a product of two numbers of at most 24 bits is exact."""
    return np.column_stack([W[idx], b[idx]]).astype(np.float64)


def _lead(rows: np.ndarray) -> np.ndarray:
    """|first nonzero input weight| of each row (its last entry is the bias)."""
    return np.abs(rows[np.arange(len(rows)), np.argmax(rows[:, :-1] != 0, axis=1)])


_GRID = 256  # distinct values of an 8-bit quantized tensor


def changes(arrays1: list, arrays2: list) -> list[str]:
    """What turns θ1 into θ2, in plain words, when it is one of the common edits of a copy, tensor by tensor in the
    same neuron order: weights set to 0 (the others unchanged), every weight rounded to float16 or float32, the
    output layer scaled by one factor, or weight matrices on an 8-bit grid (at most 256 distinct values each, where
    one of θ1's has more). A reading for the reader, compared in floats; never a verdict. Cost O(weights) (the grid
    test: a sort of each matrix)."""
    a1, a2 = [np.asarray(a) for a in arrays1], [np.asarray(a) for a in arrays2]
    if not all(a.dtype.kind == "f" and a.dtype.itemsize <= 8 for a in (*a1, *a2)):
        return []  # the words compare floats exactly (numpy compares mixed float types in the wider one)
    if len(a1) != len(a2) or any(x.shape != y.shape for x, y in zip(a1, a2, strict=True)):
        return []
    total = sum(int(np.count_nonzero(x != y)) for x, y in zip(a1, a2, strict=True))
    if total == 0:
        return []
    zeroed = sum(int(np.count_nonzero((x != 0) & (y == 0))) for x, y in zip(a1, a2, strict=True))
    if zeroed == total:
        return [f"θ2 is θ1 with {zeroed} weight{'s' * (zeroed != 1)} set to 0 and every other weight the same "
                "(a pruned copy)"]
    for name in ("float16", "float32"):
        with np.errstate(over="ignore"):
            if all(_rounded(x, y, name) for x, y in zip(a1, a2, strict=True)):
                return [f"θ2 is θ1 rounded to {name}: {total} weight{'s' * (total != 1)} changed, each to the "
                        f"{name} nearest it"]
    (M1, c1), (M2, c2) = a1[-2:], a2[-2:]
    if all(np.array_equal(x, y) for x, y in zip(a1[:-2], a2[:-2], strict=True)) and M1.any():
        p = np.flatnonzero(M1.ravel())[0]
        factor = np.float64(M2.ravel()[p]) / np.float64(M1.ravel()[p])
        if np.array_equal(M2, factor * M1.astype(np.float64)) and np.array_equal(c2, factor * c1.astype(np.float64)):
            return [f"θ2 is θ1 with its output layer scaled by {factor:.6g}"]
    if any(x.ndim == 2 and x.size > _GRID and _distinct_at_most(y, _GRID) and not _distinct_at_most(x, _GRID)
           for x, y in zip(a1, a2, strict=True)) and \
            all(_distinct_at_most(y, _GRID) for y in a2 if y.ndim == 2):
        return [f"θ2's weight matrices hold at most {_GRID} distinct values each where θ1's hold more: a copy "
                "quantized to 8 bits?"]
    return []


def _rounded(x: np.ndarray, y: np.ndarray, name: str) -> bool:
    """y = x rounded to the float type ``name``, exactly: on a sample of 1,024 entries first (a difference there
    settles it without converting the whole array). Cost O(size) at worst."""
    step = max(1, x.size // 1024)
    return np.array_equal(y.ravel()[::step], x.ravel()[::step].astype(name)) and \
        np.array_equal(y, x.astype(name, copy=False))


def _distinct_at_most(x: np.ndarray, count: int) -> bool:
    """Whether x holds at most ``count`` distinct values: a sample of 4·count entries first (more distinct values
    there settle it without a sort of the whole array), then np.unique. Cost O(size log size) at worst."""
    flat = x.ravel()
    sample = flat[:: max(1, flat.size // (4 * count))]
    return len(np.unique(sample)) <= count and len(np.unique(flat)) <= count


def near_miss(arrays1: list, arrays2: list, partners: tuple | None = None) -> NearMiss:
    """The summary for two networks of float arrays (W1, b1, W2, b2). Never decides anything. ``partners``: the
    exact partners as two arrays of neuron indices (θ1's, θ2's), one to one, when the caller already knows them
    (the fast decision's matches when neither reduction merged neurons); then only θ2's rows and θ1's unpartnered
    ones are normalized, and nothing is hashed."""
    W1, b1, W2, _ = (np.asarray(a) for a in arrays1)
    V1, c1, V2, _ = (np.asarray(a) for a in arrays2)
    dtype = np.result_type(W1.dtype, V1.dtype)
    W1, b1, V1, c1 = (x.astype(dtype, copy=False) for x in (W1, b1, V1, c1))
    live2 = _live(V1, V2)
    r2 = None  # θ2's normalized rows, made whole only to look partners up by hash
    if partners is None:
        r2, v2, _ = _normalized(V1, c1, V2, live2)
        r1, v1, live1 = _normalized(W1, b1, W2)
        originals = ((W1, b1, live1), (V1, c1, live2))
        lonely = np.flatnonzero(~_partnered(r1, v1, r2, v2, originals))
        taken = _partnered(r2, v2, r1, v1, (originals[1], originals[0])) if len(r1) else np.zeros(len(r2), bool)
        back, n1 = int(taken.sum()), len(live1)
    else:
        everyone = _live(W1, W2)
        unmatched = everyone[np.isin(everyone, np.asarray(partners[0], dtype=np.int64), invert=True)]
        r1, v1, live1 = _normalized(W1, b1, W2, unmatched)
        lonely, back, n1 = np.arange(len(unmatched)), len(partners[1]), len(everyone)
        taken = np.isin(live2, np.asarray(partners[1], dtype=np.int64))
    lonely = lonely.tolist()
    worst = []
    if lonely and len(live2):
        # the nearest neuron is looked for among θ2's neurons without an exact partner (all of them when each has
        # one): the partnered ones are accounted for, and at n = 10^5 a search over all would cost most of the time
        pool = live2[~taken] if not taken.all() else live2
        a = r1[lonely].astype(np.float64)
        best, nearest = np.full(len(lonely), np.inf), np.zeros(len(lonely), dtype=np.int64)
        rest = None if r2 is None else r2[~taken] if not taken.all() else r2
        blocks = _normalized_blocks(V1, c1, pool) if rest is None else \
            ((s, rest[s:s + _CHUNK], None) for s in range(0, len(pool), _CHUNK))
        for s, block, _ in blocks:  # squared distances, one block of each side at a time
            b = block.astype(np.float64)
            for t in range(0, len(lonely), _CHUNK):
                ab = a[t:t + _CHUNK]
                dist = (ab * ab).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * ab @ b.T
                here, at = dist.min(axis=1), dist.argmin(axis=1) + s
                better = here < best[t:t + _CHUNK]
                best[t:t + _CHUNK][better], nearest[t:t + _CHUNK][better] = here[better], at[better]
        r2, v2, _ = _normalized(V1, c1, V2, pool[nearest])  # the nearest rows only, in the order of ``nearest``
        b = r2.astype(np.float64)
        spacing = np.spacing(np.abs(r1[lonely]).astype(dtype)).astype(np.float64)
        diff = np.abs(a - b)
        rel = (diff / np.maximum(np.abs(a), np.finfo(np.float64).tiny)).max(axis=1)
        ulps = (diff / spacing).max(axis=1)
        part = np.where(ulps == 0, "output", "row")
        same = ulps == 0  # the rows agree bit for bit: the output weights (scaled exactly) are what differ
        if same.any():
            va, vb = v1[lonely][same], v2[same]
            unit = np.spacing(np.abs(va).astype(dtype)).astype(np.float64)
            vdiff = np.abs(va - vb)
            rel[same] = (vdiff / np.maximum(np.abs(va), np.finfo(np.float64).tiny)).max(axis=1)
            ulps[same] = (vdiff / np.maximum(unit, np.finfo(np.float64).tiny)).max(axis=1)
        order = np.argsort(-ulps)[:3]
        worst = [(int(live1[lonely[t]]), int(pool[nearest[t]]), float(rel[t]), float(ulps[t]), str(part[t]))
                 for t in order]
        zeroed = [(int(((a[t] != 0) & (b[t] == 0)).sum()), int(((a[t] == 0) & (b[t] != 0)).sum())) for t in order]
        return NearMiss(n1, n1 - len(lonely), worst, str(dtype), len(live2), back, zeroed,
                        changes(arrays1, arrays2))
    return NearMiss(n1, n1 - len(lonely), worst, str(dtype), len(live2), back, whole=changes(arrays1, arrays2))

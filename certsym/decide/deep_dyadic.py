"""Deep networks of float weights: MATH.md Part III's decision on numpy, without a rational per weight.

The general deep path (``certsym.decide.deep``) holds one rational per weight. When every layer of both networks is
float16/bfloat16/float32 (every entry a dyadic rational of at most 24 significant bits), the same steps are computed
on the arrays, with the two exactness facts of ``certsym.decide.dyadic``:

1. The moves D1–D4 in the general path's order: zero columns, zero rows and rows ≤ 0 are array tests; a D2 fold
   b_{ℓ+1} += W_{ℓ+1}[:, j]·b_ℓ[j] and a D3 merge W_{ℓ+1}[:, i] += λ W_{ℓ+1}[:, j] are binary64 sums kept only when
   each is exact and a float32 (an error-free sum: s = x + y with (x − (s − (s − x))) + (y − (s − x)) = 0, and
   float32(s) = s), with λ a power of two; otherwise this path steps aside.
2. The alignment of layers 1..L−1: the rows of θ1 in the aligned coordinates (its columns in the order of the
   layer below's pairs, times their scalings 2^e, exact in float32 or this path steps aside) and θ2's are hashed by
   their normalized rows (``dyadic._plane_ids``: equal hashes are necessary) and each pair is then tested exactly,
   r1·|a2_p| = r2·|a1_p| in binary64 (products of two ≤ 24-bit numbers). A pair's scaling d = |a1_p| / |a2_p| must
   be a power of two to be pushed into the next layer's columns.
3. The top blocks N(u) = W_{L+1} σ(W_L u + b_L) + b_{L+1} are decided by the fast Part I
   (``dyadic.decide``), complete for them.
4. Otherwise a float screen of the networks at 256 points, the best re-evaluated exactly (``exact_matvec``): a
   witness, or this path steps aside and the general one decides (its line tests and phase splitting).

Every result is the general path's: the same steps in the same order, the same pairs (listed by θ1's neuron
instead of by canonical row), Part I's verdict; ``tests/decide/test_deep_dyadic.py`` compares both. Cost: O(weights)
vectorized per round of moves, one sort of hashes per layer, Part I's cost on the top blocks; a witness costs the
screen's 256 binary64 forward passes and one exact evaluation per candidate, (limbs)² binary64 matrix products per
layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from flint import fmpq

from certsym.core.deep import LayeredNetwork
from certsym.decide import dyadic
from certsym.decide.deep import EQUIVALENT, NOT_EQUIVALENT, DeepVerdict
from certsym.numbers import QQ
from certsym.numbers import rational_from_float as exact_float
from certsym.numbers.floats import all_finite, exact_matvec

SCREEN_POINTS = 256  # random points of the float screen
CANDIDATES = 6  # screened points re-evaluated exactly


class StepAside(Exception):
    """This path cannot keep its arithmetic exact in float32 here: the general path decides."""


@dataclass(frozen=True)
class DyadicLayers:
    """θ as float32 layers (W_ℓ, b_ℓ), every entry a dyadic rational of at most 24 significant bits; read like a
    LayeredNetwork for its shape (``widths``, ``m``, ``k``, ``depth``, ``field``)."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    output_relu: bool = False
    field = QQ

    @classmethod
    def from_arrays(cls, pairs, output_relu: bool = False, finite: bool = False) -> DyadicLayers | None:
        """The network, or None when an entry is not a finite float of at most 24 significant bits (the general
        path applies). ``finite``: the reader verified every entry finite. Cost O(weights)."""
        out, width = [], None
        for W, b in pairs:
            W, b = np.asarray(W), np.asarray(b)
            if W.dtype.kind != "f" or b.dtype.kind != "f" or W.ndim != 2 or 0 in W.shape or b.shape != W.shape[:1] \
                    or width not in (None, W.shape[1]):
                return None  # the general path reads it, and says what is wrong with its shapes
            width, narrow = W.shape[0], []
            for t in (W, b):
                with np.errstate(over="ignore"):
                    x = t.astype(np.float32, copy=False)
                if not (finite or all_finite(x)) or (t.dtype.itemsize > 4 and not np.array_equal(x, t)):
                    return None
                narrow.append(x)
            out.append(tuple(narrow))
        return cls(tuple(out), output_relu) if len(out) >= 2 else None

    @property
    def m(self) -> int:
        return self.layers[0][0].shape[1]

    @property
    def k(self) -> int:
        return self.layers[-1][0].shape[0]

    @property
    def depth(self) -> int:
        return len(self.layers) - 1

    @property
    def widths(self) -> tuple[int, ...]:
        return (self.m, *(len(b) for _, b in self.layers))

    @property
    def weights(self) -> int:
        return sum(W.size + b.size for W, b in self.layers)

    def exact(self) -> LayeredNetwork:
        """The same network with one rational per weight (for embedding in a certificate). Cost O(weights)."""
        return LayeredNetwork.build([([[exact_float(x) for x in row] for row in W.tolist()],
                                      [exact_float(x) for x in b.tolist()]) for W, b in self.layers],
                                    QQ, self.m, self.output_relu)

    def evaluate(self, x: list[fmpq]) -> list[fmpq] | None:
        """ρ(θ)(x) exactly at a dyadic point (None if x is not dyadic): ``exact_matvec`` layer by layer."""
        h = list(x)
        for ell, (W, b) in enumerate(self.layers, 1):
            z = exact_matvec(W, b, h)
            if z is None:
                return None
            h = [t if t > 0 else fmpq(0) for t in z] if ell < len(self.layers) or self.output_relu else z
        return h

    def forward(self, X: np.ndarray) -> np.ndarray:
        """The network on the rows of X in binary64 (a search only)."""
        H = X
        for ell, (W, b) in enumerate(self.layers, 1):
            Z = H @ W.T.astype(np.float64) + b
            H = np.maximum(Z, 0) if ell < len(self.layers) or self.output_relu else Z
        return H


@dataclass
class FastDeepReduction:
    """θ after D1–D4 on the fast path: the steps (as ``deep.reduce`` records them), the alive neurons of each hidden
    layer (increasing) and the layers as changed by the folds and merges."""

    steps: list[dict] = field(default_factory=list)
    W: list[np.ndarray] = field(default_factory=list)
    b: list[np.ndarray] = field(default_factory=list)
    alive: list[np.ndarray] = field(default_factory=list)  # boolean masks, one per hidden layer

    def inputs(self, ell: int) -> np.ndarray:
        """The alive inputs of layer ℓ (indices)."""
        return np.arange(self.W[0].shape[1]) if ell == 1 else np.flatnonzero(self.alive[ell - 2])

    def outputs(self, ell: int) -> np.ndarray:
        return np.flatnonzero(self.alive[ell - 1]) if ell <= len(self.alive) else np.arange(len(self.b[ell - 1]))


def _exact_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y for binary64 arrays of float32 values, as float32, when every sum is exact and a float32 (an error-free
    sum); else StepAside."""
    s = x + y
    v = s - x
    if not np.isfinite(s).all() or ((x - (s - v)) + (y - v)).any():
        raise StepAside("a sum is not exact")
    with np.errstate(over="ignore"):
        narrow = s.astype(np.float32)
    if not np.array_equal(narrow, s):
        raise StepAside("a sum is not a float32")
    return narrow


def _power_of_two(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """The exponents e with num = 2^e·den (positive binary floats); StepAside when some ratio is not a power of two."""
    (fn, en), (fd, ed) = np.frexp(num), np.frexp(den)
    if (fn != fd).any():
        raise StepAside("a scaling is not a power of two")
    return (en - ed).astype(np.int64)


def _two_to(e: int) -> fmpq:
    """2^e exactly."""
    return fmpq(1 << e) if e >= 0 else fmpq(1, 1 << -e)


def _scaled(a: np.ndarray, e: np.ndarray, axis: int) -> np.ndarray:
    """a·2^e along ``axis`` in float32, exact or StepAside."""
    shape = [1, 1]
    shape[axis] = -1
    e = e.reshape(shape)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(a, e).astype(np.float32)
        back = np.ldexp(out, -e).astype(np.float32)
    if not np.isfinite(out).all() or not np.array_equal(back, a):
        raise StepAside("a scaling leaves float32")
    return out


def reduce(net: DyadicLayers) -> FastDeepReduction:
    """MATH.md Part III, the moves D1–D4 until none applies, in ``deep.reduce``'s order. Cost: one vectorized pass
    over the weights per round of moves, plus the hashing of each layer's rows."""
    red = FastDeepReduction([], [W for W, _ in net.layers], [b for _, b in net.layers],
                            [np.ones(len(b), dtype=bool) for _, b in net.layers[:-1]])
    changed = True
    while changed:
        changed = False
        for ell in range(1, net.depth + 1):
            changed |= _reduce_layer(red, ell)
    return red


def _reduce_layer(red: FastDeepReduction, ell: int) -> bool:
    alive = np.flatnonzero(red.alive[ell - 1])
    if not len(alive):
        return False
    ins, outs = red.inputs(ell), red.outputs(ell + 1)
    W, b, nxt = red.W[ell - 1], red.b[ell - 1], red.W[ell]
    rows = W[np.ix_(alive, ins)] if len(ins) < W.shape[1] or len(alive) < W.shape[0] else W
    columns = nxt[np.ix_(outs, alive)] if len(outs) < nxt.shape[0] or len(alive) < nxt.shape[1] else nxt
    bias = b[alive]
    d1 = ~(columns != 0).any(axis=0)
    zero_row = ~(rows != 0).any(axis=1)
    d2 = ~d1 & zero_row
    d4 = ~d1 & ~zero_row & (ell >= 2) & (rows <= 0).all(axis=1) & (bias <= 0)
    gone = d1 | d2 | d4
    for p in np.flatnonzero(gone).tolist():
        j = int(alive[p])
        step = "D1" if d1[p] else "D2" if d2[p] else "D4"
        if step == "D2" and b[j] > 0:
            folded = red.b[ell].copy()
            folded[outs] = _exact_sum(folded[outs].astype(np.float64),
                                      nxt[outs, j].astype(np.float64) * np.float64(b[j]))
            red.b[ell] = folded
        red.steps.append({"step": step, "layer": ell, "neuron": j})
    if gone.any():
        red.alive[ell - 1] = red.alive[ell - 1].copy()
        red.alive[ell - 1][alive[gone]] = False
    keep = ~gone
    alive, rows, bias = alive[keep], rows[keep], bias[keep]
    merged = _merges(red, ell, alive, rows, bias, outs)
    return bool(gone.any()) or merged


def _merges(red: FastDeepReduction, ell: int, alive: np.ndarray, rows: np.ndarray, bias: np.ndarray,
            outs: np.ndarray) -> bool:
    """D3: each alive row merged into the first earlier one with the same normalized row (a positive multiple)."""
    if len(alive) < 2:
        return False
    ids, lead = dyadic._plane_ids(rows, bias, None)
    key = ids * np.uint64(2) + (lead < 0).astype(np.uint64)
    order, starts, sizes = dyadic._buckets(key)
    pairs = []  # (from position, into position)
    for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
        firsts: list[int] = []
        for j in order[start:start + size].tolist():  # ascending: the first one found is the general path's
            hit = next((i for i in firsts if _same_direction(rows, bias, lead, i, j)), None)
            if hit is None:
                firsts.append(j)
            else:
                pairs.append((j, hit))
    if not pairs:
        return False
    pairs.sort()
    nxt = red.W[ell].copy()
    mask = red.alive[ell - 1].copy()
    for j, i in pairs:
        lam_i, lam_j = abs(np.float64(lead[i])), abs(np.float64(lead[j]))
        e = int(_power_of_two(np.array([lam_j]), np.array([lam_i]))[0])
        source, into = int(alive[j]), int(alive[i])
        add = _scaled(nxt[outs, source][:, None], np.array([e]), 1)[:, 0]
        nxt[outs, into] = _exact_sum(nxt[outs, into].astype(np.float64), add.astype(np.float64))
        red.steps.append({"step": "D3", "layer": ell, "into": into, "from": source, "lambda": _two_to(e)})
        mask[source] = False
    red.W[ell], red.alive[ell - 1] = nxt, mask
    return True


def _same_direction(rows: np.ndarray, bias: np.ndarray, lead: np.ndarray, i: int, j: int) -> bool:
    """Row j = (|a_j,p| / |a_i,p|) row i exactly (fact 2 of ``dyadic``; same orientation), rows of float32."""
    li, lj = abs(np.float64(lead[i])), abs(np.float64(lead[j]))
    if np.sign(lead[i]) != np.sign(lead[j]) or not li or not lj:
        return False
    ri, rj = rows[i].astype(np.float64), rows[j].astype(np.float64)
    return bool((rj * li == ri * lj).all() and np.float64(bias[j]) * li == np.float64(bias[i]) * lj)


def _aligned_rows(red: FastDeepReduction, ell: int, columns: np.ndarray, scale: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alive neurons, their rows on ``columns`` times 2^scale per column, biases) of layer ℓ."""
    alive = np.flatnonzero(red.alive[ell - 1]) if ell <= len(red.alive) else np.arange(len(red.b[ell - 1]))
    rows = red.W[ell - 1][np.ix_(alive, columns)]
    if scale is not None and scale.any():
        rows = _scaled(rows, scale, 1)
    return alive, rows, red.b[ell - 1][alive]


def _align_layer(a: tuple, b: tuple) -> tuple[list[tuple[int, int, int]], bool]:
    """Pairs (i, j, e) with row1_i = 2^e row2_j, ascending in i, when the rows correspond one to one; ([], False)
    when the layer has no alignment."""
    (n1, R1, b1), (n2, R2, b2) = a, b
    if len(n1) != len(n2):
        return [], False
    if not len(n1):
        return [], True
    k1, l1 = dyadic._plane_ids(R1, b1, None)
    k2, l2 = dyadic._plane_ids(R2, b2, None)
    key1 = k1 * np.uint64(2) + (l1 < 0).astype(np.uint64)
    key2 = k2 * np.uint64(2) + (l2 < 0).astype(np.uint64)
    o1, o2 = np.argsort(key1, kind="stable"), np.argsort(key2, kind="stable")
    if not np.array_equal(key1[o1], key2[o2]) or (len(o1) > 1 and (key1[o1][1:] == key1[o1][:-1]).any()):
        return [], False
    li, lj = np.abs(l1[o1].astype(np.float64)), np.abs(l2[o2].astype(np.float64))
    if not ((li > 0) & (lj > 0)).all():
        return [], False
    same = (R2[o2].astype(np.float64) * li[:, None] == R1[o1].astype(np.float64) * lj[:, None]).all(axis=1) & \
        (b2[o2].astype(np.float64) * li == b1[o1].astype(np.float64) * lj)
    if not same.all():
        return [], False
    e = _power_of_two(li, lj)
    by_first = np.argsort(n1[o1])
    return list(zip(n1[o1][by_first].tolist(), n2[o2][by_first].tolist(), e[by_first].tolist(), strict=True)), True


def _block(red: FastDeepReduction, L: int, columns: np.ndarray, scale: np.ndarray | None) -> dyadic.DyadicNetwork:
    """The top block W_{L+1} σ(W_L u + b_L) + b_{L+1} on u = ``columns`` of layer L − 1 (times 2^scale); one zero
    input when ``columns`` is empty."""
    alive, rows, bias = _aligned_rows(red, L, columns, scale)
    if not len(columns):
        rows = np.zeros((len(alive), 1), dtype=np.float32)
    return dyadic.DyadicNetwork(np.ascontiguousarray(rows), bias, np.ascontiguousarray(red.W[L][:, alive]),
                                red.b[L])


def decide(t1: DyadicLayers, t2: DyadicLayers, seed: int = 0) -> DeepVerdict | None:
    """MATH.md Part III on float layers: EQUIVALENT with the block lemma's evidence (as ``deep.decide`` finds it),
    NOT EQUIVALENT with an exact witness, or None when the general path must decide (no alignment and no witness
    found by the screen, or arithmetic that would leave float32). Cost: see the module."""
    if (t1.m, t1.k, t1.depth, t1.output_relu) != (t2.m, t2.k, t2.depth, t2.output_relu):
        return _witness(t1, t2, seed)
    try:
        reds = (reduce(t1), reduce(t2))
        L = t1.depth
        columns = (np.arange(t1.m), np.arange(t2.m))
        scale = None
        alignment: list[list[tuple[int, int, fmpq]]] = []
        for ell in range(1, L):
            pairs, ok = _align_layer(_aligned_rows(reds[0], ell, columns[0], scale),
                                     _aligned_rows(reds[1], ell, columns[1], None))
            if not ok:
                return _witness(t1, t2, seed)
            alignment.append([(i, j, _two_to(e)) for i, j, e in pairs])
            columns = (np.array([i for i, _, _ in pairs], dtype=np.int64), np.array([j for _, j, _ in pairs],
                                                                                      dtype=np.int64))
            scale = np.array([e for _, _, e in pairs], dtype=np.int64)
        blocks = (_block(reds[0], L, columns[0], scale), _block(reds[1], L, columns[1], None))
        part1 = dyadic.decide(*blocks)
    except StepAside:
        return None
    if part1.equivalent:
        return DeepVerdict(EQUIVALENT, t1, t2, reds, alignment, part1)
    return _witness(t1, t2, seed)


def _witness(t1: DyadicLayers, t2: DyadicLayers, seed: int) -> DeepVerdict | None:
    """NOT EQUIVALENT at a point found by a binary64 screen (the origin and random points of [0, 1]^m on the grid of
    1/64, of [−1, 1]^m and of N(0, 16)), the largest gaps re-evaluated exactly, those of [0, 1]^m first (a witness
    in the data's box); None if none differs."""
    if (t1.m, t1.k) != (t2.m, t2.k):
        return None
    rng = np.random.default_rng(seed)
    third = SCREEN_POINTS // 3
    X = np.concatenate([np.zeros((1, t1.m)), np.round(rng.uniform(0, 1, (third, t1.m)) * 64) / 64,
                        rng.uniform(-1, 1, (third, t1.m)), rng.normal(0, 4, (SCREEN_POINTS - 2 * third - 1, t1.m))])
    with np.errstate(all="ignore"):
        gap = np.nan_to_num(np.abs(t1.forward(X) - t2.forward(X)).max(axis=1), nan=0.0)
    inside = [p for p in np.argsort(-gap[:third + 1], kind="stable")[:CANDIDATES // 2].tolist() if gap[p] > 0]
    for p in dict.fromkeys([*inside, *np.argsort(-gap, kind="stable")[:CANDIDATES].tolist()]):  # [0, 1]^m first
        x = [exact_float(t) for t in X[p].tolist()]
        v1, v2 = t1.evaluate(x), t2.evaluate(x)
        if v1 is not None and v2 is not None and v1 != v2:
            return DeepVerdict(NOT_EQUIVALENT, t1, t2, witness=x, values=(v1, v2))
    return None

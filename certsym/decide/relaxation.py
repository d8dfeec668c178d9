"""The linear relaxation of the difference of two aligned networks on a region, certified by rational multipliers.

A region is a box Q with a phase for some neurons (z ≥ 0 or z ≤ 0 imposed). On it every neuron has a range
[l, u] of its pre-activation z: its exact extremes over Q, narrowed by refinements (bounds from the phase
constraints alone, ``refine``, made on the region or an enclosing one), and σ(z) is written S: z when the neuron
is active (phase z ≥ 0, or l ≥ 0), 0 when it is inactive (phase z ≤ 0, or u ≤ 0), and a variable h ∈ [0, u] when
it is unstable. Neurons of the second network are scaled by their pairing's d > 0 (σ(d z') = d σ(z'), weights
divided by d). The constraints, each g ≤ 0 and valid at every point of the region with h = σ(z):

- ``h`` (unstable):  z − h ≤ 0                                  (σ(z) ≥ z)
- ``t`` (unstable):  (u − l) h − u (z − l) ≤ 0                   (the triangle's chord: σ is convex)
- ``p`` (phased):    −z ≤ 0 for the phase z ≥ 0, z ≤ 0 for z ≤ 0
- ``d+`` (pair):     c (S − S') − T ≤ 0, with Δ = z − z' ∈ [lΔ, uΔ] on Q:  σ(z) − σ(z') ≤ σ(Δ) ≤ chord of σ(Δ);
  c = 1, T = 0 if uΔ ≤ 0; c = 1, T = Δ if lΔ ≥ 0; else c = uΔ − lΔ, T = uΔ (Δ − lΔ)
- ``d-`` (pair):     the same for S' − S and −Δ ∈ [−uΔ, −lΔ].

For an objective f, a linear function of the S's and a constant, and any multipliers μ ≥ 0, f ≤ f − Σ μ g on the
region, and f − Σ μ g is affine in (x, h): its maximum over x ∈ Q, h ∈ [0, u] is an exact rational, the region's
bound (weak duality; certificates/FORMAT.md, Linear relaxations). Floating point (HiGHS) proposes μ; the bound is
computed exactly from whatever μ it proposes, so no float decides anything.

The objectives (``Pair.objective``): (t, s) is s·D_t, D_t the t-th output difference (the distance); ("A", c, j)
is f1_j − f1_c and ("B", c, j) is f2_j − f2_c, a network's margin of class j over class c (top-1 agreement: a bound
below 0 says class c beats class j on the whole region); ("=", t, s) is s·(D_t − D_0) (bounds ≤ 0 for both signs
and every t say f1 − f2 is the same for every output, so both networks order their outputs alike).

Cost per region: three exact matrix products for the extremes (O((n_A + n_B) m)), 2k linear programs of
m + (unstable) variables and O(unstable + pairs) rows, and one exact product (2k × n)·(n × (m + 1)) per network for
the bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from certsym.core.network import Network
from certsym.decide.deadline import Deadline
from certsym.numbers import outward

Box = list[tuple[fmpq, fmpq]]
Key = tuple[str, int]  # ("A", i) or ("B", j)
Target = tuple[str, int]  # a neuron's z, ("A", i) or ("B", j), or a pair's Δ, ("d", p)
Objective = tuple  # (t, s) or (net, c, j): module docstring
REFINE_GAIN = 0.02  # a refinement is stated when it narrows the target's range by at least this fraction
REFINE_PASSES = 3  # coordinate-descent passes over the phase multipliers
MULTIPLIER_BITS = 8  # a refinement's multipliers are cut to this many significant bits (short certificates)


GRID_BITS = 40  # a bound's multipliers are put on one dyadic grid, this many bits below the largest


def _q(x: float) -> fmpq:
    num, den = float(x).as_integer_ratio()
    return fmpq(num, den)


def on_grid(names: list, mu: np.ndarray) -> dict:
    """The multipliers μ ≥ 0 rounded down to multiples of one power of two, GRID_BITS bits below the largest (those
    below it dropped): any μ ≥ 0 gives a sound bound (weak duality), and one short common denominator keeps the
    exact combination Σ μ g, the producer's and the checker's, in integers of a few words instead of the 1,000-bit
    ones a single μ of 1e-300 from the solver's noise would force on every row. Cost O(len(mu))."""
    top = float(np.max(mu, initial=0.0))
    if not top > 0:
        return {}
    exponent = math.frexp(top)[1] - GRID_BITS
    steps = np.floor(np.ldexp(mu, -exponent))
    return {name: fmpq(int(k)) * fmpq(2) ** exponent if exponent >= 0 else fmpq(int(k), 1 << -exponent)
            for name, k in zip(names, steps.tolist(), strict=True) if k > 0}


@dataclass
class Region:
    """A box, the phases imposed on some neurons (+1: z ≥ 0, −1: z ≤ 0), and the ranges of some targets known on
    the region beyond their extremes over the box (refinements made on it or an enclosing region)."""

    box: Box
    phases: dict[Key, int] = field(default_factory=dict)
    refined: dict[Target, tuple[fmpq | None, fmpq | None]] = field(default_factory=dict)


@dataclass
class Refinement:
    """A bound on a target over a region from its phase constraints: with g_i = −φ_i z_i ≤ 0 the phases and
    μ ≥ 0, the target y satisfies s·y ≤ s·y − Σ μ_i g_i on the region, so ``value`` = s·max over the box of
    (s·y − Σ μ g) bounds it above (s = +1, ``side`` "upper") or below (s = −1, "lower")."""

    target: Target
    side: str
    value: fmpq
    multipliers: dict[Key, fmpq]


@dataclass
class RegionBound:
    """The exact bound of every objective (t, s) on a region, the multipliers that give it, and floating-point
    points the programs proposed (witness candidates, in the region's box)."""

    bounds: dict[tuple[int, int], fmpq]
    multipliers: dict[tuple[int, int], dict[tuple[str, int], fmpq]]
    points: list[np.ndarray]
    unstable: list[tuple[Key, float]]  # unstable neurons with a split score
    gaps: dict[Key, float] = field(default_factory=dict)  # u·(−l): the triangle's intercept, per unstable neuron
    pair_gaps: dict[int, float] = field(default_factory=dict)  # uΔ·(−lΔ) for the pairs whose Δ changes sign
    pair_keys: dict[int, tuple[Key, Key]] = field(default_factory=dict)
    refinements: list[Refinement] = field(default_factory=list)  # made on this region (stated at its node)

    @property
    def upper(self) -> fmpq:
        return max(self.bounds.values())

    def merge(self, extra: RegionBound) -> None:
        """Take in the bounds and refinements of a second call on the same region (other objectives)."""
        self.bounds |= extra.bounds
        self.multipliers |= extra.multipliers
        self.refinements += extra.refinements


class Pair:
    """Two networks aligned by ``pairs`` (i, j, d): the exact rows (a, b) of both (B's scaled by d), the output
    weights (B's divided by d), and their floating-point copies for the programs."""

    def __init__(self, A: Network, B: Network, pairs: list[tuple[int, int, fmpq]]):
        self.m, self.k = A.m, A.k
        self.pairs = pairs
        scale = {j: d for _, j, d in pairs}
        self.rows = {"A": fmpq_mat(A.n, A.m + 1, [x for i in range(A.n) for x in (*A.A[i], A.b[i])]),
                     "B": fmpq_mat(B.n, B.m + 1, [x * scale.get(j, 1) for j in range(B.n)
                                                  for x in (*B.A[j], B.b[j])])}
        self.weights = {"A": [[A.M[t][i] for t in range(A.k)] for i in range(A.n)],
                        "B": [[-B.M[t][j] / scale.get(j, 1) for t in range(B.k)] for j in range(B.n)]}
        self.size = {"A": A.n, "B": B.n}
        self.offset = [A.c[t] - B.c[t] for t in range(A.k)]
        self.c = {"A": list(A.c), "B": list(B.c)}
        self._objectives: dict[Objective, tuple[dict[str, list[fmpq]], fmpq]] = {}
        self.float_rows = {s: np.array([float(x) for x in self.rows[s].entries()]).reshape(self.size[s], self.m + 1)
                           for s in "AB"}
        self.float_weights = {s: np.array([[float(w) for w in row] for row in self.weights[s]]).reshape(
            self.size[s], self.k) for s in "AB"}
        w = self.m + 1
        flat_a, flat_b = self.rows["A"].entries(), self.rows["B"].entries()  # once: each call copies the matrix
        diff = [x - y for i, j, _ in pairs
                for x, y in zip(flat_a[i * w:(i + 1) * w], flat_b[j * w:(j + 1) * w], strict=True)]
        self.diff = fmpq_mat(len(pairs), self.m + 1, diff) if pairs else None
        # the targets' exact rows as flat entry lists, and in binary64: neurons of A and B, and the pairs' Δ
        self.entries = {"A": flat_a, "B": flat_b, "d": diff}
        self.float_rows["d"] = np.array([float(x) for x in diff]).reshape(len(pairs), self.m + 1)
        # |rows| once: every region's extremes need them
        self.magnitudes = {s: fmpq_mat(len(e) // w, w, [abs(x) for x in e]) if e else None
                           for s, e in self.entries.items()}

    def objective(self, o: Objective) -> tuple[dict[str, list[fmpq]], fmpq]:
        """The objective ``o`` (module docstring) as the coefficients of every S, per network, and its constant."""
        if o not in self._objectives:
            if len(o) == 2:
                t, sgn = o
                weights = {s: [row[t] * sgn for row in self.weights[s]] for s in "AB"}
                const = self.offset[t] * sgn
            elif o[0] == "=":
                _, t, sgn = o
                weights = {s: [(row[t] - row[0]) * sgn for row in self.weights[s]] for s in "AB"}
                const = (self.offset[t] - self.offset[0]) * sgn
            else:
                net, c, j = o
                sign = 1 if net == "A" else -1  # B's weights are stored negated (they enter D with a minus)
                weights = {s: [(row[j] - row[c]) * sign if s == net else fmpq(0) for row in self.weights[s]]
                           for s in "AB"}
                const = self.c[net][j] - self.c[net][c]
            self._objectives[o] = (weights, const)
        return self._objectives[o]


def extremes(rows: fmpq_mat, box: Box, magnitudes: fmpq_mat | None = None) -> tuple[list[fmpq], list[fmpq]]:
    """(min, max) over the box of every row's affine function (a, b)·(x, 1), exactly: centre ∓ |a|·radius
    (``magnitudes``: the rows' absolute values, when the caller holds them)."""
    m = rows.ncols() - 1
    mid = fmpq_mat(m + 1, 1, [(lo + hi) / 2 for lo, hi in box] + [fmpq(1)])
    rad = fmpq_mat(m + 1, 1, [(hi - lo) / 2 for lo, hi in box] + [fmpq(0)])
    centre = (rows * mid).entries()
    if magnitudes is None:
        magnitudes = fmpq_mat(rows.nrows(), m + 1, [abs(x) for x in rows.entries()])
    spread = (magnitudes * rad).entries()
    return [c - s for c, s in zip(centre, spread, strict=True)], [c + s for c, s in zip(centre, spread, strict=True)]


class _Leaf:
    """One region's exact extremes, statuses and constraints."""

    def __init__(self, P: Pair, region: Region):
        self.P, self.region = P, region
        self.lo, self.hi, self.status = {}, {}, {}
        for s in "AB":
            self.lo[s], self.hi[s] = extremes(P.rows[s], region.box, P.magnitudes[s]) if P.size[s] else ([], [])
        self.lo["d"], self.hi["d"] = extremes(P.diff, region.box, P.magnitudes["d"]) if P.diff is not None \
            else ([], [])
        self._expanded: dict[tuple[str, int], tuple[dict, dict, fmpq]] = {}
        self._objective_terms: dict[Objective, tuple[dict, dict, fmpq]] = {}
        self.narrow(region.refined)
        self.refinements = refine(self) if region.phases else []
        for r in self.refinements:
            lo, hi = region.refined.get(r.target, (None, None))
            if r.side == "lower":
                region.refined[r.target] = (r.value if lo is None else max(lo, r.value), hi)
            else:
                region.refined[r.target] = (lo, r.value if hi is None else min(hi, r.value))
        self.narrow(region.refined)
        self.dlo, self.dhi = self.lo["d"], self.hi["d"]
        for s in "AB":
            self.status[s] = [_status(region.phases.get((s, i)), self.lo[s][i], self.hi[s][i])
                              for i in range(P.size[s])]
        self.unstable = [(s, i) for s in "AB" for i in range(P.size[s]) if self.status[s][i] == 0]
        self.column = {key: P.m + c for c, key in enumerate(self.unstable)}
        # the constraints: (tag, index) with, per constraint, its terms on S's, on rows z, and its constant
        self.names: list[tuple[str, int]] = []
        for key in self.unstable:
            self.names += [(f"h{key[0]}", key[1]), (f"t{key[0]}", key[1])]
        self.names += [(f"p{s}", i) for (s, i) in sorted(region.phases)]
        for p, (i, j, _) in enumerate(P.pairs):
            if self.status["A"][i] == 0 or self.status["B"][j] == 0:
                self.names += [("d+", p), ("d-", p)]

    def narrow(self, refined: dict[Target, tuple]) -> None:
        """Every target's range the tighter of what it is and what ``refined`` says (a bound of None says nothing)."""
        for (s, i), (lo, hi) in refined.items():
            if lo is not None and lo > self.lo[s][i]:
                self.lo[s][i] = lo
            if hi is not None and hi < self.hi[s][i]:
                self.hi[s][i] = hi

    def terms(self, name: tuple[str, int]) -> tuple[list, list, fmpq]:
        """Constraint ``name`` as (S terms [(key, coeff)], row terms [(key, coeff)], constant): g = Σ coeff·S_key +
        Σ coeff·z_key + constant, in the scaled (exact) form of the module docstring."""
        tag, idx = name
        if tag[0] in "ht":
            key = (tag[1], idx)
            lo, hi = self.lo[key[0]][idx], self.hi[key[0]][idx]
            if tag[0] == "h":
                return [(key, fmpq(-1))], [(key, fmpq(1))], fmpq(0)
            return [(key, hi - lo)], [(key, -hi)], hi * lo
        if tag[0] == "p":
            key = (tag[1], idx)
            return [], [(key, fmpq(-1) if self.region.phases[key] > 0 else fmpq(1))], fmpq(0)
        i, j, _ = self.P.pairs[idx]
        a, b = ("A", i), ("B", j)
        lo, hi = (self.dlo[idx], self.dhi[idx]) if tag == "d+" else (-self.dhi[idx], -self.dlo[idx])
        first, second = (a, b) if tag == "d+" else (b, a)
        if hi <= 0:
            return [(first, fmpq(1)), (second, fmpq(-1))], [], fmpq(0)
        if lo >= 0:
            return [(first, fmpq(1)), (second, fmpq(-1))], [(first, fmpq(-1)), (second, fmpq(1))], fmpq(0)
        return [(first, hi - lo), (second, lo - hi)], [(first, -hi), (second, hi)], hi * lo

    def objective_terms(self, o: Objective) -> tuple[dict, dict, fmpq]:
        """The objective ``o`` in the region's variables, once per region: the coefficients of the active neurons'
        rows z, of the unstable neurons' h columns, and the constant."""
        if o not in self._objective_terms:
            weights, const = self.P.objective(o)
            rows: dict[Key, fmpq] = {}
            cols: dict[Key, fmpq] = {}
            for s in "AB":
                status = self.status[s]
                for i, w in enumerate(weights[s]):
                    if w != 0 and status[i] >= 0:
                        (rows if status[i] > 0 else cols)[(s, i)] = w
            self._objective_terms[o] = (rows, cols, const)
        return self._objective_terms[o]

    def constraint(self, name: tuple[str, int]) -> tuple[dict, dict, fmpq]:
        """Constraint ``name`` expanded (``expand`` of ``terms``), once per region: every objective's bound reads it."""
        if name not in self._expanded:
            self._expanded[name] = self.expand(*self.terms(name))
        return self._expanded[name]

    def expand(self, s_terms: list, r_terms: list, const: fmpq) -> tuple[dict, dict, fmpq]:
        """Terms on S written in the region's variables: rows z (active S = z), h columns (unstable), or nothing."""
        rows: dict[Key, fmpq] = {}
        cols: dict[Key, fmpq] = {}
        for key, c in r_terms:
            rows[key] = rows.get(key, 0) + c
        for key, c in s_terms:
            status = self.status[key[0]][key[1]]
            if status > 0:
                rows[key] = rows.get(key, 0) + c
            elif status == 0:
                cols[key] = cols.get(key, 0) + c
        return rows, cols, const


def refine(leaf: _Leaf) -> list[Refinement]:
    """Bounds on the unstable neurons' z and the sign-changing pairs' Δ over the region, from its phase
    constraints (``Refinement``), kept where they narrow the range by ``REFINE_GAIN``.

    The multipliers minimize max over the box of (s·y − Σ μ g), a convex piecewise-linear function of μ, by
    coordinate descent: along one μ_i it is minimized exactly at a weighted median of its breakpoints. All targets
    at once in binary64 (floats only choose μ); μ is then cut to ``MULTIPLIER_BITS`` significant bits and the bound
    computed exactly for the targets whose binary64 bound comes within reach of the gain. Cost: O(passes · d · T · m
    log m) floating-point operations and one exact product (T' × d)·(d × m) for T targets (T' of them within reach)
    and d phases."""
    P, region = leaf.P, leaf.region
    m = P.m
    phased = sorted(region.phases)
    targets = [(s, i) for s in "AB" for i in range(P.size[s]) if leaf.lo[s][i] < 0 < leaf.hi[s][i]
               and (s, i) not in region.phases]
    targets += [("d", p) for p in range(len(P.pairs)) if leaf.lo["d"][p] < 0 < leaf.hi["d"][p]]
    if not targets or not phased:
        return []
    box = np.array([[float(lo), float(hi)] for lo, hi in region.box])
    centre, rad = box.mean(axis=1), (box[:, 1] - box[:, 0]) / 2
    phase = np.array([region.phases[key] for key in phased], dtype=float)
    G = -phase[:, None] * np.array([P.float_rows[s][i] for s, i in phased])  # g = G·(x, 1) ≤ 0 on the region
    rows = np.array([P.float_rows[s][i] for s, i in targets])
    T = np.vstack([rows, -rows])  # the upper bounds, then the lower ones (as upper bounds of −y)
    mu = np.zeros((len(T), len(phased)))
    for _ in range(REFINE_PASSES):
        for i in range(len(phased)):
            mu[:, i] = 0.0
            V = T - mu @ G
            q = G[i, :m]
            slope = -G[i, m] - q @ centre  # of the affine part along μ_i; each |V_r − μ_i q_r| adds ∓ rad_r |q_r|
            with np.errstate(divide="ignore", invalid="ignore"):
                kinks = np.where(q != 0, V[:, :m] / q, np.inf)
            order = np.argsort(kinks, axis=1)
            kinks = np.take_along_axis(kinks, order, axis=1)
            weight = (rad * np.abs(q))[order]
            climb = slope - weight.sum(axis=1, keepdims=True) + 2 * np.cumsum(weight, axis=1)
            up = climb >= 0
            first = np.argmax(up, axis=1)
            at = kinks[np.arange(len(T)), first]
            # slope ≥ 0 from the start: μ_i = 0; never: the region is empty along μ_i, a large μ_i shows it
            at = np.where(up.any(axis=1), at, np.where(np.isfinite(kinks), kinks, 0).max(axis=1) + 1.0)
            mu[:, i] = np.where(slope - weight.sum(axis=1) >= 0, 0.0, np.maximum(at, 0.0))
    mant, expo = np.frexp(mu)
    mu = np.ldexp(np.round(np.ldexp(mant, MULTIPLIER_BITS)), expo - MULTIPLIER_BITS)
    # the bounds in binary64 choose which to compute exactly: those within reach of REFINE_GAIN (a margin of a
    # tenth of it for the rounding); the exact bound alone decides whether a refinement is stated
    V = T - mu @ G
    estimate = V[:, m] + V[:, :m] @ centre + np.abs(V[:, :m]) @ rad
    half = len(targets)
    lows = np.array([float(leaf.lo[s][i]) for s, i in targets])
    highs = np.array([float(leaf.hi[s][i]) for s, i in targets])
    gains = np.concatenate([highs - estimate[:half], -estimate[half:] - lows]) / np.tile(highs - lows, 2)
    chosen = np.flatnonzero(gains >= 0.9 * REFINE_GAIN)
    if not len(chosen):
        return []
    flat = []
    for r in chosen.tolist():
        s, i = targets[r % half]
        sign = 1 if r < half else -1
        flat += [x * sign for x in P.entries[s][i * (m + 1):(i + 1) * (m + 1)]]
    phase_rows = fmpq_mat(len(phased), m + 1, [x * region.phases[key] for key in phased
                                               for x in P.entries[key[0]][key[1] * (m + 1):(key[1] + 1) * (m + 1)]])
    zero = fmpq(0)
    mults = fmpq_mat(len(chosen), len(phased), [_q(x) if x else zero for x in mu[chosen].ravel()])
    tops = extremes(fmpq_mat(len(chosen), m + 1, flat) + mults * phase_rows, region.box)[1]
    out = []
    for r, top in zip(chosen.tolist(), tops, strict=True):
        target = targets[r % half]
        lo, hi = leaf.lo[target[0]][target[1]], leaf.hi[target[0]][target[1]]
        side, value = ("upper", top) if r < half else ("lower", -top)
        gain = hi - value if side == "upper" else value - lo
        if gain >= (hi - lo) * fmpq(int(REFINE_GAIN * 1000), 1000):
            out.append(Refinement(target, side, value, {(f"p{key[0]}", key[1]): _q(x)
                                                        for key, x in zip(phased, mu[r], strict=True) if x > 0}))
    return out


def _status(phase: int | None, lo: fmpq, hi: fmpq) -> int:
    """+1 active (S = z), −1 inactive (S = 0), 0 unstable (S = h)."""
    if phase is not None:
        return phase
    return 1 if lo >= 0 else -1 if hi <= 0 else 0


def bound_region(P: Pair, region: Region, snap: bool = False,
                 objectives: list[Objective] | None = None, deadline: Deadline | None = None) -> RegionBound:
    """The exact bound of every objective (default the 2k objectives ±D_t of the distance) on ``region`` from
    multipliers a floating-point LP proposes (module docstring). With ``snap``, multipliers are also tried rounded
    to rationals of small denominators (exact duals of problems with small rational data), and the smaller exact
    bound is kept. Once ``deadline`` has expired no program is solved: the remaining objectives get μ = 0,
    a valid (looser) bound. The refinements made on the region (``refine``) are returned with the bounds and added
    to ``region.refined``, so a second call on the region makes none and its children inherit them."""
    # scipy loads here, not with the module: the command line imports this module, and most commands need no LP
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    leaf = _Leaf(P, region)
    m, k = P.m, P.k
    nvar = m + len(leaf.unstable)
    # the float constraint matrix G y ≤ g, one row per constraint (unscaled: the scaled rows divided by their scale):
    # the rows' terms are a sparse combination of the networks' float rows, the h terms a sparse block
    expanded = [leaf.constraint(name) for name in leaf.names]
    G, rhs, scales = None, [], []
    if expanded:
        offset = {"A": 0, "B": P.size["A"]}
        terms = [(r, offset[key[0]] + key[1], float(c)) for r, (rows, _, _) in enumerate(expanded)
                 for key, c in rows.items()]
        h_terms = [(r, leaf.column[key], float(c)) for r, (_, cols, _) in enumerate(expanded)
                   for key, c in cols.items()]
        combine = csr_matrix(([t[2] for t in terms], ([t[0] for t in terms], [t[1] for t in terms])),
                             shape=(len(expanded), P.size["A"] + P.size["B"]))
        dense = np.zeros((len(expanded), nvar + 1))
        dense[:, list(range(m)) + [nvar]] = combine @ np.vstack([P.float_rows["A"], P.float_rows["B"]])
        for r, c, v in h_terms:
            dense[r, c] += v
        dense[:, nvar] += [float(const) for _, _, const in expanded]
        scales = np.maximum(np.abs(dense).max(axis=1), 1e-300)
        dense /= scales[:, None]
        G, rhs = csr_matrix(dense[:, :nvar]), -dense[:, nvar]
    bounds = [(float(lo), float(hi)) for lo, hi in region.box] + \
        [(0.0, float(leaf.hi[s][i])) for s, i in leaf.unstable]
    out_bounds, out_mult, points = {}, {}, []
    farkas = None
    for o in objectives or [(t, sgn) for t in range(k) for sgn in (1, -1)]:
        cvec = np.zeros(nvar)
        weights, _ = P.objective(o)
        for s in "AB":
            for i in range(P.size[s]):
                w = float(weights[s][i])
                st = leaf.status[s][i]
                if st > 0:
                    cvec[:m] += w * P.float_rows[s][i, :m]
                elif st == 0:
                    cvec[leaf.column[(s, i)]] += w
        mu = None
        # the corner of the box where the x part of the objective is largest: exact for a linear region
        points.append(np.where(cvec[:m] > 0, [hi for _, hi in bounds[:m]], [lo for lo, _ in bounds[:m]]))
        if G is not None and (deadline is None or not deadline.expired()):
            res = linprog(-cvec, A_ub=G, b_ub=rhs, bounds=bounds, method="highs")
            if res.status == 0:
                mu = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0) / scales
                points.append(np.asarray(res.x[:m]))
            elif res.status == 2:  # infeasible: the region is empty, so a Farkas combination closes it
                if farkas is None:
                    farkas = _farkas(G, rhs, bounds, scales, leaf.names)
                if farkas:
                    out_bounds[o], out_mult[o] = _closed(leaf, o, farkas)
                    continue
        # the pairing's own multipliers are exact where the program's rounded ones leave a residue (a pair of equal
        # neurons cancels exactly); alone when no program was solved (past the deadline, or it failed)
        candidates = [pairing_multipliers(leaf, o)]
        if mu is not None:
            candidates.append(on_grid(leaf.names, mu))
        if snap and mu is not None:
            candidates.append({name: fmpq(f.numerator, f.denominator) for name, x in zip(leaf.names, mu, strict=True)
                               if x > 0 and (f := Fraction(float(x)).limit_denominator(1 << 20))})
        best = None
        for mult in candidates:
            value = lagrangian_bound(leaf, o, mult)
            if best is None or value < best[0]:
                best = (value, mult)
        out_bounds[o], out_mult[o] = best
    score = []
    for s, i in leaf.unstable:
        lo, hi = float(leaf.lo[s][i]), float(leaf.hi[s][i])
        weight = float(np.abs(P.float_weights[s][i]).max(initial=0.0))
        score.append(((s, i), weight * hi * (-lo) / (hi - lo)))
    gaps = {(s, i): float(leaf.hi[s][i]) * -float(leaf.lo[s][i]) for s, i in leaf.unstable}
    pair_gaps = {p: max(0.0, float(hi)) * max(0.0, -float(lo))
                 for p, (lo, hi) in enumerate(zip(leaf.dlo, leaf.dhi, strict=True))}
    pair_keys = {p: (("A", i), ("B", j)) for p, (i, j, _) in enumerate(P.pairs)}
    return RegionBound(out_bounds, out_mult, points, score, gaps, pair_gaps, pair_keys, leaf.refinements)


def _farkas(G, rhs: np.ndarray, bounds: list, scales: np.ndarray, names: list) -> dict:
    """Multipliers ν ≥ 0 with min over the variables' box of Σ ν g > 0 (so no point satisfies every g ≤ 0), from
    the dual of min τ subject to G y − τ ≤ rhs; {} when the programme finds none."""
    from scipy.optimize import linprog  # loaded on first use (bound_region)
    from scipy.sparse import hstack

    n = G.shape[1]
    res = linprog(np.r_[np.zeros(n), 1.0], A_ub=hstack([G, -np.ones((G.shape[0], 1))]).tocsr(), b_ub=rhs,
                  bounds=[*bounds, (None, None)], method="highs")
    if res.status != 0 or res.fun <= 1e-9:
        return {}
    nu = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0) / scales
    return {name: _q(x) for name, x in zip(names, nu, strict=True) if x > 0}


def _closed(leaf: _Leaf, o: Objective, farkas: dict) -> tuple[fmpq, dict]:
    """A bound ≤ 0 for the objective on an empty region: the pairing's multipliers plus λ·ν, λ doubled until the
    exact bound is ≤ 0 (the Farkas part lowers it by λ times a positive amount); else the pairing's bound."""
    base = pairing_multipliers(leaf, o)
    best = (lagrangian_bound(leaf, o, base), base)
    lam = fmpq(1)
    for _ in range(64):
        mult = dict(base)
        for name, nu in farkas.items():
            mult[name] = mult.get(name, fmpq(0)) + lam * nu
        value = lagrangian_bound(leaf, o, mult)
        if value < best[0]:
            best = (value, mult)
        if value <= 0:
            break
        lam *= 4
    return best


def pairing_multipliers(leaf: _Leaf, o: Objective) -> dict[tuple[str, int], fmpq]:
    """Multipliers that need no program: for a pair, w σ(z) − ω σ(z') = (w − ω) σ(z) + ω (σ(z) − σ(z')), and the
    second term is bounded by ω times the chord of σ(±Δ) (``d+`` for ω > 0, ``d-`` for ω < 0, μ = |ω| / scale,
    rounded to GRID_BITS significant bits: any μ ≥ 0 is sound, and a dyadic μ keeps the common denominators of the
    exact combination short where |ω| / scale for hundreds of pairs would multiply their odd parts together). The
    symbolic-interval rule's bound, with the chords maximized jointly over the box. Cost O(pairs)."""
    P = leaf.P
    names = set(leaf.names)
    weights, _ = P.objective(o)
    out: dict[tuple[str, int], fmpq] = {}
    for p, (_, j, _) in enumerate(P.pairs):
        omega = -weights["B"][j]
        tag = "d+" if omega > 0 else "d-"
        if omega == 0 or (tag, p) not in names:
            continue
        lo, hi = leaf.dlo[p], leaf.dhi[p]
        scale = hi - lo if lo < 0 < hi else fmpq(1)
        out[(tag, p)] = outward(abs(omega) / scale, up=True, bits=GRID_BITS, dyadic=True)
    return out


def lagrangian_bound(leaf: _Leaf, o: Objective, mult: dict[tuple[str, int], fmpq]) -> fmpq:
    """max over x ∈ Q, h ∈ [0, u] of f − Σ μ g for the objective ``o``, exactly. Cost: O(constraints) scalar
    operations and one product of the combined row with the box (O((n_A + n_B) m))."""
    P = leaf.P
    base_rows, base_cols, const = leaf.objective_terms(o)
    rows, cols = dict(base_rows), dict(base_cols)
    for name, mu in mult.items():
        r, c, c0 = leaf.constraint(name)
        for key, v in r.items():
            rows[key] = rows.get(key, 0) - mu * v
        for key, v in c.items():
            cols[key] = cols.get(key, 0) - mu * v
        const -= mu * c0
    value = const
    combined = None
    for s in "AB":
        if any(side == s and v != 0 for (side, _), v in rows.items()):
            coeff = [fmpq(0)] * P.size[s]
            for (side, i), v in rows.items():
                if side == s:
                    coeff[i] = v
            part = fmpq_mat(1, P.size[s], coeff) * P.rows[s]
            combined = part if combined is None else combined + part
    if combined is not None:
        value += extremes(combined, leaf.region.box)[1][0]
    for key, v in cols.items():
        if v > 0:
            value += v * leaf.hi[key[0]][key[1]]
    return value

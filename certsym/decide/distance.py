"""Certified distance between two networks on a box: an exact rational enclosure [L, U] of
sup_{x ∈ B} ‖ρ(θ_A)(x) − ρ(θ_B)(x)‖∞ for a box B = Π_q [lo_q, hi_q].

- Alignment: each neuron of B is paired with the A neuron whose row is nearest after positive scaling
  (floating point proposes, exact arithmetic disposes: any pairing and any d > 0 give a sound bound). The pairs
  (i, i', d) form a partial H_n element: B's neuron i' is scaled by d, (a', b', v') ↦ (d a', d b', v'/d), which
  leaves ρ(θ_B) unchanged.
- Upper bound U (symbolic intervals, as in ReluDiff): for a pair with z = a·x + b and z' = d(a'·x + b'),
  v σ(z) − v'' σ(z') (v'' = v'/d) is the exact affine map v z − v'' z' when both are active on all of B, 0 when
  both are inactive, and otherwise (v − v'') σ(z) + v''(σ(z) − σ(z')) with σ(z) ∈ [max(zmin, 0), max(zmax, 0)]
  and σ(z) − σ(z') ∈ [min(0, Δmin), max(0, Δmax)] (σ is monotone and 1-Lipschitz; Δ = z − z'). An unpaired
  neuron is affine when stably active, 0 when stably inactive, else v·[0, zmax]. So output j lies in
  aff_j(x) + [E_lo_j, E_hi_j], and U = max_j max(max_B aff_j + E_hi_j, −(min_B aff_j + E_lo_j)): an affine map's
  extremes on a box are exact.
- Lower bound L = ‖D(x*)‖∞ at a witness x* ∈ B, evaluated exactly; x* comes from a floating-point search
  (random points, corners and projected gradient steps, then ``certsym.decide.cell_ascent``'s walk over the
  activation cells by linear programs, and the branch and bound's LP points), which only proposes.
- Exactly equivalent networks (decided by ``certsym.decide.equivalence``) get U = L = 0 with the equivalence proof.
Cost: O(n m) exact operations for the bounds (matrix products in python-flint), plus the search: linear in the
number of weights.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from flint import fmpq, fmpq_mat

from certsym.core.network import Network
from certsym.decide.branch_and_bound import MAX_REGIONS, ReplayWork, Search, branch_and_bound
from certsym.decide.cell_ascent import cell_ascent
from certsym.decide.deadline import Deadline, deadline_of
from certsym.decide.equivalence import decide
from certsym.decide.relaxation import Pair
from certsym.errors import InputError
from certsym.numbers import QQ, parse_rational

Box = list[tuple[fmpq, fmpq]]


def box_text(box: Box) -> str:
    """A box for a one-line repr: [lo, hi]^m when every coordinate has the same interval, else its dimension and
    the widths' range, in decimals (the exact ends are in the result's ``box``). Cost O(m)."""
    if not box:
        return "R^0"
    if len(set(box)) == 1:
        lo, hi = box[0]
        return f"[{float(lo):.4g}, {float(hi):.4g}]^{len(box)}"
    widths = [float(hi - lo) for lo, hi in box]
    return f"a box in R^{len(box)} (widths {min(widths):.3g} to {max(widths):.3g})"


def bounds_text(lower, upper) -> str:
    """L and U as decimals for a repr (the exact rationals are the attributes)."""
    return f"L≈{float(lower):.6g}, U≈{float(upper):.6g}"


@dataclass
class ShallowDistance:
    """[L, U] with the evidence: the box, the alignment (i in A, i' in B, d > 0), the witness and its values;
    ``equivalence`` is the exact-equivalence verdict when U = 0 by Theorems 3/4."""

    lower: fmpq
    upper: fmpq
    box: Box
    pairs: list[tuple[int, int, fmpq]]
    witness: list[fmpq]
    values: list[fmpq]
    stable: int = 0
    unstable: int = 0
    equivalence: object = None
    search: Search | None = None  # the branch and bound whose leaves give U (None: U from the interval rule)
    interval: fmpq | None = None  # the symbolic-interval U, for comparison
    epsilon: fmpq | None = None
    hidden: tuple[int, int] = (0, 0)  # the hidden widths of θ_A and θ_B

    @property
    def unpaired(self) -> tuple[int, int]:
        """The neurons of θ_A and of θ_B outside the alignment."""
        return self.hidden[0] - len(self.pairs), self.hidden[1] - len(self.pairs)

    @property
    def verdict(self) -> str | None:
        """With ε: "verified" (U ≤ ε), "violated" (L > ε) or "unknown"."""
        if self.epsilon is None:
            return None
        return epsilon_verdict(self.lower, self.upper, self.epsilon)

    @property
    def regions(self) -> int:
        """The regions the branch and bound bounded (1 when U came from the box alone)."""
        return self.search.regions if self.search is not None else 1

    @property
    def leaves(self) -> int:
        """The regions whose bounds cover the box."""
        return len(self.search.root.leaves()) if self.search is not None else 1

    @property
    def stopped(self) -> str:
        """Where the search stopped ("equivalent" when Theorems 3/4 gave U = 0)."""
        return self.search.stopped if self.search is not None else "equivalent" if self.equivalence else ""

    @property
    def seconds(self) -> float:
        return self.search.seconds if self.search is not None else 0.0

    def __repr__(self) -> str:
        against = f", ε={self.epsilon}: {self.verdict}" if self.epsilon is not None else ""
        return f"ShallowDistance({bounds_text(self.lower, self.upper)}, box={box_text(self.box)}, " \
            f"{self.leaves} region{'s' * (self.leaves != 1)}{against})"

    @property
    def ratio(self) -> float | None:
        return None if self.lower == 0 else float(self.upper / self.lower)


def epsilon_verdict(lower: fmpq, upper: fmpq, epsilon: fmpq) -> str:
    """sup ≤ ε against a certified [L, U]: "verified" (U ≤ ε), "violated" (L > ε, at an exact witness) or "unknown"
    (L ≤ ε < U). Cost O(1)."""
    return "verified" if upper <= epsilon else "violated" if lower > epsilon else "unknown"


WALK_LEAVES = 20  # leaves whose programs' points the final walks start from
BOX_NUMERATOR_BITS = 1 << 12  # the checker's bound on the numerators of a distance certificate's box and witness


def parse_box(spec: str | None, m: int) -> Box:
    """The box: None → [0, 1]^m; "lo,hi" for every coordinate; "lo1,hi1;lo2,hi2;…" one pair per coordinate.
    Numbers are exact decimals or p/q."""
    if spec is None:
        return [(fmpq(0), fmpq(1))] * m
    parts = [p for p in spec.split(";") if p.strip()]
    if len(parts) not in (1, m):
        raise InputError(f"--box: give one 'lo,hi' for all {m} coordinates or {m} of them separated by ';'")
    box = []
    for part in parts:
        ends = part.split(",")
        if len(ends) != 2:
            raise InputError(f"--box: expected 'lo,hi', not {part.strip()!r}")
        lo, hi = (parse_rational(e.strip()) for e in ends)
        if lo is None or hi is None:
            raise InputError(f"--box: not an exact number in {part.strip()!r}")
        if lo > hi:
            raise InputError(f"--box: lo > hi in {part.strip()!r}")
        box.append((lo, hi))
    return box * m if len(box) == 1 else box


def ball(center: list[fmpq], radius: fmpq, clip: tuple[fmpq, fmpq] | None = None) -> Box:
    """The L∞ ball of ``radius`` around ``center`` as a box, each interval cut to ``clip`` (lo, hi) when given:
    [max(c − r, lo), min(c + r, hi)], exactly. InputError for a negative radius or an interval the clip empties.
    Cost O(m)."""
    if radius < 0:
        raise InputError(f"the radius must be at least 0, not {radius}")
    if clip is not None and clip[0] > clip[1]:
        raise InputError(f"the clip's lo > hi ({clip[0]} > {clip[1]})")
    box = []
    for q, c in enumerate(center):
        lo, hi = c - radius, c + radius
        if clip is not None:
            lo, hi = max(lo, clip[0]), min(hi, clip[1])
        if lo > hi:
            raise InputError(f"coordinate {q} of the center ({float(c):.6g}) is farther than the radius from the clip "
                             f"[{clip[0]}, {clip[1]}]: the region is empty")
        box.append((lo, hi))
    return box


def floats(net: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (np.array([[float(x) for x in row] for row in net.A]).reshape(net.n, net.m),
            np.array([float(x) for x in net.b]), np.array([[float(x) for x in row] for row in net.M]).reshape(
                net.k, net.n), np.array([float(x) for x in net.c]))


def align(A: Network, B: Network) -> list[tuple[int, int, fmpq]]:
    """Pairs (i, i', d): B's neuron i' scaled by d > 0 is nearest to A's neuron i (cosine of the rows (a, b),
    greedy by similarity; d from the ratio of norms, rounded to 10 significant bits: a dyadic, so that the scaled
    rows of all pairs share short common denominators, where ratios such as 997/998 multiply into the lcm of the
    checker's exact combinations, thousands of bits for a few hundred pairs). Cost O(n_A n_B m) floating point."""
    WA, bA, _, _ = floats(A)
    WB, bB, _, _ = floats(B)
    RA, RB = np.hstack([WA, bA[:, None]]), np.hstack([WB, bB[:, None]])
    nA, nB = np.linalg.norm(RA, axis=1), np.linalg.norm(RB, axis=1)
    live_A, live_B = np.flatnonzero(nA > 0), np.flatnonzero(nB > 0)
    if not len(live_A) or not len(live_B):
        return []
    sim = (RA[live_A] / nA[live_A, None]) @ (RB[live_B] / nB[live_B, None]).T
    order = np.argsort(-sim, axis=None)
    used_A, used_B, pairs = set(), set(), []
    for flat in order[: 8 * (len(live_A) + len(live_B))]:
        ia, ib = divmod(int(flat), len(live_B))
        if sim[ia, ib] < 0.9:
            break
        i, j = int(live_A[ia]), int(live_B[ib])
        if i in used_A or j in used_B:
            continue
        used_A.add(i)
        used_B.add(j)
        mantissa, exponent = math.frexp(float(nA[i] / nB[j]))
        steps = round(mantissa * 1024)
        if not steps > 0 or not -1000 < exponent < 1000:  # rows of wildly different scales: no pair
            continue
        shift = exponent - 10
        pairs.append((i, j, fmpq(steps << shift) if shift >= 0 else fmpq(steps, 1 << -shift)))
    return sorted(pairs)


def _extremes(rows: fmpq_mat, bias: list, box: Box) -> tuple[list, list]:
    """(min, max) over the box of every row's affine function a·x + b, exactly: a·mid ∓ |a|·rad + b with
    mid = (lo + hi)/2 and rad = (hi − lo)/2 (two matrix products)."""
    n, m = rows.nrows(), rows.ncols()
    mid = fmpq_mat(m, 1, [(lo + hi) / 2 for lo, hi in box])
    rad = fmpq_mat(m, 1, [(hi - lo) / 2 for lo, hi in box])
    centre = (rows * mid).entries()
    if all(r == 0 for r in rad.entries()):
        spread = [fmpq(0)] * n
    else:
        spread = (fmpq_mat(n, m, [abs(x) for x in rows.entries()]) * rad).entries()
    return ([c - s + b for c, s, b in zip(centre, spread, bias, strict=True)],
            [c + s + b for c, s, b in zip(centre, spread, bias, strict=True)])


def upper_bound(A: Network, B: Network, box: Box, pairs: list[tuple[int, int, fmpq]]):
    """U for the alignment ``pairs`` (module docstring), with the numbers of stable and unstable terms. Cost:
    O((n_A + n_B) m) exact operations in matrix products, O((n_A + n_B) k) in Python."""
    m, k = A.m, A.k
    # every term is v σ(r·x + β) with sign ±; B's paired neurons carry their scaling d
    scale = {j: d for _, j, d in pairs}
    rows_A = fmpq_mat(A.n, m, [x for row in A.A for x in row])
    rows_B = fmpq_mat(B.n, m, [x * scale[i] if scale.get(i, 1) != 1 else x for i, row in enumerate(B.A) for x in row])
    bias_B = [x * scale.get(i, 1) for i, x in enumerate(B.b)]
    v_B = [[B.M[j][i] / scale.get(i, 1) for j in range(k)] for i in range(B.n)]
    v_A = [[A.M[j][i] for j in range(k)] for i in range(A.n)]
    zA, zB = _extremes(rows_A, list(A.b), box), _extremes(rows_B, bias_B, box)
    elo, ehi = [fmpq(0)] * k, [fmpq(0)] * k
    # the weights with which each neuron's affine function enters the exact affine part, per output
    coeff_A, coeff_B = [[fmpq(0)] * A.n for _ in range(k)], [[fmpq(0)] * B.n for _ in range(k)]
    stable = unstable = 0

    paired_A = {i: (j, d) for i, j, d in pairs}
    paired_B = {j for _, j, _ in pairs}
    dz = {}
    if pairs:  # Δ = z − z' = (a − d a')·x + (b − d b'), its extremes over the box
        flat_A, flat_B = rows_A.entries(), rows_B.entries()
        diff = fmpq_mat(len(pairs), m, [x - y for i, j, _ in pairs
                                        for x, y in zip(flat_A[i * m:(i + 1) * m], flat_B[j * m:(j + 1) * m],
                                                        strict=True)])
        dlo, dhi = _extremes(diff, [A.b[i] - bias_B[j] for i, j, _ in pairs], box)
        dz = {i: (lo, hi) for (i, _, _), lo, hi in zip(pairs, dlo, dhi, strict=True)}
    for i in range(A.n):
        (lo_i, hi_i) = zA[0][i], zA[1][i]
        if i in paired_A:
            j = paired_A[i][0]
            lo_j, hi_j = zB[0][j], zB[1][j]
            if lo_i >= 0 and lo_j >= 0:
                stable += 1
                for t in range(k):
                    coeff_A[t][i] += v_A[i][t]
                    coeff_B[t][j] -= v_B[j][t]
                continue
            if hi_i <= 0 and hi_j <= 0:
                stable += 1
                continue
            unstable += 1
            s_lo, s_hi = max(lo_i, 0), max(hi_i, 0)
            d_lo, d_hi = min(dz[i][0], 0), max(dz[i][1], 0)
            for t in range(k):
                dv, vb = v_A[i][t] - v_B[j][t], v_B[j][t]
                elo[t] += min(dv * s_lo, dv * s_hi) + min(vb * d_lo, vb * d_hi)
                ehi[t] += max(dv * s_lo, dv * s_hi) + max(vb * d_lo, vb * d_hi)
            continue
        stable, unstable = _single(i, lo_i, hi_i, v_A[i], 1, coeff_A, elo, ehi, stable, unstable)
    for j in range(B.n):
        if j not in paired_B:
            stable, unstable = _single(j, zB[0][j], zB[1][j], v_B[j], -1, coeff_B, elo, ehi, stable, unstable)
    # the exact affine part: Σ_i coeff_A[t][i] (a_i·x + b_i) + Σ_j coeff_B[t][j] (a'_j·x + b'_j) + c_A − c_B
    linear = fmpq_mat(k, m, [0] * (k * m))
    if A.n:
        linear += fmpq_mat(k, A.n, [x for row in coeff_A for x in row]) * rows_A
    if B.n:
        linear += fmpq_mat(k, B.n, [x for row in coeff_B for x in row]) * rows_B
    const = [sum((coeff_A[t][i] * A.b[i] for i in range(A.n)), fmpq(0)) +
             sum((coeff_B[t][j] * bias_B[j] for j in range(B.n)), fmpq(0)) + A.c[t] - B.c[t] for t in range(k)]
    amin, amax = _extremes(linear, const, box)
    U = max(max(amax[t] + ehi[t], -(amin[t] + elo[t])) for t in range(k))
    return max(U, fmpq(0)), stable, unstable


def _single(i, lo, hi, v, sign, coeff, elo, ehi, stable, unstable):
    """An unpaired neuron ±v σ(z): affine when stably active, 0 when stably inactive, else ±v·[0, zmax]."""
    if lo >= 0:
        for t in range(len(v)):
            coeff[t][i] += sign * v[t]
        return stable + 1, unstable
    if hi <= 0:
        return stable + 1, unstable
    for t in range(len(v)):
        a = sign * v[t] * hi
        elo[t] += min(a, fmpq(0))
        ehi[t] += max(a, fmpq(0))
    return stable, unstable + 1


def evaluate_difference(A: Network, B: Network, x: list[fmpq]) -> list[fmpq]:
    """ρ(θ_A)(x) − ρ(θ_B)(x), exactly (matrix products in python-flint). Cost O((n_A + n_B)(m + k))."""
    return difference(A, B)(x)


def difference(A: Network, B: Network) -> Callable[[list[fmpq]], list[fmpq]]:
    """x ↦ ρ(θ_A)(x) − ρ(θ_B)(x), exactly, with both networks' matrices built once (a search evaluates many
    points). Cost O((n_A + n_B)(m + k)) per point."""
    mats = [(fmpq_mat(net.n, net.m, [y for row in net.A for y in row]), list(net.b),
             fmpq_mat(net.k, net.n, [y for row in net.M for y in row]), list(net.c), net.n, net.m) for net in (A, B)]

    def rho(W, b, M, c, n: int, m: int, x: list[fmpq]) -> list[fmpq]:
        z = (W * fmpq_mat(m, 1, x)).entries()
        h = [max(zi + bi, fmpq(0)) for zi, bi in zip(z, b, strict=True)]
        out = (M * fmpq_mat(n, 1, h)).entries()
        return [o + ci for o, ci in zip(out, c, strict=True)]

    def evaluate(x: list[fmpq]) -> list[fmpq]:
        return [p - q for p, q in zip(rho(*mats[0], x), rho(*mats[1], x), strict=True)]

    return evaluate


def float_difference(fa: tuple, fb: tuple, X: np.ndarray) -> np.ndarray:
    """ρ(θ_A)(x) − ρ(θ_B)(x) in binary64 for each row x of X (weights as ``floats`` gives them): it only ranks
    and proposes points. Cost O(rows · n (m + k))."""
    WA, bA, MA, cA = fa
    WB, bB, MB, cB = fb
    return (np.maximum(X @ WA.T + bA, 0) @ MA.T + cA) - (np.maximum(X @ WB.T + bB, 0) @ MB.T + cB)


def search_witness(A: Network, B: Network, box: Box, seed: int = 0, samples: int = 2000, steps: int = 60) -> list:
    """A point of the box where ‖D‖∞ is large, by floating point: random points and corners, then projected
    gradient ascent from the best ones. Only proposes; the value is computed exactly afterwards."""
    return search_float_witness(floats(A), floats(B), box, seed, samples, steps)


def search_float_witness(fa: tuple, fb: tuple, box: Box, seed: int = 0, samples: int = 2000,
                         steps: int = 60) -> list:
    """``search_witness`` on the networks' weights as binary64 arrays (W1, b1, W2, b2) each: a rational point of
    the box (the dyadic rationals the floats are, clipped to the box). Cost O((samples + 8 steps)(n (m + k)))
    floating-point operations."""
    WA, bA, MA, cA = fa
    WB, bB, MB, cB = fb
    lo = np.array([float(b[0]) for b in box])
    hi = np.array([float(b[1]) for b in box])
    rng = np.random.default_rng(seed)

    def D(X):
        return float_difference(fa, fb, X)

    X = np.vstack([lo + (hi - lo) * rng.random((samples, len(lo))), lo, hi, (lo + hi) / 2,
                   np.where(rng.random((64, len(lo))) < 0.5, lo, hi)])
    vals = np.abs(D(X))
    best = np.argsort(-vals.max(axis=1))[:8]
    starts = X[best]
    found = X[best[0]].copy()
    best_val = vals[best[0]].max()
    for x in starts:
        j = int(np.argmax(np.abs(D(x[None])[0])))
        step = (hi - lo) * 0.05
        for _ in range(steps):
            zA, zB = x @ WA.T + bA, x @ WB.T + bB
            grad = (MA[j] * (zA > 0)) @ WA - (MB[j] * (zB > 0)) @ WB
            sign = np.sign(D(x[None])[0][j]) or 1.0
            x = np.clip(x + sign * step * np.sign(grad), lo, hi)
            step *= 0.95
            value = np.abs(D(x[None])[0]).max()
            if value > best_val:
                best_val, found = value, x.copy()
    return rational_point(found, box)


def rational_point(point: np.ndarray, box: Box) -> list[fmpq]:
    """The rationals a point's binary64 coordinates are, each clipped to its interval of the box. Cost O(m)."""
    return [min(max(fmpq(*float(t).as_integer_ratio()), lo), hi) for t, (lo, hi) in zip(point.tolist(), box,
                                                                                      strict=True)]


def ascend(A: Network, B: Network, box: Box, x: list[fmpq], values: list[fmpq], deadline: Deadline,
           nets: tuple | None = None) -> tuple[list[fmpq], list[fmpq]]:
    """The witness x moved uphill by ``certsym.decide.cell_ascent`` on its largest output difference, with its
    exact values, when the exact ‖D‖∞ there is larger than at x (else x and ``values``). Only proposes: the point
    is the rationals its floats are, clipped to the box, and evaluated exactly. ``nets``: (floats(A), floats(B))
    when the caller has them. Cost: the walk's LPs until ``deadline`` expires, and one exact evaluation."""
    t = max(range(len(values)), key=lambda j: abs(values[j]))
    if values[t] == 0 or deadline.expired():
        return x, values
    fa, fb = nets or (floats(A), floats(B))
    lo = np.array([float(b[0]) for b in box])
    hi = np.array([float(b[1]) for b in box])
    points = cell_ascent(fa, fb, lo, hi, np.array([float(q) for q in x]), t, 1.0 if values[t] > 0 else -1.0,
                         deadline)
    if not points:
        return x, values
    y = rational_point(points[-1], box)
    new = evaluate_difference(A, B, y)
    return (y, new) if max(abs(v) for v in new) > max(abs(v) for v in values) else (x, values)


FLOAT_LIMIT = 2.0**400  # the largest |z| or |ρ| on the box the floating-point search and LPs are given


def float_magnitude(A: Network, B: Network, box: Box) -> float:
    """The largest bound, by interval arithmetic in binary64 over the box, on a pre-activation |z| or an output
    |ρ(θ)(x)| of either network (inf beyond binary64): the floating-point search, its LPs and their products stay
    finite when it is at most FLOAT_LIMIT. Cost O(n (m + k)) per network."""
    try:
        nets = (floats(A), floats(B))
        reach = np.array([max(abs(float(lo)), abs(float(hi))) for lo, hi in box])
    except OverflowError:
        return math.inf
    largest = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for W, b, M, c in nets:
            z = np.abs(W) @ reach + np.abs(b)
            out = np.abs(M) @ z + np.abs(c)
            largest = max(largest, float(np.max(z, initial=0.0)), float(np.max(out, initial=0.0)))
    return largest if math.isfinite(largest) else math.inf


def checked_box(A: Network, B: Network, box: Box | None) -> Box:
    """The box (default [0, 1]^m) after the checks every question on a box of two networks needs: both over QQ,
    the same input and output sizes, one interval per input, ends the checker replays. Raises InputError."""
    if A.field is not QQ or B.field is not QQ:
        raise InputError("certsym distance works over QQ (model files and rational parameter files)")
    if (A.m, A.k) != (B.m, B.k):
        raise InputError(f"the networks differ in shape: m = {A.m}, k = {A.k} against m = {B.m}, k = {B.k}")
    box = box or parse_box(None, A.m)
    if len(box) != A.m:
        raise InputError(f"the box has {len(box)} coordinates, the networks {A.m} inputs")
    if any(int(end.p).bit_length() > BOX_NUMERATOR_BITS for b in box for end in b):
        raise InputError(f"the box has a bound whose numerator exceeds {BOX_NUMERATOR_BITS} bits, beyond what the "
                         "checker replays (certificates/FORMAT.md, Bounds)")
    magnitude = float_magnitude(A, B, box)
    if not magnitude <= FLOAT_LIMIT:
        raise InputError(f"the networks' values on the box may exceed 2^400 (interval bound {magnitude:.3g}): "
                         "certsym proposes points and multipliers in binary64, which needs room for their "
                         "products; rescale the networks (the distance scales with them)")
    return box


def distance(A: Network, B: Network, box: Box | None = None, seed: int = 0, seconds: float = 10.0,
             target: float = 1.1, epsilon: fmpq | None = None, max_regions: int = MAX_REGIONS,
             progress=None, deadline: Deadline | None = None) -> ShallowDistance:
    """The certified enclosure [L, U] of sup_B ‖ρ(θ_A) − ρ(θ_B)‖∞: U from linear relaxations with rational
    multipliers over a branch and bound (``certsym.decide.branch_and_bound``) until U ≤ ``target``·L, or with
    ``epsilon`` until U ≤ ε or L > ε, or the time budget, ``max_regions`` or the checker's work bound run out
    (``ShallowDistance.stopped`` says which). The time budget is ``deadline`` (the documented way: a caller starts
    it when its command starts; it replaces ``seconds``), else ``seconds`` from now. The floating-point walks
    before and after the branch and bound get a twentieth of the budget each, the branch and bound 95% of what
    remains after the first walk; none of them runs past the deadline. Raises InputError for networks over a
    number field, or of different input or output sizes. Cost: the module's, and at most ``max_regions`` region
    bounds."""
    box = checked_box(A, B, box)
    if epsilon is not None and epsilon < 0:
        raise InputError("--epsilon must be nonnegative")
    deadline = deadline_of(seconds, deadline)
    nets = (floats(A), floats(B))  # the binary64 weights every floating-point proposal below works on
    x = search_float_witness(*nets, box, seed)
    values = evaluate_difference(A, B, x)
    L = max(abs(v) for v in values)
    if L == 0:  # only then can the networks be equivalent (a nonzero difference anywhere says they are not)
        verdict = decide(A, B)
        if verdict.equivalent:
            return ShallowDistance(fmpq(0), fmpq(0), box, [], [b[0] for b in box], [fmpq(0)] * A.k,
                                   equivalence=verdict, epsilon=epsilon, hidden=(A.n, B.n))
    pairs = align(A, B)
    interval, stable, unstable = upper_bound(A, B, box, pairs)
    small = (A.n + B.n) * (A.m + 1) <= 600  # exact small-denominator duals are worth trying
    # the local walk over activation cells, before the branch and bound (a higher L focuses it and may stop it at
    # once) and after it, from its best witness; each is given a twentieth of the budget
    x, values = ascend(A, B, box, x, values, deadline.within(deadline.seconds / 20), nets)
    search = branch_and_bound(Pair(A, B, pairs), box, difference(A, B), x, target, max_regions=max_regions,
                              epsilon=epsilon, snap=small, progress=progress, work=ReplayWork(A, B, pairs, box),
                              deadline=deadline.share(0.95))
    walks = deadline.within(deadline.seconds / 20)
    # walks from the search's witness, from where the root's relaxation puts each objective's maximum, and from where
    # the relaxations of the WALK_LEAVES leaves of largest bound put theirs (the supremum is likeliest there), the
    # points of larger floating-point ‖D‖∞ first
    worst = heapq.nlargest(WALK_LEAVES, (leaf for leaf in search.root.leaves() if leaf.bound is not None),
                           key=lambda leaf: leaf.upper)
    points = [np.array([float(q) for q in search.witness]), *search.root.bound.points,
              *(p for leaf in worst for p in leaf.bound.points)]
    rank = np.argsort(-np.abs(float_difference(*nets, np.array(points))).max(axis=1), kind="stable")
    for r in rank.tolist():
        if walks.expired():
            break
        if r == 0 and search.witness == x:
            continue  # walked from before the branch and bound
        origin = rational_point(points[r], box)
        y, new = ascend(A, B, box, origin, evaluate_difference(A, B, origin), walks, nets)
        if max(abs(v) for v in new) > search.lower:
            search.lower, search.witness, search.values = max(abs(v) for v in new), y, new
    if search.lower > search.upper:  # pragma: no cover - a soundness failure, never a result
        raise AssertionError("lower bound above the upper bound")
    return ShallowDistance(search.lower, search.upper, box, pairs, search.witness, search.values, stable, unstable,
                           search=search, interval=interval, epsilon=epsilon, hidden=(A.n, B.n))

"""Replay of ``added_neuron`` certificates: one student neuron added to a certified critical point W* of the
k-neuron loss, in mpmath interval arithmetic (independent of certsym's producer).

The certified critical point comes first (``landscape.check_box``: Krawczyk, the loss enclosure); W* lies in the
box of its parameters, which gives every entry of W* as an interval (block (α, β) of W carries d_α on the
diagonal and o_α off it when α = β, c_αβ otherwise).

split (row i, ratio λ = a/b ∈ (0, 1)): W_λ has rows w_1, …, λ w_i, …, w_k and the new row (1 − λ) w_i.
  Lemma (positive homogeneity): ∇_w κ(w, v) is of degree 0 in w and 1 in v, and ∇_w κ(w, w) = w/2, so
  ∇F(W_λ) = 0 whenever ∇F(W*) = 0: W_λ is a critical point of F on M(k + 1, k).
  The certificate gives q directions U_1, …, U_q ∈ M(k + 1, k). The checker expands F(W_λ + Σ_j y_j U_j) as a
  second-order jet in y, pair by pair: ‖w_r‖²/4 per row, κ(w_r, w_s) per pair of rows, −κ(w_r, e_j) per row and
  teacher vector (κ through its Gram partials, with S = √(N − g²) > 0 certified); for the two copies of w_i,
  which are parallel, κ(w, v) = w·v/2 + ‖w‖‖v‖(sin θ − θ cos θ)/(2π) and the last term is O(θ³) along any smooth
  curve, so their pair contributes the jet of w·v/2. Pairs of rows no direction moves contribute nothing to the
  gradient or the Hessian and are skipped. The y-gradient must contain 0 (a consistency check of the lemma), and
  Gershgorin must show the q × q Hessian negative definite: then ∇²F(W_λ) has at least q negative eigenvalues
  (Courant–Fischer), so W_λ is a saddle, not a local minimum.
  Exact inertia (optional "base_inertia", a hessian_inertia proof of the same critical point, and λ = 1/2 with
  every direction of the form (y on row i, −y on the new row, 0 elsewhere)): the swap of the two copies fixes
  W_{1/2} and F, so ∇²F(W_{1/2}) splits into the swap-symmetric and the antisymmetric subspace. On the symmetric
  one (u on both copies) F(W_{1/2} + u) is the k-neuron loss at W* with row i moved by 2u (homogeneity): its
  inertia is the certified inertia (m, 0, k² − m) of W*. The antisymmetric one has dimension k; the q = k − 1
  certified directions lie in it and the tangent of the split segment (w_i, −w_i) is in the kernel, so its
  inertia is (k − 1, 1, 0). Together: exactly (k − 1 + m) negative, 1 zero, k² − m positive.
zero (direction û ∈ Q^k): exactly F([W*; εû]) = F(W*) + ε g(û) + ε²‖û‖²/4 with g(û) = Σ_l κ(û, w_l) − Σ_j κ(û, e_j)
  (κ is homogeneous of degree 1 in each argument); the checker encloses g(û) and requires it < 0 and inside the
  stated interval: W* with a zero neuron added is not a local minimum.
Bounds, enforced before the work: k ≤ MAX_K, q ≤ 2k directions, entries of at most MAX_DIGITS digits.
Cost: O(n k q²) interval operations for a split (n = k + 1 rows, only the moved rows' pairs), O(k²) for zero.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.core import Report, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational
from certsym_check.kinds.landscape import (  # mpmath's interval arithmetic stays in one module: landscape's
    Jet,
    check_box,
    check_inertia,
    decimals,
    enclose,
    iv,
    kappa_jet,
    names,
    negative_count,
    working_precision,
)

MAX_K = 64
MAX_DIGITS = 400
MAX_WORK = 1_500_000  # (pairs touching a moved row) · k · q²: about 15 s of interval jets


def _matrix(sizes: list[int], X: list) -> list[list]:
    """W* as a k × k matrix of intervals from the box of its parameters."""
    idx = {n: i for i, n in enumerate(names(sizes))}
    sep = "" if len(sizes) < 10 else ","
    block = [a for a, p in enumerate(sizes) for _ in range(p)]
    k = len(block)
    W = []
    for r in range(k):
        row = []
        for c in range(k):
            a, b = block[r], block[c]
            name = (f"d{a + 1}" if r == c else f"o{a + 1}") if a == b else f"c{a + 1}{sep}{b + 1}"
            row.append(X[idx[name]])
        W.append(row)
    return W


def _number(value: object, where: str) -> Fraction:
    if isinstance(value, str) and len(value) > MAX_DIGITS:
        raise Reject(f"{where}: a numeral longer than {MAX_DIGITS} characters")
    return rational(value)


def check_added_neuron(F, nets: list, proof: object, rep: Report) -> None:
    """Replay an ``added_neuron`` proof (module docstring)."""
    split = isinstance(proof, dict) and "directions" in proof
    p = keys(proof, {"critical_point", "embedding", "statement"} | (
        {"directions", "negative"} | ({"base_inertia"} if "base_inertia" in proof else set()) if split else
        {"direction", "slope"}), "proof")
    sizes, X, _ = check_box(p["critical_point"], rep)
    k = sum(sizes)
    if k > MAX_K:
        raise Reject(f"added_neuron: k = {k} is over the limit {MAX_K}")
    embedding = p["embedding"]
    with working_precision():
        W = _matrix(sizes, X)
        if "directions" in p:
            if p["statement"] != "positive homogeneity and Courant-Fischer":
                raise Reject("a split proof must cite 'positive homogeneity and Courant-Fischer'")
            base = None
            if "base_inertia" in p:
                inertia = keys(p["base_inertia"], {"critical_point", "irreps", "probes", "negative", "statement"},
                               "proof.base_inertia")
                if inertia["critical_point"] != p["critical_point"]:
                    raise Reject("proof.base_inertia must be about the same critical point")
                check_inertia(inertia, rep)
                base = inertia["negative"]
            _check_split(W, keys(embedding, {"split", "lambda"}, "proof.embedding"), p, rep, base)
        else:
            if p["statement"] != "positive homogeneity" or not (
                    isinstance(embedding, dict) and list(embedding) == ["zero"] and embedding["zero"] is True):
                raise Reject("a zero-neuron proof must have embedding {\"zero\": true} and cite 'positive "
                             "homogeneity'")
            _check_zero(W, p, rep)


def _check_split(W: list[list], e: dict, p: dict, rep, base: int | None) -> None:
    k = len(W)
    i = e["split"]
    if type(i) is not int or not 0 <= i < k:
        raise Reject("proof.embedding.split must be a row index of W*")
    lam = _number(e["lambda"], "proof.embedding.lambda")
    if not 0 < lam < 1:
        raise Reject("proof.embedding.lambda must lie strictly between 0 and 1")
    q = p["negative"]
    if type(q) is not int or not 1 <= q <= 2 * k:
        raise Reject(f"proof.negative must be an integer from 1 to {2 * k}")
    dirs = [[[_number(v, "proof.directions") for v in seq(row, k, "proof.directions")]
             for row in seq(U, k + 1, "proof.directions")] for U in seq(p["directions"], q, "proof.directions")]
    L = enclose(lam)
    rows = [list(r) for r in W] + [[(1 - L) * v for v in W[i]]]
    rows[i] = [L * v for v in W[i]]
    moved = [any(U[r][c] for U in dirs for c in range(k)) for r in range(k + 1)]
    work = sum(moved) * (2 * k + 1) * k * q * q
    if work > MAX_WORK:
        raise Reject(f"the directions move {sum(moved)} rows: {work:,} jet operations, over the limit {MAX_WORK:,}")
    jets = []
    for r in range(k + 1):
        row = []
        for c in range(k):
            jet = Jet.const(rows[r][c], q)
            jet.g = [enclose(U[r][c]) for U in dirs]
            row.append(jet)
        jets.append(row)

    def dot(a: list, b: list) -> Jet:
        return sum((x * y for x, y in zip(a, b, strict=True)), Jet.const(0, q))

    norms = [dot(row, row) if moved[r] else None for r, row in enumerate(jets)]
    F = Jet.const(0, q)
    for r in range(k + 1):
        if not moved[r]:
            continue
        F = F + norms[r] * (iv.mpf(1) / 4)
        for c in range(k):  # teacher e_c: g = W_rc, N = ‖w_r‖²
            F = F - kappa_jet(jets[r][c], norms[r])
    for r in range(k + 1):
        for s in range(r + 1, k + 1):
            if not (moved[r] or moved[s]):
                continue
            g = dot(jets[r], jets[s])
            if (r, s) == (i, k):  # the two copies: parallel, κ = g/2 + O(θ³)
                F = F + g * (iv.mpf(1) / 2)
                continue
            nr = norms[r] if norms[r] is not None else dot(jets[r], jets[r])
            ns = norms[s] if norms[s] is not None else dot(jets[s], jets[s])
            F = F + kappa_jet(g, nr * ns)
    if any(not (g.a <= 0 <= g.b) for g in F.g):
        raise Reject("the gradient along a direction excludes 0: W_λ is not the critical point claimed")
    identity = [[enclose(Fraction(int(a == b))) for b in range(q)] for a in range(q)]
    if negative_count(F.h, identity) != q:
        raise Reject("the Hessian on the directions given is not certified negative definite")
    rep.facts.append(f"row {i} of W* split in the ratio {lam} : {1 - lam}: a critical point of F on "
                     f"M({k + 1}, {k}) (positive homogeneity) with at least {q} negative eigenvalues (Courant-Fischer "
                     f"on {q} directions): a saddle, not a local minimum")
    if base is not None:
        antisymmetric = lam == Fraction(1, 2) and q == k - 1 and all(
            U[r] == [Fraction(0)] * k for U in dirs for r in range(k) if r != i) and all(
            U[k] == [-v for v in U[i]] for U in dirs)
        if not antisymmetric:
            raise Reject("an exact inertia needs λ = 1/2 and k − 1 directions (y, −y) on the two copies only")
        rep.facts.append(f"its inertia, exactly: {k - 1 + base} negative, 1 zero, {k * k - base} positive "
                         f"eigenvalues of {(k + 1) * k} (swap-symmetric part: the certified inertia of W*; "
                         f"antisymmetric part: {k - 1} negative and the split segment's tangent)")
        rep.checks["the swap of the two copies: symmetric and antisymmetric blocks"] += 1
    rep.checks["positive homogeneity: the split point is critical"] += 1
    rep.checks["Courant-Fischer: the Hessian is negative definite on the directions"] += 1


def _check_zero(W: list[list], p: dict, rep) -> None:
    k = len(W)
    u = [_number(v, "proof.direction") for v in seq(p["direction"], k, "proof.direction")]
    if not any(u):
        raise Reject("proof.direction must be nonzero")
    U = [enclose(v) for v in u]
    uu = sum((x * x for x in U), iv.mpf(0))

    def kappa(v: list) -> iv.mpf:
        g = sum((x * y for x, y in zip(U, v, strict=True)), iv.mpf(0))
        N = uu * sum((y * y for y in v), iv.mpf(0))
        return kappa_jet(Jet.const(g, 0), Jet.const(N, 0)).v

    g = sum((kappa(w) for w in W), iv.mpf(0))
    for c in range(k):
        g = g - kappa([iv.mpf(int(c == j)) for j in range(k)])
    lo, hi = (_number(v, "proof.slope") for v in seq(p["slope"], 2, "proof.slope"))
    if not (hi < 0 and g.b < 0 and enclose(lo).b <= g.a and g.b <= enclose(hi).a):
        raise Reject("g(û) is not certified negative inside the stated negative interval")
    rep.facts.append(f"zero neuron added in the direction û: g(û) in [{decimals(lo, 6)}, {decimals(hi, 6)}] < 0, so "
                     f"F([W*; εû]) = F(W*) + ε g(û) + ε²|û|²/4 < F(W*) for small ε > 0: not a local minimum")
    rep.checks["positive homogeneity: the zero neuron's exact expansion"] += 1

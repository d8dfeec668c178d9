"""A float baseline for ε-equivalence: a plain differential zonotope (DeepZ) with input halvings, no certificate.

The question: given ReLU networks f and g of the same input dimension and a box B, is
sup_{x ∈ B} max_j |f_j(x) − g_j(x)| ≤ ε (UNSAT, verified) or is there an x with a gap above ε (SAT)?

The method. One zonotope x = c + G e, e ∈ [−1, 1]^m, over the box's input symbols, is pushed through both networks
on the SAME symbols, so that f(x) − g(x) keeps the correlation between the two. Affine layers are exact; a stable
ReLU is exact; an unstable one (l < 0 < u) gets the standard DeepZ transformer: slope λ = u / (u − l), offset
μ = −λ l / 2 and a fresh error symbol of magnitude μ. The fresh symbols of f and of g are distinct columns of the
generator matrix. At the output the difference of the two affine forms bounds the gap on the box:
U = max_j (|c_j| + Σ_s |G_js|). Branch and bound over input halvings: a box with U ≤ ε is closed, any other box is
halved along the input with the largest smear: the sum, over the unstable neurons of f and g, of the |coefficient|
of that input's symbol in the neuron's pre-activation (width times sensitivity, as an input symbol's coefficient is
already scaled by the half-width), until every box is closed (UNSAT) or time runs out (unknown). Alongside, a
float search for a counterexample: sign-gradient ascent from random starts at the beginning, and the centre and a
few random points of every box processed; a point with a gap above ε gives SAT.

Everything is binary64 with no outward rounding and no check of the counterexample in exact arithmetic: this is an
uncertified baseline only, to compare certsym against, and its verdicts are not proofs. Cost: per box processed,
O(L · n² · (m + L n)) flops for L hidden layers of width n (the generator matrix grows by the unstable neurons of
each layer); boxes are processed in batches of up to 64 with matrix operations per layer. The number of boxes is
exponential in the input dimension in the worst case.

    python benchmarks/zonotope_baseline.py SHARED_BENCHMARKS_DIR [--timeout 100] [--eps 0.05]

builds the seven instances of benchmarks/vnncomp_equivalence.py (ACAS Xu 1_1 against its perturbed copies, its
float16 rounding and its pruned copy, on property 1's box with equal inputs) and answers each with ``decide``.
"""

from __future__ import annotations

import argparse
import heapq
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from certsym.core.deep import float_layers
from certsym.io.sources import load

Layers = list[tuple[np.ndarray, np.ndarray]]
BATCH = 64


def layers_of(path: str | Path) -> Layers:
    """The network of an ONNX file as float64 (W, b) pairs: ReLU after every layer but the last."""
    return float_layers(load(str(path)).layered())


def _forward(layers: Layers, X: np.ndarray) -> np.ndarray:
    H = X
    for ell, (W, b) in enumerate(layers, 1):
        H = H @ W.T + b
        if ell < len(layers):
            H = np.maximum(H, 0.0)
    return H


def _gap(layers_f: Layers, layers_g: Layers, X: np.ndarray) -> np.ndarray:
    """f(X) − g(X), one row per point."""
    return _forward(layers_f, X) - _forward(layers_g, X)


def _gradient(layers: Layers, X: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The gradient of V_i · net(X_i) in X_i, one row per point (the ReLU pattern at X_i)."""
    masks, H = [], X
    for W, b in layers[:-1]:
        Z = H @ W.T + b
        masks.append(Z > 0)
        H = np.maximum(Z, 0.0)
    D = V @ layers[-1][0]
    for (W, _), mask in zip(reversed(layers[:-1]), reversed(masks), strict=True):
        D = (D * mask) @ W
    return D


def _zonotope(layers: Layers, c: np.ndarray, G: np.ndarray, smear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeepZ on a batch: centres c (B, m) and generators G (B, m, m) over the input symbols; returns the output
    centres (B, k) and generators (B, k, m + fresh), the first m columns the input symbols. Adds to ``smear``
    (B, m), per input, the sum of |coefficient| of that input symbol over the unstable neurons."""
    m = smear.shape[1]
    for ell, (W, b) in enumerate(layers, 1):
        c = c @ W.T + b
        G = np.matmul(W, G)
        if ell == len(layers):
            break
        rad = np.abs(G).sum(axis=2)
        lo, hi = c - rad, c + rad
        unstable = (lo < 0) & (hi > 0)
        smear += (np.abs(G[:, :, :m]) * unstable[:, :, None]).sum(axis=1)
        lam = np.where(hi <= 0, 0.0, 1.0)
        lam = np.where(unstable, hi / np.where(unstable, hi - lo, 1.0), lam)
        mu = np.where(unstable, -lam * lo / 2, 0.0)
        c = lam * c + mu
        G = G * lam[:, :, None]
        cols = np.flatnonzero(unstable.any(axis=0))
        if cols.size:
            fresh = np.zeros((G.shape[0], G.shape[1], cols.size))
            fresh[:, cols, np.arange(cols.size)] = mu[:, cols]
            G = np.concatenate([G, fresh], axis=2)
    return c, G


def _bounds(layers_f: Layers, layers_g: Layers, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a batch of boxes (B, m): U per box (B,) and the split scores per input (B, m)."""
    B, m = lo.shape
    c0 = (lo + hi) / 2
    G0 = np.zeros((B, m, m))
    G0[:, np.arange(m), np.arange(m)] = (hi - lo) / 2
    smear = np.zeros((B, m))
    cf, Gf = _zonotope(layers_f, c0, G0, smear)
    cg, Gg = _zonotope(layers_g, c0, G0, smear)
    per_output = (np.abs(cf - cg) + np.abs(Gf[:, :, :m] - Gg[:, :, :m]).sum(axis=2)
                  + np.abs(Gf[:, :, m:]).sum(axis=2) + np.abs(Gg[:, :, m:]).sum(axis=2))
    return per_output.max(axis=1), smear


def _ascent(layers_f: Layers, layers_g: Layers, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator,
            starts: int = 64, steps: int = 30) -> tuple[np.ndarray, float]:
    """Sign-gradient ascent of max_j |f_j − g_j| from random starts in [lo, hi]: the best point and its gap."""
    X = lo + (hi - lo) * rng.random((starts, lo.size))
    width = hi - lo
    best_x, best = X[0], -np.inf
    for t in range(steps + 1):
        D = _gap(layers_f, layers_g, X)
        gaps = np.abs(D).max(axis=1)
        i = int(gaps.argmax())
        if gaps[i] > best:
            best_x, best = X[i].copy(), float(gaps[i])
        if t == steps:
            break
        j = np.abs(D).argmax(axis=1)
        V = np.zeros_like(D)
        V[np.arange(len(X)), j] = np.sign(D[np.arange(len(X)), j])
        grad = _gradient(layers_f, X, V) - _gradient(layers_g, X, V)
        X = np.clip(X + 0.1 * (1 - t / steps) * width * np.sign(grad), lo, hi)
    return best_x, best


def decide(layers_f: Layers, layers_g: Layers, box: list[tuple[float, float]], eps: float, seconds: float,
           seed: int = 0) -> dict:
    """"unsat" when every box of the halving tree has U ≤ eps, "sat" when a float point has a gap > eps, else
    "unknown" after ``seconds``. Float and uncertified (module docstring)."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    lo0 = np.array([float(a) for a, _ in box])
    hi0 = np.array([float(b) for _, b in box])

    def result(verdict: str, boxes: int, upper: float, point: np.ndarray | None = None, gap: float | None = None):
        out = {"verdict": verdict, "seconds": time.perf_counter() - start, "boxes": boxes, "upper": upper}
        if point is not None:
            out["point"], out["gap"] = [float(v) for v in point], gap
        return out

    x, gap = _ascent(layers_f, layers_g, lo0, hi0, rng)
    if gap > eps:
        return result("sat", 0, float("nan"), x, gap)
    queue: list[tuple[float, int, np.ndarray, np.ndarray]] = [(-np.inf, 0, lo0, hi0)]
    tick, boxes, closed_max = 1, 0, -np.inf
    while queue:
        if time.perf_counter() - start > seconds:
            return result("unknown", boxes, max(-key for key, *_ in queue))
        batch = [heapq.heappop(queue) for _ in range(min(BATCH, len(queue)))]
        lo = np.array([item[2] for item in batch])
        hi = np.array([item[3] for item in batch])
        boxes += len(batch)
        points = np.concatenate([(lo + hi) / 2] + [lo + (hi - lo) * rng.random(lo.shape) for _ in range(3)])
        gaps = np.abs(_gap(layers_f, layers_g, points)).max(axis=1)
        i = int(gaps.argmax())
        if gaps[i] > eps:
            return result("sat", boxes, float("nan"), points[i], float(gaps[i]))
        upper, score = _bounds(layers_f, layers_g, lo, hi)
        for k in range(len(batch)):
            if upper[k] <= eps:
                closed_max = max(closed_max, float(upper[k]))
                continue
            d = int(score[k].argmax()) if score[k].max() > 0 else int((hi[k] - lo[k]).argmax())
            mid = (lo[k, d] + hi[k, d]) / 2
            left_hi, right_lo = hi[k].copy(), lo[k].copy()
            left_hi[d], right_lo[d] = mid, mid
            for a, b in ((lo[k], left_hi), (right_lo, hi[k])):
                heapq.heappush(queue, (-float(upper[k]), tick, a, b))
                tick += 1
    return result("unsat", boxes, closed_max)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import vnncomp_equivalence as vc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--timeout", type=float, default=100.0)
    parser.add_argument("--eps", type=float, default=0.05)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    src = args.dir / "ACASXU_run2a_1_1_batch_2000.onnx"
    names = vc._copies(src, folder, args.dir / "ACASXU_run2a_1_1_batch_2000_pruned5.onnx")
    box = [(float(a), float(b)) for a, b in vc.BOX]
    f = layers_of(src)
    print(f"{'copy of ACAS Xu 1_1':22} {'verdict':8} {'s':>7} {'boxes':>9} {'U':>10}")
    decided = 0
    for name in names:
        out = decide(f, layers_of(folder / f"{name}.onnx"), box, args.eps, args.timeout)
        decided += out["verdict"] in ("sat", "unsat")
        extra = f"  gap {out['gap']:.4g} at {[round(v, 6) for v in out['point']]}" if "point" in out else ""
        print(f"{name:22} {out['verdict']:8} {out['seconds']:>7.1f} {out['boxes']:>9} {out['upper']:>10.4g}{extra}",
              flush=True)
    print(f"decided: {decided} of {len(names)} (eps {args.eps:g}, timeout {args.timeout:g} s, float, uncertified)")


if __name__ == "__main__":
    main()

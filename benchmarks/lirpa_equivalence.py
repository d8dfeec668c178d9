"""The VNN-COMP-form ε-equivalence instances of ``vnncomp_equivalence.py`` answered by auto_LiRPA, the bound
propagation library of α,β-CROWN, on the difference network x ↦ f(x) − g(x): CROWN and α-CROWN on the whole box, and
CROWN over input halvings (the widest coordinate of the box, relative to the original, halved first) for at most
``--timeout`` seconds. UNSAT when every box's bound is at most ε; float and uncertified, for comparison only.

auto_LiRPA is not a dependency of certsym (its releases pin older torch versions); in an environment holding it,
torch and certsym (``pip install -e .``):

    python benchmarks/lirpa_equivalence.py SHARED_BENCHMARKS_DIR [--timeout 100]

Cost: per box, one CROWN pass (a backward pass per layer over all earlier layers); α-CROWN optimises the slopes by
gradient steps (20 here).
"""

from __future__ import annotations

import argparse
import heapq
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from auto_LiRPA import BoundedModule, BoundedTensor
from auto_LiRPA.perturbations import PerturbationLpNorm

from certsym.core.deep import float_layers
from certsym.io.sources import load

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)


def _module(path: Path) -> torch.nn.Sequential:
    mods: list[torch.nn.Module] = []
    layers = float_layers(load(str(path)).layered())
    for ell, (W, b) in enumerate(layers):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight[:] = torch.from_numpy(W)
            lin.bias[:] = torch.from_numpy(b)
        mods += [lin] + ([torch.nn.ReLU()] if ell < len(layers) - 1 else [])
    return torch.nn.Sequential(*mods)


class _Difference(torch.nn.Module):
    def __init__(self, f: torch.nn.Module, g: torch.nn.Module):
        super().__init__()
        self.f, self.g = f, g

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.f(x) - self.g(x)


def _bound(model: BoundedModule, lo: torch.Tensor, hi: torch.Tensor, method: str) -> np.ndarray:
    """max_j |f_j − g_j| over each box (a batch of boxes lo, hi), by ``method``."""
    x = (lo + hi) / 2
    ptb = PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi)
    lb, ub = model.compute_bounds(x=(BoundedTensor(x, ptb),), method=method)
    return torch.maximum(ub, -lb).max(dim=1).values.detach().numpy()


def decide(f: Path, g: Path, box: list[tuple[float, float]], eps: float, seconds: float) -> dict:
    """CROWN and α-CROWN on the whole box, then CROWN over halvings until every box is below ε or time runs out."""
    lo0 = torch.tensor([[a for a, _ in box]])
    hi0 = torch.tensor([[b for _, b in box]])
    model = BoundedModule(_Difference(_module(f), _module(g)), (lo0 + hi0) / 2)
    out: dict = {}
    for method in ("CROWN", "alpha-CROWN"):
        start = time.perf_counter()
        if method == "alpha-CROWN":
            model.set_bound_opts({"optimize_bound_args": {"iteration": 20}})
        out[method] = (float(_bound(model, lo0, hi0, method)[0]), time.perf_counter() - start)
    start, width = time.perf_counter(), (hi0 - lo0)[0]
    queue, tick, boxes = [(-np.inf, 0, lo0[0], hi0[0])], 1, 0
    while queue and time.perf_counter() - start < seconds:
        batch = [heapq.heappop(queue) for _ in range(min(64, len(queue)))]
        lo, hi = torch.stack([b[2] for b in batch]), torch.stack([b[3] for b in batch])
        boxes += len(batch)
        upper = _bound(model, lo, hi, "CROWN")
        for k, u in enumerate(upper):
            if u <= eps:
                continue
            d = int(torch.argmax((hi[k] - lo[k]) / width))
            mid = (lo[k, d] + hi[k, d]) / 2
            left, right = hi[k].clone(), lo[k].clone()
            left[d], right[d] = mid, mid
            for a, b in ((lo[k], left), (right, hi[k])):
                heapq.heappush(queue, (-float(u), tick, a, b))
                tick += 1
    out["halvings"] = ("unsat" if not queue else "unknown", time.perf_counter() - start, boxes,
                       max((-q[0] for q in queue), default=eps))
    return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import vnncomp_equivalence as vc

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--timeout", type=float, default=100.0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    src = args.dir / "ACASXU_run2a_1_1_batch_2000.onnx"
    names = vc._copies(src, folder, args.dir / "ACASXU_run2a_1_1_batch_2000_pruned5.onnx")
    box = [(float(a), float(b)) for a, b in vc.BOX]
    print(f"{'copy of ACAS Xu 1_1':22} {'CROWN U':>10} {'s':>5} {'α-CROWN U':>10} {'s':>5}  {'CROWN halvings':14} "
          f"{'s':>6} {'boxes':>7} {'U open':>9}")
    decided = 0
    for name in names:
        r = decide(src, folder / f"{name}.onnx", box, 0.05, args.timeout)
        verdict, seconds, boxes, open_u = r["halvings"]
        decided += verdict == "unsat"
        print(f"{name:22} {r['CROWN'][0]:>10.4g} {r['CROWN'][1]:>5.1f} {r['alpha-CROWN'][0]:>10.4g} "
              f"{r['alpha-CROWN'][1]:>5.1f}  {verdict:14} {seconds:>6.1f} {boxes:>7} {open_u:>9.4g}", flush=True)
    print(f"decided by CROWN over halvings: {decided} of {len(names)} (ε 0.05, {args.timeout:g} s each, float)")


if __name__ == "__main__":
    main()

"""Deep distance and top-1 on the development pairs: interval differences against symbolic differences, side by side
in one run (MATH.md Part IV).

For each pair, box and question the script runs ``certsym.decide.deep_distance`` (or ``deep_top1``) twice with the
same time budget, once with ``method="intervals"`` (the tree sized to the checker's work budget from its root's
replay, as ``certsym distance`` sizes it) and once with the default (symbolic differences where the interval rule
does not settle the question; such a tree sizes itself), writes each certificate, replays it with the independent
checker and prints U, L, the leaves, the search's and the replay's seconds, the verdict and whether the replay is
VALID, with the ratio of the two U. The files are read raw (ONNX weight first, VNN-LIB constant first); the 16-bit
copies are the float16 roundings of the original's weights.

    python benchmarks/deep_bounds.py DIR [--seconds 100]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from flint import fmpq

from certsym.certify import InputRecord, replay_share
from certsym.certify.deep import deep_distance_certificate, deep_top1_certificate
from certsym.decide.deadline import Deadline
from certsym.decide.deep_distance import deep_distance
from certsym.decide.deep_top1 import deep_top1
from certsym.io.onnxfile import read_onnx_chain
from certsym.io.sources import load
from certsym.io.vnnlib import input_boxes, read_vnnlib
from certsym_check import check

RECORDS = (InputRecord("f", "0" * 64), InputRecord("g", "1" * 64))


def _half(onnx: Path, out: Path) -> str:
    """The float16 copy of an ONNX network's layers, as an npz."""
    layers = read_onnx_chain(onnx).layers
    np.savez(out, **{f"{2 * i}.{kind}": a for i, (W, b) in enumerate(layers)
                     for kind, a in (("weight", np.ascontiguousarray(W).astype(np.float16)),
                                     ("bias", b.astype(np.float16)))})
    return str(out)


def _sized(nets: tuple, box: list, epsilon) -> int:
    """The regions an interval tree may have for its certificate to replay, as ``certsym distance`` sizes it: the
    root's replay share of the checker's work budget, 80% of the budget at that cost per leaf."""
    root = deep_distance(*nets, box, method="intervals")
    share = replay_share(deep_distance_certificate(root, RECORDS, nets, epsilon))
    return 2 * (1 if share is None else max(1, int(0.8 / max(share, 1e-9)))) - 1


def _replay(doc: dict) -> tuple[bool, float]:
    start = time.perf_counter()
    report = check(json.loads(json.dumps(doc)))
    return report.valid, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--seconds", type=float, default=100.0)
    args = parser.parse_args()
    d = args.dir
    tmp = Path(tempfile.mkdtemp())
    acas, acas_p = d / "ACASXU_run2a_1_1_batch_2000.onnx", d / "ACASXU_run2a_1_1_batch_2000_pruned5.onnx"
    mnist, mnist_p = d / "mnist_relu_3_100.onnx", d / "mnist_relu_3_100_pruned5.onnx"
    cases = [
        ("ACAS Xu 1_1 vs pruned5, prop 1, ε = 0.05", acas, acas_p, d / "prop_1.vnnlib", 5, fmpq(1, 20), False),
        ("ACAS Xu 1_1 vs float16, prop 1, ε = 0.05", acas, _half(acas, tmp / "acas16.npz"), d / "prop_1.vnnlib", 5,
         fmpq(1, 20), False),
        ("MNIST 3x100 vs float16, box #0, ε = 1", mnist, _half(mnist, tmp / "mnist16.npz"),
         d / "mnist_0_local_15.vnnlib", 784, fmpq(1), False),
        ("MNIST 3x100 vs pruned5, box #7, ε = 1", mnist, mnist_p, d / "mnist_7_local_15.vnnlib", 784, fmpq(1), False),
        ("MNIST 3x100 vs pruned5, box #0, top-1", mnist, mnist_p, d / "mnist_0_local_15.vnnlib", 784, None, True),
    ]
    print(f"{'pair, box, question':44} {'method':9} {'U':>10} {'L':>10} {'leaves':>6} {'search s':>8} "
          f"{'replay s':>8}  verdict")
    for name, a, b, spec, m, epsilon, top1 in cases:
        nets = (load(str(a)).layered(), load(str(b)).layered())
        box = input_boxes(read_vnnlib(spec), m).boxes[0]
        uppers = {}
        for method in ("intervals", "auto"):
            start = time.perf_counter()
            if top1:
                r = deep_top1(*nets, box, deadline=Deadline(args.seconds), method=method)
                seconds = time.perf_counter() - start
                valid, replay = _replay(deep_top1_certificate(r, RECORDS, nets)) if r.verdict != "unknown" else \
                    (None, 0.0)
                print(f"{name:44} {r.method if r.verdict == 'agree' else method:9} {'':>10} {'':>10} "
                      f"{r.leaves:>6} {seconds:>8.1f} {replay:>8.1f}  {r.verdict.upper()}"
                      f"{'' if valid is None else ', VALID' if valid else ', INVALID'}")
                continue
            regions = _sized(nets, box, epsilon) if method == "intervals" else None
            r = deep_distance(*nets, box, deadline=Deadline(args.seconds), epsilon=epsilon, method=method,
                              max_regions=regions)
            seconds = time.perf_counter() - start
            valid, replay = _replay(deep_distance_certificate(r, RECORDS, nets, epsilon))
            uppers[method] = r.upper
            print(f"{name:44} {r.method:9} {float(r.upper):>10.4g} {float(r.lower):>10.4g} {r.leaves:>6} "
                  f"{seconds:>8.1f} {replay:>8.1f}  {(r.verdict or '').upper()}, {'VALID' if valid else 'INVALID'}")
        if len(uppers) == 2 and uppers["auto"] > 0:
            print(f"{'':44} U(intervals) / U(symbolic) = {float(uppers['intervals'] / uppers['auto']):.3g}")


if __name__ == "__main__":
    main()

"""ε-equivalence instances in the form of VNN-COMP 2026's network-equivalence benchmarks, answered by `certsym vnnlib`
and by two float baselines, side by side in one run.

The instances: ACAS Xu network 1_1 (VeryDiff's file, read raw) against copies whose every weight and bias is
multiplied by 1 + σ·N(0, 1) (σ from 10^−4 to 3·10^−2, seeded), against its float16 rounding, and against VeryDiff's
pruned and retrained copy; one VNN-LIB 2.0 property, ACAS Xu property 1's input box with the two inputs made equal
and the counterexample "some |Y_g[j] − Y_f[j]| > 0.05"; a timeout per instance. certsym answers each through its
benchmark-folder mode (`certsym vnnlib --instances`, certificates replayed before they are written). The baselines
are the issue's plain float differential zonotope with input halvings (``zonotope_baseline.py``: DeepZ on both
networks over the shared input, halvings by smear, no certificate) and the symbolic-difference relaxation in binary64
with the same halvings and no certificate (``certsym.decide.symbolic`` run directly, without the checker's bounds on
the tree): UNSAT when the float U ≤ ε, SAT when a float search finds a point above ε (checked exactly for the second),
else unknown.

    python benchmarks/vnncomp_equivalence.py SHARED_BENCHMARKS_DIR [--timeout 100]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from flint import fmpq
from onnx import numpy_helper

from certsym.core.deep import float_forward, float_layers
from certsym.decide import symbolic
from certsym.decide.deadline import Deadline
from certsym.io.sources import load
from certsym.io.vnnlib import read_spec

BOX = [("0.6", "0.679857769"), ("-0.5", "0.5"), ("-0.5", "0.5"), ("0.45", "0.5"), ("-0.5", "-0.45")]
SIGMAS = (1e-4, 1e-3, 3e-3, 1e-2, 3e-2)


def _property(eps: str) -> str:
    s = ("(vnnlib-version <2.0>)\n(declare-network f (declare-input X_f real [5]) (declare-output Y_f real [5]))\n"
         "(declare-network g (isomorphic-to f) (declare-input X_g real [5]) (declare-output Y_g real [5]))\n")
    for i, (lo, hi) in enumerate(BOX):
        s += f"(assert (>= X_f[{i}] {lo}))\n(assert (<= X_f[{i}] {hi}))\n(assert (== X_f[{i}] X_g[{i}]))\n"
    return s + "(assert (or " + " ".join(f"(> Y_g[{j}] (+ Y_f[{j}] {eps})) (< Y_g[{j}] (- Y_f[{j}] {eps}))"
                                          for j in range(5)) + "))\n"


def _copies(src: Path, folder: Path, pruned: Path) -> list[str]:
    rng = np.random.default_rng(2026)
    names = []
    for sigma in SIGMAS:
        model = onnx.load(str(src))
        for init in model.graph.initializer:
            a = numpy_helper.to_array(init)
            init.CopyFrom(numpy_helper.from_array((a * (1 + sigma * rng.standard_normal(a.shape))).astype(a.dtype),
                                                  init.name))
        onnx.save(model, str(folder / f"perturbed_{sigma:g}.onnx"))
        names.append(f"perturbed_{sigma:g}")
    model = onnx.load(str(src))
    for init in model.graph.initializer:
        a = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(a.astype(np.float16).astype(a.dtype), init.name))
    onnx.save(model, str(folder / "float16.onnx"))
    shutil.copy(pruned, folder / "pruned5.onnx")
    return [*names, "float16", "pruned5"]


def _baseline(f: Path, g: Path, spec_text: str, eps: float, seconds: float) -> tuple[str, float]:
    """The float analysis (module docstring): its answer and seconds."""
    start = time.perf_counter()
    spec = read_spec(spec_text)
    nets = (load(str(f)).layered(), load(str(g)).layered())
    box = spec.boxes[0]
    rule = symbolic.Rule(*nets)
    layers = [float_layers(t) for t in nets]
    lo = np.array([float(a) for a, _ in box])
    hi = np.array([float(c) for _, c in box])
    X = lo + (hi - lo) * np.random.default_rng(0).random((20000, 5))
    gap = np.abs(float_forward(layers[0], X, False) - float_forward(layers[1], X, False)).max(axis=1)
    if gap.max() > eps:
        x = [fmpq(*float(v).as_integer_ratio()) for v in X[int(gap.argmax())]]
        if max(abs(a - b) for a, b in zip(nets[0](x), nets[1](x), strict=True)) > fmpq(*eps.as_integer_ratio()):
            return "sat", time.perf_counter() - start
    tree, upper, _, reason = symbolic.symbolic_tree(rule, box, lambda u: "done" if u <= eps else None, 10**7,
                                                    Deadline(max(0.0, seconds - (time.perf_counter() - start))))
    return ("unsat" if reason == "done" else "unknown"), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--timeout", type=float, default=100.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    (work / "onnx").mkdir()
    (work / "vnnlib").mkdir()
    src = args.dir / "ACASXU_run2a_1_1_batch_2000.onnx"
    shutil.copy(src, work / "onnx" / "original.onnx")
    names = _copies(src, work / "onnx", args.dir / "ACASXU_run2a_1_1_batch_2000_pruned5.onnx")
    text = _property("0.05")
    (work / "vnnlib" / "prop_1_eps_0.05.vnnlib").write_text(text)
    (work / "instances.csv").write_text("".join(
        f"\"[('f', 'onnx/original.onnx'), ('g', 'onnx/{n}.onnx')]\",vnnlib/prop_1_eps_0.05.vnnlib,{args.timeout:g}\n"
        for n in names))
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "certsym", "vnnlib", "--instances", str(work / "instances.csv"),
                          "--cert-dir", str(work / "certs")], capture_output=True, text=True)
    total = time.perf_counter() - start
    ours = [line.split("\t") for line in run.stdout.splitlines() if line[:1].isdigit() and "\t" in line]
    print(f"{'copy of ACAS Xu 1_1':22} {'certsym':9} {'s':>6}  {'float zonotope':15} {'s':>6} {'boxes':>6}  "
          f"{'float symbolic':15} {'s':>6}")
    solved = [0, 0, 0]
    sys.path.insert(0, str(Path(__file__).parent))
    import zonotope_baseline  # the baseline: a plain float differential zonotope with input halvings

    f = zonotope_baseline.layers_of(work / "onnx" / "original.onnx")
    box = [(float(a), float(b)) for a, b in BOX]
    for name, row in zip(names, ours, strict=True):
        zono = zonotope_baseline.decide(f, zonotope_baseline.layers_of(work / "onnx" / f"{name}.onnx"), box, 0.05,
                                        args.timeout)
        base, seconds = _baseline(work / "onnx" / "original.onnx", work / "onnx" / f"{name}.onnx", text, 0.05,
                                  args.timeout)
        solved[0] += row[1] in ("sat", "unsat")
        solved[1] += zono["verdict"] in ("sat", "unsat")
        solved[2] += base in ("sat", "unsat")
        print(f"{name:22} {row[1]:9} {row[2]:>6}  {zono['verdict']:15} {zono['seconds']:>5.1f}s {zono['boxes']:>6}  "
              f"{base:15} {seconds:>5.1f}s", flush=True)
    print(f"decided: certsym {solved[0]} of {len(names)} (with certificates replayed; {total:.0f} s in all), float "
          f"zonotope {solved[1]} of {len(names)}, float symbolic differences {solved[2]} of {len(names)}")


if __name__ == "__main__":
    main()

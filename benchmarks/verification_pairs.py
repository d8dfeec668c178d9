"""The verification world's development pairs through ``certsym distance --cert``: every printed verdict replays.

For each pair and question (ε-equivalence with ``--epsilon``, top-1 with ``--top1``) the script runs
``certsym distance A B --box BOX ... --seconds S --cert C`` as a whole process, then ``certsym check C``, and
prints the verdict, [L, U], the wall time against S (the goal: at most S + 5 s), whether a certificate was written
and whether the checker replays it VALID (the goal: every printed VERIFIED / VIOLATED / AGREE / DIFFER has a VALID
certificate; a certificate the checker would refuse is never written, and the verdict is then UNKNOWN).

The files are VeryDiff's development examples (``shared`` benchmark directory: ACAS Xu 1_1 and its pruned copy,
MNIST 3×100 and its pruned copy, the LHC 2_80 classifiers, property 1, two MNIST local boxes, sigma_0.1). Their
ONNX graphs compute ``MatMul(W, X)`` weight first (and the LHC ones end in a Softmax); certsym reads them raw now,
but the script writes the same layers to ``.npz`` with onnx's numpy helper so that the ε questions about the LHC
pair are about the logits (the Softmax dropped: it cannot change a top-1 answer), and a float16 copy of ACAS Xu
and MNIST as the quantized copies. The MNIST and ACAS boxes are read from the VNN-LIB files and written back with
the variable first (as they were before certsym's reader took the constant on either side).

    python benchmarks/verification_pairs.py DIR [--seconds 20] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _layers(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """The affine layers of a MatMul/Gemm + Add + Relu chain, weight first or input first, as (W out×in, b)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    Ws, bs = [], []
    for node in graph.node:
        if node.op_type == "MatMul":
            a, b = node.input
            Ws.append(inits[a] if a in inits else inits[b].T)
        elif node.op_type == "Gemm":
            transposed = any(a.name == "transB" and a.i == 1 for a in node.attribute)
            Ws.append(inits[node.input[1]] if transposed else inits[node.input[1]].T)
            bs.append(inits[node.input[2]])
        elif node.op_type == "Add":
            a, b = node.input
            bs.append(inits[b] if b in inits else inits[a])
    return [(W.astype(np.float32), b.astype(np.float32).reshape(-1)) for W, b in zip(Ws, bs, strict=True)]


def _npz(layers, path: Path, dtype=np.float32) -> str:
    np.savez(path, **{f"{2 * i}.{name}": x.astype(dtype) for i, (W, b) in enumerate(layers)
                      for name, x in (("weight", W), ("bias", b))})
    return str(path)


def _box(vnnlib: Path, out: Path) -> str:
    """The input box of a VNN-LIB 1.0 file whose asserts bound each X_i, either side first, rewritten X_i first."""
    lo, hi = {}, {}
    for op, a, b in re.findall(r"\(assert \((<=|>=) (\S+) (\S+)\)\)", vnnlib.read_text()):
        if a.startswith("X_"):
            (hi if op == "<=" else lo)[int(a[2:])] = b
        elif b.startswith("X_"):
            (lo if op == "<=" else hi)[int(b[2:])] = a
    lines = [f"(declare-const X_{i} Real)" for i in range(len(lo))]
    for i in range(len(lo)):
        lines += [f"(assert (>= X_{i} {lo[i]}))", f"(assert (<= X_{i} {hi[i]}))"]
    out.write_text("\n".join(lines) + "\n")
    return str(out)


def _run(cmd: list[str]) -> tuple[float, int, str, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode, done.stdout, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="the directory of the development pairs")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="certsym-pairs-"))
    d = args.dir
    acas, mnist = _layers(d / "ACASXU_run2a_1_1_batch_2000.onnx"), _layers(d / "mnist_relu_3_100.onnx")
    files = {"acas": _npz(acas, tmp / "acas.npz"),
             "acas pruned": _npz(_layers(d / "ACASXU_run2a_1_1_batch_2000_pruned5.onnx"), tmp / "acas_p.npz"),
             "acas float16": _npz(acas, tmp / "acas16.npz", np.float16),
             "mnist": _npz(mnist, tmp / "mnist.npz"),
             "mnist pruned": _npz(_layers(d / "mnist_relu_3_100_pruned5.onnx"), tmp / "mnist_p.npz"),
             "mnist float16": _npz(mnist, tmp / "mnist16.npz", np.float16),
             "lhc": _npz(_layers(d / "2_80-1.onnx"), tmp / "lhc.npz"),
             "lhc retrained": _npz(_layers(d / "2_80-1-0.1.onnx"), tmp / "lhc2.npz")}
    boxes = {"prop 1": _box(d / "prop_1.vnnlib", tmp / "prop1.vnnlib"),
             "mnist box 0": _box(d / "mnist_0_local_15.vnnlib", tmp / "m0.vnnlib"),
             "mnist box 7": _box(d / "mnist_7_local_15.vnnlib", tmp / "m7.vnnlib"),
             "sigma 0.1": _box(d / "sigma_0.1.vnnlib", tmp / "s.vnnlib")}
    cases = [(a, b, box, q) for a, b, box in (("acas", "acas pruned", "prop 1"), ("acas", "acas float16", "prop 1"),
                                              ("mnist", "mnist float16", "mnist box 0"),
                                              ("mnist", "mnist pruned", "mnist box 7"),
                                              ("mnist", "mnist pruned", "mnist box 0"),
                                              ("lhc", "lhc retrained", "sigma 0.1"))
             for q in (["--epsilon", "1" if a == "mnist" else "0.05"], ["--top1"])]
    print(f"| pair | box | question | verdict | L | U | wall (s) | over --seconds {args.seconds:g} (s) | certificate "
          "| replay |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    printed = replayed = 0
    for a, b, box, question in cases:
        name = f"{a} vs {b}, {box}, {' '.join(question)}"
        if args.only and args.only not in name:
            continue
        cert = tmp / "c.json"
        cert.unlink(missing_ok=True)
        wall, code, out, err = _run([sys.executable, "-m", "certsym", "distance", files[a], files[b],
                                     "--box", boxes[box], *question, "--seconds", str(args.seconds),
                                     "--cert", str(cert), "--json"])
        try:
            doc = json.loads(out)
        except ValueError:
            print(f"| {a} vs {b} | {box} | {' '.join(question)} | error (exit {code}): {err.strip()[:120]} |")
            continue
        verdict = doc.get("verdict") or doc.get("top1")
        lower, upper = doc.get("lower_float"), doc.get("upper_float")
        replay = "-"
        if cert.exists():
            printed += 1
            _, check_code, _, _ = _run([sys.executable, "-m", "certsym_check", "--quiet", str(cert)])
            replay = "VALID" if check_code == 0 else f"INVALID (exit {check_code})"
            replayed += check_code == 0
        written = "written" if cert.exists() else ("refused: " + doc["refused"][:60] if doc.get("refused") else "none")
        print(f"| {a} vs {b} | {box} | {' '.join(question)} | {verdict} (exit {code}) | "
              f"{'-' if lower is None else f'{lower:.4g}'} | {'-' if upper is None else f'{upper:.4g}'} | "
              f"{wall:.1f} | {wall - args.seconds:+.1f} | {written} | {replay} |", flush=True)
    print(f"\n{replayed} of {printed} certificates written replay VALID")


if __name__ == "__main__":
    main()

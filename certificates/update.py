"""Refresh the committed certificates: ``python certificates/update.py``.

Runs ``certsym reproduce`` (the representative run) into a temporary folder and copies a fixed, small selection of the
certificates it wrote (every MATH.md example, and three seeded instances per statement; no grid sweeps) into
certificates/<statement>/; and writes certificates/deep/ (MATH.md Part III: verdicts and distance bounds) from
the small networks below.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OTHERS = 3

# Part III pairs (layers as (W, b)): a network with every move D1-D4 applicable against its reduced form with the
# hidden layers permuted and rescaled; a difference only a neuron active beyond x = 50 sees; an output ReLU; and one
# weight of a middle layer moved by 1/8, whose distance on [−1, 1]^2 takes halvings of the box.
DEEP = {
    "moves_d1_to_d4": ([([[1, 0], [0, 0], [2, 0], [1, 1]], [0, 3, 0, 1]), ([[1, 1, 1, 0], [-1, 0, 0, -1]], [0, 0]),
                        ([[1, 2]], [0])],
                       [([[3, 0]], [0]), ([[1]], [3]), ([[1]], [0])], False),
    "last_layers_differ": ([([[1], [1]], [0, -50]), ([[1, 1], [1, 0]], [0, 0]), ([[1, 1]], [0])],
                           [([[1], [1]], [0, -50]), ([[1, 1], [1, 0]], [0, 0]), ([[1, 2]], [0])], False),
    "output_relu": ([([[1, -1], [2, 1]], [0, 1]), ([[1, 1], [-1, 2]], [1, 0]), ([[1, -1]], [0])],
                    [([[4, 2], [2, -2]], [2, 0]), ([[1, "-1/2"], ["1/2", "1/2"]], [0, 1]), ([[-1, 1]], [0])], True),
    "one_weight_moved": ([([[1, -1], [2, 1], [-1, 2]], [0, -1, 1]), ([[1, -1, 1], [2, 1, -1]], [0, 1]),
                          ([[1, -2]], [0])],
                         [([[1, -1], [2, 1], [-1, 2]], [0, -1, 1]), ([["9/8", -1, 1], [2, 1, -1]], [0, 1]),
                          ([[1, -2]], [0])], False),
}
BOXES = {"one_weight_moved": "-1,1"}  # the others: [−100, 100]^m


def deep_certificates() -> None:
    """certificates/deep/<name>.json: ``certsym equiv`` on the pairs above, written as layered parameter files, and
    <name>_distance.json: ``certsym distance`` on [−100, 100]^m (or BOXES[name], searched for 2 s)."""
    target = HERE / "deep"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        for name, (first, second, relu) in DEEP.items():
            paths = []
            for i, layers in enumerate((first, second), 1):
                doc = {"layers": [{"W": [[str(x) for x in row] for row in W], "b": [str(x) for x in b]}
                                  for W, b in layers], "output_relu": relu}
                paths.append(Path(tmp) / f"theta{i}.json")
                paths[-1].write_text(json.dumps(doc))
            names = [p.name for p in paths]  # relative: the certificates name theta1.json and theta2.json only
            done = subprocess.run([sys.executable, "-m", "certsym", "equiv", *names, "--cert",
                                   str(target.resolve() / f"{name}.json")], stdout=subprocess.DEVNULL, cwd=tmp)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name}: certsym equiv exited {done.returncode}")
            subprocess.run([sys.executable, "-m", "certsym", "distance", *names, f"--box={BOXES.get(name, '-100,100')}",
                            "--seconds", "2", "--cert", str(target.resolve() / f"{name}_distance.json")],
                           stdout=subprocess.DEVNULL, check=True, cwd=tmp)


# a VNN-LIB 2.0 property in the form of VNN-COMP 2026's equivalence benchmarks over one_weight_moved's pair:
# is there an x in [−1, 1]^2 where the outputs differ by more than EPS? (the pair's distance there is 1/4)
VNNLIB = ("(vnnlib-version <2.0>)\n"
          "(declare-network f (declare-input X_f Real [2]) (declare-output Y_f Real [1]))\n"
          "(declare-network g (isomorphic-to f) (declare-input X_g Real [2]) (declare-output Y_g Real [1]))\n"
          "(assert (>= X_f[0] -1.0))\n(assert (<= X_f[0] 1.0))\n(assert (>= X_f[1] -1.0))\n(assert (<= X_f[1] 1.0))\n"
          "(assert (== X_f[0] X_g[0]))\n(assert (== X_f[1] X_g[1]))\n"
          "(assert (or (> Y_g[0] (+ Y_f[0] EPS)) (< Y_g[0] (- Y_f[0] EPS))))\n")


def vnnlib_certificates() -> None:
    """certificates/vnnlib/: ``certsym vnnlib`` on one_weight_moved's pair with the property VNNLIB at ε = 0.3
    (unsat) and 0.2 (sat), the property and network files beside the certificates (check them with
    ``--inputs SPEC theta1.npz theta2.npz``)."""
    target = HERE / "vnnlib"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    first, second, _ = DEEP["one_weight_moved"]
    for i, layers in enumerate((first, second), 1):  # float32 holds every weight exactly (9/8 and integers)
        np.savez(target / f"theta{i}.npz", **{f"{2 * ell}.{kind}": np.array([float(Fraction(str(x))) for x in
                                                                               np.ravel(a)], dtype=np.float32
                                                                              ).reshape(np.shape(a))
                                              for ell, (W, b) in enumerate(layers) for kind, a in (("weight", W),
                                                                                                    ("bias", b))})
    for name, eps in (("band_0.3_unsat", "0.3"), ("band_0.2_sat", "0.2")):
        (target / f"{name}.vnnlib").write_text(VNNLIB.replace("EPS", eps))
        done = subprocess.run([sys.executable, "-m", "certsym", "vnnlib", f"{name}.vnnlib", "--net", "f=theta1.npz",
                               "--net", "g=theta2.npz", "--seconds", "20", "--cert", f"{name}.json"],
                              stdout=subprocess.DEVNULL, cwd=target)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{name}: certsym vnnlib exited {done.returncode}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "certsym", "reproduce", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        for folder in sorted((Path(tmp) / "certificates").iterdir()):
            target = HERE / folder.name
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            files = sorted(folder.glob("*.json"))
            examples = [p for p in files if p.name[0] in "ES" and p.name[1].isdigit()]  # MATH.md's E*, and S1
            others = [p for p in files if p not in examples and not p.name.startswith("grid_")]
            chosen = examples + others[:OTHERS]
            for path in chosen:
                shutil.copy(path, target / path.name)
    # reproduce writes hessian_inertia certificates (which embed the Krawczyk box); keep one bare critical_point too
    subprocess.run([sys.executable, "-m", "certsym", "landscape", "critical", "--family", "one-misfit", "--k", "6",
                    "--cert", str(HERE / "landscape" / "one-misfit_k6_critical_point.json")], check=True,
                   stdout=subprocess.DEVNULL)
    for name in ("one-misfit", "misfit-3"):  # the real threshold k* (landscape_threshold)
        subprocess.run([sys.executable, "-m", "certsym", "landscape", "threshold", "--family", name, "--cert",
                        str(HERE / "landscape" / f"{name}_real_k_threshold.json")], check=True,
                       stdout=subprocess.DEVNULL)
    deep_certificates()
    vnnlib_certificates()


if __name__ == "__main__":
    main()

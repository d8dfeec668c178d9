"""What the paper checks share: the papers' instances written as parameter files (exact entries such as "1/3" and
"sqrt(2)" are read exactly from files), certificates taken through the public API, and their replay by the
independent checker, asserted VALID and bound to the files they were made from."""

from __future__ import annotations

import json
from pathlib import Path

import certsym
import certsym.certify
from certsym.cli import main as certsym_main

# MATH.md's worked examples E1–E6 (Part I, "Small exact examples"), and S1 over Q(√2): each a pair of parameter files
# (M, A, b, c) that realize the same function.
EXAMPLES: dict[str, tuple[dict, dict]] = {
    "E1": ({"M": [[1, 2]], "A": [[1], [1]], "b": [0, -1], "c": [0]},  # H_2: the swap and D = diag(2, 1/2)
           {"M": [[1, 2]], "A": [[2], ["1/2"]], "b": [-2, 0], "c": [0]}),
    "E2": ({"M": [[1, 1]], "A": [[1], [1]], "b": [0, 0], "c": [0]},  # identical neurons: both 2σ(x)
           {"M": [[3, -1]], "A": [[1], [1]], "b": [0, 0], "c": [0]}),
    "E3a": ({"M": [[1, 0]], "A": [[1], [2]], "b": [0, 3], "c": [0]},  # a dead neuron's row is free
            {"M": [[1, 0]], "A": [[1], [-7]], "b": [0, "1/2"], "c": [0]}),
    "E3b": ({"M": [[1, 5]], "A": [[1], [0]], "b": [0, 2], "c": [0]},  # a constant neuron shifted into c
            {"M": [[1, 0]], "A": [[1], [0]], "b": [0, 0], "c": [10]}),
    "E4": ({"M": [[1, -1]], "A": [[1], [-1]], "b": [0, 0], "c": [0]},  # cancellation: both realize x
           {"M": [[1, -1]], "A": [[1], [-1]], "b": [-3, 3], "c": [3]}),
    "E5": ({"M": [[1, -1]], "A": [[1], [1]], "b": [0, -1], "c": [0]},  # the clamp, rows negated
           {"M": [[1, -1]], "A": [[-1], [-1]], "b": [0, 1], "c": [1]}),
    "E6": ({"M": [[1, 1, 1]], "A": [[1, 0], [0, 1], [-1, -1]], "b": [0, 0, 1], "c": [0]},  # m = 2, rows negated
           {"M": [[1, 1, 1]], "A": [[-1, 0], [0, -1], [1, 1]], "b": [0, 0, -1], "c": [1]}),
    "S1": ({"M": [["sqrt(2) - 1", 1]], "A": [["sqrt(2) + 1"], [1]], "b": [0, "-sqrt(2)"], "c": [0]},  # over Q(√2)
           {"M": [[1, 1]], "A": [[1], [1]], "b": [0, "-sqrt(2)"], "c": [0]}),
}

def write(directory: Path, name: str, doc: dict) -> str:
    """``doc`` (a parameter file: M, A, b, c) written to ``directory/name.json``; its path."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def replay(certificate: dict | str, *inputs: str):
    """The independent checker's report on ``certificate``, bound to the parameter files ``inputs``; asserted VALID."""
    report = certsym.check(certificate, list(inputs) or None)
    assert report.valid, f"the checker refuses the certificate: {report.reason}"
    return report


def _own(verdict) -> dict | None:
    """The verdict's own certificate, where the API gives one (``Equivalence.certificate()``)."""
    method = getattr(verdict, "certificate", None)
    return method() if callable(method) else None


def identifiability_certificate(path: str, verdict) -> dict:
    """The certificate of ``certsym.identifiable(path)``: the verdict's own, or ``certsym.certify``'s writer (the
    API's Identifiability has no ``.certificate()`` yet; ``certsym identifiable --cert`` uses the same writer)."""
    own = _own(verdict)
    return own if own is not None else certsym.certify.identifiability_certificate(verdict, certsym.load(path).record)


def affine_certificate(path: str, verdict) -> dict:
    """The certificate of ``certsym.affine(path)``, as ``identifiability_certificate`` (``certsym affine --cert``)."""
    own = _own(verdict)
    return own if own is not None else certsym.certify.affine_certificate(verdict, certsym.load(path).record)


def stabilizer_certificate(path: str, of_theta, of_rows) -> dict:
    """The certificate of ``certsym.stabilizer(path)`` and ``certsym.stabilizer(path, of_rows=True)`` together, the
    pair ``certsym stabilizer --cert`` certifies."""
    model = certsym.load(path)
    return certsym.certify.stabilizer_certificate(model.network, (of_theta, of_rows), model.record)


def command(capsys, *argv: str) -> tuple[int, str]:
    """``certsym ARGV`` run in this process (the console script's entry point): its exit code and standard output."""
    capsys.readouterr()
    code = certsym_main(list(argv))
    return code, capsys.readouterr().out


def landscape(capsys, directory: Path, *args: str, cert: str | None = None, inertia_cert: str | None = None):
    """``certsym landscape ARGS --json`` (the second paper's only public surface is the command line): its exit
    code, its JSON answer, and the paths of the certificates it wrote (``--cert`` / ``--inertia-cert``)."""
    argv = ["landscape", *args, "--json"]
    files = {}
    for option, name in (("--cert", cert), ("--inertia-cert", inertia_cert)):
        if name is not None:
            files[option] = str(directory / name)
            argv += [option, files[option]]
    code, out = command(capsys, *argv)
    return code, json.loads(out), files

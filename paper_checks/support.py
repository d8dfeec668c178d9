"""What the paper checks share: the papers' instances written as parameter files (exact entries such as "1/3" and
"sqrt(2)" are read exactly from files), certificates taken through the public API, and their replay by the
independent checker, asserted VALID and bound to the files they were made from."""

from __future__ import annotations

import json
from pathlib import Path

import certsym
import certsym.certify
from certsym.cli import main as certsym_main


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


def landscape(capsys, directory: Path, *args: str, cert: str | None = None, inertia_cert: str | None = None):
    """``certsym landscape ARGS --json`` (the second paper's only public surface is the command line), run in this
    process: its exit code, its JSON answer, and the certificates it wrote (``--cert`` / ``--inertia-cert``)."""
    argv = ["landscape", *args, "--json"]
    files = {}
    for option, name in (("--cert", cert), ("--inertia-cert", inertia_cert)):
        if name is not None:
            files[option] = str(directory / name)
            argv += [option, files[option]]
    capsys.readouterr()
    code = certsym_main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out), files

"""Command line of the checker. Exit codes: 0 all valid, 1 some invalid, 2 some could not be checked (unreadable,
an input not given or not readable) or usage. Each certificate is replayed on its own: a failure in one never
stops the others."""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys

from certsym_check.envelope import CLAIMS, check_certificate
from certsym_check.errors import CannotCheck, Reject
from certsym_check.inputs import InputFile, model_directory_file, read_regular, unique_object
from certsym_check.kinds import SPEC_KINDS


def _read(path: str) -> bytes:
    """A file given with --inputs, read whole: a regular file (opening a pipe would wait for a writer for ever;
    a device has no end). Reject otherwise."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise Reject(f"{path[:80]}: not a regular file")
    with open(path, "rb") as fh:
        return fh.read()


def _input(path: str) -> InputFile:
    """A file given with --inputs; a model directory is its weights file (docs/FORMATS.md)."""
    if os.path.isdir(path):
        path = model_directory_file(path)
    return InputFile(_read(path), path)


MAX_NAMED_INPUT = 4 << 30  # bytes of one file a certificate may name (--named-inputs): its name is not the user's


def _read_named(name: object) -> InputFile:
    """The input file a certificate names (``--named-inputs``): a regular file of at most MAX_NAMED_INPUT bytes,
    checked before it is opened (a name may lead to a pipe or a device) and read to its size. CannotCheck or
    Reject (both printed as CANNOT CHECK) when it is not such a file."""
    if not isinstance(name, str) or not name:
        raise CannotCheck("an input names no file")
    if os.path.isdir(name):
        name = model_directory_file(name)
    return InputFile(read_regular(name, MAX_NAMED_INPUT, f"the input {name[:80]!r} named in the certificate"), name)


def _named_inputs(doc: object) -> list[InputFile] | None:
    """The files named by a certificate's inputs (after the property named in proof.spec, for a certificate about
    a VNN-LIB property), or None when it has no list of named inputs (the replay then rejects it with the reason)."""
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    if not isinstance(inputs, list) or not all(isinstance(r, dict) for r in inputs):
        return None
    names = [r.get("name") for r in inputs]
    if doc.get("kind") in SPEC_KINDS:
        proof = doc.get("proof")
        spec = proof.get("spec") if isinstance(proof, dict) else None
        names.insert(0, spec.get("name") if isinstance(spec, dict) else None)
    return [_read_named(name) for name in names]


def _printable(text: str) -> str:
    """The text with every character that is not printable (newlines, controls, lone surrogates) escaped, so that a
    name or reason from a certificate can neither forge report lines nor stop the output."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _document(path: str) -> object:
    """The certificate's JSON; a repeated key is refused (the last value would win silently)."""
    return json.loads(_read(path).decode("utf-8"), object_pairs_hook=unique_object)


def main(argv: list[str] | None = None) -> int:
    """Replay each certificate; 0 when all are valid, 1 when one is not, 2 when one cannot be checked."""
    ap = argparse.ArgumentParser(prog="certsym check", description="Replay certsym certificates exactly, with the "
                                 "independent checker (standard library only; mpmath for landscape certificates).")
    ap.add_argument("certificates", nargs="+", metavar="CERT", help="a certificate, or a directory of them (*.json)")
    ap.add_argument("--inputs", nargs="+", metavar="P", help="the input files (regular files), bound by SHA-256 and "
                                                         "entries (required when the certificate references them)")
    ap.add_argument("--named-inputs", action="store_true", help="bind each certificate to the files its inputs "
                    "name (paths as recorded, relative to the current directory), by SHA-256 and entries as with "
                    "--inputs: an audit's certificates are re-checked in one command")
    ap.add_argument("--quiet", action="store_true", help="print one line per certificate")
    ap.add_argument("--require-files", action="store_true", help="exit 2 for a certificate found VALID about its "
                    "embedded parameters only (no file bound): an auditor's script can demand that files were checked")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if args.inputs and args.named_inputs:
        print("certsym check: error: --inputs and --named-inputs exclude each other", file=sys.stderr)
        return 2
    try:
        files = [_input(p) for p in args.inputs] if args.inputs else None
    except OSError as exc:
        print(f"certsym check: error: cannot read input file: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    except Reject as exc:
        print(_printable(f"certsym check: error: {exc}"), file=sys.stderr)
        return 2
    status = 0
    certificates = []
    for path in args.certificates:  # a directory stands for its certificates (an audit's --cert-dir)
        found = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".json")) \
            if os.path.isdir(path) else [path]
        if not found:
            print(_printable(f"certsym check: error: {path}: a directory without certificates (*.json)"),
                  file=sys.stderr)
            status = 2
        certificates += found
    for path in certificates:
        try:
            doc = _document(path)
        except Reject as exc:  # well-formed JSON with two meanings
            print(_printable(f"{path}: INVALID (?): {exc}"))
            status = max(status, 1)
            continue
        except (OSError, ValueError, RecursionError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not a JSON document"
            print(_printable(f"certsym check: error: {path}: {reason}"), file=sys.stderr)
            status = 2
            continue
        given = files
        if args.named_inputs:
            try:
                given = _named_inputs(doc)
            except (CannotCheck, Reject) as exc:
                print(_printable(f"{path}: CANNOT CHECK: {exc}"))
                status = 2
                continue
        rep = check_certificate(doc, given)
        if rep.usage:
            print(_printable(f"certsym check: error: {path}: {rep.reason}"), file=sys.stderr)
            status = 2
            continue
        if rep.valid and rep.unbound and args.require_files:
            print(_printable(f"{path}: VALID {rep.kind} about the embedded parameters only, but --require-files asks "
                             "for files bound to it (give --inputs or --named-inputs)"))
            status = 2
            continue
        if rep.valid:
            about = " about the embedded parameters (no file bound)" if rep.unbound else ""
            lines = [f"{path}: VALID {rep.kind}{about}: {CLAIMS[rep.kind]}"]
            if not args.quiet:
                lines += [f"  given file {i}: {f.path}" for i, f in enumerate(files or [])]
                lines += [f"  given file {i}: {f.path} (named in the certificate)" for i, f in
                          enumerate(given if args.named_inputs and given else [])]
                lines += [f"  {line}" for line in rep.bound + rep.facts]
                lines += [f"  verified {count} x {statement}" for statement, count in rep.checks.items()]
                lines += [f"  {note}" for note in rep.notes]
                lines.append(f"  work: {rep.work:,} of the {rep.allowed:,} units of exact arithmetic this certificate "
                             "may use")
        elif rep.cannot_check:
            lines = [f"{path}: CANNOT CHECK ({rep.kind}): {rep.reason}"]
            status = 2
        else:
            lines = [f"{path}: INVALID ({rep.kind}): {rep.reason}"]
            status = max(status, 1)
        for line in lines:
            print(_printable(line))
    return status


def run() -> None:  # pragma: no cover - the console script
    """Entry point of the ``certsym-check`` console script and of ``python -m certsym_check``."""
    try:
        code = main()
    except BrokenPipeError:  # the reader of our output went away (certsym-check ... | head)
        code = 0
    sys.exit(code)

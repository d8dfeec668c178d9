"""Command line of the checker. Exit codes: 0 all valid, 1 some invalid, 2 some could not be checked (unreadable,
an input not given or not readable) or usage. Each certificate is replayed on its own: a failure in one never
stops the others."""

from __future__ import annotations

import argparse
import json
import sys

from certsym_check.budget import WORK_BUDGET
from certsym_check.envelope import CLAIMS, check_certificate
from certsym_check.errors import Reject
from certsym_check.readers.files import InputFile, unique_object


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


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
    ap.add_argument("certificates", nargs="+", metavar="CERT")
    ap.add_argument("--inputs", nargs="+", metavar="P", help="the input files, bound by SHA-256 and entries "
                                                         "(required when the certificate references them)")
    ap.add_argument("--quiet", action="store_true", help="print one line per certificate")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        files = [InputFile(_read(p), p) for p in args.inputs] if args.inputs else None
    except OSError as exc:
        print(f"certsym check: error: cannot read input file: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    status = 0
    for path in args.certificates:
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
        rep = check_certificate(doc, files)
        if rep.usage:
            print(_printable(f"certsym check: error: {path}: {rep.reason}"), file=sys.stderr)
            status = 2
            continue
        if rep.valid:
            lines = [f"{path}: VALID {rep.kind}: {CLAIMS[rep.kind]}"]
            if not args.quiet:
                lines += [f"  given file {i}: {name}" for i, name in enumerate(args.inputs or [])]
                lines += [f"  {line}" for line in rep.bound + rep.facts]
                lines += [f"  verified {count} x {statement}" for statement, count in rep.checks.items()]
                lines += [f"  {note}" for note in rep.notes]
                lines.append(f"  work: {rep.work:,} of the {WORK_BUDGET:,} units of exact arithmetic a certificate may "
                             "use")
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

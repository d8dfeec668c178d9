"""The independent checker of certsym certificates (its own distribution, ``certsym-check``).

It uses the Python standard library only (plus mpmath's interval arithmetic for the landscape kinds) and
imports nothing of the producer, ``certsym`` (an import contract and a test enforce this), so that nobody has
to trust the code that found an answer, and an auditor can install and read it alone. Run it as
``certsym-check CERT... [--inputs P1 [P2]]``, ``python -m certsym_check`` or ``certsym check``, or call
``certsym_check.check(certificate_or_path, inputs=None)`` (also ``certsym.check``): a Report, truthy iff VALID.
"""
from __future__ import annotations

import json

from certsym_check.core import Report
from certsym_check.envelope import check_certificate
from certsym_check.errors import Reject
from certsym_check.inputs import InputFile, unique_object

__all__ = ["Report", "check", "check_certificate", "main"]


def main(argv: list[str] | None = None) -> int:
    """The command line (``certsym_check.main.main``, imported when it runs): the exit code."""
    from certsym_check.main import main as command

    return command(argv)


def check(certificate: object, inputs: list | None = None) -> Report:
    """Replay a certificate (a dict, or the path of its JSON file), bound to the ``inputs`` files when given.
    A certificate or input file that cannot be read gives a Report that is not valid, with the reason (never an
    exception). Cost: the replay's."""
    if not isinstance(certificate, dict):
        try:
            with open(certificate, "rb") as fh:
                certificate = json.loads(fh.read().decode("utf-8"), object_pairs_hook=unique_object)
        except (OSError, ValueError, RecursionError, Reject) as exc:
            return Report(reason=f"cannot read the certificate: {exc}")
    files = []
    for path in inputs or ():
        try:
            with open(path, "rb") as fh:
                files.append(InputFile(fh.read(), str(path)))
        except (OSError, TypeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            return Report(reason=f"cannot read the input file {str(path)[:200]!r}: {reason}", cannot_check=True)
    return check_certificate(certificate, files if inputs else None)

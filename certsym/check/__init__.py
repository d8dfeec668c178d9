"""The independent checker of certsym certificates.

It uses the Python standard library only (plus mpmath's interval arithmetic in ``landscape``) and
imports nothing from the rest of certsym (a test enforces this), so that nobody has to trust the code
that found an answer. Run it as
``python -m certsym.check CERT... [--inputs P1 [P2]]`` or ``certsym check``.
"""

from certsym.check.checker import Report, check_certificate
from certsym.check.main import main

__all__ = ["Report", "check_certificate", "main"]

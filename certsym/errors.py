"""The two exceptions a decision may end in besides its verdict: ``InputError``, the input is wrong (exit code 2),
and ``Undecided``, a search that would exceed its stated limit (exit code 3, as every UNKNOWN and UNDECIDED)."""


class InputError(ValueError):
    """Bad input: malformed file, wrong shape, unparsable or unsupported number.

    The message is a single line meant for the user; the CLI prints it after ``certsym: error:``.
    """


class Undecided(Exception):
    """certsym declines to decide: the search would exceed its limit, whose cost the message states. Not bad input:
    the same input decides within a larger limit (``--max-search``), so the CLI answers UNDECIDED with exit code 3."""


class NotReplayed(Undecided):
    """A certificate the independent checker refuses (``reason``, its words): no verdict is given on it, so the answer
    is UNKNOWN (exit code 3), and the certificate is not written."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the certificate does not replay within the checker's bounds ({reason})")
        self.reason = reason


class CertsymWarning(UserWarning):
    """Something the answer may not be about: tensors a file holds that the chosen network does not read. The CLI
    prints it as one line, ``certsym: warning: …``."""

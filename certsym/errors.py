"""The one exception type that means "the input is wrong" (the CLI turns it into exit code 2)."""


class InputError(ValueError):
    """Bad input: malformed file, wrong shape, unparsable or unsupported number.

    The message is a single line meant for the user; the CLI prints it after ``certsym: error:``.
    """

"""``python -m certsym_check``: the checker's command line."""

from certsym_check.main import run

run()

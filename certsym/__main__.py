from certsym.cli import run

run()

"""docs/WALKTHROUGH.md runs: its Python blocks are executed in order, as one session, in a fresh directory."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import TESTS

WALKTHROUGH = TESTS.parent / "docs" / "WALKTHROUGH.md"


def test_the_walkthrough_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", WALKTHROUGH.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 6
    monkeypatch.chdir(tmp_path)
    session: dict = {"__name__": "walkthrough"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"WALKTHROUGH.md block {number}", "exec"), session)  # noqa: S102 - the docs' own code
    out = capsys.readouterr().out
    assert "EQUIVALENT" in out and "Network(m=3, n=8, k=2, field=QQ)" in out

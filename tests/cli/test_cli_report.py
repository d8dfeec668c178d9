"""``certsym report``: one HTML page about two networks, its certificates replayed, and its refusals."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import torch

from certsym.cli import main
from certsym_check import check


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save(net.state_dict(), a)
    torch.save({k: v.half() for k, v in net.state_dict().items()}, b)
    return a, b


def test_the_page_holds_the_verdicts_figure_files_and_replayed_certificates(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    page = tmp_path / "report.html"
    code, out, _ = _run("report", str(a), str(b), "-o", str(page), "--regions", "30", "--epsilon", "0.01")
    assert code == 0 and out.startswith(f"wrote {page} (3 certificates")
    text = page.read_text()
    for words in ("certsym 0.1.0, written", "NOT EQUIVALENT", "Distance against ε = 0.01", "VERIFIED",
                  "Same top-1 class everywhere?", "report.png", "a.pt", "b.pt", "read as a ReLU network",
                  "report_certificates/distance.json"):
        assert words in text, words
    assert text.index("NOT EQUIVALENT") < text.index("report.png") < text.index("<h2>Certificates</h2>")
    assert (tmp_path / "report.png").stat().st_size > 5000
    folder = tmp_path / "report_certificates"
    docs = sorted(folder.glob("*.json"))
    assert [p.name for p in docs] == ["distance.json", "equivalence.json", "top1.json"]
    assert all(check(json.loads(p.read_text()), [a, b]) for p in docs)
    assert _run("check", str(folder), "--inputs", str(a), str(b))[0] == 0


def test_a_page_on_a_ball_and_the_refusals(tmp_path: Path) -> None:
    a, b = _pair(tmp_path)
    code, out, _ = _run("report", str(a), str(b), "-o", str(tmp_path / "ball.html"), "--center", "0.5,0.5,0.5,0.5,0.5",
                        "--radius", "0.01", "--regions", "20")
    assert code == 0 and "the L∞ ball of radius 0.01 around 0.5,0.5,0.5,0.5,0.5" in out
    for argv, words in ((["-o", str(tmp_path / "r.txt")], "an HTML page"),
                        (["-o", str(tmp_path / "none" / "r.html")], "no such folder"),
                        (["--box", "0,1", "--center", "1,1,1,1,1", "--radius", "1"], "give one of them")):
        code, _, err = _run("report", str(a), str(b), *argv)
        assert code == 2 and words in err and err.count("\n") == 1, err

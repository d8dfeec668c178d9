"""certsym audit: grouping networks by realized function, locally and on a Dask LocalCluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from certsym.cli import main
from paper_checks.examples import EXAMPLES


def _files(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("E1", "E4", "E5"):
        for i, d in enumerate(EXAMPLES[name]):
            p = tmp_path / f"{name}_{i}.json"
            p.write_text(json.dumps(d))
            paths.append(str(p))
    other = tmp_path / "x.json"
    other.write_text(json.dumps({"M": [[1]], "A": [[1]], "b": [5], "c": [0]}))
    return paths + [str(other)]


def _run(args: list[str], capsys) -> dict:
    assert main(["audit", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_audit_groups_and_certifies(tmp_path: Path, capsys, workers: str) -> None:
    paths = _files(tmp_path)
    out = _run([*paths, "--workers", workers, "--cert-dir", str(tmp_path / "certs")], capsys)
    groups = sorted(sorted(Path(p).stem for p in c["members"]) for c in out["classes"])
    assert groups == [["E1_0", "E1_1"], ["E4_0", "E4_1"], ["E5_0", "E5_1"], ["x"]]
    certs = sorted((tmp_path / "certs").glob("*.json"))
    assert len(certs) == 3 and set(out["certificates"].values()) == {str(c) for c in certs}
    assert main(["check", "--quiet", *map(str, certs)]) == 0


def test_audit_reports_unreadable_files(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["audit", str(bad), *(_files(tmp_path)[:2]), "--workers", "1"]) == 2
    assert "unreadable" in capsys.readouterr().out


def test_audit_on_a_dask_local_cluster(tmp_path: Path, capsys) -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        out = _run([*_files(tmp_path), "--dask", cluster.scheduler_address, "--cert-dir", str(tmp_path / "c")], capsys)
    assert len(out["classes"]) == 4 and len(out["certificates"]) == 3

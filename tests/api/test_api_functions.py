"""The notebook surface of certsym: the public names, canon / fibre / affine as functions, short reprs, and
errors phrased as Python keyword arguments (the command line keeps its options)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym.reproduce.examples import EXAMPLES


def _files(tmp_path: Path, name: str) -> list[str]:
    out = []
    for i, doc in enumerate(EXAMPLES[name]):
        path = tmp_path / f"{name}_{i}.json"
        path.write_text(json.dumps(doc))
        out.append(str(path))
    return out


def test_dir_lists_every_public_function_and_each_one_resolves() -> None:
    names = set(dir(certsym))
    assert {"affine", "canon", "check", "distance", "equivalent", "fibre", "identifiable", "load", "minimal",
            "stabilizer", "__version__"} <= names
    assert all(callable(getattr(certsym, n)) for n in names if n != "__version__")


def test_canon_is_equal_exactly_for_equal_functions(tmp_path: Path) -> None:
    a, b = _files(tmp_path, "E1")  # MATH.md E1: σ(x) + 2σ(x − 1), written two ways
    c, d = _files(tmp_path, "E2")  # E2: 2σ(x), written two ways
    assert certsym.canon(a).hash == certsym.canon(b).hash and certsym.canon(c).hash == certsym.canon(d).hash
    assert certsym.canon(a).hash != certsym.canon(c).hash
    assert repr(certsym.canon(a)).startswith("Canonical(m=1, k=1, kinks=") and "/" not in repr(certsym.canon(a))


def test_affine_and_fibre_as_functions(tmp_path: Path) -> None:
    e4 = _files(tmp_path, "E4")[0]  # σ(x) − σ(−x) = x: affine
    v = certsym.affine(e4)
    assert v.affine and [list(r) for r in v.linear] == [[1]] and list(v.constant) == [0]
    assert repr(v) == "AffineVerdict(affine=True, pairs=1)"
    e1 = _files(tmp_path, "E1")[0]
    assert not certsym.affine(e1).affine and certsym.affine(e1).points is not None
    f = certsym.fibre(e1)
    assert f.minimal and f.complete
    with pytest.raises(InputError, match="cap must be at least 1"):
        certsym.fibre(e1, cap=0)


def test_reprs_are_short(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((50, 30)).astype(np.float32), rng.standard_normal(50).astype(np.float32),
              rng.standard_normal((4, 50)).astype(np.float32), rng.standard_normal(4).astype(np.float32)]
    model = certsym.load(arrays)
    assert repr(model.network) == "Network(m=30, n=50, k=4, field=QQ)"
    assert repr(model.layered()) == "LayeredNetwork(widths=30-50-4, field=QQ)"
    assert len(repr(certsym.minimal(arrays))) < 80


def test_errors_name_keyword_arguments_in_python_and_options_on_the_command_line(tmp_path: Path, capfd) -> None:
    path = tmp_path / "odd.npz"
    np.savez(path, x=np.zeros((2, 2), np.float32))
    with pytest.raises(InputError) as info:
        certsym.load(str(path))
    assert "keys='W1,b1,W2,b2'" in str(info.value) and "--keys" not in str(info.value)
    with pytest.raises(InputError, match="keys="):
        certsym.equivalent(str(path), str(path))
    assert main(["equiv", str(path), str(path)]) == 2
    assert "--keys W1,b1,W2,b2" in capfd.readouterr().err


def test_equivalent_says_what_the_reductions_removed_and_merged(tmp_path: Path) -> None:
    """θ2 is θ1 with one unit split into two proportional halves and one dead unit (v = 0) added."""
    rng = np.random.default_rng(3)
    W1, b1 = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    W2, b2 = rng.standard_normal((1, 3)).astype(np.float32), rng.standard_normal(1).astype(np.float32)
    A = np.vstack([W1, 2 * W1[:1], np.ones((1, 2), np.float32)])
    b = np.append(b1, [2 * b1[0], 1]).astype(np.float32)
    V = np.hstack([W2 * np.float32([0.5, 1, 1]), W2[:, :1] / 4, np.zeros((1, 1), np.float32)])
    v = certsym.equivalent([W1, b1, W2, b2], [A, b, V, b2])
    assert v and v.moves() == ({"zero": 0, "bias_shift": 0, "merge": 0}, {"zero": 1, "bias_shift": 0, "merge": 1})
    text = str(v)
    assert "θ2: 1 dead neuron removed, 1 neuron merged into a proportional one before the matching" in text
    assert "θ1:" not in text and v.to_json()["moves"][1] == {"zero": 1, "bias_shift": 0, "merge": 1}


def test_verdicts_and_reports_render_in_a_notebook(tmp_path: Path) -> None:
    a, b = _files(tmp_path, "E1")
    v = certsym.equivalent(a, b)
    assert v._repr_html_().startswith("<pre>EQUIVALENT") and "&lt;" not in str(v)
    report = certsym.check(v.certificate())
    assert str(report).startswith("VALID equivalent") and report._repr_html_().startswith("<pre>VALID")
    bad = v.certificate()
    bad["kind"] = "nonsense"
    assert str(certsym.check(bad)).startswith("INVALID (?): unknown kind")

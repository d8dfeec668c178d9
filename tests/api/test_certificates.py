"""The questions an ML engineer asks most, certified from Python: ``certsym.distance(...).certificate()`` and
``certsym.top1(...).certificate()`` at every depth give a certificate the checker replays VALID (bound to the
model files when it references them); an UNKNOWN top-1 answer has none."""

from __future__ import annotations

import numpy as np
import pytest

import certsym
from certsym.errors import InputError
from certsym_check import check


def _files(tmp_path, widths: list[int]) -> tuple[str, str]:
    rng = np.random.default_rng(1)
    arrays = []
    for a, b in zip(widths, widths[1:], strict=False):
        arrays += [rng.standard_normal((b, a)).astype(np.float32), rng.standard_normal(b).astype(np.float32)]
    paths = []
    for name, xs in (("a", arrays), ("b", [x.astype(np.float16) for x in arrays])):
        path = tmp_path / f"{name}.npz"
        np.savez(path, **{f"{2 * (i // 2)}.{'weight' if i % 2 == 0 else 'bias'}": x for i, x in enumerate(xs)})
        paths.append(str(path))
    return paths[0], paths[1]


@pytest.mark.parametrize("widths", [[6, 16, 3], [4, 10, 10, 3]])
def test_distance_and_top1_certificates_from_python(tmp_path, widths: list[int]) -> None:
    a, b = _files(tmp_path, widths)
    box = [("-1", "1")] * widths[0]
    d = certsym.distance(a, b, box=box, regions=5, epsilon="1/1000")
    doc = d.certificate()
    report = check(doc, [a, b] if any("parameters" not in x for x in doc["inputs"]) else None)
    assert report.valid, report.reason
    assert doc["proof"]["verdict"] == d.verdict
    r = certsym.top1(a, b, box=[("-1/64", "1/64")] * widths[0], regions=7)
    if r.verdict == "unknown":
        with pytest.raises(InputError):
            r.certificate()
    else:
        assert check(r.certificate()).valid
    tiny = certsym.top1(a, a, box=box, regions=3)  # a network against itself: AGREE by exact equivalence
    assert tiny.verdict == "agree" and check(tiny.certificate()).valid


def test_theorem_answers_are_certified_from_python(tmp_path) -> None:
    """identifiable, affine and stabilizer results give their certificates too, replayed VALID."""
    p = tmp_path / "e2.json"  # MATH.md's E2: two identical neurons, a nontrivial stabilizer, not identifiable
    p.write_text('{"M": [["1", "1"]], "A": [["1"], ["1"]], "b": ["0", "0"], "c": ["0"]}')
    v = certsym.identifiable(str(p))
    doc = v.certificate()
    assert not v.identifiable and doc["kind"] == "not_identifiable" and check(doc).valid
    a = certsym.affine({"M": [[1, -1]], "A": [[1], [-1]], "b": [0, 0], "c": [0]})
    assert a.affine and check(a.certificate()).valid
    g = certsym.stabilizer(str(p))
    assert g.finite_order == 2 and check(g.certificate()).valid

"""Results a notebook can print: every result's and every loaded model's repr is one line of at most 300 characters
with the key figures as decimals (the exact values are attributes)."""

from __future__ import annotations

import numpy as np
import pytest

import certsym


def _pair(widths: list[int], seed: int = 0) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    layers = [(rng.standard_normal((b, a)).astype(np.float32), rng.standard_normal(b).astype(np.float32))
              for a, b in zip(widths, widths[1:], strict=False)]
    first = [x for layer in layers for x in layer]
    return first, [x.astype(np.float16) for x in first]


def _npz(tmp_path, name: str, arrays: list) -> str:
    path = tmp_path / f"{name}.npz"
    np.savez(path, **{f"{2 * (i // 2)}.{'weight' if i % 2 == 0 else 'bias'}": x for i, x in enumerate(arrays)})
    return str(path)


@pytest.mark.parametrize("widths", [[128, 64, 10], [5, 12, 12, 3]])
def test_reprs_are_one_short_line(tmp_path, widths: list[int]) -> None:
    a, b = _pair(widths)
    pa, pb = _npz(tmp_path, "a", a), _npz(tmp_path, "b", b)
    model = certsym.load(pa)
    assert repr(model) == f"Model({pa!r}, npz float32, {'-'.join(map(str, widths))})"
    box = [("-1", "1")] * widths[0]
    results = [certsym.distance(pa, pb, box=box, regions=3), certsym.distance(pa, pb, box=box, regions=3,
                                                                             epsilon="1/2"),
               certsym.top1(pa, pb, box=box, regions=3)]
    if len(widths) == 3:
        results.append(certsym.identifiable(pa))
    for result in results:
        text = repr(result)
        assert len(text) <= 300 and "\n" not in text, text
    assert f"L≈{float(results[0].lower):.6g}" in repr(results[0]) and "U≈" in repr(results[0])
    assert f"ε≈0.5: {results[1].verdict}" in repr(results[1])
    assert repr(results[2]).split("(")[1].startswith(results[2].verdict)

"""One result type per question, whatever the depth: ``equivalent``, ``distance``, ``top1``, ``minimal`` and
``canon`` return the same class for a one-hidden-layer pair and a deep one, speak the one vocabulary of outcomes
(holds / fails / unknown, truthy iff it holds), print in one short line, and the command's exit code is the
outcome's."""

from __future__ import annotations

import numpy as np
import pytest
from flint import fmpq

import certsym
from certsym.cli import main
from certsym.core.decision import FAILS, HOLDS, UNKNOWN
from certsym.errors import InputError


def _arrays(widths: list[int], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [x for a, b in zip(widths, widths[1:], strict=False)
            for x in (rng.standard_normal((b, a)).astype(np.float32), rng.standard_normal(b).astype(np.float32))]


def _save(tmp_path, name: str, arrays: list[np.ndarray]) -> str:
    path = tmp_path / f"{name}.npz"
    np.savez(path, **{f"{2 * (i // 2)}.{'weight' if i % 2 == 0 else 'bias'}": x for i, x in enumerate(arrays)})
    return str(path)


@pytest.fixture
def pairs(tmp_path) -> dict[str, tuple[str, str, str]]:
    """Per depth: a network, a copy with hidden units permuted (equal function), a copy with one bias moved."""
    out = {}
    for name, widths in (("shallow", [3, 5, 2]), ("deep", [3, 5, 4, 2])):
        a = _arrays(widths, 7)
        perm = np.random.default_rng(1).permutation(widths[1])
        b = [a[0][perm], a[1][perm], a[2][:, perm], *a[3:]]
        c = [x.copy() for x in a]
        c[-1][0] += np.float32(0.5)
        out[name] = (_save(tmp_path, f"{name}_a", a), _save(tmp_path, f"{name}_b", b), _save(tmp_path, f"{name}_c", c))
    return out


def test_every_question_returns_one_type_at_every_depth(pairs) -> None:
    box = [("-1", "1")] * 3
    by_depth = {}
    for depth, (a, b, c) in pairs.items():
        by_depth[depth] = [certsym.equivalent(a, b), certsym.equivalent(a, c),
                           certsym.distance(a, c, box=box, regions=3, epsilon="1/100"),
                           certsym.top1(a, b, box=box, regions=3), certsym.minimal(a), certsym.canon(a)]
    for shallow, deep in zip(by_depth["shallow"], by_depth["deep"], strict=True):
        assert type(shallow) is type(deep), (type(shallow), type(deep))
    for results in by_depth.values():
        same, differ, dist, top, _, canon = results
        assert (same.outcome, differ.outcome, dist.outcome, top.outcome) == (HOLDS, FAILS, FAILS, HOLDS)
        assert bool(same) and not differ and not dist and bool(top)
        assert dist.lower == dist.upper > fmpq(1, 100) and dist.verdict == "violated"  # the moved bias, exactly
        assert len(canon.hash) == 64
        for r in results:
            text = repr(r)
            assert len(text) <= 300 and "\n" not in text, text


def test_minimal_is_the_layered_network_with_its_one_hidden_layer_view(pairs) -> None:
    a = certsym.minimal(pairs["shallow"][0])
    assert a.depth == 1 and a.n == 5 and len(a.A) == 5 and len(a.M) == 2 and a.shallow.n == 5
    deep = certsym.minimal(pairs["deep"][0])
    assert deep.widths == (3, 5, 4, 2)
    with pytest.raises(InputError, match="not shallow"):
        _ = deep.A


def test_canon_hash_of_a_deep_network_is_the_commands(pairs, capsys) -> None:
    a = pairs["deep"][0]
    assert main(["canon", a, "--json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out)["hash"] == certsym.canon(a).hash
    assert not certsym.canon(a).of_function and certsym.canon(pairs["shallow"][0]).of_function


@pytest.mark.parametrize("depth", ["shallow", "deep"])
def test_the_exit_code_is_the_outcomes(pairs, depth: str, capsys) -> None:
    a, b, c = pairs[depth]
    codes = {HOLDS: 0, FAILS: 1, UNKNOWN: 3}
    for args, result in ((["equiv", a, b], certsym.equivalent(a, b)), (["equiv", a, c], certsym.equivalent(a, c)),
                         (["distance", a, c, "--box", "-1,1", "--epsilon", "1", "--regions", "3"],
                          certsym.distance(a, c, box=[("-1", "1")] * 3, epsilon=1, regions=3))):
        assert main(args) == codes[result.outcome]
    capsys.readouterr()


@pytest.mark.parametrize("depth", [[3, 5, 2], [3, 5, 4, 2]])
def test_an_unknown_top1_has_no_certificate(tmp_path, depth: list[int]) -> None:
    """The last layer doubled keeps the largest output at every point, but one region of a wide box, whose classes
    change inside it, cannot certify that: UNKNOWN, whose certificate() is refused with the reason."""
    a = _arrays(depth, 7)
    moved = [*a[:-2], 2 * a[-2], 2 * a[-1]]
    r = certsym.top1(_save(tmp_path, "a", a), _save(tmp_path, "m", moved), box=[("-100", "100")] * 3, regions=1)
    assert r.outcome == UNKNOWN and not r and not r.has_certificate and r.reason.startswith("stopped at")
    with pytest.raises(InputError, match="no certificate"):
        r.certificate()


def test_box_ends_may_be_floats_read_as_the_dyadics_they_are(pairs) -> None:
    """A Python float, a numpy scalar or a 0-d tensor is the dyadic rational it denotes (0.1 is not 1/10); NaN and
    lists are refused with the reason."""
    import torch

    a, _, c = pairs["shallow"]
    d = certsym.distance(a, c, box=[(np.float32(-1), 1.0), (-0.5, torch.tensor(0.75)), ("1/10", 0.1)], regions=3)
    assert d.box[0] == (-1, 1) and d.box[1] == (fmpq(-1, 2), fmpq(3, 4))
    assert d.box[2] == (fmpq(1, 10), fmpq(*0.1.as_integer_ratio()))  # 0.1 as a double is above 1/10
    with pytest.raises(InputError, match="lo > hi"):
        certsym.top1(a, c, box=[(0.1, "1/10")] * 3)
    with pytest.raises(InputError, match="finite"):
        certsym.distance(a, c, box=[(float("nan"), 1)] * 3)
    with pytest.raises(InputError, match="exact number"):
        certsym.distance(a, c, box=[([0], 1)] * 3)

"""certsym.io.sources: what a network given to the API means.

Four arrays, a state dict (by the default names, with prefixes, or by keys=), a torch module, a Model, a parameter
file and an npz file must all mean the same θ when they hold the same numbers: every weight the exact dyadic
rational of its float (compared with fractions.Fraction), checked also by exact evaluation against numpy on
dyadic points where binary64 is exact. read_pair puts two networks in one field; bad sources are InputErrors.
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.core.network import Network
from certsym.errors import InputError
from certsym.io.sources import Model, load, read_pair
from certsym.numbers import QQ


def _arrays(seed: int, m: int = 3, n: int = 4, k: int = 2, dtype=np.float32) -> list[np.ndarray]:
    """Dyadic weights i/8 with |i| ≤ 16: exact in every float type, and numpy's float64 evaluation is exact."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-16, 17, s) / 8).astype(dtype) for s in ((n, m), (n,), (k, n), (k,))]


def _frac(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def _matches(net: Network, arrays: list[np.ndarray]) -> bool:
    """θ's entries are the exact values of the arrays (A = W1, b = b1, M = W2, c = b2)."""
    W1, b1, W2, b2 = (np.asarray(a, dtype=np.float64) for a in arrays)
    return (net.field is QQ and (net.n, net.m, net.k) == (*W1.shape, W2.shape[0])
            and [[_frac(x) for x in row] for row in net.A] == [[Fraction(float(x)) for x in row] for row in W1]
            and [_frac(x) for x in net.b] == [Fraction(float(x)) for x in b1]
            and [[_frac(x) for x in row] for row in net.M] == [[Fraction(float(x)) for x in row] for row in W2]
            and [_frac(x) for x in net.c] == [Fraction(float(x)) for x in b2])


def _numpy_value(arrays: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    W1, b1, W2, b2 = (np.asarray(a, dtype=np.float64) for a in arrays)
    return W2 @ np.maximum(W1 @ x + b1, 0) + b2


def _state(arrays: list[np.ndarray], prefix: str = "") -> dict:
    return dict(zip((f"{prefix}0.weight", f"{prefix}0.bias", f"{prefix}2.weight", f"{prefix}2.bias"), arrays,
                    strict=True))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(0, 5), st.integers(1, 3),
       st.sampled_from([np.float16, np.float32, np.float64]))
def test_four_arrays_are_read_exactly(seed: int, m: int, n: int, k: int, dtype) -> None:
    """Four arrays give θ with every entry the exact value of its float; ρ(θ) equals numpy's (exact) evaluation at
    dyadic points; the record's digest is that of the array bytes."""
    arrays = _arrays(seed, m, n, k, dtype)
    model = load(arrays)
    assert isinstance(model, Model) and _matches(model.network, arrays)
    rng = np.random.default_rng(seed + 1)
    for _ in range(5):
        x = rng.integers(-8, 9, m) / 4
        assert [_frac(y) for y in model.network.evaluate([fmpq(int(t * 4), 4) for t in x])] == \
            [Fraction(float(y)) for y in _numpy_value(arrays, x)]
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()
    assert model.record.sha256 == digest
    assert "ReLU" in model.reading


def test_absent_biases_layouts_and_digests() -> None:
    """A bias given as None is zero; "in-out" arrays (transposed weights) mean the same θ; other numbers give
    another digest."""
    W1, b1, W2, b2 = _arrays(1)
    zero_bias = load([W1, None, W2, None]).network
    assert _matches(zero_bias, [W1, np.zeros_like(b1), W2, np.zeros_like(b2)])
    assert load([W1.T, b1, W2.T, b2], layout="in-out").network == load([W1, b1, W2, b2]).network
    other = W1.copy()
    other[0, 0] += 1
    assert load([other, b1, W2, b2]).record.sha256 != load([W1, b1, W2, b2]).record.sha256


def test_state_dicts_by_default_names_prefixes_and_keys() -> None:
    """A state dict with 0.weight … 2.bias (optionally under module. or _orig_mod.), with the letters A, b, M, c,
    or with names chosen by keys= (a '-' bias absent), means the θ of the same arrays."""
    arrays = _arrays(2)
    expected = load(arrays).network
    assert load(_state(arrays)).network == expected
    assert load(_state(arrays, "module.")).network == expected
    assert load(_state(arrays, "_orig_mod.")).network == expected
    W1, b1, W2, b2 = arrays
    assert load({"A": W1, "b": b1, "M": W2, "c": b2}).network == expected
    named = {"fc1.weight": W1, "fc1.bias": b1, "fc2.weight": W2, "fc2.bias": b2, "step": np.array(3)}
    assert load(named, keys="fc1.weight, fc1.bias, fc2.weight, fc2.bias").network == expected
    assert load(named, keys=["fc1.weight", None, "fc2.weight", "-"]).network == \
        load([W1, None, W2, None]).network


def test_torch_module_and_its_state_dict() -> None:
    """Sequential(Linear, ReLU, Linear) read as a module and through its state dict (torch tensors) gives one θ,
    whose entries are the float32 weights exactly."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    arrays = [p.detach().numpy() for p in (module[0].weight, module[0].bias, module[2].weight, module[2].bias)]
    from_module = load(module)
    assert _matches(from_module.network, arrays)
    assert load(module.state_dict()).network == from_module.network


def test_a_model_is_passed_through_and_files_mean_the_same(tmp_path: Path) -> None:
    """load(Model) is that Model; an npz of the arrays and a parameter file of the same numbers give the same θ,
    and the file's record is the SHA-256 of its bytes."""
    arrays = _arrays(3)
    model = load(arrays)
    assert load(model) is model
    np.savez(tmp_path / "w.npz", **_state(arrays))
    assert load(tmp_path / "w.npz").network == model.network
    W1, b1, W2, b2 = (np.asarray(a, np.float64) for a in arrays)
    doc = {"M": [[str(Fraction(float(x))) for x in r] for r in W2], "A": [[str(Fraction(float(x))) for x in r]
                                                                          for r in W1],
           "b": [str(Fraction(float(x))) for x in b1], "c": [str(Fraction(float(x))) for x in b2]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    from_file = load(path)
    assert from_file.network == model.network and from_file.arrays is None
    assert from_file.record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_pair_puts_both_networks_in_one_field(tmp_path: Path) -> None:
    """Parameter files with sqrt(2) in one and sqrt(3) in the other are read together into one field, where the
    entries keep their values; a rational file read with arrays stays over Q."""
    (tmp_path / "a.json").write_text(json.dumps({"M": [["sqrt(2)"]], "A": [["1"]], "b": ["0"], "c": ["0"]}))
    (tmp_path / "b.json").write_text(json.dumps({"M": [["sqrt(3)"]], "A": [["1"]], "b": ["1/2"], "c": ["0"]}))
    t1, t2, (r1, r2) = read_pair(tmp_path / "a.json", tmp_path / "b.json")
    assert t1.field == t2.field and t1.field is not QQ
    s2, s3 = t1.M[0][0], t2.M[0][0]
    assert s2 * s2 == 2 and s3 * s3 == 3 and (s2 * s3) ** 2 == 6 and s2 > 0 and s3 > 0
    assert r1.sha256 == hashlib.sha256((tmp_path / "a.json").read_bytes()).hexdigest()
    assert dict(r2.atoms)["sqrt(3)"] == s3
    assert t1.minus(t2).evaluate([fmpq(1)]) == [s2 - s3 * fmpq(3, 2)]  # one field: the two can be combined
    (tmp_path / "q.json").write_text(json.dumps({"M": [["1", "1/2"]], "A": [["1"], ["-1"]], "b": ["0", "0"],
                                                 "c": ["0"]}))
    arrays = [np.array([[1.0], [-1.0]]), np.zeros(2), np.array([[1.0, 0.5]]), np.zeros(1)]
    u1, u2, _ = read_pair(tmp_path / "q.json", arrays)
    assert u1.field is QQ and u2.field is QQ and u1 == u2


BAD_SOURCES = {
    "three arrays": lambda: load(_arrays(0)[:3]),
    "no W1": lambda: load([None, None, _arrays(0)[2], None]),
    "no default names": lambda: load({"w": _arrays(0)[0], "v": _arrays(0)[2]}),
    "missing named tensor": lambda: load(_state(_arrays(0)), keys="0.weight,0.bias,3.weight,2.bias"),
    "keys of the wrong count": lambda: load(_state(_arrays(0)), keys="0.weight,2.weight"),
    "unknown layout": lambda: load(_arrays(0), layout="row-major"),
    "an int": lambda: load(5),
    "a set": lambda: load({1, 2}),
    "a missing file": lambda: load("/nonexistent/p.json"),
    "keys for a module": lambda: load(torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(),
                                                          torch.nn.Linear(1, 1)), keys="a,b,c,d"),
    "a Tanh module": lambda: load(torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))),
    "NaN weight": lambda: load([np.array([[np.nan]]), np.zeros(1), np.ones((1, 1)), np.zeros(1)]).network,
}


@pytest.mark.parametrize("name", sorted(BAD_SOURCES))
def test_bad_sources_are_input_errors(name: str) -> None:
    """Each bad source raises InputError with a one-line message."""
    with pytest.raises(InputError) as info:
        BAD_SOURCES[name]()
    assert str(info.value) and "\n" not in str(info.value)


def test_read_pair_refuses_two_fields(tmp_path: Path) -> None:
    """A parameter file over Q(√2) paired with float arrays (over Q) cannot be read into one field: InputError."""
    (tmp_path / "a.json").write_text(json.dumps({"M": [["sqrt(2)"]], "A": [["1"]], "b": ["0"], "c": ["0"]}))
    arrays = [np.ones((1, 1)), np.zeros(1), np.ones((1, 1)), np.zeros(1)]
    with pytest.raises(InputError, match="different number fields"):
        read_pair(tmp_path / "a.json", arrays)

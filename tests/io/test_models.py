"""Model files (.npz, .safetensors, ONNX, PyTorch) read exactly, with clear layout errors."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from flint import fmpq

from certsym.cli import main
from certsym.io import load_networks

KEYS = ("0.weight", "0.bias", "2.weight", "2.bias")


def _mlp(seed: int = 0, n: int = 6, m: int = 3, k: int = 2, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in ((n, m), (n,), (k, n), (k,))]


def _save(path: Path, arrays) -> Path:
    np.savez(path, **dict(zip(KEYS, arrays, strict=True)))
    return path


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_weights_are_exact_dyadics(tmp_path: Path, dtype) -> None:
    W1, b1, W2, b2 = _mlp(dtype=dtype)
    (net,), _ = load_networks([_save(tmp_path / "m.npz", (W1, b1, W2, b2))])
    def exact(x) -> fmpq:
        q = Fraction(float(x))  # a float16/32/64 widened to float64 is exact
        return fmpq(q.numerator, q.denominator)

    assert net.A[1][2] == exact(W1[1, 2]) and net.c[1] == exact(b2[1]) and net.M[0][5] == exact(W2[0, 5])
    assert (net.n, net.m, net.k) == (6, 3, 2)


def test_permuted_rescaled_dead_unit_is_equivalent_and_last_bit_is_not(tmp_path: Path, capfd) -> None:
    W1, b1, W2, b2 = _mlp()
    rng = np.random.default_rng(5)
    perm = rng.permutation(6)
    d = (np.float32(2.0) ** rng.integers(-3, 4, 6)).astype(np.float32)  # powers of two: exact in float32
    W1p, b1p, W2p = W1[perm] * d[:, None], b1[perm] * d, W2[:, perm] / d
    W1p = np.vstack([W1p, np.ones((1, 3), np.float32)])  # a dead unit
    b1p, W2p = np.append(b1p, np.float32(1)), np.hstack([W2p, np.zeros((2, 1), np.float32)])
    a, b = _save(tmp_path / "a.npz", (W1, b1, W2, b2)), _save(tmp_path / "b.npz", (W1p, b1p, W2p, b2))
    cert = tmp_path / "c.json"
    assert main(["equiv", str(a), str(b), "--cert", str(cert)]) == 0
    assert main(["check", str(cert), "--inputs", str(a), str(b)]) == 0  # the checker re-reads the .npz files
    assert main(["check", str(cert), "--inputs", str(b), str(a)]) == 1
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["parameters"]["c"][0] = "0"  # embedded weights that are not the file's
    (tmp_path / "forged.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "forged.json"), "--inputs", str(a), str(b)]) == 1
    W2c = W2.copy()
    W2c[0, 0] = np.nextafter(W2c[0, 0], np.float32(np.inf))
    c = _save(tmp_path / "c.npz", (W1, b1, W2c, b2))
    assert main(["equiv", str(a), str(c), "--cert", str(cert)]) == 1
    assert json.loads(cert.read_text())["kind"] == "not_equivalent"
    assert main(["check", str(cert)]) == 0


def test_safetensors_and_npz_agree(tmp_path: Path) -> None:
    import safetensors.numpy  # in the test extra: a missing install fails here, it is not skipped

    arrays = _mlp(3)
    safetensors.numpy.save_file(dict(zip(KEYS, arrays, strict=True)), str(tmp_path / "m.safetensors"))
    files = [str(tmp_path / "m.safetensors"), str(_save(tmp_path / "m.npz", arrays))]
    assert main(["equiv", *files, "--cert", str(tmp_path / "c.json")]) == 0
    assert main(["check", str(tmp_path / "c.json"), "--inputs", *files]) == 0


def test_custom_keys(tmp_path: Path) -> None:
    W1, b1, W2, b2 = _mlp()
    np.savez(tmp_path / "k.npz", fc1_w=W1, fc1_b=b1, fc2_w=W2, fc2_b=b2)
    np.savez(tmp_path / "k2.npz", fc1_w=W1[::-1], fc1_b=b1[::-1], fc2_w=W2[:, ::-1], fc2_b=b2)  # permuted
    assert main(["--keys", "fc1_w,fc1_b,fc2_w,fc2_b", "equiv", str(tmp_path / "k.npz"), str(tmp_path / "k2.npz")]) == 0


def _error(capfd, argv) -> str:
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("certsym: error:")
    return err


def test_layout_errors(tmp_path: Path, capfd) -> None:
    W1, b1, W2, b2 = _mlp()
    np.savez(tmp_path / "deep.npz", **dict(zip(KEYS, (W1, b1, W2, b2), strict=True)), **{"4.weight": W2})
    assert "3 linear layers" in _error(capfd, ["stabilizer", str(tmp_path / "deep.npz")])
    assert "layer 3 (4.weight) has shape" in _error(capfd, ["eval", str(tmp_path / "deep.npz"), "--at", "1,2,3"])
    np.savez(tmp_path / "nobias.npz", **{"0.weight": W1, "2.bias": b2})
    assert "missing 2.weight" in _error(capfd, ["eval", str(tmp_path / "nobias.npz"), "--at", "1,2,3"])
    _save(tmp_path / "shape.npz", (W1, b1, W2[:, :4], b2))
    assert "mismatched shapes" in _error(capfd, ["eval", str(tmp_path / "shape.npz"), "--at", "1,2,3"])
    np.save(tmp_path / "obj.npy", np.array([object()], dtype=object), allow_pickle=True)
    import zipfile

    with zipfile.ZipFile(tmp_path / "pickle.npz", "w") as z:
        z.write(tmp_path / "obj.npy", "0.weight.npy")
        for key, array in zip(KEYS[1:], (b1, W2, b2), strict=True):
            with z.open(key + ".npy", "w") as fh:
                np.lib.format.write_array(fh, array)
    assert "pickled" in _error(capfd, ["eval", str(tmp_path / "pickle.npz"), "--at", "1"])
    W1n = W1.copy()
    W1n[0, 0] = np.nan
    assert "NaN" in _error(capfd, ["eval", str(_save(tmp_path / "nan.npz", (W1n, b1, W2, b2))), "--at", "1,2,3"])


def test_torch_state_dict(tmp_path: Path) -> None:
    import torch  # in the test extra: a missing install fails here, it is not skipped

    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    torch.save(model.state_dict(), tmp_path / "m.pt")
    arrays = [model.state_dict()[k].numpy() for k in KEYS]
    assert main(["equiv", str(tmp_path / "m.pt"), str(_save(tmp_path / "m.npz", arrays))]) == 0

"""The files ML users hold: torch checkpoints (nested, prefixed, bias-free, bfloat16), Flax-style kernels, keys per
file, clear errors naming the file, the tensor and the layer kind, and the Python API. Every certificate made
from such a file replays with the checker reading the same file (docs/FORMATS.md)."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch  # in the test extra: a missing install fails here, it is not skipped

from certsym.cli import main


def _model(seed: int, bias: bool = True):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 5, bias=bias), torch.nn.ReLU(), torch.nn.Linear(5, 2, bias=bias))


def _npz(path: Path, model) -> Path:
    sd = model.state_dict()
    np.savez(path, **{k: v.numpy() for k, v in sd.items()})
    return path


def _equiv_and_replay(capfd, a: Path, b: Path, *options: str) -> str:
    """equiv A B (must be EQUIVALENT), then the referenced certificate replayed against both files: VALID's text."""
    cert = a.parent / "c.json"
    assert main(["equiv", str(a), str(b), "--reference", "--cert", str(cert), *options]) == 0, capfd.readouterr()
    capfd.readouterr()
    assert main(["check", str(cert), "--inputs", str(a), str(b)]) == 0, capfd.readouterr().out
    return capfd.readouterr().out


@pytest.mark.parametrize("wrap", ["model", "state_dict"])
def test_nested_checkpoint_is_found_and_bound(tmp_path: Path, capfd, wrap: str) -> None:
    model = _model(0)
    torch.save({wrap: model.state_dict(), "epoch": 3, "lr": 0.1}, tmp_path / "ckpt.pt")
    out = _equiv_and_replay(capfd, _npz(tmp_path / "ref.npz", model), tmp_path / "ckpt.pt")
    assert f'torch default at ["{wrap}"] (auto)' in out


def test_two_candidate_state_dicts_need_state_key(tmp_path: Path, capfd) -> None:
    model, ema = _model(1), _model(2)
    torch.save({"model": model.state_dict(), "ema": ema.state_dict()}, tmp_path / "two.pt")
    ref = _npz(tmp_path / "ref.npz", ema)
    assert main(["equiv", str(ref), str(tmp_path / "two.pt")]) == 2
    assert "--state-key" in capfd.readouterr().err
    out = _equiv_and_replay(capfd, ref, tmp_path / "two.pt", "--state-key", "ema")
    assert 'at ["ema"] (state-key)' in out
    # the same certificate cannot be moved to the other state dict
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["inputs"][1]["model"]["root"] = {"path": ["model"], "rule": "state-key"}
    (tmp_path / "c.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "c.json"), "--inputs", str(ref), str(tmp_path / "two.pt")]) == 1


@pytest.mark.parametrize("prefix", ["module.", "_orig_mod.", "_orig_mod.module."])
def test_wrapper_prefixes(tmp_path: Path, capfd, prefix: str) -> None:
    model = _model(3)
    torch.save({prefix + k: v for k, v in model.state_dict().items()}, tmp_path / "wrapped.pth")
    out = _equiv_and_replay(capfd, _npz(tmp_path / "ref.npz", model), tmp_path / "wrapped.pth")
    assert f"{prefix}0.weight 5x3" in out


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.ckpt", "weights"])
def test_torch_archives_by_content(tmp_path: Path, capfd, name: str) -> None:
    model = _model(4)
    torch.save(model.state_dict(), tmp_path / name)
    _equiv_and_replay(capfd, _npz(tmp_path / "ref.npz", model), tmp_path / name)


def test_unknown_content_names_the_accepted_formats(tmp_path: Path, capfd) -> None:
    (tmp_path / "x.pt").write_bytes(b"\x00\x01 not a model")
    assert main(["equiv", str(tmp_path / "x.pt"), str(tmp_path / "x.pt")]) == 2
    err = capfd.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bfloat16_torch_and_safetensors(tmp_path: Path, capfd) -> None:
    model = _model(5).to(torch.bfloat16)
    torch.save(model.state_dict(), tmp_path / "bf.pt")
    wide = {k: v.float().numpy() for k, v in model.state_dict().items()}  # bfloat16 → float32 is exact
    np.savez(tmp_path / "wide.npz", **wide)
    _equiv_and_replay(capfd, tmp_path / "wide.npz", tmp_path / "bf.pt")
    # a hand-written BF16 safetensors header: the upper halves of the float32 bit patterns
    header, offset, blobs = {}, 0, []
    for key, value in wide.items():
        bits = (value.view(np.uint32) >> 16).astype("<u2").tobytes()
        header[key] = {"dtype": "BF16", "shape": list(value.shape), "data_offsets": [offset, offset + len(bits)]}
        offset += len(bits)
        blobs.append(bits)
    text = json.dumps(header).encode()
    (tmp_path / "bf.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    _equiv_and_replay(capfd, tmp_path / "wide.npz", tmp_path / "bf.safetensors")


def test_bias_free_layers_are_read_as_zero(tmp_path: Path, capfd) -> None:
    model = _model(6, bias=False)
    torch.save(model.state_dict(), tmp_path / "nobias.pt")
    sd = model.state_dict()
    np.savez(tmp_path / "zeros.npz", **{"0.weight": sd["0.weight"].numpy(), "0.bias": np.zeros(5, np.float32),
                                        "2.weight": sd["2.weight"].numpy(), "2.bias": np.zeros(2, np.float32)})
    out = _equiv_and_replay(capfd, tmp_path / "zeros.npz", tmp_path / "nobias.pt")
    assert "no bias (read as 0)" in out
    assert main(["eval", str(tmp_path / "nobias.pt"), "--at", "0,0,0"]) == 0
    captured = capfd.readouterr()
    assert captured.out.split() == ["0", "0"] and "no bias" in captured.err


def test_flax_layout_and_keys_per_file(tmp_path: Path, capfd) -> None:
    model = _model(7)
    ref = _npz(tmp_path / "ref.npz", model)
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    flax = {"params.Dense_0.kernel": sd["0.weight"].T.copy(), "params.Dense_0.bias": sd["0.bias"],
            "params.Dense_1.kernel": sd["2.weight"].T.copy(), "params.Dense_1.bias": sd["2.bias"]}
    np.savez(tmp_path / "flax.npz", **flax)
    keys = " params.Dense_0.kernel, params.Dense_0.bias , params.Dense_1.kernel,params.Dense_1.bias"
    assert main(["equiv", str(ref), str(tmp_path / "flax.npz"), "--keys2", keys]) == 2
    assert "--layout in-out" in capfd.readouterr().err
    # --layout applies to both files: the reference in the same layout
    np.savez(tmp_path / "ref_t.npz", **{"0.weight": sd["0.weight"].T.copy(), "0.bias": sd["0.bias"],
                                        "2.weight": sd["2.weight"].T.copy(), "2.bias": sd["2.bias"]})
    out = _equiv_and_replay(capfd, tmp_path / "ref_t.npz", tmp_path / "flax.npz", "--keys2", keys,
                            "--layout", "in-out")
    assert "(stored inputs x outputs)" in out and "params.Dense_0.kernel 5x3" in out


def test_layer_kinds_and_bad_weights_are_named(tmp_path: Path, capfd) -> None:
    bn = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2), torch.nn.BatchNorm1d(2))
    torch.save(bn.state_dict(), tmp_path / "bn.pt")
    assert main(["canon", str(tmp_path / "bn.pt")]) == 2
    assert "BatchNorm" in capfd.readouterr().err
    conv = torch.nn.Sequential(torch.nn.Conv1d(1, 2, 3), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    torch.save(conv.state_dict(), tmp_path / "conv.pt")
    assert main(["canon", str(tmp_path / "conv.pt")]) == 2
    assert "shape (2, 1, 3) (Conv layer)" in capfd.readouterr().err
    model = _model(8)
    sd = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    sd["2.weight"][1, 3] = np.nan
    np.savez(tmp_path / "nan.npz", **sd)
    assert main(["canon", str(tmp_path / "nan.npz")]) == 2
    err = capfd.readouterr().err
    assert "nan.npz" in err and "'2.weight'" in err and "NaN" in err


def test_certificates_are_written_with_the_usual_mode(tmp_path: Path) -> None:
    ref = _npz(tmp_path / "ref.npz", _model(9))
    assert main(["equiv", str(ref), str(ref), "--cert", str(tmp_path / "c.json")]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "c.json").stat().st_mode) == 0o666 & ~umask


def test_python_api_one_liner(tmp_path: Path) -> None:
    model = _model(10)
    _npz(tmp_path / "a.npz", model)
    _npz(tmp_path / "b.npz", model)
    code = "import certsym; print(certsym.equivalent('a.npz', 'b.npz'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("EQUIVALENT"), out.stderr


def test_python_api_sources(tmp_path: Path) -> None:
    import certsym

    model = _model(11)
    sd = model.state_dict()
    arrays = [sd[k].numpy() for k in ("0.weight", "0.bias", "2.weight", "2.bias")]
    verdict = certsym.equivalent(model, arrays)
    assert verdict and verdict.path == "fast"
    report = certsym.check(verdict.certificate())
    assert report and report.kind == "equivalent"
    other = certsym.equivalent(model, [a * 3 for a in arrays])
    assert not other and other.witness is not None and other.to_json()["equivalent"] is False
    assert certsym.identifiable(model)
    assert certsym.minimal(arrays).n == 5
    doubled = [np.vstack([arrays[0], arrays[0][:1]]), np.append(arrays[1], arrays[1][:1]),
               np.hstack([arrays[2], arrays[2][:, :1]]), arrays[3]]  # neuron 0 twice: Stab ⊇ S_2
    assert certsym.stabilizer(model).finite_order == 1 and certsym.stabilizer(doubled).finite_order == 2


def test_identifiable_at_a_real_width_with_a_replayable_certificate(tmp_path: Path, capfd) -> None:
    rng = np.random.default_rng(12)
    n, m, k = 64, 784, 10
    np.savez(tmp_path / "w.npz", **{"0.weight": rng.standard_normal((n, m)).astype(np.float32),
                                    "0.bias": rng.standard_normal(n).astype(np.float32),
                                    "2.weight": rng.standard_normal((k, n)).astype(np.float32),
                                    "2.bias": rng.standard_normal(k).astype(np.float32)})
    assert main(["identifiable", str(tmp_path / "w.npz"), "--cert", str(tmp_path / "i.json")]) == 0
    capfd.readouterr()
    assert main(["check", str(tmp_path / "i.json"), "--inputs", str(tmp_path / "w.npz")]) == 0
    assert "no zero factor" in capfd.readouterr().out


def test_near_miss_summary_is_short_and_exact(tmp_path: Path, capfd) -> None:
    rng = np.random.default_rng(13)
    W1, b1, W2, b2 = (rng.standard_normal(s).astype(np.float32) for s in ((16, 784), (16,), (10, 16), (10,)))
    three = np.float32(3)
    np.savez(tmp_path / "a.npz", **{"0.weight": W1, "0.bias": b1, "2.weight": W2, "2.bias": b2})
    np.savez(tmp_path / "b.npz", **{"0.weight": W1 * three, "0.bias": b1 * three, "2.weight": W2 / three,
                                    "2.bias": b2})
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]) == 1
    out = capfd.readouterr().out
    assert max(len(line) for line in out.splitlines()) < 1000
    assert "exact values in --json" in out and "ulp of float32" in out
    assert main(["equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--json"]) == 1
    doc = json.loads(capfd.readouterr().out)
    assert len(doc["witness"]) == 784 and doc["near_miss"]["neurons"] == 16


def test_a_batchnorm_is_refused_with_the_reason_and_the_recipe(tmp_path) -> None:
    """A BatchNorm (module or state dict): refused, saying why no exact fold exists and how to ask the question
    certsym can answer (fold in floats, then compare the folds)."""
    import certsym
    from certsym.errors import InputError

    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                torch.nn.Linear(4, 2)).eval()
    with pytest.raises(InputError, match=r"irrational.*fuse_linear_bn_eval.*certsym distance"):
        certsym.load(model)
    path = tmp_path / "bn.pt"
    torch.save(model.state_dict(), path)
    with pytest.raises(InputError, match=r"BatchNorm tensors.*fuse_linear_bn_eval"):
        certsym.load(str(path))


def test_named_layers_get_the_exact_keys_that_read_them(tmp_path, capfd) -> None:
    """A Sequential(OrderedDict(fc1=…, act=…, fc2=…)) state dict: the error names the keys that read it, in the
    file's order, and those keys do read it."""
    import collections

    import certsym
    from certsym.cli import main
    from certsym.errors import InputError

    model = torch.nn.Sequential(collections.OrderedDict(fc1=torch.nn.Linear(3, 4), act=torch.nn.ReLU(),
                                                        fc2=torch.nn.Linear(4, 2)))
    path = tmp_path / "named.pt"
    torch.save(model.state_dict(), path)
    with pytest.raises(InputError, match="keys='fc1.weight,fc1.bias,fc2.weight,fc2.bias'"):
        certsym.load(str(path))
    assert main(["equiv", str(path), str(path)]) == 2
    assert "--keys fc1.weight,fc1.bias,fc2.weight,fc2.bias" in capfd.readouterr().err
    assert certsym.equivalent(certsym.load(str(path), keys="fc1.weight,fc1.bias,fc2.weight,fc2.bias"), model)

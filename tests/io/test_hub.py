"""Hugging Face layouts (docs/FORMATS.md, "Model directories and sharded safetensors"): a model directory is its
weights file, a sharded index is the union of its shards; producer and checker read both, and refuse what is
ambiguous."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from certsym.cli import main

F32 = np.float32


def _tensors(seed: int = 0, widths: tuple = (3, 6, 2)) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for ell in range(1, len(widths)):
        name = str(2 * (ell - 1))
        out[f"{name}.weight"] = rng.standard_normal((widths[ell], widths[ell - 1])).astype(F32)
        out[f"{name}.bias"] = rng.standard_normal(widths[ell]).astype(F32)
    return out


def _sharded(directory: Path, tensors: dict, parts: int = 2, config: bool = True) -> Path:
    """The tensors in ``parts`` shards with their index, as transformers' save_pretrained writes them."""
    directory.mkdir(parents=True, exist_ok=True)
    names = list(tensors)
    weight_map = {}
    for i in range(parts):
        shard = f"model-{i + 1:05d}-of-{parts:05d}.safetensors"
        mine = names[i::parts]
        save_file({k: tensors[k] for k in mine}, str(directory / shard))
        weight_map.update({k: shard for k in mine})
    index = directory / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    if config:
        (directory / "config.json").write_text("{}")
    return index


def _single(directory: Path, tensors: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text("{}")
    return directory / "model.safetensors"


def _check(capfd, *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capfd.readouterr().out


def test_a_sharded_directory_equals_its_single_file_and_every_shard_is_bound(tmp_path: Path, capfd) -> None:
    tensors = _tensors()
    _single(tmp_path / "single", tensors)
    index = _sharded(tmp_path / "sharded", tensors)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "single"), str(tmp_path / "sharded"), "--cert", str(cert),
                 "--reference"]) == 0
    assert "EQUIVALENT" in capfd.readouterr().out
    doc = json.loads(cert.read_text())
    assert doc["inputs"][1]["name"] == str(index) and doc["inputs"][1]["model"]["format"] == "safetensors-sharded"
    code, out = _check(capfd, str(cert), "--inputs", str(tmp_path / "single" / "model.safetensors"), str(index))
    assert code == 0 and out.count("; shard model-0000") == 2, out
    assert _check(capfd, str(cert), "--named-inputs", "--quiet")[0] == 0


def test_the_checker_refuses_a_shard_that_changed_or_holds_other_tensors(tmp_path: Path, capfd) -> None:
    tensors = _tensors(1)
    index = _sharded(tmp_path / "m", tensors)
    _single(tmp_path / "s", tensors)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "s"), str(index), "--cert", str(cert), "--reference"]) == 0
    capfd.readouterr()
    shard = tmp_path / "m" / "model-00001-of-00002.safetensors"
    held = {k: tensors[k] for k in list(tensors)[0::2]}
    save_file({**held, "extra": np.zeros(1, F32)}, str(shard))  # a tensor the weight map does not assign
    code, out = _check(capfd, str(cert), "--named-inputs")
    assert code == 1 and "SHA-256 of the shard" in out
    doc = json.loads(cert.read_text())
    import hashlib

    doc["inputs"][1]["model"]["shards"][0]["sha256"] = hashlib.sha256(shard.read_bytes()).hexdigest()
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    code, out = _check(capfd, str(forged), "--named-inputs")
    assert code == 1 and "does not hold exactly the tensors the weight map assigns" in out
    assert main(["equiv", str(tmp_path / "s"), str(index)]) == 2  # the producer refuses it too
    assert "does not hold exactly the tensors" in capfd.readouterr().err


def test_shards_through_symbolic_links_as_in_a_hub_cache(tmp_path: Path, capfd) -> None:
    """A hub snapshot links every file to a blob elsewhere: both readers follow the links."""
    tensors = _tensors(2)
    blobs = tmp_path / "blobs"
    _sharded(blobs, tensors)
    snap = tmp_path / "snapshots" / "abc"
    snap.mkdir(parents=True)
    for f in blobs.iterdir():
        os.symlink(f, snap / f.name)
    _single(tmp_path / "s", tensors)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "s"), str(snap), "--cert", str(cert), "--reference"]) == 0
    capfd.readouterr()
    assert _check(capfd, str(cert), "--named-inputs", "--quiet")[0] == 0


def test_deep_sharded_networks(tmp_path: Path, capfd) -> None:
    tensors = _tensors(3, (4, 5, 3, 2))
    index = _sharded(tmp_path / "deep", tensors, parts=3)
    permuted = dict(tensors)
    perm = np.array([2, 0, 1, 4, 3])
    permuted["0.weight"], permuted["0.bias"] = tensors["0.weight"][perm], tensors["0.bias"][perm]
    permuted["2.weight"] = np.ascontiguousarray(tensors["2.weight"][:, perm])  # save_file writes memory order
    other = _single(tmp_path / "other", permuted)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(index), str(other), "--cert", str(cert)]) == 0
    capfd.readouterr()
    code, out = _check(capfd, str(cert), "--inputs", str(index), str(other))
    assert code == 0 and out.count("; shard model-0000") == 3, out


@pytest.mark.parametrize("case", ["both", "none", "no config", "escaping shard", "index with other keys"])
def test_ambiguous_layouts_are_refused_in_one_line(tmp_path: Path, capfd, case: str) -> None:
    tensors = _tensors(4)
    d = tmp_path / "d"
    if case == "both":
        _sharded(d, tensors)
        _single(d, tensors)
        expected = "holds both model.safetensors and model.safetensors.index.json"
    elif case == "none":
        d.mkdir()
        (d / "config.json").write_text("{}")
        expected = "a model directory without model.safetensors"
    elif case == "no config":
        _sharded(d, tensors, config=False)
        expected = "is a directory without config.json"
    else:
        index = _sharded(d, tensors)
        doc = json.loads(index.read_text())
        if case == "escaping shard":
            doc["weight_map"]["0.weight"] = "../elsewhere.safetensors"
            expected = "is not a plain file name"
        else:
            doc["unexpected"] = 1
            expected = "an object with a weight_map"
        index.write_text(json.dumps(doc))
    _single(tmp_path / "s", tensors)
    assert main(["equiv", str(d), str(tmp_path / "s")]) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and expected in err, err


def test_an_audit_takes_the_index_for_its_shards(tmp_path: Path, capfd) -> None:
    tensors = _tensors(5)
    _sharded(tmp_path / "zoo" / "hub", tensors)
    _single(tmp_path / "zoo" / "plain", tensors)
    assert main(["audit", str(tmp_path / "zoo"), "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["unreadable"] == {} and len(out["classes"]) == 1
    assert sorted(Path(p).name for p in out["classes"][0]["members"]) == ["model.safetensors",
                                                                           "model.safetensors.index.json"]


# -- the red team's holes, each a regression test ----------------------------------------------------------------
def _certified_pair(tmp_path: Path, capfd, parts: int = 2) -> tuple[Path, Path, Path]:
    tensors = _tensors(6)
    single = _single(tmp_path / "s", tensors)
    index = _sharded(tmp_path / "m", tensors, parts=parts)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(single), str(index), "--cert", str(cert), "--reference"]) == 0
    capfd.readouterr()
    return cert, single, index


def test_the_checker_bounds_the_shards_by_their_sizes_before_reading_any(tmp_path: Path, capfd, monkeypatch) -> None:
    import certsym_check.readers.files as files

    cert, _, index = _certified_pair(tmp_path, capfd)
    sizes = [p.stat().st_size for p in index.parent.glob("model-*.safetensors")]
    bound = max(sizes)
    monkeypatch.setattr(files, "MAX_SIBLING", bound)  # each shard fits, the shards together do not

    def no_read(self, name):
        raise AssertionError("a shard was read before the bound on their sizes was checked")

    monkeypatch.setattr(files.InputFile, "shard", no_read)
    from certsym_check.main import main as checker

    code = checker([str(cert), "--named-inputs"])
    out = capfd.readouterr().out
    assert code == 1 and f"inputs[1]: the shards hold more than the checker's {bound} bytes" in out, out


def test_files_are_read_to_their_size_not_to_the_bound(tmp_path: Path) -> None:
    """A read of at most 2^50 bytes must not reserve 2^50 bytes (it did: fh.read(limit + 1))."""
    from certsym_check.readers.files import read_regular

    small = tmp_path / "small.bin"
    small.write_bytes(b"12345")
    assert read_regular(str(small), 1 << 50, "the file") == b"12345"


def test_names_and_shards_that_are_not_files_cannot_be_checked(tmp_path: Path, capfd) -> None:
    cert, _, index = _certified_pair(tmp_path, capfd)
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["name"] = "\ud800"  # a lone surrogate: no file system name
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    code, out = _check(capfd, str(odd), "--named-inputs")
    assert code == 2 and "CANNOT CHECK" in out and "not a usable file name" in out
    shard = index.parent / "model-00001-of-00002.safetensors"
    shard.unlink()
    shard.mkdir()  # a directory where a shard should be
    code, out = _check(capfd, str(cert), "--named-inputs")
    assert code == 1 and "is not a regular file" in out and "malformed" not in out, out


def test_the_producer_applies_the_checkers_bounds(tmp_path: Path, capfd, monkeypatch) -> None:
    import certsym.io.hub as hub

    tensors = _tensors(7)
    _single(tmp_path / "s", tensors)
    index = _sharded(tmp_path / "m", tensors, parts=3)
    monkeypatch.setattr(hub, "MAX_SHARDS", 2)
    assert main(["equiv", str(index), str(tmp_path / "s")]) == 2
    assert "names 3 shards, more than the 2 certsym reads" in capfd.readouterr().err
    monkeypatch.undo()
    doc = json.loads(index.read_text())
    doc["weight_map"]["0.weight"] = "\udcff.safetensors"  # an undecodable file name, as os.listdir reports it
    index.write_text(json.dumps(doc))
    assert main(["equiv", str(index), str(tmp_path / "s")]) == 2
    assert "not a sharded-safetensors index" in capfd.readouterr().err


def test_the_checker_takes_a_model_directory_with_inputs(tmp_path: Path, capfd) -> None:
    tensors = _tensors(8)
    _single(tmp_path / "a", tensors)
    _sharded(tmp_path / "b", tensors)
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a"), str(tmp_path / "b"), "--cert", str(cert), "--reference"]) == 0
    capfd.readouterr()
    code, out = _check(capfd, str(cert), "--inputs", str(tmp_path / "a"), str(tmp_path / "b"))
    assert code == 0 and f"given file 1: {tmp_path / 'b' / 'model.safetensors.index.json'}" in out

"""Files of other frameworks are refused with a one-line error that names the format and the way to convert it,
built here as those frameworks write them (Keras archives and HDF5 by their layout, TorchScript and whole modules
by torch itself), never read as npz, JSON or state dicts."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
import torch

from certsym.cli import main


def _keras_archive(path) -> None:
    with zipfile.ZipFile(path, "w") as z:  # what keras.Model.save("m.keras") writes
        z.writestr("metadata.json", json.dumps({"keras_version": "3.5.0"}))
        z.writestr("config.json", json.dumps({"class_name": "Sequential"}))
        z.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n" + bytes(64))


def _hdf5(path) -> None:
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(1024))


def _torchscript(path) -> None:
    torch.jit.save(torch.jit.script(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                                        torch.nn.Linear(4, 2))), str(path))


def _whole_module(path) -> None:
    torch.save(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)), path)


CASES = {"m.keras": (_keras_archive, "Keras model archive", "get_weights"),
         "m.weights.h5": (_hdf5, "HDF5", "get_weights"),
         "scripted.pt": (_torchscript, "TorchScript", "state_dict()"),
         "module.pt": (_whole_module, "torch.save(model)", "model.state_dict()")}


@pytest.mark.parametrize("name", list(CASES))
def test_foreign_files_are_refused_with_a_recipe(tmp_path, capfd, name) -> None:
    build, what, recipe = CASES[name]
    path = tmp_path / name
    build(path)
    other = tmp_path / "other.npz"
    rng = np.random.default_rng(0)
    np.savez(other, **{"0.weight": rng.standard_normal((4, 3)), "0.bias": rng.standard_normal(4),
                       "2.weight": rng.standard_normal((2, 4)), "2.bias": rng.standard_normal(2)})
    for argv in (["equiv", str(path), str(other)], ["identifiable", str(path)], ["minimal", str(path)]):
        assert main(argv) == 2
        out, err = capfd.readouterr()
        assert out == "" and err.count("\n") == 1, err
        assert what in err and recipe in err, err

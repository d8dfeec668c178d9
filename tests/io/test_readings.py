"""What a user reads when a file is not quite what certsym reads: normalization tensors named as such, the exact
keys= of named layers with the chain they read, a warning for tensors keys= leaves unread, the ReLU reading stated
with activation='relu' (recorded in certificates, accepted by the checker), and a config.json naming another
activation refused by both readers."""

from __future__ import annotations

import collections
import contextlib
import io
import json
import warnings
from pathlib import Path

import pytest
import torch

import certsym
from certsym.cli import main
from certsym.errors import CertsymWarning, InputError
from certsym_check.errors import Reject
from certsym_check.inputs import model_directory_file


def _save(obj, path: Path) -> Path:
    torch.save(obj, path)
    return path


def _mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))


def test_a_layernorm_weight_is_named_a_normalization_not_a_linear_layer(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.LayerNorm(5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    path = _save(net.state_dict(), tmp_path / "ln.pt")
    with pytest.raises(InputError, match=r"1\.weight is 1-D: the scale of a normalization layer \(LayerNorm"):
        certsym.load(path)


def test_named_layers_get_their_exact_keys_and_the_chain_they_read(tmp_path: Path) -> None:
    torch.manual_seed(0)
    named = torch.nn.Sequential(collections.OrderedDict(fc1=torch.nn.Linear(4, 5), act=torch.nn.ReLU(),
                                                        fc2=torch.nn.Linear(5, 2)))
    path = _save(named.state_dict(), tmp_path / "named.pt")
    with pytest.raises(InputError) as info:
        certsym.load(path)
    assert "keys='fc1.weight,fc1.bias,fc2.weight,fc2.bias' (this reads the chain fc1 → ReLU → fc2 in this order; " \
        "a model whose forward adds skip connections" in str(info.value)
    model = certsym.load(path, keys="fc1.weight,fc1.bias,fc2.weight,fc2.bias")
    assert "the chain of the layers the keys name, in that order (the file holds no wiring" in model.reading
    assert certsym.equivalent(model, named).status == "equivalent"


def test_tensors_keys_leave_unread_are_warned_about(tmp_path: Path) -> None:
    torch.manual_seed(0)
    sd = {"fc1.weight": torch.randn(4, 4), "fc1.bias": torch.randn(4), "fc2.weight": torch.randn(2, 4),
          "fc2.bias": torch.randn(2), "skip.weight": torch.randn(2, 4)}
    path = _save(sd, tmp_path / "res.pt")
    keys = "fc1.weight,fc1.bias,fc2.weight,fc2.bias"
    with pytest.warns(CertsymWarning, match=r"the keys read 4 of the file's 5 tensors; skip\.weight is not read"):
        certsym.load(path, keys=keys)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert main(["equiv", str(path), str(path), "--keys", keys]) == 0
    assert err.getvalue().count("certsym: warning: ") == 2 and "skip.weight is not read" in err.getvalue()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CertsymWarning)  # every tensor read: no warning
        certsym.load(_save(_mlp().state_dict(), tmp_path / "plain.pt"), keys="0.weight,0.bias,2.weight,2.bias")


def test_activation_relu_is_stated_recorded_and_replayed(tmp_path: Path) -> None:
    a = _save(_mlp(1).state_dict(), tmp_path / "a.pt")
    b = _save({k: v.half() for k, v in _mlp(1).state_dict().items()}, tmp_path / "b.pt")
    assumed, stated = certsym.equivalent(a, b), None
    assert "[assuming ReLU: a.pt, b.pt hold no activation]" in str(assumed)
    A, B = (certsym.load(p, activation="relu") for p in (a, b))
    stated = certsym.equivalent(A, B)
    assert "[assuming ReLU" not in str(stated) and "as stated with --activation relu" in str(stated)
    doc = certsym.distance(A, B, regions=3).certificate()
    assert {entry["model"]["activation"] for entry in doc["inputs"]} == \
        {"relu, stated by the user: the file holds no activation"}
    report = certsym.check(doc, inputs=[a, b])
    assert report and "as its producer's user stated (--activation relu" in str(report)
    forged = json.loads(json.dumps(doc))
    forged["inputs"][0]["model"]["activation"] = "relu, stated by someone"
    assert not certsym.check(forged, inputs=[a, b])
    arrays = [p.detach().numpy() for p in _mlp(1).parameters()]
    assert "as stated with activation='relu'" in certsym.load(arrays, activation="relu").reading
    with pytest.raises(InputError, match="certsym reads ReLU networks only"):
        certsym.load(a, activation="gelu")


@pytest.mark.parametrize("key,value,refused", [("hidden_act", "gelu", True), ("activation_function", "tanh", True),
                                               ("hidden_act", "relu", False), ("model_type", "mlp", False)])
def test_a_config_json_naming_another_activation_is_refused_by_both(tmp_path: Path, key: str, value: str,
                                                                     refused: bool) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({key: value}))
    _save(_mlp().state_dict(), folder / "pytorch_model.bin")
    if refused:
        with pytest.raises(InputError, match=f"config.json names the activation {key} = '{value}'"):
            certsym.load(folder)
        with pytest.raises(Reject, match="not a ReLU network"):
            model_directory_file(str(folder))
    else:
        assert certsym.load(folder).m == 4
        assert model_directory_file(str(folder)).endswith("pytorch_model.bin")

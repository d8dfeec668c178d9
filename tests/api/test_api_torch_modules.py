"""certsym.api on torch modules, state dicts and arrays: the activation is read, never assumed silently.

A module is walked in forward order and only Linear → ReLU → Linear (with Identity, Flatten, Dropout) is read;
other activations, an output ReLU and opaque modules are refused. Files, state dicts and arrays hold no
activation: every verdict, certificate and VALID line says they were read as ReLU networks.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import certsym
from certsym.cli import main
from certsym.errors import InputError
from certsym_check.main import main as check_main


def _pair(activation: type) -> tuple[nn.Module, nn.Module]:
    """The issue's scenario: a net and the same net with units 0–3 scaled ×2 in and ×½ out."""
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(8, 16), activation(), nn.Linear(16, 3))
    b = nn.Sequential(nn.Linear(8, 16), activation(), nn.Linear(16, 3))
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        b[0].weight[:4] *= 2
        b[0].bias[:4] *= 2
        b[2].weight[:, :4] /= 2
    return a, b


@pytest.mark.parametrize("activation", [nn.GELU, nn.Tanh, nn.Sigmoid])
def test_the_issues_false_equivalences_are_refused(activation):
    a, b = _pair(activation)
    x = torch.rand(256, 8)
    assert (a(x) - b(x)).abs().max() > 1e-2  # the two modules really compute different functions
    with pytest.raises(InputError, match=rf"module 1 \({activation.__name__}\).*computes a different function"):
        certsym.equivalent(a, b)


@pytest.mark.parametrize("activation", [nn.LeakyReLU, nn.ReLU6, nn.ELU, nn.Softplus])
def test_every_other_activation_is_refused(activation):
    with pytest.raises(InputError, match=rf"module 1 \({activation.__name__}\).*computes a different function"):
        certsym.load(_pair(activation)[0])


def test_the_relu_pair_is_equivalent_and_says_how_it_was_read():
    a, b = _pair(nn.ReLU)
    v = certsym.equivalent(a, b)
    assert v and "the module's ReLU" in str(v) and v.to_json()["readings"]


def test_identities_and_nested_sequentials_are_read_through():
    a, _ = _pair(nn.ReLU)
    wrapped = nn.Sequential(nn.Flatten(), nn.Sequential(a[0], nn.Dropout(0.1)), nn.ReLU(), nn.Identity(), a[2])
    assert certsym.equivalent(a, wrapped)


def test_an_output_relu_is_not_dropped():
    """The issue's zero functions: σ(x·1 + 0)·(−1) + (−1) and + (−2) under an output ReLU are both 0. Dropping the
    ReLU would say NOT EQUIVALENT; certsym keeps it and says EQUIVALENT or UNDECIDED (never a false verdict)."""
    def net(bias: float) -> nn.Module:
        m = nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 1), nn.ReLU())
        with torch.no_grad():
            m[0].weight.fill_(1)
            m[0].bias.fill_(0)
            m[2].weight.fill_(-1)
            m[2].bias.fill_(bias)
        return m

    a, b = net(-1.0), net(-2.0)
    xs = torch.linspace(-5, 5, 101)[:, None]
    assert a(xs).abs().max() == 0 and b(xs).abs().max() == 0
    verdict = certsym.equivalent(a, b)
    assert verdict.status in ("equivalent", "undecided")
    assert verdict.verdict.theta1.output_relu and verdict.verdict.theta2.output_relu


def test_opaque_modules_are_refused_and_deeper_ones_read():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(2, 3), nn.Linear(3, 1)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x)))

    with pytest.raises(InputError, match="cannot see its forward.*state_dict"):
        certsym.load(Net())
    deep = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    model = certsym.load(deep)
    assert model.is_deep and model.layered().widths == (2, 3, 3, 1)
    assert certsym.equivalent(deep, deep).status == "equivalent"
    with pytest.raises(InputError, match="Linear → ReLU → ReLU → Linear"):
        certsym.load(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.ReLU(), nn.Linear(3, 1)))
    with pytest.raises(InputError, match="keys= and layout= apply to state dicts"):
        certsym.load(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)), keys="0.weight,0.bias,2.weight,")


def test_state_dicts_are_read_as_relu_networks_and_say_so():
    a, b = _pair(nn.GELU)  # a GELU state dict has the keys of a ReLU one: it is read, and the reading is stated
    v = certsym.equivalent(a.state_dict(), b.state_dict())
    assert v and "read as a ReLU network (the arrays hold no activation)" in str(v)


def test_files_say_they_were_read_as_relu_networks(tmp_path, capsys):
    a, b = _pair(nn.GELU)
    torch.save(a.state_dict(), tmp_path / "a.pt")
    torch.save(b.state_dict(), tmp_path / "b.pt")
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.pt"), str(tmp_path / "b.pt"), "--cert", str(cert)]) == 0
    out = capsys.readouterr().out
    assert out.count("read as a ReLU network (the file holds no activation)") == 2, out
    records = [r["model"] for r in json.loads(cert.read_text())["inputs"]]
    assert [r["activation"] for r in records] == ["relu, assumed: the file holds no activation"] * 2
    assert check_main([str(cert), "--inputs", str(tmp_path / "a.pt"), str(tmp_path / "b.pt")]) == 0
    out = capsys.readouterr().out
    assert "VALID equivalent" in out and out.count("read as a ReLU network (the file holds no activation)") == 2


def test_a_certificate_without_the_reading_is_refused(tmp_path):
    a, b = _pair(nn.ReLU)
    torch.save(a.state_dict(), tmp_path / "a.pt")
    torch.save(b.state_dict(), tmp_path / "b.pt")
    cert = tmp_path / "c.json"
    assert main(["equiv", str(tmp_path / "a.pt"), str(tmp_path / "b.pt"), "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    inputs = [tmp_path / "a.pt", tmp_path / "b.pt"]
    assert certsym.check(doc, inputs)
    for change in ("gelu, the file holds it", None):
        bad = json.loads(json.dumps(doc))
        if change is None:
            del bad["inputs"][0]["model"]["activation"]
        else:
            bad["inputs"][0]["model"]["activation"] = change
        rep = certsym.check(bad, inputs)
        assert not rep.valid and "model" in rep.reason, rep.reason

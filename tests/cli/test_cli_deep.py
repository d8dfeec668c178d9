"""``certsym equiv`` and ``certsym check`` on deep networks, from every file format that holds them.

2- and 3-hidden-layer torch Sequential nets saved as .pt state dicts, .npz, .safetensors and the layered JSON:
EQUIVALENT (exit 0) for an H-disguised copy, NOT EQUIVALENT (exit 1) for a copy with one changed weight,
UNDECIDED (exit 3) for the output-ReLU zero functions; every certificate VALID under ``check --inputs``, with
the layers and the ReLU reading printed, and refused when bound to the wrong files.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from certsym.cli import main
from certsym.decide import phases
from certsym_check import check_certificate
from tests.decide.test_deep_distance_tree import _pair


def _nets(depth: int) -> tuple[nn.Module, nn.Module, nn.Module]:
    """θ, h·θ (each hidden layer permuted and rescaled by powers of two) and θ with one weight moved."""
    torch.manual_seed(depth)
    widths = [3] + [5 - i for i in range(depth)] + [2]
    mods: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        mods += [nn.Linear(a, b)] + ([nn.ReLU()] if i < depth else [])
    a = nn.Sequential(*mods)
    b, c = (nn.Sequential(*[type(m)(m.in_features, m.out_features) if isinstance(m, nn.Linear) else nn.ReLU()
                            for m in a]) for _ in range(2))
    b.load_state_dict(a.state_dict())
    c.load_state_dict(a.state_dict())
    with torch.no_grad():
        for layer in range(0, 2 * depth, 2):
            n = a[layer].out_features
            p = torch.randperm(n)
            s = 2.0 ** torch.randint(-2, 3, (n,)).float()
            b[layer].weight.copy_(b[layer].weight[p] * s[:, None])
            b[layer].bias.copy_(b[layer].bias[p] * s)
            b[layer + 2].weight.copy_(b[layer + 2].weight[:, p] / s[None, :])
        c[2 * depth].bias[0] += 0.25
    return a, b, c


def _save(module: nn.Module, path, fmt: str) -> str:
    sd = {k: v.detach().contiguous() for k, v in module.state_dict().items()}
    if fmt == "pt":
        torch.save(sd, path)
    elif fmt == "npz":
        np.savez(path, **{k: v.numpy() for k, v in sd.items()})
    elif fmt == "safetensors":
        save_file(sd, str(path))
    elif fmt == "onnx":
        width = next(m for m in module if isinstance(m, nn.Linear)).in_features
        torch.onnx.export(module, (torch.zeros(1, width),), str(path), dynamo=False, input_names=["x"],
                          output_names=["y"])
    else:
        layers = [m for m in module if isinstance(m, nn.Linear)]
        doc = {"layers": [{"W": [[str(float(x).as_integer_ratio()[0]) + "/" + str(float(x).as_integer_ratio()[1])
                                  for x in row] for row in m.weight.detach().tolist()],
                           "b": [f"{float(x).as_integer_ratio()[0]}/{float(x).as_integer_ratio()[1]}"
                                 for x in m.bias.detach().tolist()]} for m in layers]}
        path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("fmt", ["pt", "npz", "safetensors", "onnx", "json"])
def test_equiv_and_check_on_deep_files(tmp_path, capfd, depth: int, fmt: str) -> None:
    a, b, c = _nets(depth)
    pa, pb, pc = (_save(m, tmp_path / f"{n}.{fmt}", fmt) for m, n in ((a, "a"), (b, "b"), (c, "c")))
    cert = str(tmp_path / "ab.cert.json")
    assert main(["equiv", pa, pb, "--cert", cert]) == 0
    out = capfd.readouterr().out
    assert out.startswith("EQUIVALENT") and f"hidden layers 1..{depth - 1} aligned by H" in out
    if fmt == "onnx":
        assert "a ReLU network (the graph's Relu nodes)" in out
    elif fmt != "json":
        assert "read as a ReLU network (the file holds no activation)" in out
    assert main(["check", cert, "--inputs", pa, pb]) == 0
    valid = capfd.readouterr().out
    assert "VALID deep_equivalent" in valid and "equal to the embedded parameters" in valid
    if fmt == "onnx":
        assert "onnx graph (deep): 0.weight" in valid and f"{2 * depth}.weight" in valid
        assert "a ReLU network (the graph's Relu nodes)" in valid
    elif fmt != "json":
        assert f"{2 * depth}.weight" in valid and "read as a ReLU network" in valid
    assert main(["check", cert, "--inputs", pa, pc]) == 1  # bound to the wrong file
    capfd.readouterr()
    cert = str(tmp_path / "ac.cert.json")
    assert main(["equiv", pa, pc, "--cert", cert]) == 1
    assert capfd.readouterr().out.startswith("NOT EQUIVALENT")
    assert main(["check", cert, "--inputs", pa, pc]) == 0
    assert "VALID deep_not_equivalent" in capfd.readouterr().out


def test_undecided_exits_3_without_a_certificate(tmp_path, capfd, monkeypatch) -> None:
    """σ(−σ(x) − 1) against σ(−σ(x) − 2): both the zero function. Phase splitting proves it (a certificate that
    replays); with its budget spent, UNDECIDED, exit 3 and no certificate of either verdict."""
    for name, bias in (("z1", "-1"), ("z2", "-2")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"layers": [{"W": [["1"]], "b": ["0"]},
                                                                      {"W": [["-1"]], "b": [bias]}],
                                                           "output_relu": True}))
    cert = tmp_path / "z.cert.json"
    pair = [str(tmp_path / "z1.json"), str(tmp_path / "z2.json")]
    assert main(["equiv", *pair, "--cert", str(cert)]) == 0
    assert "by phase splitting on all of R^m" in capfd.readouterr().out
    assert main(["check", str(cert), "--inputs", *pair]) == 0
    cert.unlink()
    capfd.readouterr()
    monkeypatch.setattr(phases, "MAX_NODES", 0)
    code = main(["equiv", *pair, "--cert", str(cert), "--json"])
    captured = capfd.readouterr()
    assert code == 3 and json.loads(captured.out)["status"] == "undecided"
    assert "phase splitting stopped" in json.loads(captured.out)["reason"]
    assert "no certificate" in captured.err and not cert.exists()


def test_onnx_output_relu_is_read_and_bound(tmp_path, capfd) -> None:
    """An ONNX graph ending in Relu is a network with an output ReLU: decided so, and the checker binds it so."""
    a, b, c = (nn.Sequential(*m, nn.ReLU()) for m in _nets(2))
    pa, pb, pc = (_save(m, tmp_path / f"{n}.onnx", "onnx") for m, n in ((a, "a"), (b, "b"), (c, "c")))
    cert = str(tmp_path / "ab.cert.json")
    assert main(["equiv", pa, pb, "--cert", cert]) == 0
    assert capfd.readouterr().out.startswith("EQUIVALENT")
    assert json.loads((tmp_path / "ab.cert.json").read_text())["inputs"][0]["parameters"]["output_relu"] is True
    assert main(["check", cert, "--inputs", pa, pb]) == 0
    assert "a Relu after the last layer" in capfd.readouterr().out
    plain = _save(_nets(2)[0], tmp_path / "plain.onnx", "onnx")  # the same layers without the output Relu
    assert main(["check", cert, "--inputs", plain, pb]) == 1
    assert "differs from the certificate's" in capfd.readouterr().out  # its bytes are not the certified file's


@pytest.mark.parametrize("output_relu", [True, False])
def test_a_certificate_with_the_output_relu_flipped_is_refused_on_onnx_files(tmp_path, capfd, output_relu) -> None:
    """The bytes and weights of the files are the certified ones, only the embedded output ReLU is flipped in both
    networks: the proof may still replay, so the binding must read the graph's final Relu (or its absence)."""
    nets = _nets(2)[:2]
    a, b = ((nn.Sequential(*m, nn.ReLU()) for m in nets) if output_relu else nets)
    pa, pb = (_save(m, tmp_path / f"{n}.onnx", "onnx") for m, n in ((a, "a"), (b, "b")))
    cert = tmp_path / "ab.cert.json"
    assert main(["equiv", pa, pb, "--cert", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    for entry in doc["inputs"]:
        entry["parameters"]["output_relu"] = not output_relu
    cert.write_text(json.dumps(doc))
    capfd.readouterr()
    assert main(["check", str(cert), "--inputs", pa, pb]) == 1
    out = capfd.readouterr().out
    assert ("ends in a Relu" if output_relu else "does not end in a Relu") in out, out


def test_onnx_zero_functions_are_never_not_equivalent(tmp_path, capfd) -> None:
    """The issue's scenario as ONNX files: σ(−σ(x) − 1) and σ(−σ(x) − 2) are both 0; never NOT EQUIVALENT."""
    paths = []
    for bias in (-1.0, -2.0):
        net = nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.Linear(1, 1), nn.ReLU())
        with torch.no_grad():
            net[0].weight.fill_(1.0)
            net[0].bias.fill_(0.0)
            net[2].weight.fill_(-1.0)
            net[2].bias.fill_(bias)
        paths.append(_save(net, tmp_path / f"z{int(-bias)}.onnx", "onnx"))
    assert main(["equiv", *paths]) in (0, 3)
    assert not capfd.readouterr().out.startswith("NOT EQUIVALENT")


@pytest.mark.parametrize("fmt", ["pt", "safetensors", "npz"])
def test_keys_name_one_weight_and_bias_per_layer(tmp_path, capfd, fmt: str) -> None:
    """A deep state dict under other names (and with a tensor that is not a layer) is read by --keys W1,b1,…."""
    a, b, _ = _nets(3)
    paths = []
    for module, name in ((a, "a"), (b, "b")):
        sd = {f"fc{i // 2 + 1}.{k.split('.')[1]}": v.detach().contiguous() for k, v in module.state_dict().items()
              for i in [int(k.split(".")[0])]}
        sd["step"] = torch.zeros(1)
        path = tmp_path / f"{name}.{fmt}"
        if fmt == "pt":
            torch.save(sd, path)
        elif fmt == "npz":
            np.savez(path, **{k: v.numpy() for k, v in sd.items()})
        else:
            save_file(sd, str(path))
        paths.append(str(path))
    keys = ",".join(f"fc{i}.weight,fc{i}.bias" for i in range(1, 5))
    assert main(["equiv", *paths]) == 2  # no default choice in these names
    assert "--keys" in capfd.readouterr().err
    cert = str(tmp_path / "ab.cert.json")
    assert main(["equiv", *paths, "--keys", keys, "--cert", cert]) == 0
    assert capfd.readouterr().out.startswith("EQUIVALENT")
    assert main(["check", cert, "--inputs", *paths]) == 0
    valid = capfd.readouterr().out
    assert f"{'torch' if fmt == 'pt' else fmt} keys (deep)" in valid and "fc4.weight 2x3" in valid
    assert main(["equiv", *paths, "--keys", "fc1.weight,fc1.bias,fc2.weight"]) == 2
    assert "a weight and a bias per layer" in capfd.readouterr().err
    assert main(["stabilizer", paths[0], "--keys", keys]) == 2
    assert "certsym equiv decides deep ones" in capfd.readouterr().err
    assert main(["minimal", paths[0], "--keys", keys]) == 0  # minimal reads any depth
    assert len(json.loads(capfd.readouterr().out)["layers"]) == 4


REDUCIBLE = {"layers": [{"W": [["1", "2"], ["2", "4"], ["0", "0"], ["-1", "1"]], "b": ["1", "2", "3", "0"]},
                        {"W": [["1", "1", "5", "0"], ["0", "0", "1", "2"], ["-1", "0", "0", "-1"]],
                         "b": ["0", "-1", "-2"]},
                        {"W": [["1", "2", "3"]], "b": ["0"]}]}  # a constant neuron, a merge, a dead neuron


def _exact_forward(doc: dict, x: list) -> list:
    """ρ(x) of a layered parameter file, in Fractions (an oracle sharing no code with certsym)."""
    h = list(x)
    for ell, layer in enumerate(doc["layers"]):
        h = [sum((Fraction(w) * t for w, t in zip(row, h, strict=True)), Fraction(bias))
             for row, bias in zip(layer["W"], layer["b"], strict=True)]
        if ell < len(doc["layers"]) - 1 or doc.get("output_relu"):
            h = [max(t, Fraction(0)) for t in h]
    return h


def test_minimal_on_a_deep_network_writes_the_reduced_parameter_with_a_certificate(tmp_path, capfd) -> None:
    src = tmp_path / "theta.json"
    src.write_text(json.dumps(REDUCIBLE))
    out, cert = tmp_path / "min.json", tmp_path / "min.cert.json"
    assert main(["minimal", str(src), "-o", str(out), "--cert", str(cert), "--trace"]) == 0
    captured = capfd.readouterr()
    assert "D2 constant neuron" in captured.out and "D3 merge neuron 1 of layer 1 into 0" in captured.out
    assert "D4 dead on the orthant" in captured.out and "not complete" in captured.err
    reduced = json.loads(out.read_text())
    assert [len(layer["b"]) for layer in reduced["layers"]] == [2, 2, 1]
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = [Fraction(int(v), 4) for v in rng.integers(-20, 20, 2)]
        assert _exact_forward(reduced, x) == _exact_forward(REDUCIBLE, x)
    assert main(["check", str(cert), "--inputs", str(src), str(out)]) == 0
    assert "VALID deep_equivalent" in capfd.readouterr().out
    assert main(["minimal", str(out), "--trace"]) == 0  # a fixed point, on standard output
    captured = capfd.readouterr()
    assert "already reduced" in captured.err and json.loads(captured.out) == reduced


def test_eval_on_a_deep_network_is_exact(tmp_path, capfd) -> None:
    src = tmp_path / "theta.json"
    src.write_text(json.dumps(REDUCIBLE))
    assert main(["eval", str(src), "--at", "1/2,-3"]) == 0
    assert [Fraction(line) for line in capfd.readouterr().out.split()] == _exact_forward(REDUCIBLE, [Fraction(1, 2),
                                                                                                   Fraction(-3)])
    assert main(["eval", str(src), "--at", "1"]) == 2  # m = 2
    assert "m = 2" in capfd.readouterr().err


@pytest.mark.parametrize("fmt", ["pt", "onnx"])
def test_canon_of_deep_networks_is_an_invariant_of_the_h_orbit(tmp_path, capfd, fmt: str) -> None:
    a, b, c = _nets(3)
    hashes = []
    for module, name in ((a, "a"), (b, "b"), (c, "c")):
        assert main(["canon", _save(module, tmp_path / f"{name}.{fmt}", fmt), "--json"]) == 0
        doc = json.loads(capfd.readouterr().out)
        assert doc["form"] == "layerwise" and len(doc["layers"]) == 4
        hashes.append(doc["hash"])
    assert hashes[0] == hashes[1] != hashes[2]


@pytest.mark.parametrize("fmt", ["pt", "onnx"])
def test_distance_on_deep_files_with_a_certificate(tmp_path, capfd, fmt: str) -> None:
    """A copy with one output bias moved by 1/4: L = U = 1/4 through the layer alignment; the disguised copy: 0."""
    a, b, c = _nets(2)
    pa, pb, pc = (_save(m, tmp_path / f"{n}.{fmt}", fmt) for m, n in ((a, "a"), (b, "b"), (c, "c")))
    cert = str(tmp_path / "ac.cert.json")
    assert main(["distance", pa, pc, "--cert", cert, "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["deep"] and out["aligned"] and Fraction(out["upper"]) == Fraction(out["lower"]) == Fraction(1, 4)
    assert main(["check", cert, "--inputs", pa, pc]) == 0
    assert "VALID deep_distance_bound" in capfd.readouterr().out
    assert main(["distance", pa, pb, "--cert", cert]) == 0
    assert capfd.readouterr().out.startswith("DISTANCE 0")
    assert main(["check", cert, "--inputs", pa, pb]) == 0
    assert "block lemma" in capfd.readouterr().out


def test_a_region_budget_bounds_deep_searches_alone(tmp_path, capfd) -> None:
    """--regions bounds the deep branch and bound too; given alone it sets no time limit, so the answer and the
    certificate depend only on the files (two runs give the same certificate)."""
    a, _, c = _nets(2)
    pa, pc = (_save(m, tmp_path / f"{n}.pt", "pt") for m, n in ((a, "a"), (c, "c")))
    certs = []
    for run in range(2):
        cert = tmp_path / f"r{run}.json"
        main(["distance", pa, pc, "--regions", "5", "--target", "1", "--box=-1,1", "--cert", str(cert), "--json"])
        doc = json.loads(capfd.readouterr().out)
        assert doc["regions"] <= 5 and doc["stopped"] in ("the region budget", "the target ratio", "U = 0"), doc
        certs.append(json.loads(cert.read_text()))
    assert certs[0] == certs[1]
    assert main(["distance", pa, pc, "--regions", "5", "--top1", "--box=-1,1", "--json"]) in (0, 1, 3)
    assert json.loads(capfd.readouterr().out)["regions"] <= 5


def test_epsilon_on_deep_files(tmp_path, capfd) -> None:
    """L = U = 1/4 (one output bias moved): ε = 1/8 is VIOLATED (exit 1), ε = 1/4 VERIFIED (exit 0); the verdict
    replays, and a tampered verdict is refused. --top1 answers for the files too, its certificate replayed."""
    a, _, c = _nets(2)
    pa, pc = (_save(m, tmp_path / f"{n}.pt", "pt") for m, n in ((a, "a"), (c, "c")))
    cert = tmp_path / "e.json"
    for eps, code, word in (("1/8", 1, "VIOLATED"), ("1/4", 0, "VERIFIED")):
        assert main(["distance", pa, pc, "--epsilon", eps, "--cert", str(cert)]) == code
        assert capfd.readouterr().out.startswith(word)
        assert main(["check", str(cert), "--inputs", pa, pc]) == 0
        assert word in capfd.readouterr().out
    doc = json.loads(cert.read_text())
    doc["proof"]["verdict"] = "violated"
    assert not check_certificate(doc).valid
    top = tmp_path / "top.json"
    code = main(["distance", pa, pc, "--top1", "--seconds", "3600", "--cert", str(top)])
    out = capfd.readouterr().out
    assert (code, out.split()[0]) in ((0, "AGREE"), (1, "DIFFER"))
    assert main(["check", str(top), "--inputs", pa, pc]) == 0
    assert "VALID deep_top1_" in capfd.readouterr().out
    assert main(["distance", pa, pc, "--top1", "--epsilon", "1"]) == 2
    assert "different questions" in capfd.readouterr().err


def test_undecided_gives_the_certified_distance_on_the_unit_box(tmp_path, capfd, monkeypatch) -> None:
    """θ1 = θ2 plus a neuron σ(σ(x) − σ(x + 1)), zero on the image of layer 1 only: with phase splitting's budget
    spent, UNDECIDED, with [L, U]."""
    monkeypatch.setattr(phases, "MAX_NODES", 0)
    one = {"W": [["1"], ["1"]], "b": ["0", "1"]}
    (tmp_path / "u1.json").write_text(json.dumps({"layers": [one, {"W": [["1", "0"], ["0", "1"], ["1", "-1"]],
                                                                   "b": ["0", "0", "0"]},
                                                             {"W": [["1", "1", "1"]], "b": ["0"]}]}))
    (tmp_path / "u2.json").write_text(json.dumps({"layers": [one, {"W": [["1", "0"], ["0", "1"]], "b": ["0", "0"]},
                                                             {"W": [["1", "1"]], "b": ["0"]}]}))
    assert main(["equiv", str(tmp_path / "u1.json"), str(tmp_path / "u2.json"), "--json"]) == 3
    out = json.loads(capfd.readouterr().out)
    assert out["status"] == "undecided" and Fraction(out["distance"]["lower"]) == 0
    assert Fraction(out["distance"]["upper"]) >= 0
    assert main(["equiv", str(tmp_path / "u1.json"), str(tmp_path / "u2.json")]) == 3
    assert "certified distance on [0, 1]^m" in capfd.readouterr().out


def test_shallow_commands_refuse_deep_files_in_one_line(tmp_path, capfd) -> None:
    a, _, _ = _nets(2)
    path = _save(a, tmp_path / "a.pt", "pt")
    for command in (["stabilizer", path], ["identifiable", path], ["affine", path], ["fibre", path]):
        assert main(command) == 2
        err = capfd.readouterr().err
        assert err.count("\n") == 1 and "hidden" in err and "Traceback" not in err


def test_deep_epsilon_is_verified_by_halvings_of_the_box(tmp_path, capfd) -> None:
    """ε between the tree's U and the one-region bound: VERIFIED only after halvings (exit 0), the certificate
    VALID under `certsym check`; ε below the witness: VIOLATED (exit 1), the witness above ε exactly."""
    paths = []
    for name, t in zip("ab", _pair(), strict=True):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"layers": [{"W": [[str(w) for w in row] for row in layer.W],
                                                "b": [str(x) for x in layer.b]} for layer in t.layers]}))
        paths.append(str(path))
    box = ["--box", "-1,1"]
    # a budget the search never reaches (it stops at the target ratio, by counts): no race with the clock
    assert main(["distance", *paths, *box, "--seconds", "3600", "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["leaves"] > 1 and out["regions"] == 2 * out["leaves"] - 1
    one, tree = Fraction(out["upper_plain"]), Fraction(out["upper"])
    if out["upper_aligned"] is not None:
        one = min(one, Fraction(out["upper_aligned"]))
    assert tree < one
    cert = tmp_path / "eps.json"
    epsilon = (one + tree) / 2
    assert main(["distance", *paths, *box, "--epsilon", str(epsilon), "--seconds", "3600", "--cert", str(cert)]) == 0
    text = capfd.readouterr().out
    assert text.startswith("VERIFIED") and "stopped at U ≤ ε" in text, text
    assert main(["check", str(cert), "--inputs", *paths]) == 0
    assert "VERIFIED" in capfd.readouterr().out
    low = Fraction(out["lower"]) / 2
    assert main(["distance", *paths, *box, "--epsilon", str(low), "--json"]) == 1
    out = json.loads(capfd.readouterr().out)
    assert out["verdict"] == "violated" and Fraction(out["lower"]) > low

"""The Python API on deep networks: ``certsym.minimal`` (the parameter after D1–D4) and ``certsym.distance``."""

from __future__ import annotations

import pytest
import torch
from flint import fmpq

import certsym
from certsym.errors import InputError


def _module(seed: int, output_relu: bool = False) -> torch.nn.Module:
    torch.manual_seed(seed)
    mods = [torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)]
    return torch.nn.Sequential(*mods, *([torch.nn.ReLU()] if output_relu else []))


def test_minimal_of_a_deep_module_keeps_its_function() -> None:
    net = _module(0)
    with torch.no_grad():
        net[2].weight[:, 1] = 0  # neuron 1 of layer 1 feeds nothing: D1 deletes it
    reduced = certsym.minimal(net)
    assert reduced.widths == (3, 3, 4, 2)
    x = [fmpq(1, 3), fmpq(-2), fmpq(5, 4)]
    full = certsym.load(net).layered()
    assert reduced(x) == full(x)


def test_distance_of_deep_modules() -> None:
    a, b = _module(1), _module(1)
    with torch.no_grad():
        b[4].bias[0] += 0.5
    d = certsym.distance(a, b, box=[("-1", "1")] * 3)
    assert d.lower == d.upper == fmpq(1, 2)
    assert certsym.distance(a, a).upper == 0
    assert certsym.distance(a, b, box=[(0.5, 1)] * 3).box[0] == (fmpq(1, 2), 1)  # a float is the dyadic it is
    with pytest.raises(InputError, match="exact number"):
        certsym.distance(a, b, box=[("a half", 1)] * 3)


def test_a_region_budget_bounds_every_depth() -> None:
    """regions= bounds the search (alone, without a time limit: the same result twice), deep networks' too."""
    torch.manual_seed(3)
    shallow = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    copy = [p.detach().numpy().astype("float16") for p in shallow.parameters()]
    box = [("-1", "1")] * 3
    runs = [certsym.distance(shallow, copy, box=box, regions=5, target=1) for _ in range(2)]
    assert runs[0].regions <= 5 and (runs[0].lower, runs[0].upper) == (runs[1].lower, runs[1].upper)
    assert certsym.top1(shallow, copy, box=box, regions=3).regions <= 3  # README's certsym.top1
    with pytest.raises(InputError, match="at least 1"):
        certsym.distance(shallow, copy, regions=0)
    deep = [certsym.distance(_module(1), _module(2), regions=5, target=1) for _ in range(2)]
    assert deep[0].regions <= 5 and (deep[0].lower, deep[0].upper) == (deep[1].lower, deep[1].upper)
    assert certsym.top1(_module(1), _module(2), regions=3).regions <= 3


def test_the_canonical_form_of_a_deep_network_has_a_hash() -> None:
    """canon(deep).hash: equal for a network and its copy with hidden units permuted and scaled by powers of two
    (one H-orbit), different for a network with a weight changed."""
    torch.manual_seed(5)

    def build() -> torch.nn.Sequential:
        return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4), torch.nn.ReLU(),
                                   torch.nn.Linear(4, 2))

    net, moved, changed = build(), build(), build()
    perm, scale = [2, 0, 3, 1], torch.tensor([2.0, 0.5, 4.0, 1.0])
    with torch.no_grad():
        moved[0].weight.copy_(net[0].weight[perm] * scale[:, None])
        moved[0].bias.copy_(net[0].bias[perm] * scale)
        moved[2].weight.copy_(net[2].weight[:, perm] / scale)
        moved[2].bias.copy_(net[2].bias)
        moved[4].load_state_dict(net[4].state_dict())
        changed.load_state_dict(net.state_dict())
        changed[4].weight[0, 0] += 1
    h = certsym.canon(net).hash
    assert len(h) == 64 and certsym.canon(moved).hash == h and certsym.canon(changed).hash != h


def _chain(b2: list[float], c: float) -> torch.nn.Module:
    """x ↦ relu(x) + b2[0] − relu(−x) + … through an identity layer: relu(relu(x) + 1) = relu(x) + 1 always."""
    net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2), torch.nn.ReLU(),
                              torch.nn.Linear(2, 1))
    with torch.no_grad():
        net[0].weight[:] = torch.tensor([[1.0], [-1.0]])
        net[0].bias.zero_()
        net[2].weight[:] = torch.eye(2)
        net[2].bias[:] = torch.tensor(b2)
        net[4].weight[:] = torch.tensor([[1.0, -1.0]])
        net[4].bias[:] = c
    return net


def test_seconds_bounds_the_deep_decision() -> None:
    """equivalent(..., seconds=) (the CLI's equiv --seconds): a pair equal only on the image of layer 1 needs the
    phase splitting, which a budget of 0 s stops at once (UNDECIDED, with the reason); without one it is decided."""
    a, b = _chain([1.0, 0.0], 0.0), _chain([0.0, 0.0], 1.0)
    stopped = certsym.equivalent(a, b, seconds=0)
    assert stopped.status == "undecided" and "time budget (0 s) ran out" in stopped.verdict.reason
    decided = certsym.equivalent(a, b)
    assert decided.status == "equivalent" and certsym.check(decided.certificate())

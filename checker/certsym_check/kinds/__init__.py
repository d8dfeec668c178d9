"""The registry of certificate kinds: each kind's number of inputs and where its replay is, one module per family
of kinds, imported only when a certificate of that kind is replayed (``replay_of``), so that what a replay loads is
what an auditor reads to trust it (checker/TRUST.md). Every replay has one signature, ``replay(F, nets, proof,
rep)``: the field, the input networks (bound by the envelope), the proof object and the Report to fill; it returns
nothing and raises ``Reject`` at the first step it cannot verify. ``LAYERED`` are the kinds whose inputs are deep
networks (``kinds.deep.DeepNet``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

Replay = Callable[..., None]

# kind -> (number of inputs, "module:function" of its replay, the module in this package); −n: 1 to n inputs
KINDS: dict[str, tuple[int, str | Replay]] = {
    "equivalent": (2, "equivalence:check_equivalent"),
    "not_equivalent": (2, "equivalence:check_not_equivalent"),
    "minimal_form": (1, "minimal_form:check_minimal_form"),
    "stabilizer": (1, "stabilizer:check_stabilizer"),
    "affine": (1, "affine:check_affine"),
    "not_affine": (1, "affine:check_not_affine"),
    "identifiable": (1, "identifiable:check_identifiable"),
    "not_identifiable": (1, "not_identifiable:check_not_identifiable"),
    "distance_bound": (2, "distance:check_distance"),
    "critical_point": (0, "landscape:check_critical_point"),
    "hessian_inertia": (0, "landscape:check_hessian_inertia"),
    "landscape_threshold": (0, "threshold:check_threshold"),
    "added_neuron": (0, "added_neuron:check_added_neuron"),
    "wide_critical_point": (0, "wide:check_wide"),
    "deep_equivalent": (2, "deep:check_deep_equivalent"),
    "deep_not_equivalent": (2, "deep:check_deep_not_equivalent"),
    "deep_distance_bound": (2, "deep_distance:check_deep_distance"),
    "deep_top1_agreement": (2, "deep_top1:check_deep_top1_agreement"),
    "deep_top1_disagreement": (2, "deep_top1:check_deep_top1_disagreement"),
    "top1_agreement": (2, "top1:check_top1_agreement"),
    "top1_disagreement": (2, "top1:check_top1_disagreement"),
    "vnnlib_unsat": (2, "vnnlib:check_vnnlib_unsat"),
    "vnnlib_sat": (-2, "vnnlib:check_vnnlib_sat"),
}
LAYERED = {"deep_equivalent", "deep_not_equivalent", "deep_distance_bound", "deep_top1_agreement",
           "deep_top1_disagreement", "vnnlib_unsat", "vnnlib_sat"}
# the kinds about a VNN-LIB property: its text is in proof.spec, and its file, when given, comes first
SPEC_KINDS = {"vnnlib_unsat", "vnnlib_sat"}


def replay_of(kind: str) -> Replay:
    """The replay of a registered kind, its module imported now (a callable in ``KINDS`` is itself the replay)."""
    target = KINDS[kind][1]
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

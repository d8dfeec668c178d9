"""Certificates: the envelope (``envelope``) and one writer per family of statements. Each writer turns a
decision's evidence into the JSON document that ``certsym_check`` replays (certificates/FORMAT.md), in time linear
in its size."""

from importlib import import_module

# each name's module, imported on first use: a command loads only the writers it needs (start-up time)
_WHERE = {
    "CLAIMS": "envelope", "DISTANCE_DENOMINATOR_BITS": "distance", "FORMAT": "envelope", "InputRecord": "envelope",
    "VERSION": "envelope", "added_neuron_certificates": "landscape", "affine_certificate": "equivalence",
    "critical_point_certificate": "landscape", "deep_certificate": "deep", "deep_distance_certificate": "deep",
    "deep_top1_certificate": "deep", "distance_certificate": "distance", "equivalence_certificate": "equivalence",
    "equivalence_proof": "equivalence", "fast_equivalence_certificate": "equivalence", "field_json": "envelope",
    "hessian_inertia_certificate": "landscape", "identifiability_certificate": "identifiability",
    "layered_json": "deep", "minimal_form_certificate": "equivalence", "network_to_json": "envelope",
    "number_json": "envelope", "parameters_json": "envelope", "replay_failure": "replay", "replay_share": "replay",
    "stabilizer_certificate": "stabilizer", "steps_json": "envelope", "threshold_certificate": "landscape",
    "top1_certificate": "top1", "wide_critical_point_certificate": "landscape",
}


def __getattr__(name: str):
    """The writer ``name``, its module imported the first time it is asked for (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'certsym.certify' has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(f"certsym.certify.{module}"), name)
    return value


__all__ = ["CLAIMS", "DISTANCE_DENOMINATOR_BITS", "FORMAT", "VERSION", "InputRecord", "added_neuron_certificates",
           "affine_certificate", "critical_point_certificate", "deep_certificate", "deep_distance_certificate",
           "deep_top1_certificate",
           "distance_certificate",
           "equivalence_certificate", "equivalence_proof", "fast_equivalence_certificate", "field_json",
           "hessian_inertia_certificate", "identifiability_certificate", "layered_json",
           "minimal_form_certificate", "network_to_json", "number_json", "parameters_json", "replay_failure",
           "replay_share",
           "stabilizer_certificate", "steps_json", "threshold_certificate", "top1_certificate",
           "wide_critical_point_certificate"]

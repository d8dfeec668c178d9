"""Certificates: the envelope (``envelope``) and one writer per family of statements. Each writer turns a
decision's evidence into the JSON document that ``certsym_check`` replays (certificates/FORMAT.md), in time linear
in its size."""

from certsym.certify.deep import deep_certificate, deep_distance_certificate, deep_top1_certificate, layered_json
from certsym.certify.distance import DISTANCE_DENOMINATOR_BITS, distance_certificate
from certsym.certify.envelope import (
                                      CLAIMS,
                                      FORMAT,
                                      VERSION,
                                      InputRecord,
                                      field_json,
                                      network_to_json,
                                      number_json,
                                      parameters_json,
                                      steps_json,
)
from certsym.certify.equivalence import (
                                      affine_certificate,
                                      equivalence_certificate,
                                      equivalence_proof,
                                      fast_equivalence_certificate,
                                      minimal_form_certificate,
)
from certsym.certify.identifiability import identifiability_certificate
from certsym.certify.landscape import (
                                      added_neuron_certificates,
                                      critical_point_certificate,
                                      hessian_inertia_certificate,
                                      threshold_certificate,
                                      wide_critical_point_certificate,
)
from certsym.certify.replay import replay_failure, replay_share
from certsym.certify.stabilizer import stabilizer_certificate
from certsym.certify.top1 import top1_certificate

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

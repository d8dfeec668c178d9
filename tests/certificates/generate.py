"""Regenerate the checker corpora: ``python tests/certificates/generate.py``.

valid/    certificates certsym produces for the MATH.md examples (and broken variants of them).
invalid/  the same certificates, each broken on purpose by the attack its file is named for.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from certsym.certify import (
    InputRecord,
    affine_certificate,
    equivalence_certificate,
    identifiability_certificate,
    minimal_form_certificate,
    stabilizer_certificate,
)
from certsym.core.reduction import reduce
from certsym.decide.affine import decide_affine
from certsym.decide.equivalence import decide
from certsym.decide.identifiability import decide_identifiable
from certsym.decide.stabilizer import stabilizer
from certsym.io import load_networks
from certsym.reproduce.examples import EXAMPLES

HERE = Path(__file__).parent


def _load(dicts: list[dict]):
    texts = [json.dumps(d) for d in dicts]
    nets, _ = load_networks([f"p{i}.json" for i in range(len(texts))], texts=texts)
    records = [InputRecord(f"p{i}.json", hashlib.sha256(t.encode()).hexdigest()) for i, t in enumerate(texts)]
    return nets, records


def changed(d: dict, key: str, index: int, value) -> dict:
    d = copy.deepcopy(d)
    d[key][index] = value
    return d


def valid_certificates() -> dict[str, dict]:
    out = {}
    for name, pair in EXAMPLES.items():
        short = name.split()[0]
        (t1, t2), records = _load(pair)
        out[f"equivalent_{short}"] = equivalence_certificate(decide(t1, t2), (records[0], records[1]))
        (t1,), (rec,) = _load(pair[:1])
        out[f"minimal_{short}"] = minimal_form_certificate(reduce(t1), rec)
    broken = {"E5": changed(EXAMPLES["E5"][1], "c", 0, 2), "E6": changed(EXAMPLES["E6"][1], "b", 2, -2),
              "S1": changed(EXAMPLES["S1 (over Q(sqrt 2))"][1], "b", 1, "-sqrt(2) + 1/1000")}
    for short, other in broken.items():
        first = next(pair[0] for name, pair in EXAMPLES.items() if name.startswith(short))
        (t1, t2), records = _load([first, other])
        out[f"not_equivalent_{short}"] = equivalence_certificate(decide(t1, t2), (records[0], records[1]))
    # θ1 = 3σ(x), θ2 = σ(x) + 2σ(−x) + 2σ(x+1) − 2σ(−x−1) − 2: a cross merge and two pairs
    (t1, t2), records = _load([
        {"M": [[3]], "A": [[1]], "b": [0], "c": [0]},
        {"M": [[1, 2, 2, -2]], "A": [[1], [-1], [1], [-1]], "b": [0, 0, 1, -1], "c": [-2]},
    ])
    out["equivalent_cross_merge"] = equivalence_certificate(decide(t1, t2), (records[0], records[1]))
    for short in ("E1", "E2", "E3a", "E5", "E6"):
        (t1,), (rec,) = _load(EXAMPLES[short][:1])
        verdict = decide_identifiable(t1)
        out[f"{'identifiable' if verdict.identifiable else 'not_identifiable'}_{short}"] = \
            identifiability_certificate(verdict, rec)
    for short in ("E2", "E3a"):
        (t1,), (rec,) = _load(EXAMPLES[short][:1])
        out[f"stabilizer_{short}"] = stabilizer_certificate(t1, (stabilizer(t1), stabilizer(t1, True)), rec)
    for short, which in (("E4", 1), ("E5", 0)):
        (t1,), (rec,) = _load(EXAMPLES[short][which:which + 1])
        verdict = decide_affine(t1)
        out[f"{'affine' if verdict.affine else 'not_affine'}_{short}"] = affine_certificate(verdict, rec)
    return out


def _attack(base: str, edit: Callable[[dict], None]) -> tuple[str, Callable[[dict], None]]:
    return base, edit


def _set(path: list, value) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def _flip(path: list) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        s = node[path[-1]]
        node[path[-1]] = s[1:] if s.startswith("-") else "-" + s
    return edit


def _swap_inputs(doc: dict) -> None:
    doc["inputs"].reverse()


def _swap_matches(doc: dict) -> None:
    m = doc["proof"]["matching"]
    m[0]["theta2"], m[1]["theta2"] = m[1]["theta2"], m[0]["theta2"]


def _drop_pair(doc: dict) -> None:
    doc["proof"]["pairs"].pop()


def _duplicate_pair(doc: dict) -> None:
    doc["proof"]["pairs"].append(copy.deepcopy(doc["proof"]["pairs"][0]))


def _nudge_witness(doc: dict) -> None:
    doc["proof"]["witness"][0] = doc["proof"]["witness"][0] + "1"


def _unknown_step(doc: dict) -> None:
    doc["proof"]["reduction"][0].append({"step": "teleport", "neuron": 0, "statement": "magic"})


def _extra_neuron(doc: dict) -> None:
    p = doc["inputs"][0]["parameters"]
    p["M"][0].append("1")
    p["A"].append(["5"])
    p["b"].append("1")
    p["shape"]["n"] += 1


ATTACKS = {
    "sign_flip": _attack("equivalent_E5", _flip(["proof", "pairs", 0, "linear", 0, 0])),
    "sign_flip_input": _attack("equivalent_E6", _flip(["inputs", 1, "parameters", "c", 0])),
    "wrong_permutation": _attack("equivalent_E1", _swap_matches),
    "zero_scaling": _attack("equivalent_E1", _set(["proof", "matching", 0, "scale"], "0")),
    "negative_scaling": _attack("equivalent_E1", _set(["proof", "matching", 0, "scale"], "-1/2")),
    "dropped_pair": _attack("equivalent_E6", _drop_pair),
    "duplicated_pair": _attack("equivalent_E6", _duplicate_pair),
    "nudged_witness": _attack("not_equivalent_E6", _nudge_witness),
    "swapped_input": _attack("equivalent_E3b", _swap_inputs),
    "wrong_version": _attack("equivalent_E1", _set(["version"], 2)),
    "unknown_step": _attack("equivalent_E3a", _unknown_step),
    "extra_neuron": _attack("equivalent_E4", _extra_neuron),
    "unknown_field": _attack("equivalent_E2", _set(["proof", "comment"], "trust me")),
    "wrong_claim": _attack("not_equivalent_E5", _set(["claim"], "rho(theta1) = rho(theta2)")),
    "nudged_merge": _attack("equivalent_cross_merge", _set(["proof", "merges", 0, "lambda"], "2")),
    "bad_minimal": _attack("minimal_E3b", _set(["proof", "minimal", "c", 0], "9")),
    "wrong_generator_interval": _attack("equivalent_S1", _set(["field", "interval"], ["-3", "-2"])),
    "stabilizer_missing_class_member": _attack("stabilizer_E2", _set(["proof", "theta", "classes"], [[0]])),
    "stabilizer_wrong_scale": _attack("stabilizer_E2", _set(["proof", "rows", "generators", 0, "scale"], ["2", "1/2"])),
    "stabilizer_wrong_order": _attack("stabilizer_E2", _set(["proof", "theta", "finite_order"], "1")),
    "identifiable_forged_kernel": _attack("identifiable_E1", _set(["proof", "zero_factor", "R"], [["-1"]])),
    "identifiable_zero_weight": _attack("identifiable_E1", _set(["inputs", 0, "parameters", "M", 0, 0], "0")),
    "not_identifiable_same_orbit": _attack("not_identifiable_E5", lambda d: d["proof"].__setitem__(
        "counterexample", copy.deepcopy(d["inputs"][0]["parameters"]))),
    "not_identifiable_wrong_counterexample": _attack("not_identifiable_E5", _set(
        ["proof", "counterexample", "c", 0], "2")),
    "affine_wrong_map": _attack("affine_E4", _set(["proof", "constant", 0], "1")),
    "affine_dropped_pair": _attack("affine_E4", _set(["proof", "pairs"], [])),
    "not_affine_collapsed_points": _attack("not_affine_E5", lambda d: d["proof"].__setitem__(
        "y", copy.deepcopy(d["proof"]["x"]))),
}


def write(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    valid = valid_certificates()
    for name, doc in valid.items():
        write(HERE / "valid" / f"{name}.json", doc)
    for attack, (base, edit) in ATTACKS.items():
        doc = copy.deepcopy(valid[base])
        edit(doc)
        write(HERE / "invalid" / f"{attack}.json", doc)


if __name__ == "__main__":
    main()

"""Mutation testing of the independent checker ``certsym_check.check_certificate``.

Valid certificates (decide + equivalence_certificate) are altered one number or one index at a time;
the checker must reject every mutant. Where a mutant is legitimately still a valid certificate (the
number does not take part in any checked identity, e.g. the row of a dead neuron), the test says so
and verifies that the mutant's claim is TRUE. A hypothesis fuzz test feeds the checker arbitrary JSON
and valid certificates with random subtrees replaced: it must never raise, and must reject.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from fractions import Fraction
from functools import cache
from typing import Any

import pytest
import sympy
from flint import fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from certsym.certify import InputRecord, equivalence_certificate
from certsym.core.network import Network
from certsym.decide.equivalence import decide
from certsym.numbers import QQ, parse_number, to_field
from certsym.reproduce.worked_examples import load_pair
from certsym_check import check_certificate

RECORDS = (InputRecord("theta1.json", "0" * 64), InputRecord("theta2.json", "1" * 64))
RATIONAL = re.compile(r"-?[0-9]+(?:/[0-9]+)?")
INDEX_KEYS = {"neuron", "into", "from", "theta1", "theta2", "i", "j"}
Path = tuple


# --------------------------------------------------------------------------------------------
# The valid certificates
# --------------------------------------------------------------------------------------------


def q(x: Fraction | int | str) -> fmpq:
    x = Fraction(x)
    return fmpq(x.numerator, x.denominator)


def net(M, A, b, c, field=QQ, m: int | None = None) -> Network:
    def conv(x):
        return x if not isinstance(x, int | str | Fraction) else field(q(x))

    return Network.build([[conv(x) for x in row] for row in M], [[conv(x) for x in row] for row in A],
                         [conv(x) for x in b], [conv(x) for x in c], field, m)


def brief_merge_pair() -> tuple[Network, Network]:
    """3σ(x) = σ(x) + 2σ(−x) + 2σ(x + 1) − 2σ(−x − 1) − 2 (σ(x) + 2σ(−x) = 3σ(x) − 2x)."""
    return (net([[3]], [[1]], [0], [0]),
            net([[1, 2, 2, -2]], [[1], [-1], [1], [-1]], [0, 0, 1, -1], [-2]))


def disguised_pair() -> tuple[Network, Network]:
    """Matches AND a cross merge: the pair above plus 4σ(2x − 2) = 8σ(x − 1) (H_1 with scale 1/2)."""
    return (net([[3, 4]], [[1], [2]], [0, -2], [0]),
            net([[1, 2, 8, 2, -2]], [[1], [-1], [1], [1], [-1]], [0, 0, -1, 1, -1], [-2]))


def disguised_pair_m2_k2() -> tuple[Network, Network]:
    """m = 2, k = 2: a partial flip of neuron 0 (t = (2, 1)) with its linear part t·x1 realized by a pair
    on the parallel hyperplane x1 + 1 = 0 (scaled by 2 and 1), and neuron 1 scaled by 2."""
    theta1 = net([[1, 3], [2, -1]], [[1, 0], [1, 1]], [0, -1], [5, 7])
    theta2 = net([[-1, 2, 1, -2, "3/2"], [1, 1, "1/2", -1, "-1/2"]],
                 [[1, 0], [-1, 0], [2, 0], [-1, 0], [2, 2]], [0, 0, 2, -1, -2], [3, 6])
    return theta1, theta2


def reduction_pair() -> tuple[Network, Network]:
    """θ2 needs moves 1-3 in its reduction: σ(x) + σ(2x) merges (λ = 2) into 3σ(x), and 5σ(0·x + 2) is the
    constant 10 (bias shifting); no dead neuron, so every number takes part in a checked identity."""
    return (net([[3, 4]], [[1], [2]], [0, -2], [0]),
            net([[1, 1, 4, 5]], [[1], [2], [2], [0]], [0, 0, -2, 2], [-10]))


def sqrt2_merge_pair() -> tuple[Network, Network]:
    """Over Q(√2): √2 σ(x) = (√2 − 1)σ(x) + σ(−x) + σ(x + √2) − σ(−x − √2) − √2."""
    F, (s,) = to_field([parse_number("sqrt(2)")])
    one = F.one
    return (net([[s]], [[one]], [F.zero], [F.zero], F),
            net([[s - 1, one, one, -one]], [[one], [-one], [one], [-one]], [F.zero, F.zero, s, -s], [-s], F))


def example(name: str) -> tuple[Network, Network]:
    builders = {"brief merge": brief_merge_pair, "disguised": disguised_pair, "disguised m2 k2": disguised_pair_m2_k2,
                "reduction": reduction_pair, "sqrt2 merge": sqrt2_merge_pair}
    return builders[name]() if name in builders else load_pair(name)


STRICT = ["E4", "E5", "E6", "brief merge", "disguised", "disguised m2 k2", "reduction", "S1 (over Q(sqrt 2))",
          "sqrt2 merge"]


@cache
def _certificate_text(name: str) -> str:
    verdict = decide(*example(name))
    assert verdict.equivalent
    return json.dumps(equivalence_certificate(verdict, RECORDS))


def certificate(name: str) -> dict:
    """A fresh copy of the valid EQUIVALENT certificate of example ``name``."""
    return json.loads(_certificate_text(name))


def test_base_certificates_are_valid_and_have_the_intended_shape() -> None:
    for name in STRICT:
        report = check_certificate(certificate(name))
        assert report.valid, (name, report.reason)
    proof = {name: certificate(name)["proof"] for name in STRICT}
    for name in ("brief merge", "disguised", "disguised m2 k2", "sqrt2 merge"):
        assert proof[name]["merges"], name  # decide produces a cross merge
        assert proof[name]["pairs"], name
    for name in ("disguised", "disguised m2 k2", "reduction"):
        assert proof[name]["matching"], name
    assert {s["step"] for s in proof["reduction"]["reduction"][1]} == {"merge", "bias_shift"}
    assert certificate("sqrt2 merge")["field"]["type"] == "number_field"


# --------------------------------------------------------------------------------------------
# Mutation machinery
# --------------------------------------------------------------------------------------------


def leaves(obj: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from leaves(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from leaves(value, (*path, i))
    else:
        yield path, obj


def nodes(obj: Any, path: Path = ()) -> Iterator[Path]:
    """Every node (containers included) of a JSON value."""
    yield path
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from nodes(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from nodes(value, (*path, i))


def get(doc: Any, path: Path) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def replaced(doc: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    get(out, path[:-1])[path[-1]] = value
    return out


def number_mutations(doc: dict, roots: tuple[Path, ...] = ()) -> list[tuple[Path, str, str]]:
    """Every exact number string of the proof and of the embedded parameters, plus one (for a number
    field: one coefficient of the coefficient list plus one). Statements never match RATIONAL."""
    roots = roots or (("proof",), ("inputs", 0, "parameters"), ("inputs", 1, "parameters"))
    out = []
    for root in roots:
        for path, value in leaves(get(doc, root), root):
            if isinstance(value, str) and RATIONAL.fullmatch(value):
                out.append((path, value, str(Fraction(value) + 1)))
    return out


def index_mutations(doc: dict) -> list[tuple[Path, int, int]]:
    """Every neuron index of the proof, moved to the next neuron (+1 mod the number of candidates)."""
    n1, n2 = (doc["inputs"][t]["parameters"]["shape"]["n"] for t in (0, 1))
    out = []
    for path, value in leaves(doc["proof"], ("proof",)):
        if path[-1] not in INDEX_KEYS:
            continue
        assert isinstance(value, int)
        if path[1] == "reduction":
            bound = (n1, n2)[path[2]]
        elif path[1] == "matching":
            bound = n1 if path[-1] == "theta1" else n2
        else:
            bound = n1 + n2
        new = (value + 1) % bound
        if new != value:
            out.append((path, value, new))
    return out


def survivors(doc: dict, mutations: list[tuple[Path, Any, Any]]) -> list[tuple[Path, Any, Any]]:
    alive = []
    for path, old, new in mutations:
        report = check_certificate(replaced(doc, path, new))
        if report.valid:
            alive.append((path, old, new))
        else:
            assert report.reason, (path, old, new)
    return alive


def network_of(params: dict) -> Network:
    """A QQ parameter block of a certificate as a Network (exact)."""
    return Network.build([[q(x) for x in row] for row in params["M"]], [[q(x) for x in row] for row in params["A"]],
                         [q(x) for x in params["b"]], [q(x) for x in params["c"]], QQ, params["shape"]["m"])


# --------------------------------------------------------------------------------------------
# Every mutation is rejected
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STRICT)
def test_every_number_mutation_is_rejected(name: str) -> None:
    doc = certificate(name)
    mutations = number_mutations(doc)
    assert len(mutations) >= 10
    assert survivors(doc, mutations) == []


@pytest.mark.parametrize("name", STRICT)
def test_every_index_mutation_is_rejected(name: str) -> None:
    doc = certificate(name)
    mutations = index_mutations(doc)
    assert mutations
    assert survivors(doc, mutations) == []


@pytest.mark.parametrize("name", ["E4", "disguised m2 k2", "sqrt2 merge"])
def test_shape_mutations_are_rejected(name: str) -> None:
    doc = certificate(name)
    mutations = [(("inputs", t, "parameters", "shape", s), v, v + 1)
                 for t in (0, 1) for s, v in doc["inputs"][t]["parameters"]["shape"].items()]
    assert survivors(doc, mutations) == []


@pytest.mark.parametrize("name", ["S1 (over Q(sqrt 2))", "sqrt2 merge"])
def test_field_mutations(name: str) -> None:
    """Changing the minimal polynomial is rejected. Widening the isolating interval may be accepted, and
    then legitimately: the new interval contains the old one and still isolates exactly one root, so it
    declares the same α and the certificate says the same thing."""
    doc = certificate(name)
    spec = doc["field"]
    minpoly = number_mutations(doc, (("field", "minpoly"),))
    assert len(minpoly) == len(spec["minpoly"]) >= 2
    assert survivors(doc, minpoly) == []
    x = sympy.Symbol("x")
    poly = sympy.Poly([sympy.Rational(c) for c in reversed(spec["minpoly"])], x)
    lo, hi = (sympy.Rational(t) for t in spec["interval"])
    endpoints = number_mutations(doc, (("field", "interval"),))
    assert len(endpoints) == 2  # each endpoint: rejected with a reason (in survivors) or checked below
    for path, _, new in survivors(doc, endpoints):
        interval = list(spec["interval"])
        interval[path[-1]] = new
        new_lo, new_hi = (sympy.Rational(t) for t in interval)
        assert new_lo <= lo and hi <= new_hi and poly.count_roots(new_lo, new_hi) == 1, (path, new)


def test_dead_neuron_rows_are_the_only_survivors() -> None:
    """E3a: θ1 = σ(x) + 0·σ(2x + 3), θ2 = σ(x) + 0·σ(−7x + 1/2). The zeroing lemma needs only v_i = 0, and a
    dead neuron's row does not enter ρ: changing it gives another parameter with the SAME function, and the
    certificate (zero that neuron, then match) is still a correct proof. So exactly the four row entries of
    the two dead neurons survive; every output weight, every live entry and every proof number is caught."""
    doc = certificate("E3a")
    alive = survivors(doc, number_mutations(doc))
    assert sorted(path for path, _, _ in alive) == sorted(
        ("inputs", t, "parameters", key, *tail) for t in (0, 1) for key, tail in (("A", (1, 0)), ("b", (1,))))
    for path, _, new in alive:
        mutant = replaced(doc, path, new)
        p, r = (network_of(mutant["inputs"][t]["parameters"]) for t in (0, 1))
        assert decide(p, r).equivalent  # the surviving claim is true
    indices = index_mutations(doc)
    assert indices
    assert survivors(doc, indices) == []


def test_zero_neuron_row_survivors_e3b() -> None:
    """E3b: θ2 = σ(x) + 0·σ(0·x + 0) + 10 has an all-zero neuron that needs no step at all; its row entries may
    change freely while v = 0 (the function is unchanged and the checker only needs v = 0 at the end), but
    giving it an output weight is rejected (it is then unaccounted for), as is every other mutation."""
    doc = certificate("E3b")
    alive = survivors(doc, number_mutations(doc))
    assert sorted(path for path, _, _ in alive) == [("inputs", 1, "parameters", "A", 1, 0),
                                                     ("inputs", 1, "parameters", "b", 1)]
    for path, _, new in alive:
        mutant = replaced(doc, path, new)
        assert decide(*(network_of(mutant["inputs"][t]["parameters"]) for t in (0, 1))).equivalent


@pytest.mark.parametrize("name", ["E4", "E5", "disguised"])
def test_not_equivalent_mutants_are_rejected_or_true(name: str) -> None:
    """A NOT EQUIVALENT certificate (θ2 with c + 1/3). Mutating a recorded value is always rejected. Mutating
    an input entry that does not change either value at the witness (a neuron inactive there) leaves a
    certificate that is still CORRECT for the mutated pair; every survivor is checked to be such."""
    p, r = example(name)
    r = Network.build(r.M, r.A, r.b, [r.c[0] + fmpq(1, 3), *r.c[1:]], r.field, r.m)
    verdict = decide(p, r)
    doc = equivalence_certificate(verdict, RECORDS)
    assert check_certificate(doc).valid
    mutations = number_mutations(doc)
    alive = survivors(doc, mutations)
    assert not [s for s in alive if s[0][:2] == ("proof", "values")]
    for path, _, new in alive:
        mutant = replaced(doc, path, new)
        nets = [network_of(mutant["inputs"][t]["parameters"]) for t in (0, 1)]
        x = [q(t) for t in mutant["proof"]["witness"]]
        values = [nets[t].evaluate(x) for t in (0, 1)]
        assert values == [[q(y) for y in mutant["proof"]["values"][t]] for t in (0, 1)]
        assert values[0] != values[1]
        assert not decide(*nets).equivalent
    assert len(alive) < len(mutations)


def test_large_numbers_are_accepted() -> None:
    """Control for the test below: 4000-digit rationals replay fine."""
    big = fmpq(10**4000 + 1, 3)
    verdict = decide(net([[1]], [[1]], [0], [big]), net([[1]], [[2]], [0], [big]))
    assert check_certificate(equivalence_certificate(verdict, RECORDS)).valid


@pytest.mark.parametrize("kind", ["not_equivalent", "equivalent"])
def test_numbers_with_more_than_4300_digits_are_accepted(kind: str) -> None:
    big = fmpq(10**4500 + 1, 1)
    if kind == "not_equivalent":
        p, r = net([[1]], [[1]], [0], [big]), net([[1]], [[2]], [0], [big])
    else:
        p, r = net([[1]], [[1]], [0], [0]), net([[big]], [[1 / big]], [0], [0])
    verdict = decide(p, r)
    assert verdict.equivalent == (kind == "equivalent")
    report = check_certificate(equivalence_certificate(verdict, RECORDS))
    assert report.valid, report.reason


@pytest.mark.parametrize(("name", "path", "value"), [
    ("E4", ("inputs", 0, "name"), None),
    ("E4", ("inputs", 1, "name"), ["theta2.json"]),
    ("E4", ("inputs", 0, "sha256"), None),
    ("E4", ("inputs", 1, "sha256"), "not a sha-256"),
    ("sqrt2 merge", ("field", "generator"), 7),
])
def test_metadata_entries_must_conform_to_the_schema(name: str, path: Path, value: Any) -> None:
    assert_rejected(replaced(certificate(name), path, value))


# --------------------------------------------------------------------------------------------
# Fuzzing: arbitrary JSON never crashes the checker
# --------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12)
    | st.sampled_from(["0", "1", "-1", "1/2", "1/0", "QQ", "merge lemma", "H_n invariance", "zero"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=8) | st.sampled_from(["step", "neuron", "into", "from", "lambda", "statement", "i", "j"]),
        children, max_size=4),
    max_leaves=20,
)
FUZZ_BASES = ["E4", "E6", "disguised", "disguised m2 k2", "reduction", "sqrt2 merge"]
# Entries the checker does not read without input files (display names, file hashes, the generator's name).
# Their VALUES never matter; that any JSON value (not only a schema-conforming string) is accepted there is
# the bug pinned by test_metadata_entries_must_conform_to_the_schema, so the fuzz tests do not report it again.
METADATA_KEYS = {"name", "sha256", "generator"}


def assert_rejected(doc: Any) -> None:
    report = check_certificate(doc)
    assert report.valid is False
    assert isinstance(report.reason, str) and report.reason


@FUZZ
@given(json_values)
def test_arbitrary_json_is_rejected_without_exception(doc: Any) -> None:
    assert_rejected(doc)


@FUZZ
@given(st.fixed_dictionaries({
    "format": st.just("certsym-certificate") | json_values,
    "version": st.just(1) | json_values,
    "kind": st.sampled_from(["equivalent", "not_equivalent", "minimal_form"]) | json_values,
    "claim": st.sampled_from(["rho(theta1) = rho(theta2)", "rho(theta1) != rho(theta2)"]) | json_values,
    "field": st.just({"type": "QQ"}) | json_values,
    "inputs": json_values,
    "proof": json_values,
}))
def test_envelope_with_random_contents_is_rejected_without_exception(doc: dict) -> None:
    assert_rejected(doc)


def _isolates_same_root(doc: dict, path: Path, new: Any) -> bool:
    """A changed interval endpoint of the field that still isolates the same root (checked with sympy)."""
    import sympy

    if tuple(path[:2]) != ("field", "interval") or not (isinstance(new, str) and RATIONAL.fullmatch(new)):
        return False
    field = doc["field"]
    x = sympy.Symbol("x")
    poly = sympy.Poly([sympy.Rational(c) for c in reversed(field["minpoly"])], x)
    old_lo, old_hi = (sympy.Rational(t) for t in field["interval"])
    lo, hi = (sympy.Rational(new) if i == path[2] else t for i, t in enumerate((old_lo, old_hi)))
    root = next(r for r in poly.real_roots() if old_lo <= r <= old_hi)
    return lo < hi and poly.count_roots(lo, hi) == 1 and bool(lo <= root <= hi)


def neutral(old: Any, new: Any, path: Path, doc: dict | None = None) -> bool:
    """A replacement that cannot change what the certificate says: the same JSON, metadata, another
    spelling of the same exact number, or another isolating interval of the same field generator."""
    if json.dumps(old) == json.dumps(new) or (path and path[-1] in METADATA_KEYS):
        return True
    if doc is not None and _isolates_same_root(doc, path, new):
        return True
    if isinstance(old, str) and isinstance(new, str) and RATIONAL.fullmatch(new) and not new.endswith("/0"):
        return RATIONAL.fullmatch(old) is not None and Fraction(old) == Fraction(new)
    if isinstance(old, list) and isinstance(new, list) and old and all(isinstance(x, str) for x in old + new) \
            and all(RATIONAL.fullmatch(x) and not x.endswith("/0") for x in old + new):
        def trim(xs):
            xs = [Fraction(x) for x in xs]
            while xs and xs[-1] == 0:
                xs.pop()
            return xs

        return trim(old) == trim(new)
    return False


@FUZZ
@given(st.sampled_from(FUZZ_BASES), st.data(), json_values)
def test_valid_certificate_with_random_subtree_replaced(name: str, data: st.DataObject, value: Any) -> None:
    doc = certificate(name)
    paths = list(nodes(doc))
    path = data.draw(st.sampled_from(paths))
    mutant = replaced(doc, path, value)
    report = check_certificate(mutant)
    assert isinstance(report.reason, str)
    if report.valid:
        assert neutral(get(doc, path), value, path, doc), (path, value)
    else:
        assert report.reason


@FUZZ
@given(st.sampled_from(FUZZ_BASES), st.data())
def test_valid_certificate_with_subtree_moved(name: str, data: st.DataObject) -> None:
    """Replace one node by a copy of another node of the same certificate (well-formed but misplaced)."""
    doc = certificate(name)
    paths = list(nodes(doc))
    target, source = data.draw(st.sampled_from(paths)), data.draw(st.sampled_from(paths))
    value = copy.deepcopy(get(doc, source))
    report = check_certificate(replaced(doc, target, value))
    if report.valid:
        assert neutral(get(doc, target), value, target, doc), (target, source)
    else:
        assert report.reason

"""certsym_check.budget: one work budget for the whole certificate (certificates/FORMAT.md, Bounds).

Each attack of the third red-team round is rebuilt here and must be refused, the budget or bound named; what bounds
its time is the budget's units (tests/check/test_check_budget_ops.py counts the work they pay for), never a clock
read here. The worst valid certificate within the budget is timed by benchmarks/check_budget.py.
"""

from __future__ import annotations

import copy
import json
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest
from flint import fmpz_poly
from helpers import TESTS, decimal_text

from certsym_check import budget
from certsym_check.envelope import check_certificate
from certsym_check.errors import Reject
from certsym_check.fields import NumberField, show

VALID = TESTS / "certificates" / "valid"


def _template() -> dict:
    return json.loads((VALID / "equivalent_E5.json").read_text())


def _over_field(doc: dict, field: dict) -> dict:
    """The certificate with its numbers written as elements of ``field`` (constant coefficient lists)."""
    doc = copy.deepcopy(doc)
    doc["field"] = field

    def lift(x):
        if isinstance(x, list):
            return [lift(y) for y in x]
        return [x] if isinstance(x, str) else x

    for rec in doc["inputs"]:
        params = rec["parameters"]
        for key in ("M", "A", "b", "c"):
            params[key] = lift(params[key])
    for pair in doc["proof"]["pairs"]:
        pair["lambda"], pair["linear"], pair["constant"] = lift(pair["lambda"]), lift(pair["linear"]), \
            lift(pair["constant"])
    return doc


def _checked(doc: dict):
    """The replay's report and the units it used (at most the budget, or a refusal naming it)."""
    rep = check_certificate(doc)
    assert rep.work <= budget.WORK_BUDGET or "work budget" in rep.reason, (rep.work, rep.reason)
    return rep, rep.work


def _real_root_field(coeffs: list[int]) -> dict:
    """A number-field declaration for the largest real root of the integer polynomial (an isolating interval from
    flint's certified roots, widened to rationals)."""
    roots = [r.real for r, _ in fmpz_poly(coeffs).complex_roots() if r.imag.contains(0)]
    assert roots, "the polynomial has a real root"
    r = max(roots, key=lambda a: float(a.mid()))

    def exact(x) -> Fraction:
        man, exp = x.man_exp()
        return Fraction(int(man)) * Fraction(2) ** int(exp)

    lo, hi = exact(r.lower()), exact(r.upper())
    return {"type": "number_field", "minpoly": [str(c) for c in coeffs], "interval": [str(lo), str(hi)],
            "generator": "a"}


def _dense_field() -> dict:
    """Q(α), α the root near 2^20 of x^64 − 2^20 (x^63 + … + 1): reducing powers of α grows their coefficients by
    about 20 bits per power, so α^1000 would have about 1.3 million bits."""
    return _real_root_field([-(1 << 20)] * 64 + [1])


# ------------------------------------------------------------------------------------- the six attacks, rebuilt


def test_nested_powers_are_evaluated_once():
    doc = _template()
    doc["inputs"][0]["atoms"] = [{"expr": "sqrt(" + "**".join(["1"] * 40) + ")", "value": "1"}]
    rep, _ = _checked(doc)
    assert rep.valid, rep.reason  # sqrt(1) = 1 is a true atom: the point is that it is verified at once
    doc["inputs"][0]["atoms"] = [{"expr": "sqrt(" + "**".join(["1"] * 400) + ")", "value": "1"}]
    rep, _ = _checked(doc)
    assert (rep.valid or "nested" in rep.reason), rep.reason


def test_numeral_with_an_underscore_is_refused_in_linear_time():
    doc = _template()
    doc["inputs"][0]["atoms"] = [{"expr": "sqrt(" + "1" * 99_980 + "_1.5)", "value": "1"}]
    rep, _ = _checked(doc)
    assert not rep.valid and "not an exact decimal numeral" in rep.reason, rep.reason


def test_long_numerals_are_refused_by_length_first():
    doc = _template()
    doc["inputs"][0]["atoms"] = [{"expr": "1" * 100_001, "value": "1"}]
    rep, _ = _checked(doc)
    assert not rep.valid


def test_power_over_a_degree_64_field_is_bounded():
    doc = _over_field(_template(), _dense_field())
    doc["inputs"][0]["atoms"] = [{"expr": "root(2, 1000)", "value": ["0", "1"]}]
    rep, _ = _checked(doc)
    assert not rep.valid and ("too large" in rep.reason or "work budget" in rep.reason), rep.reason


def _big_field(seed: int, bits: int = 245) -> tuple[dict, list[int]]:
    rnd = random.Random(seed)
    while True:
        coeffs = [rnd.getrandbits(bits) * rnd.choice((-1, 1)) for _ in range(64)] + [1]
        if any(r.imag.contains(0) for r, _ in fmpz_poly(coeffs).complex_roots()):
            return _real_root_field(coeffs), coeffs


def test_repeated_crootof_atoms_share_one_budget():
    field, coeffs = _big_field(1)
    poly = " + ".join(f"({c})*x**{i}" for i, c in enumerate(coeffs))
    assert sum(abs(c).bit_length() for c in coeffs) > 15_000
    doc = _over_field(_template(), field)
    doc["inputs"][0]["atoms"] = [{"expr": f"CRootOf({poly}, {i})", "value": ["0", "1"]} for i in range(20)]
    rep, _ = _checked(doc)
    assert not rep.valid and "work budget" in rep.reason, rep.reason


def test_a_large_random_field_is_bounded():
    rnd = random.Random(7)
    coeffs = [str(rnd.getrandbits(250)) for _ in range(64)] + ["1"]
    doc = _over_field(_template(), {"type": "number_field", "minpoly": coeffs, "interval": ["0", "1"],
                                    "generator": "a"})
    rep, _ = _checked(doc)
    assert not rep.valid, rep.reason


def _distance_template(tmp_path: Path) -> dict:
    from certsym.cli import main

    (tmp_path / "a.json").write_text('{"M": [["1", "1"]], "A": [["1"], ["-1"]], "b": ["0", "1/2"], "c": ["0"]}')
    (tmp_path / "b.json").write_text('{"M": [["1", "1"]], "A": [["1"], ["-1"]], "b": ["1/8", "1/2"], "c": ["0"]}')
    assert main(["distance", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--box=-1,1", "--cert",
                 str(tmp_path / "d.json")]) == 0
    doc = json.loads((tmp_path / "d.json").read_text())
    assert check_certificate(doc).valid
    return doc


def _fraction(x: Fraction) -> str:
    return f"{decimal_text(x.numerator)}/{decimal_text(x.denominator)}"


def test_distance_box_numerators_are_bounded(tmp_path):
    doc = _distance_template(tmp_path)
    H = decimal_text((1 << 255_000) + 1)
    doc["proof"]["box"] = [[f"-{H}/3", f"{H}/3"]]
    rep, _ = _checked(doc)
    assert not rep.valid and "numerator of 255001 bits" in rep.reason, rep.reason


def test_distance_rejection_prints_a_huge_bound_by_its_size(tmp_path):
    doc = _distance_template(tmp_path)
    H = (1 << 4000) + 1
    doc["proof"]["box"] = [[f"-{H}/3", f"{H}/3"]]
    doc["proof"]["witness"] = ["0"]
    rep, _ = _checked(doc)
    assert not rep.valid and "not the one its multipliers give" in rep.reason, rep.reason
    assert re.search(r"e\+[0-9]{4} \(exact: numerator [0-9]{4} bits", rep.reason), rep.reason
    assert "OverflowError" not in rep.reason


# -------------------------------------------------------------------------------------------- the meter itself


def test_charges_beyond_the_budget_raise():
    with budget.metered(100):
        budget.charge(60, "x")
        assert budget.fits(40) and not budget.fits(41)
        with pytest.raises(budget.BudgetExceeded, match="work budget"):
            budget.charge(41, "the next step")


def test_no_meter_means_no_limit():
    budget.charge(10**18, "outside a replay")  # the producer's own use of the helpers is not metered
    assert budget.fits(10**18)


def test_a_field_over_the_budget_is_refused_before_its_sturm_chain():
    field, _ = _big_field(3)
    with budget.metered(1000), pytest.raises(Reject, match="work budget of 1,000 units"):
        NumberField(field["minpoly"], field["interval"])  # refused by a charge, before its work (no clock read)


def test_show_prints_huge_numbers_by_size_and_leading_digits():
    x = Fraction(-(7 ** 100_000), 3)
    text = show(x)
    assert text.startswith("-") and "e+" in text and "numerator 280736 bits" in text
    lead = text[1:].split("e")[0].replace(".", "")
    e = int(text.split("e+")[1].split(" ")[0])
    assert 7 ** 100_000 // 3 // 10 ** (e - 11) == int(lead)  # the 12 leading digits, from integer arithmetic
    assert show(Fraction(3, 7)) == "3/7"


# ------------------------------------------------------------------ the meter on the budget's worst case
# (its replay time, against FORMAT.md's 60 s, is measured by benchmarks/check_budget.py)


def _expression_atoms(count: int, terms: int, digits: int, seed: int) -> list[dict]:
    """``count`` true atoms sqrt((s)**2) = |s|, s a sum of ``terms`` random fractions of ``digits`` digits: mid-size
    rational arithmetic, the kind with the highest cost per unit charged."""
    rnd = random.Random(seed)
    atoms = []
    for _ in range(count):
        fracs = [Fraction(rnd.randrange(10 ** (digits - 1), 10**digits), rnd.randrange(10 ** (digits - 1), 10**digits))
                 for _ in range(terms)]
        atoms.append({"expr": "sqrt((" + " + ".join(f"{f.numerator}/{f.denominator}" for f in fracs) + ")**2)",
                      "value": _fraction(sum(fracs))})
    return atoms


def _units(doc: dict) -> int:
    rep = check_certificate(doc)
    assert rep.valid, rep.reason
    return rep.work


@pytest.mark.parametrize(("terms", "digits"), [(40, 20), (8, 400)])
def test_the_meter_charges_each_atom_alike(terms, digits):
    """The charge is additive over atoms of one shape: the worst case's size is found by extrapolating from a few."""
    doc = _template()
    doc["inputs"][0]["atoms"] = []
    base = _units(doc)
    doc["inputs"][0]["atoms"] = _expression_atoms(4, terms, digits, seed=digits)
    four = _units(doc) - base
    doc["inputs"][0]["atoms"] = _expression_atoms(12, terms, digits, seed=digits)
    twelve = _units(doc) - base
    assert four > 0 and 2.5 * four <= twelve <= 3.5 * four, (four, twelve)


def test_the_same_work_over_a_smaller_budget_is_refused(monkeypatch):
    doc = _template()
    doc["inputs"][0]["atoms"] = _expression_atoms(20, 40, 20, seed=5)
    used = _units(doc)
    monkeypatch.setattr(budget, "WORK_BUDGET", used - 1)
    rep = check_certificate(doc)
    assert not rep.valid and f"work budget of {used - 1:,} units" in rep.reason, rep.reason
    monkeypatch.setattr(budget, "WORK_BUDGET", used)
    assert check_certificate(doc).valid

"""No verdict without a certificate that replays: ``distance`` (ε and top-1, one hidden layer and deep) replays
its certificate with the independent checker before it prints a verdict; a certificate the checker refuses is not
written and the verdict is UNKNOWN (exit 3) with the checker's reason. And bounds whose exact values run to
thousands of bits are stated rounded outward, so they replay VALID."""

from __future__ import annotations

import json
import random

import pytest
from flint import fmpq

from certsym.certify import deep_distance_certificate
from certsym.certify.envelope import InputRecord
from certsym.cli import main
from certsym.core.deep import LayeredNetwork
from certsym.decide.deep_distance import _Bounds, deep_distance
from certsym.numbers import QQ
from certsym_check import budget as checker_budget
from certsym_check import check_certificate


def _bits(x: fmpq) -> int:
    return max(abs(int(x.p)).bit_length(), int(x.q).bit_length())


def _long_pair(seed: int = 3) -> tuple[list, list]:
    """A 3-6-6-6-2 network with 60-bit rational weights and a copy with every weight moved by 2^-20: the exact
    aligned bound of the pair has thousands of bits (each layer's common denominator multiplies in)."""
    rng = random.Random(seed)

    def q() -> fmpq:
        return fmpq(rng.randrange(-2**60, 2**60), rng.randrange(1, 2**60))

    widths = [3, 6, 6, 6, 2]
    first = [([[q() for _ in range(a)] for _ in range(b)], [q() for _ in range(b)])
             for a, b in zip(widths, widths[1:], strict=False)]
    second = [([[w + fmpq(1, 2**20) for w in row] for row in W], list(bias)) for W, bias in first]
    return first, second


def _layered(layers: list) -> dict:
    return {"layers": [{"W": [[str(w) for w in row] for row in W], "b": [str(x) for x in b]} for W, b in layers]}


def test_bounds_of_thousands_of_bits_are_stated_short_and_replay() -> None:
    first, second = _long_pair()
    t1, t2 = LayeredNetwork.build(first, QQ, 3), LayeredNetwork.build(second, QQ, 3)
    box = [(fmpq(-1), fmpq(1))] * 3
    _, plain, aligned = _Bounds(t1, t2)(box)
    assert max(_bits(plain), _bits(aligned)) > 4096, "the pair must have an exact bound beyond the checker's 4,096 bits"
    d = deep_distance(t1, t2, box, method="intervals")
    assert _bits(d.upper) <= 70 and _bits(d.lower) <= 70
    assert d.upper >= min(plain, aligned) and d.lower <= max(abs(a - c) for a, c in zip(*d.values, strict=True))
    records = tuple(InputRecord(name, "0" * 64, []) for name in ("a.json", "b.json"))
    report = check_certificate(deep_distance_certificate(d, records, (t1, t2), fmpq(1)))
    assert report.valid, report.reason


def test_long_bounds_replay_through_the_command(tmp_path, capfd) -> None:
    first, second = _long_pair(5)
    a, b, cert = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "d.json"
    a.write_text(json.dumps(_layered(first)))
    b.write_text(json.dumps(_layered(second)))
    code = main(["distance", str(a), str(b), "--box=-1,1", "--epsilon", "1000", "--seconds", "3600", "--cert",
                 str(cert)])
    out = capfd.readouterr().out
    assert code == 0 and out.startswith("VERIFIED"), out
    assert main(["check", str(cert)]) == 0
    assert "VALID deep_distance_bound" in capfd.readouterr().out


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("question", [["--epsilon", "1000"], ["--top1"]])
def test_a_certificate_the_checker_refuses_gives_unknown_and_no_file(tmp_path, capfd, monkeypatch, deep: bool,
                                                                     question: list[str]) -> None:
    """With the checker's budget cut to 30 units every certificate is refused: the command must not print the
    verdict it found, must write nothing, and must exit 3 with the checker's reason."""
    first, second = _long_pair(7)
    if not deep:  # a 3-6-2 network: the first and the last layer
        first, second = [first[0], first[-1]], [second[0], second[-1]]
    a, b, cert = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "d.json"
    a.write_text(json.dumps(_layered(first)))
    b.write_text(json.dumps(_layered(second)))
    args = ["distance", str(a), str(b), "--box=-1,1", *question, "--cert", str(cert)]
    args += ["--seconds", "3600"] if deep else ["--regions", "3"]  # the searches end at once, by their counts
    monkeypatch.setattr(checker_budget, "WORK_BUDGET", 30)
    code = main(args)
    out = capfd.readouterr().out
    assert code == 3 and out.startswith("UNKNOWN: the certificate does not replay"), out
    assert "work budget" in out and not cert.exists()
    assert not any(word in out for word in ("VERIFIED", "AGREE", "DIFFER", "VIOLATED"))
    code = main([*args, "--json"])
    doc = json.loads(capfd.readouterr().out)
    assert code == 3 and "work budget" in doc["refused"] and not cert.exists()
    assert (doc.get("verdict") or doc.get("top1")) == "unknown"

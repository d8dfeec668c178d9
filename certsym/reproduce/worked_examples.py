"""The worked examples of MATH.md (Part I), evaluated exactly.

Claims checked, each by the method named in its row:
- m = 1 pairs realize the same function: exact evaluation at every breakpoint of both networks
  and one point beyond each end (this determines a univariate PL function; see oracle.py).
- E1: the stated H_2 element (swap, D = diag(2, 1/2)) maps the first parameter onto the second.
- E2: the two parameters are not in one H_2-orbit: their multisets of positively normalized
  neurons differ (an orbit invariant).
- Every pair: `certsym equiv` decides EQUIVALENT and the independent checker replays the
  certificate (Theorems 3/4 form).
- E5 and E6: the fibre identity ρ(θ) = ρ(θ^F) with F = all neurons holds because
  Σ v_i a_i = 0 and the constant shifts by Σ v_i b_i (σ(z) − σ(−z) = z), checked exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from certsym.certify import InputRecord, equivalence_certificate, minimal_form_certificate
from certsym.core.canonical import canonical_form
from certsym.core.group import HElement
from certsym.core.network import Network
from certsym.core.reduction import reduce
from certsym.decide.equivalence import decide
from certsym.io import load_networks
from certsym.reproduce import CheckResult, Context
from certsym.reproduce.examples import EXAMPLES
from certsym.reproduce.oracle import same_function, same_function_m1

STATEMENT = "MATH.md worked examples"
SLUG = "worked_examples"
SECONDS = (1, 1)  # about this long on a 2-core machine: the representative run, --full



def load_pair(name: str) -> tuple[Network, Network]:
    """The two parameters of example ``name`` over one common field."""
    dicts = EXAMPLES[name]
    (p, q), _ = load_networks([f"{name}[0]", f"{name}[1]"], texts=[json.dumps(d) for d in dicts])
    return p, q


def normalized_neurons(net: Network) -> Counter:
    """The multiset of neurons scaled by a positive factor so that the first nonzero entry of
    (a_i, b_i) has absolute value 1; zero-row neurons are kept as they are. H_n-invariant."""
    out = Counter()
    for nu in net.neurons():
        r = (*nu.a, nu.b)
        lead = next((x for x in r if x != 0), None)
        lam = abs(lead) if lead is not None else net.field.one
        out[(tuple(x / lam for x in r), tuple(x * lam for x in nu.v))] += 1
    return out


def flip_all_identity(p: Network, q: Network) -> bool:
    """q = θ^F for F = all neurons of p, and Σ v_i a_i^T = 0: then ρ(p) = ρ(q) by σ(z) − σ(−z) = z."""
    if (p.n, p.m, p.k) != (q.n, q.m, q.k):
        return False
    rows_negated = all(
        tuple(-x for x in pa) == qa and -pb == qb
        for pa, pb, qa, qb in zip(p.A, p.b, q.A, q.b, strict=True)
    )
    zero_factor = all(
        sum((p.M[j][i] * p.A[i][l] for i in range(p.n)), p.field.zero) == 0
        for j in range(p.k) for l in range(p.m)
    )
    shift = all(
        q.c[j] == p.c[j] + sum((p.M[j][i] * p.b[i] for i in range(p.n)), p.field.zero)
        for j in range(p.k)
    )
    return p.M == q.M and rows_negated and zero_factor and shift


def run(ctx: Context) -> None:
    """Every claim of the worked examples, recorded with its certificate where one exists."""
    for r in claims():
        ctx.record(STATEMENT, SLUG, f"{r.instance.split()[0]}: {r.claim} [{r.method}]", r.ok)
    for name in EXAMPLES:
        p, q = load_pair(name)
        verdict = decide(p, q)
        records = tuple(InputRecord(f"{name}[{i}]", hashlib.sha256(json.dumps(d).encode()).hexdigest())
                        for i, d in enumerate(EXAMPLES[name]))
        ctx.compare(STATEMENT, SLUG, f"{name.split()[0]}_equiv", verdict.equivalent, same_function(p, q),
                    "breakpoint or restriction oracle", equivalence_certificate(verdict, records))
        red = reduce(p)
        ctx.record(STATEMENT, SLUG, f"{name.split()[0]}_minimal", canonical_form(red.minimal) == canonical_form(p),
                   minimal_form_certificate(red, records[0]))


def claims() -> list[CheckResult]:
    """The identities MATH.md states for its examples, each checked by the method it names."""
    results = []
    oracle = "exact values at all breakpoints and one point beyond each end"
    for name in EXAMPLES:
        p, q = load_pair(name)
        if p.m == 1:
            ok, npts = same_function_m1(p, q)
            results.append(CheckResult(STATEMENT, name, "ρ(θ) = ρ(θ')", f"{oracle} ({npts} points)", ok))
    p, q = load_pair("E1")
    h = HElement.make([1, 0], [p.field(2), p.field(1) / 2])
    results.append(CheckResult(STATEMENT, "E1", "θ' = h·θ, h = (swap, diag(2, 1/2))",
                               "exact H_2 action", h.act(p) == q))
    p, q = load_pair("E2")
    two_sigma = Network.build([[2]], [[1]], [0], [0], p.field)
    ok = same_function_m1(p, two_sigma)[0] and same_function_m1(q, two_sigma)[0]
    results.append(CheckResult(STATEMENT, "E2", "both realize 2σ(x)", oracle, ok))
    results.append(CheckResult(STATEMENT, "E2", "θ, θ' lie in different H_2-orbits",
                               "multisets of positively normalized neurons differ",
                               normalized_neurons(p) != normalized_neurons(q)))
    p, q = load_pair("E4")
    ok = same_function_m1(p, lambda x: [x])[0] and same_function_m1(q, lambda x: [x])[0]
    results.append(CheckResult(STATEMENT, "E4", "both realize x ↦ x", oracle, ok))
    for name in ("E5", "E6"):
        p, q = load_pair(name)
        results.append(CheckResult(
            STATEMENT, name, "θ' = θ^F (F = all) and ρ(θ) = ρ(θ')",
            "Σ v_i a_i = 0 and c' = c + Σ v_i b_i, exactly (σ(z) − σ(−z) = z)",
            flip_all_identity(p, q)))
    return results

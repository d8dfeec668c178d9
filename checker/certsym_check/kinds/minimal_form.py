"""``minimal_form``: the reduction steps replayed, the result equal to the stated θ_min, and θ_min minimal (no
zero neuron, no two rows positively or negatively proportional: one sort). Cost: linear plus a sort."""

from __future__ import annotations

from certsym_check.core import (
    Net,
    Report,
    distinct_sorted,
    is_zero,
    keys,
    normal_form,
)
from certsym_check.errors import Reject
from certsym_check.kinds.equivalence import (
    replay_reduction,
)


def check_minimal_form(F, nets: list[Net], proof: object, rep: Report) -> None:
    """Replay moves 1–3, compare with the claimed θ_min, and check it is minimal (one sort)."""
    p = keys(proof, {"steps", "minimal"}, "proof")
    (t,) = nets
    replay_reduction(t, p["steps"], rep, "proof.steps")
    claimed = Net(F, p["minimal"], "proof.minimal")
    if (claimed.m, claimed.n, claimed.k) != (t.m, t.n, t.k) or claimed.rows != t.rows \
            or claimed.v != t.v or claimed.c != t.c:
        raise Reject("proof.minimal is not what the steps produce")
    keyed = []
    for i in range(t.n):
        r, v = t.rows[i], t.v[i]
        if is_zero(r) and is_zero(v):
            continue
        if all(F.sign(x) == 0 for x in v) or all(F.sign(x) == 0 for x in r[:-1]):
            raise Reject(f"neuron {i} of theta_min is dead or constant: not minimal")
        keyed.append(normal_form(F, r, None))
    distinct_sorted(F, keyed, "two rows of theta_min are positively proportional: not minimal")
    rep.checks["minimality (no move 1-3 applies)"] += 1

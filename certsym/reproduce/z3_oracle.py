"""An outside oracle over the reals: z3 decides ∃x ρ(θ1)(x) ≠ ρ(θ2)(x) (z3-solver is a benchmark extra).

It knows nothing of certsym's reasoning: it receives the two realizations as z3 terms with If(z > 0, z, 0).
"""

from __future__ import annotations

from certsym.core.network import Network


def z3_verdict(t1: Network, t2: Network, timeout_s: float = 60.0, rlimit: int | None = None) -> str:
    """"equal", "different" or "unknown" (past ``timeout_s``, or past z3's deterministic resource count
    ``rlimit`` when given, which replaces the clock: the same answer on any machine). Raises ImportError without
    z3."""
    import z3  # optional: the bench extra

    xs = [z3.Real(f"x{q}") for q in range(t1.m)]

    def realize(net: Network):
        out = []
        for j in range(net.k):
            terms = [z3.RealVal(str(net.c[j]))]
            for i in range(net.n):
                z = sum((z3.RealVal(str(a)) * x for a, x in zip(net.A[i], xs, strict=True)), z3.RealVal(str(net.b[i])))
                terms.append(z3.RealVal(str(net.M[j][i])) * z3.If(z > 0, z, 0))
            out.append(z3.Sum(terms))
        return out

    solver = z3.Solver()
    if rlimit is not None:
        solver.set("rlimit", rlimit)
    else:
        solver.set("timeout", int(timeout_s * 1000))
    solver.add(z3.Or([a != b for a, b in zip(realize(t1), realize(t2), strict=True)]))
    result = solver.check()
    return "equal" if result == z3.unsat else "different" if result == z3.sat else "unknown"

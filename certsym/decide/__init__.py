"""Decisions, one statement per module, each returning its verdict with the evidence a certificate needs:
``equivalence`` (Theorems 3/4, the general path), ``dyadic`` (the same on float networks, vectorized),
``affine`` (Proposition 14), ``stabilizer`` (Theorem 2), ``identifiability`` (Theorem 1 and Corollary 9, with
``zerofactor`` and ``configurations``), ``distance`` (exact bounds on sup ‖ρ(θ1) − ρ(θ2)‖∞ over a box),
``nearmiss`` (why two float networks are not equivalent), ``deep`` (MATH.md Part III, three-valued) and
``deep_distance`` (exact bounds on a box for deep networks)."""

"""The teacher–student model of Arjevani & Field (MATH.md, Part II): F(W) = ½ E[(Σσ(w_i·x) − Σσ(v_i·x))²],
x ~ N(0, I_k), teacher V = I_k, in closed form through the arc-cosine kernel.

- ``kernel``: loss, gradient and Hessian in floating point (numpy), for exploration and Newton steps.
- ``balls``: the same formulas in arb ball arithmetic (python-flint), for certification.
- ``symbolic``: the loss as a sympy expression, for series work.
"""

"""The options of the ``certsym landscape`` commands (the teacher–student loss of the second paper, MATH.md,
Part II); their handlers are in ``certsym.cli.landscape_commands``, imported when one of them runs, so that the
other commands start without the landscape's modules."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from certsym.cli.common import Parser, lazy


def _lazy(name: str) -> Callable[[argparse.Namespace], int]:
    """The handler ``name`` of ``certsym.cli.landscape_commands``, imported on the first call (start-up time: the
    landscape's modules only for its commands)."""
    return lazy("landscape_commands", name)


def add_parsers(sub, command) -> None:
    """The ``landscape`` subcommands (``command``: the factory of subcommands with the shared options)."""
    _command = command
    land = sub.add_parser("landscape", help="the teacher-student loss: certified symmetric critical points",
                          description="the teacher-student loss of the second paper (MATH.md, Part II)")
    lsub = land.add_subparsers(dest="landscape_command", metavar="COMMAND", parser_class=Parser, required=True)
    _command(lsub, "families", "list the families of critical points", _lazy("cmd_landscape_families"), params=None)
    for name, func, text in (("critical", _lazy("cmd_landscape_critical"), "a certified critical point: Krawczyk "
                              "box, loss enclosure, Hessian inertia (exit 0 certified, 1 not)"),
                             ("point", _lazy("cmd_landscape_point"), "the full matrix W of a family member (JSON or "
                              ".npz)")):
        p = _command(lsub, name, text, func, params=None, json_flag=name == "critical")
        p.add_argument("--family", required=True, help="one-misfit, negative-diagonal, two-misfit, good-plus-negative "
                       "or misfit-M (M ≥ 1)")
        p.add_argument("--k", type=int, required=True, help="the number of neurons (3 to 1,000,000)")
    p.add_argument("-o", "--output", metavar="OUT", help="write W here (.json or .npz; default: standard output)")
    p = lsub.choices["critical"]
    p.add_argument("--cert", metavar="OUT", help="write the critical_point certificate")
    p.add_argument("--inertia-cert", metavar="OUT", help="write the hessian_inertia certificate")
    p = _command(lsub, "threshold", "the real k* at which a family turns from saddle into minimum: the integers "
                 "around it, then a certified bracket (exit 0 certified, 1 not)", _lazy("cmd_landscape_threshold"),
                 params=None, cert="write the landscape_threshold certificate")
    p.add_argument("--family", required=True, help="one-misfit, negative-diagonal, two-misfit, good-plus-negative "
                   "or misfit-M (M ≥ 3)")
    p.add_argument("--steps", type=int, default=24, help="halvings of [k − 1, k] (default 24; 1 to 40)")
    p = _command(lsub, "series", "the exact power series in t = k^(-1/2) of a family's critical point and critical "
                 "value, derived order by order, beside least-squares fits", _lazy("cmd_landscape_series"), params=None)
    p.add_argument("--family", required=True, help="one-misfit, negative-diagonal, two-misfit, good-plus-negative "
                   "or misfit-M (coefficients in Q(π), or Q(π, √M))")
    p.add_argument("--order", type=int, default=3, help="coefficients beyond each leading term (default 3, at most 10)")
    p.add_argument("--no-fit", action="store_true", help="skip the numerical fits (about a second)")
    p = _command(lsub, "add-neuron", "one neuron added to a certified critical point (n = k + 1): each split row "
                 "and the zero neuron, with certificates (exit 0 all certified, 1 not)",
                 _lazy("cmd_landscape_add_neuron"), params=None)
    p.add_argument("--family", required=True, help="one-misfit, negative-diagonal, two-misfit, good-plus-negative "
                   "or misfit-M (M ≥ 1)")
    p.add_argument("--k", type=int, required=True, help="the number of neurons of the certified point (3 to 24)")
    p.add_argument("--certs", metavar="DIR", help="write the added_neuron certificates here, and the "
                   "wide_critical_point certificates of the spurious points the descents from them reach")
    p = _command(lsub, "descent", "gradient descent from random starts (Safran-Shamir's experiment)",
                 _lazy("cmd_landscape_descent"), params=None)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=20000)
    p.add_argument("--quick", action="store_true", help="at most 4 runs of at most 5000 steps")
    p.add_argument("--init", choices=("normal", "uniform"), default="normal",
                   help="W_ij ~ N(0, 1/k), Safran and Shamir's protocol (default), or the uniform U(−√(3/k), √(3/k)) "
                   "of the same variance")
    p.add_argument("--extra", type=int, default=0, metavar="N",
                   help="N student neurons beyond k (W in M(k+N, k)); spurious end points are certified in their "
                   "fixed-point spaces (wide_critical_point certificates)")
    p.add_argument("--no-certify", action="store_true", help="do not certify the distinct end points")
    p.add_argument("--certs", metavar="DIR", help="write each certified end point's certificate here (critical_point; "
                   "wide_critical_point with --extra)")
    p = _command(lsub, "certify", "certify a given W: isotropy, Newton and Krawczyk in its fixed-point space, "
                 "the loss and the inertia (exit 0 certified, 1 not)", _lazy("cmd_landscape_certify"), params=None)
    p.add_argument("W", help="W as .npz (array 'W' or the only array) or JSON ({\"W\": rows} or rows); n × k with "
                   "n ≠ k is certified in the fixed-point space of its row and column transpositions")
    p.add_argument("--k", type=int, help="the expected k (checked against W's shape)")
    p.add_argument("--tol", type=float, default=1e-3, help="the tolerance of the isotropy detection (default 1e-3)")
    p.add_argument("--cert", metavar="OUT", help="write the critical_point certificate")
    p.add_argument("--inertia-cert", metavar="OUT", help="write the hessian_inertia certificate")

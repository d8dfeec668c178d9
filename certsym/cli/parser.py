"""The ``certsym`` parser and its one error handler: every subcommand with its options and help, and ``main``,
which dispatches to the command's handler and turns errors into exit codes.

Exit codes, for every command: 0 success or positive verdict, 1 negative verdict, 2 bad input or usage, 3 no
verdict within the budget (UNKNOWN, UNDECIDED), or a certificate that would not replay (``common.EXIT``). Bad input
prints one line ``certsym: error: ...`` on stderr and no traceback.

Start-up time: this module imports no command's code; each handler's module (``equivalence``, ``distance``,
``identifiability``, ``audit``, ``reproduce``, ``landscape_commands``) is imported when its command runs, so that
``certsym --help`` and a usage error stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from certsym import __version__
from certsym.cli import landscape
from certsym.cli.common import (
    DEFAULT_MAX_DIGITS,
    EXIT,
    EXIT_INPUT,
    EXIT_OK,
    MAX_REGIONS,
    Parser,
    UsageError,
    emit_json,
    lazy,
)
from certsym.errors import CertsymWarning, InputError, Undecided

# each command's handler, imported when the command runs
cmd_eval = lazy("equivalence", "cmd_eval")
cmd_minimal = lazy("equivalence", "cmd_minimal")
cmd_canon = lazy("equivalence", "cmd_canon")
cmd_equiv = lazy("equivalence", "cmd_equiv")
cmd_stabilizer = lazy("equivalence", "cmd_stabilizer")
cmd_affine = lazy("equivalence", "cmd_affine")
cmd_distance = lazy("distance", "cmd_distance")
cmd_identifiable = lazy("identifiability", "cmd_identifiable")
cmd_counterexample = lazy("identifiability", "cmd_counterexample")
cmd_fibre = lazy("identifiability", "cmd_fibre")
cmd_perturb = lazy("identifiability", "cmd_perturb")
cmd_audit = lazy("audit", "cmd_audit")
cmd_reproduce = lazy("reproduce", "cmd_reproduce")
cmd_vnnlib = lazy("vnnlib", "cmd_vnnlib")
cmd_report = lazy("report", "cmd_report")

_VALUE_OPTIONS = {"--at"}  # options whose value may begin with "-" ("--at -1/2")
_PARAMS = "parameter or model file (JSON, .npz, .safetensors, .pt, .onnx)"
_REFERENCE = ("reference model files by SHA-256 in the certificate instead of embedding them (automatic beyond "
              "200,000 weights; then check with --inputs)")
_MAX_SEARCH = 1 << 22


def _command(sub, name: str, text: str, func, *, params: str | None = "params", cert: str | None = None,
             json_flag: bool = True, max_search: bool = False) -> argparse.ArgumentParser:
    """A subcommand with the options most commands share."""
    p = sub.add_parser(name, help=text, description=text)
    if params == "params?":
        p.add_argument("params", nargs="?", help=_PARAMS)
    elif params:
        p.add_argument(params, help=_PARAMS)
    if cert:
        p.add_argument("--cert", metavar="OUT", help=cert)
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output")
    if params or name == "audit":
        _selection_options(p, two=params == "params1")
    if max_search:
        p.add_argument("--max-search", type=int, default=_MAX_SEARCH, metavar="N",
                       help=f"refuse searches over N steps: kernel candidates, subset sums or configurations "
                       f"(default {_MAX_SEARCH})")
    p.set_defaults(func=func)
    return p


def _region_options(p: argparse.ArgumentParser) -> None:
    """The region a distance, top-1 or report question is asked on: --box, or --center with --radius and --clip."""
    p.add_argument("--box", metavar="SPEC", help="'lo,hi' for every coordinate, 'lo1,hi1;lo2,hi2;…', or a VNN-LIB "
                   "file (its input bounds); default [0, 1]^m")
    p.add_argument("--center", metavar="C", help="ask on the L∞ ball around a test point instead: a .npy file (its "
                   "floats read as the dyadic rationals they are) or 'x1,x2,…' exact numbers; with --radius")
    p.add_argument("--radius", metavar="R", help="the ball's L∞ radius (exact, e.g. 0.02 or 1/50)")
    p.add_argument("--clip", metavar="LO,HI", help="cut the ball to [LO, HI] in every coordinate (e.g. 0,1 for pixels)")


def _selection_options(p: argparse.ArgumentParser, two: bool) -> None:
    """The options that choose the tensors of model files (docs/FORMATS.md, "the selection rule"), and
    --activation."""
    p.add_argument("--activation", choices=("relu",), default=None,
                   help="state that the model files' networks are ReLU networks (a tensor file holds no activation: "
                   "without this certsym assumes it and says so); recorded in certificates")
    p.add_argument("--keys", dest="sub_keys", metavar="W1,b1,W2,b2",
                   help="tensor names in model files, a weight and a bias per layer (W1,b1,W2,b2,W3,b3,… for a deep "
                        "network; '-' for an absent bias); default: the file holds exactly 0.weight, 0.bias, "
                        "2.weight, 2.bias, … (module./_orig_mod. prefixes allowed) or A, b, M, c")
    p.add_argument("--layout", choices=("out-in", "in-out"), default=None,
                   help="how weights are stored: out-in (torch, default) or in-out (Flax and Keras kernels)")
    p.add_argument("--state-key", metavar="PATH", help="where the state dict lies in a torch checkpoint, keys joined "
                   "by '.' (e.g. model or state_dict); default: found when exactly one entry holds the layers")
    if two:  # the same options for one file only (a Lightning checkpoint against a plain state dict, say)
        for i, which in ((1, "first"), (2, "second")):
            p.add_argument(f"--keys{i}", metavar="W1,b1,W2,b2", help=f"tensor names in the {which} file only")
            p.add_argument(f"--layout{i}", choices=("out-in", "in-out"), default=None,
                           help=f"--layout for the {which} file only")
            p.add_argument(f"--state-key{i}", dest=f"state_key{i}", metavar="PATH",
                           help=f"--state-key for the {which} file only")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand."""
    parser = Parser(prog="certsym", description="Exact, certified symmetries of ReLU networks.")
    parser.add_argument("--version", action="version", version=f"certsym {__version__}")
    parser.add_argument("--keys", metavar="W1,b1,W2,b2",
                        help="tensor names in model files (default 0.weight,0.bias,2.weight,2.bias, or A,b,M,c)")
    parser.add_argument("--max-digits", type=int, default=DEFAULT_MAX_DIGITS, metavar="N",
                        help=f"refuse numerals with more than N digits (default {DEFAULT_MAX_DIGITS})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    verdict = "write the certificate of the verdict"

    p = _command(sub, "eval", "evaluate ρ(θ)(x) exactly", cmd_eval)
    p.add_argument("--at", required=True, metavar="X", help='the point, e.g. "1/2,3" or "sqrt(2)"')
    p = _command(sub, "minimal", "the minimal form θ_min (moves 1-3) as a parameter file; for a deep network the "
                 "parameter after the moves D1–D4", cmd_minimal,
                 cert="write a minimal_form certificate (deep: a deep_equivalent one of θ and the output)",
                 json_flag=False)
    p.add_argument("-o", "--output", metavar="OUT", help="write θ_min here (default: standard output)")
    p.add_argument("--trace", action="store_true", help="print the moves applied")
    _command(sub, "canon", "the canonical form of the realized function (kink invariants); for a deep network the "
             "layerwise canonical form after D1–D4", cmd_canon)
    p = _command(sub, "equiv", "decide ρ(θ1) = ρ(θ2) exactly (exit 0 equivalent, 1 not; for deep networks 3 "
                 "undecided)", cmd_equiv, params="params1", cert=verdict)
    p.add_argument("params2", help=_PARAMS)
    p.add_argument("--path", choices=("auto", "general"), default="auto",
                   help="auto: the fast exact path for model files of float16/float32 weights (default)")
    p.add_argument("--reference", action="store_true",
                   help="reference the model files by SHA-256 instead of embedding them (tensor files; deep ones "
                        "of at least two hidden layers; automatic beyond 200,000 weights; then check with --inputs)")
    p.add_argument("--box", metavar="SPEC", help="when NOT EQUIVALENT, look for a witness inside this box ('lo,hi' "
                   "for every coordinate, 'lo1,hi1;…', or a VNN-LIB file), verified exactly")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="deep networks: time budget of the phase splitting, after which the verdict is UNDECIDED "
                   "with the reason (default: none; its node count bounds it)")
    p = _command(sub, "distance", "exact bounds [L, U] on sup over a box of ‖ρ(θ1) − ρ(θ2)‖∞", cmd_distance,
                 params="params1", cert="write a distance_bound certificate")
    p.add_argument("params2", help=_PARAMS)
    _region_options(p)
    p.add_argument("--points", metavar="X.npy", help="ask --top1 or --epsilon on the ball of --radius around each row "
                   "of X (N points), one line each and the counts (a test set's certified agreement)")
    p.add_argument("--cert-dir", metavar="DIR", help="with --points: each answered point's certificate, point_N.json")
    p.add_argument("--seed", type=int, default=0, help="seed of the witness search (default 0)")
    p.add_argument("--epsilon", metavar="E", help="decide sup ‖ρ(θ1) − ρ(θ2)‖∞ ≤ E: VERIFIED (exit 0), VIOLATED "
                   "(exit 1, an exact witness above E) or UNKNOWN within the budget (exit 3)")
    p.add_argument("--top1", action="store_true", help="decide instead whether both networks have the same largest "
                   "output on the whole box: AGREE (exit 0), DIFFER (exit 1, an exact witness) or UNKNOWN (exit 3)")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="time budget of the whole command: reading, search, certificate and its replay (default 10; "
                   "none when --regions is given alone)")
    p.add_argument("--regions", type=int, default=None, metavar="N",
                   help=f"region budget of the branch and bound (default {MAX_REGIONS}); given without --seconds, no "
                   "time limit applies, so U, L and the certificate depend only on the inputs and --seed")
    p.add_argument("--target", type=float, default=1.1, metavar="R",
                   help="stop the branch and bound once U/L ≤ R (default 1.1; 1: until U = L or the budget ends)")
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    p = _command(sub, "report", "one HTML page about two networks: equivalence, distance and top-1 on a region, "
                 "witnesses, a figure, the files and the certificates (replayed before they are linked)", cmd_report,
                 params="params1", json_flag=False)
    p.add_argument("params2", help=_PARAMS)
    p.add_argument("-o", "--output", default="report.html", metavar="OUT.html",
                   help="the page (default report.html); certificates go to OUT_certificates/, the figure to OUT.png")
    _region_options(p)
    p.add_argument("--epsilon", metavar="E", help="also decide sup ‖f1 − f2‖∞ ≤ E on the region")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="time budget of the searches (default 10; none when --regions is given alone)")
    p.add_argument("--regions", type=int, default=None, metavar="N", help="region budget of each search")
    _command(sub, "stabilizer", "Theorem 2: Stab_{H_n}(θ) and Stab_{H_n}(A, b)", cmd_stabilizer,
             cert="write a stabilizer certificate")
    _command(sub, "affine", "Proposition 14: is ρ(θ) affine? (exit 0 yes, 1 no)", cmd_affine, cert=verdict)
    p = _command(sub, "identifiable", "Theorem 1: is the fibre exactly the H_n-orbit? (exit 0 yes, 1 no)",
                 cmd_identifiable, cert=verdict, max_search=True)
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    p = _command(sub, "counterexample", "Corollary 9: a θ' with ρ(θ') = ρ(θ) outside H_n·θ (exit 0 found)",
                 cmd_counterexample, params="params?", cert=verdict, json_flag=False, max_search=True)
    p.add_argument("-o", "--output", metavar="OUT", help="write θ' here (default: standard output)")
    p.add_argument("--reference", action="store_true", help=_REFERENCE)
    p.add_argument("--search", metavar="M,N,K", help="enumerate an integer grid for the converse-failure family")
    p.add_argument("--range", type=int, default=1, metavar="R", help="grid entries in -R..R (default 1)")
    p.add_argument("--out", default="counterexamples", metavar="DIR", help="where --search writes")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="stop after N counterexamples")
    p = _command(sub, "fibre", "describe the fibre ρ^{-1}(ρ(θ)) in Ω(m,n,k)", cmd_fibre, max_search=True)
    p.add_argument("--cap", type=int, default=1000, metavar="N", help="list at most N zero-factor sets (default 1000)")
    p = _command(sub, "perturb", "Theorem 1 (density): an identifiable θ' within eps of θ", cmd_perturb,
                 cert="write the identifiability certificate of θ'", json_flag=False, max_search=True)
    p.add_argument("--eps", required=True, metavar="EPS", help='max-norm distance, e.g. "1e-6" (exact)')
    p.add_argument("-o", "--output", metavar="OUT", help="write θ' here (default: standard output)")
    p = _command(sub, "audit", "group many networks by the function they realize, and certify each class",
                 cmd_audit, params=None)
    p.add_argument("paths", nargs="+", metavar="PATH", help="parameter or model files, directories (searched "
                   "recursively for the files certsym reads) and glob patterns (*, ?, [...], ** across directories)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="local processes (1: in this process; default: one per CPU)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on Dask: 'local' or 'local:N' starts a LocalCluster of "
                   "N single-threaded worker processes (default N: --workers); anything else is a scheduler address")
    p.add_argument("--cert-dir", metavar="DIR", help="write a certificate for each member against the member it "
                   "was decided equal to, the representative or an earlier member (model files referenced by "
                   "SHA-256: certsym check CERT --inputs OTHER MEMBER)")
    p = _command(sub, "vnnlib", "answer a VNN-LIB property as written: unsat (exit 0), sat (exit 1, an exact "
                 "counterexample) or unknown (exit 3)", cmd_vnnlib, params=None,
                 cert="write a vnnlib_unsat or vnnlib_sat certificate (check it with --inputs SPEC NET…)")
    p.add_argument("spec", metavar="SPEC", nargs="?", help="a VNN-LIB 1.0 or 2.0 file (.vnnlib, .vnnlib.gz)")
    p.add_argument("--net", action="append", default=[], metavar="NAME=FILE",
                   help="the file of each network the property declares (VNN-LIB 2.0: --net f=F.onnx --net g=G.onnx; "
                   "one network: --net FILE; .onnx.gz files are read as they are)")
    p.add_argument("--seconds", type=float, default=60.0, metavar="S", help="time budget (default 60)")
    p.add_argument("--instances", metavar="CSV", help="answer every instance of a benchmark's instances.csv (network "
                   "field, property, timeout; paths relative to its folder) and print VNN-COMP's result words")
    p.add_argument("--timeout", type=float, default=None, metavar="T",
                   help="with --instances: seconds per instance instead of the file's timeouts")
    p.add_argument("--cert-dir", metavar="DIR", help="with --instances: a certificate per answered instance "
                   "(instance_N.json)")
    p.add_argument("--seed", type=int, default=0, help="seed of the counterexample search (default 0)")
    # listed for --help only: certsym.cli hands "check" to the checker before this parser is built
    sub.add_parser("check", help="replay certificates with the independent checker (see 'certsym check --help')",
                   add_help=False)
    landscape.add_parsers(sub, _command)
    p = _command(sub, "reproduce", "reproduce the papers' statements on concrete instances", cmd_reproduce,
                 params=None)
    p.add_argument("--out", default="reproduce-report", metavar="DIR",
                   help="where REPORT.md, report.html, figures and certificates go (default reproduce-report/)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--full", action="store_true",
                       help="every instance of every statement (about 25 minutes on 2 cores); default: a "
                            "representative run of every statement (about 1.5 minutes)")
    scope.add_argument("--quick", action="store_true", help="the default representative run (kept for scripts)")
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """certsym's own warnings as one line on stderr; any other as Python shows it."""
    if issubclass(category, CertsymWarning):
        print(f"certsym: warning: {message}", file=sys.stderr)
    else:
        warnings._showwarnmsg_impl(warnings.WarningMessage(message, category, filename, lineno, file, line))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``certsym`` console script; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # A value may begin with "-" ("--at -1/2"); argparse would take it for an option.
    for i in range(len(argv) - 1):
        if argv[i] in _VALUE_OPTIONS and argv[i + 1].startswith("-"):
            argv[i : i + 2] = [f"{argv[i]}={argv[i + 1]}", ""]
    argv = [a for a in argv if a != ""]
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("a command is required (see 'certsym --help')")
        if args.max_digits < 1:
            raise InputError("--max-digits must be at least 1")
        with warnings.catch_warnings():
            warnings.simplefilter("always", CertsymWarning)
            warnings.showwarning = _show_warning
            return args.func(args)
    except (UsageError, InputError) as exc:
        print(f"certsym: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except Undecided as exc:  # a search beyond its stated limit: no verdict, and not bad input
        if getattr(args, "json", False):
            emit_json({"verdict": "undecided", "reason": str(exc)})
        else:
            print(f"UNDECIDED: {exc}")
        return EXIT["undecided"]
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # a file or folder that cannot be written or read
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"certsym: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("certsym: error: interrupted", file=sys.stderr)
        return EXIT_INPUT
    except Exception as exc:  # a bug: one line, not a traceback (CERTSYM_DEBUG=1 shows it)
        if os.environ.get("CERTSYM_DEBUG"):
            raise
        print(f"certsym: internal error ({type(exc).__name__}: {exc}); rerun with CERTSYM_DEBUG=1 and report it",
              file=sys.stderr)
        return EXIT_INPUT

"""The checker's own reading of a VNN-LIB 1.0 or 2.0 property (docs/FORMATS.md, "VNN-LIB"), written apart from the
producer's: the networks it declares, its input boxes, and its output part as a disjunction of conjunctions of
linear atoms Σ c·Y + c_0 ≥ 0 (or > 0).

The text's S-expressions are read with comments (``;`` to the end of the line) dropped and a tensor's index joined
to its name (``X [0, 1]`` is ``X[0,1]``). VNN-LIB 1.0: ``(declare-const X_i Real)`` / ``Y_j`` (one network, the
names X_i and Y_j read whether declared or not). VNN-LIB 2.0: ``(vnnlib-version <2.0>)`` first, then
``(declare-network NAME [(isomorphic-to N) | (equal-to N)] (declare-input X T [shape]) (declare-output Y T
[shape]))``, element ``X[i,j]`` the row-major flat index. Expressions: decimal numbers (an optional exponent),
variables, ``(+ …)``, ``(- a)``, ``(- a b …)``, ``(* …)`` with at most one non-constant factor. Asserts: ``<=``,
``>=``, ``<``, ``>``, ``==`` (both ≥), ``!=`` (either >), ``and``, ``or``. An assert is over inputs or over outputs,
never both. The input part in disjunctive normal form gives one box per disjunct: bounds c·X_q + d ≥ 0 on single
inputs of the first network (non-strict), a lower and an upper one for each, and for each further network every
input q made equal to the first network's input q (both halves of ``==``), nothing else.

Standard library only. Bounds before the work: MAX_CHARS characters, MAX_NESTING open parentheses, numbers of at
most MAX_NUMBER_CHARS characters, MAX_DISJUNCTS disjuncts and MAX_ATOMS atoms in either part in normal form.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from certsym_check.budget import charge
from certsym_check.errors import Reject

MAX_CHARS = 1 << 26
MAX_NESTING = 100
MAX_NUMBER_CHARS = 400
MAX_DISJUNCTS = 4096
MAX_ATOMS = 10**6
MAX_ELEMENTS = 10**7
MAX_NUMBER_BITS = 4096  # numerator and denominator of every coefficient and constant, checked after each operation
MAX_RANK = 32  # dimensions of a declared tensor (each of at most 9 digits: past MAX_ELEMENTS beyond)
_DECIMAL = re.compile(r"([+-]?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?\Z")
_OLD = re.compile(r"([XY])_(0|[1-9][0-9]{0,8})\Z")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_INDEXED = re.compile(r"([A-Za-z][A-Za-z0-9_]*)\[([0-9,]*)\]\Z")
_INDEX = re.compile(r"(0|[1-9][0-9]{0,8})\Z")


@dataclass
class Atom:
    """Σ_{(n, j)} c · (output j of network n) + constant ≥ 0, or > 0 when strict."""

    terms: dict
    constant: Fraction
    strict: bool

    def holds(self, outputs: list[list[Fraction]]) -> bool:
        total = self.constant + sum(c * outputs[n][j] for (n, j), c in self.terms.items())
        return total > 0 if self.strict else total >= 0


@dataclass
class Property:
    version: str
    networks: list  # (name, m, k)
    boxes: list  # one box (list of (lo, hi)) per disjunct of the input part
    disjuncts: list  # the output part: a list of conjunctions (lists of Atom); [[]] when it has no assert


def _tokens(text: str) -> list[str]:
    """The tokens, a tensor's index joined to its name (``X [0, 1]`` is ``X[0,1]``): a token that opens a bracket
    takes the tokens after it up to the one that closes it, and a token starting with ``[`` joins the one before.
    Linear in the text (each token's pieces are joined once)."""
    out: list[list[str]] = []  # each token as its pieces
    depth = 0  # brackets the last token leaves open
    for token in re.findall(r"[()]|[^\s()]+", text):
        paren = token in ("(", ")")
        if not paren and out and out[-1][0] not in ("(", ")") and (depth > 0 or token.startswith("[")):
            out[-1].append(token)
        else:
            out.append([token])
            depth = 0
        if not paren:
            depth += token.count("[") - token.count("]")
    return ["".join(pieces) for pieces in out]


def _forms(text: str) -> list:
    if len(text) > MAX_CHARS:
        raise Reject(f"beyond the checker's bounds: a property of {len(text):,} characters")
    charge(1 + len(text) // 2000, "reading the property")
    text = re.sub(r";[^\n]*", " ", text)
    out: list = []
    stack: list = []
    current = out
    for token in _tokens(text):
        if token == "(":
            if len(stack) >= MAX_NESTING:
                raise Reject(f"the property opens more than {MAX_NESTING} parentheses at once")
            stack.append(current)
            current.append([])
            current = current[-1]
        elif token == ")":
            if not stack:
                raise Reject("the property has a ')' without its '('")
            current = stack.pop()
        else:
            current.append(token)
    if stack:
        raise Reject("the property has a '(' without its ')'")
    return out


def _number(token: str) -> Fraction | None:
    m = _DECIMAL.match(token)
    if not m:
        return None
    if len(token) > MAX_NUMBER_CHARS:
        raise Reject(f"beyond the checker's bounds: a number of {len(token)} characters in the property")
    sign, whole, frac, exp = m.groups()
    if exp and len(exp.lstrip("+-")) > 3 or exp and abs(int(exp)) > MAX_NUMBER_CHARS:
        raise Reject("beyond the checker's bounds: a number's exponent in the property")
    value = Fraction(int(whole + (frac or "")), 10 ** len(frac or ""))
    if exp:
        value *= Fraction(10) ** int(exp)
    return _small(-value if sign == "-" else value)


def _small(x: Fraction) -> Fraction:
    """x, when its numerator and denominator have at most MAX_NUMBER_BITS bits."""
    if max(abs(x.numerator).bit_length(), x.denominator.bit_length()) > MAX_NUMBER_BITS:
        raise Reject(f"beyond the checker's bounds: a number of the property past {MAX_NUMBER_BITS} bits")
    return x


class _Reading:
    def __init__(self, version: str):
        self.version = version
        self.tensors: dict = {}  # name -> (network, is output, shape)
        self.networks: list = []

    def var(self, token: str):
        """(network, is output, flat index) of a variable token, or None for anything else."""
        if self.version == "1.0":
            m = _OLD.match(token)
            return (0, m.group(1) == "Y", int(m.group(2))) if m else None
        m = _INDEXED.match(token)
        name, idx = (m.group(1), m.group(2)) if m else (token, None)
        if name not in self.tensors:
            return None
        n, out, shape = self.tensors[name]
        parts = [] if idx in (None, "") else idx.split(",")
        if len(parts) != len(shape) or not all(_INDEX.match(p) for p in parts):
            raise Reject(f"the property's {token[:40]!r} does not index a tensor of shape {list(shape)}")
        flat = 0
        for p, d in zip(parts, shape, strict=True):
            if int(p) >= d:
                raise Reject(f"the property's {token[:40]!r} is outside its tensor")
            flat = flat * d + int(p)
        return n, out, flat

    def expr(self, e) -> tuple[dict, Fraction]:
        if isinstance(e, str):
            v = self.var(e)
            if v is not None:
                return {v: Fraction(1)}, Fraction(0)
            x = _number(e)
            if x is None:
                raise Reject(f"the property's {e[:40]!r} is neither a number nor a declared variable")
            return {}, x
        if len(e) < 2 or e[0] not in ("+", "-", "*"):
            raise Reject("the property has an expression other than a number, a variable, +, - or *")
        args = [self.expr(a) for a in e[1:]]
        charge(1 + sum(len(co) + 1 for co, _ in args), "the property's arithmetic")
        if e[0] == "*":
            linear = [a for a in args if a[0]]
            if len(linear) > 1:
                raise Reject("the property multiplies two variables")
            k = Fraction(1)
            for a in args:
                if not a[0]:
                    k = _small(k * a[1])
            base = linear[0] if linear else ({}, Fraction(1))
            return {v: _small(c * k) for v, c in base[0].items() if c * k}, _small(base[1] * k)
        if e[0] == "-" and len(args) == 1:
            return {v: -c for v, c in args[0][0].items()}, -args[0][1]
        coefficients = dict(args[0][0])
        constant = args[0][1]
        s = -1 if e[0] == "-" else 1
        for co, c0 in args[1:]:
            for v, c in co.items():
                coefficients[v] = _small(coefficients.get(v, 0) + s * c)
            constant = _small(constant + s * c0)
        return {v: c for v, c in coefficients.items() if c}, constant

    def dnf(self, f) -> list:
        """[[(coefficients, constant, strict)]]: Σ c·v + constant ≥ 0 (> 0 when strict)."""
        if not isinstance(f, list) or not f:
            raise Reject("the property has an assert that is not a comparison, 'and' or 'or'")
        if f[0] == "or":
            out: list = []
            atoms = 0
            for x in f[1:]:
                p = self.dnf(x)
                atoms += sum(map(len, p))
                if len(out) + len(p) > MAX_DISJUNCTS or atoms > MAX_ATOMS:
                    raise Reject(f"beyond the checker's bounds: more than {MAX_DISJUNCTS} disjuncts or {MAX_ATOMS} "
                                 "atoms")
                out.extend(p)
            return out
        if f[0] == "and":
            return _conjoin(self.dnf(x) for x in f[1:])
        if f[0] not in ("<=", ">=", "<", ">", "==", "!=") or len(f) != 3:
            raise Reject(f"the property has an unknown comparison {str(f[0])[:20]!r}")
        (ca, a0), (cb, b0) = self.expr(f[1]), self.expr(f[2])
        diff = {v: _small(ca.get(v, 0) - cb.get(v, 0)) for v in set(ca) | set(cb)}
        diff = {v: c for v, c in diff.items() if c}
        a_minus_b = (diff, _small(a0 - b0))
        b_minus_a = ({v: -c for v, c in diff.items()}, -a_minus_b[1])
        op = f[0]
        if op == "==":
            return [[(*a_minus_b, False), (*b_minus_a, False)]]
        if op == "!=":
            return [[(*a_minus_b, True)], [(*b_minus_a, True)]]
        return [[(*(a_minus_b if op in (">=", ">") else b_minus_a), op in ("<", ">"))]]


def _declare_network(form: list, r: _Reading) -> None:
    if len(form) < 2 or not isinstance(form[1], str) or not _NAME.match(form[1]):
        raise Reject("the property has a malformed declare-network")
    name, n = form[1], len(r.networks)
    got: dict = {"declare-input": [], "declare-output": []}
    for part in form[2:]:
        if isinstance(part, list) and len(part) == 2 and part[0] in ("isomorphic-to", "equal-to") and \
                part[1] in [x[0] for x in r.networks]:
            continue
        if not (isinstance(part, list) and len(part) == 3 and part[0] in got and isinstance(part[1], str) and
                _NAME.match(part[1]) and isinstance(part[2], str)):
            raise Reject(f"network {name} of the property: a part the checker does not read")
        m = re.match(r"([A-Za-z][A-Za-z0-9_]*)\[([0-9,]*)\]\Z", part[2])
        if not m or part[1] in r.tensors:
            raise Reject(f"network {name} of the property: a malformed or repeated tensor {part[1][:40]!r}")
        if m.group(1) not in ("Real", "real"):
            raise Reject(f"network {name} of the property: element type {m.group(1)[:20]!r}; the checker reads Real "
                         "(the reals), the type of a query about the networks' functions")
        dims = [] if m.group(2) == "" else m.group(2).split(",")
        if len(dims) > MAX_RANK or not all(_INDEX.match(d) for d in dims):
            raise Reject(f"network {name} of the property: a malformed shape, or of more than {MAX_RANK} dimensions")
        shape = tuple(int(d) for d in dims)
        if not 0 < math.prod(shape) <= MAX_ELEMENTS:
            raise Reject(f"network {name} of the property: a tensor of 0 or more than {MAX_ELEMENTS:,} elements")
        r.tensors[part[1]] = (n, part[0] == "declare-output", shape)
        got[part[0]].append(math.prod(shape))
    if len(got["declare-input"]) != 1 or len(got["declare-output"]) != 1:
        raise Reject(f"network {name} of the property: one input and one output tensor are read")
    r.networks.append((name, got["declare-input"][0], got["declare-output"][0]))


def read_property(text: str) -> Property:
    """The property (module docstring), or Reject with what the checker does not read."""
    forms = _forms(text)
    version = "1.0"
    if forms and forms[0] == ["vnnlib-version", "<2.0>"]:
        version, forms = "2.0", forms[1:]
    r = _Reading(version)
    inputs: list = []
    outputs: list = []
    declared = {False: [], True: []}
    for f in forms:
        if not isinstance(f, list) or not f:
            raise Reject("the property has a bare token at its top level")
        if version == "1.0" and f[0] == "declare-const" and len(f) == 3 and isinstance(f[1], str) and \
                _OLD.match(f[1]) and f[2] == "Real":
            m = _OLD.match(f[1])
            declared[m.group(1) == "Y"].append(int(m.group(2)))
        elif version == "2.0" and f[0] == "declare-network":
            _declare_network(f, r)
        elif f[0] == "assert" and len(f) == 2:
            d = r.dnf(f[1])
            sides = {v[1] for conj in d for co, _, _ in conj for v in co}
            if len(sides) == 2:
                raise Reject("an assert of the property mixes inputs and outputs")
            (outputs if True in sides else inputs).append(d)
        else:
            raise Reject(f"the property has a form the checker does not read: {str(f[0])[:30]!r}")
    if version == "1.0":
        for output in (False, True):
            if sorted(set(declared[output])) != list(range(len(set(declared[output])))):
                raise Reject(f"the property's declared {'Y' if output else 'X'}_i are not numbered 0, 1, 2, …")
        used = [v[2] for part in inputs for conj in part for co, _, _ in conj for v in co]
        m = max([i + 1 for i in declared[False]] + [i + 1 for i in used] + [0])
        k = max([j + 1 for j in declared[True]] + [0] +
                [v[2] + 1 for part in outputs for conj in part for co, _, _ in conj for v in co])
        r.networks = [("", m, k)]
    if not r.networks:
        raise Reject("the property declares no network")
    boxes = [_box(conj, r.networks) for conj in _conjoin(inputs)]
    disjuncts = [[Atom({(v[0], v[2]): c for v, c in co.items()}, c0, strict) for co, c0, strict in conj]
                 for conj in _conjoin(outputs)]
    return Property(version, r.networks, boxes, disjuncts)


def _conjoin(parts) -> list:
    """The normal form of a conjunction of normal forms, its size checked before it is built: the atoms common
    to every disjunct (parts of one disjunct) gathered in one list, the products of the others taken with their
    sizes counted first (at most log2(MAX_DISJUNCTS) of them multiply), the common atoms appended last."""
    common: list = []
    out: list = [[]]
    for p in parts:
        if len(p) == 1:
            common.extend(p[0])
            if len(common) > MAX_ATOMS:
                raise Reject(f"beyond the checker's bounds: more than {MAX_ATOMS} atoms")
            continue
        atoms = len(p) * sum(map(len, out)) + len(out) * sum(map(len, p))
        if len(out) * len(p) > MAX_DISJUNCTS or atoms > MAX_ATOMS:
            raise Reject(f"beyond the checker's bounds: more than {MAX_DISJUNCTS} disjuncts or {MAX_ATOMS} atoms")
        out = [a + b for a in out for b in p]
    if len(out) * len(common) + sum(map(len, out)) > MAX_ATOMS:
        raise Reject(f"beyond the checker's bounds: more than {MAX_ATOMS} atoms")
    return [conj + common for conj in out]


def _box(conj: list, networks: list) -> list:
    m = networks[0][1]
    lo: dict = {}
    hi: dict = {}
    halves = set()
    for co, c0, strict in conj:
        items = list(co.items())
        if len(items) == 2 and c0 == 0 and not strict and sorted(c for _, c in items) == [-1, 1] and \
                items[0][0][0] != items[1][0][0]:
            low = next(v for v, c in items if c == -1)
            high = next(v for v, c in items if c == 1)
            halves.add((low, high))
            continue
        if len(items) != 1 or strict or items[0][0][0] != 0:
            raise Reject("the property's input part is not a box of non-strict bounds on the first network's inputs "
                         "(and inputs made equal by ==)")
        (v, c), = items
        if v[2] >= m:
            raise Reject(f"the property bounds input {v[2]} of a network of {m} inputs")
        bound = -c0 / c
        if c > 0:
            lo[v[2]] = max(lo.get(v[2], bound), bound)
        else:
            hi[v[2]] = min(hi.get(v[2], bound), bound)
    if any(networks[n][1] != m for n in range(1, len(networks))):
        raise Reject("the property's networks have different numbers of inputs")
    # every stated half couples input q of network 0 and of another network, both ways, and there are as many as
    # the couplings of every input: then they are exactly those (counted first: work bounded by the text)
    if len(halves) != 2 * m * (len(networks) - 1) or any(
            u[2] != v[2] or u[1] or v[1] or 0 not in (u[0], v[0]) or (v, u) not in halves for u, v in halves):
        raise Reject("the property's networks do not read one shared input (every input made equal by ==)")
    if any(q not in lo or q not in hi or lo[q] > hi[q] for q in range(m)):
        raise Reject("the property's input part leaves an input without a lower and an upper bound, or empty")
    return [(lo[q], hi[q]) for q in range(m)]

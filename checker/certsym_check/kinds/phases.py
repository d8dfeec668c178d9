"""Replay of a ``deep_equivalent`` proof by phase splitting (certificates/FORMAT.md, "phase splitting"): f1 = f2
on all of R^m for two ReLU networks over QQ of any depths and widths (MATH.md Part IV).

The neurons of both networks are walked in one fixed order: layer by layer, the first network's neurons of a
layer before the second's, a network's output neurons last and only when it ends in a ReLU. On the current region
each neuron's pre-activation is an affine form a(x) = w·x + c, computed exactly from the phased layer below. A
constant one (w = 0) takes the phase of its sign and consumes no node; any other consumes a ``["split"]`` node and
is followed by its two branches, a ≥ 0 (h = a) first, then a ≤ 0 (h = 0), each adding its constraint g ≥ 0
(g = a, or −a) to the region. A branch is either a subtree or one of the leaves

- ``["empty", μ]``: μ_j ≥ 0, one per constraint of the branch's region in order, with Σ μ_j g_j a negative
  constant (the region is empty);
- ``["flat", μ]``: μ_j ≥ 0 with Σ μ_j g_j ≡ 0 and μ_j > 0 on a constraint whose linear part is not 0 (the
  region lies in that hyperplane: it has no interior);

and once every neuron is phased the walk reads ``["equal"]``: the two networks' outputs on the region, affine
forms computed exactly, are equal. The leaves cover R^m, those with interior up to a null set, and f1 − f2 is
continuous, so equality on every leaf with interior is equality everywhere. The tree must end exactly where the
walk does.

Standard library only; no search. Bounds before the walk: hidden layers of at least one neuron, MAX_INPUTS inputs,
MAX_NEURONS neurons in all, MAX_NODES nodes, multiplier lists as long as their regions and multipliers of at most
MAX_MULTIPLIER_BITS bits; every exact product and running sum is charged to the work budget before it is taken.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.budget import charge, charge_axpy
from certsym_check.core import Report, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ, rational
from certsym_check.kinds.deep import DeepNet

STATEMENT = "phase splitting"
MAX_NEURONS = 96
MAX_NODES = 200_000
MAX_INPUTS = 64  # the forms have m + 1 entries, the identity m of them
MAX_MULTIPLIER_BITS = 4096  # numerator and denominator of a multiplier


def _order(nets: list[DeepNet]) -> list[tuple[int, int, int]]:
    out = []
    for ell in range(1, max(t.depth for t in nets) + 2):
        for t, net in enumerate(nets):
            if ell <= net.depth or (ell == net.depth + 1 and net.output_relu):
                out.extend((t, ell, i) for i in range(len(net.b[ell - 1])))
    return out


def _form(net: DeepNet, ell: int, i: int, below: list[list[Fraction]], m: int) -> list[Fraction]:
    """W_ℓ[i]·h + b_ℓ[i] as a form of x, from the forms of the layer below."""
    row = net.W[ell - 1][i]
    charge(m + 1, "the forms of a phased layer")
    out = [Fraction(0)] * m + [net.b[ell - 1][i]]
    for w, f in zip(row, below, strict=True):
        if w:
            charge_axpy(out, f, w, "the forms of a phased layer")
            out = [o + w * x for o, x in zip(out, f, strict=True)]
    return out


class _Walk:
    def __init__(self, nets: list[DeepNet], tree: list):
        self.nets, self.tree, self.next = nets, tree, 0
        self.m = nets[0].m
        self.order = _order(nets)
        self.leaves = {"equal": 0, "empty": 0, "flat": 0}

    def node(self) -> tuple[int, list]:
        if self.next >= len(self.tree):
            raise Reject("proof.phases ends before the walk of the neurons does")
        s = self.next
        self.next += 1
        item = self.tree[s]
        if not isinstance(item, list) or not item or item[0] not in ("split", "empty", "flat", "equal"):
            raise Reject(f"proof.phases[{s}]: a node is [\"split\"], [\"empty\", μ], [\"flat\", μ] or [\"equal\"]")
        return s, item

    def walk(self, at: int, below: list[list], current: list[list], region: list[list[Fraction]]) -> None:
        m, order = self.m, self.order
        while at < len(order):
            t, ell, i = order[at]
            a = _form(self.nets[t], ell, i, below[t], m)
            if any(a[:m]):
                s, item = self.node()
                if item != ["split"]:
                    raise Reject(f"proof.phases[{s}]: neuron {i} of layer {ell} of network {t + 1} is not constant "
                                 "on its region: expected [\"split\"]")
                for sign in (1, -1):
                    g = [sign * x for x in a]
                    child = region + [g]
                    if self.next < len(self.tree) and isinstance(self.tree[self.next], list) and \
                            self.tree[self.next][:1] in (["empty"], ["flat"]):
                        self._closed(child)
                    else:
                        h = a if sign == 1 else [Fraction(0)] * (m + 1)
                        self.walk(at + 1, *self._advance(t, ell, below, current, h), child)
                return
            h = a if a[m] >= 0 else [Fraction(0)] * (m + 1)
            below, current = self._advance(t, ell, below, current, h)
            at += 1
        s, item = self.node()
        if item != ["equal"]:
            raise Reject(f"proof.phases[{s}]: every neuron is phased here: expected [\"equal\"]")
        outs = []
        for t, net in enumerate(self.nets):
            last = below[t]
            charge(net.k * (m + 1), "the output forms of a region")
            outs.append(last if net.output_relu else [_form(net, net.depth + 1, j, last, m) for j in range(net.k)])
        if outs[0] != outs[1]:
            raise Reject(f"proof.phases[{s}]: the two networks' affine maps differ on this region")
        self.leaves["equal"] += 1

    def _advance(self, t: int, ell: int, below: list, current: list, h: list) -> tuple[list, list]:
        below, current = list(below), [list(c) for c in current]
        current[t].append(h)
        if len(current[t]) == len(self.nets[t].b[ell - 1]):
            below[t], current[t] = current[t], []
        return below, current

    def _closed(self, region: list[list[Fraction]]) -> None:
        s, (kind, *rest) = self.node()
        if len(rest) != 1:
            raise Reject(f"proof.phases[{s}]: [\"{kind}\", μ]")
        mu = [rational(u) for u in seq(rest[0], len(region), f"proof.phases[{s}][1]")]
        if any(u < 0 for u in mu):
            raise Reject(f"proof.phases[{s}]: a multiplier is negative")
        if any(max(abs(u.numerator).bit_length(), u.denominator.bit_length()) > MAX_MULTIPLIER_BITS for u in mu):
            raise Reject(f"beyond the checker's bounds: proof.phases[{s}]: a multiplier of more than "
                         f"{MAX_MULTIPLIER_BITS} bits")
        charge(self.m + 1, "a region's multipliers")
        total = [Fraction(0)] * (self.m + 1)
        for u, g in zip(mu, region, strict=True):
            if u:
                charge_axpy(total, g, u, "a region's multipliers")
                total = [x + u * y for x, y in zip(total, g, strict=True)]
        if any(total[:self.m]):
            raise Reject(f"proof.phases[{s}]: the combination of the region's constraints is not constant")
        if kind == "empty" and not total[self.m] < 0:
            raise Reject(f"proof.phases[{s}]: the combination is not a negative constant: the region is not shown "
                         "empty")
        if kind == "flat" and (total[self.m] != 0 or not any(u > 0 and any(g[:self.m]) for u, g in
                                                               zip(mu, region, strict=True))):
            raise Reject(f"proof.phases[{s}]: the combination does not vanish with a positive multiplier on a "
                         "non-constant constraint: the region is not shown flat")
        self.leaves[kind] += 1


def check_phases(F, nets: list[DeepNet], proof: dict, rep: Report) -> None:
    """f1 = f2 by phase splitting (module docstring)."""
    if not isinstance(F, QQ):
        raise Reject("phase splitting is replayed over QQ")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the networks differ in input or output size")
    tree = seq(proof["phases"], None, "proof.phases")
    if len(tree) > MAX_NODES:
        raise Reject(f"beyond the checker's bounds: {len(tree)} nodes (at most {MAX_NODES})")
    if any(len(b) == 0 for t in nets for b in t.b[:-1]):
        raise Reject("phase splitting reads networks whose hidden layers have at least one neuron")
    if t1.m > MAX_INPUTS:
        raise Reject(f"beyond the checker's bounds: {t1.m} inputs (phase splitting at most {MAX_INPUTS})")
    walk = _Walk(nets, tree)
    if len(walk.order) > MAX_NEURONS:
        raise Reject(f"beyond the checker's bounds: {len(walk.order)} neurons to phase (at most {MAX_NEURONS})")
    charge(len(tree) + t1.m * (t1.m + 1), "the phase tree's nodes and the input forms")
    m = t1.m
    identity = [[Fraction(int(q == r)) for r in range(m)] + [Fraction(0)] for q in range(m)]
    walk.walk(0, [identity, identity], [[], []], [])
    if walk.next != len(tree):
        raise Reject(f"proof.phases goes on after the walk ends ({len(tree) - walk.next} nodes left)")
    rep.checks["phase splitting: the two networks' affine maps equal on a region"] += walk.leaves["equal"]
    rep.checks["phase splitting: a region shown empty (Farkas)"] += walk.leaves["empty"]
    rep.checks["phase splitting: a region shown without interior"] += walk.leaves["flat"]
    rep.facts.append(f"f1 = f2 on all of R^{m}: {walk.leaves['equal']} regions with equal affine maps, "
                     f"{walk.leaves['empty']} empty, {walk.leaves['flat']} without interior")

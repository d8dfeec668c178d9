"""Deep ReLU networks: a sound three-valued decision of ρ(θ1) = ρ(θ2) (MATH.md, Part III).

1. Reduction. The moves D1 (zero output column), D2 (constant neuron), D3 (positive merge) and D4 (dead on
   the orthant, layers ℓ ≥ 2) are applied until none applies. Neurons keep their indices; a step names the
   layer and the neuron, and deleted neurons drop out of every later row and column.
2. Layerwise canonical form. From layer 1 upwards, each neuron's row (W_ℓ[j], b_ℓ[j]) is divided by the
   absolute value of its first nonzero entry (the factor multiplies column j of W_{ℓ+1}) and the neurons are
   sorted by their normalized rows. Two reduced parameters are H-related iff their forms are equal.
3. EQUIVALENT (block lemma with aligned layers 0, 1, …, L−1 and one block of two layers on top): when the forms
   agree on layers 1..L−1, the H elements g_1, …, g_{L−1} relate the two reduced networks there, and the top
   block N_i(u) = W_{L+1} σ(W_L u + b_L) + b_{L+1} (u the aligned layer L−1, the input x when L = 1) is decided
   by Part I, complete for it. Equal blocks give ρ(θ1) = ρ(θ2), and σ∘ρ as well with output ReLUs on both.
4. NOT EQUIVALENT: a rational point where the outputs differ, found by a float screen of random points (every
   candidate re-evaluated exactly) and by exact line tests (``line_test``) through the kinks of the first
   layer's unmatched neurons and random lines.
5. Otherwise UNDECIDED, with the first layer whose forms differ, its unmatched neurons and the lines tried.

Cost: the reduction and the forms are linear in the weights plus a sort per layer and one pass per round of
moves; Part I on the top block is O(n(m + k)) plus a sort; a line test is O(weights × breakpoints) exact
operations, and the screen O(weights × points) in floating point.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cmp_to_key

import numpy as np

from certsym.core.deep import LayeredNetwork, float_forward, float_layers
from certsym.core.network import Network
from certsym.core.reduction import Key
from certsym.decide.deadline import Deadline
from certsym.decide.equivalence import Verdict
from certsym.decide.equivalence import decide as decide_shallow
from certsym.errors import InputError
from certsym.numbers import QQ, Field, Scalar, rational_from_float

EQUIVALENT, NOT_EQUIVALENT, UNDECIDED = "equivalent", "not_equivalent", "undecided"
LINE_WEIGHTS = 400_000  # exact line tests are run on networks with at most this many weights
SCREEN_POINTS = 256  # random points of the float screen


@dataclass
class Working:
    """A parameter being reduced: mutable rows, and the alive neurons of each hidden layer (by index)."""

    field: Field
    m: int
    W: list[list[list[Scalar]]]  # W[ℓ-1][i][q]: layer ℓ, neuron i, input q (all original indices)
    b: list[list[Scalar]]
    alive: list[list[int]]  # alive[ℓ-1]: the alive neurons of hidden layer ℓ, increasing (ℓ = 1..L)

    @classmethod
    def of(cls, theta: LayeredNetwork) -> Working:
        return cls(theta.field, theta.m, [[list(row) for row in layer.W] for layer in theta.layers],
                   [list(layer.b) for layer in theta.layers], [list(range(layer.width)) for layer in
                                                                theta.layers[:-1]])

    @property
    def depth(self) -> int:
        return len(self.W) - 1

    def inputs(self, ell: int) -> list[int]:
        """The alive inputs of layer ℓ: the coordinates of x for ℓ = 1, else the alive neurons of layer ℓ − 1."""
        return list(range(self.m)) if ell == 1 else self.alive[ell - 2]

    def outputs(self, ell: int) -> list[int]:
        """The alive neurons of layer ℓ (every output of the last layer)."""
        return self.alive[ell - 1] if ell <= self.depth else list(range(len(self.b[-1])))

    def row(self, ell: int, j: int) -> list[Scalar]:
        """(W_ℓ[j] on the alive inputs, b_ℓ[j])."""
        W = self.W[ell - 1][j]
        return [W[q] for q in self.inputs(ell)] + [self.b[ell - 1][j]]


@dataclass
class DeepReduction:
    """θ, its reduced parameter (alive neurons in increasing order of their original indices) and the steps."""

    original: LayeredNetwork
    work: Working
    steps: list[dict] = field(default_factory=list)

    @property
    def alive(self) -> list[list[int]]:
        return self.work.alive


def _normalized(F: Field, row: Sequence[Scalar]) -> tuple[Key, Scalar] | None:
    """(row / |first nonzero entry|, that factor), or None for a zero row."""
    lead = next((x for x in row if F.sign(x) != 0), None)
    if lead is None:
        return None
    lam = lead if F.sign(lead) > 0 else -lead
    inv = F.one / lam
    return Key([x * inv for x in row]), lam


def reduce(theta: LayeredNetwork) -> DeepReduction:
    """MATH.md Part III, moves D1–D4 until none applies. Cost: one pass over the weights per round of moves (a
    round deletes at least one neuron), each pass linear plus the hashing of normalized rows."""
    red = DeepReduction(theta, Working.of(theta))
    w, F = red.work, theta.field
    changed = True
    while changed:
        changed = False
        for ell in range(1, w.depth + 1):
            changed |= _reduce_layer(red, ell, F)
    return red


def _delete(w: Working, ell: int, j: int) -> None:
    w.alive[ell - 1].remove(j)


def _reduce_layer(red: DeepReduction, ell: int, F: Field) -> bool:
    w, steps, changed = red.work, red.steps, False
    nxt = w.W[ell]  # W_{ℓ+1}
    for j in list(w.alive[ell - 1]):
        column = [nxt[i][j] for i in w.outputs(ell + 1)]
        if all(F.sign(x) == 0 for x in column):
            steps.append({"step": "D1", "layer": ell, "neuron": j})
            _delete(w, ell, j)
            changed = True
            continue
        row = w.row(ell, j)
        if all(F.sign(x) == 0 for x in row[:-1]):
            s = row[-1] if F.sign(row[-1]) > 0 else F.zero
            if F.sign(s) != 0:
                for i in w.outputs(ell + 1):
                    w.b[ell][i] = w.b[ell][i] + nxt[i][j] * s
            steps.append({"step": "D2", "layer": ell, "neuron": j})
            _delete(w, ell, j)
            changed = True
            continue
        if ell >= 2 and all(F.sign(x) <= 0 for x in row):
            steps.append({"step": "D4", "layer": ell, "neuron": j})
            _delete(w, ell, j)
            changed = True
    first: dict[Key, tuple[int, Scalar]] = {}
    for j in list(w.alive[ell - 1]):
        key, lam = _normalized(F, w.row(ell, j))
        if key not in first:
            first[key] = (j, lam)
            continue
        i, lam_i = first[key]
        ratio = lam / lam_i  # row_j = ratio · row_i, ratio > 0
        for r in w.outputs(ell + 1):
            nxt[r][i] = nxt[r][i] + ratio * nxt[r][j]
        steps.append({"step": "D3", "layer": ell, "into": i, "from": j, "lambda": ratio})
        _delete(w, ell, j)
        changed = True
    return changed


@dataclass
class Form:
    """The layerwise canonical form of a reduced parameter: per hidden layer, the alive neurons in canonical order
    with their factors λ (row = λ · normalized row in the coordinates of the layer before), and the normalized rows."""

    order: list[list[int]]
    scale: list[list[Scalar]]
    rows: list[list[Key]]


def _compare(F: Field):
    def cmp(u: Key, v: Key) -> int:
        for x, y in zip(u, v, strict=True):
            s = F.sign(x - y)
            if s:
                return s
        return 0
    return cmp_to_key(cmp)


def canonical_form(red: DeepReduction, upto: int) -> Form:
    """The canonical form of hidden layers 1..``upto`` (MATH.md Part III). Cost: linear in those layers' weights
    plus a sort per layer."""
    w, F = red.work, red.original.field
    form = Form([], [], [])
    prev_order, prev_scale = list(range(w.m)), [F.one] * w.m
    for ell in range(1, upto + 1):
        entries = []
        for j in w.alive[ell - 1]:
            W = w.W[ell - 1][j]
            row = [W[q] * s for q, s in zip(prev_order, prev_scale, strict=True)] + [w.b[ell - 1][j]]
            key, lam = _normalized(F, row)
            entries.append((key, j, lam))
        entries.sort(key=lambda e: _compare(F)(e[0]))
        form.order.append([j for _, j, _ in entries])
        form.scale.append([lam for _, _, lam in entries])
        form.rows.append([key for key, _, _ in entries])
        prev_order, prev_scale = form.order[-1], form.scale[-1]
    return form


def reduced_network(red: DeepReduction) -> LayeredNetwork:
    """θ after the moves D1–D4 (MATH.md Part III): each hidden layer's alive neurons in increasing order of their
    original indices. Every move preserves ρ, so ρ(reduced) = ρ(θ); at depth ≥ 2 it need not be the smallest
    network computing ρ (the moves are sound, not complete). Cost: linear in the weights."""
    w, F = red.work, red.original.field
    layers, prev = [], list(range(w.m))
    for ell in range(1, w.depth + 2):
        outs = w.outputs(ell)
        layers.append(([[w.W[ell - 1][j][q] for q in prev] for j in outs], [w.b[ell - 1][j] for j in outs]))
        prev = outs
    return LayeredNetwork.build(layers, F, w.m, red.original.output_relu)


def canonical_network(red: DeepReduction) -> LayeredNetwork:
    """The layerwise canonical form of the reduced parameter (MATH.md Part III) as a network: every hidden
    neuron's row normalized (first nonzero entry ±1, the factor pushed into the next layer's column), the neurons
    of each layer sorted by their normalized rows. Two reduced parameters are H-related iff their canonical
    networks are equal; it computes ρ(θ). Cost: linear in the weights plus a sort per layer."""
    w, F, L = red.work, red.original.field, red.work.depth
    form = canonical_form(red, L)
    layers = [([list(key)[:-1] for key in rows], [list(key)[-1] for key in rows]) for rows in form.rows]
    order, scale = form.order[-1], form.scale[-1]
    layers.append(([[w.W[L][r][j] * s for j, s in zip(order, scale, strict=True)] for r in range(len(w.b[L]))],
                   list(w.b[L])))
    return LayeredNetwork.build(layers, F, w.m, red.original.output_relu)


def top_block(red: DeepReduction, inputs: Sequence[tuple[int, Scalar]] | None) -> Network:
    """The top block N(u) = W_{L+1} σ(W_L u + b_L) + b_{L+1} of the reduced parameter (MATH.md Part III, block
    lemma). ``inputs`` lists, for each coordinate p of u, the neuron of layer L − 1 it stands for and the factor
    its column is multiplied by (None when L = 1: u = x). The block's neurons are the alive neurons of layer L in
    increasing order (certificates/FORMAT.md, ``deep_equivalent``). When layer L − 1 has no alive neuron, u is one
    coordinate with zero columns (the block is constant). Cost: linear in the two layers."""
    w, F, L = red.work, red.original.field, red.work.depth
    pairs = [(q, F.one) for q in range(w.m)] if inputs is None else list(inputs)
    if not pairs:
        A = [[F.zero] for _ in w.alive[L - 1]]
        b = [w.b[L - 1][j] for j in w.alive[L - 1]]
        M = [[w.W[L][r][j] for j in w.alive[L - 1]] for r in range(len(w.b[L]))]
        return Network.build(M, A, b, list(w.b[L]), F, 1)
    A = [[w.W[L - 1][j][q] * s for q, s in pairs] for j in w.alive[L - 1]]
    b = [w.b[L - 1][j] for j in w.alive[L - 1]]
    M = [[w.W[L][r][j] for j in w.alive[L - 1]] for r in range(len(w.b[L]))]
    return Network.build(M, A, b, list(w.b[L]), F, len(pairs))


def blocks(reds: tuple[DeepReduction, DeepReduction],
           alignment: list[list[tuple[int, int, Scalar]]]) -> tuple[Network, Network]:
    """The two top blocks on the common input u = h2 of layer L − 1 (listed in the alignment's order): θ1's columns
    are those of its aligned neurons times d (z1_i = d · z2_j), θ2's its own. Cost: linear in the two layers."""
    if not alignment:
        return top_block(reds[0], None), top_block(reds[1], None)
    last = alignment[-1]
    return top_block(reds[0], [(i, d) for i, _, d in last]), top_block(reds[1], [(j, reds[1].original.field.one)
                                                                                 for _, j, _ in last])


@dataclass
class DeepVerdict:
    """The three-valued verdict on ρ(θ1) = ρ(θ2): its ``status``, and its evidence. EQUIVALENT: both reductions,
    the alignment of layers 1..L−1 ([i, j, d] with z1_i = d · z2_j) and Part I's verdict on the top blocks.
    NOT EQUIVALENT: the witness and both exact outputs. UNDECIDED: the reason."""

    status: str
    theta1: LayeredNetwork
    theta2: LayeredNetwork
    reductions: tuple[DeepReduction, DeepReduction] | None = None
    alignment: list[list[tuple[int, int, Scalar]]] = field(default_factory=list)
    block: Verdict | None = None
    witness: list[Scalar] | None = None
    values: tuple[list[Scalar], list[Scalar]] | None = None
    reason: str = ""
    lines: int = 0
    phases: list | None = None  # EQUIVALENT by phase splitting: its tree (``certsym.decide.phases``)

    @property
    def equivalent(self) -> bool:
        return self.status == EQUIVALENT


def _align(f1: Form, f2: Form) -> tuple[int | None, list[list[tuple[int, int, Scalar]]]]:
    """The first layer whose forms differ (None if none), and the alignment of the layers before it."""
    out = []
    for ell, (r1, r2) in enumerate(zip(f1.rows, f2.rows, strict=True), 1):
        if r1 != r2:
            return ell, out
        out.append([(i, j, s1 / s2) for i, j, s1, s2 in zip(f1.order[ell - 1], f2.order[ell - 1],
                                                             f1.scale[ell - 1], f2.scale[ell - 1], strict=True)])
    return None, out


def decide(theta1: LayeredNetwork, theta2: LayeredNetwork, seed: int = 0,
           deadline: Deadline | None = None) -> DeepVerdict:
    """MATH.md Part III: EQUIVALENT with the block-lemma evidence, NOT EQUIVALENT with an exact witness, or
    UNDECIDED with the reason. ``deadline`` bounds the phase splitting's time (its node count bounds it anyway).
    Complete for one hidden layer without output ReLUs (Part I). Cost: see the module."""
    if (theta1.m, theta1.k) != (theta2.m, theta2.k):
        raise InputError(f"the networks have different shapes: m = {theta1.m}, k = {theta1.k} and m = {theta2.m}, "
                         f"k = {theta2.k}")
    if theta1.field != theta2.field:
        raise InputError("the two networks are over different fields")
    verdict = DeepVerdict(UNDECIDED, theta1, theta2)
    reason = ""
    if theta1.output_relu != theta2.output_relu:
        reason = "one network ends in a ReLU and the other does not: no certificate of equality is built for that"
    elif theta1.depth != theta2.depth:
        reason = f"the networks have {theta1.depth} and {theta2.depth} hidden layers: no layer alignment"
    else:
        reds = (reduce(theta1), reduce(theta2))
        L = theta1.depth
        widths = [(len(a), len(b)) for a, b in zip(reds[0].alive[:L - 1], reds[1].alive[:L - 1], strict=True)]
        bad = next((ell for ell, (a, b) in enumerate(widths, 1) if a != b), None)
        if bad is not None:
            reason = (f"hidden layer {bad} has {widths[bad - 1][0]} and {widths[bad - 1][1]} neurons after the moves "
                      "D1–D4: no alignment there")
        else:
            forms = (canonical_form(reds[0], L - 1), canonical_form(reds[1], L - 1))
            first, alignment = _align(*forms)
            if first is not None:
                unmatched = len(set(forms[0].rows[first - 1]) ^ set(forms[1].rows[first - 1]))
                reason = (f"hidden layer {first} has no alignment after the moves D1–D4 ({unmatched} normalized "
                          "neurons without a partner)")
            else:
                tops = blocks(reds, alignment)
                part1 = decide_shallow(*tops)
                if part1.equivalent:
                    return DeepVerdict(EQUIVALENT, theta1, theta2, reds, alignment, part1)
                reason = (f"the top blocks (hidden layer {L} and the output) differ as functions on all of "
                          f"R^{tops[0].m}" + ("" if L == 1 else "; they may still agree on the image of the "
                                                 "layers below"))
                if L == 1 and not theta1.output_relu:  # Part I is complete: its witness decides
                    x = list(part1.witness)
                    return DeepVerdict(NOT_EQUIVALENT, theta1, theta2, witness=x,
                                       values=(theta1(x), theta2(x)))
    found = find_witness(theta1, theta2, seed, verdict)
    if found is not None:
        return found
    verdict.reason = f"{reason}; no witness on {verdict.lines} exact lines and {SCREEN_POINTS} screened points"
    return _by_phases(verdict, deadline)


def _by_phases(verdict: DeepVerdict, deadline: Deadline | None = None) -> DeepVerdict:
    """An UNDECIDED verdict decided by phase splitting (``certsym.decide.phases``) when its budget allows:
    EQUIVALENT with the tree, or NOT EQUIVALENT with a witness inside a region whose maps differ; else the verdict
    with the reason the splitting stopped added."""
    from certsym.decide import phases

    t1, t2 = verdict.theta1, verdict.theta2
    found = phases.decide(t1, t2, deadline=deadline)
    if found is None:
        return verdict
    if found.tree is not None:
        return DeepVerdict(EQUIVALENT, t1, t2, phases=found.tree,
                           reason=f"phase splitting: {found.regions} regions with equal affine maps")
    if found.witness is not None:
        x = found.witness
        return DeepVerdict(NOT_EQUIVALENT, t1, t2, witness=x, values=(t1(x), t2(x)))
    verdict.reason += f"; phase splitting stopped: {found.reason}"
    return verdict


def _exact_differs(theta1: LayeredNetwork, theta2: LayeredNetwork, x: list) -> tuple[list, list] | None:
    v1, v2 = theta1(x), theta2(x)
    return (v1, v2) if any(a != b for a, b in zip(v1, v2, strict=True)) else None


def find_witness(theta1: LayeredNetwork, theta2: LayeredNetwork, seed: int, log: DeepVerdict) -> DeepVerdict | None:
    """A rational point where the outputs differ, or None: the float screen's best points re-evaluated exactly,
    then exact line tests (small networks only, at most LINE_WEIGHTS weights each). Cost: see the module."""
    F = theta1.field
    simple = [[F.zero] * theta1.m]
    if theta1.m <= 64:
        # the corners e_p of the data box [0, 1]^m before the −e_p outside it: a witness inside is the useful one
        simple += [[F(s) if q == p else F.zero for q in range(theta1.m)] for s in (1, -1) for p in range(theta1.m)]
    for x in simple:  # small witnesses first: an output bias or a single-input change shows there
        values = _exact_differs(theta1, theta2, x)
        if values is not None:
            return DeepVerdict(NOT_EQUIVALENT, theta1, theta2, witness=x, values=values)
    rng = np.random.default_rng(seed)
    if F is QQ:
        l1, l2 = float_layers(theta1), float_layers(theta2)
        third = SCREEN_POINTS // 3
        X = np.concatenate([rng.uniform(0, 1, (third, theta1.m)), rng.uniform(-1, 1, (third, theta1.m)),
                            rng.normal(0, 4, (SCREEN_POINTS - 2 * third, theta1.m))])
        with np.errstate(all="ignore"):
            gap = np.nan_to_num(np.abs(float_forward(l1, X, theta1.output_relu) -
                                       float_forward(l2, X, theta2.output_relu)).max(axis=1), nan=0.0)
        inside = [p for p in np.argsort(-gap[:third])[:4] if gap[p] > 0]  # points of [0, 1]^m first
        for p in [*inside, *np.argsort(-gap)[:4]]:
            # the point rounded to 1/64 first (a short witness), then as it is: a float is the dyadic it denotes
            for point in (np.round(X[p] * 64) / 64, X[p]):
                x = [rational_from_float(float(t)) for t in point]
                values = _exact_differs(theta1, theta2, x)
                if values is not None:
                    return DeepVerdict(NOT_EQUIVALENT, theta1, theta2, witness=x, values=values)
    if max(theta1.weights, theta2.weights) > LINE_WEIGHTS:
        return None
    gen = random.Random(seed)
    for p, d in _lines(theta1, theta2, gen):
        log.lines += 1
        t = line_test(theta1, theta2, p, d)
        if t is not None:
            x = [pi + t * di for pi, di in zip(p, d, strict=True)]
            values = _exact_differs(theta1, theta2, x)
            if values is not None:
                return DeepVerdict(NOT_EQUIVALENT, theta1, theta2, witness=x, values=values)
    return None


def _lines(theta1: LayeredNetwork, theta2: LayeredNetwork, gen: random.Random, count: int = 8):
    """Lines p + t·d: across the kink of each first-layer neuron (at most 16 of them), then random ones."""
    F, m = theta1.field, theta1.m
    shown = 0
    for theta in (theta1, theta2):
        layer = theta.layers[0]
        for row, bias in zip(layer.W, layer.b, strict=True):
            q = next((i for i, a in enumerate(row) if F.sign(a) != 0), None)
            if q is None or shown >= 16:
                continue
            p = [F(gen.randint(-8, 8)) / 4 for _ in range(m)]
            # move p onto the kink row·x + bias = 0 along coordinate q, and cross it along the normal
            p[q] = p[q] - (sum((a * x for a, x in zip(row, p, strict=True)), F.zero) + bias) / row[q]
            shown += 1
            yield p, list(row)
    for _ in range(count):
        yield ([F(gen.randint(-16, 16)) / 8 for _ in range(m)], [F(gen.randint(-16, 16)) / 8 or F.one
                                                                 for _ in range(m)])


def _breakpoints(theta: LayeredNetwork, p: list, d: list) -> list[Scalar]:
    """The t where some neuron of θ changes sign on the line p + t·d (and the output ReLU, if any): every z_ℓ is
    piecewise affine in t, computed exactly piece by piece, layer by layer."""
    F = theta.field
    cuts: list[Scalar] = []
    # h as affine functions of t on each piece: the pieces are delimited by the sorted cuts found so far
    for ell in range(1, len(theta.layers) + 1):
        relu = ell < len(theta.layers) or theta.output_relu
        if not relu:
            break
        pieces = sorted(set(cuts), key=_compare_scalar(F))
        probes = _probe_points(F, pieces)
        new = []
        for lo_t, hi_t, mid in probes:
            z0, z1 = _layer_affine(theta, ell, p, d, mid)
            for a0, a1 in zip(z0, z1, strict=True):  # z(t) = a0 + a1·t on this piece
                if F.sign(a1) == 0:
                    continue
                t = -a0 / a1
                if (lo_t is None or F.sign(t - lo_t) > 0) and (hi_t is None or F.sign(hi_t - t) > 0):
                    new.append(t)
        cuts.extend(new)
    return sorted(set(cuts), key=_compare_scalar(F))


def _compare_scalar(F: Field):
    return cmp_to_key(lambda x, y: F.sign(x - y))


def _probe_points(F: Field, cuts: list[Scalar]) -> list[tuple[Scalar | None, Scalar | None, Scalar]]:
    """(lo, hi, a point strictly inside) for each open piece between consecutive cuts (None: unbounded)."""
    if not cuts:
        return [(None, None, F.zero)]
    out = [(None, cuts[0], cuts[0] - 1)]
    out += [(a, b, (a + b) / 2) for a, b in zip(cuts, cuts[1:], strict=False)]
    out.append((cuts[-1], None, cuts[-1] + 1))
    return out


def _layer_affine(theta: LayeredNetwork, ell: int, p: list, d: list, t: Scalar) -> tuple[list, list]:
    """z_ℓ(s) = a0 + a1·s on the piece containing t (the activation pattern of layers < ℓ read at t)."""
    F = theta.field
    h0 = list(p)
    h1 = list(d)
    for k, layer in enumerate(theta.layers[:ell], 1):
        z0 = [sum((w * x for w, x in zip(row, h0, strict=True)), bias) for row, bias in zip(layer.W, layer.b,
                                                                                         strict=True)]
        z1 = [sum((w * x for w, x in zip(row, h1, strict=True)), F.zero) for row in layer.W]
        if k == ell:
            return z0, z1
        on = [F.sign(a + b * t) > 0 for a, b in zip(z0, z1, strict=True)]
        h0 = [a if o else F.zero for a, o in zip(z0, on, strict=True)]
        h1 = [b if o else F.zero for b, o in zip(z1, on, strict=True)]
    raise AssertionError("unreachable")


def line_test(theta1: LayeredNetwork, theta2: LayeredNetwork, p: list, d: list) -> Scalar | None:
    """MATH.md Part III, "the exact line test": a t with ρ(θ1)(p + t·d) ≠ ρ(θ2)(p + t·d), or None when they agree on
    the whole line. Both are piecewise affine in t with breakpoints in the union B of their breakpoints, so they
    agree on the line iff they agree at every point of B and at one point beyond each end (at 0 and 1 if B is
    empty). Cost O(weights · |B|) exact operations."""
    F = theta1.field
    cuts = sorted(set(_breakpoints(theta1, p, d)) | set(_breakpoints(theta2, p, d)), key=_compare_scalar(F))
    probes = list(cuts) + ([cuts[0] - 1, cuts[-1] + 1] if cuts else [F.zero, F.one])
    for t in probes:
        x = [pi + t * di for pi, di in zip(p, d, strict=True)]
        if theta1(x) != theta2(x):
            return t
    return None

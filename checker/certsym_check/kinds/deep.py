"""``deep_equivalent`` and ``deep_not_equivalent`` (deep ReLU networks, MATH.md Part III).

``deep_equivalent`` is the block lemma with hidden layers 1..L−1 aligned and one block of two layers on top:
1. the moves D1–D4 are replayed on each network, each precondition checked exactly (D1 a zero output column,
   D2 a zero row, folded into the next bias as W_{ℓ+1}[:, j]·σ(b_ℓ[j]), D3 a positive multiple of another row,
   whose column is added, D4 a row ≤ 0 entrywise in a layer ℓ ≥ 2);
2. each aligned layer ℓ pairs the alive neurons of both networks one to one, [i, j, d] with d > 0, and
   W1_ℓ[i][i']·d' = d·W2_ℓ[j][j'] for every pair [i', j', d'] of the layer below (the inputs, d' = 1, for
   ℓ = 1), and b1_ℓ[i] = d·b2_ℓ[j]: then z1_i = d·z2_j, by induction;
3. the top blocks N(u) = W_{L+1} σ(W_L u + b_L) + b_{L+1}, on u = the alive neurons of θ2's layer L − 1 in the
   order of the last alignment (x when L = 1; θ1's column for u_p is its neuron i_p times d_p; one coordinate
   with zero columns when no neuron of layer L − 1 is alive), are equal by a Part I proof
   (``kinds.equivalence.check_equivalent``).
Both networks must end alike (with or without an output ReLU). ``deep_not_equivalent`` evaluates a witness
exactly through every layer. Cost: linear in the weights (the alignment checks n_ℓ·n_{ℓ−1} products per layer),
plus the Part I proof's.
"""

from __future__ import annotations

from fractions import Fraction

from certsym_check.budget import (
    charge,
    charge_axpy,
    charge_int_products,
    charge_ops,
    charge_products,
    int_cost,
    lcm,
)
from certsym_check.core import EVAL, Net, Report, index, keys, seq
from certsym_check.errors import Reject
from certsym_check.fields import QQ
from certsym_check.kinds.deep_files import Aligned, BlockRows, FloatMatrix, evaluate_layer, referenced_layers
from certsym_check.kinds.equivalence import check_equivalent

PHASES = "phase splitting"  # the other proof of f1 = f2 (``kinds.phases``)
LEMMA = "block lemma"
MAX_FREE_INPUTS = 1 << 16  # inputs a network may declare when no weight is there to pay for them
MOVES = {"D1": "D1 zero output", "D2": "D2 constant neuron", "D3": "D3 merge", "D4": "D4 dead on the orthant"}


class DeepNet:
    """θ as layers (W_ℓ, b_ℓ) and whether it ends in a ReLU; ``alive`` holds the hidden neurons not deleted."""

    def __init__(self, F, params: object, where: str):
        p = keys(params, {"layers", "m", "output_relu"}, where)
        m = index(p["m"], 10**9, f"{where}.m")
        if m < 1 or type(p["output_relu"]) is not bool:
            raise Reject(f"{where}: m must be positive and output_relu true or false")
        layers = seq(p["layers"], None, f"{where}.layers")
        if len(layers) < 2:
            raise Reject(f"{where}: a deep network has at least one hidden layer and an output layer")
        first = layers[0].get("W") if isinstance(layers[0], dict) else None
        if m > MAX_FREE_INPUTS and not (isinstance(first, list) and first):  # m is not paid for by any weight
            raise Reject(f"{where}: m = {m} with an empty first layer: at most {MAX_FREE_INPUTS} inputs then")
        self.F, self.m, self.output_relu, self.W, self.b = F, m, p["output_relu"], [], []
        width = m
        for ell, layer in enumerate(layers, 1):
            w = f"{where}.layers[{ell - 1}]"
            item = keys(layer, {"W", "b"}, w)
            b = seq(item["b"], None, f"{w}.b")
            W = seq(item["W"], len(b), f"{w}.W")
            self.W.append([[F.number(x) for x in seq(row, width, f"{w}.W[]")] for row in W])
            self.b.append([F.number(x) for x in b])
            width = len(b)
        if width < 1:
            raise Reject(f"{where}: the output dimension must be positive")
        self.k, self.depth = width, len(layers) - 1
        self.widths = (m, *(len(b) for b in self.b))
        self.alive = [set(range(len(b))) for b in self.b[:-1]]

    @classmethod
    def referenced(cls, F, record: dict, file, where: str, rep: Report) -> DeepNet:
        """θ from the model file a certificate references by SHA-256 (``kinds.deep_files``): its weight matrices
        stay in the file's tensors, read as Fractions where the replay needs them."""
        t = cls.__new__(cls)
        t.F = F
        t.m, t.W, t.b, t.output_relu = referenced_layers(record, file, where, rep)
        t.k, t.depth = len(t.b[-1]), len(t.b) - 1
        t.widths = (t.m, *(len(b) for b in t.b))
        t.alive = [set(range(len(b))) for b in t.b[:-1]]
        return t

    def inputs(self, ell: int) -> list[int]:
        return list(range(self.m)) if ell == 1 else sorted(self.alive[ell - 2])

    def outputs(self, ell: int) -> list[int]:
        return sorted(self.alive[ell - 1]) if ell <= self.depth else list(range(self.k))

    def row(self, ell: int, j: int) -> list:
        return [self.W[ell - 1][j][q] for q in self.inputs(ell)] + [self.b[ell - 1][j]]

    def evaluate(self, x: list) -> list:
        """The network's output at x, exactly (σ applied at the end when it ends in a ReLU). Over QQ each layer is
        one integer dot product per neuron: the inputs over their common denominator, each row over its own."""
        F, h = self.F, x
        for ell in range(1, self.depth + 2):
            if isinstance(self.W[ell - 1], FloatMatrix):
                z = evaluate_layer(self.W[ell - 1], self.b[ell - 1], h)
            elif isinstance(F, QQ):
                z = self._rational_layer(ell, h)
            else:
                z = []
                for row, bias in zip(self.W[ell - 1], self.b[ell - 1], strict=True):
                    charge_products(row, h, "evaluating a witness")
                    z.append(sum((w * t for w, t in zip(row, h, strict=True)), bias))
            h = [t if F.sign(t) > 0 else F.zero for t in z] if ell <= self.depth or self.output_relu else z
        return h

    def _rational_layer(self, ell: int, h: list) -> list:
        what = "evaluating a witness"
        D = lcm((t.denominator for t in h), what)
        H = [t.numerator * (D // t.denominator) for t in h]
        out = []
        for row, bias in zip(self.W[ell - 1], self.b[ell - 1], strict=True):
            den = lcm((w.denominator for w in row), what)
            nums = [w.numerator * (den // w.denominator) for w in row]
            charge_int_products(nums, H, what)
            total, scale = sum(a * b for a, b in zip(nums, H, strict=True)), den * D
            charge(2 * int_cost(total.bit_length(), scale.bit_length()), what)
            out.append(Fraction(total, scale) + bias)
        return out


def _neuron(t: DeepNet, ell: int, j: object, where: str) -> int:
    if ell > t.depth:
        raise Reject(f"{where}: layer {ell} is not a hidden layer")
    i = index(j, len(t.b[ell - 1]), where)
    if i not in t.alive[ell - 1]:
        raise Reject(f"{where}: neuron {i} of layer {ell} was already deleted")
    return i


def _column(W, j: int, rows: list[int]) -> list:
    """W[:, j] on ``rows``, exactly (Fractions, or raw floats of a referenced file's unchanged rows)."""
    return W.entries(j, rows) if isinstance(W, FloatMatrix) else [W[r][j] for r in rows]


def replay_moves(t: DeepNet, steps: object, rep: Report, where: str) -> None:
    """D1–D4 on ``t``, in order, each precondition verified exactly. Linear in the weights per step."""
    F = t.F
    for s, step in enumerate(seq(steps, None, where)):
        w = f"{where}[{s}]"
        name = step.get("step") if isinstance(step, dict) else None
        if not isinstance(name, str) or name not in MOVES:
            raise Reject(f"{w}: unknown step {str(name)[:40]!r}")
        if name == "D3":
            st = keys(step, {"step", "layer", "into", "from", "lambda"}, w)
        else:
            st = keys(step, {"step", "layer", "neuron"}, w)
        ell = index(st["layer"], t.depth + 1, w)
        if ell < 1:
            raise Reject(f"{w}: layers are numbered from 1")
        nxt, outs = t.W[ell], t.outputs(ell + 1)
        if name == "D3":
            i, j = _neuron(t, ell, st["into"], w), _neuron(t, ell, st["from"], w)
            lam = F.number(st["lambda"])
            if i == j or F.sign(lam) <= 0:
                raise Reject(f"{w}: a merge needs two neurons and lambda > 0")
            ri, rj = t.row(ell, i), t.row(ell, j)
            charge_products(ri, [lam] * len(ri), "a merge", accumulate=False)
            if any(y != lam * x for x, y in zip(ri, rj, strict=True)):
                raise Reject(f"{w}: row {j} is not lambda times row {i}")
            charge_axpy([nxt[r][i] for r in outs], [nxt[r][j] for r in outs], lam, "a merge")
            for r in outs:
                nxt[r][i] = nxt[r][i] + lam * nxt[r][j]
            t.alive[ell - 1].discard(j)
        else:
            j = _neuron(t, ell, st["neuron"], w)
            row = t.row(ell, j)
            if name == "D1" and (any(_column(nxt, j, outs)) if isinstance(nxt, FloatMatrix) else
                                  any(F.sign(nxt[r][j]) != 0 for r in outs)):
                raise Reject(f"{w}: column {j} of the next layer is not zero")
            if name == "D2":
                if any(F.sign(x) != 0 for x in row[:-1]):
                    raise Reject(f"{w}: row {j} is not zero")
                if F.sign(row[-1]) > 0:
                    v = [Fraction(x) if type(x) is float else x for x in _column(nxt, j, outs)]
                    charge_axpy([t.b[ell][r] for r in outs], v, row[-1], "a bias fold")
                    for r, x in zip(outs, v, strict=True):
                        t.b[ell][r] = t.b[ell][r] + x * row[-1]
            if name == "D4" and (ell < 2 or any(F.sign(x) > 0 for x in row)):
                raise Reject(f"{w}: D4 needs a layer >= 2 and a row <= 0 entrywise")
            t.alive[ell - 1].discard(j)
        rep.checks[MOVES[name]] += 1


def _block(t: DeepNet, inputs: list[tuple[int, object]]) -> Net:
    """The top block of ``t`` on the given inputs (neuron of layer L − 1 or coordinate of x, factor)."""
    L = t.depth
    neurons = sorted(t.alive[L - 1])
    net = Net.__new__(Net)
    net.F, net.m, net.k, net.n, net.c = t.F, max(len(inputs), 1), t.k, len(neurons), list(t.b[L])
    if isinstance(t.W[L - 1], FloatMatrix):  # a referenced file: rows read on demand, raw while unchanged
        net.rows = BlockRows(t.W[L - 1], t.b[L - 1], neurons, inputs)
        nxt = t.W[L]
        charge_ops(4 * t.k * len(neurons), "a top block's output columns")
        net.v = [[Fraction(x) for x in nxt.entries(j, list(range(t.k)))] if isinstance(nxt, FloatMatrix) else
                 [nxt[r][j] for r in range(t.k)] for j in neurons]
        return net
    net.rows = []
    for j in neurons:
        W = t.W[L - 1][j]
        charge_products([W[q] for q, _ in inputs], [d for _, d in inputs], "a top block", accumulate=False)
        # no alive neuron below: u is one coordinate with a zero column (the block is constant)
        net.rows.append(([W[q] * d for q, d in inputs] or [t.F.zero]) + [t.b[L - 1][j]])
    net.v = [[t.W[L][r][j] for r in range(t.k)] for j in neurons]
    net.c = list(t.b[L])
    net.n = len(neurons)
    return net


def check_deep_equivalent(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """The block lemma's replay (module docstring), or phase splitting (``kinds.phases``, imported for such a
    proof only). Linear in the weights plus the Part I proof."""
    if isinstance(proof, dict) and proof.get("statement") == PHASES:
        from certsym_check.kinds.phases import check_phases

        check_phases(F, nets, keys(proof, {"phases", "statement"}, "proof"), rep)
        return
    p = keys(proof, {"reduction", "alignment", "block", "statement"}, "proof")
    if p["statement"] != LEMMA:
        raise Reject(f"proof must cite {LEMMA!r}")
    t1, t2 = nets
    if (t1.m, t1.k, t1.depth, t1.output_relu) != (t2.m, t2.k, t2.depth, t2.output_relu):
        raise Reject("the networks differ in m, k, depth or their output ReLU")
    red = seq(p["reduction"], 2, "proof.reduction")
    replay_moves(t1, red[0], rep, "proof.reduction[theta1]")
    replay_moves(t2, red[1], rep, "proof.reduction[theta2]")
    L, one = t1.depth, F.one
    below = [(q, q, one) for q in range(t1.m)]
    for ell, layer in enumerate(seq(p["alignment"], L - 1, "proof.alignment"), 1):
        w = f"proof.alignment[{ell - 1}]"
        pairs = []
        for s, item in enumerate(seq(layer, None, w)):
            i, j, d = seq(item, 3, f"{w}[{s}]")
            pairs.append((_neuron(t1, ell, i, f"{w}[{s}]"), _neuron(t2, ell, j, f"{w}[{s}]"), F.number(d)))
        if sorted(i for i, _, _ in pairs) != sorted(t1.alive[ell - 1]) or \
                sorted(j for _, j, _ in pairs) != sorted(t2.alive[ell - 1]):
            raise Reject(f"{w}: the alignment does not pair the alive neurons of both networks one to one")
        raw = Aligned(below) if isinstance(t1.W[ell - 1], FloatMatrix) and isinstance(t2.W[ell - 1], FloatMatrix) \
            else None
        for i, j, d in pairs:
            if F.sign(d) <= 0:
                raise Reject(f"{w}: scalings must be positive")
            same = None if raw is None else raw.test(t1.W[ell - 1], i, t2.W[ell - 1], j, d)
            if same is not None:
                if not same or t1.b[ell - 1][i] != d * t2.b[ell - 1][j]:
                    raise Reject(f"{w}: z1_{i} != d * z2_{j} on layer {ell}")
                continue
            W1, W2 = t1.W[ell - 1][i], t2.W[ell - 1][j]
            charge_products([W1[a] for a, _, _ in below], [e for _, _, e in below], "an alignment", False)
            charge_products([W2[b] for _, b, _ in below], [d] * len(below), "an alignment", False)
            if any(W1[a] * e != d * W2[b] for a, b, e in below) or t1.b[ell - 1][i] != d * t2.b[ell - 1][j]:
                raise Reject(f"{w}: z1_{i} != d * z2_{j} on layer {ell}")
        rep.checks["H alignment of a hidden layer"] += 1
        below = pairs
    if L == 1:
        inputs1 = inputs2 = [(q, one) for q in range(t1.m)]
    else:
        inputs1, inputs2 = [(i, d) for i, _, d in below], [(j, one) for _, j, _ in below]
    check_equivalent(F, [_block(t1, inputs1), _block(t2, inputs2)], p["block"], rep)
    rep.checks[LEMMA] += 1
    if t1.output_relu:
        rep.notes.append("both networks end in a ReLU: sigma(rho(theta1)) = sigma(rho(theta2)) follows")


def check_deep_not_equivalent(F, nets: list[DeepNet], proof: object, rep: Report) -> None:
    """Both networks evaluated exactly at the witness, through every layer; the outputs must differ. Linear."""
    p = keys(proof, {"witness", "values", "statement"}, "proof")
    if p["statement"] != EVAL:
        raise Reject(f"proof must cite {EVAL!r}")
    t1, t2 = nets
    if (t1.m, t1.k) != (t2.m, t2.k):
        raise Reject("the networks differ in m or k")
    x = [F.number(t) for t in seq(p["witness"], t1.m, "proof.witness")]
    stated = [[F.number(y) for y in seq(v, t1.k, "proof.values[]")] for v in seq(p["values"], 2, "proof.values")]
    got = [t1.evaluate(x), t2.evaluate(x)]
    if any(F.sign(a - b) != 0 for g, s in zip(got, stated, strict=True) for a, b in zip(g, s, strict=True)):
        raise Reject("the stated values are not the networks' outputs at the witness")
    if all(F.sign(a - b) == 0 for a, b in zip(*got, strict=True)):  # a certified sign, not a remainder test
        raise Reject("the outputs agree at the witness")
    rep.checks[EVAL] += 1

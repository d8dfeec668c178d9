"""Replay of a tree of regions with bounds from linear relaxations, for distance_bound and top1_agreement
(certificates/FORMAT.md, Linear relaxations).

The tree is given in preorder. A node is a region: the root is the box; a split on a neuron's phase gives the
regions z ≤ 0 and z ≥ 0 (in that order), a split on a coordinate q the halves x_q ≤ mid and x_q ≥ mid. Each split
covers its parent, so the leaves cover the box. Any node may carry bounds for objectives (the kind's: (t, s) for a
distance, margins and output shifts for top-1), each with rational multipliers μ ≥ 0 of the region's constraints;
the checker rebuilds the constraints itself from the networks and the region (never from the certificate),
computes max over the region's variable box of f − Σ μ g exactly and requires the stated bound to be that number.
A bound holds on every subregion, so an objective's bound at a leaf is the least of those computed at the leaf and
its ancestors; the kind's leaf rule judges each leaf (for a distance: all 2k bounds, U their maximum). A node may
also narrow the range of a neuron's z or a pair's Δ by a refinement: multipliers of the region's phase constraints
whose exact Lagrangian bound the checker recomputes; it holds on the subtree, like a bound, and enters the
statuses and constraints of the node and its descendants.
No search. Cost per bound: O((n1 + n2)(m + 1)) integer operations; per region, the extremes of every neuron and
pair, the same. Both are bounded before the work (MAX_REGION_WORK), and every step is charged to the work budget
before it runs, by its length and the sizes of its numbers: each region's box brought to one denominator, every
neuron's and pair's extremes on it, its statuses, the halves of a split, each bound's objective and multipliers,
each row accumulated (``budget.int_ops``, ``OPS_PER_UNIT`` to a unit; rational operations ``RATIONAL_OPS`` each
plus their size-dependent part). A tree whose regions' box work alone cannot fit in what is left of the budget is
refused before the walk starts. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from certsym_check.budget import OPS_PER_UNIT, charge, charge_ops, cost, fits, int_ops, lcm, max_size, plus, size
from certsym_check.core import Net, index, seq
from certsym_check.errors import Reject
from certsym_check.fields import rational, show
from certsym_check.kinds.integer_rows import IntegerRows, box_ends, combine, integer_form, row_extremes, scaled

MAX_REGIONS = 20_000
MAX_REGION_WORK = 3 * 10**8  # Σ over the regions of (1 + bounds) · (n1 + n2 + pairs) · (m + 1): integer operations
BOUND_OVERHEAD = 1_000  # integer operations' worth of fixed work per region and per bound
NODE_WORK = 8  # per node and input coordinate: the box's halves, its integers over one denominator
MULTIPLIER_WORK = 50  # per multiplier: a few rational operations on numbers of a few words
REFINE_OVERHEAD = 200  # per refinement: its parsing and its target
MAX_MULTIPLIER_BITS = 1 << 12  # of each multiplier's numerator and denominator
# Elementary operations (budget.OPS_PER_UNIT to a unit) charged for the fixed part of the walk's small steps, as
# measured on the reference machine (benchmarks/check_budget.py): a rational operation on short numbers with the
# interpreted code around it (about 1.4 µs); per neuron and region, its status from its range (two comparisons, a
# look-up); per weight of a bound's objective, its product or difference and its sum into the rows (with the size
# look-ups that charge them); per multiplier, its constraint rebuilt and its terms added (about ten rational
# operations).
RATIONAL_OPS = 24
STATUS_OPS = 16
WEIGHT_OPS = 48
MULTIPLIER_OPS = 240
TAGS = {"hA", "tA", "pA", "hB", "tB", "pB", "d+", "d-"}
PHASE_TAGS = {"pA", "pB"}


class _Region:
    """A region's box (integers over one denominator), its phases, every neuron's extremes and status."""

    def __init__(self, box: list[tuple[Fraction, Fraction]], phases: dict, nets: dict, pairs: list):
        self.box, self.phases = box, phases
        what = "a region's box"
        LO, Dl = integer_form([lo for lo, _ in box], what)
        HI, Dh = integer_form([hi for _, hi in box], what)
        D = lcm((Dl, Dh), what)
        self.LO, self.HI, self.D = scaled(LO, D // Dl, what), scaled(HI, D // Dh, what), D
        ends = box_ends(self.LO, self.HI, D)
        self.lo, self.hi, self.status = {}, {}, {}
        for s, R in nets.items():
            ext = [R.extremes(i, self.LO, self.HI, D, ends) for i in range(len(R.rows))]
            self.lo[s], self.hi[s] = [e[0] for e in ext], [e[1] for e in ext]
        ext = [row_extremes(*_difference(nets, i, j), self.LO, self.HI, D, ends) for i, j in pairs]
        self.lo["d"], self.hi["d"] = [e[0] for e in ext], [e[1] for e in ext]
        self.narrow({})

    def narrow(self, refined: dict) -> None:
        """Every target's range the tighter of its box extremes and the refinement ``refined`` holds for it (a
        bound of None says nothing), then every neuron's status from its phase or its range. Cost, charged before:
        two rational comparisons per refinement, STATUS_OPS per neuron and pair."""
        charge_ops(2 * RATIONAL_OPS * len(refined) + STATUS_OPS * (len(self.lo["A"]) + len(self.lo["B"])
                                                                   + len(self.lo["d"])), "a region's statuses")
        # a refinement's value is stated once and compared in every region below it: each comparison at its sizes
        charge(sum(_long(size(lo or 0), size(self.lo[s][i])) + _long(size(hi or 0), size(self.hi[s][i]))
                   for (s, i), (lo, hi) in refined.items()), "a region's statuses")
        for (s, i), (lo, hi) in refined.items():
            if lo is not None and lo > self.lo[s][i]:
                self.lo[s][i] = lo
            if hi is not None and hi < self.hi[s][i]:
                self.hi[s][i] = hi
        self.delta = list(zip(self.lo["d"], self.hi["d"], strict=True))
        for s in "AB":
            self.status[s] = [self.phases.get((s, i), 1 if lo >= 0 else -1 if hi <= 0 else 0)
                              for i, (lo, hi) in enumerate(zip(self.lo[s], self.hi[s], strict=True))]


def _difference(nets: dict, i: int, j: int) -> tuple[list[int], int]:
    """Pair (i, j)'s Δ = z − z' as an integer row over its denominator (charged: ``lcm``, ``combine``)."""
    A, B = nets["A"], nets["B"]
    den = lcm((A.dens[i], B.dens[j]), "a pair's difference")
    return combine(A.rows[i], den // A.dens[i], B.rows[j], den // B.dens[j], "a pair's difference"), den


def _constraint(region: _Region, pairs: list, tag: str, idx: int, sizes: dict) -> tuple[list, list, Fraction]:
    """Constraint (tag, idx) as (S terms, z terms, constant), each term ((net, neuron), coefficient): g ≤ 0 with
    g = Σ c·S + Σ c·z + constant, rebuilt from the region (FORMAT.md's list); reject one that does not exist."""
    if tag[0] in "htp":
        key = (tag[1], index(idx, sizes[tag[1]], f"multiplier {tag}"))
        status = region.status[key[0]][key[1]]
        if tag[0] == "p":
            if key not in region.phases:
                raise Reject(f"multiplier {tag} {idx}: the neuron has no phase in this region")
            return [], [(key, Fraction(-1 if region.phases[key] > 0 else 1))], Fraction(0)
        if status != 0 or key in region.phases:
            raise Reject(f"multiplier {tag} {idx}: the neuron is not unstable in this region")
        lo, hi = region.lo[key[0]][key[1]], region.hi[key[0]][key[1]]
        if tag[0] == "h":
            return [(key, Fraction(-1))], [(key, Fraction(1))], Fraction(0)
        _charge_chord(lo, hi)
        return [(key, hi - lo)], [(key, -hi)], hi * lo
    p = index(idx, len(pairs), f"multiplier {tag}")
    i, j = pairs[p]
    lo, hi = region.delta[p] if tag == "d+" else (-region.delta[p][1], -region.delta[p][0])
    first, second = (("A", i), ("B", j)) if tag == "d+" else (("B", j), ("A", i))
    if hi <= 0:
        return [(first, Fraction(1)), (second, Fraction(-1))], [], Fraction(0)
    if lo >= 0:
        return [(first, Fraction(1)), (second, Fraction(-1))], [(first, Fraction(-1)), (second, Fraction(1))], \
            Fraction(0)
    _charge_chord(lo, hi)
    return [(first, hi - lo), (second, lo - hi)], [(first, -hi), (second, hi)], hi * lo


def _charge_chord(lo: Fraction, hi: Fraction) -> None:
    """A chord's u − l and u·l at the real sizes of the range's ends, which refinements may make long."""
    charge(2 * cost(size(lo), size(hi)), "a relaxation constraint")


def _long(a: tuple[int, int], b: tuple[int, int]) -> int:
    """The size-dependent part of an operation's cost (budget.cost less its fixed 4): the fixed part of the
    multipliers' arithmetic is in the region work, counted before the replay (MULTIPLIER_WORK each)."""
    return cost(a, b) - 4


def columns(v: list[list[Fraction]], k: int, what: str) -> list[tuple[int, int, int, int]]:
    """Per output t, the sums and maxima of the numerators' and denominators' bits of the output weights v_i[t] over
    the neurons i: (Σ num, max num, Σ den, max den), from which ``columns_cost`` bounds the size-dependent cost of an
    entrywise operation on two columns in O(1). One pass over the weights, charged."""
    charge_ops(4 * len(v) * k + k, what)
    out = []
    for t in range(k):
        nums = [x[t].numerator.bit_length() for x in v]
        dens = [x[t].denominator.bit_length() for x in v]
        out.append((sum(nums), max(nums, default=1), sum(dens), max(dens, default=1)))
    return out


def columns_cost(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    """The size-dependent units (``_long``, summed over the entries) of the entrywise operations x_i op y_i on two
    columns with the statistics ``a`` and ``b`` of ``columns``: Σ a_i·b_i ≤ min(Σa · max b, max a · Σb)."""
    (sna, mna, sda, mda), (snb, mnb, sdb, mdb) = a, b
    return ((sna + sda + snb + sdb) // 512 + (min(sna * mnb, mna * snb) + min(sda * mdb, mda * sdb)) // 409_600
            + (min(sna * mdb, mna * sdb) + min(snb * mda, mnb * sda)) // 102_400)


def constants_cost(xs: list[Fraction]) -> int:
    """The units of the sum (or difference) of the rationals ``xs`` term by term and its product by a sign, at their
    sizes (the sum's size bound adds up the terms')."""
    acc, total = size(xs[0]), 4
    for x in xs[1:]:
        sx = size(x)
        total += cost(acc, sx)
        acc = (acc[0] + sx[0] + sx[1] + 1, acc[1] + sx[1])
    return total + cost(acc, (1, 1))


def _bound(region: _Region, pairs: list, weights: dict, const: Fraction, mult: list, sizes: dict,
           nets: dict) -> Fraction:
    """max over the region's variables of f − Σ μ g for the objective f = Σ weights·S + const, exactly."""
    rows: dict = {}
    cols: dict = {}

    def add(target: dict, key, c: Fraction) -> None:
        old = target.get(key, 0)
        charge(_long(size(old), size(c)), "a relaxation bound")  # the sums grow with the multipliers' denominators
        target[key] = old + c

    def add_s(key, c: Fraction) -> None:
        status = region.status[key[0]][key[1]]
        if status > 0:
            add(rows, key, c)
        elif status == 0:
            add(cols, key, c)

    for key, w in weights.items():
        if w:
            add_s(key, w)
    for tag, idx, mu in _multipliers(mult, "multipliers", TAGS):
        s_terms, z_terms, c0 = _constraint(region, pairs, tag, idx, sizes)
        for key, c in s_terms:
            charge(_long(size(mu), size(c)), "a relaxation bound")
            add_s(key, -mu * c)
        for key, c in z_terms:
            charge(_long(size(mu), size(c)), "a relaxation bound")
            add(rows, key, -mu * c)
        charge(_long(size(mu), size(c0)) + _long(size(const), plus(size(mu), size(c0))), "a relaxation bound")
        const -= mu * c0
    value = const
    for key, c in cols.items():
        if c > 0:
            top = region.hi[key[0]][key[1]]
            charge(_long(size(c), size(top)) + _long(size(value), plus(size(c), size(top))), "a relaxation bound")
            value += c * top
    top = _row_max(region, rows, nets)
    charge(_long(size(value), size(top)), "a relaxation bound")
    return value + top


def _row_max(region: _Region, rows: dict, nets: dict) -> Fraction:
    """max over the region's box of Σ c·z for the rows {(net, neuron): c}, exactly (0 for no rows)."""
    live = [(key, c) for key, c in rows.items() if c != 0]
    if not live:
        return Fraction(0)
    what = "a relaxation bound"
    G = lcm((c.denominator * nets[s].dens[i] for (s, i), c in live), what)
    acc = [0] * (len(region.LO) + 1)
    width = len(live).bit_length()
    for (s, i), c in live:
        den = c.denominator * nets[s].dens[i]
        charge_ops(2 * int_ops(G.bit_length(), den.bit_length()) + int_ops(c.numerator.bit_length(), G.bit_length()),
                   what)
        scale = c.numerator * (G // den)
        row = nets[s].rows[i]
        # one multiply-add per entry, at the sizes of the scale, the row and the sum so far
        charge_ops(len(row) * int_ops(scale.bit_length() + width, nets[s].widths[i]), what)
        acc = [x + scale * y for x, y in zip(acc, row, strict=True)]
    return row_extremes(acc, G, region.LO, region.HI, region.D)[1]


SIDES = {"upper": 1, "lower": -1}


def _refinement(region: _Region, pairs: list, entry: object, sizes: dict, nets: dict, where: str) -> tuple:
    """A refinement [net, index, side, value, multipliers] (FORMAT.md, Refinements): the target y (a neuron's z
    for net "A"/"B", pair index's Δ for "d"), s = +1 for "upper", −1 for "lower", multipliers μ ≥ 0 on the
    region's phase constraints only; value must be s·max over the box of (s·y − Σ μ g). Returns (target, side,
    value) or rejects."""
    net, idx, side, value, mult = seq(entry, 5, where)
    if net not in ("A", "B", "d") or type(idx) is not int or not isinstance(side, str) or side not in SIDES:
        raise Reject(f"{where}: a refinement is [\"A\"|\"B\"|\"d\", index, \"upper\"|\"lower\", value, "
                     "multipliers]")
    s = SIDES[side]
    if net == "d":
        p = index(idx, len(pairs), where)
        i, j = pairs[p]
        rows = {("A", i): Fraction(s), ("B", j): Fraction(-s)}
    else:
        rows = {(net, index(idx, sizes[net], where)): Fraction(s)}
    for tag, k, mu in _multipliers(mult, f"{where} multipliers", PHASE_TAGS):
        _, z_terms, _ = _constraint(region, pairs, tag, k, sizes)
        for key, c in z_terms:
            charge(_long(size(mu), size(c)), "a refinement")
            rows[key] = rows.get(key, 0) - mu * c
    computed = s * _row_max(region, rows, nets)
    if rational(value) != computed:
        raise Reject(f"{where}: the stated refinement is not the one its multipliers give ({show(computed)})")
    return (net, idx), side, computed


def _multipliers(mult: object, where: str, tags: set) -> Iterator[tuple[str, int, Fraction]]:
    """The entries [tag, index, μ] of a multiplier list: a tag of ``tags``, an integer index, each constraint once,
    μ a rational ≥ 0 of at most MAX_MULTIPLIER_BITS bits; else a rejection naming the entry."""
    seen = set()
    for e, entry in enumerate(seq(mult, None, where)):
        charge_ops(MULTIPLIER_OPS, "a multiplier")  # its fixed part; the sizes are charged where it is used
        tag, idx, mu = seq(entry, 3, f"{where}[{e}]")
        if not isinstance(tag, str) or type(idx) is not int:
            raise Reject(f"{where}[{e}]: a constraint is named by a string tag and an integer index")
        if tag not in tags:
            raise Reject(f"{where}[{e}]: constraint {tag!r} is not one of {', '.join(sorted(tags))} here")
        mu = rational(mu)
        if mu < 0:
            raise Reject(f"{where}[{e}]: a multiplier is negative")
        if max(mu.numerator.bit_length(), mu.denominator.bit_length()) > MAX_MULTIPLIER_BITS:
            raise Reject(f"beyond the checker's bounds: a multiplier of more than {MAX_MULTIPLIER_BITS} bits")
        if (tag, idx) in seen:
            raise Reject(f"{where}[{e}]: constraint {tag} {idx} given twice")
        seen.add((tag, idx))
        yield tag, idx, mu


def distance_objective(t1: Net, t2: Net, nets: dict) -> tuple:
    """The objectives (t, s) of a distance bound: s·D_t, D_t = f1_t − f2_t (B's weights divided by the pairing's
    d, as its rows are scaled by d): the parser of a bound [t, s, B, multipliers], giving (objective, weights of
    the S's, constant, B, multipliers)."""
    k = t1.k
    cols = {net: columns(nets[net].v, k, "the objectives' weights") for net in ("A", "B")}
    unit = (t1.n + t2.n, 1, t1.n + t2.n, 1)  # the signs ±1, a column of n entries of one bit

    def parse(entry: object, where: str) -> tuple:
        t, s, value, mult = seq(entry, 4, where)
        t = index(t, k, where)
        if type(s) is not int or s not in (1, -1):  # 1.0 would turn the replay into floats
            raise Reject(f"{where}: the sign is 1 or -1")
        # the weights' and the constant's products and difference at their sizes (their fixed part is WEIGHT_OPS)
        charge(columns_cost(cols["A"][t], unit) + columns_cost(cols["B"][t], unit)
               + constants_cost([t1.c[t], t2.c[t]]), "a relaxation bound's objective")
        weights = {("A", i): v[t] * s for i, v in enumerate(nets["A"].v)}
        weights |= {("B", j): -v[t] * s for j, v in enumerate(nets["B"].v)}
        return (t, s), weights, (t1.c[t] - t2.c[t]) * s, value, mult

    return parse


def check_regions(t1: Net, t2: Net, box: list, pairs: list[tuple[int, int, Fraction]], nodes: object) -> Fraction:
    """U from the preorder tree ``nodes`` (module docstring), or a rejection; checks every bound stated."""
    objectives = {(t, s) for t in range(t1.k) for s in (1, -1)}

    def leaf(effective: dict, node: dict, where: str) -> Fraction:
        if set(effective) != objectives:
            raise Reject(f"{where}: a leaf without a bound for every output and sign")
        return max(effective.values())

    values = walk_regions(t1, t2, box, pairs, nodes, distance_objective, leaf, set())
    top = max_size(values)
    charge(sum(_long(size(v), top) for v in values), "the leaves' bounds")  # their comparisons, at their sizes
    return max(values)


def _region_work(t1: Net, t2: Net, nets: dict, box: list, pairs: int, nodes: int, bounds: int,
                 multipliers: int) -> int:
    """The region work of FORMAT.md, Bounds, before the replay. An integer operation on the rows and the box ends
    costs about one word operation up to 128 bits together, and proportionally more beyond; a bound also costs a
    fixed ~1,000 (its parsing, its objective), a node reads up to 4k bounds at ~4 each and handles its box (~8 per
    coordinate), a multiplier ~50."""
    m, words = t1.m, _words(nets, box)
    return (nodes + bounds) * ((t1.n + t2.n + pairs) * (m + 1) * words + BOUND_OVERHEAD) + \
        nodes * (16 * t1.k + NODE_WORK * (m + 1)) + multipliers * MULTIPLIER_WORK


def _words(nets: dict, box: list) -> int:
    """w of FORMAT.md, Bounds: the machine words of the rows' integers and the box ends, at least 1."""
    row_bits = max((abs(y).bit_length() for R in nets.values() for row in R.rows for y in row), default=1)
    row_bits += max((d.bit_length() for R in nets.values() for d in R.dens), default=1)
    box_bits = max((y.numerator.bit_length() + y.denominator.bit_length() for b in box for y in b), default=1) * 2
    return max(1, (row_bits + box_bits) // 128)


def walk_regions(t1: Net, t2: Net, box: list, pairs: list[tuple[int, int, Fraction]], nodes: object,
                 objective, leaf, extra: set) -> list:
    """Replay the preorder tree ``nodes``: every stated bound recomputed from its multipliers (``objective`` builds
    the objectives from the networks; a bound holds on every subregion, so a leaf sees the least bound of it and its
    ancestors), the splits covering their parents. ``leaf`` judges each leaf and gives its value; ``extra`` names the
    node fields beyond 'split' and 'bounds'. Returns the leaves' values in order, or rejects."""
    m = t1.m
    nodes = seq(nodes, None, "proof.regions")
    if not 1 <= len(nodes) <= MAX_REGIONS:
        raise Reject(f"proof.regions: between 1 and {MAX_REGIONS} regions")
    stated = multipliers = refined = 0
    nets = {"A": IntegerRows(t1, {}), "B": IntegerRows(t2, {j: d for _, j, d in pairs})}
    words = _words(nets, box)
    for e, node in enumerate(nodes):
        if not isinstance(node, dict) or not set(node) <= {"split", "bounds", "refine"} | extra:
            raise Reject(f"proof.regions[{e}] must be an object with 'split', 'refine' and/or 'bounds'"
                         + "".join(f" and/or {x!r}" for x in sorted(extra)))
        entries = seq(node.get("bounds", []), None, f"proof.regions[{e}].bounds")
        stated += len(entries)
        multipliers += sum(len(b[-1]) for b in entries if isinstance(b, list) and b and isinstance(b[-1], list))
        for r in seq(node.get("refine", []), None, f"proof.regions[{e}].refine"):
            count = len(r[-1]) if isinstance(r, list) and r and isinstance(r[-1], list) else 0
            refined += (1 + count) * (m + 1) * words + REFINE_OVERHEAD
            multipliers += count
    work = _region_work(t1, t2, nets, box, len(pairs), len(nodes), stated, multipliers) + refined
    if work > MAX_REGION_WORK:
        raise Reject(f"beyond the checker's bounds: the regions need about {work:,} integer operations "
                     f"(at most {MAX_REGION_WORK:,})")
    # Every region's box work is charged as the region is built (below); a tree whose box work alone cannot fit in
    # what is left of the budget is refused before the walk, so that its refusal costs nothing like its replay.
    # The least a region is charged: the extremes of every neuron and pair (m + 1 entries, an operation for each
    # end) and its box's two rows of m ends brought to integers (at least four operations each in the lcm and in the
    # products).
    least = len(nodes) * (2 * (m + 1) * (t1.n + t2.n + len(pairs)) + 8 * m) // OPS_PER_UNIT
    if not fits(least):
        charge(least, f"the {len(nodes):,} regions' boxes (m = {m:,})")  # beyond what is left: raises
    sizes = {"A": t1.n, "B": t2.n}
    parse = objective(t1, t2, nets)
    plain_pairs = [(i, j) for i, j, _ in pairs]
    # the least bound of every objective over the current node and its ancestors, in one dict: a node's changes are
    # logged and undone before its sibling's subtree (memory linear in the bounds stated, never a copy per node)
    effective: dict = {}
    log: list[tuple] = []
    # the refinements along the current path, in the same way: target → (lower, upper), None where none is stated
    narrowed: dict = {}
    stack: list[tuple[list, dict, int]] = [(list(box), {}, 0)]
    values = []
    for e, node in enumerate(nodes):
        if not stack:
            raise Reject(f"proof.regions[{e}]: more regions than the splits make")
        where = f"proof.regions[{e}]"
        region_box, phases, mark = stack.pop()
        while len(log) > mark:
            table, key, old = log.pop()
            if old is None:
                del table[key]
            else:
                table[key] = old
        region = _Region(region_box, phases, nets, plain_pairs)
        for r, entry in enumerate(seq(node.get("refine", []), None, f"{where}.refine")):
            target, side, value = _refinement(region, plain_pairs, entry, sizes, nets, f"{where}.refine[{r}]")
            old = narrowed.get(target)
            lo, hi = old or (None, None)
            log.append((narrowed, target, old))
            prior = lo if side == "lower" else hi
            if prior is not None:
                charge(_long(size(value), size(prior)), "a refinement")  # compared with the inherited one
            if side == "lower":
                narrowed[target] = (value if lo is None else max(lo, value), hi)
            else:
                narrowed[target] = (lo, value if hi is None else min(hi, value))
        region.narrow(narrowed)
        done = set()
        for b, entry in enumerate(seq(node.get("bounds", []), None, f"{where}.bounds")):
            # the objective's weights (a product or difference each) and their sums into the bound's rows
            charge_ops(WEIGHT_OPS * (t1.n + t2.n), "a relaxation bound")
            key, weights, const, value, mult = parse(entry, f"{where}.bounds[{b}]")
            if key in done:
                raise Reject(f"{where}.bounds[{b}]: each objective once per region")
            done.add(key)
            computed = _bound(region, plain_pairs, weights, const, mult, sizes, nets)
            if not isinstance(computed, Fraction):
                raise Reject(f"{where}.bounds[{b}]: the bound is not an exact rational")
            if rational(value) != computed:
                raise Reject(f"{where}.bounds[{b}]: the stated bound is not the one its multipliers give "
                             f"({show(computed)})")
            old = effective.get(key)
            if old is not None:
                charge(_long(size(computed), size(old)), "a relaxation bound")  # compared with the inherited one
            if old is None or computed < old:
                log.append((effective, key, old))
                effective[key] = computed
        if "split" not in node:
            charge_ops(8 * len(effective), "a leaf's bounds")  # the leaf reads (and compares) every bound
            # the bounds a leaf reads may be inherited from far above it (stated once, read by every leaf below):
            # their comparisons at their sizes
            top = max_size(effective.values())
            charge(sum(_long(size(v), top) for v in effective.values()), "a leaf's bounds")
            values.append(leaf(effective, node, where))
            continue
        split = seq(node["split"], 2, f"{where}.split")
        if split[0] == "x":
            q = index(split[1], m, f"{where}.split")
            lo, hi = region_box[q]
            if lo == hi:
                raise Reject(f"{where}.split: the coordinate's interval is a point")
            charge_ops(2 * (m + 1) + RATIONAL_OPS + (lo.denominator.bit_length() + hi.denominator.bit_length()
                                                     + lo.numerator.bit_length() + hi.numerator.bit_length()) // 64,
                       "a region's halves")
            mid = (lo + hi) / 2
            halves = [[*region_box[:q], (lo, mid), *region_box[q + 1:]],
                      [*region_box[:q], (mid, hi), *region_box[q + 1:]]]
            children = [(h, phases, len(log)) for h in halves]
        elif split[0] in ("A", "B"):
            key = (split[0], index(split[1], sizes[split[0]], f"{where}.split"))
            if key in phases:
                raise Reject(f"{where}.split: the neuron's phase is already fixed")
            charge_ops(2 * len(phases) + 2, "a region's phases")
            children = [(region_box, {**phases, key: ph}, len(log)) for ph in (-1, 1)]
        else:
            raise Reject(f"{where}.split: 'x', 'A' or 'B'")
        stack.extend(reversed(children))
    if stack:
        raise Reject("proof.regions: a split without its two regions (a leaf is missing)")
    return values

"""Seeded instance families: random networks over Q and Q(√2), disguises with the same function, grids."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

from flint import fmpq

from certsym.certify import InputRecord
from certsym.core.group import HElement
from certsym.core.network import Network, Neuron
from certsym.io import load_inputs
from certsym.numbers import QQ, Field, parse_number

RECORD = InputRecord("generated", "0" * 64)


def sqrt2_field() -> tuple[Field, object]:
    """Q(√2) and √2 in it."""
    _, (s,) = load_inputs([], extra_values=[parse_number("sqrt(2)")])
    return s.field, s


def seeded_fields() -> list[tuple[str, Field, object]]:
    """The fields every random family is drawn over: (name, field, generator or None) for Q and Q(√2)."""
    F2, root = sqrt2_field()
    return [("QQ", QQ, None), ("Qsqrt2", F2, root)]


def scalar(rng: random.Random, F: Field, root=None, height: int = 9):
    """A random nonzero number p/q (+ r/s·√2 over Q(√2))."""
    x = F(fmpq(rng.choice([-1, 1]) * rng.randint(1, height), rng.randint(1, 5)))
    if root is not None and rng.random() < 0.5:
        x = x + F(fmpq(rng.randint(-height, height), rng.randint(1, 5))) * root
    return x if x != 0 else F.one


def random_network(rng: random.Random, m: int, n: int, k: int, F: Field, root=None, height: int = 9) -> Network:
    def s():
        return scalar(rng, F, root, height)

    return Network.build([[s() for _ in range(n)] for _ in range(k)], [[s() for _ in range(m)] for _ in range(n)],
                         [s() for _ in range(n)], [s() for _ in range(k)], F, m)


def disguise(rng: random.Random, theta: Network) -> Network:
    """θ' with ρ(θ') = ρ(θ): an H_n element, one neuron split into positively proportional parts, one
    neuron flipped with its affine part restored by an antisymmetric pair, a dead and a constant neuron."""
    F, m, k = theta.field, theta.m, theta.k
    perm = list(range(theta.n))
    rng.shuffle(perm)
    h = HElement.make(perm, [F(fmpq(rng.randint(1, 7), rng.randint(1, 7))) for _ in range(theta.n)])
    neurons, c = h.act(theta).neurons(), list(theta.c)
    if neurons:
        i = rng.randrange(len(neurons))
        nu, lam = neurons[i], F(fmpq(rng.randint(1, 5), rng.randint(1, 5)))
        half = tuple(x / 2 for x in nu.v)
        neurons[i] = Neuron(nu.a, nu.b, half)
        neurons.append(Neuron(tuple(lam * x for x in nu.a), lam * nu.b, tuple(x / lam for x in half)))
        j = rng.randrange(len(neurons))  # flip: v σ(z) = v σ(−z) + v z, and v z = v σ(z + 1) − v σ(−z − 1) − v
        nu = neurons[j]
        neurons[j] = Neuron(tuple(-x for x in nu.a), -nu.b, nu.v)
        neurons.append(Neuron(nu.a, nu.b + 1, nu.v))
        neurons.append(Neuron(tuple(-x for x in nu.a), -nu.b - 1, tuple(-x for x in nu.v)))
        c = [cj - vj for cj, vj in zip(c, nu.v, strict=True)]
    neurons.append(Neuron(tuple(F.one for _ in range(m)), F.one, (F.zero,) * k))
    b = F(fmpq(rng.randint(1, 4)))
    v = tuple(F(fmpq(rng.randint(-3, 3))) for _ in range(k))
    neurons.append(Neuron((F.zero,) * m, b, v))
    c = [cj - vj * b for cj, vj in zip(c, v, strict=True)]
    order = list(range(len(neurons)))
    rng.shuffle(order)
    return Network.from_neurons([neurons[i] for i in order], c, F, m)


def nudge(theta: Network, amount: int = 1) -> Network:
    """θ with its first output constant moved by amount/7: a different function."""
    c = list(theta.c)
    c[0] = c[0] + theta.field(fmpq(amount, 7))
    return Network.build(theta.M, theta.A, theta.b, c, theta.field, theta.m)


def grid(m: int, n: int, k: int, values=(-1, 0, 1)) -> Iterator[Network]:
    """Every θ ∈ Ω(m, n, k) with entries in ``values``."""
    vals = [fmpq(v) for v in values]
    size = k * n + n * m + n + k
    for flat in itertools.product(vals, repeat=size):
        M = [list(flat[j * n:(j + 1) * n]) for j in range(k)]
        off = k * n
        A = [list(flat[off + i * m: off + (i + 1) * m]) for i in range(n)]
        off += n * m
        yield Network.build(M, A, list(flat[off:off + n]), list(flat[off + n:]), m=m)

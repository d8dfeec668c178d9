"""Exact arithmetic for the checker: Q as ``fractions.Fraction``, and real number fields Q(α).

Standard library only. Polynomials are lists of Fractions, lowest degree first.
- Equality of number-field elements: the difference is 0 modulo the declared polynomial p.
  That is sound for any p with p(α) = 0.
- Nonzero and sign: certified only when gcd(e, p) = 1 (then e(α) ≠ 0 for every root α of p);
  the sign is read from rational interval arithmetic on a bisected isolating interval of α.
  If gcd(e, p) ≠ 1 the declared polynomial is reducible and the certificate is rejected.
  Coprimality is Res(p, e) ≠ 0: a prime q dividing no leading coefficient with Res ≢ 0 mod q proves it
  (2^61 − 1 first, then primes drawn from a hash of p and e, which a certificate cannot aim at), and
  Res ≡ 0 modulo primes whose product exceeds Hadamard's bound on |Res| proves Res = 0.
- Inverse: 1/e = U/Res with U the integer cofactor (U e ≡ Res mod p), found by Chinese remaindering
  modulo primes whose product exceeds twice Hadamard's bound, which bounds U and Res alike (and so the
  inverse's size).
- α exists and is unique in [lo, hi]: p squarefree and a Sturm count of exactly one root.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import re
from fractions import Fraction

from certsym_check.budget import charge, cost, fits, max_size, plus, size
from certsym_check.errors import Reject

__all__ = ["NumberField", "QQ", "make_field", "rational", "show", "sturm"]

MAX_NUMBER_CHARS = 100_000
MAX_DEGREE = 64          # of a field's polynomial, or of a CRootOf polynomial after expansion
MAX_POLY_BITS = 1 << 14  # total bits of that polynomial's coefficients (the Sturm chain costs ~ degree² × bits²)
MAX_ELEMENT_BITS = 1 << 17  # total bits of one number-field element's coefficients
MAX_RESULTANT_BITS = 1 << 14  # Hadamard bound on Res(p, e) for deciding Res = 0 exactly
MAX_BISECTIONS = 1024  # of the isolating interval, kept across signs: numbers within ~2^-1024 of 0 are refused
_RATIONAL = re.compile(r"-?[0-9]+(?:/[0-9]+)?")




def integer(digits: str) -> int:
    """int(digits) without Python's 4300-digit cap on str -> int (divide and conquer)."""
    if len(digits) <= 4000:
        return int(digits)
    half = len(digits) // 2
    return integer(digits[:-half]) * 10**half + integer(digits[-half:])


def rational(s: object) -> Fraction:
    """An exact rational from a "p/q" string (no 4300-digit cap); anything else is rejected."""
    if not isinstance(s, str) or len(s) > MAX_NUMBER_CHARS or not _RATIONAL.fullmatch(s):
        raise Reject(f"not an exact rational string: {str(s)[:60]!r}")
    num, _, den = s.partition("/")
    sign = -1 if num.startswith("-") else 1
    d = integer(den) if den else 1
    if d == 0:
        raise Reject(f"zero denominator in {s[:60]!r}")
    return Fraction(sign * integer(num.lstrip("-")), d)


def show(x: Fraction | int, exact_bits: int = 2000) -> str:
    """x for a message: exactly when its numerator and denominator have at most ``exact_bits`` bits together, else as
    its sign, 12 leading digits and decimal exponent with the sizes (integer arithmetic only: no float overflow and no
    int-to-text limit)."""
    x = Fraction(x)
    p, q = abs(x.numerator), x.denominator
    if p.bit_length() + q.bit_length() <= exact_bits:
        return str(x)
    e = (p.bit_length() - q.bit_length()) * 30103 // 100000  # ≈ log10(|x|), within 1
    scaled = p * 10 ** max(11 - e, 0) // (q * 10 ** max(e - 11, 0))
    while scaled >= 10**12:
        scaled, e = scaled // 10, e + 1
    while scaled < 10**11:
        e -= 1
        scaled = p * 10 ** max(11 - e, 0) // (q * 10 ** max(e - 11, 0))
    digits = str(scaled)
    return (f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:]}e{e:+d} (exact: numerator {p.bit_length()} bits, "
            f"denominator {q.bit_length()} bits)")


def trim(p: list) -> list:
    while p and p[-1] == 0:
        p.pop()
    return p


def poly_sub(p: list, q: list) -> list:
    n = max(len(p), len(q))
    charge(n * cost(max_size(p), max_size(q)), "a polynomial or number-field sum")
    return trim([(p[i] if i < len(p) else 0) - (q[i] if i < len(q) else 0) for i in range(n)])


def poly_mul(p: list, q: list) -> list:
    if p and q:
        a, b = max_size(p), max_size(q)
        charge(len(p) * len(q) * (cost(a, b) + cost(plus(a, b), plus(a, b))), "a polynomial or number-field product")
    out = [Fraction(0)] * max(len(p) + len(q) - 1, 0)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return trim(out)


def _divmod(p: list, q: list) -> tuple[list, list]:
    r, quo = list(p), [Fraction(0)] * max(len(p) - len(q) + 1, 1)
    top = max_size(q)
    while len(r) >= len(q):
        charge(len(q) * cost(plus(max_size(r), top), top), "a polynomial division")
        c, s = r[-1] / q[-1], len(r) - len(q)
        quo[s] = c
        r = poly_sub(r, [Fraction(0)] * s + [c * x for x in q])
    return trim(quo), r


def poly_bound(p: list, what: str) -> list:
    """p itself, if its degree and coefficient sizes are within the checker's bounds (checked before any
    gcd or Sturm chain is computed)."""
    bits = sum(c.numerator.bit_length() + c.denominator.bit_length() for c in p)
    if len(p) - 1 > MAX_DEGREE or bits > MAX_POLY_BITS:
        raise Reject(f"{what}: degree {len(p) - 1} with {bits} coefficient bits is beyond the checker's bounds "
                     f"(degree ≤ {MAX_DEGREE}, {MAX_POLY_BITS} bits)")
    return p


def _int_primitive(p: list[int]) -> list[int]:
    g = math.gcd(*p)
    charge(len(p) * cost((max(abs(c).bit_length() for c in p), 1), (g.bit_length(), 1)), "a polynomial's content")
    return [c // g for c in p] if g > 1 else p


def _neg_prem(a: list[int], b: list[int]) -> list[int]:
    """A positive multiple of −(a mod b), in integers. Each pseudo-division step multiplies the remainder by lc(b)
    and cancels its leading term, so after s steps r = lc(b)^s (a mod b): s, not deg a − deg b + 1, since a step is
    skipped whenever the next coefficient cancels too. The result is −r with the sign of lc(b)^s taken out."""
    r, lb = list(a), b[-1]
    steps = 0
    while len(r) >= len(b) and r:
        c, s = r[-1], len(r) - len(b)
        big = max(abs(x).bit_length() for x in r)
        charge(len(r) * cost((big, 1), (lb.bit_length(), 1)) + len(b) * cost((c.bit_length(), 1),
                                                                            (abs(lb).bit_length(), 1)),
               "a Sturm sequence (pseudo-division)")
        r = [x * lb for x in r]
        for i, y in enumerate(b):
            r[s + i] -= c * y
        r.pop()
        while r and r[-1] == 0:
            r.pop()
        steps += 1
    flip = -1 if lb < 0 and steps % 2 else 1
    return [-flip * x for x in r]


def sturm_cost(p: list) -> int:
    """An estimate of the units the Sturm chain of p (degree d, coefficients of at most β bits as a primitive integer
    polynomial) takes: remainder i has degree d − i and coefficients of at most 2i(β + log2 d + 1) bits (the
    subresultant bounds), and each pseudo-division step costs about 6 (d − i + 2) operations on them."""
    d = len(p) - 1
    beta = max(max(abs(c.numerator).bit_length() for c in p), 1) + sum(c.denominator.bit_length() for c in p)
    total = 0
    for i in range(1, d + 1):
        B = 2 * i * (beta + d.bit_length() + 1)
        total += 6 * (d - i + 2) * cost((B, 1), (B, 1))
    return total


def sturm(p: list, what: str) -> list[list[int]]:
    """The Sturm chain p, p', −rem, … of the rational polynomial p (degree ≥ 1) as primitive integer polynomials with
    the same signs everywhere (positive multiples). p is squarefree iff the last one is a constant. Refused at once
    when its estimated cost (``sturm_cost``) does not fit in what is left of the budget."""
    poly_bound(p, what)
    if not fits(sturm_cost(p) // 8):
        raise Reject(f"{what}: the Sturm sequence of a degree-{len(p) - 1} polynomial would exceed the checker's work "
                     "budget (certificates/FORMAT.md, Bounds)")
    den = math.lcm(*(c.denominator for c in p))
    ints = _int_primitive([c.numerator * (den // c.denominator) for c in p])
    deriv = _int_primitive([i * c for i, c in enumerate(ints)][1:])
    chain = [ints, deriv]
    while len(chain[-1]) > 1:
        rest = _neg_prem(chain[-2], chain[-1])
        if not rest:
            break
        chain.append(_int_primitive(rest))
    return chain


def sign_changes_at(chain: list[list[int]], x: Fraction) -> int:
    """The number of sign changes of the chain at the rational x (zeros skipped)."""
    signs = [s for s in (_sign_at(q, x) for q in chain) if s]
    return sum(a != b for a, b in zip(signs, signs[1:], strict=False))


def _value(p: list, x: Fraction) -> Fraction:
    nx, dx = size(x)
    acc_size = (max_size(p)[0] + len(p) * (nx + dx), max_size(p)[1] + len(p) * dx)
    charge(2 * len(p) * cost(acc_size, (nx, dx)), "a polynomial evaluation")
    acc = Fraction(0)
    for c in reversed(p):
        acc = acc * x + c
    return acc


def _sign(x: Fraction) -> int:
    return (x > 0) - (x < 0)


def _bits(coeffs) -> int:
    return sum(c.numerator.bit_length() + c.denominator.bit_length() for c in coeffs)


_PRIME = (1 << 61) - 1
_PRIMES = [_PRIME]  # the primes below 2^61 in descending order, extended on demand
_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)  # Miller-Rabin with these is exact below 3.3 · 10^24


def _is_prime(n: int) -> bool:
    if any(n % b == 0 for b in _MR_BASES):
        return n in _MR_BASES
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for b in _MR_BASES:
        x = pow(b, d, n)
        if x == 1 or x == n - 1:
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _primes(seed: bytes | None = None):
    """Primes of 61 bits: 2^61 − 1 and the next ones below it, or (seed given) primes drawn from the seed."""
    if seed is not None:
        rnd = random.Random(seed)
        while True:
            n = rnd.getrandbits(59) | (1 << 59) | (1 << 60) | 1
            if _is_prime(n):
                yield n
    for i in itertools.count():
        if i == len(_PRIMES):
            n = _PRIMES[-1] - 2
            while not _is_prime(n):
                n -= 2
            _PRIMES.append(n)
        yield _PRIMES[i]


def _integer_form(coeffs) -> tuple[int, list[int]]:
    """(den, den · e) for e with rational coefficients, den the least common denominator."""
    den = math.lcm(*(c.denominator for c in coeffs))
    return den, [c.numerator * (den // c.denominator) for c in coeffs]


def _hadamard_bits(f: list[int], e: list[int]) -> int:
    """H with |Res(f, e)| < 2^H, and every coefficient of the cofactor U below 2^H as well (U and Res are minors of the
    Sylvester matrix: ‖f‖^deg e ‖e‖^deg f bounds them, each 2-norm of at most 65 coefficients < 2^(bits + 4))."""
    return (len(e) - 1) * (max(abs(c).bit_length() for c in f) + 4) + \
        (len(f) - 1) * (max(abs(c).bit_length() for c in e) + 4)


def _res_mod(f: list[int], e: list[int], q: int, cofactor: bool = False) -> tuple[int, list[int] | None]:
    """Res(f, e) modulo the prime q (f, e integer polynomials, q not dividing f's leading coefficient, e of formal
    degree len(e) - 1) by the Euclidean algorithm modulo q, O(deg²) word operations; with cofactor=True also u with
    u e ≡ 1 modulo f and q (None when the resultant is 0 modulo q)."""
    charge(len(f) * len(e) + sum(abs(c).bit_length() for c in f + e) // 64, "a resultant modulo a prime")
    a, b = [c % q for c in f], [c % q for c in e]
    m = len(b) - 1
    while b and not b[-1]:
        b.pop()
    if not b:
        return 0, None
    res = pow(a[-1], m - len(b) + 1, q)  # Res with e's formal degree m: lc(f)^(m - deg(e mod q)) times the rest
    ta, tb = [], [1]  # ta e ≡ a and tb e ≡ b modulo f
    while len(b) > 1:
        n, k = len(a) - 1, len(b) - 1
        inv, quo = pow(b[-1], -1, q), [0] * (n - k + 1)
        for s in range(n - k, -1, -1):
            c = a[s + k] * inv % q
            if c:
                quo[s] = c
                for i in range(k):
                    a[s + i] = (a[s + i] - c * b[i]) % q
        del a[k:]
        while a and not a[-1]:
            a.pop()
        if not a:
            return 0, None
        res = res * pow(b[-1], n - len(a) + 1, q) % q  # Res(a, b) = (-1)^(n k) lc(b)^(n - deg r) Res(b, r)
        if n * k % 2:
            res = -res % q
        if cofactor:
            t = ta + [0] * (len(quo) + len(tb) - 1 - len(ta))
            for i, c in enumerate(quo):
                if c:
                    for j, y in enumerate(tb):
                        t[i + j] = (t[i + j] - c * y) % q
            ta, tb = tb, t
        a, b = b, a
    res = res * pow(b[0], len(a) - 1, q) % q
    if not cofactor:
        return res, None
    inv = pow(b[0], -1, q)
    return res, [y * inv % q for y in tb]


def _crt(rows: list[list[int]], mods: list[int]) -> tuple[list[int], int]:
    """The vector ≡ rows[i] modulo mods[i] (distinct primes), entries in [0, ∏ mods), and ∏ mods (product tree)."""
    level = list(zip(rows, mods, strict=True))
    while len(level) > 1:
        pairs = [(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        tail = level[-1:] if len(level) % 2 else []
        level = []
        for (x, m), (y, n) in pairs:
            inv = pow(m, -1, n)
            level.append(([a + m * ((b - a) * inv % n) for a, b in zip(x, y, strict=True)], m * n))
        level += tail
    return level[0]


def _sign_at(p: list[int], x: Fraction) -> int:
    """The sign of the integer polynomial p at x = a/b, from b^d p(a/b) in integers (no gcds: the bisection's
    cost stays a few big-integer products per degree)."""
    a, b = x.numerator, x.denominator
    step = max(a.bit_length(), b.bit_length())
    charge(3 * len(p) * cost((max_size(p)[0] + len(p) * step, 1), (step, 1)), "a sign evaluation")
    acc, power = p[-1], 1
    for c in reversed(p[:-1]):
        power *= b
        acc = acc * a + c * power
    return _sign(acc)


def _interval_sign(p: list[int], lo: Fraction, hi: Fraction) -> int:
    """The sign of the integer polynomial p on all of [lo, hi] by interval Horner in integers (scaled by D^d for
    the common denominator D of lo and hi), or 0 when the enclosure contains 0."""
    D = math.lcm(lo.denominator, hi.denominator)
    t_lo, t_hi = lo.numerator * (D // lo.denominator), hi.numerator * (D // hi.denominator)
    step = max(t_lo.bit_length(), t_hi.bit_length(), D.bit_length())
    charge(6 * len(p) * cost((max_size(p)[0] + len(p) * step, 1), (step, 1)), "an interval sign evaluation")
    low = high = p[-1]
    power = 1
    for c in reversed(p[:-1]):
        power *= D
        prods = (low * t_lo, low * t_hi, high * t_lo, high * t_hi)
        low, high = min(prods) + c * power, max(prods) + c * power
    return 1 if low > 0 else -1 if high < 0 else 0


class QQ:
    """The rational field; numbers are "p/q" strings."""

    zero, one = Fraction(0), Fraction(1)

    def number(self, s: object) -> Fraction:
        return rational(s)

    def sign(self, x: Fraction) -> int:
        return _sign(x)

    def inverse(self, x: Fraction) -> Fraction:
        return 1 / x

    def is_rational(self, x: Fraction) -> bool:
        return True


class Elt:
    """An element of a NumberField: a polynomial in α reduced modulo p (tuple, low degree first)."""

    __slots__ = ("F", "c")

    def __init__(self, F: NumberField, coeffs: list):
        self.F, self.c = F, tuple(_divmod(trim(list(coeffs)), F.p)[1])

    def _co(self, o) -> Elt:
        return o if isinstance(o, Elt) else Elt(self.F, [Fraction(o)])

    def __add__(self, o):
        o = self._co(o)
        return Elt(self.F, poly_sub(list(self.c), [-x for x in o.c]))

    __radd__ = __add__

    def __sub__(self, o):
        return Elt(self.F, poly_sub(list(self.c), list(self._co(o).c)))

    def __rsub__(self, o):
        return self._co(o) - self

    def __mul__(self, o):
        return Elt(self.F, poly_mul(list(self.c), list(self._co(o).c)))

    __rmul__ = __mul__

    def __neg__(self):
        return Elt(self.F, [-x for x in self.c])

    def __eq__(self, o) -> bool:  # exact: the difference is 0 modulo p
        return isinstance(o, Elt | Fraction | int) and not (self - o).c

    def __hash__(self) -> int:
        return hash(self.c) if len(self.c) > 1 else hash(self.c[0] if self.c else 0)


class NumberField:
    """Q(α), α the only root of the declared polynomial p in [lo, hi] (Sturm-checked)."""

    def __init__(self, minpoly: object, interval: object):
        if not isinstance(minpoly, list) or not isinstance(interval, list) or len(interval) != 2:
            raise Reject("field: minpoly must be a list and interval a pair")
        if len(minpoly) > MAX_DEGREE + 1:
            raise Reject(f"field: the polynomial must have degree 1..{MAX_DEGREE}")
        p = poly_bound(trim([rational(c) for c in minpoly]), "field")
        if len(p) < 2:
            raise Reject(f"field: the polynomial must have degree 1..{MAX_DEGREE}")
        self.p = [c / p[-1] for c in p]
        self.lo, self.hi = rational(interval[0]), rational(interval[1])
        if not self.lo < self.hi or _value(self.p, self.lo) == 0 or _value(self.p, self.hi) == 0:
            raise Reject("field: the interval must satisfy lo < hi with p(lo), p(hi) nonzero")
        chain = sturm(self.p, "field")
        if len(chain[-1]) > 1:
            raise Reject("field: the polynomial is not squarefree")
        if sign_changes_at(chain, self.lo) - sign_changes_at(chain, self.hi) != 1:
            raise Reject("field: the interval does not isolate exactly one root")
        self.s_lo = _sign(_value(self.p, self.lo))
        self.bisections, self.signs = 0, {}
        den = math.lcm(*(c.denominator for c in self.p))
        self.ints = [c.numerator * (den // c.denominator) for c in self.p]
        self.zero, self.one = Elt(self, []), Elt(self, [Fraction(1)])

    def number(self, s: object) -> Elt:
        if not isinstance(s, list) or not s or len(s) > MAX_DEGREE:
            raise Reject(f"not a number-field element (coefficient list): {str(s)[:60]!r}")
        if len(s) >= len(self.p):  # one spelling per element: reduced modulo the minimal polynomial
            raise Reject(f"number-field element not reduced (degree >= {len(self.p) - 1}): {str(s)[:60]!r}")
        coeffs = [rational(x) for x in s]
        if _bits(coeffs) > MAX_ELEMENT_BITS:
            raise Reject(f"a number-field element of more than {MAX_ELEMENT_BITS} bits")
        return Elt(self, coeffs)

    def coprime(self, e: list[int]) -> bool:
        """gcd(p, e) = 1 for the integer polynomial e, by the resultant test of the module's docstring."""
        bound, zero_bits, seen = _hadamard_bits(self.ints, e), 0, set()
        seed = hashlib.sha256(b"".join(c.to_bytes(c.bit_length() // 8 + 1, "little", signed=True) + b"," for c in
                                       self.ints + [len(self.ints)] + e)).digest()
        for q in itertools.chain([_PRIME], _primes(seed)):
            if q in seen or self.ints[-1] % q == 0:
                continue
            seen.add(q)
            if _res_mod(self.ints, e, q)[0]:
                return True
            zero_bits += q.bit_length() - 1  # the product of these primes, dividing Res, is at least 2^zero_bits
            if zero_bits >= bound:
                return False
            if bound > MAX_RESULTANT_BITS and len(seen) >= 4:
                raise Reject(f"field: coprimality with the polynomial not decided by 4 primes, and its exact test is "
                             f"beyond the checker's bounds (Hadamard bound 2^{bound} > 2^{MAX_RESULTANT_BITS})")
        raise AssertionError("unreachable")

    def sign(self, x) -> int:
        x = x if isinstance(x, Elt) else Elt(self, [Fraction(x)])
        if len(x.c) <= 1:
            return _sign(x.c[0]) if x.c else 0
        if x.c in self.signs:
            return self.signs[x.c]
        if _bits(x.c) > MAX_ELEMENT_BITS:
            raise Reject(f"a number-field element of more than {MAX_ELEMENT_BITS} bits")
        _, e = _integer_form(x.c)  # den · e: same sign, integer coefficients
        if not self.coprime(e):
            raise Reject("field: the declared polynomial is reducible; a sign cannot be certified")
        sign = _interval_sign(e, self.lo, self.hi)
        while not sign:  # bisect (16, 16, 32, 64, ... steps, at most MAX_BISECTIONS for the field) and retry
            if self.bisections >= MAX_BISECTIONS:
                raise Reject("a sign could not be certified within the checker's budget")
            steps = min(max(16, self.bisections), MAX_BISECTIONS - self.bisections)
            for _ in range(steps):
                mid = (self.lo + self.hi) / 2
                if _sign_at(self.ints, mid) == self.s_lo:
                    self.lo = mid
                else:
                    self.hi = mid
            self.bisections += steps
            sign = _interval_sign(e, self.lo, self.hi)
        if len(self.signs) < 1024:
            self.signs[x.c] = sign
        return sign

    def inverse(self, x: Elt) -> Elt:
        if self.sign(x) == 0:
            raise Reject("division by zero")
        if len(x.c) == 1:
            return Elt(self, [1 / x.c[0]])
        den, e = _integer_form(x.c)
        bound, d = _hadamard_bits(self.ints, e), len(self.ints) - 1
        if (d + 1) * bound > MAX_ELEMENT_BITS:  # the inverse's d numerators and denominator are below 2^bound
            raise Reject(f"an inverse beyond the checker's bounds: (degree + 1) × {bound} bits (Hadamard's bound) > "
                         f"{MAX_ELEMENT_BITS}")
        rows, mods, bits = [], [], 0
        for q in _primes():  # Res ≠ 0 (sign): at most bound / 60 primes divide it and are skipped
            if self.ints[-1] % q == 0:
                continue
            res, u = _res_mod(self.ints, e, q, cofactor=True)
            if res:  # U ≡ Res · e^-1 modulo f and q
                rows.append([res] + [y * res % q for y in u] + [0] * (d - len(u)))
                mods.append(q)
                bits += q.bit_length() - 1
                if bits > bound + 1:
                    break
        values, modulus = _crt(rows, mods)
        res, *cof = (v - modulus if 2 * v > modulus else v for v in values)
        return Elt(self, [Fraction(den * c, res) for c in cof])

    def is_rational(self, x: Elt) -> bool:
        return len(x.c) <= 1


def make_field(spec: object):
    """The field declared by a certificate's "field" entry."""
    if not isinstance(spec, dict):
        raise Reject("field must be an object")
    if spec.get("type") == "QQ" and set(spec) == {"type"}:
        return QQ()
    if spec.get("type") == "number_field" and set(spec) == {"type", "minpoly", "interval", "generator"} \
            and isinstance(spec["generator"], str):
        return NumberField(spec["minpoly"], spec["interval"])
    raise Reject(f"unknown field specification {sorted(spec)}")

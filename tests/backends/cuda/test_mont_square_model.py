"""mont_t::sqr (cuda_src/ff/mont.cuh) statement by statement on Python ints, without a GPU.

The square's carry chains drop carries that its bounds say are zero, and set words that no earlier row
wrote; this model runs the same rows (the same compile-time choices: `chain_top`, which words are written)
with a carry flag, asserts every dropped carry is zero, and checks the result against a^2 / R mod p:
both curves' Fq and Fr, operands at the edges (0, 1, p - 1, p, 2p - 1, every word all ones) and random,
in the plain form (below p) and the lazy one (below 2p, Fq only)."""
from __future__ import annotations

import random

import pytest

from pipeline.curves import BLS12_381, BN254

W = 1 << 32
MASK = W - 1


class Words:
    """32-bit words of one thread and its carry flag (PTX's CC), with the statements mont.cuh uses."""

    def __init__(self) -> None:
        self.cc = 0

    def mad(self, x: int, y: int, acc: int, hi: bool, carry_in: bool, carry_out: bool) -> int:
        """mad.lo / mad.hi (with .cc and c as asked): acc + the product's low or high word."""
        prod = x * y
        return self.add((prod >> 32) if hi else (prod & MASK), acc, carry_in, carry_out)

    def add(self, x: int, y: int, carry_in: bool, carry_out: bool) -> int:
        s = x + y + (self.cc if carry_in else 0)
        if carry_out:
            self.cc = s >> 32
        else:
            assert s >> 32 == 0, "a carry the square's bounds say is zero was dropped"
        return s & MASK


def chain_last(s: int, j0: int, n: int) -> int:
    """The hi word of a cross chain's last pair (mont.cuh, cross_last)."""
    return s + (n - 1 - j0) // 2 * 2 + 1


def chain_top(s: int, j0: int, top: int, n: int) -> int:
    """The highest word written after a cross chain (mont.cuh, chain_top)."""
    if j0 >= n:
        return top
    last = chain_last(s, j0, n)
    return last if s > top else max(top, last + 1)


def cross_chain(cpu: Words, x: dict, a: list[int], y: int, s: int, j0: int, top: int, n: int) -> None:
    if j0 >= n:
        return
    if s > top:  # a fresh chain: plain products, no carries
        for j in range(j0, n, 2):
            k = s + j - j0
            x[k], x[k + 1] = a[j] * y & MASK, a[j] * y >> 32
        return
    # as the kernel's statements: a word is added to (read: a KeyError here if no row wrote it) or set
    for j in range(j0, n, 2):
        k = s + j - j0
        if j == j0:
            x[k] = cpu.mad(a[j], y, x[k], hi=False, carry_in=False, carry_out=True)
        else:
            x[k] = cpu.mad(a[j], y, x[k] if k <= top else 0, hi=False, carry_in=True, carry_out=True)
        x[k + 1] = cpu.mad(a[j], y, x[k + 1] if k + 1 <= top else 0, hi=True, carry_in=True, carry_out=True)
    last = chain_last(s, j0, n)
    x[last + 1] = cpu.add(x[last + 1] if last + 1 <= top else 0, 0, carry_in=True, carry_out=False)


def cross_tops(rows: int, n: int) -> tuple[int, int]:
    o = e = -1
    for i in range(rows):
        o, e = chain_top(2 * i + 1, i + 1, o, n), chain_top(2 * i + 2, i + 2, e, n)
    return o, e


def square_words(cpu: Words, a: list[int], n: int) -> list[int]:
    """T = a^2 as 2n words: the cross rows, their merge, doubled, the diagonal squares added."""
    o: dict[int, int] = {}
    e: dict[int, int] = {}
    for i in range(n - 1):
        otop, etop = cross_tops(i, n)
        cross_chain(cpu, o, a, a[i], 2 * i + 1, i + 1, otop, n)
        cross_chain(cpu, e, a, a[i], 2 * i + 2, i + 2, etop, n)
        # what the kernel takes as written (chain_top) is what was written
        assert (max(o), max(e, default=-1)) == cross_tops(i + 1, n)
    otop, etop = cross_tops(n - 1, n)
    assert sorted(o) == list(range(1, otop + 1)) and sorted(e) == list(range(2, etop + 1))
    assert max(otop, etop) <= 2 * n - 1
    t = [0] * (2 * n)
    t[1] = o[1]
    for k in range(2, max(otop, etop) + 1):
        t[k] = cpu.add(e.get(k, 0), o.get(k, 0), carry_in=k > 2, carry_out=k < max(otop, etop))
    # doubled by funnel shifts: the top bit of the cross sum is zero (it is below a^2 / 2 < w^2n / 2)
    assert t[2 * n - 1] >> 31 == 0
    big = [0] + [((t[k] << 1) | (t[k - 1] >> 31)) & MASK for k in range(1, 2 * n)]
    big[0] = a[0] * a[0] & MASK
    big[1] = cpu.mad(a[0], a[0], big[1], hi=True, carry_in=False, carry_out=True)
    for k in range(1, n):
        big[2 * k] = cpu.mad(a[k], a[k], big[2 * k], hi=False, carry_in=True, carry_out=True)
        big[2 * k + 1] = cpu.mad(a[k], a[k], big[2 * k + 1], hi=True, carry_in=True, carry_out=k < n - 1)
    return big


def row_mac(cpu: Words, acc: list[int], x: list[int], y: int, off: int, n: int) -> None:
    """acc += x[off, off + 2, ...] * y (lo, hi adjacent); leaves the carry out in CC."""
    for k in range(n // 2):
        acc[2 * k] = cpu.mad(x[2 * k + off], y, acc[2 * k], hi=False, carry_in=k > 0, carry_out=True)
        acc[2 * k + 1] = cpu.mad(x[2 * k + off], y, acc[2 * k + 1], hi=True, carry_in=True, carry_out=True)


def row_mac_shift2(cpu: Words, acc: list[int], x: list[int], y: int, n: int) -> None:
    """acc[j] = acc[j + 2] + (x[1, 3, ...] * y)[j] + CC; no carry out."""
    for k in range(n // 2 - 1):
        acc[2 * k] = cpu.mad(x[2 * k + 1], y, acc[2 * k + 2], hi=False, carry_in=True, carry_out=True)
        acc[2 * k + 1] = cpu.mad(x[2 * k + 1], y, acc[2 * k + 3], hi=True, carry_in=True, carry_out=True)
    acc[n - 2] = cpu.mad(x[n - 1], y, 0, hi=False, carry_in=True, carry_out=True)
    acc[n - 1] = cpu.mad(x[n - 1], y, 0, hi=True, carry_in=True, carry_out=False)


def redc_step(cpu: Words, e: list[int], o: list[int], p: list[int], m0: int, first: bool, n: int) -> None:
    """One reduction step of the product's (mul_step) with its m p rows alone."""
    if first:
        m = e[0] * m0 & MASK
        for k in range(n // 2):
            o[2 * k], o[2 * k + 1] = p[2 * k + 1] * m & MASK, p[2 * k + 1] * m >> 32
    else:
        e[0] = cpu.add(e[0], o[1], carry_in=False, carry_out=True)
        m = e[0] * m0 & MASK
        row_mac_shift2(cpu, o, p, m, n)
    row_mac(cpu, e, p, m, 0, n)
    assert e[0] == 0
    o[n - 1] = cpu.add(o[n - 1], 0, carry_in=True, carry_out=False)


def montgomery_square(a_int: int, p_int: int, n: int, lazy_free: bool) -> int:
    cpu = Words()
    a = [(a_int >> (32 * i)) & MASK for i in range(n)]
    p = [(p_int >> (32 * i)) & MASK for i in range(n)]
    m0 = (-pow(p_int, -1, W)) % W
    big = square_words(cpu, a, n)
    assert sum(w << (32 * k) for k, w in enumerate(big)) == a_int * a_int
    e, o = big[:n], [0] * n
    redc_step(cpu, e, o, p, m0, True, n)
    redc_step(cpu, o, e, p, m0, False, n)
    for _ in range(2, n, 2):
        redc_step(cpu, e, o, p, m0, False, n)
        redc_step(cpu, o, e, p, m0, False, n)
    r = [0] * n
    r[0] = cpu.add(e[0], o[1], carry_in=False, carry_out=True)
    for j in range(1, n - 1):
        r[j] = cpu.add(e[j], o[j + 1], carry_in=True, carry_out=True)
    r[n - 1] = cpu.add(e[n - 1], 0, carry_in=True, carry_out=False)
    # T / R = redc(T_lo) + T_hi
    r[0] = cpu.add(r[0], big[n], carry_in=False, carry_out=True)
    for j in range(1, n):
        r[j] = cpu.add(r[j], big[n + j], carry_in=True, carry_out=j < n - 1)
    value = sum(w << (32 * j) for j, w in enumerate(r))
    assert value < 2 * p_int
    if not lazy_free and value >= p_int:
        value -= p_int
    return value


FIELDS = [(c, which) for c in (BLS12_381, BN254) for which in ("fq", "fr")]


@pytest.mark.parametrize(("curve", "which"), FIELDS, ids=lambda x: getattr(x, "name", x))
def test_square_keeps_its_carries_and_equals_the_montgomery_square(curve, which):
    field = getattr(curve, which)
    p, n = field.modulus, 2 * field.limbs
    R = W ** n
    lazy = which == "fq" and 4 * p < R  # the lazy form of the base fields (LAZY_FREE_TERMS >= 1)
    rng = random.Random(f"square {curve.name} {which}")
    top = 2 * p - 1 if lazy else p - 1
    edges = [0, 1, 2, p - 1, top, (top >> 32) << 32, W - 1, R // W - 1]
    if lazy:
        edges += [p, p + 1]
    cases = [v for v in edges if v <= top] + [rng.randrange(top + 1) for _ in range(400)]
    r_inv = pow(R, -1, p)
    for a in cases:
        got = montgomery_square(a, p, n, lazy_free=lazy)
        assert got % p == a * a * r_inv % p
        if not lazy:
            assert got < p


@pytest.mark.parametrize("n", [4, 6, 8, 12, 16])
def test_square_rows_keep_their_carries_at_every_word_for_the_largest_operand(n):
    """The dropped carries of the cross rows, the merge and the diagonal, for every word all ones (the
    largest value of every partial sum: each is a sum of products of words with positive weights)."""
    a = W ** n - 1
    big = square_words(Words(), [MASK] * n, n)
    assert sum(w << (32 * k) for k, w in enumerate(big)) == a * a

"""The bounds behind mont_t::dot (cuda_src/ff/mont.cuh), on integers without a GPU: the CIOS steps of
a b + c d with one reduction keep t below 3p, so a step's value (t + a b_i + c d_i + m p) stays below
w^(N+1) (the arrays' word count) when p < R/4, and the result before the one conditional subtraction
is below 2p. Operands at the largest stored words (p - 1) and random ones, both curves' base fields."""
from __future__ import annotations

import random

import pytest

from pipeline.curves import BLS12_381, BN254

W = 1 << 32


def dot_cios(a: int, b: int, c: int, d: int, p: int, n_words: int) -> tuple[int, int, int]:
    """(result, largest step value, largest t) of the word-serial Montgomery dot product."""
    m0 = (-pow(p, -1, W)) % W
    t, top_step, top_t = 0, 0, 0
    for i in range(n_words):
        bi, di = (b >> (32 * i)) % W, (d >> (32 * i)) % W
        t += a * bi + c * di
        m = (t % W) * m0 % W
        t += m * p
        top_step = max(top_step, t)
        assert t % W == 0
        t //= W
        top_t = max(top_t, t)
    return t, top_step, top_t


@pytest.mark.parametrize("curve", [BLS12_381, BN254], ids=lambda c: c.name)
def test_dot_stays_inside_its_words_and_needs_one_subtraction(curve):
    p, n = curve.fq.modulus, 2 * curve.fq.limbs
    R = W ** n
    assert p.bit_length() <= 32 * n - 2  # the kernel's static_assert: p < R/4
    rng = random.Random(curve.name)
    top = p - 1
    cases = [(top, top, top, top), (top, top, 0, 0), (0, 0, top, top), (1, 1, top, top)]
    cases += [tuple(rng.randrange(p) for _ in range(4)) for _ in range(300)]
    for a, b, c, d in cases:
        t, top_step, top_t = dot_cios(a, b, c, d, p, n)
        assert top_step < W ** (n + 1) and top_t < 3 * p
        assert t < 2 * p
        got = t - p if t >= p else t
        assert got == (a * b + c * d) * pow(R, -1, p) % p

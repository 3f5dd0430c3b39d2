"""The bounds behind mont_t's dot products (cuda_src/ff/mont.cuh, product<K>), on integers without a GPU:
the CIOS steps of sum_k a_k b_k with one reduction keep t below (K + 1) p, so a step's value
(t + sum_k a_k b_k,i + m p) stays below w^(N+1) (the arrays' word count) when (K + 1) p < R, and the
result before the one conditional subtraction is below 2p. K = 2 (mont_t::dot, the point formulas' Y3 over
Fq) and K = 4 (mont_t::dot4, the two-lane Fq2 dot product); operands at the largest stored words (p - 1)
and random ones, both curves' base fields; the generator's DOT_TERMS is the largest K these bounds allow."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cuda.constants import dot_terms_for, field_params
from pipeline.curves import BLS12_381, BN254

W = 1 << 32


def dot_cios(a: list[int], b: list[int], p: int, n_words: int) -> tuple[int, int, int]:
    """(result, largest step value, largest t) of the word-serial Montgomery dot product sum a_k b_k."""
    m0 = (-pow(p, -1, W)) % W
    t, top_step, top_t = 0, 0, 0
    for i in range(n_words):
        t += sum(x * ((y >> (32 * i)) % W) for x, y in zip(a, b))
        m = (t % W) * m0 % W
        t += m * p
        top_step = max(top_step, t)
        assert t % W == 0
        t //= W
        top_t = max(top_t, t)
    return t, top_step, top_t


@pytest.mark.parametrize("terms", [2, 4])
@pytest.mark.parametrize("curve", [BLS12_381, BN254], ids=lambda c: c.name)
def test_dot_stays_inside_its_words_and_needs_one_subtraction(curve, terms):
    p, n = curve.fq.modulus, 2 * curve.fq.limbs
    R = W ** n
    assert terms <= dot_terms_for(p, n)  # the kernel's static_assert
    rng = random.Random(f"{curve.name}{terms}")
    top = p - 1
    cases = [[top] * 2 * terms, [top, top] + [0] * (2 * terms - 2), [0] * (2 * terms - 2) + [top, top],
             [1, 1] + [top] * (2 * terms - 2)]
    cases += [[rng.randrange(p) for _ in range(2 * terms)] for _ in range(300)]
    for ops in cases:
        a, b = ops[0::2], ops[1::2]
        t, top_step, top_t = dot_cios(a, b, p, n)
        assert top_step < W ** (n + 1) and top_t < (terms + 1) * p
        assert t < 2 * p
        got = t - p if t >= p else t
        assert got == sum(x * y for x, y in zip(a, b)) * pow(R, -1, p) % p


@pytest.mark.parametrize("curve", [BLS12_381, BN254], ids=lambda c: c.name)
def test_dot_terms_is_the_largest_count_the_words_hold(curve):
    for field in (curve.fq, curve.fr):
        p, n = field.modulus, 2 * field.limbs
        k = dot_terms_for(p, n)
        assert (k + 1) * p < W ** n <= (k + 2) * p
        assert f"static constexpr int DOT_TERMS = {k};" in field_params("FQ", field)
    assert dot_terms_for(curve.fq.modulus, 2 * curve.fq.limbs) >= 4  # the two-lane Fq2 dot product's dot4

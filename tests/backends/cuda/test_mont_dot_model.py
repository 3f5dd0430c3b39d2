"""The bounds behind mont_t's dot products (cuda_src/ff/mont.cuh, product<K>), on integers without a GPU:
the CIOS steps of sum_k a_k b_k with one reduction keep t below (K + 1) p, so a step's value
(t + sum_k a_k b_k,i + m p) stays below w^(N+1) (the arrays' word count) when (K + 1) p < R, and the
result before the one conditional subtraction is below 2p. K = 2 (mont_t::dot, the point formulas' Y3 over
Fq) and K = 4 (mont_t::dot4, the two-lane Fq2 dot product); operands at the largest stored words (p - 1)
and random ones, both curves' base fields; the generator's DOT_TERMS is the largest K these bounds allow."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cuda.constants import dot_terms_for, field_params, lazy_free_terms_for, lazy_terms_for
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


def lazy_cases(p: int, terms: int, rng: random.Random) -> list[list[int]]:
    top = 2 * p - 1  # the largest lazy value
    cases = [[top] * 2 * terms, [top, top] + [0] * (2 * terms - 2), [p] * 2 * terms, [1, 1] + [top] * (2 * terms - 2)]
    return cases + [[rng.randrange(2 * p) for _ in range(2 * terms)] for _ in range(300)]


@pytest.mark.parametrize("curve", [BLS12_381, BN254], ids=lambda c: c.name)
def test_lazy_products_of_operands_below_2p_stay_inside_their_words_and_below_2p(curve):
    """mont.cuh's lazy form (P::LAZY): operands anywhere in [0, 2p). For every K up to the generator's
    LAZY_TERMS the steps stay below (2K + 1) p w (inside N + 1 words) and t below (2K + 1) p; the result is
    below 2p as it comes out up to LAZY_FREE_TERMS (the product skips its subtraction) and after one
    subtraction of p beyond; a sum of two lazy values fits the words (4p < R)."""
    p, n = curve.fq.modulus, 2 * curve.fq.limbs
    R = W ** n
    lazy, free = lazy_terms_for(p, n), lazy_free_terms_for(p, n)
    assert lazy >= 2 and free >= 1 and 4 * p < R  # both base fields: the G1 formulas' products and dot
    rng = random.Random(f"lazy {curve.name}")
    for terms in range(1, lazy + 1):
        for ops in lazy_cases(p, terms, rng):
            a, b = ops[0::2], ops[1::2]
            t, top_step, top_t = dot_cios(a, b, p, n)
            assert top_step < W ** (n + 1) and top_t < (2 * terms + 1) * p
            if terms <= free:
                assert t < 2 * p, (terms, ops)
            else:
                assert (t - p if t >= p else t) < 2 * p, (terms, ops)
            assert t % p == sum(x * y for x, y in zip(a, b)) * pow(R, -1, p) % p


@pytest.mark.parametrize("curve", [BLS12_381, BN254], ids=lambda c: c.name)
def test_lazy_terms_are_the_largest_counts_the_bounds_allow(curve):
    """LAZY_TERMS: the largest K with (2K + 1) p < R and 2 K p < R; LAZY_FREE_TERMS: with 4 K p < R. BLS12-381's
    Fq (p ~ 0.10 R) has 4 and 2 (the two-lane Fq2 dot4 fits), BN254's (p ~ 0.19 R) 2 and 1; an Fr of 255 bits
    none. The header carries them and 2p."""
    for field in (curve.fq, curve.fr):
        p, n = field.modulus, 2 * field.limbs
        R = W ** n
        k, free = lazy_terms_for(p, n), lazy_free_terms_for(p, n)
        text = field_params("FQ", field)
        assert f"static constexpr int LAZY_TERMS = {k};" in text
        if 4 * p >= R:
            assert k == 0 and "LAZY_FREE_TERMS = 0;" in text
            continue
        assert (2 * k + 1) * p < R and 2 * k * p < R
        assert (2 * k + 3) * p >= R or 2 * (k + 1) * p >= R
        assert 4 * free * p < R <= 4 * (free + 1) * p
        assert f"static constexpr int LAZY_FREE_TERMS = {free};" in text and "FQ_MOD2" in text
    expected = {"bls12381": (4, 2), "bn128": (2, 1)}[curve.name]
    assert (lazy_terms_for(curve.fq.modulus, 2 * curve.fq.limbs),
            lazy_free_terms_for(curve.fq.modulus, 2 * curve.fq.limbs)) == expected

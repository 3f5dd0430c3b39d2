"""The reference NTT against the definition (a direct evaluation), on both scalar fields."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cpu.ntt import coset_shift, ntt, quotient_on_coset, to_odd_coset


def _evaluate(p, coeffs, x):
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % p
    return acc


@pytest.mark.parametrize("log_n", [0, 1, 3, 6])
def test_ntt_is_evaluation_at_powers_of_the_root(curve, log_n):
    fr, p = curve.fr, curve.fr.modulus
    rng = random.Random(log_n)
    n = 1 << log_n
    coeffs = [rng.randrange(p) for _ in range(n)]
    coeffs[0] = p - 1  # edge value
    w = fr.root_of_unity(log_n)
    assert ntt(fr, coeffs) == [_evaluate(p, coeffs, pow(w, i, p)) for i in range(n)]
    assert ntt(fr, ntt(fr, coeffs), inverse=True) == coeffs


def test_odd_coset_is_evaluation_at_odd_powers_of_the_2n_root(curve):
    fr, p = curve.fr, curve.fr.modulus
    rng = random.Random(9)
    n = 16
    evals = [rng.randrange(p) for _ in range(n)]
    coeffs = ntt(fr, evals, inverse=True)
    w2n = coset_shift(fr, 4)
    assert to_odd_coset(fr, evals) == [_evaluate(p, coeffs, pow(w2n, 2 * i + 1, p)) for i in range(n)]


def test_quotient_vanishes_for_consistent_abc(curve):
    # c = a*b on the domain: the odd-coset values of ab - c are the polynomial's, not zero,
    # but for a = b = c = 0 they are zero, and for constant a, b the product is constant.
    fr = curve.fr
    n = 8
    assert quotient_on_coset(fr, [0] * n, [0] * n, [0] * n) == [0] * n
    assert quotient_on_coset(fr, [3] * n, [5] * n, [15] * n) == [0] * n


def test_ntt_rejects_non_power_of_two(curve):
    with pytest.raises(ValueError, match="power of two"):
        ntt(curve.fr, [1, 2, 3])

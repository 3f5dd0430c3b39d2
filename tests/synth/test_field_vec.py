"""Digit arithmetic mod r (synth.field_vec) agrees with Python ints, edge values included."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.formats.zkey_writer import random_limbs
from pipeline.synth import field_vec


def digits_of(fr, ints):
    return field_vec.limbs_to_digits(fr.limbs_from_ints(ints))


def ints_of(fr, digits):
    return fr.ints_from_limbs(field_vec.digits_to_limbs(digits))


def edge_values(r):
    return [0, 1, 2, r - 1, r - 2, (r - 1) // 2, 1 << 64, (1 << 128) - 1]


def test_mul_mod_matches_python_ints_on_random_and_edge_values(curve):
    fr, r = curve.fr, curve.fr.modulus
    rng = np.random.default_rng(5)
    xs = edge_values(r) + fr.ints_from_limbs(random_limbs(rng, (200, fr.limbs), r))
    ys = list(reversed(edge_values(r))) + fr.ints_from_limbs(random_limbs(rng, (200, fr.limbs), r))
    x = field_vec.with_headroom(digits_of(fr, xs), field_vec.FIELD_DIGITS + 1)
    y = field_vec.with_headroom(digits_of(fr, ys), field_vec.FIELD_DIGITS + 1)
    assert ints_of(fr, field_vec.mul_mod(x, y, r)) == [a * b % r for a, b in zip(xs, ys)]


def test_sum_then_multiply_handles_unreduced_sums_of_twelve_values(curve):
    fr, r = curve.fr, curve.fr.modulus
    rng = np.random.default_rng(6)
    a = random_limbs(rng, (64, 12, fr.limbs), r)
    b = random_limbs(rng, (64, 12, fr.limbs), r)
    a[0] = fr.limbs_from_ints([r - 1] * 12)  # the largest sum
    b[0] = fr.limbs_from_ints([r - 1] * 12)
    sums_a = [sum(fr.ints_from_limbs(row)) for row in a]
    sums_b = [sum(fr.ints_from_limbs(row)) for row in b]
    sa, sb = field_vec.sum_of_limbs(a), field_vec.sum_of_limbs(b)
    assert [sum(int(d) << (16 * i) for i, d in enumerate(col)) for col in sa.T] == sums_a
    assert ints_of(fr, field_vec.mul_mod(sa, sb, r)) == [x * y % r for x, y in zip(sums_a, sums_b)]


def test_redc_divides_by_two_to_the_288(curve):
    fr, r = curve.fr, curve.fr.modulus
    values = [0, 1, r - 1, r, 2 * r - 1, (r - 1) * (r - 1), 255 * (r - 1) ** 2]
    digits = np.array([[(v >> (16 * i)) & 0xFFFF for v in values] for i in range(35)], dtype=np.uint64)
    r_inv = pow(1 << 288, -1, r)
    assert ints_of(fr, field_vec.redc(digits, r)) == [v * r_inv % r for v in values]


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 2])
def test_subtract_if_not_below_gives_the_residue_near_r(curve, offset):
    fr, r = curve.fr, curve.fr.modulus
    value = r + offset
    digits = np.array([[(value >> (16 * i)) & 0xFFFF] for i in range(16)], dtype=np.uint64)
    assert ints_of(fr, field_vec.subtract_if_not_below(digits, r)) == [value % r]

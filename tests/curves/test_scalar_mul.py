"""Fixed-base tables and the two-point Straus product against the reference double-and-add."""
from __future__ import annotations

import random

import pytest

from pipeline.curves import BLS12_381, BN254
from pipeline.curves.scalar_mul import FixedBaseTable, batch_to_affine, mul_sum2

GROUPS = [(c, g) for c in (BN254, BLS12_381) for g in ("g1", "g2")]


def random_point(curve, group, rng):
    return group.mul(group.from_affine(group.generator), rng.randrange(1, curve.fr.modulus))


@pytest.mark.parametrize("curve,which", GROUPS, ids=[f"{c.name}-{g}" for c, g in GROUPS])
def test_fixed_base_table_equals_double_and_add(curve, which):
    group, rng = getattr(curve, which), random.Random(f"fixed-{curve.name}-{which}")
    point = group.to_affine(random_point(curve, group, rng))
    r = curve.fr.modulus
    for window in (1, 4, 6):
        table = FixedBaseTable(group, point, curve.fr.bits, window)
        edge = [0, 1, 2, (1 << window) - 1, 1 << window, r - 1, r, r + 1, -1, (1 << curve.fr.bits) - 1]
        for k in edge + [rng.randrange(r) for _ in range(4)]:
            assert group.eq(table.mul(k), group.mul(group.from_affine(point), k % r)), (window, k)


def test_fixed_base_table_refuses_infinity():
    with pytest.raises(ValueError, match="infinity"):
        FixedBaseTable(BN254.g1, None, BN254.fr.bits)


@pytest.mark.parametrize("curve,which", GROUPS, ids=[f"{c.name}-{g}" for c, g in GROUPS])
def test_mul_sum2_equals_two_products(curve, which):
    group, rng = getattr(curve, which), random.Random(f"straus-{curve.name}-{which}")
    p, q = random_point(curve, group, rng), random_point(curve, group, rng)
    r = curve.fr.modulus
    cases = [(0, 0), (1, 0), (0, 1), (3, 2), (r - 1, r - 1), (r, 5), (1 << 200, 3)]
    cases += [(rng.randrange(r), rng.randrange(r)) for _ in range(3)]
    for a, b in cases:
        want = group.add(group.mul(p, a % r), group.mul(q, b % r))
        assert group.eq(mul_sum2(group, p, a, q, b), want), (a, b)
    assert group.eq(mul_sum2(group, p, 7, group.neg(p), 7), group.infinity)  # cancels to infinity
    assert group.eq(mul_sum2(group, p, 2, p, 3), group.mul(p, 5))  # equal points: the doubling path


def test_batch_to_affine_equals_one_by_one():
    group, rng = BLS12_381.g2, random.Random("batch")
    points = [random_point(BLS12_381, group, rng) for _ in range(5)]
    assert batch_to_affine(group, points) == [group.to_affine(p) for p in points]

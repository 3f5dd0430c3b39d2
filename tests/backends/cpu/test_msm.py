"""The reference MSM equals the naive sum of scalar multiples, edge cases included."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cpu.msm import msm


def _naive(group, points, scalars):
    acc = group.infinity
    for pt, k in zip(points, scalars):
        acc = group.add(acc, group.mul(group.from_affine(pt), k))
    return acc


@pytest.mark.parametrize("n", [1, 2, 5, 33])
def test_msm_matches_naive_sum(curve, n):
    rng = random.Random(n)
    r = curve.fr.modulus
    for group in (curve.g1, curve.g2):
        gen = group.from_affine(group.generator)
        points = [group.to_affine(group.mul(gen, rng.randrange(1, r))) for _ in range(n)]
        scalars = [rng.choice([0, 1, r - 1, rng.randrange(r)]) for _ in range(n)]
        if n > 1:
            points[-1] = points[0]  # a repeated point
            points[1] = None  # infinity
        assert group.eq(msm(group, points, scalars), _naive(group, points, scalars))


def test_msm_of_all_zero_scalars_is_infinity(curve):
    g1 = curve.g1
    assert g1.to_affine(msm(g1, [g1.generator] * 3, [0, 0, 0])) is None


def test_msm_rejects_length_mismatch(curve):
    with pytest.raises(ValueError, match="points but"):
        msm(curve.g1, [curve.g1.generator], [1, 2])

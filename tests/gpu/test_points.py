"""Point kernels (cuda_src/ec/xyzz.cuh) against the Jacobian golden model, G1 and G2 of both curves.

Edge cases: the point at infinity on either side, P + P (doubling through add), P + (-P).
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.backends.cuda.launch import POINT_OPS, point_op
from pipeline.backends.cuda.msm import xyzz_to_jacobian

from .helpers import lazy_words, random_points, run_on_device

pytestmark = pytest.mark.gpu


def _coords_mont(curve, group, value):
    fq = curve.fq
    parts = [value] if group.ops.degree == 1 else list(value)
    return [fq.to_mont(v) for v in parts]


def _xyzz_words(curve, group, pt, rng):
    """Affine point (or None) -> XYZZ Montgomery words with a random z (ZZ = z^2, ZZZ = z^3)."""
    f, fq = group.ops, curve.fq
    n = (2 * fq.limbs) * (4 * group.ops.degree)
    if pt is None:
        return np.zeros(n, dtype=np.uint32)
    z = f.coerce((rng.randrange(1, fq.modulus), rng.randrange(fq.modulus)) if f.degree == 2 else rng.randrange(1, fq.modulus))
    zz = f.sqr(z)
    zzz = f.mul(zz, z)
    coords = [f.mul(pt[0], zz), f.mul(pt[1], zzz), zz, zzz]
    vals = [v for c in coords for v in _coords_mont(curve, group, c)]
    return fq.limbs_from_ints(vals).view(np.uint32).reshape(-1)


def _affine_words(curve, group, pt):
    fq = curve.fq
    n = (2 * fq.limbs) * (2 * group.ops.degree)
    if pt is None:
        return np.zeros(n, dtype=np.uint32)
    vals = _coords_mont(curve, group, pt[0]) + _coords_mont(curve, group, pt[1])
    return fq.limbs_from_ints(vals).view(np.uint32).reshape(-1)


# the lazy fields (values in [0, 2p), launch.LAZY_FIELDS) get inputs with coordinates moved up by p
@pytest.mark.parametrize("group_name,field", [("g1", "fq_t"), ("g2", "fq2_t"), ("g2", "fq2_pair_t"),
                                              ("g1", "fq_lazy_t"), ("g2", "fq2_pair_lazy_t")])
@pytest.mark.parametrize("op", POINT_OPS)
def test_point_op_matches_golden_model(cuda_backend, runtime, gpu_curve, group_name, field, op):
    curve, group = gpu_curve, getattr(gpu_curve, group_name)
    rng = random.Random(f"{curve.name}{group_name}{op}")
    pts = random_points(group, rng, 12)
    neg = lambda a: None if a is None else (a[0], group.ops.neg(a[1]))  # noqa: E731
    cases = [(pts[0], pts[1], pts[2]), (pts[3], pts[3], pts[3]), (pts[4], neg(pts[4]), neg(pts[4])),
             (None, pts[5], pts[6]), (pts[7], None, None), (None, None, None), (pts[8], pts[9], None),
             (pts[10], pts[10], neg(pts[11]))]
    ks = [rng.randrange(1 << 32) for _ in cases]
    ks[1], ks[2] = 0, 1
    P = np.stack([_xyzz_words(curve, group, c[0], rng) for c in cases])
    Q = np.stack([_xyzz_words(curve, group, c[1], rng) for c in cases])
    A = np.stack([_affine_words(curve, group, c[2]) for c in cases])
    K = np.array(ks, dtype=np.uint32)
    if "lazy" in field:
        P, Q, A = (lazy_words(x, curve.fq.modulus, 2 * curve.fq.limbs, rng) for x in (P, Q, A))
    out = run_on_device(cuda_backend, runtime.kernels, f"test_point_op<{field}>", P.shape, [P, Q, A, K],
                        (point_op(op), len(cases)), len(cases))
    for i, (p, q, a) in enumerate(cases):
        jp, jq, ja = group.from_affine(p), group.from_affine(q), group.from_affine(a)
        want = {"add": lambda: group.add(jp, jq), "add_affine": lambda: group.add(jp, ja),
                "dbl": lambda: group.double(jp), "neg": lambda: group.neg(jp),
                "mul_u32": lambda: group.mul(jp, ks[i])}[op]()
        got = xyzz_to_jacobian(group, curve.fq, out[i])
        assert group.eq(got, want), f"case {i}: {op}"

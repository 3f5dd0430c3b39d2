"""One rule for a stored point's shape (formats.types.point_row_shape): the zkey reader's arrays, the
placement's bytes a point and the GPU setup's downloads all follow it."""
from __future__ import annotations

import math

import pytest

from pipeline.backends.placement import point_bytes
from pipeline.curves import BLS12_381, BN254
from pipeline.formats.types import POINT_SECTIONS, point_row_shape
from pipeline.formats.zkey import read_zkey
from tests.conftest import fixture_dir


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_read_keys_point_arrays_have_the_row_shape_of_their_section(curve_name):
    zkey = read_zkey(fixture_dir(curve_name, "chain_2e8") / "circuit_final.zkey")
    for name in POINT_SECTIONS:
        assert getattr(zkey, f"points_{name}").shape[1:] == point_row_shape(zkey.curve, name)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_a_points_bytes_are_its_row_shapes(curve):
    limbs = curve.fq.limbs
    assert [point_row_shape(curve, s) for s in POINT_SECTIONS] == [(2, limbs)] * 2 + [(2, 2, limbs)] + [(2, limbs)] * 2
    assert [point_bytes(curve, s) for s in POINT_SECTIONS] == [8 * math.prod(point_row_shape(curve, s))
                                                             for s in POINT_SECTIONS]
    assert point_bytes(curve, "a") == 16 * limbs and point_bytes(curve, "b2") == 32 * limbs

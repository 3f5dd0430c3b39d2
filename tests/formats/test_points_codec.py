"""Single stored points: Montgomery bytes <-> plain affine ints, checked on decode."""
from __future__ import annotations

import pytest

from pipeline.formats.errors import FormatError
from pipeline.formats.points_codec import decode_g1, decode_g2, encode_g1, encode_g2


def test_generators_and_infinity_round_trip(curve):
    for pt in (curve.g1.generator, None):
        assert decode_g1(curve, encode_g1(curve, pt), "f", "p") == pt
    for pt in (curve.g2.generator, None):
        assert decode_g2(curve, encode_g2(curve, pt), "f", "p") == pt
    assert encode_g1(curve, None) == bytes(2 * curve.fq.n_bytes)


def test_stored_form_is_montgomery(curve):
    raw = encode_g1(curve, curve.g1.generator)
    n8 = curve.fq.n_bytes
    assert int.from_bytes(raw[:n8], "little") == curve.fq.to_mont(curve.g1.generator[0])


def test_points_off_the_curve_or_coordinates_not_below_q_are_rejected(curve):
    n8 = curve.fq.n_bytes
    raw = bytearray(encode_g1(curve, curve.g1.generator))
    raw[n8] ^= 1
    with pytest.raises(FormatError, match="f: alpha1: not on the"):
        decode_g1(curve, bytes(raw), "f", "alpha1")
    big = curve.fq.modulus.to_bytes(n8, "little") * 4
    with pytest.raises(FormatError, match="coordinate 0 .* is not below q"):
        decode_g2(curve, big, "f", "beta2")

"""Single curve points <-> the bytes snarkjs stores (affine, Montgomery form, little-endian).

Only for the handful of points of a verification key: bulk point arrays stay numpy arrays in
stored form and are never decoded one by one.

G1: x, y (n8q bytes each). G2: x.c0, x.c1, y.c0, y.c1. All-zero bytes = point at infinity.
"""
from __future__ import annotations

from ..curves import Curve
from ..curves.encoding import encode_g1_mont, encode_g2_mont
from .errors import FormatError
from .types import G1Affine, G2Affine


def _coords(curve: Curve, raw: bytes, count: int, path: str, what: str) -> list[int] | None:
    n8 = curve.fq.n_bytes
    q = curve.fq.modulus
    if not any(raw):
        return None
    values = []
    for i in range(count):
        stored = int.from_bytes(raw[i * n8 : (i + 1) * n8], "little")
        if stored >= q:
            raise FormatError(path, f"{what}: coordinate {i} (Montgomery form) is not below q")
        values.append(curve.fq.from_mont(stored))
    return values


def decode_g1(curve: Curve, raw: bytes, path: str, what: str) -> G1Affine:
    """Decode and check one stored G1 point (on the curve; ``None`` for infinity)."""
    coords = _coords(curve, raw, 2, path, what)
    if coords is None:
        return None
    point = (coords[0], coords[1])
    if not curve.g1.is_on_curve(point):
        raise FormatError(path, f"{what}: not on the {curve.g1.name} curve")
    return point


def decode_g2(curve: Curve, raw: bytes, path: str, what: str) -> G2Affine:
    coords = _coords(curve, raw, 4, path, what)
    if coords is None:
        return None
    point = ((coords[0], coords[1]), (coords[2], coords[3]))
    if not curve.g2.is_on_curve(point):
        raise FormatError(path, f"{what}: not on the {curve.g2.name} curve")
    return point


def encode_g1(curve: Curve, point: G1Affine) -> bytes:
    return encode_g1_mont(curve, [point]).tobytes()


def encode_g2(curve: Curve, point: G2Affine) -> bytes:
    return encode_g2_mont(curve, [point]).tobytes()

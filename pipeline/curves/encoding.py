"""Affine point arrays (numpy limbs, Montgomery form as snarkjs stores them) <-> Python ints.

G1 arrays have shape (n, 2, limbs): (x, y). G2 arrays (n, 2, 2, limbs): ((x.c0, x.c1), (y.c0, y.c1)).
All-zero coordinates encode the point at infinity, decoded as ``None``.
"""
from __future__ import annotations

import numpy as np

from .curve import Curve


def _plain_coordinates(curve: Curve, arr: np.ndarray) -> list[int]:
    fq = curve.fq
    r_inv, q = fq.r_mont_inv, fq.modulus
    return [v * r_inv % q for v in fq.ints_from_limbs(arr)]


def decode_g1_mont(curve: Curve, arr: np.ndarray) -> list:
    coords = _plain_coordinates(curve, arr)
    return [None if (x == 0 and y == 0) else (x, y) for x, y in zip(coords[0::2], coords[1::2])]


def decode_g2_mont(curve: Curve, arr: np.ndarray) -> list:
    c = _plain_coordinates(curve, arr)
    out = []
    for i in range(0, len(c), 4):
        x, y = (c[i], c[i + 1]), (c[i + 2], c[i + 3])
        out.append(None if x == (0, 0) and y == (0, 0) else (x, y))
    return out


def encode_g1_mont(curve: Curve, points) -> np.ndarray:
    fq = curve.fq
    flat = []
    for pt in points:
        flat.extend((0, 0) if pt is None else (fq.to_mont(pt[0]), fq.to_mont(pt[1])))
    return fq.limbs_from_ints(flat).reshape(-1, 2, fq.limbs)


def encode_g2_mont(curve: Curve, points) -> np.ndarray:
    fq = curve.fq
    flat = []
    for pt in points:
        if pt is None:
            flat.extend((0, 0, 0, 0))
        else:
            (x0, x1), (y0, y1) = pt
            flat.extend(fq.to_mont(v) for v in (x0, x1, y0, y1))
    return fq.limbs_from_ints(flat).reshape(-1, 2, 2, fq.limbs)

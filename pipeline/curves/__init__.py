"""Curve parameters and reference arithmetic (Python ints): the single source of truth."""
from .bls12_381 import BLS12_381
from .bn254 import BN254
from .curve import Curve
from .field import PrimeField, ScalarField

CURVES: tuple[Curve, ...] = (BN254, BLS12_381)


def curve_by_name(name: str) -> Curve:
    key = name.strip().lower()
    for curve in CURVES:
        if key in curve.aliases:
            return curve
    known = ", ".join(c.name for c in CURVES)
    raise ValueError(f"unknown curve {name!r} (expected one of: {known})")


def curve_by_scalar_prime(r: int) -> Curve | None:
    return next((c for c in CURVES if c.fr.modulus == r), None)


def curve_by_base_prime(q: int) -> Curve | None:
    return next((c for c in CURVES if c.fq.modulus == q), None)


__all__ = ["BLS12_381", "BN254", "CURVES", "Curve", "PrimeField", "ScalarField",
           "curve_by_name", "curve_by_scalar_prime", "curve_by_base_prime"]

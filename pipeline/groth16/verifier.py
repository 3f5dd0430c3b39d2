"""Groth16 verification: input checks, then one product of four Miller loops.

    e(-pi_a, pi_b) · e(alpha1, beta2) · e(vk_x, gamma2) · e(pi_c, delta2) == 1,
    vk_x = IC_0 + Σ public_i IC_i

Pairings come from py_ecc (pure Python, well kept; about a second a verification on
BLS12-381). Malformed proofs are rejected with a reason before any pairing runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..curves import Curve
from ..formats.types import VerificationKey


@dataclass(frozen=True)
class Verdict:
    valid: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.valid


def _py_ecc(curve: Curve):
    if curve.name == "bn128":
        from py_ecc import optimized_bn128 as lib
    else:
        from py_ecc import optimized_bls12_381 as lib
    return lib


def _g1(lib, pt):
    if pt is None:
        return lib.Z1
    return (lib.FQ(pt[0]), lib.FQ(pt[1]), lib.FQ.one())


def _g2(lib, pt):
    if pt is None:
        return lib.Z2
    return (lib.FQ2(list(pt[0])), lib.FQ2(list(pt[1])), lib.FQ2.one())


def check_proof_points(curve: Curve, pi_a, pi_b, pi_c) -> str:
    """'' if the points are valid group elements, else the reason."""
    for label, group, pt in (("pi_a", curve.g1, pi_a), ("pi_b", curve.g2, pi_b), ("pi_c", curve.g1, pi_c)):
        if not group.is_on_curve(pt):
            return f"{label} is not on the {group.name} curve"
        if not group.is_in_subgroup(pt):
            return f"{label} is not in the prime-order subgroup of {group.name}"
    return ""


def verify(vk: VerificationKey, public_signals, pi_a, pi_b, pi_c) -> Verdict:
    curve = vk.curve
    r = curve.fr.modulus
    if len(public_signals) != vk.n_public:
        return Verdict(False, f"{len(public_signals)} public signals, the key expects {vk.n_public}")
    for i, value in enumerate(public_signals):
        if not 0 <= int(value) < r:
            return Verdict(False, f"public signal {i} is not below the scalar field modulus")
    reason = check_proof_points(curve, pi_a, pi_b, pi_c)
    if reason:
        return Verdict(False, reason)

    g1 = curve.g1
    vk_x = g1.from_affine(vk.ic[0])
    for value, base in zip(public_signals, vk.ic[1:]):
        vk_x = g1.add(vk_x, g1.mul(g1.from_affine(base), int(value)))
    vk_x = g1.to_affine(vk_x)

    lib = _py_ecc(curve)
    neg_a = None if pi_a is None else (pi_a[0], (-pi_a[1]) % curve.fq.modulus)
    pairs = ((neg_a, pi_b), (vk.alpha1, vk.beta2), (vk_x, vk.gamma2), (pi_c, vk.delta2))
    product = lib.FQ12.one()
    for p1, q2 in pairs:
        if p1 is None or q2 is None:
            continue  # e(O, Q) = e(P, O) = 1
        product = product * lib.pairing(_g2(lib, q2), _g1(lib, p1), final_exponentiate=False)
    if lib.final_exponentiate(product) != lib.FQ12.one():
        return Verdict(False, "pairing check failed")
    return Verdict(True)

"""One Groth16 proof, in the order of the math (as snarkjs's ``groth16 prove`` computes it).

    h           = quotient of A·w ∘ B·w - C·w on snarkjs's odd coset     (backend.compute_h)
    msms        = Σ w_i A_i, Σ w_i B1_i, Σ w_i B2_i, Σ_private w_i C_i, Σ h_i H_i (backend.msms)
    pi_a        = alpha1 + Σ w A + r δ1
    pi_b        = beta2  + Σ w B2 + s δ2          (and its G1 twin b1 = beta1 + Σ w B1 + s δ1)
    pi_c        = Σ w C + Σ h H + s pi_a + r b1 - r s δ1
                = Σ w C + Σ h H + s (alpha1 + Σ w A) + r (beta1 + Σ w B1) + r s δ1    (as computed)
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

import numpy as np

from .. import progress
from ..curves.scalar_mul import FixedBaseTable, mul_sum2
from ..formats.types import Groth16Zkey, Witness
from ..backends.protocol import Backend, MsmResults
from ..errors import BadInput
from .witness_scan import check_below_r


class WitnessMismatch(BadInput):
    """The witness does not belong to the key (length or curve)."""


@dataclass(frozen=True)
class Proof:
    curve_name: str
    pi_a: tuple | None  # affine G1
    pi_b: tuple | None  # affine G2
    pi_c: tuple | None  # affine G1
    public_signals: tuple[int, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Blinding:
    r: int
    s: int

    @classmethod
    def random(cls, order: int) -> "Blinding":
        return cls(secrets.randbelow(order), secrets.randbelow(order))


def check_witness(zkey: Groth16Zkey, witness: Witness) -> None:
    if witness.curve is not zkey.curve:
        raise WitnessMismatch(
            f"{witness.path}: witness is over {witness.curve.name}'s scalar field "
            f"but the key {zkey.path} is for {zkey.curve.name}")
    if len(witness) != zkey.n_vars:
        raise WitnessMismatch(
            f"{witness.path}: witness has {len(witness)} values but the key {zkey.path} "
            f"expects {zkey.n_vars} (a witness of another circuit?)")
    if int(witness.values[0, 0]) != 1 or np.any(witness.values[0, 1:]):
        raise WitnessMismatch(f"{witness.path}: witness[0] must be the constant 1")


def public_signals(zkey: Groth16Zkey, witness: np.ndarray) -> tuple[int, ...]:
    fr = zkey.curve.fr
    return tuple(fr.ints_from_limbs(witness[1 : zkey.n_public + 1]))


@dataclass(frozen=True)
class DeltaTables:
    """Fixed-base tables of δ1 and δ2, the points every proof of a key multiplies by fresh r, s.
    Built once per key (~0.1-0.2 s in Python); they make those products ~7x cheaper, so the
    engine keeps one per resident key. A one-off proof does without."""

    delta1: FixedBaseTable
    delta2: FixedBaseTable

    @classmethod
    def for_key(cls, zkey: Groth16Zkey) -> "DeltaTables":
        bits = zkey.curve.fr.bits
        return cls(FixedBaseTable(zkey.curve.g1, zkey.delta1, bits), FixedBaseTable(zkey.curve.g2, zkey.delta2, bits))


def assemble(zkey: Groth16Zkey, msms: MsmResults, blinding: Blinding, b_g2=None,
             tables: DeltaTables | None = None) -> tuple:
    """(pi_a, pi_b, pi_c) as affine points, from the MSMs and the blinding r, s."""
    g1, g2 = zkey.curve.g1, zkey.curve.g2
    r, s = blinding.r, blinding.s
    rs = r * s % zkey.curve.fr.modulus
    b_g2 = msms.b_g2 if b_g2 is None else b_g2
    if b_g2 is None:
        raise ValueError("assemble: the G2 MSM of B is missing")
    if tables is not None:
        r_delta1, rs_delta1, s_delta2 = tables.delta1.mul(r), tables.delta1.mul(rs), tables.delta2.mul(s)
    else:
        delta1 = g1.from_affine(zkey.delta1)
        r_delta1, rs_delta1 = g1.mul(delta1, r), g1.mul(delta1, rs)
        s_delta2 = g2.mul(g2.from_affine(zkey.delta2), s)

    a_alpha = g1.add(msms.a_g1, g1.from_affine(zkey.alpha1))
    b1_beta = g1.add(msms.b_g1, g1.from_affine(zkey.beta1))
    pi_a = g1.add(a_alpha, r_delta1)
    pi_b = g2.add(g2.add(b_g2, g2.from_affine(zkey.beta2)), s_delta2)
    # s pi_a + r b1 - r s δ1 = s (alpha1 + A) + r (beta1 + B1) + r s δ1: one shared run of doublings
    pi_c = g1.add(g1.add(msms.c_g1, msms.h_g1), g1.add(mul_sum2(g1, a_alpha, s, b1_beta, r), rs_delta1))
    return g1.to_affine(pi_a), g2.to_affine(pi_b), g1.to_affine(pi_c)


def prove(backend: Backend, key, zkey: Groth16Zkey, witness: Witness, blinding: Blinding | None = None) -> Proof:
    """The whole proof on one backend (``key`` is ``backend.load_key(zkey)``)."""
    check_witness(zkey, witness)
    check_below_r(witness)  # the engine fuses this check into prep_msm's pass; here it is its own
    blinding = blinding or Blinding.random(zkey.curve.fr.modulus)
    with progress.bar(f"proving on {getattr(backend, 'name', 'the backend')}", total=3, unit="step") as bar:
        t0 = time.perf_counter()
        bar.set_postfix_str("H")
        h = backend.compute_h(key, witness.values)
        t1 = time.perf_counter()
        bar.update()
        bar.set_postfix_str("MSMs")
        msms = backend.msms(key, witness.values, h)
        t2 = time.perf_counter()
        bar.update()
        bar.set_postfix_str("assembly")
        pi_a, pi_b, pi_c = assemble(zkey, msms, blinding)
        t3 = time.perf_counter()
        bar.update()
    timings = {"h_ms": (t1 - t0) * 1e3, "msm_ms": (t2 - t1) * 1e3, "assemble_ms": (t3 - t2) * 1e3}
    timings.update(msms.timings_ms)
    return Proof(zkey.curve.name, pi_a, pi_b, pi_c, public_signals(zkey, witness.values), timings)

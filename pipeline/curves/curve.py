"""A pairing-friendly curve: its two fields and two groups, checked when built."""
from __future__ import annotations

from dataclasses import dataclass

from .field import PrimeField, ScalarField
from .points import CurveGroup
from .tower import Fq2Ops, FqOps


@dataclass(frozen=True)
class Curve:
    name: str  # snarkjs's name: "bn128" or "bls12381"
    aliases: tuple[str, ...]
    fq: PrimeField
    fr: ScalarField
    g1: CurveGroup
    g2: CurveGroup

    def __repr__(self) -> str:
        return f"Curve({self.name})"


def build_curve(name, aliases, q, r, b1, b2, g1_gen, g2_gen, g1_cofactor, g2_cofactor) -> Curve:
    """Bind the constants into a Curve and check them, so a typo fails at import."""
    fq = PrimeField(f"{name}.Fq", q)
    fr = ScalarField(f"{name}.Fr", r)
    g1 = CurveGroup(f"{name}.G1", FqOps(q), b1, g1_gen, r, g1_cofactor)
    g2 = CurveGroup(f"{name}.G2", Fq2Ops(q), b2, g2_gen, r, g2_cofactor)
    for group in (g1, g2):
        if not group.is_on_curve(group.generator):
            raise ValueError(f"{group.name}: generator is not on the curve")
    if g1.to_affine(g1.mul(g1.from_affine(g1_gen), r)) is not None:
        raise ValueError(f"{name}.G1: generator does not have order r")
    return Curve(name, aliases, fq, fr, g1, g2)

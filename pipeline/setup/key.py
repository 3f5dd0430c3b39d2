"""Glue shared by the CPU and GPU paths: the verification-key points and the in-memory key.

Both paths compute the big point arrays their own way and hand them here in stored form
(affine, Montgomery, all-zero for infinity); what is left is small: the six vk points from
the secrets, the IC points decoded, and the frozen ``Groth16Zkey`` the rest of zkpipe reads.
"""
from __future__ import annotations

import numpy as np

from ..curves import Curve
from ..curves.encoding import decode_g1_mont
from ..formats.types import POINT_SECTIONS, Groth16Zkey
from ..formats.compact_r1cs import CompactR1cs
from .coefficients import RecordLayout
from .dev_secrets import DevSecrets



def vk_points(curve: Curve, secrets: DevSecrets) -> dict:
    """alpha1, beta1, beta2, gamma2, delta1, delta2: the secrets times the generators (affine)."""
    g1, g2 = curve.g1, curve.g2

    def times(group, k):
        return group.to_affine(group.mul(group.from_affine(group.generator), k))

    return {"alpha1": times(g1, secrets.alpha), "beta1": times(g1, secrets.beta), "beta2": times(g2, secrets.beta),
            "gamma2": times(g2, secrets.gamma), "delta1": times(g1, secrets.delta), "delta2": times(g2, secrets.delta)}


def assemble_zkey(r1cs: CompactR1cs, secrets: DevSecrets, layout: RecordLayout, values_stored: np.ndarray,
                  points: dict[str, np.ndarray], ic_stored: np.ndarray, path: str,
                  points_on_host: bool = True) -> Groth16Zkey:
    """The in-memory key; ``points`` maps each of POINT_SECTIONS to its stored array (placeholders where
    ``points_on_host`` is False: Groth16Zkey.points_on_host)."""
    curve = r1cs.curve
    return Groth16Zkey(
        path=path, curve=curve, n_vars=r1cs.n_wires, n_public=r1cs.n_public, domain_size=r1cs.domain_size,
        **vk_points(curve, secrets), ic=tuple(decode_g1_mont(curve, ic_stored)),
        coeff_matrix=layout.matrix, coeff_constraint=layout.constraint, coeff_signal=layout.signal,
        coeff_values_stored=values_stored, **{f"points_{name}": points[name] for name in POINT_SECTIONS},
        points_on_host=points_on_host)

"""The reference backend: the golden model of every step, over Python ints."""
from __future__ import annotations

import functools
import time

import numpy as np

from ...curves.encoding import decode_g1_mont, decode_g2_mont
from ...formats.types import Groth16Zkey
from ..protocol import Backend, G1Jacobian, G2Jacobian, MsmResults
from .msm import msm
from .ntt import quotient_on_coset
from .spmv import evaluate_abc


class CpuKey:
    """A key decoded into Python ints, each section on first use (the CPU backend's "resident"
    form): the host G2 placement of the engine decodes only B2."""

    def __init__(self, zkey: Groth16Zkey) -> None:
        self.zkey = zkey

    @functools.cached_property
    def coeff_values(self) -> list[int]:
        return self.zkey.coeff_value_ints()

    def points(self, section: str) -> list:
        """Affine points of ``section`` (a, b1, b2, c, h), decoded once."""
        cache = self.__dict__.setdefault("_points", {})
        if section not in cache:
            decode = decode_g2_mont if section == "b2" else decode_g1_mont
            cache[section] = decode(self.zkey.curve, getattr(self.zkey, f"points_{section}"))
        return cache[section]


class CpuBackend(Backend):
    name = "cpu"

    def load_key(self, zkey: Groth16Zkey) -> CpuKey:
        return CpuKey(zkey)

    def unload_key(self, key: CpuKey) -> None:
        pass  # nothing beyond Python objects, freed with the handle

    def compute_h(self, key: CpuKey, witness: np.ndarray) -> np.ndarray:
        fr = key.zkey.curve.fr
        a, b, c = evaluate_abc(key.zkey, key.coeff_values, fr.ints_from_limbs(witness))
        return fr.limbs_from_ints(quotient_on_coset(fr, a, b, c))

    def h_to_host(self, h: np.ndarray) -> np.ndarray:
        return h

    def msms(self, key: CpuKey, witness: np.ndarray, h: np.ndarray, with_b_g2: bool = True) -> MsmResults:
        curve = key.zkey.curve
        w = curve.fr.ints_from_limbs(witness)
        h_ints = curve.fr.ints_from_limbs(h)
        timings: dict[str, float] = {}

        def timed(name, group, section, scalars):
            t0 = time.perf_counter()
            out = msm(group, key.points(section), scalars)
            timings[name] = (time.perf_counter() - t0) * 1e3
            return out

        first_private = key.zkey.n_public + 1
        return MsmResults(
            a_g1=G1Jacobian(*timed("msm_a_ms", curve.g1, "a", w)),
            b_g1=G1Jacobian(*timed("msm_b1_ms", curve.g1, "b1", w)),
            b_g2=G2Jacobian(*timed("msm_b2_ms", curve.g2, "b2", w)) if with_b_g2 else None,
            c_g1=G1Jacobian(*timed("msm_c_ms", curve.g1, "c", w[first_private:])),
            h_g1=G1Jacobian(*timed("msm_h_ms", curve.g1, "h", h_ints)),
            timings_ms=timings,
        )

    def msm_b_g2(self, key: CpuKey, witness: np.ndarray) -> G2Jacobian:
        curve = key.zkey.curve
        return G2Jacobian(*msm(curve.g2, key.points("b2"), curve.fr.ints_from_limbs(witness)))

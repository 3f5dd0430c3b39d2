"""The reference backend: the golden model of every step, over Python ints."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ... import progress
from ...curves.encoding import decode_g1_mont, decode_g2_mont
from ...formats.types import Groth16Zkey
from ...groth16.backend import MsmResults
from .msm import msm
from .ntt import quotient_on_coset
from .spmv import evaluate_abc


@dataclass(frozen=True, eq=False)
class CpuKey:
    """A key decoded once into Python ints (the CPU backend's "resident" form)."""

    zkey: Groth16Zkey
    coeff_values: list[int]
    points_a: list
    points_b1: list
    points_b2: list
    points_c: list
    points_h: list


class CpuBackend:
    name = "cpu"

    def load_key(self, zkey: Groth16Zkey) -> CpuKey:
        decoders = {"a": decode_g1_mont, "b1": decode_g1_mont, "b2": decode_g2_mont, "c": decode_g1_mont,
                    "h": decode_g1_mont}
        with progress.bar("preparing the key (cpu)", total=1 + len(decoders), unit="part") as bar:
            prepared = {"coeff_values": zkey.coeff_value_ints()}
            bar.update()
            for name, decode in decoders.items():
                prepared[f"points_{name}"] = decode(zkey.curve, getattr(zkey, f"points_{name}"))
                bar.update()
        return CpuKey(zkey=zkey, **prepared)

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

        def timed(name, fn, *args):
            t0 = time.perf_counter()
            out = fn(*args)
            timings[name] = (time.perf_counter() - t0) * 1e3
            return out

        first_private = key.zkey.n_public + 1
        return MsmResults(
            a_g1=timed("msm_a_ms", msm, curve.g1, key.points_a, w),
            b_g1=timed("msm_b1_ms", msm, curve.g1, key.points_b1, w),
            b_g2=timed("msm_b2_ms", msm, curve.g2, key.points_b2, w) if with_b_g2 else None,
            c_g1=timed("msm_c_ms", msm, curve.g1, key.points_c, w[first_private:]),
            h_g1=timed("msm_h_ms", msm, curve.g1, key.points_h, h_ints),
            timings_ms=timings,
        )

    def msm_b_g2(self, key: CpuKey, witness: np.ndarray) -> tuple:
        curve = key.zkey.curve
        return msm(curve.g2, key.points_b2, curve.fr.ints_from_limbs(witness))


"""The reference backend: the golden model of every step, over Python ints."""
from __future__ import annotations

import functools
import time

import numpy as np

from ...curves.encoding import decode_g1_mont, decode_g2_mont
from ...formats.types import Groth16Zkey
from ..batch import StreamedPass
from ..placement import HostSplit, KeyPlacement, is_g2, plan_chunks
from ..protocol import Backend, G1Jacobian, G2Jacobian, MsmResults
from .msm import msm
from .ntt import quotient_on_coset
from .spmv import evaluate_abc


class CpuKey:
    """A key decoded into Python ints, each section on first use (the CPU backend's "resident"
    form): the host G2 placement of the engine decodes only B2."""

    def __init__(self, zkey: Groth16Zkey, placement: KeyPlacement | None = None) -> None:
        self.zkey = zkey
        self.placement = placement or KeyPlacement()

    @functools.cached_property
    def coeff_values(self) -> list[int]:
        return self.zkey.coeff_value_ints()

    def points(self, section: str) -> list:
        """Affine points of ``section`` (a, b1, b2, c, h), decoded once."""
        cache = self.__dict__.setdefault("_points", {})
        if section not in cache:
            decode = decode_g2_mont if section == "b2" else decode_g1_mont
            cache[section] = decode(self.zkey.curve, self.zkey.host_points(section))
        return cache[section]


class CpuBackend(Backend):
    name = "cpu"

    def load_key(self, zkey: Groth16Zkey, placement: KeyPlacement | None = None) -> CpuKey:
        """The CPU has no device memory: ``placement`` only decides how ``start_batch`` walks the
        points (all at once, or in the chunks of a streamed pass: the reference of that walk)."""
        return CpuKey(zkey, placement)

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

    def start_batch(self, key: CpuKey, items, with_b_g2: bool):
        if not key.placement.streamed:
            return super().start_batch(key, items, with_b_g2)
        return CpuStreamedPass(self, key, items, with_b_g2)

    def max_batch(self, key: CpuKey) -> int:
        return 64 if key.placement.streamed else 1

    def msm_b_g2(self, key: CpuKey, witness: np.ndarray) -> G2Jacobian:
        curve = key.zkey.curve
        return G2Jacobian(*msm(curve.g2, key.points("b2"), curve.fr.ints_from_limbs(witness)))


class CpuStreamedPass(StreamedPass):
    """A streamed pass computed on the host, step by step as the CUDA backend queues it: the
    reference for the chunk walk and the adding up of partial sums (each step is done when
    ``enqueue_next`` returns)."""

    def __init__(self, backend: CpuBackend, key: CpuKey, items, with_b_g2: bool) -> None:
        super().__init__(key.zkey.curve, len(items), plan_chunks(key.zkey, key.placement), with_b_g2)
        self.backend, self.key, self.items = backend, key, list(items)
        self.partials: list[dict[str, list] | None] = [None] * len(items)
        self.scalars: list[dict[str, list[int]] | None] = [None] * len(items)
        self.timings: list[dict[str, float]] = [{} for _ in items]
        self.splits: list[HostSplit | None] = [None] * len(items)

    def _prologue(self, index: int) -> None:
        t0 = time.perf_counter()
        key, fr = self.key, self.key.zkey.curve.fr
        witness = self.items[index][0]
        h = self.backend.compute_h(key, witness)
        scalars = {"witness": fr.ints_from_limbs(witness), "h": fr.ints_from_limbs(h)}
        partials: dict[str, list] = {}
        first_private = key.zkey.n_public + 1
        for section in key.placement.resident:
            if section == "b2" and not self.with_b_g2:
                continue
            values = scalars["h"] if section == "h" else scalars["witness"][first_private if section == "c" else 0:]
            partials[section] = [self._msm(section, key.points(section), values)]
        self.partials[index], self.scalars[index] = partials, scalars
        self.splits[index] = HostSplit(witness)
        self.timings[index]["prologue_ms"] = (time.perf_counter() - t0) * 1e3

    def _chunk(self, chunk, live: list[int]) -> None:
        for s in chunk.slices:
            if s.section == "b2" and not self.with_b_g2:
                continue
            points = self.key.points(s.section)[s.point_lo:s.point_hi]
            for i in live:
                t0 = time.perf_counter()
                lo = chunk.lo + s.scalar_offset
                if chunk.scalars == "witness":  # the split walk the CUDA pass takes: ones, then the tail
                    self.partials[i].setdefault(s.section, []).extend(self._split_sums(i, chunk, s, points))
                else:
                    values = self.scalars[i][chunk.scalars][lo:lo + s.count]
                    self.partials[i].setdefault(s.section, []).append(self._msm(s.section, points, values))
                self.timings[i]["stream_ms"] = self.timings[i].get("stream_ms", 0.0) + (time.perf_counter() - t0) * 1e3

    def _split_sums(self, index: int, chunk, s, points: list) -> list:
        """The slice's ones summed, and its other scalars' MSM (point k of the slice: signal lo + k)."""
        split, fr = self.splits[index], self.key.zkey.curve.fr
        lo, hi = split.slice_signals(chunk, s)
        (o0, o1), (t0, t1) = split.ranges(lo, hi)
        ones = [points[int(x) - lo] for x in split.ones[o0:o1]]
        others = [points[int(x) - lo] for x in split.others[t0:t1]]
        return [self._msm(s.section, ones, [1] * len(ones)),
                self._msm(s.section, others, fr.ints_from_limbs(split.other_scalars[t0:t1]))]

    def _msm(self, section: str, points: list, values: list[int]):
        curve = self.key.zkey.curve
        return msm(curve.g2 if is_g2(section) else curve.g1, points, values)

    async def wait_for_room(self) -> None:
        return None  # every step was computed when it was enqueued

    async def wait(self) -> None:
        return None

    def results(self):
        return self.combine(self.partials, self.timings)

    def close(self) -> None:
        self.partials = [None] * self.n_items
        self.scalars = [None] * self.n_items

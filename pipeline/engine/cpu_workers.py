"""CPU work that may run in worker processes, away from the event loop's GIL.

The reference (pure-Python) G2 MSM holds the GIL for its whole run; in threads it starves
the event loop (measured: loop lag 70 ms with two G2 threads next to the gpu stage, 14 ms
without). With ``g2_msm_executor="process"`` it runs in a spawned process pool instead. Only
small, picklable values cross: the zkey path and the witness array go in, one G2 point comes
back. Each worker process decodes a key's B2 points once and keeps them (``_B2_POINTS``).
"""
from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

_B2_POINTS: dict[str, tuple] = {}  # zkey path -> (curve, decoded B2 points), per worker process
_B2_KEPT = 4


def g2_msm_from_path(zkey_path: str, staged: np.ndarray) -> tuple[tuple, float, float]:
    """Σ w_i B2_i for the key at ``zkey_path``; returns (Jacobian point, start, end) as perf_counter s."""
    from ..backends.cpu.msm import msm
    from ..curves.encoding import decode_g2_mont
    from ..formats.zkey import read_zkey

    t0 = time.perf_counter()
    if zkey_path not in _B2_POINTS:
        zkey = read_zkey(zkey_path)
        if len(_B2_POINTS) >= _B2_KEPT:
            _B2_POINTS.pop(next(iter(_B2_POINTS)))
        _B2_POINTS[zkey_path] = (zkey.curve, decode_g2_mont(zkey.curve, zkey.points_b2))
    curve, points = _B2_POINTS[zkey_path]
    t1 = time.perf_counter()  # the decode above happens once per process and key: not the MSM's time
    point = msm(curve.g2, points, curve.fr.ints_from_limbs(staged))
    return point, t1 if t1 - t0 > 0 else t0, time.perf_counter()


def _ready() -> bool:
    import pipeline.backends.cpu.msm  # noqa: F401  (pay the imports before the first MSM)
    import pipeline.formats.zkey  # noqa: F401

    return True


def warm_up(executor: Executor, workers: int) -> None:
    """Blocking: start every worker process now (not on the event loop at the first submit)."""
    if isinstance(executor, ProcessPoolExecutor):
        for fut in [executor.submit(_ready) for _ in range(workers)]:
            fut.result()


def make_g2_executor(kind: str, workers: int) -> Executor:
    if kind == "process":
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    return ThreadPoolExecutor(workers, thread_name_prefix="zkpipe-g2")

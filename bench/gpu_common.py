"""Shared pieces of the GPU benchmarks: random device data and CUDA-event timing.

Points for timing are random field elements, not curve points: the kernels' cost does not
depend on where the coordinates come from (Montgomery arithmetic is data-independent, and the
special cases P = Q never occur), while making 2^24 real points would take hours in Python.
"""
from __future__ import annotations

import statistics

import numpy as np

from pipeline.backends.cuda.streams import Event


def random_below(rng, n: int, limbs: int, bits: int) -> np.ndarray:
    """(n, limbs) uint64 uniformly random values < 2^(bits - 1) (so below the modulus)."""
    words = rng.integers(0, 2**63, size=(n, limbs), dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, size=(n, limbs), dtype=np.uint64)
    top_bits = bits - 1 - 64 * (limbs - 1)
    words[:, -1] &= np.uint64((1 << top_bits) - 1)
    return words


def bit_heavy(rng, words: np.ndarray) -> np.ndarray:
    """80% of the scalars in {0, 1} (half each), the rest unchanged."""
    out = words.copy()
    pick = rng.random(out.shape[0])
    out[pick < 0.8] = 0
    out[pick < 0.4, 0] = 1
    return out


def time_ms(stream, fn, warmup: int = 1, repeat: int = 5) -> float:
    """Median over ``repeat`` runs of ``fn()`` between CUDA events on ``stream`` (after warm-up)."""
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(repeat):
        with Event() as start, Event() as end:
            start.record(stream)
            fn()
            end.record(stream)
            end.synchronize()
            times.append(end.elapsed_ms(start))
    return statistics.median(times)


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

"""The levels over level 0's pieces, in place (msm/pippenger.cuh: msm_sum_pieces, msm_hot_chunk_counts,
msm_sum_hot_chunks), their index arithmetic walked on the host with the host's schedule (msm.hot_strides,
msm.hot_chunks_bound): bucket b's pieces lie at piece_off[b] + i, and after every level has run its sum must be
in its first slot, each piece counted once. Within a level no item may write a slot another item reads or
writes (the level reads and writes one buffer), and the level's chunks must fit the grid the host sizes. The
kernels themselves are checked on the GPU (tests/gpu/test_msm.py)."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.backends.cuda.msm import LEVEL_CHUNK, hot_chunks_bound, hot_strides


def sum_in_place(pieces: np.ndarray, fan: int = LEVEL_CHUNK, per_bucket: int | None = None) -> list[list[int]]:
    """Each slot's set of pieces after the kernels, as their items read and write them."""
    piece_off = np.concatenate([[0], np.cumsum(pieces)]).astype(np.int64)
    slots = [[i] for i in range(int(piece_off[-1]))]
    n_buckets = len(pieces)
    for b in range(n_buckets):  # msm_sum_pieces: one item a bucket of 2..fan pieces
        lo, hi = int(piece_off[b]), int(piece_off[b + 1])
        if 2 <= hi - lo <= fan:
            slots[lo] = [i for e in range(lo, hi) for i in slots[e]]
    total = int(piece_off[-1])
    for stride in hot_strides(per_bucket if per_bucket is not None else max(pieces, default=0), fan):
        counts = []  # msm_hot_chunk_counts
        for b in range(n_buckets):
            p = int(pieces[b])
            left = (p - 1) // stride + 1
            counts.append((left - 1) // fan + 1 if p > fan and left > 1 else 0)
        chunk_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        assert chunk_off[-1] <= hot_chunks_bound(total, fan, stride), (stride, chunk_off[-1])
        reads: dict[int, int] = {}
        writes: dict[int, int] = {}
        new = {}
        for t in range(int(chunk_off[-1])):  # msm_sum_hot_chunks
            b = int(np.searchsorted(chunk_off, t, side="right")) - 1  # bucket_of: largest b, chunk_off[b] <= t
            lo = int(piece_off[b])
            left = (int(pieces[b]) - 1) // stride + 1
            first = (t - int(chunk_off[b])) * fan
            last = min(first + fan, left)
            read = [lo + i * stride for i in range(first, last)]
            for slot in read:
                assert reads.setdefault(slot, t) == t, (stride, slot)
            out = lo + first * stride
            assert writes.setdefault(out, t) == t, (stride, out)
            new[out] = [i for slot in read for i in slots[slot]]
        for slot, t in writes.items():  # an item writes only a slot it reads itself
            assert reads[slot] == t
        for slot, value in new.items():
            slots[slot] = value
    return [slots[int(piece_off[b])] if pieces[b] else [] for b in range(n_buckets)]


def expected(pieces: np.ndarray) -> list[list[int]]:
    piece_off = np.concatenate([[0], np.cumsum(pieces)]).astype(np.int64)
    return [list(range(int(piece_off[b]), int(piece_off[b + 1]))) for b in range(len(pieces))]


@pytest.mark.parametrize("seed", range(8))
def test_each_bucket_sum_lands_in_its_first_slot_with_every_piece_once(seed):
    rng = np.random.default_rng(seed)
    n_buckets = int(rng.integers(1, 200))
    pieces = rng.integers(0, 4, n_buckets)  # a random witness: 2-3 pieces a bucket, some empty
    hot = rng.choice(n_buckets, size=min(n_buckets, int(rng.integers(0, 4))), replace=False)
    pieces[hot] = rng.integers(LEVEL_CHUNK + 1, 5000, len(hot))  # the 1s of a bit-heavy witness
    got = sum_in_place(pieces)
    assert [sorted(s) for s in got] == expected(pieces)


@pytest.mark.parametrize("p", [0, 1, 2, LEVEL_CHUNK, LEVEL_CHUNK + 1, LEVEL_CHUNK ** 2, LEVEL_CHUNK ** 2 + 1,
                               LEVEL_CHUNK ** 3 + 7])
def test_a_lone_bucket_at_each_level_boundary(p):
    pieces = np.array([3, p, 0, 2])
    assert [sorted(s) for s in sum_in_place(pieces)] == expected(pieces)


def test_the_host_bound_runs_levels_past_the_hottest_bucket_harmlessly():
    """The host's levels follow the bound (n entries a bucket), not the hottest bucket: levels past what a
    bucket needs must leave its sum alone."""
    pieces = np.array([2, 40, 3, 300])
    assert [sorted(s) for s in sum_in_place(pieces, per_bucket=1 << 19)] == expected(pieces)


def test_the_schedule():
    assert hot_strides(LEVEL_CHUNK, LEVEL_CHUNK) == []  # one item a bucket is enough
    assert hot_strides(LEVEL_CHUNK + 1, LEVEL_CHUNK) == [1, LEVEL_CHUNK]
    assert hot_strides((1 << 19) + 1, 16) == [1, 16, 256, 4096, 65536]  # a 2^26 MSM at T = 128: five levels
    assert hot_chunks_bound(100, 16, 1) == min(100, 6 + 5 + 1)

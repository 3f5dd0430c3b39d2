"""The levels over level 0's pieces, in place (msm/pippenger.cuh: msm_piece_class_counts, msm_piece_class_order,
msm_sum_pieces, msm_hot_chunk_counts, msm_sum_hot_chunks), their index arithmetic walked on the host with the
host's schedule (msm.hot_strides, msm.hot_chunks_bound): bucket b's pieces lie at piece_off[b] + i, and after
every level has run its sum must be in its first slot, each piece counted once. The buckets of 2..16 pieces must
come out of the counting sort each once, by their piece counts. Within a level no item may write a slot another
item reads or writes (the level reads and writes one buffer), and the level's chunks must fit the grid the host
sizes. The kernels themselves are checked on the GPU (tests/gpu/test_msm.py)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pipeline.backends.cuda.msm import LEVEL_CHUNK, hot_chunks_bound, hot_strides

PIPPENGER = Path(__file__).parents[3] / "pipeline" / "cuda_src" / "msm" / "pippenger.cuh"


def class_order(pieces: np.ndarray, hot: int, block: int, grid: int, rng) -> list[int]:
    """msm_piece_class_order's list: blocks take tiles of ``block`` buckets grid-stride, in a random order
    (the blocks' atomics on the cursors race), each block's buckets of a class at its cursor's old value plus
    their rank within the block (a shared atomic: any order)."""
    counts = np.zeros(hot + 1, dtype=np.int64)  # msm_piece_class_counts
    for p in pieces:
        if 2 <= p <= hot:
            counts[p] += 1
    start = {k: int(counts[2:k].sum()) for k in range(2, hot + 1)}
    cursor = np.zeros(hot + 1, dtype=np.int64)
    tiles = [(blk, tile) for blk in range(grid) for tile in range(blk * block, len(pieces), grid * block)]
    rng.shuffle(tiles)
    listed = int(counts.sum())
    out = [-1] * listed
    for _, tile in tiles:
        members = [b for b in range(tile, min(tile + block, len(pieces))) if 2 <= pieces[b] <= hot]
        rng.shuffle(members)
        local: dict[int, int] = {}
        ranks = []
        for b in members:
            ranks.append(local.get(int(pieces[b]), 0))
            local[int(pieces[b])] = ranks[-1] + 1
        base = {}
        for k, count in local.items():
            base[k] = int(cursor[k])
            cursor[k] += count
        for b, rank in zip(members, ranks):
            slot = start[int(pieces[b])] + base[int(pieces[b])] + rank
            assert 0 <= slot < listed and out[slot] == -1, (b, slot)
            out[slot] = b
    return out


def sum_in_place(pieces: np.ndarray, fan: int = LEVEL_CHUNK, per_bucket: int | None = None) -> list[list[int]]:
    """Each slot's set of pieces after the kernels, as their items read and write them."""
    piece_off = np.concatenate([[0], np.cumsum(pieces)]).astype(np.int64)
    slots = [[i] for i in range(int(piece_off[-1]))]
    n_buckets = len(pieces)
    order = class_order(pieces, fan, block=8, grid=3, rng=np.random.default_rng(len(pieces)))
    assert sorted(order) == [b for b in range(n_buckets) if 2 <= pieces[b] <= fan]
    assert list(pieces[order]) == sorted(pieces[order])  # warps of one piece count
    for b in order:  # msm_sum_pieces: one item a bucket of 2..fan pieces
        lo, hi = int(piece_off[b]), int(piece_off[b + 1])
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


def test_the_kernels_hot_limit_holds_the_hosts_chunk():
    """msm_piece_class_counts keeps its counters in shared memory, MSM_MAX_HOT + 1 of them."""
    limit = int(re.search(r"MSM_MAX_HOT = (\d+);", PIPPENGER.read_text()).group(1))
    assert LEVEL_CHUNK <= limit


def test_the_schedule():
    assert hot_strides(LEVEL_CHUNK, LEVEL_CHUNK) == []  # one item a bucket is enough
    assert hot_strides(LEVEL_CHUNK + 1, LEVEL_CHUNK) == [1, LEVEL_CHUNK]
    assert hot_strides((1 << 19) + 1, 16) == [1, 16, 256, 4096, 65536]  # a 2^26 MSM at T = 128: five levels
    assert hot_chunks_bound(100, 16, 1) == min(100, 6 + 5 + 1)

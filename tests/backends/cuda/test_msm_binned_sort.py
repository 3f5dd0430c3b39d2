"""The binned digit sort (msm/pippenger.cuh: msm_bin_cursors, msm_bin_digits, msm_place_digits), its
index arithmetic walked on the host: digits go first into bins of 2^fb consecutive buckets as packed
words (scalar index, sign, low bucket bits), then from tiles of the binned array to their buckets. The
result must be a counting sort by bucket: every bucket's slots hold exactly its digits (point, sign),
every slot written once, whatever the bins' sizes (empty ones, one hot bucket) and the tile's span.
The kernels themselves are checked on the GPU (tests/gpu/test_msm.py)."""
from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda.launch import PLACE_BLOCK, PLACE_TILE
from pipeline.backends.cuda.msm import BINNED_SORT_FROM_ENTRIES, MsmRunner, plan_msm
from pipeline.curves import BLS12_381, BN254

NO_BUCKET = 0xFFFFFFFF
NEG_BIT = 0x80000000


def signed_keys(scalar: int, c: int, n_windows: int) -> list[tuple[int, bool]]:
    """(bucket key, negative) per window, as signed_digit_key: NO_BUCKET for a zero digit."""
    half, carry, out = 1 << (c - 1), 0, []
    for w in range(n_windows):
        raw = ((scalar >> (w * c)) & ((1 << c) - 1)) + carry
        if raw > half:
            mag, carry, neg = (1 << c) - raw, 1, True
        else:
            mag, carry, neg = raw, 0, False
        out.append((NO_BUCKET if mag == 0 else w * half + mag - 1, neg))
    return out


def bin_of(offsets, fb: int, p: int, lo: int, hi: int) -> int:
    """msm_bin_of: the last bin in [lo, hi] whose digits start at or before p."""
    while lo < hi:
        mid = lo + (hi - lo + 1) // 2
        if offsets[mid << fb] <= p:
            lo = mid
        else:
            hi = mid - 1
    return lo


def binned_sort(scalars, c: int, n_windows: int, pb: int, fb: int, point_index=None, rng=None):
    """entries (length: the digits) as the three kernels leave them; the bin pass in a random digit order
    (the GPU's atomics give any order)."""
    nb = n_windows << (c - 1)
    digits = [(i, key, neg) for i, s in enumerate(scalars) for key, neg in signed_keys(s, c, n_windows)
              if key != NO_BUCKET]
    counts = np.bincount([key for _, key, _ in digits], minlength=nb)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    n_bins = nb >> fb
    cursor = [int(offsets[b << fb]) for b in range(n_bins)]  # msm_bin_cursors
    binned = [None] * len(digits)
    order = list(range(len(digits)))
    (rng or random.Random(0)).shuffle(order)
    for d in order:  # msm_bin_digits
        i, key, neg = digits[d]
        slot = cursor[key >> fb]
        cursor[key >> fb] += 1
        word = i | (int(neg) << pb) | (0 if fb == 0 else (key & ((1 << fb) - 1)) << (pb + 1))
        assert word < 1 << 32 and binned[slot] is None
        binned[slot] = word
    total = int(offsets[n_bins << fb])
    assert total == len(digits)
    fine = [int(o) for o in offsets[:nb]]  # the counts buffer, now each bucket's cursor
    entries = [None] * total
    for tile in range(0, total, PLACE_TILE):  # msm_place_digits
        last = min(tile + PLACE_TILE, total) - 1
        lo = bin_of(offsets, fb, tile, 0, n_bins - 1)
        hi = bin_of(offsets, fb, last, lo, n_bins - 1)
        for p in range(tile, last + 1):
            word = binned[p]
            b = bin_of(offsets, fb, p, lo, hi)
            key = (b << fb) | (0 if fb == 0 else word >> (pb + 1))
            i = word & ((1 << pb) - 1)
            point = point_index[i] if point_index is not None else i
            slot = fine[key]
            fine[key] += 1
            assert entries[slot] is None
            entries[slot] = point | (NEG_BIT if (word >> pb) & 1 else 0)
    return offsets, entries, digits


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("c,fb", [(3, 0), (3, 2), (6, 1), (6, 5), (12, 0), (12, 4), (12, 11)])
def test_bins_then_buckets_sort_every_digit_into_its_bucket(seed, c, fb):
    rng = random.Random(f"{seed} {c} {fb}")
    bits = 24
    n_windows = -(-(bits + 1) // c)
    n = rng.choice([1, 37, 700, 5000])
    kind = seed % 3
    if kind == 0:
        scalars = [rng.randrange(1 << bits) for _ in range(n)]
    elif kind == 1:  # bit-heavy: window 0's bucket of 1 is hot, most other buckets and bins empty
        scalars = [rng.choice((0, 1)) if rng.random() < 0.9 else rng.randrange(1 << bits) for _ in range(n)]
    else:  # every sign and carry: values next to the window boundaries
        scalars = [rng.choice((1 << (c - 1), (1 << (c - 1)) + 1, (1 << bits) - 1, 0)) for _ in range(n)]
    pb = max(1, (n - 1).bit_length())
    point_index = [rng.randrange(1 << 20) for _ in range(n)] if seed % 2 else None
    offsets, entries, digits = binned_sort(scalars, c, n_windows, pb, fb, point_index, rng)
    for b in range(len(offsets) - 1):
        want = sorted((point_index[i] if point_index else i) | (NEG_BIT if neg else 0)
                      for i, key, neg in digits if key == b)
        assert sorted(entries[offsets[b]:offsets[b + 1]]) == want, b


def test_the_bin_bits_fit_a_word_and_a_window_and_fall_back_past_2_31_scalars():
    for curve in (BN254, BLS12_381):
        msm = MsmRunner(SimpleNamespace(curve=curve), allocator=None, stream=None)
        msm.binned_sort = True
        for log_n in (0, 1, 10, 16, 20, 24, 26, 27, 30, 31):
            n = 1 << log_n
            plan = plan_msm(n, curve.fr.bits)
            pb, fb = msm.bin_bits(n, plan)
            assert pb + 1 + fb <= 32 and 0 <= fb <= plan.c - 1 and (1 << pb) >= n
            assert plan.n_buckets % (1 << fb) == 0  # whole bins
        assert msm.bin_bits((1 << 31) + 1, plan_msm(1 << 20, curve.fr.bits)) is None  # 32 index bits: the scatter
        msm.max_bin_bits = 2
        assert msm.bin_bits(1 << 10, plan_msm(1 << 10, curve.fr.bits))[1] == 2
        msm.binned_sort = False
        assert msm.bin_bits(1 << 10, plan_msm(1 << 10, curve.fr.bits)) is None


def test_the_scatter_sorts_below_the_measured_size_and_the_bins_from_it():
    for curve in (BN254, BLS12_381):
        msm = MsmRunner(SimpleNamespace(curve=curve), allocator=None, stream=None)
        for log_n, binned in ((10, False), (20, False), (24, False), (26, True), (27, True)):
            plan = plan_msm(1 << log_n, curve.fr.bits)
            assert (msm.bin_bits(1 << log_n, plan) is not None) == binned, log_n
            assert ((1 << log_n) * plan.n_windows >= BINNED_SORT_FROM_ENTRIES) == binned
        msm.binned_sort = False
        assert msm.bin_bits(1 << 26, plan_msm(1 << 26, curve.fr.bits)) is None


def test_the_tile_is_the_kernels_and_whole_warps():
    import re

    from pipeline.backends.cuda.kernel_sources import CUDA_SRC

    source = (CUDA_SRC / "msm" / "pippenger.cuh").read_text()
    assert int(re.search(r"MSM_PLACE_TILE = (\d+);", source).group(1)) == PLACE_TILE
    assert PLACE_TILE % PLACE_BLOCK == 0 and PLACE_BLOCK % 32 == 0  # every lane meets warp_aggregated_inc

"""The pinned-staging download's pipeline (pipeline/setup/transfer.py), with the device copy faked
by a copy out of a host array: every byte lands once, in place, for any size and thread count.
The real device path is covered by tests/gpu/test_dev_setup.py (GPU key == CPU key, byte for byte)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pipeline.setup.transfer import pipelined_copy


@pytest.mark.parametrize("n_bytes, stage_bytes, threads", [
    (0, 8, 1), (5, 8, 1), (8, 8, 3), (64, 8, 3), (1000, 64, 8), (1001, 64, 7), (3, 64, 8)])
def test_every_byte_lands_in_place(n_bytes, stage_bytes, threads):
    rng = np.random.default_rng(n_bytes)
    source = rng.integers(0, 256, size=n_bytes, dtype=np.uint8)
    dst = np.zeros(n_bytes, dtype=np.uint8)
    stages = (np.full(stage_bytes, 0xAA, np.uint8), np.full(stage_bytes, 0xBB, np.uint8))
    fills = []

    def fill(which, offset, size):
        assert 0 < size <= stage_bytes and offset + size <= n_bytes
        stages[which][:size] = source[offset:offset + size]
        fills.append((which, offset, size))

    with ThreadPoolExecutor(threads) as pool:
        pipelined_copy(n_bytes, dst, stages, fill, pool, threads)
    assert np.array_equal(dst, source)
    assert [f[1] for f in fills] == list(range(0, n_bytes, stage_bytes))  # each piece fetched once, in order
    assert [f[0] for f in fills] == [k % 2 for k in range(len(fills))]  # the two stages alternate

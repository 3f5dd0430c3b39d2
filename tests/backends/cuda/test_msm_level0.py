"""The flat level 0 of the bucket sums (msm/pippenger.cuh, accumulate_items<F, true, true>), its index
arithmetic walked on the host: thread t takes entries [t T, (t + 1) T) across bucket boundaries and
stores bucket b's piece at piece_off[b] + t - offsets[b] / T (msm_piece_counts, then an exclusive scan).
Every slot must be written once, each bucket's pieces must be its entries in order, and the host's
bounds (MsmRunner._bucket_sums) must hold. The kernels themselves are checked on the GPU
(tests/gpu/test_msm.py)."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.backends.cuda.msm import level0_pieces


def piece_counts(offsets: np.ndarray, chunk: int) -> np.ndarray:
    lo, hi = offsets[:-1], offsets[1:]
    return np.where(hi > lo, (hi - 1) // chunk - lo // chunk + 1, 0)


def flat_pieces(offsets: np.ndarray, chunk: int) -> dict[int, tuple[int, range]]:
    """slot -> (bucket, entries summed), as the kernel's threads write them."""
    total = int(offsets[-1])
    piece_off = np.concatenate([[0], np.cumsum(piece_counts(offsets, chunk))])
    written: dict[int, tuple[int, range]] = {}
    for t in range(-(-total // chunk)):
        start, end = t * chunk, min(t * chunk + chunk, total)
        b = int(np.searchsorted(offsets, start, side="right")) - 1  # bucket_of: largest b, offsets[b] <= start
        b = min(b, len(offsets) - 2)
        first = start
        e = start
        while True:
            piece_end = min(end, int(offsets[b + 1]))
            e = piece_end
            slot = int(piece_off[b]) + t - int(offsets[b]) // chunk
            assert slot not in written, (t, b)
            written[slot] = (b, range(first, e))
            if e == end:
                break
            b += 1
            while offsets[b + 1] == e:  # empty buckets
                b += 1
            first = e
    return written


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [2, 3, 16, 64])
def test_every_piece_slot_is_written_once_and_each_bucket_gets_its_entries_in_order(seed, chunk):
    rng = np.random.default_rng(seed)
    n_buckets = int(rng.integers(1, 300))
    # a mix of empty, short and hot buckets (the ones of a bit-heavy witness)
    counts = rng.choice([0, 0, 1, 2, 5, 40, 300], size=n_buckets)
    if seed % 2:
        counts[rng.integers(n_buckets)] = 5000
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    written = flat_pieces(offsets, chunk)
    assert sorted(written) == list(range(int(piece_counts(offsets, chunk).sum())))
    for b in range(n_buckets):
        pieces = [written[s][1] for s in sorted(written) if written[s][0] == b]
        covered = [e for r in pieces for e in r]
        assert covered == list(range(int(offsets[b]), int(offsets[b + 1])))
        assert len(pieces) <= level0_pieces(int(counts[b]), chunk, True) if counts[b] else not pieces
    # the host's buffer bound: one piece a range of ``chunk`` entries plus one a bucket
    assert len(written) <= -(-int(offsets[-1]) // chunk) + n_buckets


def test_a_bucket_of_k_entries_meets_at_most_level0_pieces_threads_wherever_it_starts():
    for chunk in (2, 5, 64):
        for k in range(1, 200):
            worst = max((s + k - 1) // chunk - s // chunk + 1 for s in range(chunk))
            assert worst == level0_pieces(k, chunk, True)
            assert level0_pieces(k, chunk, False) == -(-k // chunk)


def test_level0_runs_flat_but_where_measured_chunked_and_only_on_a_chunked_kernel_that_is_built():
    from types import SimpleNamespace

    from pipeline.backends.cuda.kernels import UNITS
    from pipeline.backends.cuda.msm import MsmRunner
    from pipeline.curves import BLS12_381, BN254

    def runner(curve):
        return MsmRunner(SimpleNamespace(curve=curve), allocator=None, stream=None)

    bls, bn = runner(BLS12_381), runner(BN254)
    assert bls._affine_accumulate(False) == "msm_accumulate_flat<fq_lazy_t, 3>"  # launch.G1_MIN_BLOCKS, lazy
    assert bls._affine_accumulate(True) == "msm_accumulate_flat<fq2_pair_lazy_t, 3>"  # launch.LEVEL0_CHUNKED: none
    assert bn._affine_accumulate(False) == "msm_accumulate_flat<fq_lazy_t, 5>"
    assert bn._affine_accumulate(True) == "msm_accumulate_flat<fq2_pair_t, 4>"  # launch.PLAIN_SUMS
    bn.lazy = True  # forced: built lazy too
    assert bn._affine_accumulate(True) == "msm_accumulate_flat<fq2_pair_lazy_t, 4>"
    bls.g2_min_blocks = 5  # a variant without a chunked kernel, nor a lazy one: plain
    assert bls._affine_accumulate(True) == "msm_accumulate_flat<fq2_pair_t, 5>"
    bls.level0_flat = False
    bls.g2_min_blocks, bls.g1_min_blocks = 3, 4
    assert bls._affine_accumulate(False) == "msm_accumulate<fq_lazy_t, true, 4>"
    bls.lazy, bn.lazy = False, False
    assert bls._affine_accumulate(False) == "msm_accumulate<fq_t, true, 4>"
    bls.level0_flat, bls.g1_min_blocks = None, 3
    assert bls._affine_accumulate(False) == "msm_accumulate_flat<fq_t, 3>"
    bls.level0_flat = False  # forced chunked where no chunked kernel is built (G1 at 3): said, not a KeyError
    with pytest.raises(ValueError, match="chunked is not built for G1 fq_t at 3 blocks"):
        bls._affine_accumulate(False)
    bls.level0_flat = None
    for r in (bls, bn):
        for lazy in (None, True, False):
            r.lazy = lazy
            for g2 in (False, True):
                assert r._affine_accumulate(g2) in UNITS["msm_g2" if g2 else "msm_g1"]
                assert f"msm_accumulate<{r._sum_field(g2)}, false, 1>" in UNITS["msm_g2" if g2 else "msm_g1"]


def test_level0_takes_128_entries_a_thread_flat_and_64_in_g2s_chunked_kernel():
    """msm.MAX_CHUNK for flat level 0 in both groups (session 55: G2 flat at 128 the fastest of the rows at
    2^22-2^26), MAX_CHUNK_CHUNKED_G2 where BLS12-381's G2 runs chunked (MsmRunner.level0_chunked, as to
    session 54); fewer where the MSM is too small to fill the GPU."""
    from types import SimpleNamespace

    from pipeline.backends.cuda.msm import MAX_CHUNK, MAX_CHUNK_CHUNKED_G2, MsmRunner, level0_chunk
    from pipeline.curves import BLS12_381

    bls = MsmRunner(SimpleNamespace(curve=BLS12_381), allocator=None, stream=None)
    entries = 13 << 26  # a 2^26 partition's digit slots at c = 20
    assert bls._level0_chunk(entries, True) == bls._level0_chunk(entries, False) == MAX_CHUNK == 128
    assert bls._affine_accumulate(True) == "msm_accumulate_flat<fq2_pair_lazy_t, 3>"
    bls.level0_chunked = {("bls12381", "G2")}
    assert bls._affine_accumulate(True) == "msm_accumulate<fq2_pair_lazy_t, true, 3>"
    assert bls._level0_chunk(entries, True) == MAX_CHUNK_CHUNKED_G2 == 64
    assert bls._level0_chunk(entries, False) == 128  # G1 stays flat
    assert level0_chunk(1 << 18, True) == level0_chunk(1 << 18, False) == 2  # small: a thread for every two

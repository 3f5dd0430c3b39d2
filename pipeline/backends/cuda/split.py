"""The 0 / 1 split of a bit-heavy witness on the device (cuda_src/msm/split.cuh).

Zeros cost nothing; the ones of A, B1, B2 and C become one batch addition of their points each
(``MsmRunner.enqueue_point_sum``); only the other scalars go through Pippenger, with a window
chosen for their count, not the witness's (``MsmRunner.enqueue`` with a point index). The host
gives the counts (``WitnessShape``, counted by prep_msm); the device compacts the index lists in
ascending order, so the C MSM (signals from ``first_private`` on) is a suffix of each list.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..protocol import WitnessShape
from ._bindings import driver
from .errors import check
from .launch import SPLIT_BLOCK

ROW_WORD = 16  # gather_rows copies rows in 16-byte words: every affine point of both curves is a multiple


def split_worth_it(shape: WitnessShape | None, min_bits: float) -> bool:
    """Split when at least ``min_bits`` of the witness is 0 or 1 (below it the plain MSM wins:
    bench/NOTES.md, "0/1 split")."""
    return shape is not None and shape.n_vars > 0 and 1 - shape.n_other / shape.n_vars >= min_bits


@dataclass
class DeviceSplit:
    """The compacted witness on the device: indices of its ones, and of its other scalars with
    the scalars (8 words each), ascending. Freed (stream-ordered) with ``free``."""

    shape: WitnessShape
    d_one_idx: object
    d_other_idx: object
    d_other_scalars: object
    d_counts: object  # the device's own two totals (ones, others), for the result check

    def free(self) -> None:
        for buf in (self.d_one_idx, self.d_other_idx, self.d_other_scalars, self.d_counts):
            buf.free()


def enqueue_split(msm, d_witness: int, shape: WitnessShape) -> DeviceSplit:
    """Queue the classification and compaction of the witness at ``d_witness`` (n_vars scalars)."""
    alloc, kernels, stream = msm.allocator, msm.kernels, msm.stream
    n = shape.n_vars
    bufs = []
    try:
        for nbytes, what in ((4 * max(shape.n_one, 1), "split one indices"),
                             (4 * max(shape.n_other, 1), "split other indices"),
                             (32 * max(shape.n_other, 1), "split other scalars"), (8, "split counts")):
            bufs.append(alloc.alloc(nbytes, what))
        d_one_idx, d_other_idx, d_other_scalars, d_counts = bufs
        # Slots the compaction leaves unwritten (only if the host's counts are wrong) must still
        # name a real point of every section (signal prefix_len is one of A, B and C alike) with a
        # zero scalar: the MSMs then stay in bounds, and the count check reports the mismatch.
        for buf, value in ((d_one_idx, shape.prefix_len), (d_other_idx, shape.prefix_len), (d_other_scalars, 0)):
            check(driver.cuMemsetD32Async(buf.ptr, value, buf.nbytes // 4, stream.handle), "cuMemsetD32Async")
        with alloc.alloc(4 * (n + 1), "split one flags") as d_one_pos, \
                alloc.alloc(4 * (n + 1), "split other flags") as d_other_pos:
            grid = min((n + SPLIT_BLOCK - 1) // SPLIT_BLOCK, 1 << 16)
            kernels.launch("msm_classify", grid, SPLIT_BLOCK, (d_witness, n, d_one_pos.ptr, d_other_pos.ptr), stream)
            msm.exclusive_scan(d_one_pos.ptr, n, d_one_pos.ptr)  # in place: the flags become positions
            msm.exclusive_scan(d_other_pos.ptr, n, d_other_pos.ptr)
            kernels.launch("msm_compact", grid, SPLIT_BLOCK, (d_witness, n, d_one_pos.ptr, d_other_pos.ptr,
                                                              d_one_idx.ptr, d_other_idx.ptr, d_other_scalars.ptr,
                                                              shape.n_one, shape.n_other), stream)
            kernels.launch_copy(d_counts.ptr, d_one_pos.ptr + 4 * n, 4, stream)
            kernels.launch_copy(d_counts.ptr + 4, d_other_pos.ptr + 4 * n, 4, stream)
    except BaseException:
        for buf in bufs:
            buf.free()
        raise
    return DeviceSplit(shape, d_one_idx, d_other_idx, d_other_scalars, d_counts)


def split_scratch_bytes(n_vars: int) -> int:
    """Upper bound of what ``enqueue_split`` allocates (flags while compacting, then the lists)."""
    return 8 * (n_vars + 1) + 36 * n_vars + 4 * n_vars + 8


def enqueue_gather_rows(kernels, stream, d_dst: int, src: int, d_idx: int, count: int, row_bytes: int,
                        first: int = 0) -> None:
    """Queue dst[k] = src[idx[k] - first], k < count, rows of ``row_bytes`` (a multiple of 16);
    ``src`` may be host memory mapped into the device (``HostRegistration.device_ptr``)."""
    if count == 0:
        return
    if row_bytes % ROW_WORD:
        raise ValueError(f"gather_rows copies 16-byte words; a row of {row_bytes} bytes is not a multiple")
    words = row_bytes // ROW_WORD
    grid = min(-(-count * words // SPLIT_BLOCK), 1 << 16)
    kernels.launch("gather_rows", grid, SPLIT_BLOCK, (d_dst, src, d_idx, count, words, first), stream)

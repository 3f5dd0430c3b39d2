"""The sparse products' long rows (spmv.cuh, ``spmv_long_rows``; ``CudaOptions.spmv_long_rows``).

A thread a row waits for the longest row of its warp; in a seed-shaped key 5% of A's rows pack a
whole Fr of bits (254 terms) among rows of 1-3, so nearly every warp runs 254 terms. The rows of
more than ``SPMV_LONG_ROW`` terms are listed once, at key load, per matrix; the short kernel
(csr_stream.launch_spmv) skips them and each listed row gets a warp.
"""
from __future__ import annotations

import numpy as np

from .kernels import grid_for
from .launch import SPMV_LONG_BLOCK, SPMV_LONG_ROW


def long_rows(row_ptr: np.ndarray, min_terms: int = SPMV_LONG_ROW) -> np.ndarray:
    """The rows of more than ``min_terms`` entries, ascending, as uint32."""
    return np.flatnonzero(np.diff(np.asarray(row_ptr, dtype=np.int64)) > min_terms).astype(np.uint32)


def long_rows_bytes_bound(entries: int, min_terms: int = SPMV_LONG_ROW) -> int:
    """Device bytes both matrices' lists take at most, for ``entries`` entries in all: a listed row
    holds more than ``min_terms`` of them (and an empty list is still a 1-byte buffer)."""
    return 4 * (entries // (min_terms + 1)) + 2


def launch_long_rows(kernels, stream, d_ab: tuple[int, int], a: tuple[int, int, int], b: tuple[int, int, int],
                     d_table: int | None, d_w: int, lists: tuple[tuple[int, int], tuple[int, int]]) -> None:
    """A warp a listed row of each matrix into ``d_ab`` (the short kernel, csr_stream.launch_spmv, skipped
    them). ``a``, ``b``: (row pointers, columns, values or table indices); ``lists``: (device pointer,
    count) of each matrix's long rows (``long_rows``)."""
    for d_out, (row_ptr, cols, values), (d_list, count) in zip(d_ab, (a, b), lists):
        if count:
            vals, index = (values, 0) if d_table is None else (d_table, values)
            kernels.launch("spmv_long_rows<fr_t>", grid_for(32 * count, SPMV_LONG_BLOCK), SPMV_LONG_BLOCK,
                           (d_out, d_list, count, row_ptr, cols, vals, index, d_w), stream)

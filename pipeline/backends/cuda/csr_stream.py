"""The coefficient matrices of a key larger than the VRAM budget, streamed in row chunks.

The sparse products a = A w, b = B w (spmv.cuh) read each row's entries at absolute positions
``row_ptr[row] .. row_ptr[row + 1]``. A chunk of rows [r0, r1) needs entries
[row_ptr[r0], row_ptr[r1]) of each matrix: contiguous in the CSR arrays, so a chunk is two
slices copied to a device buffer, and the kernel runs unchanged with its column and value
pointers shifted back by the chunk's first entry (the row pointers stay resident: 4 bytes a row).
Copies and kernels share the compute stream: a chunk buffer is refilled only after the previous
chunk's kernel (the products are memory-bound; the NTTs and MSMs that follow dominate).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._bindings import driver
from .errors import check
from .kernels import grid_for
from .launch import SPMV_BLOCK
from .memory import ADDRESS_MASK

COL_BYTES = 4


@dataclass(frozen=True)
class CsrChunk:
    r0: int
    r1: int
    a0: int  # A's entries [a0, a1) and B's [b0, b1) belong to rows [r0, r1)
    a1: int
    b0: int
    b1: int

    def nbytes(self, elem: int) -> int:
        return (self.a1 - self.a0 + self.b1 - self.b0) * (elem + COL_BYTES)


def plan_csr_chunks(a_row_ptr: np.ndarray, b_row_ptr: np.ndarray, max_bytes: int, elem: int) -> list[CsrChunk]:
    """Row chunks of at most ``max_bytes`` of entries (A and B together); a single row larger
    than that is a chunk of its own."""
    n = len(a_row_ptr) - 1
    a, b = a_row_ptr.astype(np.int64), b_row_ptr.astype(np.int64)
    entries = a + b  # entries of both matrices before each row boundary
    per_chunk = max(1, max_bytes // (elem + COL_BYTES))
    chunks, r0 = [], 0
    while r0 < n:
        r1 = int(np.searchsorted(entries, entries[r0] + per_chunk, side="right")) - 1
        r1 = min(max(r1, r0 + 1), n)
        chunks.append(CsrChunk(r0, r1, int(a[r0]), int(a[r1]), int(b[r0]), int(b[r1])))
        r0 = r1
    return chunks


def enqueue_spmv_chunks(kernels, stream, chunks: list[CsrChunk], host: dict, d_row_ptr: dict, d_buf: int,
                        d_w: int, d_a: int, d_b: int, d_c: int, elem: int) -> None:
    """a, b, c over every row, chunk by chunk: ``host`` holds the page-locked cols / vals_rr
    arrays of each matrix ({a,b}_{cols,vals_rr}: ``.ptr``), ``d_row_ptr`` the resident row
    pointers ({a,b}_row_ptr: ``.ptr``); ``d_buf`` fits the largest chunk."""
    for ch in chunks:
        na, nb = ch.a1 - ch.a0, ch.b1 - ch.b0
        # buffer layout: A values, B values (32-byte aligned), then A columns, B columns
        a_vals, b_vals = d_buf, d_buf + na * elem
        a_cols = d_buf + (na + nb) * elem
        b_cols = a_cols + na * COL_BYTES
        for dst, src, count, size in ((a_vals, host["a_vals_rr"].ptr + ch.a0 * elem, na, elem),
                                      (b_vals, host["b_vals_rr"].ptr + ch.b0 * elem, nb, elem),
                                      (a_cols, host["a_cols"].ptr + ch.a0 * COL_BYTES, na, COL_BYTES),
                                      (b_cols, host["b_cols"].ptr + ch.b0 * COL_BYTES, nb, COL_BYTES)):
            if count:
                check(driver.cuMemcpyHtoDAsync(dst, src, count * size, stream.handle), "cuMemcpyHtoDAsync")
        rows = ch.r1 - ch.r0
        # Shifted pointers: entry e of the chunk's rows is at base + (e - first entry).
        kernels.launch("spmv_abc<fr_t>", grid_for(rows, SPMV_BLOCK), SPMV_BLOCK,
                       (d_a + ch.r0 * elem, d_b + ch.r0 * elem, d_c + ch.r0 * elem,
                        d_row_ptr["a_row_ptr"].ptr + ch.r0 * COL_BYTES, (a_cols - ch.a0 * COL_BYTES) & ADDRESS_MASK,
                        (a_vals - ch.a0 * elem) & ADDRESS_MASK, d_row_ptr["b_row_ptr"].ptr + ch.r0 * COL_BYTES,
                        (b_cols - ch.b0 * COL_BYTES) & ADDRESS_MASK, (b_vals - ch.b0 * elem) & ADDRESS_MASK, d_w,
                        rows), stream)

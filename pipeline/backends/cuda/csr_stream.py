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

from ...formats.coeff_table import INDEX_BYTES
from ._bindings import driver
from .errors import check
from .kernels import grid_for
from .launch import SPMV_BLOCK, SPMV_LONG_ROW
from .memory import ADDRESS_MASK
from .spmv_long import launch_long_rows

COL_BYTES = 4
VALUE_ALIGN = 16  # a chunk's columns start aligned after its values (uint16 table indices leave them odd)


@dataclass(frozen=True)
class CsrChunk:
    r0: int
    r1: int
    a0: int  # A's entries [a0, a1) and B's [b0, b1) belong to rows [r0, r1)
    a1: int
    b0: int
    b1: int

    def nbytes(self, elem: int) -> int:
        """Device bytes of the chunk with values of ``elem`` bytes each (32: an Fr; 2: a table index)."""
        return (self.a1 - self.a0 + self.b1 - self.b0) * (elem + COL_BYTES) + VALUE_ALIGN


def plan_csr_chunks(a_row_ptr: np.ndarray, b_row_ptr: np.ndarray, max_bytes: int, elem: int) -> list[CsrChunk]:
    """Row chunks of at most ``max_bytes`` of entries (A and B together); a single row larger
    than that is a chunk of its own."""
    n = len(a_row_ptr) - 1
    a, b = a_row_ptr.astype(np.int64), b_row_ptr.astype(np.int64)
    entries = a + b  # entries of both matrices before each row boundary
    per_chunk = max(1, (max_bytes - VALUE_ALIGN) // (elem + COL_BYTES))  # CsrChunk.nbytes, with its padding
    chunks, r0 = [], 0
    while r0 < n:
        r1 = int(np.searchsorted(entries, entries[r0] + per_chunk, side="right")) - 1
        r1 = min(max(r1, r0 + 1), n)
        chunks.append(CsrChunk(r0, r1, int(a[r0]), int(a[r1]), int(b[r0]), int(b[r1])))
        r0 = r1
    return chunks


def value_layout(table: bool, elem: int) -> tuple[str, int]:
    """(suffix of each matrix's value array, bytes a value): ``vals_rr``, an Fr of ``elem`` bytes
    each, or with a coefficient table ``index``, uint16 indices into it (the table: ``vals_table``)."""
    return ("index", INDEX_BYTES) if table else ("vals_rr", elem)


def launch_spmv(kernels, stream, d_ab: tuple[int, int], a: tuple[int, int, int], b: tuple[int, int, int],
                d_table: int | None, d_w: int, rows: int,
                long_lists: tuple[tuple[int, int], tuple[int, int]] | None = None) -> None:
    """The sparse products into ``d_ab`` (a, b): ``a`` and ``b`` are each matrix's (row pointers,
    columns, values) on the device, the values Fr elements, or indices into ``d_table`` when there is
    one. One launch a thread a row; with ``long_lists`` ((device pointer, count) of each matrix's long
    rows, spmv_long.py) that launch skips them and they get a warp each."""
    name, table = ("spmv_ab", ()) if d_table is None else ("spmv_ab_table", (d_table,))
    args = (*d_ab, *a, *b, *table, d_w, rows)
    if long_lists is None:
        kernels.launch(f"{name}<fr_t>", grid_for(rows, SPMV_BLOCK), SPMV_BLOCK, args, stream)
        return
    kernels.launch(f"{name}_short<fr_t>", grid_for(rows, SPMV_BLOCK), SPMV_BLOCK, (*args, SPMV_LONG_ROW), stream)
    launch_long_rows(kernels, stream, d_ab, a, b, d_table, d_w, long_lists)


def launch_resident_spmv(kernels, stream, d_csr: dict, d_ab: tuple[int, int], d_w: int, rows: int,
                         elem: int) -> None:
    """The sparse products over a CSR resident on the device (``d_csr``: {a,b}_{row_ptr,cols}, the
    values ``value_layout`` names, vals_table when the key has one, {a,b}_long when its long rows
    were listed)."""
    table = d_csr.get("vals_table")
    values, _ = value_layout(table is not None, elem)
    a, b = (tuple(d_csr[f"{m}_{part}"].ptr for part in ("row_ptr", "cols", values)) for m in "ab")
    d_table = None if table is None else table.ptr
    lists = None
    if "a_long" in d_csr:  # CudaOptions.spmv_long_rows: listed at key load
        lists = tuple((d_csr[f"{m}_long"].ptr, d_csr[f"{m}_long"].nbytes // 4) for m in "ab")
    launch_spmv(kernels, stream, d_ab, a, b, d_table, d_w, rows, lists)


def enqueue_spmv_chunks(kernels, stream, chunks: list[CsrChunk], host: dict, d_csr: dict, d_buf: int,
                        d_w: int, d_a: int, d_b: int, elem: int) -> None:
    """a and b over every row, chunk by chunk: ``host`` holds the page-locked cols and values of
    each matrix ({a,b}_cols and the value arrays ``value_layout`` names: ``.ptr``), ``d_csr`` the
    resident row pointers ({a,b}_row_ptr) and the table (vals_table) if any; ``d_buf`` fits the
    largest chunk; ``elem``: bytes of an Fr element."""
    table = d_csr.get("vals_table")
    values, vbytes = value_layout(table is not None, elem)
    for ch in chunks:
        na, nb = ch.a1 - ch.a0, ch.b1 - ch.b0
        # buffer layout: A values, B values, then (aligned) A columns, B columns
        a_vals, b_vals = d_buf, d_buf + na * vbytes
        a_cols = d_buf + -(-(na + nb) * vbytes // VALUE_ALIGN) * VALUE_ALIGN
        b_cols = a_cols + na * COL_BYTES
        for dst, src, count, size in ((a_vals, host[f"a_{values}"].ptr + ch.a0 * vbytes, na, vbytes),
                                      (b_vals, host[f"b_{values}"].ptr + ch.b0 * vbytes, nb, vbytes),
                                      (a_cols, host["a_cols"].ptr + ch.a0 * COL_BYTES, na, COL_BYTES),
                                      (b_cols, host["b_cols"].ptr + ch.b0 * COL_BYTES, nb, COL_BYTES)):
            if count:
                check(driver.cuMemcpyHtoDAsync(dst, src, count * size, stream.handle), "cuMemcpyHtoDAsync")
        # Shifted pointers: entry e of the chunk's rows is at base + (e - first entry).
        launch_spmv(kernels, stream, (d_a + ch.r0 * elem, d_b + ch.r0 * elem),
                    (d_csr["a_row_ptr"].ptr + ch.r0 * COL_BYTES, (a_cols - ch.a0 * COL_BYTES) & ADDRESS_MASK,
                     (a_vals - ch.a0 * vbytes) & ADDRESS_MASK),
                    (d_csr["b_row_ptr"].ptr + ch.r0 * COL_BYTES, (b_cols - ch.b0 * COL_BYTES) & ADDRESS_MASK,
                     (b_vals - ch.b0 * vbytes) & ADDRESS_MASK),
                    None if table is None else table.ptr, d_w, ch.r1 - ch.r0)

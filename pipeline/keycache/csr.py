"""The A and B matrices by row, in O(nnz) on every core: a stable two-pass counting sort.

snarkjs lists coefficients constraint by constraint, A's and B's interleaved, and random keys in
any order; the GPU's spmv wants each matrix by row (``CsrMatrix``). Sorting the combined row
``matrix * domain_size + constraint`` stably gives A's rows then B's rows in one pass, with each
row's terms in file order (the order ``np.argsort(kind="stable")`` gave before, so the arrays are
bit-identical).

The sort never compares 32-bit keys: numpy's stable argsort of 16-bit keys is a radix sort
(O(n)), so the rows are split into buckets of 2^16:

1. bucket pass: each chunk of the input is sorted by bucket (key >> 16); a prefix sum over the
   chunks' bucket counts says where each chunk's share of each bucket goes, so every chunk
   scatters its indices into place on its own;
2. row pass: each bucket's entries are sorted by their 16-bit row within the bucket, and counted
   per row (the row pointers).

Both passes run on the formats worker pool (numpy releases the GIL in sorts, gathers and
scatters). See bench/key_prepare.py for the speed against the old single-threaded argsort.
"""
from __future__ import annotations

import numpy as np

from ..formats.binfile import over_chunks
from ..formats.types import CsrMatrix, Groth16Zkey

BUCKET_BITS = 16  # a bucket's local row numbers fit uint16: numpy's stable argsort is then a radix sort
CHUNK_ENTRIES = 1 << 22  # entries per task


def row_order(rows: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, row_ptr) of ``rows`` (unsigned ints below ``n_rows``): ``rows[order]`` is
    non-decreasing with ties in input order; row r's entries are ``order[row_ptr[r]:row_ptr[r+1]]``
    (``row_ptr``: (n_rows + 1,) int64)."""
    if n_rows > 1 << 32:
        raise ValueError(f"{n_rows} rows: row numbers must fit 32 bits")
    n = rows.shape[0]
    if non_decreasing(rows):
        return np.arange(n, dtype=np.int64), _row_ptr(np.bincount(rows, minlength=n_rows))
    n_buckets = max(1, -(-n_rows >> BUCKET_BITS))
    if n_buckets == 1:
        by_bucket, bucket_start = None, np.array([0, n], dtype=np.int64)
    else:
        by_bucket, bucket_start = _bucket_pass(rows, n_buckets)
    order = np.empty(n, dtype=np.int64)
    counts = np.zeros(n_rows, dtype=np.int64)
    _row_pass(rows, by_bucket, bucket_start, n_rows, order, counts)
    return order, _row_ptr(counts)


def _row_ptr(counts: np.ndarray) -> np.ndarray:
    row_ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=row_ptr[1:])
    return row_ptr


def non_decreasing(values: np.ndarray) -> bool:
    """Whether ``values`` is sorted (each chunk checked with its predecessor's last value)."""
    return all(over_chunks(values.shape[0], CHUNK_ENTRIES,
                           lambda a, b: bool(np.all(values[max(a - 1, 0) + 1 : b] >= values[max(a - 1, 0) : b - 1]))))


def _bucket_pass(rows: np.ndarray, n_buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``rows`` grouped by bucket (stable), and each bucket's start in them."""
    n = rows.shape[0]
    bucket_ids = np.arange(n_buckets + 1)

    def sort_chunk(a: int, b: int):
        hi = (rows[a:b] >> BUCKET_BITS).astype(np.uint16)
        o = np.argsort(hi, kind="stable")
        return o, np.searchsorted(hi[o], bucket_ids)  # where each bucket starts in the chunk's sorted list

    sorted_chunks = over_chunks(n, CHUNK_ENTRIES, sort_chunk)
    hist = np.stack([np.diff(firsts) for _, firsts in sorted_chunks])  # (chunks, buckets)
    bucket_start = np.zeros(n_buckets + 1, dtype=np.int64)
    np.cumsum(hist.sum(axis=0), out=bucket_start[1:])
    dest_base = bucket_start[:-1] + (np.cumsum(hist, axis=0) - hist)  # chunk c's part of bucket b starts here
    by_bucket = np.empty(n, dtype=np.int64)

    def scatter(a: int, b: int) -> None:
        c = a // CHUNK_ENTRIES
        o, firsts = sorted_chunks[c]
        # the k-th entry of the chunk's sorted list, in bucket j, goes to k + dest_base[c, j] - firsts[j]
        shift = np.repeat(dest_base[c] - firsts[:-1], hist[c])
        by_bucket[np.arange(b - a) + shift] = o + a

    over_chunks(n, CHUNK_ENTRIES, scatter)
    return by_bucket, bucket_start


def _row_pass(rows: np.ndarray, by_bucket: np.ndarray | None, bucket_start: np.ndarray, n_rows: int,
              order: np.ndarray, counts: np.ndarray) -> None:
    """Each bucket's entries sorted by row (stable) into ``order``; ``counts`` per row."""
    n_buckets = bucket_start.shape[0] - 1
    # groups of whole buckets of about CHUNK_ENTRIES entries each: one task per group
    cuts = np.unique(np.searchsorted(bucket_start, np.arange(0, bucket_start[-1], CHUNK_ENTRIES), side="right") - 1)
    groups = list(zip(cuts.tolist(), cuts[1:].tolist() + [n_buckets]))

    def sort_buckets(g: int, _: int) -> None:
        for bucket in range(*groups[g]):
            s, e = int(bucket_start[bucket]), int(bucket_start[bucket + 1])
            first_row = bucket << BUCKET_BITS
            width = min(1 << BUCKET_BITS, n_rows - first_row)
            if s == e:
                continue
            idx = np.arange(s, e) if by_bucket is None else by_bucket[s:e]
            local = rows[s:e] if by_bucket is None else np.take(rows, idx)
            local = local.astype(np.uint16)  # the row within the bucket: the low 16 bits (the cast wraps)
            o = np.argsort(local, kind="stable")
            np.take(idx, o, out=order[s:e])
            counts[first_row : first_row + width] = np.bincount(local, minlength=width)

    over_chunks(len(groups), 1, sort_buckets)


def combined_rows(matrix: np.ndarray, constraint: np.ndarray, domain_size: int) -> np.ndarray:
    """Each coefficient's row in the stacked matrix [A; B]: ``matrix * domain_size + constraint``."""
    if 2 * domain_size > 1 << 32:
        raise ValueError(f"domain size {domain_size}: A and B rows must fit 32 bits")
    rows = np.empty(matrix.shape[0], dtype=np.uint32)

    def fill(a: int, b: int) -> None:
        np.multiply(matrix[a:b], np.uint32(domain_size), out=rows[a:b])
        rows[a:b] += constraint[a:b]

    over_chunks(matrix.shape[0], CHUNK_ENTRIES, fill)
    return rows


def coefficient_order(matrix: np.ndarray, constraint: np.ndarray, domain_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, row_ptr) of the coefficients by stacked row: A's rows 0..domain_size - 1, then B's."""
    rows, n_rows = combined_rows(matrix, constraint, domain_size), 2 * domain_size
    # snarkjs lists each matrix's terms by constraint: then splitting A from B (stably) is the whole sort
    by_matrix = _split_by_matrix(matrix)
    sorted_rows = gather(rows, by_matrix)
    if non_decreasing(sorted_rows):
        return by_matrix, _row_ptr(np.bincount(sorted_rows, minlength=n_rows))
    del by_matrix, sorted_rows
    return row_order(rows, n_rows)


def _split_by_matrix(matrix: np.ndarray) -> np.ndarray:
    """Indices of A's terms, then of B's, each in file order."""
    parts = over_chunks(matrix.shape[0], CHUNK_ENTRIES,
                        lambda a, b: (np.flatnonzero(matrix[a:b] == 0) + a, np.flatnonzero(matrix[a:b] != 0) + a))
    return np.concatenate([p[0] for p in parts] + [p[1] for p in parts] + [np.empty(0, dtype=np.int64)])


def gather(src: np.ndarray, order: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``src[order]`` along the first axis, in chunks on the worker pool."""
    if out is None:
        out = np.empty((order.shape[0], *src.shape[1:]), dtype=src.dtype)
    # mode="clip": take writes straight into out (mode="raise" buffers a copy); order is always in range
    over_chunks(order.shape[0], CHUNK_ENTRIES,
                lambda a, b: np.take(src, order[a:b], axis=0, out=out[a:b], mode="clip"))
    return out


def split_row_ptr(row_ptr: np.ndarray, domain_size: int) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's row pointers (uint32) out of the stacked matrix's."""
    n_a = int(row_ptr[domain_size])
    if int(row_ptr[-1]) >= 1 << 32:
        raise ValueError(f"{int(row_ptr[-1])} coefficients: CSR offsets must fit 32 bits")
    return row_ptr[: domain_size + 1].astype(np.uint32), (row_ptr[domain_size:] - n_a).astype(np.uint32)


def csr_matrices(zkey: Groth16Zkey) -> tuple[CsrMatrix, CsrMatrix]:
    """A and B by row: the prepared ones (``zkey.csr``) if the key has them, else built now in memory."""
    if zkey.csr is not None:
        return zkey.csr
    order, row_ptr = coefficient_order(zkey.coeff_matrix, zkey.coeff_constraint, zkey.domain_size)
    cols = gather(zkey.coeff_signal, order)
    vals = gather(zkey.coeff_values_stored, order)
    del order
    ptr_a, ptr_b = split_row_ptr(row_ptr, zkey.domain_size)
    n_a = int(ptr_a[-1])
    return CsrMatrix(ptr_a, cols[:n_a], vals[:n_a]), CsrMatrix(ptr_b, cols[n_a:], vals[n_a:])

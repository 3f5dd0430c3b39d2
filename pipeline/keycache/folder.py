"""One prepared key on disk: a folder of flat arrays and a manifest that says what they were made from.

    manifest.json           cache format, zkpipe version, the key's content digest (checksum.py),
                            header facts, and each array's dtype, shape and digest
    coeff_matrix.bin        (nnz,) uint32      the zkey's coefficients in CSR order: A's rows,
    coeff_constraint.bin    (nnz,) uint32      then B's, each row's terms in file order
    coeff_signal.bin        (nnz,) uint32      = the CSR column indices of A, then of B
    coeff_values.bin        (nnz, limbs) uint64  = the CSR values (stored form, value * R^2)
    row_ptr_a.bin, row_ptr_b.bin  (domain_size + 1,) uint32
    coeff_table.bin         (k, limbs) uint64  the distinct CSR values (formats/coeff_table.py), and
    coeff_index.bin         (nnz,) uint16      each CSR value's row in it (A's, then B's); both absent,
                                               and the manifest's "coeff_table" null, when the key has
                                               more than 2^16 distinct values

The point sections are not copied: their layout in the zkey is the one the backends use, so a
prepared key maps them from the key file itself (``read_points(map_points=True)``); copying them
would double the disk and the first start's writes for nothing.

The table is found on the values in file order (the same distinct values; its rows are in order
of first appearance there, so they may differ in order from a table of the CSR values), and each
CSR value's index is gathered through the CSR order like the values: the CUDA backend then maps
it at each start instead of spending a pass over every value (~9 s of a 2^26 key's load).

``write_folder`` writes every array in 64 MiB blocks on the worker threads, each block computed,
hashed and written in one task (one block per thread in memory, never a second copy of an array).
Nothing is fsynced: ``open_folder`` checks every array against its digest, so a cache torn by a
crash is found and rebuilt, never used.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xxhash

import pipeline  # its __version__ (the layering test reads `from .. import` as a layer)

from ..errors import InternalError
from ..formats.binfile import over_chunks
from ..formats.coeff_table import CoefficientTable, coefficient_table
from ..formats.types import CsrMatrix
from ..formats.zkey import ZkeyHeader
from .checksum import BLOCK_BYTES, digest_file_range, scratch, tree_digest
from .csr import split_row_ptr

CACHE_FORMAT = 2  # bump when what a file holds or how it is laid out changes (2: the coefficient table)
MANIFEST = "manifest.json"
ARRAYS = ("coeff_matrix", "coeff_constraint", "coeff_signal", "coeff_values", "row_ptr_a", "row_ptr_b")
TABLE_ARRAYS = ("coeff_table", "coeff_index")  # when the key has a coefficient table


class OpenedFolder(NamedTuple):
    """What ``open_folder`` maps: the coefficients in CSR order (matrix, constraint, signal,
    values), A and B by row, and the coefficient table of their values (None: more than 2^16)."""

    coefficients: tuple
    csr: tuple[CsrMatrix, CsrMatrix]
    coeff_table: CoefficientTable | None


class CacheInvalid(InternalError):
    """The folder cannot be used; the message says why. ``prepare_key`` catches it and rebuilds:
    it never reaches a caller (if it did, it would be our fault, not the caller's)."""


def write_folder(folder: Path, header: ZkeyHeader, content: str, coefficients: tuple, order: np.ndarray,
                 row_ptr: np.ndarray) -> None:
    """Write the prepared key into ``folder`` (new, empty): the coefficients gathered through
    ``order`` (their CSR order), the split row pointers, the coefficient table with each CSR
    value's index in it (when there are at most 2^16 values), then the manifest."""
    _, _, signal, values = coefficients  # matrix and constraint follow from the order
    d = header.domain_size
    ptr_a, ptr_b = split_row_ptr(row_ptr, d)
    n, n_a = order.shape[0], int(ptr_a[-1])

    def stacked_rows(a: int, b: int) -> np.ndarray:
        """The stacked row of CSR entries a..b-1 (rows never go down: a slice of row_ptr says it)."""
        first = int(np.searchsorted(row_ptr, a, side="right")) - 1
        last = int(np.searchsorted(row_ptr, b - 1, side="right")) - 1
        starts = np.clip(row_ptr[first : last + 2], a, b)
        return np.repeat(np.arange(first, last + 1, dtype=np.int64), np.diff(starts))

    # Each fills rows a..b-1 of its file into ``out``. take(mode="clip") writes straight into out
    # (mode="raise" would buffer a copy); the indices are a permutation, always in range.
    def matrix_rows(out, a, b):
        out[:] = np.arange(a, b) >= n_a

    def constraint_rows(out, a, b):
        out[:] = stacked_rows(a, b) % d

    def signal_rows(out, a, b):
        np.take(signal, order[a:b], out=out, mode="clip")

    def value_rows(out, a, b):
        np.take(values, order[a:b], axis=0, out=out, mode="clip")

    def row_ptr_rows(ptr):
        def rows(out, a, b):
            out[:] = ptr[a:b]
        return rows

    u2, u4, u8 = np.dtype("<u2"), np.dtype("<u4"), np.dtype("<u8")
    makers = {"coeff_matrix": (u4, (n,), matrix_rows), "coeff_constraint": (u4, (n,), constraint_rows),
              "coeff_signal": (u4, (n,), signal_rows), "coeff_values": (u8, values.shape, value_rows),
              "row_ptr_a": (u4, ptr_a.shape, row_ptr_rows(ptr_a)), "row_ptr_b": (u4, ptr_b.shape, row_ptr_rows(ptr_b))}
    # the table of the values in file order: the same distinct values, found without gathering them first
    found = coefficient_table([values])
    if found is not None:
        table, (index,) = found.table, found.indices

        def table_rows(out, a, b):
            out[:] = table[a:b]

        def index_rows(out, a, b):
            np.take(index, order[a:b], out=out, mode="clip")

        makers["coeff_table"] = (u8, table.shape, table_rows)  # rows of limbs * 8 bytes, as coeff_values
        makers["coeff_index"] = (u2, (n,), index_rows)
    arrays = {}
    for name, (dtype, shape, fill) in makers.items():
        digest = _write_array(folder / f"{name}.bin", dtype, shape, fill)
        arrays[name] = {"dtype": dtype.str, "shape": list(shape), "digest": digest}
    manifest = {"format": CACHE_FORMAT, "zkpipe": pipeline.__version__, "content": content, "curve": header.curve.name,
                "n_vars": header.n_vars, "n_public": header.n_public, "domain_size": d, "n_coefficients": n,
                "n_a": n_a, "key_path": header.binfile.path, "arrays": arrays,
                "coeff_table": None if found is None else {"distinct_values": int(found.table.shape[0])}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def _write_array(path: Path, dtype: np.dtype, shape: tuple, fill: Callable[[np.ndarray, int, int], object]) -> str:
    """Write an array to ``path`` block by block on the worker threads, ``fill(out, a, b)`` putting
    rows a..b-1 into the thread's block buffer; the array's digest."""
    row_bytes = dtype.itemsize * math.prod(shape[1:])
    rows_per_block = BLOCK_BYTES // row_bytes
    assert rows_per_block * row_bytes == BLOCK_BYTES, "a row must divide the checksum block"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        def block(a: int, b: int) -> bytes:
            view = scratch((b - a) * row_bytes)
            fill(np.frombuffer(view, dtype=dtype).reshape(b - a, *shape[1:]), a, b)
            done, offset = 0, a * row_bytes
            while done < len(view):
                done += os.pwrite(fd, view[done:], offset + done)
            return xxhash.xxh3_128_digest(view)

        return tree_digest(shape[0] * row_bytes, over_chunks(shape[0], rows_per_block, block))
    finally:
        os.close(fd)


def read_manifest(folder: Path) -> dict:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise CacheInvalid("no cache yet") from None
    except (OSError, ValueError) as exc:
        raise CacheInvalid(f"unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict):
        raise CacheInvalid("unreadable manifest (not an object)")
    return manifest


def open_folder(folder: Path, header: ZkeyHeader, content: str, verify: bool = True) -> OpenedFolder:
    """The prepared key's arrays mapped read-only from ``folder`` (``OpenedFolder``);
    ``CacheInvalid`` unless it was made by this version from a key with ``content`` and every
    array is whole (and, with ``verify``, matches its digest)."""
    m = read_manifest(folder)
    if (m.get("format"), m.get("zkpipe")) != (CACHE_FORMAT, pipeline.__version__):
        raise CacheInvalid(f"made by zkpipe {m.get('zkpipe')} (cache format {m.get('format')}), this is zkpipe "
                           f"{pipeline.__version__} (cache format {CACHE_FORMAT})")
    if m.get("content") != content:
        raise CacheInvalid("the key's header or coefficients changed since the cache was made")
    facts = {"curve": header.curve.name, "n_vars": header.n_vars, "n_public": header.n_public,
             "domain_size": header.domain_size}
    if any(m.get(k) != v for k, v in facts.items()) or not isinstance(m.get("arrays"), dict):
        raise CacheInvalid("the manifest does not describe this key")
    arrays = {}
    try:
        has_table = m["coeff_table"] is not None
        for name in ARRAYS + (TABLE_ARRAYS if has_table else ()):
            spec = m["arrays"][name]
            arrays[name] = _map_array(folder / f"{name}.bin", np.dtype(spec["dtype"]), tuple(spec["shape"]),
                                      spec["digest"] if verify else None)
        n_a, n = int(m["n_a"]), int(m["n_coefficients"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CacheInvalid(f"the manifest does not describe the arrays ({exc!r})") from None
    ptr_a, ptr_b = arrays["row_ptr_a"], arrays["row_ptr_b"]
    if ptr_a.shape != (header.domain_size + 1,) or arrays["coeff_signal"].shape != (n,) or \
            int(ptr_a[-1]) != n_a or int(ptr_b[-1]) != n - n_a or \
            (has_table and (arrays["coeff_index"].shape != (n,) or
                            arrays["coeff_table"].shape[1:] != arrays["coeff_values"].shape[1:])):
        raise CacheInvalid("the arrays' sizes do not agree with each other")
    signal, values = arrays["coeff_signal"], arrays["coeff_values"]
    csr = (CsrMatrix(ptr_a, signal[:n_a], values[:n_a]), CsrMatrix(ptr_b, signal[n_a:], values[n_a:]))
    table = None
    if has_table:
        index = arrays["coeff_index"]
        table = CoefficientTable(arrays["coeff_table"], (index[:n_a], index[n_a:]))
    return OpenedFolder((arrays["coeff_matrix"], arrays["coeff_constraint"], signal, values), csr, table)


def _map_array(path: Path, dtype: np.dtype, shape: tuple, digest: str | None) -> np.ndarray:
    expected = dtype.itemsize * math.prod(shape)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise CacheInvalid(f"{path.name}: {exc.strerror or exc}") from None
    if size != expected:
        raise CacheInvalid(f"{path.name} is {size} bytes, expected {expected} (truncated or overwritten)")
    if digest is not None and digest_file_range(path, 0, size) != digest:
        raise CacheInvalid(f"{path.name} does not match its checksum (damaged)")
    if expected == 0:
        return np.empty(shape, dtype=dtype)  # an empty file cannot be mapped
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)

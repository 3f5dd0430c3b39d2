"""Write a ``CompactR1cs`` as a snarkjs/circom ``.r1cs`` (layout: formats.r1cs), chunk by chunk.

Section 2 interleaves each constraint's A, B, C as (u32 nTerms, nTerms x (u32 wire, n8-byte
value)). With n8 = 32 every field is a whole number of 32-bit words, so a chunk of constraints
is assembled as words with numpy alone: the terms of the three matrices are scattered into
constraint order as packed records, then the term counts are inserted in front of each linear
combination (``np.insert`` with all positions at once). No Python work per term or constraint;
chunks are assembled on the formats worker pool and written in order.
"""
from __future__ import annotations

import os
import struct
from collections import deque

import numpy as np

from ..errors import InternalError
from .binfile import FILE_HEADER, SECTION_HEADER, worker_pool
from .compact_r1cs import CompactR1cs
from .r1cs import term_dtype

ROWS_PER_CHUNK = 1 << 16
IN_FLIGHT = 8  # chunks assembled ahead of the one being written (each ~ROWS_PER_CHUNK * 200 bytes)
R1CS_VERSION = 1


def r1cs_file_bytes(n8: int, n_constraints: int, n_terms: int, n_wires: int) -> int:
    """Exact size of the file ``write_r1cs`` writes for a system of these sizes."""
    header = 4 + n8 + 4 * 4 + 8 + 4
    return (FILE_HEADER.size + 3 * SECTION_HEADER.size + header + 12 * n_constraints + (4 + n8) * n_terms
            + 8 * n_wires)


def write_r1cs(path: str | os.PathLike, r1cs: CompactR1cs, rows_per_chunk: int = ROWS_PER_CHUNK) -> int:
    """Write ``r1cs`` (sections 1 header, 2 constraints, 3 wire->label identity); returns bytes written."""
    fr = r1cs.curve.fr
    n8 = fr.n_bytes
    if n8 % 4:
        raise ValueError(f"{r1cs.curve.name}: n8 = {n8} is not a whole number of 32-bit words")
    header = (struct.pack("<I", n8) + fr.modulus.to_bytes(n8, "little")
              + struct.pack("<IIII", r1cs.n_wires, r1cs.n_pub_out, r1cs.n_pub_in, r1cs.n_prv_in)
              + struct.pack("<QI", r1cs.n_wires, r1cs.n_constraints))
    constraints_size = 12 * r1cs.n_constraints + (4 + n8) * sum(m.n_terms for m in r1cs.matrices)
    with open(path, "wb") as fh:
        fh.write(FILE_HEADER.pack(b"r1cs", R1CS_VERSION, 3))
        fh.write(SECTION_HEADER.pack(1, len(header)))
        fh.write(header)
        fh.write(SECTION_HEADER.pack(2, constraints_size))
        for words in _in_order(r1cs.n_constraints, rows_per_chunk, lambda a, b: constraint_words(r1cs, a, b)):
            fh.write(words.data)
        fh.write(SECTION_HEADER.pack(3, 8 * r1cs.n_wires))
        for lo in range(0, r1cs.n_wires, 1 << 22):
            fh.write(np.arange(lo, min(lo + (1 << 22), r1cs.n_wires), dtype="<u8").data)
        written = fh.tell()
    expected = r1cs_file_bytes(n8, r1cs.n_constraints, sum(m.n_terms for m in r1cs.matrices), r1cs.n_wires)
    if written != expected:
        raise InternalError(f"{path}: wrote {written} bytes, the layout says {expected}")
    return written


def constraint_words(r1cs: CompactR1cs, lo: int, hi: int) -> np.ndarray:
    """Section 2 bytes of constraints [lo, hi), as little-endian uint32 words."""
    limbs = r1cs.curve.fr.limbs
    n = hi - lo
    lengths = np.stack([m.row_lengths(lo, hi) for m in r1cs.matrices], axis=1)  # (n, 3)
    before = np.zeros(3 * n + 1, dtype=np.int64)  # terms before each linear combination (a0 b0 c0 a1 ..)
    np.cumsum(lengths.reshape(-1), out=before[1:])
    records = np.empty(int(before[-1]), dtype=term_dtype(limbs))
    for which, m in enumerate(r1cs.matrices):
        t0, t1 = int(m.starts[lo]), int(m.starts[hi])
        shift = before[which : 3 * n : 3] - (m.starts[lo:hi] - t0)  # per row: LC order minus matrix order
        at = np.arange(t1 - t0) + np.repeat(shift, lengths[:, which])
        records["wire"][at] = m.signals[t0:t1]
        records["value"][at] = r1cs.term_values(m, t0, t1)
    words_per_term = records.dtype.itemsize // 4
    return np.insert(records.view("<u4"), before[:-1] * words_per_term, lengths.reshape(-1).astype("<u4"))


def _in_order(n_rows: int, rows_per_chunk: int, make):
    """``make(lo, hi)`` over chunks of rows on the worker pool, yielded in order, a few in flight."""
    pool, pending = worker_pool(), deque()
    for lo in range(0, n_rows, rows_per_chunk):
        pending.append(pool.submit(make, lo, min(lo + rows_per_chunk, n_rows)))
        if len(pending) > IN_FLIGHT:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()

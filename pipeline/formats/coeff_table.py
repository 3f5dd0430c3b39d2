"""Coefficients as 16-bit indices into a table of their distinct values: a key's A/B values for the
CUDA backend, a circuit's terms (``CompactR1cs.from_r1cs``).

A snarkjs key stores a 32-byte value for every coefficient of A and B: 11 GB of a 2^26 seed-shaped
key, against its 271 distinct values (counted on bench circuits, bench/NOTES.md session 8). As a
uint16 index per coefficient and one table, the values take 2 bytes each instead of 32: the CSR of
a key streamed under a 16 GiB budget can stay on the device, and the spmv reads a sixth of the
bytes.

``coefficient_table`` finds the table without sorting the coefficients: a 64-bit fingerprint of
each value is looked up among the fingerprints of the values seen so far (first a sample), and
every hit is checked limb by limb, so a fingerprint collision can only make the table bigger or
give up, never map a value to another. Chunks run on the formats worker pool (numpy releases the
GIL in its passes).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .binfile import over_chunks

MAX_TABLE = 1 << 16  # indices are uint16
INDEX_BYTES = 2
CHUNK_ROWS = 1 << 20  # rows per worker task
SAMPLE_ROWS = 1 << 16  # rows of a strided sample that seed the table
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))


@dataclass(frozen=True)
class CoefficientTable:
    """``table[index[k]]`` is the k-th value of every matrix given, in order (``indices``: one
    uint16 array per matrix)."""

    table: np.ndarray  # (k, limbs) uint64, k <= MAX_TABLE
    indices: tuple[np.ndarray, ...]

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + sum(i.nbytes for i in self.indices)


def fingerprint(values: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each row's limbs (wrapping products): equal rows, equal fingerprints."""
    fp = values[:, 0].copy()
    for i in range(1, values.shape[1]):
        fp ^= values[:, i] * _MIX[(i - 1) % len(_MIX)]
        fp ^= fp >> np.uint64(29)
    return fp


class _Lookup:
    """The table so far, with its fingerprints sorted for searching."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table
        fps = fingerprint(table)
        self.order = np.argsort(fps, kind="stable")
        self.sorted_fps = fps[self.order]
        self.collided = len(np.unique(self.sorted_fps)) != len(self.sorted_fps)

    def find(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(table row of each value, whether it is really that row)."""
        fps = fingerprint(values)
        pos = np.minimum(np.searchsorted(self.sorted_fps, fps), len(self.sorted_fps) - 1)
        rows = self.order[pos]
        hit = self.sorted_fps[pos] == fps
        hit &= np.all(self.table[rows] == values, axis=1)
        return rows, hit


def coefficient_table(matrices: list[np.ndarray], max_size: int = MAX_TABLE) -> CoefficientTable | None:
    """The distinct rows of ``matrices`` ((n_i, limbs) uint64 each) and each row's index among
    them; None when there are more than ``max_size`` (then the values stay as they are). One pass
    over every value against the table of a strided sample; then rounds over the values that pass
    missed only, their distinct rows added to the table each time."""
    limbs = matrices[0].shape[1] if matrices else 4
    total = sum(m.shape[0] for m in matrices)
    if total == 0:
        return CoefficientTable(np.zeros((0, limbs), np.uint64), tuple(np.zeros(0, np.uint16) for _ in matrices))
    stride = max(1, total // SAMPLE_ROWS)
    table = _distinct(np.concatenate([m[::stride] for m in matrices if m.shape[0]]))
    indices = [np.empty(m.shape[0], dtype=np.uint16) for m in matrices]
    # (matrix, positions in it) of the values not found yet: at first every value of every matrix
    pending: list[tuple[int, np.ndarray | None]] = [(k, None) for k in range(len(matrices))]
    while pending:
        if len(table) > max_size:
            return None
        lookup = _Lookup(table)
        if lookup.collided:  # two distinct values share a fingerprint: not worth a second scheme
            return None
        missed: list[tuple[int, np.ndarray]] = []
        for k, positions in pending:
            m, out = matrices[k], indices[k]
            count = m.shape[0] if positions is None else len(positions)

            def task(a: int, b: int, m=m, out=out, positions=positions) -> np.ndarray:
                where = np.arange(a, b) if positions is None else positions[a:b]
                values = m[a:b] if positions is None else m[where]
                rows, hit = lookup.find(values)
                out[where[hit]] = rows[hit]
                return where[~hit]
            lost = [x for x in over_chunks(count, CHUNK_ROWS, task) if len(x)]
            if lost:
                missed.append((k, np.concatenate(lost)))
        if missed:
            table = np.concatenate([table, _distinct(np.concatenate([matrices[k][w] for k, w in missed]))])
        pending = missed
    return CoefficientTable(table, tuple(indices))


def _distinct(rows: np.ndarray) -> np.ndarray:
    """The distinct rows, in order of first appearance."""
    if len(rows) == 0:
        return rows
    _, first = np.unique(rows, axis=0, return_index=True)
    return np.ascontiguousarray(rows[np.sort(first)])

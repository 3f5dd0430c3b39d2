"""The zkey's coefficient section (4) for a circuit, in the order snarkjs's ``zkey new`` writes it.

For each constraint c in order: its A terms (matrix 0), then its B terms (matrix 1), each in
the .r1cs term order; then one record (0, n_constraints + j, j, 1) per j in 0..n_public, the
rows that bind the public signals. C is not stored. Values are stored as value * R^2 mod r
(see formats/types.py).

``record_layout`` places every A and B term in that order with vectorised index arithmetic
(no sort): A term k of row c lands at k + (B terms before row c); B term k of row c at
k + (A terms up to and including row c). Matrix and constraint columns are runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formats.compact_r1cs import CompactR1cs
from ..formats.types import MATRIX_A, MATRIX_B


@dataclass(frozen=True, eq=False)
class RecordLayout:
    positions_a: np.ndarray  # (A terms,) uint32: record index of each A term (records < 2^32: check_for_setup)
    positions_b: np.ndarray  # (B terms,) uint32
    first_public_record: int  # records of the public rows start here
    n_records: int
    matrix: np.ndarray  # (n_records,) uint32
    constraint: np.ndarray
    signal: np.ndarray

    @property
    def positions_public(self) -> np.ndarray:
        return np.arange(self.first_public_record, self.n_records, dtype=np.uint32)


def record_layout(r1cs: CompactR1cs) -> RecordLayout:
    a, b, n_rows = r1cs.a, r1cs.b, r1cs.n_constraints
    count_a, count_b = a.row_lengths(), b.row_lengths()
    # uint32 throughout (half the memory traffic of int64 at 2^27): every record index is below 2^32
    positions_a = np.arange(a.n_terms, dtype=np.uint32) + np.repeat(b.starts[:-1].astype(np.uint32), count_a)
    positions_b = np.arange(b.n_terms, dtype=np.uint32) + np.repeat(a.starts[1:].astype(np.uint32), count_b)
    n_ab = a.n_terms + b.n_terms
    publics = np.arange(r1cs.n_public + 1, dtype=np.uint32)
    n_records = n_ab + publics.shape[0]
    per_row = np.stack([count_a, count_b], axis=1).reshape(-1)
    matrix = np.concatenate([np.repeat(np.tile(np.array([MATRIX_A, MATRIX_B], dtype=np.uint32), n_rows), per_row),
                             np.full(publics.shape[0], MATRIX_A, dtype=np.uint32)])
    constraint = np.concatenate([np.repeat(np.arange(n_rows, dtype=np.uint32), count_a + count_b),
                                 n_rows + publics])
    signal = np.empty(n_records, dtype=np.uint32)
    signal[positions_a] = a.signals
    signal[positions_b] = b.signals
    signal[n_ab:] = publics
    return RecordLayout(positions_a, positions_b, n_ab, n_records, matrix, constraint, signal)


def stored_values_cpu(r1cs: CompactR1cs, layout: RecordLayout) -> np.ndarray:
    """(n_records, fr_limbs) value * R^2 mod r in record order: the table converted once, then
    gathered by code (numpy; the GPU path does the same on the device)."""
    fr = r1cs.curve.fr
    rr = fr.r_mont * fr.r_mont % fr.modulus
    table_rr = fr.limbs_from_ints([v * rr % fr.modulus for v in fr.ints_from_limbs(r1cs.coeff_table)] + [rr])
    one_code = table_rr.shape[0] - 1
    out = np.empty((layout.n_records, fr.limbs), dtype=np.uint64)
    out[layout.positions_a] = table_rr[r1cs.a.coeffs]
    out[layout.positions_b] = table_rr[r1cs.b.coeffs]
    out[layout.first_public_record:] = table_rr[one_code]
    return out

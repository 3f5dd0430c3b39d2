"""The zkey's coefficient section (4) for a circuit, in the order snarkjs's ``zkey new`` writes it.

For each constraint c in order: its A terms (matrix 0), then its B terms (matrix 1), each in
the .r1cs term order; then one record (0, n_constraints + j, j, 1) per j in 0..n_public, the
rows that bind the public signals. C is not stored. Values are stored as value * R^2 mod r
(see formats/types.py).

``record_layout`` places every A and B term in that order with vectorised index arithmetic
(no sort): a term's position is its constraint's first record plus its index within its
constraint (after the constraint's A terms, for B).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve
from ..formats.types import MATRIX_A, MATRIX_B
from .circuit import CircuitMatrices, SparseMatrix


@dataclass(frozen=True, eq=False)
class RecordLayout:
    positions_a: np.ndarray  # (len A,) int64: record index of each A term
    positions_b: np.ndarray  # (len B,) int64
    first_public_record: int  # records of the public rows start here
    n_records: int
    matrix: np.ndarray  # (n_records,) uint32
    constraint: np.ndarray
    signal: np.ndarray


def _index_in_row(m: SparseMatrix, row_start: np.ndarray) -> np.ndarray:
    """For each term, its index among its row's terms (rows non-decreasing)."""
    return np.arange(len(m), dtype=np.int64) - row_start[m.rows]


def record_layout(circuit: CircuitMatrices) -> RecordLayout:
    n_rows = circuit.n_constraints
    count_a, count_b = circuit.a.row_counts(n_rows), circuit.b.row_counts(n_rows)
    per_row = count_a + count_b
    first_record = np.cumsum(per_row) - per_row
    start_a, start_b = np.cumsum(count_a) - count_a, np.cumsum(count_b) - count_b
    positions_a = first_record[circuit.a.rows] + _index_in_row(circuit.a, start_a)
    positions_b = first_record[circuit.b.rows] + count_a[circuit.b.rows] + _index_in_row(circuit.b, start_b)
    n_ab = len(circuit.a) + len(circuit.b)
    n_records = n_ab + circuit.n_public + 1
    matrix = np.empty(n_records, dtype=np.uint32)
    constraint = np.empty(n_records, dtype=np.uint32)
    signal = np.empty(n_records, dtype=np.uint32)
    for positions, m, tag in ((positions_a, circuit.a, MATRIX_A), (positions_b, circuit.b, MATRIX_B)):
        matrix[positions] = tag
        constraint[positions] = m.rows
        signal[positions] = m.signals
    publics = np.arange(circuit.n_public + 1, dtype=np.uint32)
    matrix[n_ab:] = MATRIX_A
    constraint[n_ab:] = circuit.n_constraints + publics
    signal[n_ab:] = publics
    return RecordLayout(positions_a, positions_b, n_ab, n_records, matrix, constraint, signal)


def public_rows(circuit: CircuitMatrices) -> SparseMatrix:
    """The extra A terms (n_constraints + j, j, 1) for j in 0..n_public, as a matrix of their own."""
    fr = circuit.curve.fr
    publics = np.arange(circuit.n_public + 1, dtype=np.uint32)
    values = np.zeros((publics.shape[0], fr.limbs), dtype=np.uint64)
    values[:, 0] = 1
    return SparseMatrix(circuit.n_constraints + publics, publics, values)


def stored_values_cpu(curve: Curve, circuit: CircuitMatrices, layout: RecordLayout) -> np.ndarray:
    """(n_records, fr_limbs) value * R^2 mod r in record order, with Python ints (small circuits)."""
    fr = curve.fr
    rr = fr.r_mont * fr.r_mont % fr.modulus
    out = np.zeros((layout.n_records, fr.limbs), dtype=np.uint64)
    for positions, m in ((layout.positions_a, circuit.a), (layout.positions_b, circuit.b)):
        if len(m):
            out[positions] = fr.limbs_from_ints(v * rr % fr.modulus for v in fr.ints_from_limbs(m.values))
    out[layout.first_public_record:] = fr.limbs_from_ints([rr] * (circuit.n_public + 1))
    return out

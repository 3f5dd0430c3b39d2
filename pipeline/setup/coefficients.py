"""The zkey's coefficient section (4) for a circuit, in the order snarkjs's ``zkey new`` writes it.

For each constraint c in order: its A terms (matrix 0), then its B terms (matrix 1), each in
the .r1cs term order; then one record (0, n_constraints + j, j, 1) per j in 0..n_public, the
rows that bind the public signals. C is not stored. Values are stored as value * R^2 mod r
(see formats/types.py).

``record_layout`` places every A and B term in that order with vectorised index arithmetic
(no sort): a term's position is its constraint's first record plus its index within its
constraint (after the constraint's A terms, for B); matrix and constraint columns are runs.
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


def record_layout(circuit: CircuitMatrices) -> RecordLayout:
    n_rows = circuit.n_constraints
    count_a, count_b = circuit.a.row_counts(n_rows), circuit.b.row_counts(n_rows)
    ends_a, ends_b = np.cumsum(count_a), np.cumsum(count_b)
    # A term k of row c: first record of c (= starts_a[c] + starts_b[c]) + (k - starts_a[c]) = k + starts_b[c];
    # B term k of row c: first record + count_a[c] + (k - starts_b[c]) = k + ends_a[c]
    positions_a = np.arange(len(circuit.a), dtype=np.int64) + (ends_b - count_b)[circuit.a.rows]
    positions_b = np.arange(len(circuit.b), dtype=np.int64) + ends_a[circuit.b.rows]
    n_ab = len(circuit.a) + len(circuit.b)
    n_records = n_ab + circuit.n_public + 1
    publics = np.arange(circuit.n_public + 1, dtype=np.uint32)
    per_row = np.stack([count_a, count_b], axis=1).reshape(-1)
    matrix = np.concatenate([np.repeat(np.tile(np.array([MATRIX_A, MATRIX_B], dtype=np.uint32), n_rows), per_row),
                             np.full(publics.shape[0], MATRIX_A, dtype=np.uint32)])
    constraint = np.concatenate([np.repeat(np.arange(n_rows, dtype=np.uint32), count_a + count_b),
                                 circuit.n_constraints + publics])
    signal = np.empty(n_records, dtype=np.uint32)
    signal[positions_a] = circuit.a.signals
    signal[positions_b] = circuit.b.signals
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

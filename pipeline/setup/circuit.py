"""A circuit as three flat sparse matrices: what a setup needs of an R1CS, at any size.

``formats.types.R1cs`` holds one object per linear combination, which is fine for files of
fixture size but not for 2^27 constraints (hundreds of millions of objects). ``SparseMatrix``
holds one matrix as three arrays in the .r1cs term order: ``rows`` (constraint index,
non-decreasing), ``signals`` and ``values`` (plain form, (k, fr_limbs) uint64).

Sizes follow snarkjs's ``zkey new``: domain_size = 2^(floor(log2(constraints + n_public)) + 1),
the smallest power of two with room for every constraint plus one row per public signal and
the constant one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve
from ..formats.types import R1cs


@dataclass(frozen=True, eq=False)
class SparseMatrix:
    rows: np.ndarray  # (k,) uint32, non-decreasing
    signals: np.ndarray  # (k,) uint32
    values: np.ndarray  # (k, fr_limbs) uint64, plain form

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def row_counts(self, n_rows: int) -> np.ndarray:
        return np.bincount(self.rows, minlength=n_rows).astype(np.int64)


@dataclass(frozen=True, eq=False)
class CircuitMatrices:
    source: str  # a path, or a description of where the circuit came from
    curve: Curve
    n_vars: int  # signals, the constant one at index 0 included
    n_public: int  # public signals (outputs, then public inputs): indices 1 .. n_public
    n_constraints: int
    a: SparseMatrix
    b: SparseMatrix
    c: SparseMatrix

    def __post_init__(self) -> None:
        check_matrices(self)

    @property
    def domain_size(self) -> int:
        return domain_size_for(self.n_constraints, self.n_public)

    @property
    def log_domain_size(self) -> int:
        return self.domain_size.bit_length() - 1


def domain_size_for(n_constraints: int, n_public: int) -> int:
    """snarkjs: 2^(log2(nConstraints + nPublic) + 1) with log2 rounding down (log2(0) = 0)."""
    return 1 << (max(n_constraints + n_public, 1).bit_length())


def check_matrices(circuit: CircuitMatrices) -> None:
    """Shapes, index ranges and row order; a ``ValueError`` naming the matrix and the problem."""
    fr = circuit.curve.fr
    if circuit.n_public + 1 > circuit.n_vars:
        raise ValueError(f"{circuit.source}: {circuit.n_public} public signals need more than {circuit.n_vars} "
                         f"signals")
    log_n = circuit.log_domain_size
    if log_n >= fr.two_adicity:
        raise ValueError(f"{circuit.source}: a domain of 2^{log_n} needs 2^{log_n + 1}-th roots of unity for H; "
                         f"{circuit.curve.name}'s 2-adicity is {fr.two_adicity}")
    for name, m in (("A", circuit.a), ("B", circuit.b), ("C", circuit.c)):
        k = len(m)
        if m.signals.shape != (k,) or m.values.shape != (k, fr.limbs) or m.values.dtype != np.uint64:
            raise ValueError(f"{circuit.source}: matrix {name}: rows, signals and values ({fr.limbs} uint64 limbs "
                             f"each) must have one entry per term")
        if k >= 1 << 32:
            raise ValueError(f"{circuit.source}: matrix {name}: {k} terms exceed the 32-bit term indices")
        if k and (int(m.rows.max()) >= circuit.n_constraints or int(m.signals.max()) >= circuit.n_vars):
            raise ValueError(f"{circuit.source}: matrix {name}: a row or signal index is out of range "
                             f"({circuit.n_constraints} constraints, {circuit.n_vars} signals)")
        if k > 1 and np.any(m.rows[1:] < m.rows[:-1]):
            raise ValueError(f"{circuit.source}: matrix {name}: terms must be in constraint order")


def from_r1cs(r1cs: R1cs) -> CircuitMatrices:
    """The flat matrices of an R1CS read from a file (terms in the file's order)."""
    fr = r1cs.curve.fr
    mats = []
    for which in range(3):
        lcs = [constraint[which] for constraint in r1cs.constraints]
        lengths = np.array([lc.signals.shape[0] for lc in lcs], dtype=np.int64)
        if lcs and lengths.sum():
            signals = np.concatenate([lc.signals for lc in lcs]).astype(np.uint32)
            values = np.concatenate([lc.values.reshape(-1, fr.limbs) for lc in lcs]).astype(np.uint64)
        else:
            signals, values = np.zeros(0, dtype=np.uint32), np.zeros((0, fr.limbs), dtype=np.uint64)
        rows = np.repeat(np.arange(len(lcs), dtype=np.uint32), lengths)
        mats.append(SparseMatrix(rows, signals, np.ascontiguousarray(values)))
    return CircuitMatrices(r1cs.path, r1cs.curve, r1cs.n_wires, r1cs.n_public, len(r1cs.constraints), *mats)

"""A constraint system held as three CSR matrices: what a 2^27-constraint circuit fits in.

``R1cs`` (formats.types) keeps one ``LinearCombination`` object per constraint and matrix,
which is right for circom's circuits and impossible at 2^27 constraints (4 * 10^8 objects).
``CompactR1cs`` keeps, per matrix A, B, C:

    starts   (n_constraints + 1,) int64    row i's terms are [starts[i], starts[i + 1])
    signals  (terms,) uint32               wire index of each term
    coeffs   (terms,) uint16               index into ``coeff_table`` (few distinct values)

and one ``coeff_table`` (n_coeffs, fr_limbs) uint64 of plain-form values below r: a term costs
6 bytes in memory (signal, code); its 32-byte field value exists only while a chunk is written.
Wire 0 is the constant 1; wires 1..n_public are the public signals (outputs, then inputs).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import Curve
from ..errors import BadInput
from .coeff_table import MAX_TABLE, coefficient_table
from .types import LinearCombination, R1cs

MATRIX_NAMES = ("A", "B", "C")


@dataclass(frozen=True, eq=False)
class CsrMatrix:
    starts: np.ndarray
    signals: np.ndarray
    coeffs: np.ndarray

    @property
    def n_terms(self) -> int:
        return int(self.signals.shape[0])

    def row_lengths(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        return np.diff(self.starts[lo : (len(self.starts) if hi is None else hi + 1)])

    def term_rows(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The constraint index of each term of rows [lo, hi), as uint32 (COO rows)."""
        hi = len(self.starts) - 1 if hi is None else hi
        return np.repeat(np.arange(lo, hi, dtype=np.uint32), self.row_lengths(lo, hi))


@dataclass(frozen=True, eq=False)
class CompactR1cs:
    curve: Curve
    n_wires: int
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    a: CsrMatrix
    b: CsrMatrix
    c: CsrMatrix
    coeff_table: np.ndarray  # (n_coeffs, fr_limbs) uint64, plain form, < r

    @property
    def n_public(self) -> int:
        return self.n_pub_out + self.n_pub_in

    @property
    def n_constraints(self) -> int:
        return len(self.a.starts) - 1

    @property
    def matrices(self) -> tuple[CsrMatrix, CsrMatrix, CsrMatrix]:
        return self.a, self.b, self.c

    @property
    def domain_size(self) -> int:
        """snarkjs's Groth16 domain (zkey_new.js): the smallest power of two above
        n_constraints + n_public, which leaves room for the n_public + 1 input rows."""
        return 1 << (self.n_constraints + self.n_public).bit_length()

    def term_values(self, matrix: CsrMatrix, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Plain-form values of terms [lo, hi) of ``matrix``: (hi - lo, fr_limbs) uint64."""
        return self.coeff_table[matrix.coeffs[lo:hi]]

    def host_bytes(self) -> int:
        arrays = [self.coeff_table] + [a for m in self.matrices for a in (m.starts, m.signals, m.coeffs)]
        return sum(a.nbytes for a in arrays)

    @classmethod
    def from_r1cs(cls, r1cs: R1cs) -> "CompactR1cs":
        """The compact form of a circuit read with ``read_r1cs`` (coefficients deduplicated)."""
        limbs = r1cs.curve.fr.limbs
        per_matrix = [[lcs[which] for lcs in r1cs.constraints] for which in range(3)]
        values = np.concatenate([lc.values for lcs in per_matrix for lc in lcs] + [np.zeros((0, limbs), np.uint64)])
        found = coefficient_table([values.reshape(-1, limbs)])
        if found is None:
            raise BadInput(f"{r1cs.path}: more than {MAX_TABLE} distinct coefficients do not fit 16-bit codes")
        table, (codes,) = found.table, found.indices
        matrices, used = [], 0
        for lcs in per_matrix:
            starts = np.zeros(len(lcs) + 1, dtype=np.int64)
            np.cumsum([lc.signals.shape[0] for lc in lcs], out=starts[1:])
            signals = np.concatenate([lc.signals for lc in lcs] + [np.zeros(0, np.uint32)]).astype(np.uint32)
            matrices.append(CsrMatrix(starts, signals, codes[used : used + signals.shape[0]]))
            used += signals.shape[0]
        return cls(curve=r1cs.curve, n_wires=r1cs.n_wires, n_pub_out=r1cs.n_pub_out, n_pub_in=r1cs.n_pub_in,
                   n_prv_in=r1cs.n_prv_in, a=matrices[0], b=matrices[1], c=matrices[2],
                   coeff_table=np.ascontiguousarray(table, dtype=np.uint64))

    def to_r1cs(self, path: str = "<in memory>") -> R1cs:
        """The same system as ``R1cs`` (one object per linear combination: small sizes only)."""
        per_matrix = []
        for m in self.matrices:
            values = self.term_values(m)
            bounds = m.starts.tolist()
            per_matrix.append([LinearCombination(m.signals[s:e], values[s:e]) for s, e in zip(bounds, bounds[1:])])
        return R1cs(path=path, curve=self.curve, n_wires=self.n_wires, n_pub_out=self.n_pub_out,
                    n_pub_in=self.n_pub_in, n_prv_in=self.n_prv_in, n_labels=self.n_wires,
                    constraints=tuple(zip(*per_matrix)))

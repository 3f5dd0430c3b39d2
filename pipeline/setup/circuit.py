"""What the setup needs of a circuit, read off ``formats.compact_r1cs.CompactR1cs``.

The setup takes the project's compact form (per matrix a CSR: row starts, signals, 16-bit codes
into a small table of plain coefficient values), made by ``pipeline.synth`` at any size or by
``CompactR1cs.from_r1cs`` from a circom file. Besides the circuit's own terms, the key binds each
public signal and the constant with one extra A row: (n_constraints + j, j, 1), j = 0..n_public.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import BadInput
from ..formats.compact_r1cs import CompactR1cs, CsrMatrix
from ..formats.r1cs import read_r1cs

MAX_CODES = 1 << 16  # codes are uint16 (synth's gates.CODE_DTYPE)


def read_circuit(path: str) -> CompactR1cs:
    """A circom .r1cs in compact form (``FormatError`` naming the file if it is not one)."""
    return CompactR1cs.from_r1cs(read_r1cs(path))


def log_domain_size(r1cs: CompactR1cs) -> int:
    return r1cs.domain_size.bit_length() - 1


def check_for_setup(r1cs: CompactR1cs, source: str = "the circuit") -> None:
    """Sizes a key can be made for; ``BadInput`` naming the limit."""
    fr = r1cs.curve.fr
    log_n = log_domain_size(r1cs)
    if log_n >= fr.two_adicity:
        raise BadInput(f"{source}: a domain of 2^{log_n} needs 2^{log_n + 1}-th roots of unity for H; "
                       f"{r1cs.curve.name}'s 2-adicity is {fr.two_adicity}")
    if r1cs.n_public + 1 > r1cs.n_wires:
        raise BadInput(f"{source}: {r1cs.n_public} public signals need more than {r1cs.n_wires} wires")
    records = r1cs.a.n_terms + r1cs.b.n_terms + r1cs.n_public + 1
    if max(records, r1cs.c.n_terms) >= 1 << 32:
        raise BadInput(f"{source}: {records} coefficient records exceed the zkey's 32-bit indices")


def coefficient_ints(r1cs: CompactR1cs) -> list[int]:
    """The coefficient table as Python ints (plain form)."""
    return r1cs.curve.fr.ints_from_limbs(r1cs.coeff_table)


@dataclass(frozen=True, eq=False)
class PublicRows:
    """The key's extra A rows as terms: rows, signals, and the code of the value 1."""

    rows: np.ndarray  # (n_public + 1,) uint32: n_constraints + j
    signals: np.ndarray  # (n_public + 1,) uint32: j
    codes: np.ndarray  # (n_public + 1,) uint16


def table_with_one(r1cs: CompactR1cs) -> tuple[np.ndarray, int]:
    """(table, code of 1): the coefficient table, with 1 appended when it lacks it."""
    table = np.ascontiguousarray(r1cs.coeff_table, dtype=np.uint64).reshape(-1, r1cs.curve.fr.limbs)
    one = np.zeros(table.shape[1], dtype=np.uint64)
    one[0] = 1
    hits = np.flatnonzero((table == one).all(axis=1))
    if hits.size:
        return table, int(hits[0])
    if table.shape[0] >= MAX_CODES:
        raise BadInput(f"the circuit's {table.shape[0]} distinct coefficients leave no 16-bit code for 1")
    return np.concatenate([table, one[None, :]]), table.shape[0]


def public_rows(r1cs: CompactR1cs, one_code: int) -> PublicRows:
    publics = np.arange(r1cs.n_public + 1, dtype=np.uint32)
    return PublicRows(r1cs.n_constraints + publics, publics, np.full(publics.shape[0], one_code, dtype=np.uint16))


def terms(m: CsrMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows uint32, signals uint32, codes uint16) of every term, in .r1cs order."""
    return m.term_rows(), np.asarray(m.signals, dtype=np.uint32), np.asarray(m.coeffs, dtype=np.uint16)

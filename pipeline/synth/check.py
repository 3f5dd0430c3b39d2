"""Does a witness satisfy a ``CompactR1cs``? <A_i,w>·<B_i,w> = <C_i,w> (mod r) for every row i,
checked with numpy digit arithmetic (``field_vec``), a chunk of rows per task on the worker pool.

Per matrix and row, the exact integer sum s = sum coeff * w (< 256 r^2 for rows of at most
256 terms) is reduced once: REDC(s) = s R^-1. The row holds iff REDC(REDC(a) REDC(b)), which is
ab R^-3, equals REDC(REDC(REDC(c))), which is c R^-3. ``groth16.r1cs_check`` is the
reference (Python ints, one object per linear combination): this one runs at 2^20 and beyond.
"""
from __future__ import annotations

import numpy as np

from ..errors import BadInput
from ..formats.binfile import over_chunks
from ..formats.compact_r1cs import CompactR1cs, CsrMatrix
from ..formats.types import Witness
from . import field_vec

ROWS_PER_TASK = 1 << 14
MAX_TERMS_PER_ROW = 1 << 20  # keeps the unreduced row sums below r * R


def first_unsatisfied(r1cs: CompactR1cs, witness: Witness | np.ndarray) -> int | None:
    """Index of the first constraint that does not hold, or None if all do."""
    values = witness.values if isinstance(witness, Witness) else witness
    if isinstance(witness, Witness) and witness.curve is not r1cs.curve:
        raise BadInput(f"witness is over {witness.curve.name} but the r1cs over {r1cs.curve.name}")
    if values.shape != (r1cs.n_wires, r1cs.curve.fr.limbs):
        raise BadInput(f"witness has shape {values.shape}, the r1cs needs ({r1cs.n_wires}, {r1cs.curve.fr.limbs})")
    modulus = r1cs.curve.fr.modulus
    table = field_vec.limbs_to_digits(r1cs.coeff_table)

    one = np.flatnonzero(~r1cs.coeff_table[:, 1:].any(axis=1) & (r1cs.coeff_table[:, 0] == 1))

    def term_products(wire_values: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """coefficient * wire per term, unreduced digits; coefficient 1 (most terms) needs no product."""
        digits = field_vec.limbs_to_digits(wire_values)
        if one.shape[0] == 0:
            return field_vec.mul_wide(digits, table[:, codes])
        plain = codes == one[0]
        out = np.zeros((2 * field_vec.FIELD_DIGITS + 1, codes.shape[0]), dtype=np.uint64)
        out[: field_vec.FIELD_DIGITS, plain] = digits[:, plain]
        scaled = ~plain
        out[:, scaled] = field_vec.mul_wide(digits[:, scaled], table[:, codes[scaled]])
        return out

    def row_sums(m: CsrMatrix, lo: int, hi: int) -> np.ndarray:
        """s R^-1 per row of [lo, hi), (16, hi - lo) digits; 0 for an empty row."""
        t0, t1 = int(m.starts[lo]), int(m.starts[hi])
        out = np.zeros((2 * field_vec.FIELD_DIGITS + 1, hi - lo), dtype=np.uint64)
        lengths = m.row_lengths(lo, hi)
        if lengths.max(initial=0) > MAX_TERMS_PER_ROW:
            raise BadInput(f"a row has more than {MAX_TERMS_PER_ROW} terms")
        if t1 > t0:
            products = term_products(values[m.signals[t0:t1]], m.coeffs[t0:t1])
            nonempty = lengths > 0
            out[:, nonempty] = np.add.reduceat(products, (m.starts[lo:hi] - t0)[nonempty], axis=1)
        return field_vec.redc(out, modulus)

    def first_bad(lo: int, hi: int) -> int | None:
        a, b, c = (row_sums(m, lo, hi) for m in r1cs.matrices)
        left = field_vec.redc(field_vec.mul_wide(a, b), modulus)
        right = field_vec.reduce_sum(field_vec.reduce_sum(c, modulus), modulus)
        bad = np.flatnonzero((left != right).any(axis=0))
        return lo + int(bad[0]) if bad.shape[0] else None

    return next((i for i in over_chunks(r1cs.n_constraints, ROWS_PER_TASK, first_bad) if i is not None), None)

"""a = A·w, b = B·w over the constraint domain from the key's coefficient list; c = a∘b.

snarkjs's zkey stores only the A and B matrices (plus the rows that bind the public inputs);
c is their pointwise product, which equals C·w for a satisfying witness.
"""
from __future__ import annotations

from ...formats.types import MATRIX_A, Groth16Zkey


def evaluate_abc(zkey: Groth16Zkey, coeff_values: list[int], witness: list[int]):
    p = zkey.curve.fr.modulus
    n = zkey.domain_size
    a, b = [0] * n, [0] * n
    for matrix, row, signal, value in zip(
        zkey.coeff_matrix.tolist(), zkey.coeff_constraint.tolist(), zkey.coeff_signal.tolist(), coeff_values
    ):
        target = a if matrix == MATRIX_A else b
        target[row] = (target[row] + value * witness[signal]) % p
    c = [x * y % p for x, y in zip(a, b)]
    return a, b, c

"""The benchmark's stand-in circuit fills its domain, is bit-heavy, and its witness satisfies it."""
from __future__ import annotations

import numpy as np
import pytest

from bench.standin_circuit import standin_circuit


def _products(circuit, matrix, w: list[int]) -> list[int]:
    out = [0] * circuit.n_constraints
    fr = circuit.curve.fr
    for row, sig, coef in zip(matrix.rows.tolist(), matrix.signals.tolist(), fr.ints_from_limbs(matrix.values)):
        out[row] = (out[row] + coef * w[sig]) % fr.modulus
    return out


@pytest.mark.parametrize("log_domain, n_public", [(10, 4), (12, 1)])
def test_witness_satisfies_every_constraint_and_the_domain_is_full(curve, log_domain, n_public):
    circuit, witness = standin_circuit(curve, log_domain, n_public)
    assert circuit.domain_size == 1 << log_domain
    assert circuit.n_constraints + n_public + 1 == 1 << log_domain
    w = curve.fr.ints_from_limbs(witness)
    a, b, c = (_products(circuit, m, w) for m in (circuit.a, circuit.b, circuit.c))
    p = curve.fr.modulus
    assert all(x * y % p == z for x, y, z in zip(a, b, c))
    assert w[0] == 1
    bits = np.isin(witness[:, 0], [0, 1]) & ~witness[:, 1:].any(axis=1)
    assert bits.mean() > 0.9

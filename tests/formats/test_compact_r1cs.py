"""CompactR1cs: the domain snarkjs would pick, COO rows, and lossless conversion to and from R1cs."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BN254
from pipeline.formats.compact_r1cs import CompactR1cs, CsrMatrix
from pipeline.formats.r1cs import read_r1cs
from tests.formats.conftest import CASE_IDS, CASES, fixture_file


def tiny(n_constraints: int, n_public: int) -> CompactR1cs:
    """x_{i+1} = x_i * x_i chains: one term per linear combination."""
    rows = np.arange(n_constraints + 1, dtype=np.int64)
    wires = np.arange(1, n_constraints + 1, dtype=np.uint32)
    m = CsrMatrix(rows, wires, np.zeros(n_constraints, dtype=np.uint16))
    c = CsrMatrix(rows, wires + 1, np.zeros(n_constraints, dtype=np.uint16))
    return CompactR1cs(BN254, n_constraints + 2, 0, n_public, 0, m, m, c, BN254.fr.limbs_from_ints([1]))


@pytest.mark.parametrize("n_constraints,n_public,domain", [(1, 0, 2), (1, 1, 4), (5, 2, 8), (6, 1, 8), (7, 1, 16),
                                                           (1021, 2, 1024), (1022, 2, 2048)])
def test_domain_is_snarkjs_smallest_power_of_two_above_constraints_plus_public(n_constraints, n_public, domain):
    # zkey_new.js: cirPower = log2(nConstraints + nPublic) + 1 (log2 rounds down)
    assert tiny(n_constraints, n_public).domain_size == domain


def test_term_rows_expand_csr_to_coo():
    m = CsrMatrix(np.array([0, 2, 2, 5]), np.arange(5, dtype=np.uint32), np.zeros(5, dtype=np.uint16))
    assert m.term_rows().tolist() == [0, 0, 2, 2, 2]
    assert m.term_rows(1, 3).tolist() == [2, 2, 2]
    assert m.row_lengths().tolist() == [2, 0, 3] and m.n_terms == 5


@pytest.mark.parametrize("curve_name,name", CASES, ids=CASE_IDS)
def test_round_trip_through_r1cs_keeps_every_term(curve_name, name):
    original = read_r1cs(fixture_file(curve_name, name, "circuit.r1cs"))
    compact = CompactR1cs.from_r1cs(original)
    again = compact.to_r1cs()
    assert compact.n_constraints == len(original.constraints) and compact.n_public == original.n_public
    for x, y in zip(original.constraints, again.constraints):
        for p, q in zip(x, y):
            assert np.array_equal(p.signals, q.signals) and np.array_equal(p.values, q.values)
    assert compact.host_bytes() > 0

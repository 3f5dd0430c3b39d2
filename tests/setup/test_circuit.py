"""What the setup reads off a compact circuit: snarkjs's sizes, the public rows, the code of 1,
and the limits it refuses by name."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BN254
from pipeline.errors import BadInput
from pipeline.formats.compact_r1cs import CompactR1cs, CsrMatrix
from pipeline.formats.zkey import read_zkey
from pipeline.setup.circuit import check_for_setup, public_rows, table_with_one, terms
from tests.conftest import CIRCUITS, fixture_dir
from tests.setup.conftest import fixture_circuit


@pytest.mark.parametrize("name", CIRCUITS)
def test_sizes_match_snarkjs_key(name):
    r1cs = fixture_circuit("bn128", name)
    theirs = read_zkey(str(fixture_dir("bn128", name) / "circuit_final.zkey"))
    assert (r1cs.n_wires, r1cs.n_public, r1cs.domain_size) == (theirs.n_vars, theirs.n_public, theirs.domain_size)


def test_public_rows_bind_each_public_signal_and_the_constant_with_the_code_of_one():
    r1cs = fixture_circuit("bls12381", "chain_2e8")
    table, one = table_with_one(r1cs)
    assert table[one].tolist() == [1, 0, 0, 0]
    rows = public_rows(r1cs, one)
    assert rows.signals.tolist() == [0, 1, 2, 3]
    assert rows.rows.tolist() == [r1cs.n_constraints + j for j in range(4)]
    assert rows.codes.tolist() == [one] * 4


def _tiny(table_values, n_constraints=1, n_wires=3):
    starts = np.broadcast_to(np.int64(0), (n_constraints + 1,))  # no memory, even for 2^27 rows
    empty = CsrMatrix(starts, np.zeros(0, np.uint32), np.zeros(0, np.uint16))
    table = np.array(table_values, dtype=np.uint64).reshape(-1, 4)
    return CompactR1cs(BN254, n_wires, 1, 0, n_wires - 2, empty, empty, empty, table)


def test_a_table_without_one_gets_it_appended():
    table, one = table_with_one(_tiny([[5, 0, 0, 0], [7, 0, 0, 0]]))
    assert one == 2 and table.shape == (3, 4) and table[2].tolist() == [1, 0, 0, 0]


def test_terms_come_in_r1cs_order_with_their_rows():
    r1cs = fixture_circuit("bn128", "multiplier")
    rows, signals, codes = terms(r1cs.a)
    assert rows.dtype == np.uint32 and signals.dtype == np.uint32 and codes.dtype == np.uint16
    assert rows.tolist() == [0] * len(rows)


def test_a_domain_past_the_two_adicity_is_refused():
    r1cs = _tiny([[1, 0, 0, 0]], n_constraints=1 << 27)
    with pytest.raises(BadInput, match="2-adicity"):
        check_for_setup(r1cs, "<big>")

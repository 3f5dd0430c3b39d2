"""The coefficient section we write for a circuit is snarkjs's, record for record, on every fixture."""
from __future__ import annotations

import pytest

from pipeline.formats.zkey import read_zkey
from pipeline.setup.coefficients import public_rows, record_layout, stored_values_cpu
from tests.conftest import CIRCUITS, CURVE_NAMES, fixture_dir
from tests.setup.conftest import fixture_circuit


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("name", CIRCUITS)
def test_records_equal_those_of_snarkjs_zkey(curve_name, name):
    circuit = fixture_circuit(curve_name, name)
    theirs = read_zkey(str(fixture_dir(curve_name, name) / "circuit_final.zkey"))
    layout = record_layout(circuit)
    assert (layout.matrix == theirs.coeff_matrix).all()
    assert (layout.constraint == theirs.coeff_constraint).all()
    assert (layout.signal == theirs.coeff_signal).all()
    assert (stored_values_cpu(circuit.curve, circuit, layout) == theirs.coeff_values_stored).all()


def test_positions_cover_every_record_once():
    circuit = fixture_circuit("bn128", "bits")
    layout = record_layout(circuit)
    taken = sorted([*layout.positions_a.tolist(), *layout.positions_b.tolist(),
                    *range(layout.first_public_record, layout.n_records)])
    assert taken == list(range(layout.n_records))


def test_public_rows_bind_each_public_signal_and_the_constant():
    circuit = fixture_circuit("bls12381", "chain_2e8")
    rows = public_rows(circuit)
    assert rows.signals.tolist() == [0, 1, 2, 3]
    assert rows.rows.tolist() == [circuit.n_constraints + j for j in range(4)]
    assert rows.values[:, 0].tolist() == [1] * 4 and not rows.values[:, 1:].any()

"""The coefficient section we write for a circuit is snarkjs's, record for record, on every fixture."""
from __future__ import annotations

import pytest

from pipeline.formats.zkey import read_zkey
from pipeline.setup.coefficients import record_layout, stored_values_cpu
from tests.conftest import CIRCUITS, CURVE_NAMES, fixture_dir
from tests.setup.conftest import fixture_circuit


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("name", CIRCUITS)
def test_records_equal_those_of_snarkjs_zkey(curve_name, name):
    r1cs = fixture_circuit(curve_name, name)
    theirs = read_zkey(str(fixture_dir(curve_name, name) / "circuit_final.zkey"))
    layout = record_layout(r1cs)
    assert (layout.matrix == theirs.coeff_matrix).all()
    assert (layout.constraint == theirs.coeff_constraint).all()
    assert (layout.signal == theirs.coeff_signal).all()
    assert (stored_values_cpu(r1cs, layout) == theirs.coeff_values_stored).all()


def test_positions_cover_every_record_once():
    layout = record_layout(fixture_circuit("bn128", "bits"))
    taken = sorted([*layout.positions_a.tolist(), *layout.positions_b.tolist(), *layout.positions_public.tolist()])
    assert taken == list(range(layout.n_records))

"""Flat circuit matrices: sizes as snarkjs computes them, and bad matrices named."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BN254
from pipeline.formats.zkey import read_zkey
from pipeline.setup.circuit import CircuitMatrices, SparseMatrix, domain_size_for
from tests.conftest import CIRCUITS, fixture_dir
from tests.setup.conftest import fixture_circuit


@pytest.mark.parametrize("name", CIRCUITS)
def test_sizes_match_snarkjs_key(name):
    circuit = fixture_circuit("bn128", name)
    theirs = read_zkey(str(fixture_dir("bn128", name) / "circuit_final.zkey"))
    assert (circuit.n_vars, circuit.n_public, circuit.domain_size) == (theirs.n_vars, theirs.n_public,
                                                                        theirs.domain_size)


def test_domain_leaves_a_row_for_each_public_signal_and_the_constant():
    assert domain_size_for(1, 1) == 4  # 1 + 1 + 1 rows
    assert domain_size_for(5, 2) == 8
    assert domain_size_for(6, 2) == 16  # 6 + 2 + 1 = 9 rows
    assert domain_size_for(0, 0) == 2  # snarkjs's log2(0) = 0


def _matrix(rows, signals):
    rows = np.array(rows, dtype=np.uint32)
    return SparseMatrix(rows, np.array(signals, dtype=np.uint32), np.ones((rows.shape[0], 4), dtype=np.uint64))


def _circuit(a, n_vars=4, n_constraints=2):
    empty = _matrix([], [])
    return CircuitMatrices("<test>", BN254, n_vars, 1, n_constraints, a, empty, empty)


@pytest.mark.parametrize("a, message", [
    (_matrix([1, 0], [1, 1]), "constraint order"),
    (_matrix([0, 2], [1, 1]), "out of range"),
    (_matrix([0, 1], [1, 4]), "out of range"),
])
def test_bad_matrices_are_named(a, message):
    with pytest.raises(ValueError, match=f"matrix A.*{message}"):
        _circuit(a)


def test_a_domain_past_the_two_adicity_is_refused():
    empty = _matrix([], [])
    with pytest.raises(ValueError, match="2-adicity"):
        CircuitMatrices("<big>", BN254, 4, 1, 1 << 27, empty, empty, empty)

"""synth.check.first_unsatisfied agrees with the reference checker (groth16.r1cs_check) on
circom's circuits and on generated ones, satisfied or broken anywhere."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BLS12_381
from pipeline.errors import BadInput
from pipeline.formats.compact_r1cs import CompactR1cs
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.wtns import read_wtns
from pipeline.groth16.r1cs_check import R1csChecker
from pipeline.synth import generate_circuit
from pipeline.synth.check import first_unsatisfied
from tests.conftest import FIXTURES

CIRCOM = [(c, n) for c in ("bn128", "bls12381") for n in ("multiplier", "bits", "poseidon2", "chain_2e8")]


def circom_fixture(curve: str, name: str):
    folder = FIXTURES / curve / name
    if not (folder / "circuit.r1cs").exists():
        pytest.skip(f"fixture {folder} is missing (tools/make_fixtures.sh)")
    return read_r1cs(folder / "circuit.r1cs"), read_wtns(folder / "witness.wtns")


@pytest.mark.parametrize("curve_name,name", CIRCOM, ids=[f"{c}-{n}" for c, n in CIRCOM])
def test_agrees_with_reference_on_circom_circuits(curve_name, name):
    r1cs, witness = circom_fixture(curve_name, name)
    compact = CompactR1cs.from_r1cs(r1cs)
    reference = R1csChecker(r1cs)
    assert first_unsatisfied(compact, witness) is None
    rng = np.random.default_rng(4)
    for wire in rng.choice(np.arange(1, r1cs.n_wires), size=min(5, r1cs.n_wires - 1), replace=False):
        broken = witness.values.copy()
        broken[wire, 0] ^= 1 << 7
        assert first_unsatisfied(compact, broken) == reference.first_unsatisfied(broken)


def test_finds_the_first_broken_row_of_each_kind(curve):
    r1cs, witness = generate_circuit(10, 2, curve, seed=9)
    reference = R1csChecker(r1cs.to_r1cs())
    lengths_a, lengths_b = r1cs.a.row_lengths(), r1cs.b.row_lengths()
    kinds = {"bool": (lengths_a == 1) & (lengths_b == 2), "select": (lengths_a == 2) & (lengths_b == 1),
             "pack": lengths_a > 100, "mul": lengths_b > 2}
    for kind, rows in kinds.items():
        wire = int(np.flatnonzero(rows)[-1]) + 1  # the wire a row of this kind defines
        broken = witness.values.copy()
        broken[wire] = [2, 0, 0, 0] if broken[wire, 0] <= 1 and not broken[wire, 1:].any() else 0
        found = first_unsatisfied(r1cs, broken)
        assert found is not None and found == reference.first_unsatisfied(broken), kind
        assert found <= wire - 1


def test_a_witness_of_the_wrong_size_or_curve_is_refused():
    r1cs, witness = generate_circuit(10, 1, "bn128")
    with pytest.raises(BadInput, match="witness has shape \\(1022, 4\\), the r1cs needs \\(1023, 4\\)"):
        first_unsatisfied(r1cs, witness.values[:-1])
    _, other = generate_circuit(10, 1, BLS12_381)
    with pytest.raises(BadInput, match="witness is over bls12381 but the r1cs over bn128"):
        first_unsatisfied(r1cs, other)

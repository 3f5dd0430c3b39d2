"""write_r1cs: files that read back through read_r1cs to the same system, that snarkjs reads
(r1cs info) and checks witnesses against (wtns check), whatever the chunking."""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from pipeline.formats.compact_r1cs import CompactR1cs
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.r1cs_writer import r1cs_file_bytes, write_r1cs
from pipeline.formats.wtns import read_wtns, write_wtns
from pipeline.synth import generate_circuit

from tests.formats.conftest import CASE_IDS, CASES, SNARKJS, fixture_file


def same_constraints(x, y) -> bool:
    return len(x.constraints) == len(y.constraints) and all(
        np.array_equal(p.signals, q.signals) and np.array_equal(p.values, q.values)
        for cx, cy in zip(x.constraints, y.constraints) for p, q in zip(cx, cy))


def test_generated_circuit_reads_back_the_same(curve, tmp_path):
    r1cs, _ = generate_circuit(10, 3, curve, seed=4)
    path = tmp_path / "circuit.r1cs"
    size = write_r1cs(path, r1cs)
    assert size == path.stat().st_size == r1cs_file_bytes(curve.fr.n_bytes, r1cs.n_constraints,
                                                          sum(m.n_terms for m in r1cs.matrices), r1cs.n_wires)
    back = read_r1cs(path)
    assert back.curve is curve
    assert (back.n_wires, back.n_pub_out, back.n_pub_in, back.n_prv_in, back.n_labels) == (r1cs.n_wires, 0, 3, 0,
                                                                                           r1cs.n_wires)
    assert same_constraints(back, r1cs.to_r1cs())


@pytest.mark.parametrize("rows_per_chunk", [1, 7, 1000, 1 << 20])
def test_chunking_does_not_change_the_bytes(tmp_path, rows_per_chunk):
    r1cs, _ = generate_circuit(10, 2, "bls12381", seed=5)
    write_r1cs(tmp_path / "whole.r1cs", r1cs)
    write_r1cs(tmp_path / "chunked.r1cs", r1cs, rows_per_chunk=rows_per_chunk)
    assert (tmp_path / "whole.r1cs").read_bytes() == (tmp_path / "chunked.r1cs").read_bytes()


@pytest.mark.parametrize("curve_name,name", CASES, ids=CASE_IDS)
def test_circom_circuits_survive_compact_form_and_writer(curve_name, name, tmp_path):
    original = read_r1cs(fixture_file(curve_name, name, "circuit.r1cs"))
    write_r1cs(tmp_path / "again.r1cs", CompactR1cs.from_r1cs(original))
    back = read_r1cs(tmp_path / "again.r1cs")
    assert (back.n_wires, back.n_pub_out, back.n_pub_in, back.n_prv_in) == (
        original.n_wires, original.n_pub_out, original.n_pub_in, original.n_prv_in)
    assert same_constraints(back, original)


def test_generated_witness_reads_back_the_same(curve, tmp_path):
    _, witness = generate_circuit(10, 1, curve, seed=6)
    write_wtns(tmp_path / "witness.wtns", curve, witness.values)
    back = read_wtns(tmp_path / "witness.wtns")
    assert back.curve is curve and np.array_equal(back.values, witness.values)


def snarkjs(*args: str) -> subprocess.CompletedProcess:
    if not SNARKJS.exists():
        pytest.skip("snarkjs is not installed (npm ci)")
    return subprocess.run([str(SNARKJS), *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NODE_NO_WARNINGS": "1"})


@pytest.mark.slow
def test_snarkjs_reads_the_circuit_and_accepts_the_witness(curve, tmp_path):
    r1cs, witness = generate_circuit(10, 4, curve, seed=7)
    write_r1cs(tmp_path / "circuit.r1cs", r1cs)
    write_wtns(tmp_path / "witness.wtns", curve, witness.values)
    info = snarkjs("r1cs", "info", str(tmp_path / "circuit.r1cs"))
    assert info.returncode == 0, info.stdout + info.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", info.stdout)
    assert f"# of Constraints: {r1cs.n_constraints}" in text and f"# of Wires: {r1cs.n_wires}" in text
    assert "# of Public Inputs: 4" in text and "# of Outputs: 0" in text
    check = snarkjs("wtns", "check", str(tmp_path / "circuit.r1cs"), str(tmp_path / "witness.wtns"))
    assert check.returncode == 0 and "WITNESS IS CORRECT" in check.stdout, check.stdout + check.stderr

    broken = witness.values.copy()
    broken[r1cs.n_wires - 1] = [2, 0, 0, 0] if broken[r1cs.n_wires - 1, 0] <= 1 else 0
    write_wtns(tmp_path / "broken.wtns", curve, broken)
    check = snarkjs("wtns", "check", str(tmp_path / "circuit.r1cs"), str(tmp_path / "broken.wtns"))
    assert check.returncode != 0 and "WITNESS IS NOT CORRECT" in check.stdout

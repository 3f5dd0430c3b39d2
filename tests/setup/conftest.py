"""Development keys of the fixture circuits, made once per session on the CPU path, and snarkjs."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.setup import DevSecrets, dev_setup_cpu, read_circuit
from tests.conftest import REPO, fixture_dir

SNARKJS = REPO / "node_modules" / ".bin" / "snarkjs"
_KEYS: dict = {}


def fixture_circuit(curve_name: str, name: str):
    return read_circuit(str(fixture_dir(curve_name, name) / "circuit.r1cs"))


def dev_key(curve_name: str, name: str, seed: int = 7):
    """(r1cs, secrets, zkey) of a fixture circuit; secrets from a fixed seed (reproducible)."""
    if (curve_name, name, seed) not in _KEYS:
        circuit = fixture_circuit(curve_name, name)
        secrets = DevSecrets.draw(circuit.curve, circuit.domain_size, seed=seed)
        _KEYS[curve_name, name, seed] = (circuit, secrets, dev_setup_cpu(circuit, secrets, path=f"<dev {name}>"))
    return _KEYS[curve_name, name, seed]


def snarkjs(*args: str | Path) -> subprocess.CompletedProcess:
    if not SNARKJS.exists():
        pytest.skip("snarkjs is not installed (npm ci)")
    return subprocess.run([str(SNARKJS), *map(str, args)], capture_output=True, text=True, timeout=300)

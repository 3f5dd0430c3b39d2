"""Shared test fixtures: one table of curves, and the snarkjs fixture folders."""
from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.curves import BLS12_381, BN254

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
CURVE_NAMES = ("bn128", "bls12381")
CIRCUITS = ("multiplier", "bits", "poseidon2", "chain_2e8", "chain_2e10")


@pytest.fixture(params=[BN254, BLS12_381], ids=lambda c: c.name)
def curve(request):
    return request.param


def enable_asyncio_debug() -> None:
    """STYLE: async tests run in debug mode (never-awaited coroutines, callbacks slower than 100 ms)."""
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = 0.1


def fixture_dir(curve_name: str, circuit: str) -> Path:
    return FIXTURES / curve_name / circuit


def snarkjs_verify(vk: Path, public: Path, proof: Path) -> bool:
    """The external verdict: snarkjs groth16 verify (through the project's fixture script)."""
    script = REPO / "tools" / "make_fixtures.sh"
    out = subprocess.run(["bash", str(script), "--verify", str(vk), str(public), str(proof)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "NODE_NO_WARNINGS": "1"})
    return out.returncode == 0


def snarkjs_verify_many(items: list[tuple[Path, list, dict]]) -> list[bool]:
    """snarkjs's verdict on many (vk.json, public signals, proof) at once: one node process, one curve build."""
    import json
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump([{"vk": str(vk), "public": public, "proof": proof} for vk, public, proof in items], fh)
        fh.flush()
        out = subprocess.run(["node", str(REPO / "tools" / "snarkjs_verify_many.mjs"), fh.name], cwd=REPO,
                             capture_output=True, text=True, timeout=300, env={**os.environ, "NODE_NO_WARNINGS": "1"})
    verdicts = out.stdout.split("\n")[:len(items)]
    if len(verdicts) != len(items):
        raise RuntimeError(f"snarkjs_verify_many: {out.stderr.strip()[-2000:]}")
    return [v == "ok" for v in verdicts]

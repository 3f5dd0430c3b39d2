"""The GPU development setup end to end: the key it makes equals the CPU path's byte for byte for
the same secrets, its points stay on the device, and the CUDA backend proves from them directly
(no upload) proofs that our verifier (and snarkjs, where node is installed) accepts, and rejects
with a public input changed."""
from __future__ import annotations

import shutil

import pytest

from pipeline.formats.snarkjs_json import write_proof, write_public, write_verification_key
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey_writer import write_zkey
from pipeline.groth16 import prove
from pipeline.groth16.verifier import verify
from pipeline.setup import DevSecrets, dev_setup_cpu
from pipeline.setup.adopt import adopt_dev_key
from pipeline.setup.gpu import GpuDevSetup
from pipeline.synth import generate_circuit
from tests.conftest import fixture_dir, snarkjs_verify
from tests.setup.conftest import SNARKJS, fixture_circuit

pytestmark = pytest.mark.gpu

PHASES = ("lagrange", "evaluations", "download_coefficients", "combine", "h_scalars", "tables", "points_a",
          "points_b1", "points_b2", "points_c", "points_ic", "points_h", "download_points", "total")


@pytest.fixture(scope="module")
def gpu_setup(cuda_backend):
    setup = GpuDevSetup(cuda_backend)
    yield setup
    setup.close()


def _prove_from_device_and_verify(cuda_backend, dev_key, witness):
    """A proof from the key's device points (adopted, no upload): our verifier accepts it and rejects
    it with the first public input changed. Returns (proof, the changed public signals)."""
    zkey = dev_key.zkey
    key = adopt_dev_key(cuda_backend, dev_key)
    try:
        proof = prove(cuda_backend, key, zkey, witness)
    finally:
        cuda_backend.unload_key(key)
    vk = zkey.verification_key()
    assert verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
    bad_public = (proof.public_signals[0] + 1,) + proof.public_signals[1:]
    assert not verify(vk, bad_public, proof.pi_a, proof.pi_b, proof.pi_c)
    return proof, bad_public


@pytest.mark.parametrize("name", ["multiplier", "chain_2e10"])
def test_gpu_key_equals_cpu_key_and_proves_from_the_device(gpu_setup, cuda_backend, gpu_curve, name, tmp_path):
    circuit = fixture_circuit(gpu_curve.name, name)
    secrets = DevSecrets.draw(gpu_curve, circuit.domain_size, seed=11)
    dev_key = gpu_setup.run(circuit, secrets)
    write_zkey(tmp_path / "gpu.zkey", dev_key.zkey)
    write_zkey(tmp_path / "cpu.zkey", dev_setup_cpu(circuit, secrets))
    assert (tmp_path / "gpu.zkey").read_bytes() == (tmp_path / "cpu.zkey").read_bytes()
    assert all(f"{phase}_ms" in dev_key.timings_ms for phase in PHASES)

    vk = dev_key.zkey.verification_key()
    witness = read_wtns(str(fixture_dir(gpu_curve.name, name) / "witness.wtns"))
    proof, bad_public = _prove_from_device_and_verify(cuda_backend, dev_key, witness)
    if SNARKJS.exists() and shutil.which("node"):
        write_verification_key(tmp_path / "vk.json", vk)
        write_proof(tmp_path / "proof.json", proof)
        write_public(tmp_path / "public.json", proof.public_signals)
        write_public(tmp_path / "bad.json", bad_public)
        assert snarkjs_verify(tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
        assert not snarkjs_verify(tmp_path / "vk.json", tmp_path / "bad.json", tmp_path / "proof.json")


def test_adopting_twice_or_on_another_backend_is_refused(gpu_setup, cuda_backend, gpu_curve):
    circuit = fixture_circuit(gpu_curve.name, "multiplier")
    dev_key = gpu_setup.run(circuit, DevSecrets.draw(gpu_curve, circuit.domain_size, seed=2))
    key = adopt_dev_key(cuda_backend, dev_key)
    try:
        with pytest.raises(ValueError, match="adopted already"):
            adopt_dev_key(cuda_backend, dev_key)
        with pytest.raises(ValueError, match="another backend"):
            adopt_dev_key(object(), dev_key)
    finally:
        cuda_backend.unload_key(key)


@pytest.mark.parametrize("log_n", [12, 16])
def test_seed_shaped_circuit_key_proves_and_verifies(gpu_setup, cuda_backend, gpu_curve, log_n):
    """pipeline.synth's circuits: the constant in almost every row, 254-term packing rows, 95% bits."""
    r1cs, witness = generate_circuit(log_n, 4, gpu_curve, seed=log_n)
    dev_key = gpu_setup.run(r1cs, DevSecrets.draw(gpu_curve, r1cs.domain_size, seed=log_n))
    _prove_from_device_and_verify(cuda_backend, dev_key, witness)

"""The CUDA backend's proofs of circuits no test had seen, brought back from the GPU host and kept in
bench/results (issue 16: proofs from the new kernels must still pass snarkjs), pass both verifiers, and
tools/verify_device_proofs.sh reports them as it must."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from pipeline.formats.snarkjs_json import read_proof, read_public, read_verification_key
from pipeline.groth16.verifier import verify
from tests.conftest import REPO

SAVED = REPO / "bench" / "results" / "snarkjs_unseen_s47"
NAMES = sorted(p.name.removesuffix("-proof.json") for p in SAVED.glob("*-proof.json"))
SCRIPT = REPO / "tools" / "verify_device_proofs.sh"


def _load(name):
    vk = read_verification_key(SAVED / "vk" / name / "vk.json")
    return vk, read_public(SAVED / f"{name}-public.json", vk.curve), read_proof(SAVED / f"{name}-proof.json", vk.curve)


def test_proofs_of_both_curves_were_kept():
    assert NAMES == ["chain_2e13_bls", "chain_2e13_bn"]


@pytest.mark.parametrize("name", NAMES)
def test_our_verifier_accepts_the_gpu_proof_and_rejects_a_changed_public_signal(name):
    vk, public, proof = _load(name)
    assert verify(vk, public, *proof)
    assert not verify(vk, [(public[0] + 1) % vk.curve.fr.modulus, *public[1:]], *proof)


def test_snarkjs_accepts_every_gpu_proof_and_rejects_each_changed():
    out = subprocess.run(["bash", str(SCRIPT), str(SAVED), str(SAVED / "vk")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(line for line in out.stdout.splitlines() if line.startswith("| chain")) == \
        [f"| {name} | accepted | rejected |" for name in NAMES]


def test_the_script_fails_a_proof_given_another_circuits_key(tmp_path):
    for suffix in ("-proof.json", "-public.json"):
        shutil.copy(SAVED / f"chain_2e13_bn{suffix}", tmp_path / f"chain_2e13_bn{suffix}")
    (tmp_path / "vk" / "chain_2e13_bn").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures" / "bn128" / "chain_2e8" / "vk.json", tmp_path / "vk" / "chain_2e13_bn")
    out = subprocess.run(["bash", str(SCRIPT), str(tmp_path), str(tmp_path / "vk")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 1 and "| chain_2e13_bn | REJECTED |" in out.stdout

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

RESULTS = REPO / "bench" / "results"
KEPT = {"snarkjs_unseen_s47": ["chain_2e13_bls", "chain_2e13_bn"],  # session by session, both curves each time
        "snarkjs_unseen_s48": ["chain_2e14_bls", "chain_2e14_bn"]}
SAVED = RESULTS / "snarkjs_unseen_s47"
SCRIPT = REPO / "tools" / "verify_device_proofs.sh"


def _names(folder: str) -> list[str]:
    return sorted(p.name.removesuffix("-proof.json") for p in (RESULTS / folder).glob("*-proof.json"))


def _load(folder: str, name: str):
    saved = RESULTS / folder
    vk = read_verification_key(saved / "vk" / name / "vk.json")
    return vk, read_public(saved / f"{name}-public.json", vk.curve), read_proof(saved / f"{name}-proof.json", vk.curve)


@pytest.mark.parametrize("folder", sorted(KEPT))
def test_proofs_of_both_curves_were_kept(folder):
    assert _names(folder) == KEPT[folder]


@pytest.mark.parametrize("folder,name", [(f, n) for f, names in sorted(KEPT.items()) for n in names])
def test_our_verifier_accepts_the_gpu_proof_and_rejects_a_changed_public_signal(folder, name):
    vk, public, proof = _load(folder, name)
    assert verify(vk, public, *proof)
    assert not verify(vk, [(public[0] + 1) % vk.curve.fr.modulus, *public[1:]], *proof)


@pytest.mark.parametrize("folder", sorted(KEPT))
def test_snarkjs_accepts_every_gpu_proof_and_rejects_each_changed(folder):
    saved = RESULTS / folder
    out = subprocess.run(["bash", str(SCRIPT), str(saved), str(saved / "vk")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(line for line in out.stdout.splitlines() if line.startswith("| chain")) == \
        [f"| {name} | accepted | rejected |" for name in KEPT[folder]]


def test_the_script_fails_a_proof_given_another_circuits_key(tmp_path):
    for suffix in ("-proof.json", "-public.json"):
        shutil.copy(SAVED / f"chain_2e13_bn{suffix}", tmp_path / f"chain_2e13_bn{suffix}")
    (tmp_path / "vk" / "chain_2e13_bn").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures" / "bn128" / "chain_2e8" / "vk.json", tmp_path / "vk" / "chain_2e13_bn")
    out = subprocess.run(["bash", str(SCRIPT), str(tmp_path), str(tmp_path / "vk")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 1 and "| chain_2e13_bn | REJECTED |" in out.stdout

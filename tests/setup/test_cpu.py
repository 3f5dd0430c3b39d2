"""Development keys from the CPU path: proofs from them verify with ours and with snarkjs (and a
changed public input is rejected by both), snarkjs reads them, and snarkjs's own prover works on them."""
from __future__ import annotations

import json

import pytest

from pipeline.backends.cpu import CpuBackend
from pipeline.formats.snarkjs_json import read_proof, read_public, verification_key_to_json, write_proof, write_public
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_zkey
from pipeline.groth16 import prove
from pipeline.groth16.verifier import verify
from pipeline.setup import DevSecrets, dev_setup_cpu
from tests.conftest import CURVE_NAMES, fixture_dir, snarkjs_verify
from tests.setup.conftest import dev_key, snarkjs


@pytest.fixture(scope="module", params=CURVE_NAMES)
def written_key(request, tmp_path_factory):
    """chain_2e8's development key, written as a .zkey and read back."""
    circuit, secrets, zkey = dev_key(request.param, "chain_2e8")
    path = tmp_path_factory.mktemp(request.param) / "dev.zkey"
    write_zkey(path, zkey)
    return request.param, zkey, path


@pytest.fixture(scope="module")
def snarkjs_vk(written_key):
    """``snarkjs zkey export verificationkey`` of the written key (its path)."""
    _, _, path = written_key
    out_path = path.with_name("vk.json")
    out = snarkjs("zkey", "export", "verificationkey", path, out_path)
    assert out.returncode == 0, out.stderr
    return out_path


def test_written_key_reads_back_equal(written_key):
    _, zkey, path = written_key
    back = read_zkey(path, check_points=True)
    for name in ("n_vars", "n_public", "domain_size", "alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2", "ic"):
        assert getattr(back, name) == getattr(zkey, name), name
    for name in ("coeff_matrix", "coeff_constraint", "coeff_signal", "coeff_values_stored",
                 "points_a", "points_b1", "points_b2", "points_c", "points_h"):
        assert (getattr(back, name) == getattr(zkey, name)).all(), name


def test_snarkjs_exports_our_verification_key(written_key, snarkjs_vk):
    _, zkey, _ = written_key
    assert json.loads(snarkjs_vk.read_text()) == verification_key_to_json(zkey.verification_key())


def test_proof_verifies_with_ours_and_snarkjs_and_a_changed_public_input_is_rejected(written_key, snarkjs_vk,
                                                                                     tmp_path):
    curve_name, zkey, _ = written_key
    witness = read_wtns(str(fixture_dir(curve_name, "chain_2e8") / "witness.wtns"))
    backend = CpuBackend()
    proof = prove(backend, backend.load_key(zkey), zkey, witness)
    vk = zkey.verification_key()
    assert verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", proof.public_signals)
    assert snarkjs_verify(snarkjs_vk, tmp_path / "public.json", tmp_path / "proof.json")

    bad_public = (proof.public_signals[0] + 1,) + proof.public_signals[1:]
    assert not verify(vk, bad_public, proof.pi_a, proof.pi_b, proof.pi_c)
    write_public(tmp_path / "public_bad.json", bad_public)
    assert not snarkjs_verify(snarkjs_vk, tmp_path / "public_bad.json", tmp_path / "proof.json")


def test_snarkjs_prover_on_our_key_gives_a_proof_our_verifier_accepts(written_key, tmp_path):
    """snarkjs's own reduction (odd coset, no division by Z) against our H points."""
    curve_name, zkey, path = written_key
    wtns = fixture_dir(curve_name, "chain_2e8") / "witness.wtns"
    out = snarkjs("groth16", "prove", path, wtns, tmp_path / "proof.json", tmp_path / "public.json")
    assert out.returncode == 0, out.stderr
    pi_a, pi_b, pi_c = read_proof(tmp_path / "proof.json", zkey.curve)
    assert verify(zkey.verification_key(), read_public(tmp_path / "public.json", zkey.curve), pi_a, pi_b, pi_c)


def test_same_seed_gives_the_same_key_and_another_seed_another():
    circuit, _, first = dev_key("bn128", "multiplier", seed=1)
    _, _, other = dev_key("bn128", "multiplier", seed=2)
    fresh = dev_setup_cpu(circuit, DevSecrets.draw(circuit.curve, circuit.domain_size, seed=1))
    assert (fresh.points_h == first.points_h).all() and fresh.ic == first.ic
    assert not (other.points_h == first.points_h).all()

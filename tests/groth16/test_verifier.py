"""Our verifier accepts snarkjs's own proofs and rejects tampered or malformed ones."""
from __future__ import annotations

import pytest

from pipeline.formats.snarkjs_json import read_proof, read_public, read_verification_key
from pipeline.groth16.verifier import verify
from tests.conftest import CIRCUITS, CURVE_NAMES, fixture_dir


def _load(curve_name, circuit, proof="proof.json", public="public.json"):
    folder = fixture_dir(curve_name, circuit)
    vk = read_verification_key(folder / "vk.json")
    return vk, read_public(folder / public, vk.curve), read_proof(folder / proof, vk.curve)


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("circuit", CIRCUITS)
def test_snarkjs_proof_is_accepted(curve_name, circuit):
    vk, public, proof = _load(curve_name, circuit)
    assert verify(vk, public, *proof)


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_snarkjs_tampered_fixtures_are_rejected(curve_name):
    vk, public, proof = _load(curve_name, "chain_2e8", public="public_bad.json")
    assert not verify(vk, public, *proof)
    vk, public, proof = _load(curve_name, "chain_2e8", proof="proof_bad.json")
    assert not verify(vk, public, *proof)


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_malformed_proofs_are_rejected_with_a_reason(curve_name):
    vk, public, (pi_a, pi_b, pi_c) = _load(curve_name, "multiplier")
    curve = vk.curve
    off_curve = (pi_a[0], (pi_a[1] + 1) % curve.fq.modulus)
    verdict = verify(vk, public, off_curve, pi_b, pi_c)
    assert not verdict and "pi_a is not on" in verdict.reason
    verdict = verify(vk, list(public) + [1], pi_a, pi_b, pi_c)
    assert not verdict and "public signals" in verdict.reason
    verdict = verify(vk, [curve.fr.modulus], pi_a, pi_b, pi_c)
    assert not verdict and "below the scalar field" in verdict.reason

"""Proofs from the reference prover verify with our verifier and with snarkjs, on both curves."""
from __future__ import annotations

import pytest

from pipeline.backends.cpu import CpuBackend
from pipeline.formats.snarkjs_json import write_proof, write_public
from pipeline.formats.types import VerificationKey
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16 import Blinding, WitnessMismatch, prove
from pipeline.groth16.verifier import verify
from tests.conftest import CIRCUITS, CURVE_NAMES, fixture_dir, snarkjs_verify

_KEYS: dict = {}


def _load(curve_name: str, circuit: str):
    """Read and decode each fixture key once per session (the CPU backend's resident form)."""
    if (curve_name, circuit) not in _KEYS:
        folder = fixture_dir(curve_name, circuit)
        zkey = read_zkey(str(folder / "circuit_final.zkey"))
        backend = CpuBackend()
        _KEYS[curve_name, circuit] = (zkey, backend, backend.load_key(zkey))
    return _KEYS[curve_name, circuit]


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
@pytest.mark.parametrize("circuit", CIRCUITS)
def test_proof_verifies_with_ours_and_snarkjs_and_tampering_is_rejected(curve_name, circuit, tmp_path):
    folder = fixture_dir(curve_name, circuit)
    zkey, backend, key = _load(curve_name, circuit)
    witness = read_wtns(str(folder / "witness.wtns"))
    proof = prove(backend, key, zkey, witness)
    vk = VerificationKey.from_zkey(zkey)

    assert verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
    write_proof(tmp_path / "proof.json", proof)
    write_public(tmp_path / "public.json", proof.public_signals)
    assert snarkjs_verify(folder / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")

    # the same proof against a wrong public input: rejected by both
    bad_public = (proof.public_signals[0] + 1,) + proof.public_signals[1:]
    assert not verify(vk, bad_public, proof.pi_a, proof.pi_b, proof.pi_c)
    write_public(tmp_path / "public_bad.json", bad_public)
    assert not snarkjs_verify(folder / "vk.json", tmp_path / "public_bad.json", tmp_path / "proof.json")


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_public_signals_match_snarkjs(curve_name):
    import json

    folder = fixture_dir(curve_name, "chain_2e8")
    zkey, backend, key = _load(curve_name, "chain_2e8")
    proof = prove(backend, key, zkey, read_wtns(str(folder / "witness.wtns")))
    assert [str(v) for v in proof.public_signals] == json.loads((folder / "public.json").read_text())


def test_fixed_blinding_gives_a_deterministic_proof_and_fresh_blinding_differs():
    folder = fixture_dir("bn128", "multiplier")
    zkey, backend, key = _load("bn128", "multiplier")
    witness = read_wtns(str(folder / "witness.wtns"))
    first = prove(backend, key, zkey, witness, Blinding(5, 7))
    again = prove(backend, key, zkey, witness, Blinding(5, 7))
    fresh = prove(backend, key, zkey, witness)
    assert (first.pi_a, first.pi_b, first.pi_c) == (again.pi_a, again.pi_b, again.pi_c)
    assert fresh.pi_a != first.pi_a


def test_witness_of_another_circuit_is_refused():
    zkey, backend, key = _load("bn128", "chain_2e8")
    other = read_wtns(str(fixture_dir("bn128", "multiplier") / "witness.wtns"))
    with pytest.raises(WitnessMismatch, match="expects 244"):
        prove(backend, key, zkey, other)


def test_witness_of_another_curve_is_refused():
    zkey, backend, key = _load("bn128", "multiplier")
    other = read_wtns(str(fixture_dir("bls12381", "multiplier") / "witness.wtns"))
    with pytest.raises(WitnessMismatch, match="bls12381"):
        prove(backend, key, zkey, other)


@pytest.mark.parametrize("curve_name", CURVE_NAMES)
def test_assemble_with_delta_tables_equals_the_textbook_formula(curve_name):
    """The engine's assemble (fixed-base tables, shared doublings) against the formula as written."""
    import random

    from pipeline.backends.protocol import MsmResults
    from pipeline.groth16.prover import DeltaTables, assemble

    zkey = read_zkey(fixture_dir(curve_name, "multiplier") / "circuit_final.zkey")
    g1, g2, order = zkey.curve.g1, zkey.curve.g2, zkey.curve.fr.modulus
    rng = random.Random(curve_name)

    def g1_point():
        return g1.mul(g1.from_affine(g1.generator), rng.randrange(order))

    msms = MsmResults(a_g1=g1_point(), b_g1=g1_point(), c_g1=g1_point(), h_g1=g1_point(),
                      b_g2=g2.mul(g2.from_affine(g2.generator), rng.randrange(order)))
    tables = DeltaTables.for_key(zkey)
    for r, s in [(rng.randrange(order), rng.randrange(order)), (0, 0), (1, order - 1)]:
        delta1 = g1.from_affine(zkey.delta1)
        pi_a = g1.add(g1.add(msms.a_g1, g1.from_affine(zkey.alpha1)), g1.mul(delta1, r))
        b1 = g1.add(g1.add(msms.b_g1, g1.from_affine(zkey.beta1)), g1.mul(delta1, s))
        pi_b = g2.add(g2.add(msms.b_g2, g2.from_affine(zkey.beta2)), g2.mul(g2.from_affine(zkey.delta2), s))
        pi_c = g1.add(g1.add(g1.add(msms.c_g1, msms.h_g1), g1.mul(pi_a, s)),
                      g1.add(g1.mul(b1, r), g1.mul(delta1, (-r * s) % order)))
        want = (g1.to_affine(pi_a), g2.to_affine(pi_b), g1.to_affine(pi_c))
        assert assemble(zkey, msms, Blinding(r, s), tables=tables) == want
        assert assemble(zkey, msms, Blinding(r, s)) == want

"""The engine with the key cache (pipeline.keycache): a key prepared at the first load and opened
from its cache at the next proves as the plain parse does, and the status says where it came from."""
from __future__ import annotations

import shutil

import orjson
import pytest

from pipeline.engine import Engine, EngineConfig
from pipeline.formats.types import VerificationKey
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.verifier import verify
from tests.conftest import fixture_dir, snarkjs_verify
from tests.engine.conftest import key_files, wtns

CPU = dict(backend="cpu", gpu_workers_per_device=1, synthesize_workers=1, epilogue_workers=1)


def copied_key(tmp_path, curve: str, circuit: str) -> dict:
    files = {}
    for name, path in key_files(curve, circuit).items():
        files[name] = tmp_path / path.name
        shutil.copyfile(path, files[name])
    return files


async def prove_once(config: EngineConfig, files: dict, witness: str):
    async with Engine(config) as engine:
        engine.register_key("k", **files)
        (proof,) = await (await engine.submit("k", [witness])).result()
        return proof, engine.status()["keys"]["keys"]["k"]["prepared"]


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
async def test_proofs_from_a_prepared_and_from_a_cached_key_verify(curve, tmp_path):
    files = copied_key(tmp_path, curve, "chain_2e8")
    config = EngineConfig(**CPU, key_cache_dir=str(tmp_path / "cache"))
    vk = VerificationKey.from_zkey(read_zkey(files["zkey_path"]))
    for expected_source in ("built", "cache"):
        proof, prepared = await prove_once(config, files, wtns(curve, "chain_2e8"))
        assert prepared["source"] == expected_source and prepared["cache_folder"].startswith(str(tmp_path / "cache"))
        assert verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
        wrong = (proof.public_signals[0] + 1,) + tuple(proof.public_signals[1:])
        assert not verify(vk, wrong, proof.pi_a, proof.pi_b, proof.pi_c)
    (tmp_path / "proof.json").write_bytes(orjson.dumps(proof.proof_json))
    (tmp_path / "public.json").write_bytes(orjson.dumps(proof.public_json))
    vk_json = fixture_dir(curve, "chain_2e8") / "vk.json"
    assert snarkjs_verify(vk_json, tmp_path / "public.json", tmp_path / "proof.json")


async def test_the_cache_is_beside_the_key_by_default_and_can_be_turned_off(tmp_path):
    files = copied_key(tmp_path, "bn128", "multiplier")
    _, prepared = await prove_once(EngineConfig(**CPU), files, wtns("bn128", "multiplier"))
    assert prepared["source"] == "built" and prepared["cache_folder"].startswith(str(tmp_path / ".zkpipe-keycache"))
    proof, prepared = await prove_once(EngineConfig(**CPU, key_cache=False), files, wtns("bn128", "multiplier"))
    assert prepared["source"] == "uncached" and prepared["reason"] == "the cache is off"
    assert proof.public_json == ["33"]


def test_key_cache_settings_are_checked():
    with pytest.raises(ValueError, match="key_cache must be true or false"):
        EngineConfig(key_cache="yes")
    with pytest.raises(ValueError, match="key_cache_dir must be a folder path"):
        EngineConfig(key_cache_dir="")

"""Server test helpers: a keys folder from the snarkjs fixtures, configs, witnesses, proof checks."""
from __future__ import annotations

from pathlib import Path


from pipeline.config import Config, ServerConfig
from pipeline.curves import curve_by_name
from pipeline.formats.snarkjs_json import proof_from_json, public_from_json, read_verification_key
from pipeline.formats.wtns import write_wtns
from pipeline.groth16.verifier import verify
from tests.conftest import FIXTURES

# key id -> fixture folder (curve, circuit)
TEST_KEYS = {
    "mult_bn128": ("bn128", "multiplier"),
    "mult_bls12381": ("bls12381", "multiplier"),
    "chain_bn128": ("bn128", "chain_2e8"),
    "bare_bls12381": ("bls12381", "multiplier"),  # a zkey alone: no .r1cs, no .wasm
}
TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ENGINE_SETTINGS = {"backend": "cpu", "synthesize_workers": 1, "epilogue_workers": 1, "g2_msm_workers": 1}


def build_keys_dir(root: Path) -> Path:
    """NAME.zkey / NAME.r1cs / NAME.wasm / NAME.sym links to the fixtures (bare_bls12381: the zkey only)."""
    root.mkdir(parents=True, exist_ok=True)
    for key_id, (curve, circuit) in TEST_KEYS.items():
        src = FIXTURES / curve / circuit
        (root / f"{key_id}.zkey").symlink_to(src / "circuit_final.zkey")
        if key_id != "bare_bls12381":
            (root / f"{key_id}.r1cs").symlink_to(src / "circuit.r1cs")
            (root / f"{key_id}.wasm").symlink_to(src / "circuit.wasm")
            (root / f"{key_id}.sym").symlink_to(src / "circuit.sym")
    return root


def make_config(tmp_path: Path, **server) -> Config:
    keys = tmp_path / "keys"
    if not keys.exists():
        build_keys_dir(keys)
    settings = {"keys_dir": str(keys), "state_dir": str(tmp_path / "state"), "auth_token": TOKEN,
                "janitor_interval_s": 3600.0, **server}
    return Config(server=ServerConfig(**settings), engine=dict(ENGINE_SETTINGS))


def multiplier_witness(path: Path, curve_name: str, a: int, b: int) -> Path:
    """A multiplier witness [1, a*b, a, b]: its one public signal tells partitions apart."""
    curve = curve_by_name(curve_name)
    write_wtns(path, curve, [1, a * b % curve.fr.modulus, a, b])
    return path


def vk_for(key_id: str):
    curve, circuit = TEST_KEYS[key_id]
    return read_verification_key(FIXTURES / curve / circuit / "vk.json")


def check_proof(vk, item: dict) -> bool:
    """Our verifier's verdict on one {"proof", "public_signals"} entry of a job."""
    pi = proof_from_json(item["proof"], vk.curve)
    public = public_from_json(item["public_signals"], vk.curve)
    return bool(verify(vk, public, pi.pi_a, pi.pi_b, pi.pi_c))



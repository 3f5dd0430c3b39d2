"""Keys through the key cache on the GPU: load_key from a prepared and from a cached key gives the
same device arrays and the same proof as from the plain zkey; the staged upload copies big and
unaligned (mapped) arrays bit for bit."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.prover import Blinding, prove
from pipeline.keycache import KeyCacheSettings, prepare_key
from tests.conftest import fixture_dir

pytestmark = pytest.mark.gpu


def device_bytes(backend, buf) -> np.ndarray:
    return buf.download(np.zeros(buf.nbytes, dtype=np.uint8), backend.stream)


def key_bytes(backend, name: str, buf) -> np.ndarray:
    """What the kernels read of a key buffer: a long-row list is ``nbytes // 4`` entries (csr_stream),
    and an empty one a 1-byte buffer whose byte is never written nor read."""
    data = device_bytes(backend, buf)
    return data[: buf.nbytes // 4 * 4] if name.endswith("_long") else data


@pytest.mark.parametrize("circuit", ["bits", "chain_2e10"])
def test_load_key_from_the_cache_gives_the_proof_of_the_zkey(cuda_backend, gpu_curve, circuit, tmp_path):
    src = fixture_dir(gpu_curve.name, circuit)
    path = tmp_path / "circuit_final.zkey"
    shutil.copyfile(src / "circuit_final.zkey", path)
    witness = read_wtns(src / "witness.wtns")
    blinding = Blinding(r=424242, s=171717)
    settings = KeyCacheSettings(cache_dir=str(tmp_path / "cache"))
    keys = [("zkey", read_zkey(path))] + [(p.source, p.zkey) for p in (prepare_key(path, settings),
                                                                          prepare_key(path, settings))]
    assert [source for source, _ in keys] == ["zkey", "built", "cache"]
    proofs, arrays = [], []
    for _, zkey in keys:
        key = cuda_backend.load_key(zkey)
        try:
            buffers = {**key.d_points, **key.d_csr}
            arrays.append({name: key_bytes(cuda_backend, name, buf) for name, buf in buffers.items()})
            proof = prove(cuda_backend, key, zkey, witness, blinding)
        finally:
            cuda_backend.unload_key(key)
        proofs.append((proof.pi_a, proof.pi_b, proof.pi_c, proof.public_signals))
    assert proofs[1] == proofs[0] and proofs[2] == proofs[0]
    for other in arrays[1:]:
        assert other.keys() == arrays[0].keys()
        for name in arrays[0]:
            assert np.array_equal(other[name], arrays[0][name]), name


def test_staged_upload_copies_big_and_mapped_unaligned_arrays_exactly(cuda_backend, tmp_path):
    from pipeline.backends.cuda.staged_upload import PIECE_BYTES

    rng = np.random.default_rng(7)
    big = rng.integers(0, 2**64, size=(5 * PIECE_BYTES // 16 + 3, 2), dtype=np.uint64)  # 5 pieces and a bit
    raw = tmp_path / "mapped.bin"
    big.tofile(raw)
    with open(raw, "ab") as fh:
        fh.write(b"\0" * 4)
    mapped = np.memmap(raw, dtype="<u8", mode="r", offset=4, shape=(big.shape[0] - 1, 2))  # not 8-byte aligned
    for host in (big, mapped):
        with cuda_backend.upload_key_array(host, "staged test") as buf:
            assert np.array_equal(device_bytes(cuda_backend, buf), np.asarray(host).reshape(-1).view(np.uint8))

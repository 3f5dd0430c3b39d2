"""The engine on the CUDA backend: proofs of several partitions verify, the GPU lock holds one
partition at a time, and the epilogue of one overlaps the next one's gpu stage.

Plain ``asyncio.run`` rather than pytest-asyncio: the GPU host has no such plugin.
"""
from __future__ import annotations

import asyncio

import pytest

from pipeline.engine import Engine, EngineConfig
from pipeline.formats.types import VerificationKey
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.verifier import verify
from tests.conftest import fixture_dir

pytestmark = pytest.mark.gpu


def overlaps(a, b) -> bool:
    return a.start < b.end and b.start < a.end


async def _prove_on_gpu(curve: str, circuit: str, partitions: int, devices=(0,), jobs: int = 1):
    folder = fixture_dir(curve, circuit)
    config = EngineConfig(backend="cuda", devices=devices, gpu_workers_per_device=2, epilogue_workers=2,
                          verify_proofs=False)
    async with Engine(config) as engine:
        engine.register_key("k", zkey_path=folder / "circuit_final.zkey")
        await engine.preload("k")  # on every device: the test is about spreading work, not key loading
        submitted = [await engine.submit("k", [str(folder / "witness.wtns")] * partitions) for _ in range(jobs)]
        proofs = [p for job in submitted for p in await job.result()]
        return proofs, engine.timeline(), engine.status()


def assert_verify(curve: str, proofs) -> None:
    vk = VerificationKey.from_zkey(read_zkey(fixture_dir(curve, "chain_2e10") / "circuit_final.zkey"))
    for p in proofs:
        assert verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c)
    assert not verify(vk, (p.public_signals[0] + 1,) + tuple(p.public_signals[1:]), p.pi_a, p.pi_b, p.pi_c)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_engine_on_cuda_proves_verifying_partitions_one_at_a_time_on_the_gpu(cuda_backend, curve):
    proofs, timeline, status = asyncio.run(_prove_on_gpu(curve, "chain_2e10", 4))
    assert_verify(curve, proofs)
    gpu = sorted((iv for iv in timeline if iv.stage == "gpu"), key=lambda iv: iv.start)
    assert len(gpu) == 4 and all(a.end <= b.start for a, b in zip(gpu, gpu[1:]))
    epilogues = [iv for iv in timeline if iv.stage == "epilogue"]
    assert any(overlaps(e, g) for e in epilogues for g in gpu if g.partition != e.partition), timeline
    assert [d["backend"] for d in status["devices"]] == ["cuda"]  # no silent CPU fallback
    staging = status["staging"]  # the witnesses went up from pinned buffers, all given back
    assert staging["enabled"] and staging["pinned_total"] >= 1 and staging["in_use"] == 0


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_engine_spreads_partitions_over_every_gpu_of_the_host(cuda_backend, curve):
    from pipeline.backends.cuda.device import device_count

    count = device_count()
    if count < 2:
        pytest.skip(f"needs two GPUs; this host has {count} (run it on nvidia-h200-x2)")
    proofs, timeline, status = asyncio.run(_prove_on_gpu(curve, "chain_2e10", 6, devices=tuple(range(count)), jobs=3))
    assert len(proofs) == 18
    assert_verify(curve, proofs)
    gpu = [iv for iv in timeline if iv.stage == "gpu"]
    per_device = {d: sorted((iv for iv in gpu if iv.device == d), key=lambda iv: iv.start) for d in range(count)}
    assert all(per_device[d] for d in range(count)), {d: len(v) for d, v in per_device.items()}  # every GPU worked
    for intervals in per_device.values():  # each device's lock still holds one partition at a time
        assert all(a.end <= b.start for a, b in zip(intervals, intervals[1:]))
    assert any(overlaps(a, b) for a in per_device[0] for b in per_device[1])  # and the devices ran side by side
    assert [d["ordinal"] for d in status["devices"]] == list(range(count))
    assert {d["backend"] for d in status["devices"]} == {"cuda"}
    assert all(d["vram"]["used_bytes"] > 0 for d in status["devices"])  # the key was loaded where work went


def test_engine_on_cuda_reports_its_backend_choice_and_gpu_metrics_in_seconds(cuda_backend):
    async def run():
        folder = fixture_dir("bn128", "chain_2e10")
        async with Engine(EngineConfig(backend="auto", devices=(0,))) as engine:
            engine.register_key("k", zkey_path=folder / "circuit_final.zkey")
            await (await engine.submit("k", [str(folder / "witness.wtns")] * 2)).result()
            return engine.status(), engine.prometheus()

    status, text = asyncio.run(run())
    choice = status["devices"][0]["backend_choice"]
    assert choice["requested"] == "auto" and choice["chosen"] == "cuda"
    assert choice["reason"].startswith("auto: a GPU answered, device 0: ")
    assert 'zkpipe_engine_partition_stage_seconds_count{stage="gpu"} 2.0' in text
    for step in ("h", "msm"):  # the CUDA backend's split of the gpu stage
        assert f'zkpipe_engine_gpu_step_seconds_count{{step="{step}"}} 2.0' in text
    held = [line for line in text.splitlines() if line.startswith('zkpipe_engine_gpu_lock_held_seconds_total{device="0"}')]
    assert held and float(held[0].split()[-1]) > 0


async def _prove_from_an_adopted_dev_key(cuda_backend, curve, log_n: int, partitions: int, download_points=True):
    from pipeline.setup.adopt import adopt_dev_key
    from tests.gpu.helpers import seed_dev_key

    dev_key, witness = seed_dev_key(cuda_backend, curve, log_n, download_points=download_points)
    config = EngineConfig(backend="cuda", devices=(0,), gpu_workers_per_device=2)
    async with Engine(config, backend_factory=lambda ordinal: cuda_backend) as engine:
        engine.register_key("dev", zkey=dev_key.zkey)
        await engine.adopt_device_key("dev", adopt_dev_key(cuda_backend, dev_key))
        proofs = await (await engine.submit("dev", [witness] * partitions)).result()
        status = engine.status()
    return dev_key.zkey, proofs, status


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_development_key_adopted_from_the_setup_proves_through_the_engine_without_an_upload(cuda_backend, curve):
    """bench/seed_scale.py's path at a small size: the setup's device points become the engine's
    copy (Engine.adopt_device_key), with the fixed-base tables its room allows built onto them; the
    partitions' proofs verify and reject a changed public input."""
    from pipeline.curves import curve_by_name

    zkey, proofs, status = asyncio.run(_prove_from_an_adopted_dev_key(cuda_backend, curve_by_name(curve), 14, 3))
    vk = VerificationKey.from_zkey(zkey)
    for p in proofs:
        assert verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c)
    assert not verify(vk, (p.public_signals[0] + 1,) + tuple(p.public_signals[1:]), p.pi_a, p.pi_b, p.pi_c)
    assert status["keys"]["loads"] == 1  # the host level only: the device copy was adopted, not uploaded
    assert status["devices"][0]["vram"]["used_bytes"] > 0
    # the tables an upload would have had were built onto the adopted points (Backend.add_fixed_bases)
    from pipeline.backends.cuda.fixed_base import FIXED_BASE_ORDER
    assert status["keys"]["keys"]["dev"]["layout"]["0"]["fixed_base_sections"] == list(FIXED_BASE_ORDER)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_development_key_whose_points_stay_on_the_device_proves_and_cannot_be_uploaded_again(cuda_backend, curve):
    """GpuDevSetup.run(download_points=False), bench/seed_scale.py --device-points-only: the host key holds
    placeholders (Groth16Zkey.points_on_host False, its host bytes without the points); adopted where it was made,
    its partitions' proofs verify and reject a changed public input; once the engine has let it go, an upload
    of it is refused by name (PointsNotOnHost), leaving nothing allocated."""
    from pipeline.curves import curve_by_name
    from pipeline.formats.types import PointsNotOnHost

    zkey, proofs, _ = asyncio.run(_prove_from_an_adopted_dev_key(cuda_backend, curve_by_name(curve), 12, 2,
                                                                 download_points=False))
    assert not zkey.points_on_host and zkey.host_bytes() < zkey.points_a.nbytes + zkey.coeff_values_stored.nbytes
    vk = VerificationKey.from_zkey(zkey)
    for p in proofs:
        assert verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c)
    assert not verify(vk, (p.public_signals[0] + 1,) + tuple(p.public_signals[1:]), p.pi_a, p.pi_b, p.pi_c)
    used = cuda_backend.allocator.in_use_bytes  # the engine unloaded the adopted copy when it stopped
    with pytest.raises(PointsNotOnHost, match="only on the device"):
        cuda_backend.load_key(zkey)
    assert cuda_backend.allocator.in_use_bytes == used


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_key_with_fixed_base_tables_proves_verifying_partitions_through_the_engine(cuda_backend, curve):
    """CudaOptions.msm_fixed_base: the key store places a small key with every section's table (its VRAM
    budget has the room), the status says so, and the partitions' proofs verify."""
    from pipeline.backends.cuda.fixed_base import FIXED_BASE_ORDER
    from pipeline.backends.cuda.options import CudaOptions

    async def run():
        folder = fixture_dir(curve, "chain_2e10")
        config = EngineConfig(backend="cuda", gpu_workers_per_device=2, verify_proofs=False,
                              cuda=CudaOptions(msm_fixed_base=True))
        async with Engine(config) as engine:
            engine.register_key("k", zkey_path=folder / "circuit_final.zkey")
            job = await engine.submit("k", [str(folder / "witness.wtns")] * 3)
            return await job.result(), engine.status()

    proofs, status = asyncio.run(run())
    assert_verify(curve, proofs)
    layout = status["keys"]["keys"]["k"]["layout"]["0"]
    # every section's table, in the order "auto" offered them for the chain's witness (placement.table_order)
    assert sorted(layout["fixed_base_sections"]) == sorted(FIXED_BASE_ORDER) and status["keys"]["fixed_base_drops"] == 0
    assert layout["fixed_base_sections"] == layout["fixed_base_order"]
    assert layout["fixed_base_sets"] == [1] * len(FIXED_BASE_ORDER)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_second_key_takes_the_room_of_the_first_keys_tables_and_both_keys_prove(cuda_backend, curve):
    """The key store under a VRAM budget where key a (chain_2e8) fits with every table, but key b
    (chain_2e10, plain) and its partition's scratch fit beside a only without them: a's tables are
    dropped (its copy stays), and the proofs of both keys, a's before and after the drop, verify."""
    from dataclasses import replace

    from pipeline.backends.cuda.fixed_base import FIXED_BASE_ORDER

    folders = {"a": fixture_dir(curve, "chain_2e8"), "b": fixture_dir(curve, "chain_2e10")}
    zkeys = {k: read_zkey(f / "circuit_final.zkey") for k, f in folders.items()}
    msm = cuda_backend.runtime(zkeys["a"].curve).msm
    saved, cuda_backend.fixed_base = cuda_backend.fixed_base, True
    try:
        a_tables = cuda_backend.place_key(zkeys["a"], None, 1 << 40)
    finally:
        cuda_backend.fixed_base = saved
    b_need = cuda_backend.key_device_bytes(zkeys["b"]) + cuda_backend._resident_scratch_bytes(zkeys["b"], msm)
    low, high = cuda_backend.key_device_bytes(zkeys["a"]) + b_need, a_tables.device_bytes + b_need
    budget = (low + high) // 2
    assert a_tables.fixed_base == FIXED_BASE_ORDER and low < budget < high

    async def main():
        config = EngineConfig(backend="cuda", devices=(0,), gpu_workers_per_device=2, vram_budget_bytes=budget,
                              cuda=replace(cuda_backend.options, msm_fixed_base=True))
        async with Engine(config) as engine:
            for k, f in folders.items():
                engine.register_key(k, zkey_path=f / "circuit_final.zkey")

            async def prove(k):
                return k, await (await engine.submit(k, [str(folders[k] / "witness.wtns")] * 2)).result()
            first = await prove("a")
            before = engine.status()["keys"]
            rest = [await prove("b"), await prove("a")]
            return [first, *rest], before, engine.status()

    proved, before, status = asyncio.run(main())
    assert sorted(before["keys"]["a"]["layout"]["0"]["fixed_base_sections"]) == sorted(FIXED_BASE_ORDER)
    keys = status["keys"]
    assert keys["fixed_base_drops"] == 1 and keys["evictions"] == 0
    assert keys["keys"]["a"]["layout"]["0"]["fixed_base_sections"] == []
    assert keys["keys"]["b"]["layout"]["0"]["fixed_base_sections"] == []
    assert keys["keys"]["a"]["devices"] == [0] and keys["keys"]["b"]["devices"] == [0]
    assert status["devices"][0]["vram"]["peak_bytes"] <= budget
    for k, proofs in proved:
        vk = VerificationKey.from_zkey(zkeys[k])
        assert all(verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c) for p in proofs)

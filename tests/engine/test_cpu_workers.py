"""The CPU G2 MSM pool: a worker process that dies is replaced and its MSM runs once more; a
partition that leaves while its G2 MSM still runs keeps its host budget until that MSM ends."""
from __future__ import annotations

import asyncio
import functools
import os
import signal
import threading
import time

import pytest

import pipeline.engine.pipeline as engine_pipeline
from pipeline.engine import Engine, EngineConfig, JobCancelled, JobFailed
from pipeline.engine import stages
from pipeline.engine.cpu_workers import g2_msm_from_path
from tests.engine.conftest import factory_for, key_files, settle, until, wtns
from tests.engine.g2_worker_fakes import die, hang_on_first_call

WTNS = wtns("bn128", "multiplier")
G2_IN_PROCESSES = dict(backend="cpu", gpu_workers_per_device=1, synthesize_workers=1, epilogue_workers=1,
                       g2_msm_placement="cpu", g2_msm_executor="process", g2_msm_workers=1, verify_proofs=True)


def kill_g2_workers(engine: Engine) -> list[int]:
    pids = list(engine._g2_workers.executor._processes)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return pids


async def test_a_g2_worker_killed_mid_msm_is_replaced_and_the_msm_runs_again(tmp_path, monkeypatch):
    marker = tmp_path / "g2-started"
    monkeypatch.setattr(engine_pipeline, "g2_msm_from_path", functools.partial(hang_on_first_call, str(marker)))
    async with Engine(EngineConfig(**G2_IN_PROCESSES)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [WTNS])
        await until(marker.exists, "the G2 MSM to start in its worker process")
        assert kill_g2_workers(engine)
        (proof,) = await job.result()  # retried once on a fresh pool
        later = await (await engine.submit("mult", [WTNS] * 2)).result()
        status = engine.status()
    assert proof.verified and all(p.verified for p in later)
    assert status["counters"]["g2_msm_pool_rebuilds"] == 1
    assert status["host_budget"]["used_bytes"] == 0 and status["partitions_in_flight"] == 0


async def test_a_g2_worker_killed_while_idle_is_replaced_at_the_next_msm():
    async with Engine(EngineConfig(**G2_IN_PROCESSES)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS])).result()
        pool = engine._g2_workers.executor
        kill_g2_workers(engine)
        await until(lambda: pool._broken, "the pool to notice its dead worker")
        proofs = await (await engine.submit("mult", [WTNS] * 2)).result()
        status = engine.status()
    assert all(p.verified for p in proofs) and status["counters"]["g2_msm_pool_rebuilds"] == 1


async def test_a_g2_msm_whose_worker_dies_twice_fails_only_its_job_and_the_engine_keeps_serving(monkeypatch):
    async with Engine(EngineConfig(**G2_IN_PROCESSES)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        monkeypatch.setattr(engine_pipeline, "g2_msm_from_path", die)
        doomed = await engine.submit("mult", [WTNS])
        with pytest.raises(JobFailed, match=r"partition 0 \(epilogue\): G2WorkerDied: .*died twice"):
            await doomed.result()
        monkeypatch.setattr(engine_pipeline, "g2_msm_from_path", g2_msm_from_path)
        proofs = await (await engine.submit("mult", [WTNS] * 2)).result()
        await settle(engine)
        status = engine.status()
    assert all(p.verified for p in proofs)
    assert status["counters"]["g2_msm_pool_rebuilds"] == 2
    assert status["host_budget"]["used_bytes"] == 0 and status["keys"]["keys"]["mult"]["refs"] == 0


@pytest.mark.parametrize("how", ["cancelled", "failed"])
async def test_a_partition_that_leaves_keeps_its_host_budget_until_its_running_g2_msm_ends(fake_device, monkeypatch,
                                                                                           how):
    """Cancelling a running executor call does not stop it: the MSM still holds the partition's
    scalars and reads its key, so the budget, slot and key reference wait for it to end."""
    allocator, backend = fake_device
    g2_running, g2_may_end = threading.Event(), threading.Event()

    def blocked_g2_msm(key, staged):
        g2_running.set()
        assert g2_may_end.wait(30), "the test never let the G2 MSM end"
        infinity = key.zkey.curve.g2.infinity
        return infinity, time.perf_counter(), time.perf_counter()

    monkeypatch.setattr(stages, "g2_msm_cpu", blocked_g2_msm)
    loop = asyncio.get_running_loop()
    target = {}

    def in_kernels():  # on the device thread, once the G2 MSM surely runs
        assert g2_running.wait(10)
        backend.during_compute = None
        if how == "cancelled":
            loop.call_soon_threadsafe(target["job"].cancel)  # dropped at the epilogue boundary
        else:
            allocator.free(backend.scratch)  # what a real backend frees on error
            with backend._lock:
                backend.running -= 1
            raise RuntimeError("kernel failed")

    backend.during_compute = in_kernels
    config = EngineConfig(backend="cpu", gpu_workers_per_device=1, vram_budget_bytes=1500, check_r1cs=False,
                          g2_msm_placement="cpu", g2_msm_executor="thread", g2_msm_workers=1)
    async with Engine(config, backend_factory=factory_for(backend)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        target["job"] = job = await engine.submit("mult", [WTNS])
        with pytest.raises(JobCancelled if how == "cancelled" else JobFailed):
            await job.result()
        left = "partitions_dropped" if how == "cancelled" else "partitions_failed"
        await until(lambda: engine.metrics.counters[left] == 1, "the partition to leave")
        held = engine.status()
        assert g2_running.is_set() and not g2_may_end.is_set()
        g2_may_end.set()
        await settle(engine)
        freed = engine.status()
        after = await (await engine.submit("mult", [WTNS])).result()  # the engine is unharmed
    assert held["host_budget"]["used_bytes"] > 0 and held["partitions_in_flight"] == 1
    assert held["keys"]["keys"]["mult"]["refs"] == 1  # the partition's reference (the job's is gone)
    assert held["counters"]["partitions_left_with_g2_msm_running"] == 1
    assert freed["host_budget"]["used_bytes"] == 0 and freed["keys"]["keys"]["mult"]["refs"] == 0
    assert len(after) == 1

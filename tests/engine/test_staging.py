"""Pinned staging buffers: the pool's reuse and unpinning rules, and the engine's use of them
on a fake backend that offers pinned memory (every buffer given back and unpinned exactly once,
the gpu stage fed from them, cancellation and failures included)."""
from __future__ import annotations

import asyncio

import pytest

from pipeline.engine import Engine, EngineConfig, JobCancelled, JobFailed
from pipeline.engine.staging import StagingPool
from tests.engine.conftest import FakeDeviceAllocator, FakePinnedBackend, FakePinnedBuffer, factory_for, key_files, \
    settle, wtns

WTNS = wtns("bn128", "multiplier")


def test_pool_reuses_same_sized_buffers_and_unpins_beyond_max_idle():
    made: list[FakePinnedBuffer] = []
    pool = StagingPool(lambda n: made.append(FakePinnedBuffer(n)) or made[-1], max_idle=2)
    a, b, c = pool.take(64), pool.take(64), pool.take(32)
    assert len(made) == 3 and pool.snapshot()["in_use"] == 3
    for buf in (a, b, c):
        pool.give_back(buf)
    assert a.freed and not b.freed and not c.freed  # the oldest idle one went beyond max_idle
    assert pool.take(64) is b and pool.take(32) is c and len(made) == 3  # same sizes come back
    d = pool.take(16)  # no idle buffer of that size: a new one
    assert len(made) == 4 and pool.snapshot()["reused_total"] == 2
    pool.stopping()
    for buf in (b, c, d):
        pool.give_back(buf)
    assert not any(x.freed for x in (b, c, d))  # while stopping, nothing is unpinned under a reader
    pool.close()
    assert all(x.freed for x in made) and pool.snapshot()["pinned_bytes"] == 0


def test_a_pool_without_an_allocator_is_disabled():
    assert not StagingPool(None).enabled
    assert StagingPool(None).reserve(64, 3) == 0


def test_reserve_pins_ahead_up_to_the_kept_count_and_takes_then_reuse_them():
    made: list[FakePinnedBuffer] = []
    pool = StagingPool(lambda n: made.append(FakePinnedBuffer(n)) or made[-1], max_idle=3)
    old = pool.take(16)
    pool.give_back(old)
    assert pool.reserve(64, 5) == 3  # capped at max_idle
    assert pool.reserve(64, 2) == 0  # already there
    assert old.freed and pool.snapshot()["idle"] == 3  # the other size gave way past max_idle
    assert pool.snapshot()["pinned_bytes"] == 3 * 64
    taken = [pool.take(64) for _ in range(3)]
    assert len(made) == 4 and pool.snapshot()["reused_total"] == 3  # no pin for partitions of the reserved size
    for buffer in taken:
        pool.give_back(buffer)
    pool.stopping()
    assert pool.reserve(32, 3) == 0  # nothing is pinned while the engine stops
    pool.close()
    assert all(x.freed for x in made)


def pinned_engine(backend, **overrides) -> Engine:
    settings = dict(backend="cpu", gpu_workers_per_device=2, vram_budget_bytes=1500, check_r1cs=False,
                    staging_buffers_kept=2)
    settings.update(overrides)
    return Engine(EngineConfig(**settings), backend_factory=factory_for(backend))


async def test_the_gpu_stage_reads_pinned_buffers_and_every_one_is_unpinned_at_shutdown():
    backend = FakePinnedBackend(FakeDeviceAllocator(1500), key_bytes=1000, scratch=500, gpu_s=0.002)
    async with pinned_engine(backend, max_partitions_in_flight=6) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        jobs = [await engine.submit("mult", [WTNS] * 5) for _ in range(6)]
        results = await asyncio.gather(*(job.result() for job in jobs))
        await settle(engine)
        staging = engine.status()["staging"]
    assert sum(len(r) for r in results) == 30
    assert backend.staged_from_pinned == 30  # every gpu stage got its scalars from pinned memory
    assert staging["in_use"] == 0 and staging["reused_total"] >= 30 - 6 - 2  # at most in-flight + kept were pinned
    assert len(backend.buffers) <= 6 + 2 and all(b.freed for b in backend.buffers)
    assert results[0][0].public_signals == results[-1][-1].public_signals  # read from the staged copy


async def test_a_preload_pins_the_buffers_its_partitions_take_before_any_job():
    backend = FakePinnedBackend(FakeDeviceAllocator(1500), key_bytes=1000, scratch=500, gpu_s=0.002)
    async with pinned_engine(backend, max_partitions_in_flight=3, staging_buffers_kept=4) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await engine.preload("mult")
        assert len(backend.buffers) == 3 and engine.status()["staging"]["idle"] == 3  # min(in flight, kept)
        results = await (await engine.submit("mult", [WTNS] * 3)).result()
        await settle(engine)
        staging = engine.status()["staging"]
    assert len(results) == 3 and backend.staged_from_pinned == 3
    assert len(backend.buffers) == 3 and staging["reused_total"] == 3  # the job pinned nothing
    assert all(b.freed for b in backend.buffers)


async def test_a_pin_ahead_that_fails_leaves_the_key_loaded_and_its_partitions_pin_their_own(caplog):
    backend = FakePinnedBackend(FakeDeviceAllocator(1500), key_bytes=1000, scratch=500, gpu_s=0.002)
    real, refusing = backend.pinned_host_buffer, [True]

    def pin(nbytes):
        if refusing[0]:
            raise MemoryError("page-locked limit")
        return real(nbytes)

    backend.pinned_host_buffer = pin  # the pool takes it when the engine starts
    async with pinned_engine(backend, max_partitions_in_flight=2) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await engine.preload("mult")
        assert "not pinned ahead (page-locked limit)" in caplog.text
        assert engine.status()["keys"]["keys"]["mult"]["host_resident"] and not backend.buffers
        refusing[0] = False
        results = await (await engine.submit("mult", [WTNS] * 2)).result()
    assert len(results) == 2 and backend.staged_from_pinned == 2


async def test_cancelled_and_failed_partitions_give_their_buffers_back():
    backend = FakePinnedBackend(FakeDeviceAllocator(1500), key_bytes=1000, scratch=500, gpu_s=0.03)
    async with pinned_engine(backend, max_partitions_in_flight=4) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        engine.add_stage_listener(lambda stage, part: stage == "gpu" and part.job.cancel())
        job = await engine.submit("mult", [WTNS] * 3)
        with pytest.raises(JobCancelled):
            await job.result()
        await settle(engine)
        engine.pipeline.listeners.clear()

        def explode(*args, **kwargs):
            raise RuntimeError("the device fell off the bus")

        backend.msms = explode
        failing = await engine.submit("mult", [WTNS] * 2)
        with pytest.raises(JobFailed, match="fell off the bus"):
            await failing.result()
        await settle(engine)
        assert engine.status()["staging"]["in_use"] == 0
    assert all(b.freed for b in backend.buffers)

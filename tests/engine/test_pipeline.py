"""The engine's scheduling and accounting, on a fake device (see conftest: it sleeps instead of
computing and its allocator raises on over-allocation, like a GPU's). Priorities, backpressure,
the GPU lock, VRAM budgets, cancellation at every stage."""
from __future__ import annotations

import asyncio

import pytest

from pipeline.engine import Engine, EngineConfig, JobCancelled, JobState
from pipeline.formats.zkey import read_zkey
from tests.engine.conftest import FakeBackend, FakeDeviceAllocator, FakeOutOfMemory, factory_for, key_files, settle, wtns

WTNS = wtns("bn128", "multiplier")


def fake_engine(backend, **overrides) -> Engine:
    settings = dict(backend="cpu", gpu_workers_per_device=3, synthesize_workers=2, epilogue_workers=2,
                    vram_budget_bytes=1500, check_r1cs=False)
    settings.update(overrides)
    return Engine(EngineConfig(**settings), backend_factory=factory_for(backend))


async def test_100_partitions_with_vram_for_one_partition_and_3_gpu_workers_never_run_out_of_memory(fake_device):
    """The reference system's crash: three workers staging device buffers at once. Here the VRAM
    budget holds the key plus one partition's scratch, and the device allocator raises on any
    over-allocation; every partition must finish with zero out-of-memory errors."""
    allocator, backend = fake_device
    backend.gpu_s = 0.002
    async with fake_engine(backend, queue_size=4, max_partitions_in_flight=12) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        jobs = [await engine.submit("mult", [WTNS] * 10) for _ in range(10)]
        results = await asyncio.gather(*(job.result() for job in jobs))
        status = engine.status()
    assert sum(len(r) for r in results) == 100
    assert allocator.ooms == 0 and allocator.peak <= 1500 and backend.calls == 100
    assert backend.max_running == 1
    assert status["devices"][0]["vram"]["peak_bytes"] <= 1500


def test_the_fake_allocator_does_catch_two_partitions_on_the_device_at_once():
    """Control for the test above: without the GPU lock, overlapping partitions run out of memory."""
    allocator = FakeDeviceAllocator(1500)
    backend = FakeBackend(allocator, key_bytes=1000, scratch=500)
    allocator.alloc(1000)
    backend.compute_h(None, None)
    with pytest.raises(FakeOutOfMemory):
        backend.compute_h(None, None)


async def test_the_gpu_lock_serializes_the_gpu_stage_of_a_device(fake_device):
    allocator, backend = fake_device
    backend.gpu_s = 0.03
    async with fake_engine(backend, epilogue_workers=2) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS] * 8)).result()
        timeline = engine.timeline()
    gpu = sorted((iv for iv in timeline if iv.stage == "gpu"), key=lambda iv: iv.start)
    assert len(gpu) == 8 and len({iv.worker for iv in gpu}) > 1  # several workers took turns
    for a, b in zip(gpu, gpu[1:]):
        assert a.end <= b.start, f"{a} overlaps {b}"


async def test_admission_follows_priority_then_submission_order(fake_device):
    allocator, backend = fake_device
    backend.gpu_s = 0.02
    order = []
    async with fake_engine(backend, max_partitions_in_flight=1) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        engine.add_stage_listener(lambda stage, part: stage == "synthesize" and order.append(part.job.request_id))
        blocker = await engine.submit("mult", [WTNS], request_id="blocker")
        async for ev in blocker.events():
            if ev.kind == "running":
                break  # admitted: it holds the only slot
        jobs = [await engine.submit("mult", [WTNS], priority=p, request_id=name)
                for name, p in [("low", "low"), ("normal1", "normal"), ("high", "high"), ("normal2", "normal"),
                                ("critical", "critical")]]
        await asyncio.gather(blocker.result(), *(j.result() for j in jobs))
    assert order == ["blocker", "critical", "high", "normal1", "normal2", "low"]


@pytest.mark.parametrize("limits", [dict(max_partitions_in_flight=3, queue_size=1),
                                    dict(max_partitions_in_flight=50, queue_size=1, host_memory_budget_bytes=25000)])
async def test_never_more_partitions_in_memory_than_configured(fake_device, limits):
    allocator, backend = fake_device
    backend.gpu_s = 0.005
    seen = []
    async with fake_engine(backend, **limits) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        engine.add_stage_listener(lambda stage, part: seen.append(engine.pipeline.in_flight))
        job = await engine.submit("mult", [WTNS] * 30)
        await job.result()
        status = engine.status()
    per_partition = status["host_budget"]["peak_bytes"] / max(1, status["peak_partitions_in_flight"])
    cap = limits["max_partitions_in_flight"]
    if "host_memory_budget_bytes" in limits:
        cap = limits["host_memory_budget_bytes"] // per_partition
        assert status["host_budget"]["peak_bytes"] <= limits["host_memory_budget_bytes"]
    assert max(seen) <= cap and status["peak_partitions_in_flight"] <= cap


@pytest.mark.parametrize("stage", ["queued", "synthesize", "prep_msm", "gpu", "during_kernels", "epilogue"])
async def test_cancel_at_each_stage_stops_the_job_and_frees_everything(fake_device, stage):
    allocator, backend = fake_device
    backend.gpu_s = 0.05
    async with fake_engine(backend, max_partitions_in_flight=2) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        target = {}
        blocker = await engine.submit("mult", [WTNS] * 2)  # fills both slots: the target waits in admission
        if stage == "during_kernels":
            await blocker.result()
            loop = asyncio.get_running_loop()
            backend.during_compute = lambda: loop.call_soon_threadsafe(target["job"].cancel)
        elif stage != "queued":
            engine.add_stage_listener(lambda s, part: s == stage and part.job is target.get("job") and part.job.cancel())
        target["job"] = job = await engine.submit("mult", [WTNS] * 3)
        if stage == "queued":
            assert job.cancel() and not job.cancel()
        with pytest.raises(JobCancelled):
            await job.result()
        backend.during_compute = None
        await blocker.result()
        await settle(engine)
        after = await engine.submit("mult", [WTNS])  # the engine is unharmed
        await after.result()
        await settle(engine)
        status = engine.status()
    assert job.state is JobState.CANCELLED and job.done_count == 0
    assert status["host_budget"]["used_bytes"] == 0 and status["keys"]["keys"]["mult"]["refs"] == 0
    assert status["devices"][0]["vram"]["used_bytes"] == 1000  # the resident key only
    assert allocator.used == 0  # the key was unloaded at shutdown
    if stage == "queued":
        assert not [iv for iv in engine.timeline() if iv.job_id == job.id]
    if stage == "during_kernels":
        assert status["counters"]["partitions_dropped"] >= 1  # its kernels finished, then it was dropped


async def test_a_worker_pool_of_gpu_workers_shares_one_device_lock_per_device():
    allocators = [FakeDeviceAllocator(1500), FakeDeviceAllocator(1500)]
    backends = [FakeBackend(a, gpu_s=0.02) for a in allocators]
    engine = Engine(EngineConfig(backend="cpu", devices=(0, 1), gpu_workers_per_device=2, vram_budget_bytes=1500,
                                 check_r1cs=False), backend_factory=lambda ordinal: backends[ordinal])
    async with engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS] * 12)).result()
        timeline = engine.timeline()
    for device in (0, 1):
        gpu = sorted((iv for iv in timeline if iv.stage == "gpu" and iv.device == device), key=lambda iv: iv.start)
        assert gpu, f"device {device} got no work"
        assert all(a.end <= b.start for a, b in zip(gpu, gpu[1:]))
    assert all(a.ooms == 0 for a in allocators) and all(b.max_running == 1 for b in backends)


async def test_queued_device_work_is_awaited_on_the_loop_not_in_a_parked_thread():
    """A backend that enqueues (like CUDA streams) returns from start_partition at once; while the
    work runs, the device's worker thread is free (nothing waits on the device in a thread)."""
    allocator = FakeDeviceAllocator(1500)
    backend = FakeBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.4, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=1) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [WTNS])
        deadline = asyncio.get_running_loop().time() + 30
        while backend.calls == 0:
            assert asyncio.get_running_loop().time() < deadline, "the work was never enqueued"
            await asyncio.sleep(0.005)
        device = engine.devices[0]
        t0 = asyncio.get_running_loop().time()
        await asyncio.get_running_loop().run_in_executor(device.executor, lambda: None)
        waited = asyncio.get_running_loop().time() - t0
        assert not job.finished, "the work finished before the check: the check proves nothing"
        (proof,) = await job.result()
    assert waited < 0.2  # the one worker thread was not parked for the work's 0.4 s
    assert proof.timings_ms["gpu_msm_ms"] == pytest.approx(400)
    assert allocator.used == 0 and backend.closed_works == 1


async def test_cancelling_a_job_while_its_work_is_queued_drops_it_after_the_work_and_frees_the_scratch():
    allocator = FakeDeviceAllocator(1500)
    backend = FakeBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.3, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=1) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [WTNS])
        while backend.calls == 0:
            await asyncio.sleep(0.005)
        job.cancel()
        with pytest.raises(JobCancelled):
            await job.result()
        await settle(engine)
        second = await engine.submit("mult", [WTNS])  # the device is usable afterwards
        assert len(await second.result()) == 1
        status = engine.status()
    assert backend.closed_works == 2 and allocator.ooms == 0
    assert status["devices"][0]["vram"]["used_bytes"] <= 1000  # only the key stays


async def test_the_gpu_stage_gets_the_witness_shape_prep_msm_counted(fake_device):
    """prep_msm counts the 0 / 1 / other values (all signals, and the constant + public prefix)
    off the GPU lock; the backend receives them with the witness."""
    import numpy as np

    from pipeline.backends.protocol import WitnessShape
    from pipeline.formats.wtns import read_wtns

    allocator, backend = fake_device
    async with fake_engine(backend) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS])).result()
    (shape,) = backend.shapes
    values = read_wtns(WTNS).values
    ints = [int.from_bytes(np.ascontiguousarray(v).tobytes(), "little") for v in values]
    prefix = 2  # the constant and the multiplier's one public signal
    assert shape == WitnessShape(len(ints), sum(v == 1 for v in ints), sum(v > 1 for v in ints), prefix,
                                 sum(v == 1 for v in ints[:prefix]), sum(v > 1 for v in ints[:prefix]))


async def test_admission_reserves_the_witness_its_staged_copy_and_what_the_backend_holds(fake_device):
    """Per partition: 2 n_vars Fr values (witness, staged copy) plus ``Backend.partition_host_bytes``;
    a budget of two such partitions admits two at a time."""
    allocator, backend = fake_device
    backend.gpu_s = 0.02
    extra = 50_000
    backend.partition_host_bytes = lambda zkey: extra  # a backend holding more per partition than the default
    seen = []
    zkey = read_zkey(key_files("bn128", "multiplier")["zkey_path"])
    per_partition = 2 * zkey.n_vars * zkey.curve.fr.n_bytes + extra + 4096
    async with fake_engine(backend, max_partitions_in_flight=50, queue_size=1,
                           host_memory_budget_bytes=2 * per_partition) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        engine.add_stage_listener(lambda stage, part: seen.append(engine.pipeline.in_flight))
        await (await engine.submit("mult", [WTNS] * 8)).result()
        status = engine.status()
    assert status["host_budget"]["peak_bytes"] == 2 * per_partition
    assert max(seen) == 2 and status["peak_partitions_in_flight"] == 2


class FakePrefetchBackend(FakeBackend):
    """A FakeBackend that offers ``prefetch_witness``: a prefetch holds the witness's bytes of device
    memory until ``start_partition`` of the same array takes it (its scratch then stands for them) or
    ``drop_prefetch`` gives it back."""

    prefetches_witness = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.held: dict[int, int] = {}  # staged array address -> bytes
        self.started = self.taken = self.dropped = 0

    def prefetch_witness(self, witness) -> int:
        self.allocator.alloc(witness.nbytes)
        with self._lock:
            assert witness.ctypes.data not in self.held, "a witness prefetched twice"
            self.held[witness.ctypes.data] = witness.nbytes
            self.started += 1
        return witness.nbytes

    def _release(self, witness) -> bool:
        with self._lock:
            nbytes = self.held.pop(witness.ctypes.data, None)
        if nbytes is not None:
            self.allocator.free(nbytes)
        return nbytes is not None

    def drop_prefetch(self, witness) -> None:
        if self._release(witness):
            self.dropped += 1

    def start_partition(self, key, witness, with_b_g2=True, shape=None):
        if self._release(witness):
            self.taken += 1
        return super().start_partition(key, witness, with_b_g2, shape)


async def test_a_waiting_partition_prefetches_its_witness_and_the_vram_budget_counts_it():
    """Backend.prefetch_witness: while one partition holds the GPU lock the next one's witness goes to
    the device; the partition that takes the lock takes its prefetch; the budget is never overdrawn, and
    nothing stays held."""
    staged = 4 * 32  # the multiplier's 4 signals
    allocator = FakeDeviceAllocator(1000 + 2 * 500 + staged)
    backend = FakePrefetchBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.05, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=2, vram_budget_bytes=allocator.capacity) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        proofs = await (await engine.submit("mult", [WTNS] * 8)).result()
        status = engine.status()
        device = engine.devices[0]
    assert len(proofs) == 8 and allocator.ooms == 0
    # Every partition but the first (it finds the lock free) and, unless the first has copied the key by the
    # time it looks, the second (no resident copy to prefetch for yet): 6 or 7 of 8, as the threads fall (7
    # seen once in a loaded full run, session 23). Before session 17 a worker coming straight from its own
    # turn found the lock just given back still free, and every other partition went without (3 of 8).
    assert backend.started in (6, 7), backend.started
    assert backend.taken == backend.started and backend.dropped == 0
    assert backend.held == {} and not device.prefetching
    assert status["devices"][0]["vram"]["used_bytes"] == 1000  # the key alone
    assert status["devices"][0]["vram"]["peak_bytes"] <= allocator.capacity


async def test_a_prefetch_needs_room_beside_one_scratch_not_two():
    """The lock holder gives its scratch back before the next holder takes one: a budget of the key, one
    scratch and one witness (what place_key's tables leave room for) prefetches, and is never overdrawn."""
    staged = 4 * 32
    allocator = FakeDeviceAllocator(1000 + 500 + staged)
    backend = FakePrefetchBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.05, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=2, vram_budget_bytes=allocator.capacity) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        assert len(await (await engine.submit("mult", [WTNS] * 8)).result()) == 8
        status = engine.status()
    assert backend.started in (6, 7) and backend.taken == backend.started and allocator.ooms == 0
    assert status["devices"][0]["vram"]["peak_bytes"] == allocator.capacity


async def test_no_prefetch_where_the_budget_has_no_room_for_it_beside_the_next_scratch():
    allocator = FakeDeviceAllocator(1000 + 2 * 500)  # key + two scratches: no witness beside them
    backend = FakePrefetchBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.02, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=2, vram_budget_bytes=1000 + 500 + 127) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        assert len(await (await engine.submit("mult", [WTNS] * 4)).result()) == 4
    assert backend.started == 0 and allocator.ooms == 0


async def test_a_cancelled_job_gives_back_the_prefetches_of_its_waiting_partitions():
    staged = 4 * 32
    allocator = FakeDeviceAllocator(1000 + 2 * 500 + staged)
    backend = FakePrefetchBackend(allocator, key_bytes=1000, scratch=500, gpu_s=0.3, enqueue=True)
    async with fake_engine(backend, gpu_workers_per_device=2, vram_budget_bytes=allocator.capacity) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [WTNS] * 6)
        deadline = asyncio.get_running_loop().time() + 30
        while backend.started == 0:  # a partition waits at the lock with its witness prefetched
            assert asyncio.get_running_loop().time() < deadline, "no prefetch started"
            await asyncio.sleep(0.005)
        job.cancel()
        with pytest.raises(JobCancelled):
            await job.result()
        await settle(engine)
        assert backend.held == {} and not engine.devices[0].prefetching
        assert backend.taken + backend.dropped == backend.started and backend.dropped >= 1
        assert engine.status()["devices"][0]["vram"]["used_bytes"] == 1000
        assert len(await (await engine.submit("mult", [WTNS] * 2)).result()) == 2  # the device still works
    assert allocator.ooms == 0 and allocator.used == 0

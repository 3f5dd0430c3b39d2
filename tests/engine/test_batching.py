"""Partitions of one streamed key share a pass (Backend.start_batch): the gpu stage takes the
waiting partitions of that key, as many as the backend allows, the config caps and the VRAM
budget holds; a cancelled partition leaves the pass at its next step; proofs stay valid."""
from __future__ import annotations

import asyncio

from pipeline.backends.cpu import CpuBackend
from pipeline.backends.placement import KeyPlacement
from pipeline.engine import Engine, EngineConfig, JobCancelled
from tests.engine.conftest import FakeBackend, FakeDeviceAllocator, factory_for, key_files, settle, until, wtns

WTNS = wtns("bn128", "multiplier")


class StreamingCpuBackend(CpuBackend):
    """The CPU reference with every key placed as a device too small for it would place it: all
    points streamed in chunks that divide nothing (the reference walk of a streamed pass)."""

    def place_key(self, zkey, budget_bytes, room_bytes=None, witness=None):
        return KeyPlacement((), chunk_signals=37, chunk_h=61, device_bytes=0)


async def test_partitions_of_a_streamed_key_share_passes_and_their_proofs_verify():
    config = EngineConfig(backend="cpu", gpu_workers_per_device=1, verify_proofs=True, check_r1cs=False,
                          max_partitions_in_flight=8, queue_size=8, gpu_batch_max=3)
    async with Engine(config, backend_factory=factory_for(StreamingCpuBackend())) as engine:
        engine.register_key("chain", **key_files("bn128", "chain_2e8"))
        proofs = await (await engine.submit("chain", [wtns("bn128", "chain_2e8")] * 6)).result()
        status = engine.status()
        text = engine.prometheus()
    assert all(p.verified for p in proofs) and len(proofs) == 6
    assert 'zkpipe_engine_key_device_copies{device="0",placement="streamed"} 1.0' in text
    assert 'zkpipe_engine_key_device_copies{device="0",placement="resident"} 0.0' in text
    sizes = [p.timings_ms["gpu_batch"] for p in proofs]
    assert max(sizes) > 1 and max(sizes) <= 3, sizes
    assert status["keys"]["keys"]["chain"]["placement"] == {"0": "streamed"}
    assert status["keys"]["keys"]["chain"]["layout"] == {"0": {"resident_sections": [], "csr": "resident",
                                                              "h_points": "per pass",
                                                              "streamed_sections": ["a", "b1", "b2", "c", "h"],
                                                              "fixed_base_sections": [], "fixed_base_sets": [],
                                                              "fixed_base_refused": [], "fixed_base_order": []}}


def batching_engine(backend, capacity: int, **overrides) -> Engine:
    settings = dict(backend="cpu", gpu_workers_per_device=2, synthesize_workers=2, epilogue_workers=2,
                    vram_budget_bytes=capacity, check_r1cs=False, queue_size=10, max_partitions_in_flight=24)
    settings.update(overrides)
    return Engine(EngineConfig(**settings), backend_factory=factory_for(backend))


async def test_batches_are_as_large_as_the_vram_budget_allows_and_never_run_out_of_memory():
    """Key 1000 bytes, 100 bytes of scratch per partition of a pass, budget 1400: at most 4 per
    pass, whatever the backend and the config would allow; 100 partitions at 1, 2 and 3 workers."""
    for workers in (1, 2, 3):
        allocator = FakeDeviceAllocator(1400)
        backend = FakeBackend(allocator, key_bytes=1000, scratch=100, gpu_s=0.01, enqueue=True, batch=10)
        async with batching_engine(backend, 1400, gpu_workers_per_device=workers) as engine:
            engine.register_key("mult", **key_files("bn128", "multiplier"))
            jobs = [await engine.submit("mult", [WTNS] * 10) for _ in range(10)]
            results = await asyncio.gather(*(job.result() for job in jobs))
        assert sum(len(r) for r in results) == 100 and backend.calls == 100
        assert allocator.ooms == 0 and allocator.peak <= 1400
        assert max(backend.batches) == 4 and sum(backend.batches) == 100, (workers, backend.batches)


async def test_the_config_caps_the_batch_and_a_resident_key_is_never_batched():
    allocator = FakeDeviceAllocator(10**6)
    capped = FakeBackend(allocator, key_bytes=1000, scratch=100, gpu_s=0.01, enqueue=True, batch=10)
    async with batching_engine(capped, 10**6, gpu_batch_max=2) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS] * 12)).result()
    assert max(capped.batches) == 2
    resident = FakeBackend(FakeDeviceAllocator(10**6), key_bytes=1000, scratch=100, gpu_s=0.01, enqueue=True)
    async with batching_engine(resident, 10**6) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [WTNS] * 12)).result()
    assert set(resident.batches) == {1}


async def test_batches_short_of_room_are_told_once_per_key(caplog):
    """A streamed key's batch stays in flight until its epilogues: with fewer than 2 x batch + 1
    partitions in flight (or a queue shorter than a batch) the next batch runs short, and the log
    says what to set, once; with the room, nothing is logged."""
    for in_flight, queue, told in ((8, 10, True), (21, 6, True), (21, 10, False)):
        caplog.clear()
        backend = FakeBackend(FakeDeviceAllocator(10**6), key_bytes=1000, scratch=100, gpu_s=0.01, enqueue=True,
                              batch=10)
        with caplog.at_level("WARNING", logger="pipeline.engine"):
            async with batching_engine(backend, 10**6, max_partitions_in_flight=in_flight, queue_size=queue) as engine:
                engine.register_key("mult", **key_files("bn128", "multiplier"))
                await (await engine.submit("mult", [WTNS] * 12)).result()
        lines = [r.getMessage() for r in caplog.records if "batches will run short" in r.getMessage()]
        assert len(lines) == (1 if told else 0), (in_flight, queue, lines)
        if told:
            assert "'mult'" in lines[0] and "max_partitions_in_flight >= 21" in lines[0] and "queue_size >= 10" in lines[0]


async def test_a_cancelled_job_leaves_the_pass_and_the_other_job_of_the_batch_completes():
    allocator = FakeDeviceAllocator(10**6)
    backend = FakeBackend(allocator, key_bytes=1000, scratch=100, gpu_s=0.15, enqueue=True, batch=10)
    async with batching_engine(backend, 10**6, gpu_workers_per_device=1) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        engine.register_key("other", **key_files("bn128", "multiplier"))
        backend.paused = True
        blocker = await engine.submit("other", [WTNS])  # holds the lock while the two jobs queue up
        await until(lambda: backend.calls == 1, "the blocker on the device")
        doomed = await engine.submit("mult", [WTNS] * 4)
        kept = await engine.submit("mult", [WTNS] * 4)
        await until(lambda: engine.pipeline.devices[0].queue.qsize() == 8, "both jobs waiting for the device")
        backend.paused = False
        await until(lambda: len(backend.batches) >= 2 and backend.calls >= 3, "a pass of both jobs under way")
        doomed.cancel()
        proofs = await kept.result()
        await blocker.result()
        try:
            await doomed.result()
            raise AssertionError("the cancelled job returned proofs")
        except JobCancelled:
            pass
        await settle(engine)
    assert len(proofs) == 4
    assert backend.batches[1] == 8  # one pass took both jobs' partitions
    assert backend.calls < 9  # the cancelled job's partitions not yet started took no step
    assert allocator.used == 0 and backend.closed_works == backend.calls  # scratch and keys all given back


async def test_a_key_registered_as_an_object_proves_like_its_file():
    """Embedded use: a key already in memory (the development setup's) needs no .zkey file."""
    from pipeline.formats.zkey import read_zkey

    files = key_files("bn128", "multiplier")
    config = EngineConfig(backend="cpu", verify_proofs=True, check_r1cs=False, g2_msm_placement="cpu")
    async with Engine(config) as engine:
        engine.register_key("mem", zkey=read_zkey(files["zkey_path"]))
        proofs = await (await engine.submit("mem", [WTNS] * 2)).result()
        status = engine.status()
    assert all(p.verified for p in proofs)
    assert status["keys"]["keys"]["mem"]["zkey_path"] == "<in memory>"
    try:
        Engine(config).register_key("both", zkey_path=files["zkey_path"], zkey=read_zkey(files["zkey_path"]))
        raise AssertionError("a key given twice was accepted")
    except ValueError as exc:
        assert "either zkey_path or zkey" in str(exc)


async def test_registering_another_key_object_under_the_same_id_replaces_the_first():
    from pipeline.formats.zkey import read_zkey

    config = EngineConfig(backend="cpu", check_r1cs=False)
    mult = read_zkey(key_files("bn128", "multiplier")["zkey_path"])
    chain = read_zkey(key_files("bn128", "chain_2e8")["zkey_path"])
    async with Engine(config) as engine:
        engine.register_key("k", zkey=mult)
        engine.register_key("k", zkey=chain)  # not loaded yet: replaced, not ignored
        proofs = await (await engine.submit("k", [wtns("bn128", "chain_2e8")])).result()
    assert len(proofs[0].public_signals) == chain.n_public


async def test_take_matching_takes_in_priority_order_and_leaves_the_rest_queued_in_theirs():
    from pipeline.engine.scheduler import take_matching

    queue: asyncio.PriorityQueue = asyncio.PriorityQueue()
    for entry in [(2, "k2"), (0, "k0"), (1, "x1"), (3, "k3"), (4, "x4"), (5, "k5")]:
        queue.put_nowait(entry)
    taken = take_matching(queue, lambda item: item.startswith("k"), limit=2)
    assert taken == ["k0", "k2"]
    left = [queue.get_nowait()[-1] for _ in range(queue.qsize())]
    assert left == ["x1", "k3", "x4", "k5"]
    for _ in taken + left:  # the taker marks its items done once handled, as the gpu stage does
        queue.task_done()
    await asyncio.wait_for(queue.join(), 1)  # every get and put accounted: nothing counts as unfinished
    assert take_matching(queue, lambda item: True, limit=3) == []

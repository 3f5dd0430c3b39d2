"""The stage workers: admission -> synthesize -> prep_msm -> gpu (per device) -> epilogue.

Every worker is a task of the engine's one TaskGroup, looping over a bounded priority queue
(entries ``(priority, job seq, index, tick, item)``). CPU work runs in the stage's named
thread pool; the gpu stage runs the backend in its device's pool while holding that
device's GPU lock. A partition's resources (resources.py: a slot of ``max_partitions_in_flight``,
its bytes of the host budget, a reference to its key, its staging buffer) are given back exactly
once, whether it finished, failed or was cancelled: in ``_leave``, or, if its CPU G2 MSM is still
running then (cancelling a running call does not stop it, and it still reads the partition's
scalars and the key), when that MSM ends.

Cancellation is checked at every stage boundary; work already in an executor (kernels
launched) finishes and is then dropped. An exception in one partition fails its job only.
"""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from typing import Any, Callable

from ..errors import fault_code, is_callers_fault
from . import stages
from .budgets import ByteBudget
from .config import EngineConfig
from .cpu_workers import G2Msm, G2Workers, g2_msm_from_path
from .devices import Device
from .jobs import PartitionProof
from .keystore import KeyStore
from .metrics import Interval, Metrics
from .scheduler import AdmissionQueue, Sequencer, choose_device, take_matching
from .resources import PartitionResources
from .staging import StagingPool
from .stages import DeviceResult, Partition, Prepared, Synthesized

log = logging.getLogger("pipeline.engine")
StageListener = Callable[[str, Partition], None]


class Pipeline:
    def __init__(self, config: EngineConfig, keystore: KeyStore, devices: list[Device], metrics: Metrics,
                 executors: dict[str, Executor], g2_workers: G2Workers, staging: StagingPool | None = None) -> None:
        self.config = config
        self.keystore = keystore
        self.devices = devices
        self.metrics = metrics
        self.executors = executors
        self.g2_workers = g2_workers
        self._g2_msms: dict[Partition, G2Msm] = {}  # partitions whose CPU G2 MSM was started
        self.staging = staging or StagingPool(None)
        self.admission = AdmissionQueue()
        self.slots = asyncio.Semaphore(config.max_partitions_in_flight)
        self.host_budget = ByteBudget("host memory", config.host_memory_budget_bytes)
        self.in_flight = 0
        self._batch_room_told: set[str] = set()  # keys whose batches were found short of room (logged once)
        self.listeners: list[StageListener] = []
        self._seq = Sequencer()
        self.synth_queue: asyncio.PriorityQueue = asyncio.PriorityQueue(config.queue_size)
        self.prep_queue: asyncio.PriorityQueue = asyncio.PriorityQueue(config.queue_size)
        self.epilogue_queue: asyncio.PriorityQueue = asyncio.PriorityQueue(config.queue_size)
        for device in devices:
            device.queue = asyncio.PriorityQueue(config.queue_size)

    # -- the workers -----------------------------------------------------------------------
    def start(self, tg: asyncio.TaskGroup) -> None:
        c = self.config
        tg.create_task(self._admit_forever(), name="zkpipe-admission")
        for i in range(c.synthesize_workers):
            tg.create_task(self._loop("synthesize", self.synth_queue, self._synthesize), name=f"zkpipe-synth{i}")
        for i in range(c.prep_msm_workers):
            tg.create_task(self._loop("prep_msm", self.prep_queue, self._prep), name=f"zkpipe-prep{i}")
        for device in self.devices:
            for w in range(c.gpu_workers_per_device):
                worker = f"gpu{device.index}.{w}"
                tg.create_task(self._loop("gpu", device.queue, self._gpu_for(device, worker)), name=f"zkpipe-{worker}")
        for i in range(c.epilogue_workers):
            tg.create_task(self._loop("epilogue", self.epilogue_queue, self._epilogue), name=f"zkpipe-epi{i}")
        tg.create_task(self.metrics.probe_loop_lag(c.loop_lag_interval_s), name="zkpipe-loop-lag")

    async def _admit_forever(self) -> None:
        while True:
            await self.slots.acquire()
            pending = await self.admission.pop()
            job = pending.job
            host = None
            try:
                host = self.keystore.loaded(job.key_id)  # the job's own reference keeps it loaded
                n_bytes = stages.partition_host_bytes(host.zkey, self.devices[0].backend)  # one backend kind
                await self.host_budget.acquire(n_bytes, "one partition")
            except asyncio.CancelledError:
                self.slots.release()
                raise
            except Exception as exc:
                self.slots.release()
                job.fail(f"partition {pending.index} (admission): {exc}", fault_code(exc))
                continue
            if job.finished:  # cancelled while waiting for budget
                self.host_budget.release(n_bytes)
                self.slots.release()
                continue
            self.keystore.add_ref(job.key_id)
            resources = PartitionResources(job.key_id, n_bytes, self.slots, self.host_budget, self.keystore.release,
                                           self._partition_released)
            part = Partition(job, pending.index, pending.source, host, resources)
            part.marks["admitted"] = time.perf_counter()
            part.timings_ms["admission_wait_ms"] = (time.time() - job.created) * 1e3
            self.in_flight += 1
            self.metrics.peak_in_flight = max(self.metrics.peak_in_flight, self.in_flight)
            job.mark_running()
            await self._put(self.synth_queue, part, part)

    async def _loop(self, stage: str, queue: asyncio.PriorityQueue, handle) -> None:
        while True:
            *_, item = await queue.get()
            part = _partition_of(item)
            try:
                part.timings_ms[f"{stage}_queue_ms"] = (time.perf_counter() - part.marks.pop("queued")) * 1e3
                self._notify(stage, part)
                if part.job.finished:
                    self._drop(item)
                    continue
                self.metrics.in_stage[stage] += 1
                try:
                    await handle(item)
                finally:
                    self.metrics.in_stage[stage] -= 1
            except asyncio.CancelledError:
                self._drop(item)
                raise
            except Exception as exc:
                self._fail(part, stage, exc)
            finally:
                queue.task_done()

    # -- the stages ------------------------------------------------------------------------
    async def _synthesize(self, part: Partition) -> None:
        t0 = time.perf_counter()
        witness = await self._run("synthesize", stages.synthesize, part.key, part.source, self.config.check_r1cs)
        self._record(part, "synthesize", "synthesize", None, t0, "synth_ms")
        await self._put(self.prep_queue, part, Synthesized(part, witness))

    async def _prep(self, item: Synthesized) -> None:
        part = item.partition
        if part.job.finished:
            return self._drop(item)
        t0 = time.perf_counter()
        buffer = None
        if self.staging.enabled:
            buffer = await self._run("prep_msm", self.staging.take, item.witness.values.nbytes)  # pinning is slow
            part.resources.hold_staging(buffer, self.staging.give_back)  # given back when the partition leaves
        t_scan = time.perf_counter()
        part.timings_ms["prep_staging_ms"] = (t_scan - t0) * 1e3  # an idle buffer: ~0; a fresh pin: ~0.25 s/GiB
        scalars = await self._run("prep_msm", stages.prep_msm, item.witness, buffer, part.key.zkey.n_public + 1)
        part.timings_ms["prep_scan_ms"] = (time.perf_counter() - t_scan) * 1e3
        g2_msm = None
        if self.config.g2_msm_placement == "cpu":
            if self.config.g2_msm_executor == "process" and part.key.spec.zkey is None:  # a process reads the file
                fn, args = g2_msm_from_path, (part.key.spec.zkey_path, scalars.staged)
            else:
                fn, args = stages.g2_msm_cpu, (part.key, scalars.staged)
            g2_msm = self._g2_msms[part] = self.g2_workers.start(fn, *args)
        self._record(part, "prep_msm", "prep_msm", None, t0, "prep_msm_ms")
        part.timings_ms.update(n_zero=scalars.n_zero, n_one=scalars.n_one, n_other=scalars.n_other)
        self.keystore.note_witness(part.job.key_id, scalars.shape)  # the key's next copy picks its tables for it
        prepared = Prepared(part, scalars, g2_msm)  # the witness is staged: not kept
        device = choose_device(self.devices, self.keystore.resident_devices(part.job.key_id))
        await self._put(device.queue, part, prepared)

    def _gpu_for(self, device: Device, worker: str):
        async def run_on_device(prepared: Prepared) -> None:
            loop = asyncio.get_running_loop()

            def run(fn, *args):
                return loop.run_in_executor(device.executor, fn, *args)

            t_wait = time.perf_counter()
            batch = [prepared]  # _gpu_locked adds waiting partitions of a streamed key
            device.partitions_in_gpu += 1
            prefetched = counted = 0  # the witness's prefetch: its bytes, those still counted in the budget
            try:
                prefetched = counted = await self._prefetch(device, prepared, run)
                async with device.gpu_lock:
                    if counted:  # the lock is ours: the next waiter may prefetch; our scratch counts the witness
                        counted = self._uncount_prefetch(device, counted)
                        if self.keystore.resident_handle(prepared.partition.job.key_id, device.index) is None:
                            await run(device.backend.drop_prefetch, prepared.scalars.staged)  # evicted meanwhile
                    t0 = time.perf_counter()
                    device.lock_held_since = t0
                    try:
                        results = await self._gpu_locked(device, batch, run)
                    finally:
                        t1 = time.perf_counter()
                        device.lock_busy_s += t1 - t0
                        device.lock_held_since = None
            except asyncio.CancelledError:
                self._settle_mates(device, batch, None)
                raise
            except Exception as exc:
                self._settle_mates(device, batch, exc)
                raise
            finally:
                device.partitions_in_gpu -= 1
                if prefetched:
                    await self._prefetch_done(device, prepared, counted, run)
            for i, (item, result) in enumerate(zip(batch, results)):
                part = item.partition
                if result is None:
                    self._drop(item)
                else:
                    part.timings_ms["gpu_lock_wait_ms"] = (t0 - (t_wait if i == 0 else part.marks["gpu_taken"])) * 1e3
                    part.timings_ms["gpu_total_ms"] = (t1 - t0) * 1e3
                    part.timings_ms["gpu_batch"] = len(batch)
                    self.metrics.record(Interval(part.job.id, part.index, "gpu", worker, device.index, t0, t1))
                    await self._put(self.epilogue_queue, part, result)  # after the lock is given back
                if i:
                    device.queue.task_done()  # a mate taken from the queue by _take_mates
        return run_on_device

    async def _prefetch(self, device: Device, prepared: Prepared, run) -> int:
        """While another partition holds the GPU lock, start this one's witness on its way to the device
        (``Backend.prefetch_witness``: its upload then leaves the lock). One at a time a device, only for
        a key resident there whole, and only where its bytes and the next holder's scratch fit the VRAM budget
        beside what is in use once the holder's scratch is given back (it is, before the next holder takes
        its own: the placement's room for tables counts one scratch and one prefetched witness); its bytes
        count in the budget until this partition takes the lock (its scratch counts the witness from then).
        Returns the bytes counted (0: none started)."""
        backend = device.backend
        if not backend.prefetches_witness:
            return 0
        # A lock just given back goes to its first waiter only when that waiter's task runs. Without this
        # yield a worker coming straight from its own turn found the lock free (and the waiter's prefetch not
        # yet taken) and went without: every other partition of a 2^26 seed stream (session 17: 3 of 8 here).
        await asyncio.sleep(0)
        if device.prefetching or not device.gpu_lock.locked():
            return 0
        handle = self.keystore.resident_handle(prepared.partition.job.key_id, device.index)
        staged = prepared.scalars.staged
        vram = device.vram
        if handle is None or (vram.capacity is not None
                              and vram.used - device.scratch_held + staged.nbytes + device.scratch_bytes(handle)
                              > vram.capacity):
            return 0
        if not vram.try_acquire(staged.nbytes):
            return 0
        device.prefetching = True
        held, queued = 0, None
        try:
            queued = run(backend.prefetch_witness, staged)
            held = await asyncio.shield(queued)
        except BaseException:
            if queued is not None:  # cancelled while the copy was being queued: once it is, it goes back
                queued.add_done_callback(lambda _: run(backend.drop_prefetch, staged))
            held = 0
            raise
        finally:
            if not held:
                self._uncount_prefetch(device, staged.nbytes)
        return staged.nbytes if held else 0

    @staticmethod
    def _uncount_prefetch(device: Device, counted: int) -> int:
        """The device's prefetch slot free again and ``counted`` bytes out of its budget's count (the
        partition took the lock, or left, or its prefetch did not start). Returns the bytes still counted: 0."""
        device.prefetching = False
        device.vram.release(counted)
        return 0

    async def _prefetch_done(self, device: Device, prepared: Prepared, counted: int, run) -> None:
        """After the partition, or when it left before taking the lock: a prefetch it did not take goes back
        (before its staging buffer can go to another partition)."""
        if counted:  # left before taking the lock
            self._uncount_prefetch(device, counted)
        await asyncio.shield(run(device.backend.drop_prefetch, prepared.scalars.staged))

    async def _gpu_locked(self, device: Device, batch: list[Prepared], run) -> list[DeviceResult | None]:
        """Under the GPU lock: key copy, the batch (more waiting partitions of a streamed key),
        scratch VRAM taken and given back, kernels. None for a partition that left."""
        first = batch[0]
        part = first.partition
        if part.job.finished:
            return [None]
        key_id = part.job.key_id
        handle = await self.keystore.device_copy(key_id, device, part.key, run)
        one = device.scratch_bytes(handle)
        await self.keystore.make_device_room(device, one, keep=key_id, run=run)
        device.vram.check(one, "one partition's scratch next to its key")
        limit = min(device.backend.max_batch(handle), self.config.gpu_batch_max)
        capacity = device.vram.capacity
        while limit > 1 and capacity is not None and device.vram.used + device.scratch_bytes(handle, limit) > capacity:
            limit -= 1  # the largest batch whose scratch fits next to the resident keys
        if limit > 1:
            self._tell_batch_room(key_id, limit)
        batch.extend(self._take_mates(device, first, limit - 1))
        scratch = device.scratch_bytes(handle, len(batch))
        if not device.vram.try_acquire(scratch):
            raise RuntimeError(f"device {device.index}: VRAM budget accounting broken: {scratch} bytes of scratch "
                               f"do not fit under the GPU lock ({device.vram.used}/{device.vram.capacity} used)")
        device.scratch_held = scratch
        try:
            msms = await self._device_work(device, handle, batch, run)
        finally:
            device.scratch_held = 0
            device.vram.release(scratch)
        results: list[DeviceResult | None] = []
        for item, m in zip(batch, msms):
            if m is None:
                results.append(None)
                continue
            item.partition.timings_ms.update(stages.gpu_timings(m))
            results.append(DeviceResult(item, m, device.index))
        return results

    def _tell_batch_room(self, key_id: str, limit: int) -> None:
        """A streamed key's batch stays in flight until its epilogues: for the next batch to gather
        behind a pass, the engine needs room for two (session 20: at batch + 4 in flight the passes
        averaged 5.4 of 10 partitions, at 2 x 10 + 1 they averaged 9.3). Logged once a key."""
        c = self.config
        wanted = 2 * limit + 1
        if key_id in self._batch_room_told or (c.max_partitions_in_flight >= wanted and c.queue_size >= limit):
            return
        self._batch_room_told.add(key_id)
        log.warning("key %r is streamed in batches of up to %d partitions, but max_partitions_in_flight is %d and "
                    "queue_size %d: batches will run short; give it max_partitions_in_flight >= %d and queue_size "
                    ">= %d", key_id, limit, c.max_partitions_in_flight, c.queue_size, wanted, limit)

    def _take_mates(self, device: Device, first: Prepared, limit: int) -> list[Prepared]:
        """Up to ``limit`` partitions waiting in the device's queue that can share ``first``'s pass:
        the same key, the same G2 placement, their jobs still live."""
        key_id, g2_here = first.partition.job.key_id, first.g2_msm is None
        taken = take_matching(device.queue, lambda item: isinstance(item, Prepared)
                              and item.partition.job.key_id == key_id and not item.partition.job.finished
                              and (item.g2_msm is None) == g2_here, limit)
        now = time.perf_counter()
        for item in taken:
            p = item.partition
            p.timings_ms["gpu_queue_ms"] = (now - p.marks.pop("queued")) * 1e3
            p.marks["gpu_taken"] = now
            self._notify("gpu", p)
        return taken

    def _settle_mates(self, device: Device, batch: list[Prepared], exc: Exception | None) -> None:
        """The pass failed (``exc``) or the engine stops (None): the batch's other partitions fail
        with it or are dropped; the first one is the stage loop's."""
        for item in batch[1:]:
            if exc is None:
                self._drop(item)
            else:
                self._fail(item.partition, "gpu", exc)
            device.queue.task_done()

    async def _device_work(self, device: Device, handle: Any, batch: list[Prepared], run) -> list:
        """Queue the batch's device work step by step in the device's thread and await each step on
        the loop (CUDA events): no thread waits on the device, and a partition whose job finished
        takes no further step (it leaves the pass at the next chunk)."""
        items = [(p.scalars.staged, p.scalars.shape) for p in batch]
        work = await run(device.backend.start_batch, handle, items, batch[0].g2_msm is None)
        try:
            while await run(work.enqueue_next, [not p.partition.job.finished for p in batch]):
                await work.wait_for_room()
            await work.wait()
            return await run(work.results)
        except BaseException:
            # The device may still use the buffers: give them back off the loop, once it is done.
            await asyncio.shield(run(work.close))
            raise

    async def _epilogue(self, result: DeviceResult) -> None:
        prepared = result.prepared
        part = prepared.partition
        b_g2 = None
        if prepared.g2_msm is not None:
            t_join = time.perf_counter()
            b_g2, g2_start, g2_end = await prepared.g2_msm.result()
            part.timings_ms["b_g2_msm_ms"] = (g2_end - g2_start) * 1e3
            part.timings_ms["b_g2_join_wait_ms"] = (time.perf_counter() - t_join) * 1e3
            self.metrics.record(Interval(part.job.id, part.index, "b_g2_msm", "g2_msm", None, g2_start, g2_end))
        if part.job.finished:
            return self._drop(result)
        t0 = time.perf_counter()
        proof = await self._run("epilogue", stages.epilogue, part.key, result, b_g2, self.config.verify_proofs)
        self._record(part, "epilogue", "epilogue", None, t0, "epilogue_ms")
        part.timings_ms["total_ms"] = (time.perf_counter() - part.marks["admitted"]) * 1e3
        if part.job.finished:
            return self._drop(result)
        proof = PartitionProof(**{**proof.__dict__, "timings_ms": dict(part.timings_ms)})
        self.metrics.partition_finished(part.timings_ms, ok=True)
        self._leave(part)
        part.job.record_partition(proof)

    # -- helpers ---------------------------------------------------------------------------
    async def _run(self, executor: str, fn, *args) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executors[executor], fn, *args)

    async def _put(self, queue: asyncio.PriorityQueue, part: Partition, item: Any) -> None:
        part.marks["queued"] = time.perf_counter()
        await queue.put(self._seq.entry(part.job, part.index, item))

    def _record(self, part: Partition, stage: str, worker: str, device: int | None, t0: float, timing: str) -> None:
        t1 = time.perf_counter()
        part.timings_ms[timing] = (t1 - t0) * 1e3
        self.metrics.record(Interval(part.job.id, part.index, stage, worker, device, t0, t1))

    def _notify(self, stage: str, part: Partition) -> None:
        for listener in self.listeners:
            try:
                listener(stage, part)
            except Exception:
                log.exception("stage listener failed")

    def _fail(self, part: Partition, stage: str, exc: Exception) -> None:
        if not is_callers_fault(exc):  # our bug or a broken environment: keep the traceback
            log.error("partition %s failed in %s", part.label, stage, exc_info=exc)
        reason = f"partition {part.index} ({stage}): {type(exc).__name__}: {exc}"
        part.job.fail(reason, fault_code(exc))
        self.metrics.partition_finished(part.timings_ms, ok=False)
        self._leave(part)

    def _drop(self, item: Any) -> None:
        """A partition leaves because its job is finished (cancelled, or failed elsewhere)."""
        part = _partition_of(item)
        self.metrics.counters["partitions_dropped"] += 1
        self._leave(part)

    def _leave(self, part: Partition) -> None:
        if not part.resources.start_leaving():
            return
        g2_msm = self._g2_msms.pop(part, None)
        if g2_msm is not None and not g2_msm.done:
            g2_msm.cancel()  # dropped if not started; a running MSM finishes and is ignored
            self.metrics.counters["partitions_left_with_g2_msm_running"] += 1
            g2_msm.when_finished(part.resources.release)
        else:
            part.resources.release()

    def _partition_released(self) -> None:
        self.in_flight -= 1

    def queue_depths(self) -> dict[str, int]:
        depths = {"admission": len(self.admission), "synthesize": self.synth_queue.qsize(),
                  "prep_msm": self.prep_queue.qsize(), "epilogue": self.epilogue_queue.qsize()}
        for d in self.devices:
            depths[f"gpu{d.index}"] = d.queue.qsize()
        return depths


def _partition_of(item: Any) -> Partition:
    if isinstance(item, Partition):
        return item
    if isinstance(item, DeviceResult):
        return item.prepared.partition
    return item.partition

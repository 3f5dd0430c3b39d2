"""The library API: ``Engine`` (keys in, jobs in, proofs out), an async context manager.

    async with Engine(EngineConfig(backend="cpu")) as engine:
        engine.register_key("mult", zkey_path="circuit_final.zkey", wasm_path="circuit.wasm")
        job = await engine.submit("mult", [{"a": 3, "b": 11}, "witness.wtns"], priority="high")
        proofs = await job.result()          # one PartitionProof per partition, in order

Parts (input -> output): the ``KeyStore`` (key id -> resident key), the ``AdmissionQueue``
and device choice (``scheduler``: jobs -> partitions in priority order), the ``Pipeline``
(partitions -> proofs, four stages under one TaskGroup), ``Metrics`` (-> ``status()``,
``prometheus()``). Jobs are remembered by id and by the caller's ``request_id``, so a retried
submission returns the first job instead of proving twice.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import sys
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

from ..backends import backend_choice_json
from ..backends.protocol import WitnessShape
from ..formats.types import Groth16Zkey, Witness
from ..groth16.prover import WitnessMismatch, check_witness
from ..keycache import KeyCacheSettings
from .config import EngineConfig
from .cpu_workers import G2Workers, warm_up
from .devices import BackendFactory, Device, make_devices
from .jobs import Job, JobEvent, JobState, Priority
from .keystore import IN_MEMORY, KeySpec, KeyStore
from .metrics import Interval, Metrics, lock_busy_fraction, lock_held_seconds
from . import stages
from .pipeline import Pipeline, StageListener
from .staging import StagingPool
from ..errors import BadInput, Unavailable

log = logging.getLogger("pipeline.engine")


class EngineNotRunning(Unavailable):
    """Jobs were submitted to an engine that is not started (or already stopped)."""


class IdempotencyConflict(BadInput):
    """A request id was reused for a different job."""


class Engine:
    def __init__(self, config: EngineConfig | None = None, *, backend_factory: BackendFactory | None = None,
                 registry=None) -> None:
        """``registry``: a prometheus_client ``CollectorRegistry`` to add the engine's metrics to (the
        HTTP service passes its own, so /metrics is one registry); default: one of the engine's own."""
        self.config = config or EngineConfig()
        self._backend_factory = backend_factory
        self._executors: dict[str, Executor] = {}
        self._g2_workers: G2Workers | None = None
        self.devices: list[Device] = []
        self.metrics = Metrics(self.config.timeline_events_kept, registry=registry)
        self.metrics.expose(self.status)
        self.keystore: KeyStore | None = None
        self.pipeline: Pipeline | None = None
        self.staging: StagingPool | None = None
        self._runner: asyncio.Task | None = None
        self._jobs: collections.OrderedDict[str, Job] = collections.OrderedDict()
        self._by_request: dict[str, Job] = {}
        self._live: set[Job] = set()
        self._seq = 0
        self._state = "new"  # new -> running -> stopping -> stopped (or broken)
        self._pending_specs: list[KeySpec] = []
        self._saved_switch_interval: float | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def __aenter__(self) -> "Engine":
        await self.start()
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await self.shutdown(drain=exc_type is None)

    async def start(self) -> None:
        if self._state != "new":
            raise RuntimeError(f"engine already {self._state}")
        c = self.config
        self._executors = {
            "synthesize": ThreadPoolExecutor(c.synthesize_workers, thread_name_prefix="zkpipe-synth"),
            "prep_msm": ThreadPoolExecutor(c.prep_msm_workers, thread_name_prefix="zkpipe-prep"),
            "epilogue": ThreadPoolExecutor(c.epilogue_workers, thread_name_prefix="zkpipe-epi"),
            "keys": ThreadPoolExecutor(1, thread_name_prefix="zkpipe-keys"),
        }
        self.devices = await asyncio.to_thread(make_devices, c, self._backend_factory)  # backends may be slow to start
        self._g2_workers = G2Workers(c.g2_msm_executor, c.g2_msm_workers)
        if c.g2_msm_placement == "cpu":
            await asyncio.to_thread(warm_up, self._g2_workers.executor, c.g2_msm_workers)
        g2_executor = c.g2_msm_executor if c.g2_msm_placement == "cpu" else None
        self.keystore = KeyStore(c.key_host_budget_bytes, self._executors["keys"], g2_executor,
                                 KeyCacheSettings(c.key_cache, c.key_cache_dir))
        for spec in self._pending_specs:
            self.keystore.register(spec)
        # Pinned staging memory from the first device's backend, when it offers it (portable to every device).
        first = self.devices[0].backend
        self.staging = StagingPool(first.pinned_host_buffer if first.pins_host_memory else None,
                                   max_idle=c.staging_buffers_kept)
        self.pipeline = Pipeline(c, self.keystore, self.devices, self.metrics, self._executors, self._g2_workers,
                                 self.staging)
        self.metrics.started = time.perf_counter()
        if c.gil_switch_interval_s:  # None or 0: Python's own
            self._saved_switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(c.gil_switch_interval_s)
        self._runner = asyncio.create_task(self._run(), name="zkpipe-engine")
        self._runner.add_done_callback(self._runner_done)
        self._state = "running"

    async def _run(self) -> None:
        async with asyncio.TaskGroup() as tg:  # owns every worker; cancelled by shutdown()
            self.pipeline.start(tg)

    def _runner_done(self, task: asyncio.Task) -> None:
        if task.cancelled() or self._state == "stopping":
            return
        exc = task.exception()
        log.error("engine workers stopped", exc_info=exc)
        self._state = "broken"
        for job in list(self._live):
            job.fail(f"the engine stopped: {exc!r}")

    async def shutdown(self, drain: bool = True) -> None:
        """Stop taking jobs; finish (``drain``) or cancel the live ones; stop workers and pools."""
        if self._state in ("new", "stopped"):
            self._state = "stopped"
            return
        was_broken = self._state == "broken"
        self._state = "stopping"
        if self.staging is not None:
            self.staging.stopping()
        if not was_broken:
            if drain:
                await asyncio.gather(*(job.wait() for job in list(self._live)))
            else:
                for job in list(self._live):
                    job.cancel()
        if self._runner is not None:
            self._runner.cancel()
            try:
                await self._runner
            except (asyncio.CancelledError, Exception):
                pass
        await self._unload_everything()
        if self._saved_switch_interval is not None:
            sys.setswitchinterval(self._saved_switch_interval)
            self._saved_switch_interval = None
        if self._g2_workers is not None:
            await self._g2_workers.shutdown()  # before the pools: a running MSM still reads its key
        for executor in [*self._executors.values(), *(d.executor for d in self.devices)]:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
        if self.staging is not None:
            await asyncio.to_thread(self.staging.close)  # no worker thread can read a buffer now
        self._state = "stopped"

    async def _unload_everything(self) -> None:
        for device in self.devices:
            loop = asyncio.get_running_loop()

            def run(fn, *args, _device=device):
                return loop.run_in_executor(_device.executor, fn, *args)

            for key_id in self.keystore.key_ids():
                try:
                    await self.keystore.unload_from_device(key_id, device, run)
                except Exception:
                    log.exception("unloading key %s from device %d failed", key_id, device.index)

    def _check_running(self) -> None:
        if self._state != "running":
            raise EngineNotRunning(f"the engine is {self._state}; use it inside 'async with Engine(...)'")

    # -- keys ------------------------------------------------------------------------------
    def register_key(self, key_id: str, zkey_path: str | Path | None = None, r1cs_path: str | Path | None = None,
                     wasm_path: str | Path | None = None, zkey: Groth16Zkey | None = None) -> None:
        """Make a key known by id (nothing is read until first use or ``preload``): a .zkey file,
        or a key object already in memory (``zkey=``, e.g. from the development setup)."""
        if (zkey_path is None) == (zkey is None):
            raise ValueError(f"key {key_id!r}: give either zkey_path or zkey")
        spec = KeySpec(key_id, IN_MEMORY if zkey is not None else str(zkey_path),
                       None if r1cs_path is None else str(r1cs_path), None if wasm_path is None else str(wasm_path), zkey)
        if self.keystore is None:
            spec.check_files()
            self._pending_specs = [s for s in self._pending_specs if s.key_id != key_id] + [spec]
        else:
            self.keystore.register(spec)

    async def adopt_device_key(self, key_id: str, handle: Any, device: int = 0,
                               witness_like: Witness | WitnessShape | None = None) -> None:
        """Take ``handle``, the key already resident on device ``device`` through that device's own
        backend (``engine.devices[device].backend``; ``setup.adopt_dev_key`` makes one without an
        upload), as the key's copy there. The engine owns it from now on (unloads it at shutdown).
        ``witness_like``: a witness like those the key will prove (or its ``WitnessShape``), for which
        the copy's fixed-base tables are chosen (``CudaOptions.msm_fixed_base_order`` "auto"); without
        one, and before any partition of the key, they are chosen as for a random witness."""
        self._check_running()
        (target,) = self._devices([device])
        host = await self.keystore.acquire(key_id)
        try:
            await self._note_witness_like(key_id, host.zkey, witness_like)
            async with target.gpu_lock:
                await self.keystore.adopt_device_copy(key_id, target, host, handle, self._runner_for(target))
            await self._reserve_staging(key_id, host.zkey)
        finally:
            self.keystore.release(key_id)

    async def preload(self, key_id: str, devices: Iterable[int] | None = None,
                      witness_like: Witness | WitnessShape | None = None) -> None:
        """Load the key on the host and upload it to the given device indices (default: all); its
        fixed-base tables chosen for ``witness_like`` as ``adopt_device_key`` says."""
        self._check_running()
        host = await self.keystore.acquire(key_id)
        try:
            await self._note_witness_like(key_id, host.zkey, witness_like)
            for device in self._devices(devices):
                async with device.gpu_lock:
                    await self.keystore.device_copy(key_id, device, host, self._runner_for(device))
            await self._reserve_staging(key_id, host.zkey)
        finally:
            self.keystore.release(key_id)

    async def _reserve_staging(self, key_id: str, zkey: Groth16Zkey) -> None:
        """Pin the staging buffers the key's partitions will take (as many as can be in flight, up to the kept
        ones) now, not while one of them holds the GPU (StagingPool.reserve says why). A failed pin only costs
        time: the key stays loaded and its partitions pin for themselves."""
        count = min(self.config.max_partitions_in_flight, self.config.staging_buffers_kept)
        try:
            await asyncio.get_running_loop().run_in_executor(self._executors["prep_msm"], self.staging.reserve,
                                                             stages.witness_nbytes(zkey), count)
        except Exception as exc:  # e.g. the host's page-locked limit
            log.warning("key %r: staging buffers not pinned ahead (%s); its partitions pin their own", key_id, exc)

    async def _note_witness_like(self, key_id: str, zkey: Groth16Zkey,
                                 witness_like: Witness | WitnessShape | None) -> None:
        """The key store told of a witness like those the key will prove: a ``Witness`` is checked against the
        key (``check_witness``) and counted as prep_msm counts a partition's, on its executor."""
        if witness_like is None:
            return
        if isinstance(witness_like, WitnessShape):
            if witness_like.n_vars != zkey.n_vars:
                raise WitnessMismatch(f"key {key_id!r}: witness_like has {witness_like.n_vars} values, the key "
                                      f"expects {zkey.n_vars}")
            shape = witness_like
        else:
            check_witness(zkey, witness_like)
            loop = asyncio.get_running_loop()
            scalars = await loop.run_in_executor(self._executors["prep_msm"], stages.prep_msm, witness_like, None,
                                                 zkey.n_public + 1)
            shape = scalars.shape
        self.keystore.note_witness(key_id, shape)

    async def evict(self, key_id: str) -> None:
        """Drop the key from every device and from host memory (``KeyInUse`` if jobs use it)."""
        self._check_running()
        self.keystore.check_unused(key_id)  # before waiting for GPU locks and dropping device copies
        for device in self.devices:
            if device.index in self.keystore.resident_devices(key_id):
                async with device.gpu_lock:
                    await self.keystore.unload_from_device(key_id, device, self._runner_for(device))
        self.keystore.drop_host(key_id)

    def _devices(self, indices: Iterable[int] | None) -> list[Device]:
        if indices is None:
            return list(self.devices)
        chosen = []
        for i in indices:
            if not 0 <= i < len(self.devices):
                raise ValueError(f"no device {i} (the engine has {len(self.devices)})")
            chosen.append(self.devices[i])
        return chosen

    @staticmethod
    def _runner_for(device: Device):
        loop = asyncio.get_running_loop()
        return lambda fn, *args: loop.run_in_executor(device.executor, fn, *args)

    # -- jobs ------------------------------------------------------------------------------
    async def submit(self, key_id: str, partitions: Iterable[Any], priority: Priority | str = "normal",
                     request_id: str | None = None, on_event: Callable[[JobEvent], Any] | None = None) -> Job:
        """Queue a job: one proof per partition (a .wtns path, a ``Witness``, or a dict of circuit inputs).

        Returns at once with the job queued (after loading the key on first use). A repeated
        ``request_id`` returns the job first submitted under it.
        """
        self._check_running()
        if isinstance(partitions, (str, bytes, Path, Witness, dict)):
            raise TypeError(f"partitions must be a list of partitions, got one {type(partitions).__name__}: "
                            f"wrap a single partition in a list")
        existing = self._idempotent(key_id, request_id, partitions)
        if existing is not None:
            return existing
        sources = list(partitions)
        if not sources:
            raise ValueError("a job needs at least one partition")
        for i, src in enumerate(sources):
            if not isinstance(src, (str, Path, Witness, dict)):
                raise TypeError(f"partition {i}: expected a .wtns path, a Witness or a dict of circuit inputs, "
                                f"got {type(src).__name__}")
        prio = Priority.parse(priority)
        await self.keystore.acquire(key_id)  # the job's reference: keeps the key loaded until it finishes
        existing = self._idempotent(key_id, request_id, sources)  # a twin may have won the race
        if existing is not None:
            self.keystore.release(key_id)
            return existing
        self._check_running()
        self._seq += 1
        job = Job(key_id, len(sources), prio, request_id, self._seq, on_cancel=self.pipeline.admission.drop_job,
                  on_event=lambda ev, cb=on_event: self._job_event(ev, cb))
        self._jobs[job.id] = job
        if request_id is not None:
            self._by_request[request_id] = job
        self._live.add(job)
        self.metrics.counters["jobs_submitted"] += 1
        self.pipeline.admission.push_job(job, sources)
        self._forget_old_jobs()
        return job

    def _idempotent(self, key_id: str, request_id: str | None, partitions) -> Job | None:
        if request_id is None or request_id not in self._by_request:
            return None
        job = self._by_request[request_id]
        n = len(partitions) if hasattr(partitions, "__len__") else None
        if job.key_id != key_id or (n is not None and n != job.total):
            raise IdempotencyConflict(f"request id {request_id!r} was used for job {job.id} "
                                      f"(key {job.key_id!r}, {job.total} partitions)")
        return job

    def _job_event(self, ev: JobEvent, callback) -> None:
        if ev.state.finished:
            job = self._jobs.get(ev.job_id)
            if job is not None and job in self._live:
                self._live.discard(job)
                self.keystore.release(job.key_id)
                self.metrics.counters[f"jobs_{ev.state.value}"] += 1
        if callback is not None:
            try:
                callback(ev)
            except Exception:
                log.exception("job event callback failed")

    def _forget_old_jobs(self) -> None:
        finished = [j for j in self._jobs.values() if j.finished]
        for job in finished[: max(0, len(finished) - self.config.finished_jobs_kept)]:
            del self._jobs[job.id]
            if job.request_id is not None and self._by_request.get(job.request_id) is job:
                del self._by_request[job.request_id]

    def job(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def job_by_request(self, request_id: str) -> Job | None:
        return self._by_request.get(request_id)

    # -- observation -----------------------------------------------------------------------
    def add_stage_listener(self, listener: StageListener) -> None:
        """``listener(stage, partition)`` runs on the loop as a partition enters a stage (instrumentation)."""
        self.pipeline.listeners.append(listener)

    def timeline(self) -> list[Interval]:
        return list(self.metrics.timeline)

    def status(self) -> dict:
        now = time.perf_counter()
        live = list(self._live)
        p = self.pipeline
        return {
            "state": self._state,
            "uptime_s": now - self.metrics.started,
            "jobs": {"live": len(live), "queued": sum(j.state is JobState.QUEUED for j in live),
                     "running": sum(j.state is JobState.RUNNING for j in live), "remembered": len(self._jobs)},
            "counters": {**self.metrics.counters,
                         "g2_msm_pool_rebuilds": self._g2_workers.rebuilds if self._g2_workers else 0},
            "queues": p.queue_depths() if p else {},
            "in_stage": dict(self.metrics.in_stage),
            "partitions_in_flight": p.in_flight if p else 0,
            "peak_partitions_in_flight": self.metrics.peak_in_flight,
            "host_budget": p.host_budget.snapshot() if p else {},
            "staging": self.staging.snapshot() if self.staging else {},
            "keys": self.keystore.snapshot() if self.keystore else {"host_budget": {"used_bytes": 0}},
            "devices": [{"index": d.index, "ordinal": d.ordinal, "backend": d.backend.name,
                         "backend_choice": backend_choice_json(d.backend),
                         "gpu_lock_held": d.lock_held_since is not None,
                         "gpu_lock_busy_fraction": lock_busy_fraction(d, now, self.metrics.started),
                         "gpu_lock_held_s": lock_held_seconds(d, now),
                         "queue": d.queue.qsize() if d.queue else 0, "vram": d.vram.snapshot()}
                        for d in self.devices],
            "stage_medians_ms": self.metrics.medians(),
            "loop_lag_ms": {"last": self.metrics.loop_lag_last_ms, "max": self.metrics.loop_lag_max_ms},
        }

    def prometheus(self) -> str:
        """The engine's metrics as Prometheus text (its registry: ``self.metrics.registry``)."""
        return self.metrics.exposition()

"""One cluster worker: claims partitions from the shared store, proves them in its engine, stores the proofs.

    claim loop   free slots -> one claim transaction -> a prove task per partition; idle: wait for
                 a NOTIFY (new work) or the poll interval
    prove task   input from the store -> engine job of one partition -> proof stored if the lease
                 still holds (else discarded: fenced off)
    heartbeat    extends the leases held (a lost or cancelled lease cancels its engine job), reaps
                 expired leases of dead workers, refreshes this worker's row
    drain        stop claiming; finish what is held within the drain timeout; release the rest

A worker proves only keys in its own keys folder and prefers those resident in its engine.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from ...errors import fault_code
from ..engine_adapter import EngineAdapter, JobCancelled, JobFailed, partition_timings, proofs_to_json
from ..keys import KeyFolder
from .leases import Claim, PartitionLeases
from .notify import Notifications
from .pg_store import PartitionInput, PostgresJobStore
from .registry import WorkerRegistry
from .shared_spool import SharedSpool
from .worker_metrics import WorkerMetrics

log = logging.getLogger("zkpipe.cluster")
ENGINE_PARTITION = re.compile(r"^partition 0\b")  # the engine numbers the one partition of its job 0


@dataclass(frozen=True)
class WorkerSettings:
    lease_s: float
    heartbeat_interval_s: float
    claim_poll_interval_s: float
    affinity_max_age_s: float
    max_partition_attempts: int
    max_partitions: int  # partitions held (claimed, not finished) at once


@dataclass
class Held:
    claim: Claim
    engine_job: object | None = None
    lost: bool = False  # lease lost, job cancelled, or released: the result will not be stored
    storing: bool = False  # the proof's write is in flight (a heartbeat then sees the lease gone: not lost)
    released: bool = False  # given back by a drain: its engine job's cancellation counts as a release
    scratch: Path | None = None


@dataclass
class ClusterView:
    """The cluster as of this worker's last heartbeat (read synchronously by /metrics and status)."""

    partitions: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)


class ClusterWorker:
    def __init__(self, worker_id: str, store: PostgresJobStore, notifications: Notifications, engine: EngineAdapter,
                 keys: KeyFolder, scratch_dir: Path, settings: WorkerSettings,
                 shared_spool: SharedSpool | None = None) -> None:
        self.worker_id = worker_id
        self.store = store
        self.leases = PartitionLeases(store.pool)
        self.registry = WorkerRegistry(store.pool)
        self.notifications = notifications
        self.engine = engine
        self.keys = keys
        self.scratch_dir = scratch_dir
        self.settings = settings
        self.shared_spool = shared_spool
        self.held: dict[int, Held] = {}  # fencing token -> partition being proved here
        self.metrics = WorkerMetrics(worker_id)
        self.view = ClusterView()
        self.state = "running"
        self._slot_free = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._claim_task: asyncio.Task | None = None
        notifications.on_cancel = self._cancel_job

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Join the cluster: leases left by this worker's previous run go back to the queue at once."""
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.scratch_dir.iterdir():
            stale.unlink(missing_ok=True)
        released = await self.leases.release(self.worker_id)
        if released:
            log.info("released %d lease(s) held by this worker before its restart", released)
        devices = [{"index": d.get("index"), "ordinal": d.get("ordinal"), "backend": d.get("backend")}
                   for d in self.engine.status().get("devices", [])]
        await self.registry.register(self.worker_id, os.uname().nodename, os.getpid(), devices, self._served_keys())
        await self._refresh_view()

    async def run(self) -> None:
        """Claim and heartbeat until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            self._claim_task = tasks.create_task(self._claim_loop(tasks), name="zkpipe-claims")
            tasks.create_task(self._heartbeat_loop(), name="zkpipe-heartbeat")

    async def drain(self, timeout_s: float) -> None:
        """Stop claiming; wait up to ``timeout_s`` for the partitions held; release the rest."""
        self.state = "draining"
        if self._claim_task is not None:
            self._claim_task.cancel()
        with contextlib.suppress(Exception):
            await self.registry.set_state(self.worker_id, "draining")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        if self.held:
            tokens = list(self.held)
            released = await self.leases.release(self.worker_id, tokens)
            log.info("drain: released %d partition(s) not finished in %.0f s", released, timeout_s)
            for token in tokens:  # each one's task ends and counts itself as released
                if token in self.held:
                    self.held[token].released = True
                    self._give_up(token)
        self.state = "stopped"
        with contextlib.suppress(Exception):
            await self.registry.heartbeat(self.worker_id, "stopped", self._served_keys(), [], 0, self.metrics.snapshot())

    # -- claiming --------------------------------------------------------------------------------
    async def _claim_loop(self, tasks: asyncio.TaskGroup) -> None:
        s = self.settings
        while True:
            free = s.max_partitions - len(self.held)
            if free <= 0:
                self._slot_free.clear()
                await self._slot_free.wait()
                continue
            self.notifications.work.clear()
            started = time.perf_counter()
            try:
                claims = await self.leases.claim(self.worker_id, self._served_keys(), list(self.engine.resident_keys()),
                                                 free, s.lease_s, s.affinity_max_age_s, self.shared_spool is not None)
            except Exception as exc:  # the database is away: keep what is held, try again later
                log.warning("claim failed: %s", exc)
                await asyncio.sleep(s.claim_poll_interval_s)
                continue
            self.metrics.claimed(time.perf_counter() - started, len(claims))
            for claim in claims:
                self.held[claim.token] = Held(claim)
                self._idle.clear()
                tasks.create_task(self._prove(self.held[claim.token]), name=f"zkpipe-prove-{claim.token}")
            if len(claims) < free:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.notifications.work.wait(), s.claim_poll_interval_s)

    def _served_keys(self) -> list[str]:
        return sorted(key.key_id for key in self.keys.all())

    # -- proving ---------------------------------------------------------------------------------
    async def _prove(self, held: Held) -> None:
        claim = held.claim
        try:
            item = await self.leases.read_input(claim)
            if item is None or held.lost:  # the job ended meanwhile
                self.metrics.count("released" if held.released else "cancelled")
                return
            key = self.keys.get(claim.key_id)
            try:
                if key is None:
                    raise LookupError(f"key {claim.key_id!r} is no longer in this worker's keys folder")
                source = await asyncio.to_thread(self._materialize, held, item)
            except FileNotFoundError as exc:  # accepted and now gone: no worker can prove it
                held.storing = True
                failed = await self.leases.fail(claim, "internal_error", f"partition {claim.index}: its input is gone: {exc}")
                self.metrics.count("failed" if failed else "fenced")
                return
            except Exception as exc:  # a problem of this worker, not of the job: another one takes it
                log.warning("partition %s/%d not started here: %s", claim.job_id, claim.index, exc)
                released = await self.leases.release(self.worker_id, [claim.token])
                self.metrics.count("released" if released else "fenced")
                await asyncio.sleep(self.settings.claim_poll_interval_s)  # not straight back to the same claim
                return
            try:
                self.engine.register(key)
                held.engine_job = await self.engine.submit(claim.key_id, [source], claim.priority,
                                                           f"{claim.job_id}.{claim.index}.{claim.token}")
            except Exception as exc:  # the engine refuses it (a key that does not load): the job fails
                failed = await self.leases.fail(claim, fault_code(exc), f"partition {claim.index} not started: {exc}")
                self.metrics.count("failed" if failed else "fenced")
                return
            if held.lost:
                held.engine_job.cancel()
            proofs = await held.engine_job.result()
            held.storing = True
            if await self.leases.complete(claim, self.worker_id, proofs_to_json(proofs)[0],
                                          partition_timings(proofs)[0]):
                self.metrics.count("stored")
                if item.spool_file is not None:
                    await asyncio.to_thread(self.shared_spool.remove, item.spool_file)
            else:
                self.metrics.count("fenced")
                log.info("partition %s/%d: proof discarded, lease %d no longer current",
                         claim.job_id, claim.index, claim.token)
        except JobFailed as exc:
            reason = ENGINE_PARTITION.sub(f"partition {claim.index}", exc.reason)
            held.storing = True
            self.metrics.count("failed" if await self.leases.fail(claim, exc.code, reason) else "fenced")
        except JobCancelled:
            self.metrics.count("released" if held.released else "cancelled")
        except Exception:  # the store is away or broken: the lease expires and another worker retries
            log.exception("partition %s/%d: unexpected error", claim.job_id, claim.index)
            self.metrics.count("errors")
        finally:
            self.held.pop(claim.token, None)
            if held.scratch is not None:
                held.scratch.unlink(missing_ok=True)
            self._slot_free.set()
            if not self.held:
                self._idle.set()

    def _materialize(self, held: Held, item: PartitionInput):
        """Blocking: circuit inputs become a dict; a .wtns a path the engine reads (the shared spool's file,
        or a local copy of the row's bytes)."""
        if item.spool_file is not None:
            path = self.shared_spool.path(item.spool_file)
            if held.claim.input_kind == "inputs":
                return orjson.loads(path.read_bytes())
            if not path.is_file():
                raise FileNotFoundError(f"{path} (shared_spool_dir mounted the same on every worker?)")
            return str(path)
        if held.claim.input_kind == "inputs":
            return orjson.loads(item.data)
        held.scratch = self.scratch_dir / f"{held.claim.token}.wtns"
        held.scratch.write_bytes(item.data)
        return str(held.scratch)

    def _give_up(self, token: int) -> None:
        held = self.held.get(token)
        if held is not None:
            held.lost = True
            if held.engine_job is not None:
                held.engine_job.cancel()

    def _cancel_job(self, job_id: str) -> None:
        """NOTIFY zkpipe_cancel: the job ended elsewhere (cancelled, failed); stop proving its partitions."""
        stopped = [token for token, held in self.held.items() if held.claim.job_id == job_id and not held.lost]
        for token in stopped:
            self._give_up(token)
        if stopped:
            log.info("job %s ended elsewhere: stopped proving %d partition(s) held here", job_id, len(stopped))

    # -- heartbeat -------------------------------------------------------------------------------
    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_interval_s)
            try:
                await self.heartbeat()
            except Exception as exc:
                log.warning("heartbeat failed: %s", exc)

    async def heartbeat(self) -> None:
        s = self.settings
        tokens = list(self.held)
        kept = await self.leases.extend(self.worker_id, tokens, s.lease_s)
        for token in tokens:
            held = self.held.get(token)
            if token not in kept and held is not None and not held.lost and not held.storing:
                self.metrics.count("leases_lost")
                log.warning("lease %d on %s/%d lost; its engine job is cancelled", token, held.claim.job_id,
                            held.claim.index)
                self._give_up(token)
        requeued, failed = await self.leases.reap(s.max_partition_attempts)
        self.metrics.count("reaped", requeued + failed)
        await asyncio.to_thread(self.keys.scan)  # keys added to (or removed from) the folder
        await self.registry.heartbeat(self.worker_id, self.state, self._served_keys(),
                                      sorted(self.engine.resident_keys()), len(self.held), self.metrics.snapshot())
        await self._refresh_view()

    async def _refresh_view(self) -> None:
        self.view = ClusterView(await self.store.partition_counts(), await self.store.counts())

"""Durable jobs between the HTTP handlers and the engine.

    accept()     spooled upload -> committed spool folder + SQLite row -> dispatch queue  (then 202)
    dispatcher   dispatch queue (priority, then arrival) -> engine.submit (which may wait: backpressure)
    follower     one per engine job: its events -> progress; its result -> proofs in SQLite
    janitor      deletes finished jobs older than result_ttl_s
    prober       while a storage write has failed, probes the storage until it works again

At start, every stored job that is queued or running (the previous process died or stopped
with it in flight) goes back on the dispatch queue and runs again, and every spool folder
whose row the store lacks gets it back from its manifest (``recovery``): accepted work is
never deleted.
A cancel is final at once: it is stored before the answer, and a proof the engine finishes
later is dropped.

A long-poll (``wait``) is woken by the job's final state as soon as the store holds it, and is
answered with that row and its proofs from memory, before the spool folder is cleared: the
client does not wait for a second read of the store, nor for the clean-up.

A job's state changes in memory only once the store holds the change. A final state that
cannot be stored (disk full, store locked) is retried until it is; meanwhile the service
refuses new jobs (507/503) and reports itself unhealthy. None of the background tasks stops
on a storage error.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import fields, replace

import orjson

from ..errors import BadInput
from .engine_adapter import PRIORITIES, EngineAdapter, JobCancelled, JobFailed, partition_timings, proofs_to_json
from .job_log import JobObserver
from .keys import KeyFolder
from . import storage_health
from .messages import public_message
from .storage_health import StorageHealth, StorageUnavailable, health_problems
from .recovery import unfinished_jobs
from .spool import Spool
from .store import JobRow, JobStore, manifest_of
from .uploads import INPUTS_FILE, Upload, partition_file

log = logging.getLogger("zkpipe.server.jobs")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 5.0  # backoff of a final state the store refused


class _Waiter:
    """What a job's long-polls wait on: set when the job is final, with its row and proofs (None
    when set by shutdown: the waiters then read the job's current state)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.final: tuple[JobRow, list | None] | None = None

    def wake(self, final: tuple[JobRow, list | None] | None = None) -> None:
        self.final = final
        self.event.set()


class RequestIdConflict(BadInput):
    """A request_id already names a job of another key or partition count (the client reused it by mistake)."""

    def __init__(self, existing: JobRow) -> None:
        super().__init__(f"request_id {existing.request_id!r} already names job {existing.job_id} (key "
                         f"{existing.key_id!r}, {existing.n_partitions} partition(s)); use a new request_id")
        self.existing = existing


class JobService:
    def __init__(self, store: JobStore, spool: Spool, engine: EngineAdapter, keys: KeyFolder,
                 result_ttl_s: float, janitor_interval_s: float, health: StorageHealth | None = None,
                 probe_interval_s: float | None = None, observer: JobObserver | None = None) -> None:
        self.store = store
        self.spool = spool
        self.engine = engine
        self.keys = keys
        self.result_ttl_s = result_ttl_s
        self.janitor_interval_s = janitor_interval_s
        self.health = health or StorageHealth()
        self.probe_interval_s = storage_health.PROBE_INTERVAL_S if probe_interval_s is None else probe_interval_s
        self._active: dict[str, JobRow] = {}  # accepted, not finished, in this process
        self._engine_jobs: dict[str, object] = {}
        self._waiters: dict[str, _Waiter] = {}  # job id -> its long-polls' wake-up
        self._finishing: dict[str, asyncio.Event] = {}  # job id -> set once its final state is stored
        self._queue: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self._tasks: asyncio.TaskGroup | None = None
        self.stopped: BaseException | None = None  # why run() ended, once it has
        self.closing = False
        self.observer = observer or JobObserver()  # a log line per job event, job histograms
        self.counters = {"accepted": 0, "duplicates": 0, "done": 0, "failed": 0, "cancelled": 0, "recovered": 0}
        self.restored_from_spool = 0  # jobs of the last recover() whose row came back from the spool

    # -- lifecycle -------------------------------------------------------------------------------
    async def recover(self) -> int:
        """Put every unfinished job back in line (``recovery.unfinished_jobs``); return how many."""
        rows, self.restored_from_spool = await unfinished_jobs(self.store, self.spool)
        for row in rows:
            self._enqueue(row)
        self.counters["recovered"] = len(rows)
        if rows:
            log.info("recovered %d unfinished job(s) (%d of them restored from the spool into %s)", len(rows),
                     self.restored_from_spool, self.store.path)
        return len(rows)

    async def run(self) -> None:
        """The background work; cancel the task running it to stop (jobs in flight stay stored)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                tasks.create_task(self._dispatch_loop(), name="zkpipe-dispatcher")
                tasks.create_task(self._janitor_loop(), name="zkpipe-janitor")
                probes = [lambda: asyncio.to_thread(self.spool.probe), self.store.probe]
                tasks.create_task(self.health.probe_while_failing(probes, self.probe_interval_s),
                                  name="zkpipe-storage-probe")
        except BaseException as exc:
            self.stopped = exc
            raise

    def wake_waiters(self) -> None:
        """Shutdown: every long-poll answers now, with the job's current state."""
        self.closing = True
        for waiter in self._waiters.values():
            waiter.wake()

    def problems(self) -> list[dict[str, str]]:
        """Why the service cannot take or run jobs now (empty when healthy), as ``{"code", "message"}``."""
        return health_problems(self.stopped, self.health)

    # -- accepting -------------------------------------------------------------------------------
    def check_accepting(self) -> None:
        """Raise the recorded ``StorageUnavailable`` while the storage is failing (before reading a body)."""
        self.health.raise_if_failing()

    async def accept(self, upload: Upload) -> tuple[JobRow, bool]:
        """Make an upload a durable job: ``(row, True)``; ``(existing, False)`` for a known request_id."""
        row = JobRow(job_id=upload.job_id, key_id=upload.key.key_id, priority=upload.priority,
                     input_kind=upload.input_kind, n_partitions=upload.n_partitions, request_id=upload.request_id)
        try:
            self.health.raise_if_failing()
            t0 = time.perf_counter()
            await asyncio.to_thread(self.spool.commit, upload.job_id, manifest_of(row))
            t1 = time.perf_counter()
            stored, created = await self.store.insert(row)
            t2 = time.perf_counter()
        except BaseException:
            await asyncio.to_thread(self.spool.discard, upload.job_id)
            raise
        if not created:
            await asyncio.to_thread(self.spool.discard, upload.job_id)
            if (stored.key_id, stored.n_partitions) != (row.key_id, row.n_partitions):
                raise RequestIdConflict(stored)
            self.counters["duplicates"] += 1
            return self._active.get(stored.job_id, stored), False
        # where the time before the 202 went (kept with the job's other timings)
        stored.timings.update(upload_ms=round(upload.received_ms, 3), spool_commit_ms=round((t1 - t0) * 1e3, 3),
                              store_insert_ms=round((t2 - t1) * 1e3, 3))
        self.counters["accepted"] += 1
        self.observer.accepted(stored)
        self._enqueue(stored)
        return stored, True

    def _enqueue(self, row: JobRow) -> None:
        self._active[row.job_id] = row
        self._queue.put_nowait((PRIORITY_RANK.get(row.priority, len(PRIORITIES)), row.seq, row.job_id))

    # -- reading ---------------------------------------------------------------------------------
    async def get(self, job_id: str) -> tuple[JobRow | None, list | None]:
        row = self._active.get(job_id)
        if row is not None:
            return replace(row), None
        row = await self.store.get(job_id)
        if row is None or row.state != "done":
            return row, None
        return row, await self.store.get_result(job_id)

    async def wait(self, job_id: str, seconds: float) -> tuple[JobRow | None, list | None]:
        """The job once it is finished, or after ``seconds``, whichever comes first."""
        if seconds > 0 and not self.closing and job_id in self._active:
            waiter = self._waiters.setdefault(job_id, _Waiter())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):  # no task per wait, unlike wait_for before 3.12
                    await waiter.event.wait()
            if waiter.final is not None:  # just stored: no second read of the store
                row, result = waiter.final
                return replace(row), result
        return await self.get(job_id)

    async def list(self, state: str | None, key_id: str | None, limit: int) -> list[JobRow]:
        rows = await self.store.list(state, key_id, limit)
        return [self._active.get(row.job_id, row) if state is None or row.state == state else row for row in rows]

    def queue_depth(self) -> int:
        return self._queue.qsize()

    def active_count(self) -> int:
        return len(self._active)

    # -- cancelling ------------------------------------------------------------------------------
    async def cancel(self, job_id: str) -> JobRow | None:
        """Cancel an unfinished job (stored first, then the engine is told); a finished one is returned unchanged.

        Raises ``StorageUnavailable`` when the cancel cannot be stored: the job then runs on.
        """
        row = self._active.get(job_id)
        if row is None:
            return await self.store.get(job_id)
        await self._finish(row, "cancelled", None, "cancelled by the client", retry=False)
        engine_job = self._engine_jobs.get(job_id)
        if engine_job is not None and row.state == "cancelled":
            engine_job.cancel()
        return replace(row)

    # -- background --------------------------------------------------------------------------------
    async def _dispatch_loop(self) -> None:
        while True:
            _, _, job_id = await self._queue.get()
            row = self._active.get(job_id)
            if row is None or row.is_final or job_id in self._finishing:
                continue
            try:
                partitions = await self._partitions(row)
                key = self.keys.get(row.key_id)
                if key is None:
                    await asyncio.to_thread(self.keys.scan)
                    key = self.keys.get(row.key_id)
                if key is None:
                    raise LookupError(f"key {row.key_id!r} is no longer in the keys folder")
                self.engine.register(key)
                engine_job = await self.engine.submit(row.key_id, partitions, row.priority, row.job_id)
            except Exception as exc:  # the engine refused this job; others go on (its failure is stored apart)
                log.warning("job %s not started: %s", job_id, exc)
                self._tasks.create_task(self._finish_quietly(row, "failed", "not_started", str(exc)))
                continue
            if row.is_final or job_id in self._finishing:  # cancelled while we waited for the engine to take it
                engine_job.cancel()
                continue
            self._engine_jobs[job_id] = engine_job
            self._tasks.create_task(self._follow(row, engine_job), name=f"zkpipe-follow-{job_id[:8]}")

    async def _partitions(self, row: JobRow) -> list:
        folder = self.spool.job_dir(row.job_id)
        if row.input_kind == "inputs":  # a file to read: off the loop
            return orjson.loads(await asyncio.to_thread((folder / INPUTS_FILE).read_bytes))
        return [str(folder / partition_file(i)) for i in range(row.n_partitions)]  # paths only: no thread hop

    async def _follow(self, row: JobRow, engine_job) -> None:
        try:
            async for event in engine_job.events():
                if row.is_final:
                    return
                row.partitions_done = event.partitions_done
                if event.kind in ("running", "partition_done") and row.state == "queued":
                    await self._mark_running(row, event.time)
                if event.kind == "partition_done":
                    self.observer.partition_done(row, event.detail.get("index"), event.detail.get("timings_ms", {}))
            proofs = await engine_job.result()
            if not row.is_final:
                await self._finish(row, "done", None, None, proofs_to_json(proofs),
                                   timings={"partitions_ms": partition_timings(proofs)})
        except JobFailed as exc:
            await self._finish_quietly(row, "failed", exc.code, exc.reason)
        except JobCancelled:
            await self._finish_quietly(row, "cancelled", None, "cancelled")
        except Exception as exc:
            log.exception("job %s: unexpected error while following it", row.job_id)
            await self._finish_quietly(row, "failed", "internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            self._engine_jobs.pop(row.job_id, None)

    async def _mark_running(self, row: JobRow, started_at: float) -> None:
        """Running, in memory once stored; a failed write leaves it queued (the next event tries again)."""
        try:
            await self.store.mark_running(row.job_id, started_at)
        except StorageUnavailable as exc:
            log.warning("job %s: cannot store that it runs (%s); will try again", row.job_id, exc.message)
            return
        if row.state == "queued":
            row.state, row.started_at = "running", started_at
            self.observer.started(row)

    async def _finish_quietly(self, row: JobRow, state: str, code: str | None, message: str | None) -> None:
        """``_finish`` for background tasks: an unexpected error is logged, never raised into the task group."""
        try:
            await self._finish(row, state, code, message)
        except Exception:
            log.exception("job %s: cannot record its final state %s", row.job_id, state)

    async def _finish(self, row: JobRow, state: str, code: str | None, message: str | None,
                      result: list | None = None, timings: dict | None = None, retry: bool = True) -> None:
        """Store a final state, then apply it in memory. One finish per job: a second caller waits for the first.

        ``retry``: a store that refuses the write is asked again (backing off) until it takes it;
        without, its ``StorageUnavailable`` is raised and nothing changes.
        """
        if row.is_final:
            return
        running = self._finishing.get(row.job_id)
        if running is not None:
            await running.wait()
            return
        finished = self._finishing[row.job_id] = asyncio.Event()
        try:
            # the client learns file names, never the server's folders
            final = row.finished(state, code, public_message(message), timings)
            await self._store_final(final, result, retry)
            for f in fields(JobRow):
                setattr(row, f.name, getattr(final, f.name))
        finally:
            finished.set()
            del self._finishing[row.job_id]
        self._active.pop(row.job_id, None)
        waiter = self._waiters.pop(row.job_id, None)
        if waiter is not None:  # before the log line and the clean-up: the answer goes out meanwhile
            waiter.wake((replace(row), result if state == "done" else None))
        self.counters[state] += 1
        self.observer.finished(row)
        await asyncio.to_thread(self.spool.discard, row.job_id)

    async def _store_final(self, final: JobRow, result: list | None, retry: bool) -> None:
        delay = RETRY_FIRST_S
        while True:
            try:
                await self.store.finish(final, result)
                return
            except StorageUnavailable as exc:
                if not retry:
                    raise
                log.warning("job %s: cannot store its final state %s (%s); retrying in %.2f s", final.job_id,
                            final.state, exc.message, delay)
            await self.health.wait_recovered(delay)  # or as soon as a probe finds the storage working
            delay = min(delay * 2, RETRY_MAX_S)

    async def _janitor_loop(self) -> None:
        while True:
            await asyncio.sleep(self.janitor_interval_s)
            try:
                expired = await self.store.delete_finished_before(time.time() - self.result_ttl_s)
                if expired:
                    log.info("deleted %d finished job(s) older than %.0f s", len(expired), self.result_ttl_s)
            except Exception:
                log.exception("janitor pass failed")

"""Durable jobs between the HTTP handlers and the engine.

    accept()     spooled upload -> committed spool folder + SQLite row -> dispatch queue  (then 202)
    dispatcher   dispatch queue (priority, then arrival) -> engine.submit (which may wait: backpressure)
    follower     one per engine job: its events -> progress; its result -> proofs in SQLite
    janitor      deletes finished jobs older than result_ttl_s
    prober       while a storage write has failed, probes the storage until it works again

At start, every stored job that is queued or running (the previous process died or stopped
with it in flight) goes back on the dispatch queue and runs again, and every spool folder
whose row the store lacks gets it back from its manifest: accepted work is never deleted.
A cancel is final at once: it is stored before the answer, and a proof the engine finishes
later is dropped.

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

from .engine_adapter import PRIORITIES, EngineAdapter, JobCancelled, JobFailed, partition_timings, proofs_to_json
from .keys import KeyFolder
from .storage_health import StorageHealth, StorageUnavailable
from .store import JobRow, JobStore, Spool, manifest_of, row_from_manifest
from .uploads import INPUTS_FILE, Upload, partition_file

log = logging.getLogger("zkpipe.server.jobs")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 5.0  # backoff of a final state the store refused
PROBE_INTERVAL_S = 1.0  # how often a failing storage is probed


class JobService:
    def __init__(self, store: JobStore, spool: Spool, engine: EngineAdapter, keys: KeyFolder,
                 result_ttl_s: float, janitor_interval_s: float, health: StorageHealth | None = None,
                 probe_interval_s: float | None = None) -> None:
        self.store = store
        self.spool = spool
        self.engine = engine
        self.keys = keys
        self.result_ttl_s = result_ttl_s
        self.janitor_interval_s = janitor_interval_s
        self.health = health or StorageHealth()
        self.probe_interval_s = PROBE_INTERVAL_S if probe_interval_s is None else probe_interval_s
        self._active: dict[str, JobRow] = {}  # accepted, not finished, in this process
        self._engine_jobs: dict[str, object] = {}
        self._finished_events: dict[str, asyncio.Event] = {}
        self._finishing: dict[str, asyncio.Event] = {}  # job id -> set once its final state is stored
        self._queue: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self._tasks: asyncio.TaskGroup | None = None
        self._storage_back = asyncio.Event()  # set (and renewed) each time a probe finds the storage working
        self.stopped: BaseException | None = None  # why run() ended, once it has
        self.closing = False
        self.counters = {"accepted": 0, "duplicates": 0, "done": 0, "failed": 0, "cancelled": 0, "recovered": 0}
        self.restored_from_spool = 0  # jobs of the last recover() whose row came back from the spool

    # -- lifecycle -------------------------------------------------------------------------------
    async def recover(self) -> int:
        """Put every unfinished job back in line: the store's, then any spool folder the store lacks.

        A full disk does not stop the start: jobs the store cannot mark queued again run anyway
        (the store says running until they run), and a folder whose row cannot be restored now
        stays in the spool for the next start.
        """
        try:
            rows = await self.store.requeue_unfinished()
        except StorageUnavailable as exc:
            log.warning("cannot mark the unfinished jobs queued (%s); running them anyway", exc.message)
            rows = await self.store.unfinished()
            for row in rows:
                row.state, row.started_at, row.partitions_done = "queued", None, 0
        live = {row.job_id for row in rows}
        await asyncio.to_thread(self.spool.clear_uploads)
        spooled = [job_id for job_id in await asyncio.to_thread(self.spool.job_ids) if job_id not in live]
        known = await self.store.states_of(spooled)
        for job_id in spooled:
            if job_id in known:  # finished: what is left of its folder
                await asyncio.to_thread(self.spool.discard, job_id)
                continue
            restored = await self._restore_from_spool(job_id)
            if restored is not None:
                rows.append(restored)
                self.restored_from_spool += 1
        for row in rows:
            self._enqueue(row)
        self.counters["recovered"] = len(rows)
        if rows:
            log.info("recovered %d unfinished job(s) (%d of them restored from the spool into %s)", len(rows),
                     self.restored_from_spool, self.store.path)
        return len(rows)

    async def _restore_from_spool(self, job_id: str) -> JobRow | None:
        """The row of an accepted job the store lost, from its manifest; else the folder is set aside."""
        manifest = await asyncio.to_thread(self.spool.manifest, job_id)
        try:
            row = row_from_manifest(manifest)
            if row.job_id != job_id:
                raise ValueError(f"its manifest names job {row.job_id!r}")
        except (TypeError, ValueError) as exc:
            where = await asyncio.to_thread(self.spool.quarantine, job_id)
            log.warning("spool folder of job %s has no usable job.json (%s) and no row in the store: moved to %s",
                        job_id, exc, where)
            return None
        try:
            stored, created = await self.store.insert(row)
        except StorageUnavailable as exc:
            log.warning("spool folder of job %s has no row in the store, and it cannot be restored now (%s); "
                        "it stays in the spool for the next start", job_id, exc.message)
            return None
        if not created:
            where = await asyncio.to_thread(self.spool.quarantine, job_id)
            log.warning("spool folder of job %s: its request_id is taken by job %s: moved to %s", job_id,
                        stored.job_id, where)
            return None
        return stored

    async def run(self) -> None:
        """The background work; cancel the task running it to stop (jobs in flight stay stored)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                tasks.create_task(self._dispatch_loop(), name="zkpipe-dispatcher")
                tasks.create_task(self._janitor_loop(), name="zkpipe-janitor")
                tasks.create_task(self._probe_loop(), name="zkpipe-storage-probe")
        except BaseException as exc:
            self.stopped = exc
            raise

    def wake_waiters(self) -> None:
        """Shutdown: every long-poll answers now, with the job's current state."""
        self.closing = True
        for event in self._finished_events.values():
            event.set()

    def problems(self) -> list[dict[str, str]]:
        """Why the service cannot take or run jobs now (empty when healthy), as ``{"code", "message"}``."""
        found = []
        if self.stopped is not None:
            reason = "cancelled" if isinstance(self.stopped, asyncio.CancelledError) else repr(self.stopped)
            found.append({"code": "job_service_stopped", "message": f"the job service stopped: {reason}"})
        problem = self.health.problem
        if problem is not None:
            code = "insufficient_storage" if problem.disk_full else "storage_unavailable"
            found.append({"code": code, "message": problem.message})
        return found

    # -- accepting -------------------------------------------------------------------------------
    def check_accepting(self) -> None:
        """Raise the recorded ``StorageUnavailable`` while the storage is failing (before reading a body)."""
        if self.health.problem is not None:
            raise self.health.problem

    async def accept(self, upload: Upload) -> tuple[JobRow, bool]:
        """Make an upload a durable job: ``(row, True)``; ``(existing, False)`` for a known request_id."""
        row = JobRow(job_id=upload.job_id, key_id=upload.key.key_id, priority=upload.priority,
                     input_kind=upload.input_kind, n_partitions=upload.n_partitions, request_id=upload.request_id)
        try:
            self.check_accepting()
            await asyncio.to_thread(self.spool.commit, upload.job_id, manifest_of(row))
            stored, created = await self.store.insert(row)
        except BaseException:
            await asyncio.to_thread(self.spool.discard, upload.job_id)
            raise
        if not created:
            await asyncio.to_thread(self.spool.discard, upload.job_id)
            self.counters["duplicates"] += 1
            return self._active.get(stored.job_id, stored), False
        self.counters["accepted"] += 1
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
            event = self._finished_events.setdefault(job_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), seconds)
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
                partitions = await asyncio.to_thread(self._partitions, row)
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

    def _partitions(self, row: JobRow) -> list:
        folder = self.spool.job_dir(row.job_id)
        if row.input_kind == "inputs":
            return orjson.loads((folder / INPUTS_FILE).read_bytes())
        return [str(folder / partition_file(i)) for i in range(row.n_partitions)]

    async def _follow(self, row: JobRow, engine_job) -> None:
        try:
            async for event in engine_job.events():
                if row.is_final:
                    return
                row.partitions_done = event.partitions_done
                if event.kind in ("running", "partition_done") and row.state == "queued":
                    await self._mark_running(row, event.time)
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
            final = self._final_row(row, state, code, message, timings)
            await self._store_final(final, result, retry)
            for f in fields(JobRow):
                setattr(row, f.name, getattr(final, f.name))
        finally:
            finished.set()
            del self._finishing[row.job_id]
        self._active.pop(row.job_id, None)
        self.counters[state] += 1
        await asyncio.to_thread(self.spool.discard, row.job_id)
        event = self._finished_events.pop(row.job_id, None)
        if event is not None:
            event.set()

    @staticmethod
    def _final_row(row: JobRow, state: str, code: str | None, message: str | None, timings: dict | None) -> JobRow:
        now = time.time()
        start = row.started_at or now
        final = replace(row, state=state, finished_at=now, error_code=code, error_message=message,
                        timings={**row.timings, **(timings or {})})
        if state == "done":
            final.partitions_done = row.n_partitions
        final.timings.update(queued_ms=round((start - row.created_at) * 1e3, 3),
                             run_ms=round((now - start) * 1e3, 3) if row.started_at else 0.0,
                             total_ms=round((now - row.created_at) * 1e3, 3))
        return final

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
            with contextlib.suppress(TimeoutError):  # or as soon as a probe finds the storage working
                await asyncio.wait_for(self._storage_back.wait(), delay)
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

    async def _probe_loop(self) -> None:
        """While a write has failed: probe the spool's disk and the store's lock until both work."""
        while True:
            await asyncio.sleep(self.probe_interval_s)
            if self.health.problem is None:
                continue
            try:
                await asyncio.to_thread(self.spool.probe)
                await self.store.probe()
            except StorageUnavailable:
                continue  # recorded by the store or the spool; probe again
            except Exception:
                log.exception("storage probe failed")
                continue
            self.health.recovered()
            self._storage_back.set()
            self._storage_back = asyncio.Event()

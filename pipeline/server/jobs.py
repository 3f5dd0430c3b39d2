"""Durable jobs between the HTTP handlers and the engine.

    accept()     spooled upload -> committed spool folder + SQLite row -> dispatch queue  (then 202)
    dispatcher   dispatch queue (priority, then arrival) -> engine.submit (which may wait: backpressure)
    follower     one per engine job: its events -> progress; its result -> proofs in SQLite
    janitor      deletes finished jobs older than result_ttl_s

At start, every stored job that is queued or running (the previous process died or stopped
with it in flight) goes back on the dispatch queue and runs again. A cancel is final at once:
it is stored before the answer, and a proof the engine finishes later is dropped.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import replace

import orjson

from .engine_adapter import PRIORITIES, EngineAdapter, JobCancelled, JobFailed, partition_timings, proofs_to_json
from .keys import KeyFolder
from .store import JobRow, JobStore, Spool
from .uploads import INPUTS_FILE, Upload, partition_file

log = logging.getLogger("zkpipe.server.jobs")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}


class JobService:
    def __init__(self, store: JobStore, spool: Spool, engine: EngineAdapter, keys: KeyFolder,
                 result_ttl_s: float, janitor_interval_s: float) -> None:
        self.store = store
        self.spool = spool
        self.engine = engine
        self.keys = keys
        self.result_ttl_s = result_ttl_s
        self.janitor_interval_s = janitor_interval_s
        self._active: dict[str, JobRow] = {}  # accepted, not finished, in this process
        self._engine_jobs: dict[str, object] = {}
        self._finished_events: dict[str, asyncio.Event] = {}
        self._results_being_stored: dict[str, list] = {}
        self._queue: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self._tasks: asyncio.TaskGroup | None = None
        self._ready = asyncio.Event()
        self.closing = False
        self.counters = {"accepted": 0, "duplicates": 0, "done": 0, "failed": 0, "cancelled": 0, "recovered": 0}

    # -- lifecycle -------------------------------------------------------------------------------
    async def recover(self) -> int:
        """Put every unfinished stored job back in line; delete spool folders of no live job."""
        rows = await self.store.requeue_unfinished()
        for row in rows:
            self._enqueue(row)
        await asyncio.to_thread(self.spool.sweep, {row.job_id for row in rows})
        self.counters["recovered"] = len(rows)
        if rows:
            log.info("recovered %d unfinished job(s) from %s", len(rows), self.store.path)
        return len(rows)

    async def run(self) -> None:
        """The background work; cancel the task running it to stop (jobs in flight stay stored)."""
        async with asyncio.TaskGroup() as tasks:
            self._tasks = tasks
            self._ready.set()
            tasks.create_task(self._dispatch_loop(), name="zkpipe-dispatcher")
            tasks.create_task(self._janitor_loop(), name="zkpipe-janitor")

    def wake_waiters(self) -> None:
        """Shutdown: every long-poll answers now, with the job's current state."""
        self.closing = True
        for event in self._finished_events.values():
            event.set()

    # -- accepting -------------------------------------------------------------------------------
    async def accept(self, upload: Upload) -> tuple[JobRow, bool]:
        """Make an upload a durable job: ``(row, True)``; ``(existing, False)`` for a known request_id."""
        await asyncio.to_thread(self.spool.commit, upload.job_id)
        row = JobRow(job_id=upload.job_id, key_id=upload.key.key_id, priority=upload.priority,
                     input_kind=upload.input_kind, n_partitions=upload.n_partitions, request_id=upload.request_id)
        try:
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
            return replace(row), self._results_being_stored.get(job_id)
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
        """Cancel an unfinished job (stored at once); a finished one is returned unchanged."""
        row = self._active.get(job_id)
        if row is None:
            return await self.store.get(job_id)
        engine_job = self._engine_jobs.get(job_id)
        if engine_job is not None:
            engine_job.cancel()
        await self._finish(row, "cancelled", None, "cancelled by the client")
        return replace(row)

    # -- background --------------------------------------------------------------------------------
    async def _dispatch_loop(self) -> None:
        while True:
            _, _, job_id = await self._queue.get()
            row = self._active.get(job_id)
            if row is None or row.is_final:
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
            except Exception as exc:  # the engine refused this job; others go on
                log.warning("job %s not started: %s", job_id, exc)
                await self._finish(row, "failed", "not_started", str(exc))
                continue
            if row.is_final:  # cancelled while we waited for the engine to take it
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
                if event.kind == "running" and row.state == "queued":
                    row.state, row.started_at = "running", event.time
                    await self.store.mark_running(row.job_id, event.time)
            proofs = await engine_job.result()
            if not row.is_final:
                row.timings["partitions_ms"] = partition_timings(proofs)
                await self._finish(row, "done", None, None, proofs_to_json(proofs))
        except JobFailed as exc:
            await self._finish(row, "failed", exc.code, exc.reason)
        except JobCancelled:
            await self._finish(row, "cancelled", None, "cancelled")
        except Exception as exc:
            log.exception("job %s: unexpected error while following it", row.job_id)
            await self._finish(row, "failed", "internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            self._engine_jobs.pop(row.job_id, None)

    async def _finish(self, row: JobRow, state: str, code: str | None, message: str | None,
                      result: list | None = None) -> None:
        if row.is_final:
            return
        now = time.time()
        row.state, row.finished_at, row.error_code, row.error_message = state, now, code, message
        if state == "done":
            row.partitions_done = row.n_partitions
        start = row.started_at or now
        row.timings.update(queued_ms=round((start - row.created_at) * 1e3, 3),
                           run_ms=round((now - start) * 1e3, 3) if row.started_at else 0.0,
                           total_ms=round((now - row.created_at) * 1e3, 3))
        if result is not None:
            self._results_being_stored[row.job_id] = result
        try:
            await self.store.finish(row, result)
        finally:
            self._results_being_stored.pop(row.job_id, None)
            self._active.pop(row.job_id, None)
        self.counters[state] += 1
        await asyncio.to_thread(self.spool.discard, row.job_id)
        event = self._finished_events.pop(row.job_id, None)
        if event is not None:
            event.set()

    async def _janitor_loop(self) -> None:
        while True:
            await asyncio.sleep(self.janitor_interval_s)
            try:
                expired = await self.store.delete_finished_before(time.time() - self.result_ttl_s)
                if expired:
                    log.info("deleted %d finished job(s) older than %.0f s", len(expired), self.result_ttl_s)
            except Exception:
                log.exception("janitor pass failed")


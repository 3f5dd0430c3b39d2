"""The HTTP API's job service when the store is shared: any worker answers for any job.

The handlers call the same methods as on the one-host ``JobService`` (accept, get, wait, list,
cancel, queue_depth, active_count, counters, store); here they read and write the shared store
instead of a local queue, and the proving is the ``ClusterWorker``'s:

    accept()   spooled upload -> job + partitions + inputs (bytea) in one transaction -> 202
    wait()     NOTIFY zkpipe_job wakes the long-poll; the store is re-read every poll interval too
    cancel()   final at once in the store; NOTIFY zkpipe_cancel reaches the worker holding a partition
    janitor    deletes finished jobs older than result_ttl_s, and workers silent that long
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

import orjson

from ..errors import ApiError
from .. import storage_health
from ..spool import Spool
from ..storage_health import health_problems
from ..store import JobRow
from ..uploads import INPUTS_FILE, Upload, partition_file
from .notify import Notifications
from .pg_store import PartitionInput, PostgresJobStore
from .shared_spool import SharedSpool
from .worker import ClusterWorker

log = logging.getLogger("zkpipe.cluster")


def stage_partition_inputs(folder: Path, upload: Upload, limit: int,
                           shared: SharedSpool | None) -> list[PartitionInput]:
    """Blocking: each partition's input (a .wtns, or one circuit-inputs object as JSON) for the store:
    in the row up to ``limit`` bytes, else a file in the shared spool, else refused (413)."""
    if upload.input_kind == "inputs":
        sources = [(None, orjson.dumps(item)) for item in orjson.loads((folder / INPUTS_FILE).read_bytes())]
    else:
        sources = [(folder / partition_file(i), None) for i in range(upload.n_partitions)]
    staged = []
    for index, (path, blob) in enumerate(sources):
        size = len(blob) if blob is not None else path.stat().st_size
        if size <= limit:
            staged.append(PartitionInput(data=blob if blob is not None else path.read_bytes()))
        elif shared is not None:
            staged.append(PartitionInput(spool_file=shared.store(upload.job_id, index, source=path, data=blob)))
        else:
            raise ApiError(413, "partition_too_large",
                           f"partition {index} is {size} bytes; the database takes at most {limit} bytes per partition "
                           "(max_db_partition_bytes) and no shared_spool_dir is set for larger ones (docs/cluster.md)")
    return staged


class ClusterJobService:
    def __init__(self, store: PostgresJobStore, spool: Spool, worker: ClusterWorker, notifications: Notifications,
                 result_ttl_s: float, janitor_interval_s: float, max_db_partition_bytes: int) -> None:
        self.store = store
        self.spool = spool
        self.worker = worker
        self.notifications = notifications
        self.result_ttl_s = result_ttl_s
        self.janitor_interval_s = janitor_interval_s
        self.max_db_partition_bytes = max_db_partition_bytes
        self.poll_s = worker.settings.claim_poll_interval_s
        self.closing = False
        self._counters = {"accepted": 0, "duplicates": 0, "cancelled": 0}
        self.health = spool.health  # this worker's disk: uploads land in its spool before the database has them
        self.stopped: BaseException | None = None  # why run() ended, once it has
        self.restored_from_spool = 0  # the database is the queue: nothing comes back from a local spool

    @property
    def counters(self) -> dict[str, int]:
        """This worker's HTTP counters and its proving counters (the status page's ``counters``)."""
        return {**self._counters, **self.worker.metrics.counters}

    # -- lifecycle -------------------------------------------------------------------------------
    async def recover(self) -> int:
        """Nothing to put back in line (the store is the queue); drop uploads this worker never finished."""
        await asyncio.to_thread(self.spool.clear_uploads)
        return 0

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.notifications.run(), name="zkpipe-listen")
                tasks.create_task(self.worker.run(), name="zkpipe-worker")
                tasks.create_task(self._janitor_loop(), name="zkpipe-janitor")
                tasks.create_task(self.health.probe_while_failing([lambda: asyncio.to_thread(self.spool.probe)],
                                                                  storage_health.PROBE_INTERVAL_S),
                                  name="zkpipe-storage-probe")
        except BaseException as exc:
            self.stopped = exc
            raise

    def problems(self) -> list[dict[str, str]]:
        """As on the one-host service: the worker's background work ended, or its disk refuses writes."""
        return health_problems(self.stopped, self.health)

    def check_accepting(self) -> None:
        self.health.raise_if_failing()

    def wake_waiters(self) -> None:
        self.closing = True
        self.notifications.wake_all_waiters()

    # -- accepting -------------------------------------------------------------------------------
    async def accept(self, upload: Upload) -> tuple[JobRow, bool]:
        folder = self.spool.tmp_root / upload.job_id
        shared = self.worker.shared_spool
        created = False
        try:
            inputs = await asyncio.to_thread(stage_partition_inputs, folder, upload, self.max_db_partition_bytes, shared)
            row = JobRow(job_id=upload.job_id, key_id=upload.key.key_id, priority=upload.priority,
                         input_kind=upload.input_kind, n_partitions=upload.n_partitions, request_id=upload.request_id)
            stored, created = await self.store.insert(row, inputs)
        finally:
            await asyncio.to_thread(self.spool.discard, upload.job_id)
            if shared is not None and not created:  # refused, failed or a duplicate: its shared files go
                await asyncio.to_thread(shared.discard, upload.job_id)
        self._counters["accepted" if created else "duplicates"] += 1
        return stored, created

    # -- reading ---------------------------------------------------------------------------------
    async def get(self, job_id: str) -> tuple[JobRow | None, list | None]:
        row = await self.store.get(job_id)
        if row is None or row.state != "done":
            return row, None
        return row, await self.store.get_result(job_id)

    async def wait(self, job_id: str, seconds: float) -> tuple[JobRow | None, list | None]:
        """The job once it is finished, or after ``seconds``, whichever comes first."""
        deadline = time.monotonic() + seconds
        with self.notifications.job_finished(job_id) as finished:
            while not self.closing:
                row = await self.store.get(job_id)
                left = deadline - time.monotonic()
                if row is None or row.is_final or left <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(finished.wait(), min(left, self.poll_s))
        return await self.get(job_id)

    async def list(self, state: str | None, key_id: str | None, limit: int) -> list[JobRow]:
        return await self.store.list(state, key_id, limit)

    def queue_depth(self) -> int:
        """Partitions queued in the whole cluster (as of this worker's last heartbeat)."""
        return self.worker.view.partitions.get("queued", 0)

    def active_count(self) -> int:
        """Jobs queued or running in the whole cluster (as of this worker's last heartbeat)."""
        return sum(self.worker.view.jobs.get(state, 0) for state in ("queued", "running"))

    # -- cancelling ------------------------------------------------------------------------------
    async def cancel(self, job_id: str) -> JobRow | None:
        row = await self.store.cancel(job_id)
        if row is not None and row.state == "cancelled":
            self._counters["cancelled"] += 1
        return row

    # -- background ------------------------------------------------------------------------------
    async def _janitor_loop(self) -> None:
        while True:
            await asyncio.sleep(self.janitor_interval_s)
            try:
                expired = await self.store.delete_finished_before(time.time() - self.result_ttl_s)
                forgotten = await self.worker.registry.forget_before(self.result_ttl_s)
                await self._sweep_shared_spool()
                if expired or forgotten:
                    log.info("deleted %d finished job(s) and %d silent worker(s) older than %.0f s",
                             len(expired), forgotten, self.result_ttl_s)
            except Exception:
                log.exception("janitor pass failed")

    async def _sweep_shared_spool(self, grace_s: float = 600.0) -> int:
        """Delete shared spool folders of jobs no longer queued or running (older than ``grace_s``: an upload
        being committed by another worker is younger)."""
        shared = self.worker.shared_spool
        if shared is None:
            return 0
        old = await asyncio.to_thread(shared.candidates, grace_s)
        live = await self.store.unfinished(old) if old else set()
        for job_id in set(old) - live:
            await asyncio.to_thread(shared.discard, job_id)
        return len(set(old) - live)

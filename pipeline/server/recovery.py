"""At start: every accepted, unfinished job back in line, from the store and from the spool.

The store's queued and running jobs run again (the previous process died or stopped with them
in flight). The spool is the record of accepted work: a job folder the store has no row for
(the store was lost or emptied, or a crash came between the spool commit and the insert) gets
its row back from its ``job.json``; a folder of a finished job is what is left after a crash,
and is deleted; a folder of no known shape is moved to ``spool/orphaned/``, never deleted.

A full disk does not stop the start: jobs the store cannot mark queued again run anyway (the
store says running until they run), and a folder whose row cannot be restored now stays in the
spool for the next start.
"""
from __future__ import annotations

import asyncio
import logging

from .spool import Spool
from .storage_health import StorageUnavailable
from .store import JobRow, JobStore, row_from_manifest

log = logging.getLogger("zkpipe.server.jobs")


async def unfinished_jobs(store: JobStore, spool: Spool) -> tuple[list[JobRow], int]:
    """The jobs to run again, queued, oldest first; and how many of them came back from the spool."""
    try:
        rows = await store.requeue_unfinished()
    except StorageUnavailable as exc:
        log.warning("cannot mark the unfinished jobs queued (%s); running them anyway", exc.message)
        rows = await store.unfinished()
        for row in rows:
            row.state, row.started_at, row.partitions_done = "queued", None, 0
    live = {row.job_id for row in rows}
    await asyncio.to_thread(spool.clear_uploads)
    spooled = [job_id for job_id in await asyncio.to_thread(spool.job_ids) if job_id not in live]
    known = await store.states_of(spooled)
    restored = 0
    for job_id in spooled:
        if job_id in known:  # finished: what is left of its folder
            await asyncio.to_thread(spool.discard, job_id)
            continue
        row = await _restore_from_spool(store, spool, job_id)
        if row is not None:
            rows.append(row)
            restored += 1
    return rows, restored


async def _restore_from_spool(store: JobStore, spool: Spool, job_id: str) -> JobRow | None:
    """The row of an accepted job the store lost, from its manifest; else the folder is set aside."""
    manifest = await asyncio.to_thread(spool.manifest, job_id)
    try:
        row = row_from_manifest(manifest)
        if row.job_id != job_id:
            raise ValueError(f"its manifest names job {row.job_id!r}")
    except (TypeError, ValueError) as exc:
        where = await asyncio.to_thread(spool.quarantine, job_id)
        log.warning("spool folder of job %s has no usable job.json (%s) and no row in the store: moved to %s",
                    job_id, exc, where)
        return None
    try:
        stored, created = await store.insert(row)
    except StorageUnavailable as exc:
        log.warning("spool folder of job %s has no row in the store, and it cannot be restored now (%s); "
                    "it stays in the spool for the next start", job_id, exc.message)
        return None
    if not created:
        where = await asyncio.to_thread(spool.quarantine, job_id)
        log.warning("spool folder of job %s: its request_id is taken by job %s: moved to %s", job_id,
                    stored.job_id, where)
        return None
    return stored

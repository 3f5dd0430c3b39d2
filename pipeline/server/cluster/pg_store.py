"""The PostgreSQL job store of a cluster: jobs and their partitions, shared by every worker.

Reads are those of ``store_api.JobStoreApi`` (the SQLite store answers the same ones). Writes:
``insert`` stores a job, its partitions and their inputs in one transaction (committed before
the client's 202; the commit's NOTIFY wakes idle workers), ``cancel`` makes a job final at once
and tells the workers holding its partitions. Partition claims and leases are ``leases.py``.

Timestamps of jobs are epoch seconds from the database's clock, so times written by different
hosts compare. asyncpg's pool is the only connection owner; nothing here blocks the loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import asyncpg
import orjson

from ...engine.config import PRIORITIES
from ...errors import Unavailable
from ..store import COLUMNS, STATES, JobRow
from .migrations import migrate

CHANNEL_WORK = "zkpipe_work"  # payload: key id; new or released partitions
CHANNEL_JOB = "zkpipe_job"  # payload: job id; the job reached a final state
CHANNEL_CANCEL = "zkpipe_cancel"  # payload: job id; its holders stop proving it
JOB_COLUMNS = ", ".join(COLUMNS)
EPOCH_NOW = "extract(epoch FROM now())::float8"


@dataclass(frozen=True)
class PartitionInput:
    """What one partition proves: the bytes themselves, or a file name in the shared spool folder."""

    data: bytes | None = None
    spool_file: str | None = None


def job_row(record) -> JobRow:
    return JobRow(**dict(record))


async def init_connection(conn: asyncpg.Connection, fsync: bool = True) -> None:
    """jsonb through orjson; with fsync off, commits do not wait for the WAL flush."""
    await conn.set_type_codec("jsonb", encoder=lambda v: orjson.dumps(v).decode(), decoder=orjson.loads,
                              schema="pg_catalog")
    if not fsync:
        await conn.execute("SET synchronous_commit = off")


async def finish_job(conn: asyncpg.Connection, job_id: str, state: str, code: str | None = None,
                     message: str | None = None) -> bool:
    """Inside a transaction: the job's final state and timings; its unfinished partitions cancelled
    (their holders told), its remaining inputs deleted. False when it was already final.
    Partitions are locked before the job row, the order every transaction here keeps."""
    held = await conn.fetchval("""
        WITH old AS (SELECT idx, state FROM partitions WHERE job_id = $1 AND state IN ('queued', 'leased')
                     ORDER BY idx FOR UPDATE),
             c AS (UPDATE partitions p SET state = 'cancelled', lease_owner = NULL, lease_expires_at = NULL
                   FROM old WHERE p.job_id = $1 AND p.idx = old.idx RETURNING old.state)
        SELECT count(*) FILTER (WHERE state = 'leased') FROM c""", job_id)
    done = await conn.fetchval(f"""
        WITH t AS (SELECT {EPOCH_NOW} AS now)
        UPDATE jobs j SET state = $2, finished_at = t.now, error_code = $3, error_message = $4,
            partitions_done = CASE WHEN $2 = 'done' THEN n_partitions ELSE partitions_done END,
            timings = j.timings || jsonb_build_object(
                'queued_ms', round(((coalesce(j.started_at, t.now) - j.created_at) * 1000)::numeric, 3),
                'run_ms', CASE WHEN j.started_at IS NULL THEN 0.0
                               ELSE round(((t.now - j.started_at) * 1000)::numeric, 3) END,
                'total_ms', round(((t.now - j.created_at) * 1000)::numeric, 3))
        FROM t WHERE j.job_id = $1 AND j.state IN ('queued', 'running') RETURNING 1""", job_id, state, code, message)
    if done is None:
        return False
    await conn.execute("DELETE FROM partition_inputs WHERE job_id = $1", job_id)
    await conn.execute("SELECT pg_notify($1, $2)", CHANNEL_JOB, job_id)
    if held:
        await conn.execute("SELECT pg_notify($1, $2)", CHANNEL_CANCEL, job_id)
    return True


class StoreUnavailable(Unavailable):
    """The shared job store cannot be reached (or refuses this worker)."""


class PostgresJobStore:
    """``async with``-free: ``open()`` (pool + migrations), ``close()``."""

    def __init__(self, url: str, fsync: bool = True, max_connections: int = 8) -> None:
        self.url = url
        self.fsync = fsync
        self.max_connections = max_connections
        self.pool: asyncpg.Pool | None = None

    @property
    def path(self) -> str:
        """Where the jobs are, for logs (the URL without a password)."""
        head, _, tail = self.url.rpartition("@")
        return self.url if not head else f"{head.split('://')[0]}://…@{tail}"

    async def open(self, timeout_s: float = 30.0) -> None:
        try:
            self.pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self.max_connections, timeout=timeout_s,
                                                  init=lambda conn: init_connection(conn, self.fsync))
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise StoreUnavailable(f"cannot open the job store {self.path}: {exc}") from exc
        async with self.pool.acquire() as conn:
            await migrate(conn)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
            self.pool = None

    # -- writes --------------------------------------------------------------------------------
    async def insert(self, row: JobRow, inputs: list[PartitionInput]) -> tuple[JobRow, bool]:
        """Store a job with one input per partition: ``(row, True)``, or ``(existing, False)``
        when its request_id is taken (the inputs are then not stored)."""
        rank = PRIORITIES.index(row.priority)
        async with self.pool.acquire() as conn, conn.transaction():
            stored = await conn.fetchrow(f"""
                INSERT INTO jobs (job_id, request_id, key_id, priority, input_kind, n_partitions, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, {EPOCH_NOW}) ON CONFLICT (request_id) DO NOTHING
                RETURNING {JOB_COLUMNS}""",
                row.job_id, row.request_id, row.key_id, row.priority, row.input_kind, row.n_partitions)
            if stored is None:
                existing = await conn.fetchrow(f"SELECT {JOB_COLUMNS} FROM jobs WHERE request_id = $1", row.request_id)
                return job_row(existing), False
            await conn.execute("""
                INSERT INTO partitions (job_id, idx, key_id, priority_rank, job_seq, in_shared_spool)
                SELECT $1, i - 1, $2, $3, $4, spooled FROM unnest($5::boolean[]) WITH ORDINALITY AS t(spooled, i)""",
                row.job_id, row.key_id, rank, stored["seq"], [item.spool_file is not None for item in inputs])
            await conn.executemany("INSERT INTO partition_inputs (job_id, idx, data, spool_file) VALUES ($1, $2, $3, $4)",
                                   [(row.job_id, i, item.data, item.spool_file) for i, item in enumerate(inputs)])
            await conn.execute("SELECT pg_notify($1, $2)", CHANNEL_WORK, row.key_id)
        return job_row(stored), True

    async def cancel(self, job_id: str) -> JobRow | None:
        """Cancel an unfinished job (final at once; holders of its partitions are told); a finished
        one is returned unchanged; None for an unknown job."""
        async with self.pool.acquire() as conn, conn.transaction():
            await finish_job(conn, job_id, "cancelled", None, "cancelled by the client")
            found = await conn.fetchrow(f"SELECT {JOB_COLUMNS} FROM jobs WHERE job_id = $1", job_id)
        return job_row(found) if found else None

    # -- reads (store_api.JobStoreApi) -------------------------------------------------------------
    async def get(self, job_id: str) -> JobRow | None:
        found = await self.pool.fetchrow(f"SELECT {JOB_COLUMNS} FROM jobs WHERE job_id = $1", job_id)
        return job_row(found) if found else None

    async def get_result(self, job_id: str) -> list | None:
        async with self.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            state = await conn.fetchval("SELECT state FROM jobs WHERE job_id = $1", job_id)
            if state != "done":
                return None
            return [r[0] for r in await conn.fetch("SELECT result FROM partitions WHERE job_id = $1 ORDER BY idx",
                                                   job_id)]

    async def list(self, state: str | None, key_id: str | None, limit: int) -> list[JobRow]:
        records = await self.pool.fetch(f"""
            SELECT {JOB_COLUMNS} FROM jobs WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR key_id = $2)
            ORDER BY seq DESC LIMIT $3""", state, key_id, int(limit))
        return [job_row(r) for r in records]

    async def counts(self) -> dict[str, int]:
        found = dict(await self.pool.fetch("SELECT state, count(*) FROM jobs GROUP BY state"))
        return {state: found.get(state, 0) for state in STATES}

    async def unfinished(self, job_ids: list[str]) -> set[str]:
        """Those of ``job_ids`` that are still queued or running."""
        rows = await self.pool.fetch("SELECT job_id FROM jobs WHERE job_id = ANY($1::text[]) AND state IN "
                                     "('queued', 'running')", job_ids)
        return {r[0] for r in rows}

    async def partition_counts(self) -> dict[str, int]:
        """Partitions per state (queued, leased, done, failed, cancelled), over every job kept."""
        found = dict(await self.pool.fetch("SELECT state, count(*) FROM partitions GROUP BY state"))
        return {state: found.get(state, 0) for state in ("queued", "leased", "done", "failed", "cancelled")}

    async def delete_finished_before(self, cutoff: float) -> list[str]:
        records = await self.pool.fetch("DELETE FROM jobs WHERE finished_at < $1 RETURNING job_id", cutoff)
        return [r[0] for r in records]

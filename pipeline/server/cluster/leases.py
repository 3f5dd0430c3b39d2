"""Partition leases in the shared store: claim, heartbeat, store the proof (fenced), fail, release, reap.

A worker claims partitions in one short transaction (``FOR UPDATE SKIP LOCKED``: workers never
wait on each other's claims). Each claim takes a new fencing token from a sequence and a lease
that ends ``lease_s`` from now (the database's clock) unless the worker's heartbeat extends it.
A proof is stored only with the partition's current token, so a worker that lost its lease
(killed, paused, partitioned away) and finishes late changes nothing: every partition's proof
is stored exactly once. Expired leases go back to the queue (``reap``), or fail the job after
``max_attempts`` claims.

Claim order: partitions queued longer than the affinity age limit first (nothing starves),
then priority, then keys this worker holds resident (key affinity), then arrival.

Lock order is partitions before jobs everywhere; two failures of one job at the same instant
can still deadlock, so every transaction here is retried when PostgreSQL reports one.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg

from ...engine.config import PRIORITIES
from .pg_store import CHANNEL_WORK, EPOCH_NOW, PartitionInput, finish_job

RETRIED = (asyncpg.exceptions.DeadlockDetectedError, asyncpg.exceptions.SerializationError)


@dataclass(frozen=True)
class Claim:
    job_id: str
    index: int
    key_id: str
    priority: str
    input_kind: str  # "wtns" | "inputs"
    token: int  # the fencing token of this lease
    attempt: int  # 1 for the first claim of this partition


class PartitionLeases:
    def __init__(self, pool: asyncpg.Pool, tries: int = 5) -> None:
        self.pool = pool
        self.tries = tries

    async def _transaction(self, body, one_statement: bool = False):
        """``body(conn)`` in a transaction (one statement is its own: no BEGIN/COMMIT round trips),
        retried when PostgreSQL reports a deadlock or a serialization failure."""
        for attempt in range(self.tries):
            try:
                async with self.pool.acquire() as conn:
                    if one_statement:
                        return await body(conn)
                    async with conn.transaction():
                        return await body(conn)
            except RETRIED:
                if attempt == self.tries - 1:
                    raise
                await asyncio.sleep(0.01 * (attempt + 1))

    async def claim(self, worker_id: str, served_keys: list[str], resident_keys: list[str], limit: int,
                    lease_s: float, affinity_max_age_s: float, shared_spool: bool = True) -> list[Claim]:
        """Lease up to ``limit`` queued partitions of the served keys (see the module docstring for the order);
        partitions whose input is in the shared spool only when this worker mounts it."""
        if limit <= 0 or not served_keys:
            return []

        async def body(conn):  # one statement, one round trip: claims are the hot path of small proofs
            rows = await conn.fetch(f"""
                WITH picked AS (
                    SELECT job_id, idx FROM partitions
                    WHERE state = 'queued' AND key_id = ANY($2::text[]) AND ($7 OR NOT in_shared_spool)
                    ORDER BY (enqueued_at < now() - make_interval(secs => $5)) DESC, priority_rank,
                             (key_id = ANY($3::text[])) DESC, job_seq, idx
                    LIMIT $4 FOR UPDATE SKIP LOCKED),
                claimed AS (
                    UPDATE partitions p SET state = 'leased', lease_owner = $1, lease_token = nextval('lease_tokens'),
                        lease_expires_at = now() + make_interval(secs => $6), attempts = p.attempts + 1
                    FROM picked WHERE p.job_id = picked.job_id AND p.idx = picked.idx
                    RETURNING p.job_id, p.idx, p.key_id, p.priority_rank, p.lease_token, p.attempts),
                started AS (
                    UPDATE jobs j SET state = 'running', started_at = {EPOCH_NOW}
                    FROM (SELECT DISTINCT job_id FROM claimed) c WHERE j.job_id = c.job_id AND j.state = 'queued')
                SELECT c.*, j.input_kind FROM claimed c JOIN jobs j ON j.job_id = c.job_id
                ORDER BY c.priority_rank, c.lease_token""",
                worker_id, served_keys, resident_keys, limit, float(affinity_max_age_s), float(lease_s), shared_spool)
            return [Claim(r["job_id"], r["idx"], r["key_id"], PRIORITIES[r["priority_rank"]], r["input_kind"],
                          r["lease_token"], r["attempts"]) for r in rows]

        return await self._transaction(body, one_statement=True)

    async def read_input(self, claim: Claim) -> PartitionInput | None:
        """The partition's .wtns or circuit-inputs JSON, or its shared spool file (None once not needed)."""
        found = await self.pool.fetchrow("SELECT data, spool_file FROM partition_inputs WHERE job_id = $1 AND idx = $2",
                                         claim.job_id, claim.index)
        return PartitionInput(found["data"], found["spool_file"]) if found else None

    async def extend(self, worker_id: str, tokens: list[int], lease_s: float) -> set[int]:
        """Heartbeat: extend these leases; return the tokens still held (the others were lost or cancelled)."""
        if not tokens:
            return set()
        rows = await self.pool.fetch("""
            UPDATE partitions SET lease_expires_at = now() + make_interval(secs => $3)
            WHERE state = 'leased' AND lease_token = ANY($2::bigint[]) AND lease_owner = $1 RETURNING lease_token""",
            worker_id, tokens, float(lease_s))
        return {r[0] for r in rows}

    async def complete(self, claim: Claim, worker_id: str, item: dict, timings: dict) -> bool:
        """Store the partition's proof if ``claim`` still holds the lease; False: fenced off, discarded."""
        async def body(conn):
            stored = await conn.fetchval("""
                UPDATE partitions SET state = 'done', result = $4, timings = $5, stored_by = $6,
                    lease_owner = NULL, lease_expires_at = NULL
                WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased' RETURNING 1""",
                claim.job_id, claim.index, claim.token, item, timings, worker_id)
            if stored is None:
                return False
            await conn.execute("DELETE FROM partition_inputs WHERE job_id = $1 AND idx = $2", claim.job_id, claim.index)
            left = await conn.fetchval("UPDATE jobs SET partitions_done = partitions_done + 1 WHERE job_id = $1"
                                       " RETURNING n_partitions - partitions_done", claim.job_id)
            if left == 0:
                await conn.execute("""
                    UPDATE jobs SET timings = timings || jsonb_build_object('partitions_ms',
                        (SELECT jsonb_agg(timings ORDER BY idx) FROM partitions WHERE job_id = $1))
                    WHERE job_id = $1""", claim.job_id)
                await finish_job(conn, claim.job_id, "done")
            return True

        return await self._transaction(body)

    async def fail(self, claim: Claim, code: str, reason: str) -> bool:
        """The partition cannot be proved (bad input): the job fails. False if the lease was lost."""
        async def body(conn):
            failed = await conn.fetchval("""
                UPDATE partitions SET state = 'failed', error = $4, lease_owner = NULL, lease_expires_at = NULL
                WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased' RETURNING 1""",
                claim.job_id, claim.index, claim.token, reason)
            if failed is not None:
                await finish_job(conn, claim.job_id, "failed", code, reason)
            return failed is not None

        return await self._transaction(body)

    async def release(self, worker_id: str, tokens: list[int] | None = None) -> int:
        """Give leases back to the queue at once (drain, or a restart of this worker: ``tokens`` None
        releases every lease of ``worker_id``). A release is not a failed attempt."""
        async def body(conn):
            rows = await conn.fetch("""
                UPDATE partitions SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL,
                    attempts = greatest(attempts - 1, 0)
                WHERE state = 'leased' AND lease_owner = $1 AND ($2::bigint[] IS NULL OR lease_token = ANY($2::bigint[]))
                RETURNING key_id""", worker_id, tokens)
            for key_id in {r[0] for r in rows}:
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL_WORK, key_id)
            return len(rows)

        return await self._transaction(body)

    async def reap(self, max_attempts: int) -> tuple[int, int]:
        """Expired leases: back to the queue, or (after ``max_attempts`` claims) the job fails.
        Returns (requeued, failed). Any worker may run it; concurrent reapers skip each other's rows."""
        async def body(conn):
            rows = await conn.fetch("""
                WITH expired AS (SELECT job_id, idx FROM partitions WHERE state = 'leased' AND lease_expires_at < now()
                                 FOR UPDATE SKIP LOCKED)
                UPDATE partitions p SET state = CASE WHEN p.attempts >= $1 THEN 'failed' ELSE 'queued' END,
                    error = CASE WHEN p.attempts >= $1 THEN 'lease expired ' || p.attempts || ' times' END,
                    lease_owner = NULL, lease_expires_at = NULL
                FROM expired WHERE p.job_id = expired.job_id AND p.idx = expired.idx
                RETURNING p.job_id, p.idx, p.key_id, p.state, p.attempts""", max_attempts)
            requeued = [r for r in rows if r["state"] == "queued"]
            for key_id in {r["key_id"] for r in requeued}:
                await conn.execute("SELECT pg_notify($1, $2)", CHANNEL_WORK, key_id)
            for r in rows:
                if r["state"] == "failed":
                    await finish_job(conn, r["job_id"], "failed", "internal_error",
                                     f"partition {r['idx']}: its worker stopped answering {r['attempts']} times "
                                     f"(max_partition_attempts = {max_attempts})")
            return len(requeued), len(rows) - len(requeued)

        return await self._transaction(body)

"""The workers table: who is in the cluster, what it holds, when it last answered.

Each worker upserts its row at start, refreshes it with every heartbeat (resident keys, partitions
held, counters) and marks it ``stopped`` when it leaves. ``/v1/status`` on any worker lists them
all; a row whose heartbeat is older than the lease time is shown as not alive.
"""
from __future__ import annotations

import asyncpg

WORKER_STATES = ("running", "draining", "stopped")


class WorkerRegistry:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def register(self, worker_id: str, host: str, pid: int, devices: list[dict], served_keys: list[str]) -> None:
        await self.pool.execute("""
            INSERT INTO workers (worker_id, host, pid, state, devices, served_keys)
            VALUES ($1, $2, $3, 'running', $4, $5)
            ON CONFLICT (worker_id) DO UPDATE SET host = $2, pid = $3, state = 'running', devices = $4,
                served_keys = $5, resident_keys = '{}', held = 0, counters = '{}', started_at = now(),
                heartbeat_at = now()""", worker_id, host, pid, devices, served_keys)

    async def heartbeat(self, worker_id: str, state: str, served_keys: list[str], resident_keys: list[str],
                        held: int, counters: dict) -> None:
        await self.pool.execute("""
            UPDATE workers SET state = $2, served_keys = $3, resident_keys = $4, held = $5, counters = $6,
                heartbeat_at = now() WHERE worker_id = $1""",
            worker_id, state, served_keys, resident_keys, held, counters)

    async def set_state(self, worker_id: str, state: str) -> None:
        await self.pool.execute("UPDATE workers SET state = $2, heartbeat_at = now() WHERE worker_id = $1",
                                worker_id, state)

    async def list(self, lease_s: float) -> list[dict]:
        """Every known worker, newest heartbeat first, with ``alive`` (heartbeat within ``lease_s``)."""
        rows = await self.pool.fetch("""
            SELECT worker_id, host, pid, state, devices, served_keys, resident_keys, held, counters,
                   extract(epoch FROM started_at)::float8 AS started_at,
                   extract(epoch FROM heartbeat_at)::float8 AS heartbeat_at,
                   extract(epoch FROM now() - heartbeat_at)::float8 AS heartbeat_age_s
            FROM workers ORDER BY heartbeat_at DESC""")
        return [{**dict(r), "served_keys": list(r["served_keys"]), "resident_keys": list(r["resident_keys"]),
                 "heartbeat_age_s": round(r["heartbeat_age_s"], 3),
                 "alive": r["state"] != "stopped" and r["heartbeat_age_s"] < lease_s} for r in rows]

    async def forget_before(self, age_s: float) -> int:
        """Delete rows of workers silent for longer than ``age_s``."""
        result = await self.pool.execute("DELETE FROM workers WHERE heartbeat_at < now() - make_interval(secs => $1)",
                                         float(age_s))
        return int(result.split()[-1])

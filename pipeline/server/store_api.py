"""What the HTTP layer reads from a job store, whichever one backs it.

Two stores implement it: ``store.JobStore`` (SQLite in the state folder: one host, the default)
and ``cluster.pg_store.PostgresJobStore`` (PostgreSQL shared by many workers). Writes differ by
design and stay with each mode's job service: the one-host service stores whole jobs and runs
them in its engine; cluster workers store partitions and claim them with leases
(``cluster.leases``).
"""
from __future__ import annotations

from typing import Protocol

from .store import JobRow

SHARED_STORE_SCHEMES = ("postgresql://", "postgres://")


def is_shared_store(url: str) -> bool:
    """A ``store_url`` naming the PostgreSQL store of a cluster (empty: SQLite in the state folder)."""
    return url.startswith(SHARED_STORE_SCHEMES)


class JobStoreApi(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, job_id: str) -> JobRow | None: ...

    async def get_result(self, job_id: str) -> list | None:
        """One ``{"proof", "public_signals"}`` per partition, in order, for a done job; else None."""

    async def list(self, state: str | None, key_id: str | None, limit: int) -> list[JobRow]:
        """Newest first."""

    async def counts(self) -> dict[str, int]:
        """Jobs per state, every state present."""

    async def delete_finished_before(self, cutoff: float) -> list[str]:
        """Delete jobs finished before ``cutoff`` (epoch s) with their results; return their ids."""

"""The job store: one SQLite table, one row per job (key, priority, state, timings, result JSON).

    state_dir/jobs.sqlite3          the table; its schema version in PRAGMA user_version
    state_dir/spool/...             what each job proves (``spool.Spool``)

A job is accepted when its spool folder has been committed and its row committed (WAL,
synchronous=FULL); only then does the client get its 202. ``manifest_of`` is what the spool
keeps of a row, so that a row the store loses can be put back (``recovery``).

SQLite is reached from one dedicated thread, so no call blocks the event loop and the
connection never crosses threads. A failed read or write is a ``StorageUnavailable``
(reported to the service's ``StorageHealth``), never a bare sqlite3 or OS error.
"""
from __future__ import annotations

import asyncio
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from ..errors import BadInput
from .errors import StartupError
from .storage_health import StorageHealth, from_sqlite_error

SCHEMA_VERSION = 1  # PRAGMA user_version of the job store this code reads and writes
BUSY_TIMEOUT_S = 5.0  # how long a write waits for SQLite's lock before it fails (and is retried)
STATES = ("queued", "running", "done", "failed", "cancelled")
FINAL_STATES = frozenset({"done", "failed", "cancelled"})

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id        TEXT NOT NULL UNIQUE,
    request_id    TEXT UNIQUE,
    key_id        TEXT NOT NULL,
    priority      TEXT NOT NULL,
    input_kind    TEXT NOT NULL,           -- 'wtns' or 'inputs'
    n_partitions  INTEGER NOT NULL,
    state         TEXT NOT NULL,
    created_at    REAL NOT NULL,
    started_at    REAL,
    finished_at   REAL,
    partitions_done INTEGER NOT NULL DEFAULT 0,
    error_code    TEXT,
    error_message TEXT,
    timings       BLOB,                    -- JSON object
    result        BLOB                     -- JSON list, one {proof, public_signals} per partition
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, seq);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_at);
"""
COLUMNS = ("seq", "job_id", "request_id", "key_id", "priority", "input_kind", "n_partitions", "state",
           "created_at", "started_at", "finished_at", "partitions_done", "error_code", "error_message", "timings")
MANIFEST_FIELDS = ("job_id", "request_id", "key_id", "priority", "input_kind", "n_partitions", "created_at")


class StoreOpenError(StartupError, BadInput):
    """The job store cannot be used: not a SQLite file, damaged, or made by another zkpipe version."""


@dataclass
class JobRow:
    """A job as the store holds it (the result list is fetched separately: it can be large)."""

    job_id: str
    key_id: str
    priority: str
    input_kind: str
    n_partitions: int
    state: str = "queued"
    request_id: str | None = None
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    partitions_done: int = 0
    error_code: str | None = None
    error_message: str | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    seq: int = 0

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    def finished(self, state: str, code: str | None, message: str | None, timings: dict | None = None) -> "JobRow":
        """A copy in a final state, its timings completed (the row itself is unchanged)."""
        now = time.time()
        start = self.started_at or now
        final = replace(self, state=state, finished_at=now, error_code=code, error_message=message,
                        timings={**self.timings, **(timings or {})})
        if state == "done":
            final.partitions_done = self.n_partitions
        final.timings.update(queued_ms=round((start - self.created_at) * 1e3, 3),
                             run_ms=round((now - start) * 1e3, 3) if self.started_at else 0.0,
                             total_ms=round((now - self.created_at) * 1e3, 3))
        return final


def manifest_of(row: JobRow) -> dict[str, Any]:
    """What the spool keeps of an accepted job: enough to put its row back if the store loses it."""
    data = asdict(row)
    return {name: data[name] for name in MANIFEST_FIELDS}


def row_from_manifest(manifest: dict[str, Any]) -> JobRow:
    """A queued row from a spool ``job.json``; ``ValueError`` when it is not one."""
    if not isinstance(manifest, dict) or set(manifest) != set(MANIFEST_FIELDS):
        raise ValueError(f"expected the fields {', '.join(MANIFEST_FIELDS)}")
    row = JobRow(**manifest)
    if not (isinstance(row.n_partitions, int) and row.n_partitions > 0 and row.input_kind in ("wtns", "inputs")):
        raise ValueError(f"not a job: n_partitions={row.n_partitions!r}, input_kind={row.input_kind!r}")
    return row


def _row(values: tuple) -> JobRow:
    data = dict(zip(COLUMNS, values))
    data["timings"] = orjson.loads(data["timings"]) if data["timings"] else {}
    return JobRow(**data)


class JobStore:
    """The SQLite job table behind async methods (one worker thread owns the connection)."""

    def __init__(self, path: Path, fsync: bool = True, health: StorageHealth | None = None) -> None:
        self.path = path
        self.fsync = fsync
        self.health = health or StorageHealth()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zkpipe-store")
        self._db: sqlite3.Connection | None = None

    async def _call(self, fn, *args):
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
            if isinstance(exc, sqlite3.IntegrityError):  # a bug of ours, not the disk's
                raise
            error = from_sqlite_error(f"job store {self.path.name}", exc)
            self.health.failed(error)
            raise error from exc

    # -- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        """Open or create the store; ``StoreOpenError`` (one line) when it cannot be used."""
        await asyncio.get_running_loop().run_in_executor(self._pool, self._open)

    def _open(self) -> None:
        if self.path.is_dir():
            raise StoreOpenError(f"{self.path}: the job store is a folder, not a SQLite file")
        db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            version = self._check_schema(db)  # before anything is written: a store we refuse stays as it was
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
            db.executescript(SCHEMA)
            if version < SCHEMA_VERSION:
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (sqlite3.Error, OSError, StoreOpenError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, StoreOpenError):
                raise
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise StoreOpenError(f"{self.path}: cannot open the job store: {reason}") from None
        self._db = db

    def _check_schema(self, db: sqlite3.Connection) -> int:
        """The store's schema version, once it is known to be one this code reads (or a new, empty store)."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreOpenError(f"{self.path}: the job store has schema version {version}, newer than this "
                                 f"zkpipe's ({SCHEMA_VERSION}); run the newer zkpipe or move the file aside")
        columns = {info[1] for info in db.execute("PRAGMA table_info(jobs)")}
        missing = [name for name in (*COLUMNS, "result") if name not in columns]
        if columns and missing:
            raise StoreOpenError(f"{self.path}: the job store was made by another zkpipe version (no column "
                                 f"{', '.join(missing)}); move the file aside to start with an empty store")
        return version

    async def close(self) -> None:
        if self._db is not None:
            await self._call(self._db.close)
            self._db = None
        self._pool.shutdown(wait=True)

    async def probe(self) -> None:
        """Take and give back the write lock: ``StorageUnavailable`` while another holds it too long."""
        def run() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ROLLBACK")

        await self._call(run)

    # -- writes --------------------------------------------------------------------------------
    async def insert(self, row: JobRow) -> tuple[JobRow, bool]:
        """Store a new job; ``(row, True)``, or ``(existing, False)`` when its request_id is taken."""
        return await self._call(self._insert, row)

    def _insert(self, row: JobRow) -> tuple[JobRow, bool]:
        if row.request_id is not None:
            existing = self._get_by_request_id(row.request_id)
            if existing is not None:
                return existing, False
        cur = self._db.execute(
            "INSERT INTO jobs (job_id, request_id, key_id, priority, input_kind, n_partitions, state, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (row.job_id, row.request_id, row.key_id, row.priority, row.input_kind, row.n_partitions, row.state,
             row.created_at))
        return replace(row, seq=cur.lastrowid), True

    async def mark_running(self, job_id: str, started_at: float) -> None:
        await self._call(lambda: self._db.execute(
            "UPDATE jobs SET state = 'running', started_at = ? WHERE job_id = ? AND state IN ('queued', 'running')",
            (started_at, job_id)))

    async def finish(self, row: JobRow, result: list | None = None) -> None:
        """Record a final state (with the proofs when done)."""
        values = (row.state, row.started_at, row.finished_at, row.partitions_done, row.error_code, row.error_message)
        timings = dict(row.timings)

        def run() -> None:  # serialising a large job's proofs is worth a thread too, not only the write
            blob = orjson.dumps(result) if result is not None else None
            self._db.execute(
                "UPDATE jobs SET state = ?, started_at = ?, finished_at = ?, partitions_done = ?, error_code = ?,"
                " error_message = ?, timings = ?, result = ? WHERE job_id = ?",
                (*values, orjson.dumps(timings), blob, row.job_id))

        await self._call(run)

    async def delete_finished_before(self, cutoff: float) -> list[str]:
        def run() -> list[str]:
            ids = [r[0] for r in self._db.execute(
                "SELECT job_id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?", (cutoff,))]
            self._db.execute("DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?", (cutoff,))
            return ids

        return await self._call(run)

    # -- reads ---------------------------------------------------------------------------------
    def _select(self, where: str, args: tuple, tail: str = "") -> list[JobRow]:
        sql = f"SELECT {', '.join(COLUMNS)} FROM jobs WHERE {where} {tail}"
        return [_row(values) for values in self._db.execute(sql, args)]

    def _get_by_request_id(self, request_id: str) -> JobRow | None:
        rows = self._select("request_id = ?", (request_id,))
        return rows[0] if rows else None

    async def get(self, job_id: str) -> JobRow | None:
        rows = await self._call(self._select, "job_id = ?", (job_id,))
        return rows[0] if rows else None

    async def get_result(self, job_id: str) -> list | None:
        def run():
            found = self._db.execute("SELECT result FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            return orjson.loads(found[0]) if found and found[0] else None

        return await self._call(run)

    async def requeue_unfinished(self) -> list[JobRow]:
        """After a restart: every accepted, unfinished job back to queued (to run again), oldest first."""
        def run() -> list[JobRow]:
            self._db.execute("UPDATE jobs SET state = 'queued', started_at = NULL, partitions_done = 0"
                             " WHERE state = 'running'")
            return self._select("state = 'queued'", (), "ORDER BY seq")

        return await self._call(run)

    async def unfinished(self) -> list[JobRow]:
        """Every accepted, unfinished job as stored (queued or running), oldest first; reads only."""
        return await self._call(self._select, "state IN ('queued', 'running')", (), "ORDER BY seq")

    async def list(self, state: str | None, key_id: str | None, limit: int) -> list[JobRow]:
        clauses, args = ["1 = 1"], []
        if state is not None:
            clauses.append("state = ?")
            args.append(state)
        if key_id is not None:
            clauses.append("key_id = ?")
            args.append(key_id)
        return await self._call(self._select, " AND ".join(clauses), tuple(args), f"ORDER BY seq DESC LIMIT {int(limit)}")

    async def counts(self) -> dict[str, int]:
        def run():
            found = dict(self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
            return {state: found.get(state, 0) for state in STATES}

        return await self._call(run)

    async def states_of(self, job_ids: list[str]) -> dict[str, str]:
        """Job id -> state, for the ids the store holds."""
        def run() -> dict[str, str]:
            found: dict[str, str] = {}
            for start in range(0, len(job_ids), 500):  # SQLite's bound-parameter limit
                chunk = job_ids[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                found.update(self._db.execute(f"SELECT job_id, state FROM jobs WHERE job_id IN ({marks})", chunk))
            return found

        return await self._call(run)

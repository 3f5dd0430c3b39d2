"""Durable jobs: one SQLite table (the job store) and a spool folder (what each job proves).

    state_dir/jobs.sqlite3          one row per job: key, priority, state, timings, result JSON
    state_dir/spool/tmp/<job_id>/   an upload being received (swept at start: never accepted)
    state_dir/spool/jobs/<job_id>/  an accepted job's partitions: part-00000.wtns ... or inputs.json

A job is accepted when its spool folder has been renamed out of tmp/ (files and folder fsynced)
and its row committed (WAL, synchronous=FULL); only then does the client get its 202. A spool
folder without a row (a crash between the two steps) is deleted at start.

SQLite is reached from one dedicated thread, so no call blocks the event loop and the
connection never crosses threads.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

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


def _row(values: tuple) -> JobRow:
    data = dict(zip(COLUMNS, values))
    data["timings"] = orjson.loads(data["timings"]) if data["timings"] else {}
    return JobRow(**data)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """Per-job folders of partition files, made durable before the job is."""

    def __init__(self, root: Path, fsync: bool = True) -> None:
        self.tmp_root = root / "tmp"
        self.jobs_root = root / "jobs"
        self.fsync = fsync
        self.tmp_root.mkdir(parents=True, exist_ok=True)
        self.jobs_root.mkdir(parents=True, exist_ok=True)

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_root / job_id

    def commit(self, job_id: str) -> Path:
        """Move a fully written upload into jobs/ (fsynced: the files, then both folders)."""
        src, dst = self.tmp_root / job_id, self.jobs_root / job_id
        if self.fsync:
            for child in src.iterdir():
                with open(child, "rb") as fh:
                    os.fsync(fh.fileno())
            fsync_dir(src)
        os.rename(src, dst)
        if self.fsync:
            fsync_dir(self.jobs_root)
        return dst

    def discard(self, job_id: str) -> None:
        shutil.rmtree(self.tmp_root / job_id, ignore_errors=True)
        shutil.rmtree(self.jobs_root / job_id, ignore_errors=True)

    def sweep(self, live_job_ids: set[str]) -> int:
        """Delete every unfinished upload and every job folder that has no live job; return the count."""
        removed = 0
        for child in list(self.tmp_root.iterdir()):
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
        for child in list(self.jobs_root.iterdir()):
            if child.name not in live_job_ids:
                shutil.rmtree(child, ignore_errors=True)
                removed += 1
        return removed


class JobStore:
    """The SQLite job table behind async methods (one worker thread owns the connection)."""

    def __init__(self, path: Path, fsync: bool = True) -> None:
        self.path = path
        self.fsync = fsync
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zkpipe-store")
        self._db: sqlite3.Connection | None = None

    async def _call(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # -- lifecycle -----------------------------------------------------------------------------
    async def open(self) -> None:
        await self._call(self._open)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
        db.executescript(SCHEMA)
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            await self._call(self._db.close)
            self._db = None
        self._pool.shutdown(wait=True)

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
            "UPDATE jobs SET state = 'running', started_at = ? WHERE job_id = ? AND state = 'queued'",
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

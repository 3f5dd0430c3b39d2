"""Durable jobs: one SQLite table (the job store) and a spool folder (what each job proves).

    state_dir/jobs.sqlite3          one row per job: key, priority, state, timings, result JSON
    state_dir/spool/tmp/<job_id>/   an upload being received (swept at start: never accepted)
    state_dir/spool/jobs/<job_id>/  an accepted job's partitions: part-00000.wtns ... or inputs.json,
                                    and job.json (its row's fields: enough to rebuild the row)
    state_dir/spool/orphaned/       job folders that could not be put back in the store (kept, not deleted)

A job is accepted when its spool folder has been renamed out of tmp/ (files and folder fsynced)
and its row committed (WAL, synchronous=FULL); only then does the client get its 202. The
spool is the record of accepted work: at start, a job folder without a row (the store was lost,
or a crash came between the two steps) gets its row back from its ``job.json``.

SQLite is reached from one dedicated thread, so no call blocks the event loop and the
connection never crosses threads. A failed read or write is a ``StorageUnavailable``
(reported to the service's ``StorageHealth``), never a bare sqlite3 or OS error.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from ..errors import BadInput
from .errors import StartupError
from .storage_health import StorageHealth, StorageUnavailable, from_os_error, from_sqlite_error

SCHEMA_VERSION = 1  # PRAGMA user_version of the job store this code reads and writes
MANIFEST_FILE = "job.json"
BUSY_TIMEOUT_S = 5.0  # how long a write waits for SQLite's lock before it fails (and is retried)
PROBE_BYTES = 1 << 16  # the storage probe writes this much: enough to tell a full disk from a working one
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


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SpoolFile:
    """One file being written into an upload's tmp folder; a failed write is ``StorageUnavailable``."""

    def __init__(self, spool: "Spool", path: Path) -> None:
        self._spool = spool
        self.path = path
        with spool.errors(f"spool file {path.name}"):
            path.parent.mkdir(exist_ok=True)
            self._fh = open(path, "wb")

    def write(self, data: bytes) -> None:
        with self._spool.errors(f"spool file {self.path.name}"):
            self._fh.write(data)

    def close(self) -> None:
        with self._spool.errors(f"spool file {self.path.name}"):
            self._fh.close()


class Spool:
    """Per-job folders of partition files, made durable before the job is."""

    def __init__(self, root: Path, fsync: bool = True, health: StorageHealth | None = None) -> None:
        self.root = root
        self.tmp_root = root / "tmp"
        self.jobs_root = root / "jobs"
        self.orphans_root = root / "orphaned"
        self.fsync = fsync
        self.health = health or StorageHealth()
        with self.errors("spool"):
            self.tmp_root.mkdir(parents=True, exist_ok=True)
            self.jobs_root.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def errors(self, what: str):
        """An OSError in the block becomes a ``StorageUnavailable`` (reported to the health record)."""
        try:
            yield
        except OSError as exc:
            error = from_os_error(what, exc)
            self.health.failed(error)
            raise error from exc

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_root / job_id

    # -- an upload, then a job ---------------------------------------------------------------------
    def create_file(self, job_id: str, name: str) -> SpoolFile:
        """A new file in the upload's tmp folder (made on first use)."""
        return SpoolFile(self, self.tmp_root / job_id / name)

    def write_file(self, job_id: str, name: str, data: bytes) -> None:
        out = self.create_file(job_id, name)
        try:
            out.write(data)
        finally:
            out.close()

    def commit(self, job_id: str, manifest: dict[str, Any]) -> Path:
        """Move a fully written upload into jobs/ with its manifest (fsynced: the files, then both folders)."""
        src, dst = self.tmp_root / job_id, self.jobs_root / job_id
        self.write_file(job_id, MANIFEST_FILE, orjson.dumps(manifest))
        with self.errors(f"spool folder of job {job_id}"):
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

    # -- at start ----------------------------------------------------------------------------------
    def clear_uploads(self) -> int:
        """Delete every upload never accepted (tmp/); return how many."""
        children = list(self.tmp_root.iterdir())
        for child in children:
            shutil.rmtree(child, ignore_errors=True)
        return len(children)

    def job_ids(self) -> list[str]:
        return sorted(child.name for child in self.jobs_root.iterdir() if child.is_dir())

    def manifest(self, job_id: str) -> dict[str, Any] | None:
        """The job's ``job.json``; None when it is missing or unreadable."""
        try:
            return orjson.loads((self.jobs_root / job_id / MANIFEST_FILE).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None

    def quarantine(self, job_id: str) -> Path:
        """Move a job folder aside (spool/orphaned/), for an operator to look at: never delete accepted work."""
        self.orphans_root.mkdir(exist_ok=True)
        dst = self.orphans_root / job_id
        os.rename(self.jobs_root / job_id, dst)
        return dst

    # -- health ------------------------------------------------------------------------------------
    def probe(self) -> None:
        """Write, fsync and delete a small file: raises ``StorageUnavailable`` while the disk refuses."""
        path = self.tmp_root / ".probe"
        with self.errors("spool probe"):
            try:
                with open(path, "wb") as fh:
                    fh.write(bytes(PROBE_BYTES))
                    fh.flush()
                    os.fsync(fh.fileno())
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)


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

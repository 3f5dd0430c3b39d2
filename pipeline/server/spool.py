"""The spool: per-job folders of what each job proves, made durable before the job is.

    state_dir/spool/tmp/<job_id>/   an upload being received (cleared at start: never accepted)
    state_dir/spool/jobs/<job_id>/  an accepted job's partitions: part-00000.wtns ... or inputs.json,
                                    and job.json (its row's fields: enough to rebuild the row)
    state_dir/spool/orphaned/       job folders that could not be put back in the store (kept, not deleted)

An upload is written into tmp/ and moved into jobs/ by ``commit`` (files and folders fsynced)
before its row is stored. The spool is the record of accepted work: at start, a job folder
without a row gets its row back from its ``job.json``. A failed write is a
``StorageUnavailable`` reported to the service's ``StorageHealth``, never a bare OSError.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from .storage_health import StorageHealth, from_os_error

MANIFEST_FILE = "job.json"
PROBE_BYTES = 1 << 16  # the storage probe writes this much: enough to tell a full disk from a working one


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

"""The shared spool folder: witnesses too large for a database row, on storage every worker mounts.

    <shared_spool_dir>/jobs/<job_id>/part-00000.wtns ...

The accepting worker writes and fsyncs a job's large partitions here before it commits the job
(the rows name the files), so an accepted job's files are on the shared storage before its 202.
The worker that stores a partition's proof deletes its file; each worker's janitor deletes the
folders of jobs that are final or unknown (cancelled, failed, expired, or never committed) once
they are older than ``grace_s``. Why this folder and not the database for large witnesses:
docs/cluster.md.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ..spool import fsync_dir
from ..uploads import partition_file


class SharedSpool:
    def __init__(self, root: Path, fsync: bool = True) -> None:
        self.root = root
        self.jobs_root = root / "jobs"
        self.fsync = fsync
        self.jobs_root.mkdir(parents=True, exist_ok=True)

    def store(self, job_id: str, index: int, source: Path | None = None, data: bytes | None = None) -> str:
        """Blocking: copy ``source`` (or write ``data``) as the job's partition file, fsynced; its spool name."""
        folder = self.jobs_root / job_id
        folder.mkdir(exist_ok=True)
        target = folder / partition_file(index)
        with open(target, "wb") as out:
            if source is not None:
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            else:
                out.write(data)
            if self.fsync:
                out.flush()
                os.fsync(out.fileno())
        if self.fsync:
            fsync_dir(folder)
            fsync_dir(self.jobs_root)
        return f"{job_id}/{target.name}"

    def path(self, spool_file: str) -> Path:
        """The file of a partition_inputs row (its name never leaves the jobs folder)."""
        job_id, _, name = spool_file.partition("/")
        if not job_id.isalnum() or "/" in name or not name.startswith("part-"):
            raise ValueError(f"not a shared spool file name: {spool_file!r}")
        return self.jobs_root / job_id / name

    def remove(self, spool_file: str) -> None:
        self.path(spool_file).unlink(missing_ok=True)

    def discard(self, job_id: str) -> None:
        shutil.rmtree(self.jobs_root / job_id, ignore_errors=True)

    def candidates(self, grace_s: float) -> list[str]:
        """Job folders untouched for ``grace_s`` (an upload in progress is younger)."""
        cutoff = time.time() - grace_s
        found = []
        for folder in self.jobs_root.iterdir():
            try:
                if folder.stat().st_mtime < cutoff:
                    found.append(folder.name)
            except FileNotFoundError:  # another worker's janitor was first
                continue
        return found

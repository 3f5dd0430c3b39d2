"""What the service knows about its own disk: a failed write is a ``StorageUnavailable``, not a crash.

Every durable write (the job store, the spool) turns the library's error into
``StorageUnavailable`` at the point where it happens and reports it to the one
``StorageHealth`` of the service. While a problem is recorded, the service refuses new work
(507 when the disk is full, 503 otherwise) and ``/healthz`` answers 503; the job service probes
the storage until a write succeeds again, and then accepts work again.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
import time

from ..errors import Unavailable

log = logging.getLogger("zkpipe.server.storage")

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
SQLITE_FULL = 13  # sqlite3.h: "Insertion failed because database is full"


class StorageUnavailable(Unavailable):
    """A durable write (or read) failed; ``disk_full`` says whether space ran out."""

    def __init__(self, message: str, disk_full: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.disk_full = disk_full


def from_os_error(what: str, exc: OSError) -> StorageUnavailable:
    disk_full = exc.errno in DISK_FULL_ERRNOS
    reason = "no space left on the device" if disk_full else (exc.strerror or str(exc))
    return StorageUnavailable(f"{what}: {reason}", disk_full)


def from_sqlite_error(what: str, exc: sqlite3.Error) -> StorageUnavailable:
    disk_full = getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL or "disk is full" in str(exc)
    return StorageUnavailable(f"{what}: {exc}", disk_full)


class StorageHealth:
    """The last storage problem seen, until a probe or a write shows the storage works again."""

    def __init__(self) -> None:
        self.problem: StorageUnavailable | None = None
        self.since: float | None = None
        self.failures = 0

    def failed(self, exc: StorageUnavailable) -> None:
        if self.problem is None:
            log.error("storage failing, new jobs are refused until it works again: %s", exc.message)
            self.since = time.time()
        self.problem = exc
        self.failures += 1

    def recovered(self) -> None:
        if self.problem is not None:
            log.warning("storage works again after %.1f s; accepting jobs", time.time() - (self.since or time.time()))
        self.problem, self.since = None, None

    @contextlib.contextmanager
    def watch(self):
        """Report a ``StorageUnavailable`` raised in the block, and let it go on."""
        try:
            yield
        except StorageUnavailable as exc:
            self.failed(exc)
            raise

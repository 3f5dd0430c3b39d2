"""What the service knows about its own disk: a failed write is a ``StorageUnavailable``, not a crash.

Every durable write (the job store, the spool) turns the library's error into
``StorageUnavailable`` at the point where it happens and reports it to the one
``StorageHealth`` of the service. While a problem is recorded, the service refuses new work
(507 when the disk is full, 503 otherwise) and ``/healthz`` answers 503; the job service probes
the storage until a write succeeds again, and then accepts work again.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable

from ..errors import Unavailable

log = logging.getLogger("zkpipe.server.storage")

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
SQLITE_FULL = 13  # sqlite3.h: "Insertion failed because database is full"
PROBE_INTERVAL_S = 1.0  # how often a failing storage is probed


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
        self._back = asyncio.Event()  # set, and renewed, each time the storage works again

    def failed(self, exc: StorageUnavailable) -> None:
        if self.problem is None:
            log.error("storage failing, new jobs are refused until it works again: %s", exc.message)
            self.since = time.time()
        self.problem = exc
        self.failures += 1

    def recovered(self) -> None:
        """Called on the event loop (``failed`` may come from any thread)."""
        if self.problem is not None:
            log.warning("storage works again after %.1f s; accepting jobs", time.time() - (self.since or time.time()))
        self.problem, self.since = None, None
        self._back.set()
        self._back = asyncio.Event()

    def raise_if_failing(self) -> None:
        """Raise the recorded ``StorageUnavailable`` while the storage is failing (before a body is read)."""
        if self.problem is not None:
            raise self.problem

    async def wait_recovered(self, timeout_s: float) -> None:
        """Until a probe finds the storage working again, or ``timeout_s`` has passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._back.wait(), timeout_s)

    async def probe_while_failing(self, probes: list[Callable[[], Awaitable[None]]], interval_s: float) -> None:
        """Forever: while a problem is recorded, run every probe each ``interval_s``; when all pass, recovered.

        A probe raises ``StorageUnavailable`` (and records it) while its storage refuses writes.
        """
        while True:
            await asyncio.sleep(interval_s)
            if self.problem is None:
                continue
            try:
                for probe in probes:
                    await probe()
            except StorageUnavailable:
                continue
            except Exception:
                log.exception("storage probe failed")
                continue
            self.recovered()


def health_problems(stopped: BaseException | None, health: StorageHealth) -> list[dict[str, str]]:
    """Why a job service cannot take or run jobs now (empty when healthy), as ``{"code", "message"}``:
    its background work ended (``stopped``), or its storage refuses writes."""
    found = []
    if stopped is not None:
        reason = "cancelled" if isinstance(stopped, asyncio.CancelledError) else repr(stopped)
        found.append({"code": "job_service_stopped", "message": f"the job service stopped: {reason}"})
    if health.problem is not None:
        code = "insufficient_storage" if health.problem.disk_full else "storage_unavailable"
        found.append({"code": code, "message": health.problem.message})
    return found

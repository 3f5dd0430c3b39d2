"""A disk that fills and empties on demand, for the server's two kinds of durable writes.

No small filesystem can be mounted on the test machines, so the fault is injected where the
operating system or SQLite would raise it, with the same error they raise:

- spool files: ``open(..., "w...")`` and every ``write`` on such a file raise
  ``OSError(ENOSPC)`` while the disk is full (``open`` is shadowed in ``pipeline.server.spool``
  only);
- the job store: every statement that writes (INSERT, UPDATE, DELETE, BEGIN IMMEDIATE) raises
  ``sqlite3.OperationalError("database or disk is full")`` with ``sqlite_errorcode`` SQLITE_FULL,
  from a wrapper around the store's connection; reads go through.

``FaultyDisk(is_full).install(setattr)``: ``is_full`` is asked at every write (a flag in a test,
a flag file's existence for a server in another process); ``setattr`` is pytest's
``monkeypatch.setattr`` in tests, ``setattr`` itself in a process that will not undo it.
"""
from __future__ import annotations

import builtins
import errno
import os
import sqlite3
from collections.abc import Callable

from pipeline.server import spool as spool_module
from pipeline.server import store as store_module
from pipeline.server.storage_health import SQLITE_FULL

WRITE_STATEMENTS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "BEGIN IMMEDIATE")


def disk_full_error() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def sqlite_full_error() -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = SQLITE_FULL
    exc.sqlite_errorname = "SQLITE_FULL"
    return exc


class FaultyFile:
    """A file opened for writing whose writes fail while the disk is full."""

    def __init__(self, fh, is_full: Callable[[], bool]) -> None:
        self._fh = fh
        self._is_full = is_full

    def write(self, data) -> int:
        if self._is_full():
            raise disk_full_error()
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._fh.close()


class FaultyConnection:
    """A sqlite3 connection whose writing statements fail while the disk is full."""

    def __init__(self, db: sqlite3.Connection, is_full: Callable[[], bool]) -> None:
        self._db = db
        self._is_full = is_full

    def execute(self, sql: str, *args):
        if self._is_full() and sql.lstrip().upper().startswith(WRITE_STATEMENTS):
            raise sqlite_full_error()
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


class FaultyDisk:
    def __init__(self, is_full: Callable[[], bool]) -> None:
        self.is_full = is_full

    def install(self, set_attribute=setattr) -> "FaultyDisk":
        is_full = self.is_full
        real_open_store = store_module.JobStore._open

        def faulty_open(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+"):
                if is_full():
                    raise disk_full_error()
                return FaultyFile(builtins.open(file, mode, *args, **kwargs), is_full)
            return builtins.open(file, mode, *args, **kwargs)

        def open_store(store) -> None:
            real_open_store(store)
            store._db = FaultyConnection(store._db, is_full)

        if set_attribute is setattr:
            setattr(spool_module, "open", faulty_open)
        else:  # pytest's monkeypatch: the module has no global named open to restore
            set_attribute(spool_module, "open", faulty_open, raising=False)
        set_attribute(store_module.JobStore, "_open", open_store)
        return self


class DiskSwitch:
    """A disk that a test fills and empties: ``disk.full = True``."""

    def __init__(self) -> None:
        self.full = False

    def __call__(self) -> bool:
        return self.full

"""Where a one-shot command's time went, from the process's start to its exit (``--timings``).

Steps are spans on a clock that starts when the process started: the interpreter's own start
(before any of zkpipe's code runs) is read from /proc, to the kernel's clock tick (10 ms);
everything after is ``time.perf_counter``. Spans may come from several threads (the device is
set up beside the key read), so the report lists them by start time with their thread.
"""
from __future__ import annotations

import _thread
import os
import sys
import time
from contextlib import contextmanager

_IMPORTED_AT = time.perf_counter()


def process_age_s() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 of stat(5); fields[0] is field 3
        return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _thread_name() -> str:
    # Every other thread here is started through threading: a process that has not imported it
    # (`prove --server`) runs on its main thread alone.
    threading = sys.modules.get("threading")
    return threading.current_thread().name if threading is not None else "MainThread"


class Timeline:
    """Spans ``(name, start_s, end_s, thread)`` on a clock whose 0 is the process start."""

    def __init__(self) -> None:
        age = process_age_s()
        now = time.perf_counter()
        self.origin = now - age if age is not None and age >= now - _IMPORTED_AT else _IMPORTED_AT
        self.spans: list[tuple[str, float, float, str]] = []
        self._lock = _thread.allocate_lock()  # threading's Lock, without importing threading (~0.7 ms)
        if self.origin < _IMPORTED_AT:
            self.add("interpreter start, first imports", self.origin, _IMPORTED_AT)
        self.add("zkpipe's command line imported and parsed", _IMPORTED_AT, now)

    def add(self, name: str, start: float, end: float) -> None:
        with self._lock:
            self.spans.append((name, start - self.origin, end - self.origin, _thread_name()))

    @contextmanager
    def step(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, start, time.perf_counter())

    def since_start_s(self) -> float:
        return time.perf_counter() - self.origin

    def report(self, title: str) -> str:
        """A table of every span in start order, and the total so far."""
        rows = [f"{title}: where the time went (ms since the process started)",
                f"  {'start':>8} {'end':>8} {'took':>8}  step"]
        for name, start, end, thread in sorted(self.spans, key=lambda s: s[1]):
            where = "" if thread == "MainThread" else f"   [{thread}, in parallel]"
            rows.append(f"  {start * 1e3:8.1f} {end * 1e3:8.1f} {(end - start) * 1e3:8.1f}  {name}{where}")
        rows.append(f"  {'':8} {self.since_start_s() * 1e3:8.1f} {'':8}  total, process start to exit")
        return "\n".join(rows)

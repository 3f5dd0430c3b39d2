"""Page-locked (pinned) staging buffers for the witness upload: DESIGN's prep_msm stage.

A copy from pinned memory runs at full PCIe speed with no driver bounce buffer. Pinning is
slow, though (the OS locks every page: a few hundred ms per GiB), so buffers are reused: a
partition takes one in prep_msm and gives it back when it leaves the pipeline (its epilogue
still reads the public signals from it). Up to ``max_idle`` idle buffers are kept, the others
unpinned at once. While the engine stops, given-back buffers are only kept: a worker thread
may still be reading one, and ``close`` (after the worker pools have stopped) unpins them all.

The backend provides the memory through ``pinned_host_buffer(nbytes)`` (an object with
``nbytes``, ``view(dtype, shape)`` and ``free()``); a backend without it (the CPU one) gets
plain arrays.
"""
from __future__ import annotations

import threading
from typing import Any, Callable


class StagingPool:
    def __init__(self, allocate: Callable[[int], Any] | None, max_idle: int = 4) -> None:
        self._allocate = allocate
        self.max_idle = max_idle
        self._idle: list[Any] = []  # most recently given back last
        self._lock = threading.Lock()
        self._stopping = False
        self.taken = self.pinned = self.reused = 0
        self.pinned_bytes = 0

    @property
    def enabled(self) -> bool:
        return self._allocate is not None

    def take(self, nbytes: int) -> Any:
        """A pinned buffer of exactly ``nbytes`` (an idle one if any); blocking, run it off the loop."""
        with self._lock:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i].nbytes == nbytes:
                    self.taken += 1
                    self.reused += 1
                    return self._idle.pop(i)
        buffer = self._pin(nbytes)
        with self._lock:
            self.taken += 1
        return buffer

    def reserve(self, nbytes: int, count: int) -> int:
        """Pin idle buffers of ``nbytes`` until ``min(count, max_idle)`` of them are idle; blocking, run it off the
        loop. Returns how many it pinned. Partitions of that size then take a buffer rather than pin one: a pin holds
        the driver while it runs, and one beside another partition's gpu stage stalled that stage by ~1 s at 2^27
        (bench/NOTES.md, session 40). Idle buffers of other sizes give way, oldest first, past ``max_idle``."""
        if not self.enabled:
            return 0
        want, made = min(count, self.max_idle), 0
        while True:
            with self._lock:
                if self._stopping or sum(b.nbytes == nbytes for b in self._idle) >= want:
                    break
            buffer = self._pin(nbytes)
            made += 1
            with self._lock:
                self._idle.append(buffer)
        with self._lock:
            excess = self._past_max_idle(spare=nbytes)
        for buffer in excess:
            buffer.free()
        return made

    def give_back(self, buffer: Any) -> None:
        with self._lock:
            self.taken -= 1
            self._idle.append(buffer)
            if self._stopping:
                return
            excess = self._past_max_idle()
        for buffer in excess:
            buffer.free()

    def _pin(self, nbytes: int) -> Any:
        buffer = self._allocate(nbytes)
        with self._lock:
            self.pinned += 1
            self.pinned_bytes += nbytes
        return buffer

    def _past_max_idle(self, spare: int | None = None) -> list[Any]:
        """Under the lock: the oldest idle buffers beyond ``max_idle`` (none of ``spare`` bytes), out of the pool,
        for the caller to unpin outside the lock."""
        excess = [b for b in self._idle if b.nbytes != spare][: max(0, len(self._idle) - self.max_idle)]
        gone = {id(b) for b in excess}
        self._idle = [b for b in self._idle if id(b) not in gone]
        self.pinned_bytes -= sum(b.nbytes for b in excess)
        return excess

    def stopping(self) -> None:
        """From now on keep every buffer given back (a cancelled worker thread may still read one)."""
        with self._lock:
            self._stopping = True

    def close(self) -> None:
        """Unpin every idle buffer; call once no worker thread can touch them."""
        with self._lock:
            idle, self._idle = self._idle, []
            self.pinned_bytes -= sum(buffer.nbytes for buffer in idle)
        for buffer in idle:
            buffer.free()

    def snapshot(self) -> dict:
        with self._lock:
            return {"enabled": self.enabled, "in_use": self.taken, "idle": len(self._idle),
                    "pinned_bytes": self.pinned_bytes, "pinned_total": self.pinned, "reused_total": self.reused}

"""Byte budgets: an asyncio semaphore counted in bytes, FIFO, for host memory and VRAM.

``await budget.acquire(n)`` waits until n bytes are free (admission waits instead of
crashing). Waiters are served in arrival order, so a large request is not starved by a
stream of small ones. A request larger than the whole budget can never be served and is an
error at once (``BudgetTooSmall``), not a hang.
"""
from __future__ import annotations

import asyncio
import collections
from contextlib import asynccontextmanager
from ..errors import BadInput


class BudgetTooSmall(BadInput):
    """One request exceeds the whole budget: raise the budget or shrink the work."""


class ByteBudget:
    def __init__(self, name: str, capacity: int | None) -> None:
        self.name = name
        self.capacity = capacity  # None: unbounded (still counted)
        self.used = 0
        self.peak = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future]] = collections.deque()

    def available(self) -> int | None:
        """Bytes not in use (None: unbounded)."""
        return None if self.capacity is None else max(0, self.capacity - self.used)

    def _fits(self, n: int) -> bool:
        return self.capacity is None or self.used + n <= self.capacity

    def check(self, n: int, what: str = "") -> None:
        if self.capacity is not None and n > self.capacity:
            raise BudgetTooSmall(f"{self.name} budget is {self.capacity} bytes but {what or 'one request'} "
                                 f"needs {n} bytes")

    def try_acquire(self, n: int) -> bool:
        if n < 0:
            raise ValueError("negative byte count")
        if self._waiters or not self._fits(n):
            return False
        self._take(n)
        return True

    async def acquire(self, n: int, what: str = "") -> None:
        self.check(n, what)
        if self.try_acquire(n):
            return
        fut = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(n)  # granted in the same instant we were cancelled: give it back
            else:
                try:
                    self._waiters.remove(entry)
                except ValueError:
                    pass  # already dropped by _wake
                self._wake()
            raise

    def release(self, n: int) -> None:
        if n > self.used:
            raise RuntimeError(f"{self.name} budget: releasing {n} bytes but only {self.used} are in use")
        self.used -= n
        self._wake()

    def _take(self, n: int) -> None:
        self.used += n
        self.peak = max(self.peak, self.used)

    def _wake(self) -> None:
        while self._waiters:
            n, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if not self._fits(n):
                return
            self._waiters.popleft()
            self._take(n)
            fut.set_result(None)

    @asynccontextmanager
    async def reserve(self, n: int, what: str = ""):
        await self.acquire(n, what)
        try:
            yield
        finally:
            self.release(n)

    @property
    def waiting(self) -> int:
        return sum(1 for _, f in self._waiters if not f.done())

    def snapshot(self) -> dict:
        return {"capacity_bytes": self.capacity, "used_bytes": self.used, "peak_bytes": self.peak,
                "waiting": self.waiting}

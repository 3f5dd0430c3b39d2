"""Reading request bodies within bounds: time (``BodyClock``), concurrency (``UploadSlots``), size.

aiohttp has no timeout for a body that stops arriving, so every read of an upload goes
through a ``BodyClock``: a read that gives nothing for ``idle_s`` (a multipart read needs a
boundary's length of new bytes), or the whole body not there after ``total_s``, is a 408 and
the connection is closed. ``UploadSlots`` bounds how many bodies
are read at once (each holds a spool file and a write buffer); one more waits for a slot up to
``wait_s``, then gets 503.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from aiohttp import web

from .errors import ApiError

T = TypeVar("T")
CHUNK = 1 << 16


class BodyClock:
    """The time limits of one request body."""

    def __init__(self, idle_s: float, total_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        self.idle_s = idle_s
        self.total_s = total_s
        self.deadline = self._loop.time() + total_s

    async def read(self, pending: Awaitable[T]) -> T:
        """Await one read of the body, or raise 408 when it takes too long."""
        left = self.deadline - self._loop.time()
        try:
            async with asyncio.timeout(max(0.0, min(self.idle_s, left))):
                return await pending
        except TimeoutError:
            why = f"no progress for {self.idle_s:g} s" if self.idle_s < left else \
                f"not complete after {self.total_s:g} s"
            raise ApiError(408, "body_timeout", f"request body too slow: {why}", close=True) from None


class UploadSlots:
    """At most ``slots`` bodies read at once; a request waits ``wait_s`` for a slot, then 503."""

    def __init__(self, slots: int, wait_s: float) -> None:
        self.slots = slots
        self.wait_s = wait_s
        self._free = asyncio.Semaphore(slots)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(self.wait_s):
                await self._free.acquire()
        except TimeoutError:
            raise ApiError(503, "too_many_uploads", f"{self.slots} uploads are being received already; retry later",
                           {"Retry-After": "1"}, close=True) from None
        try:
            yield
        finally:
            self._free.release()


def too_large(limit: int, what: str = "request body", size: int | None = None) -> ApiError:
    seen = f" ({size} bytes)" if size is not None else ""
    return ApiError(413, "payload_too_large", f"{what}{seen} exceeds the limit of {limit} bytes", close=True)


async def read_limited(request: web.Request, limit: int, clock: BodyClock, what: str) -> bytes:
    """The whole body, refused with 413 as soon as it passes ``limit`` bytes (declared or counted)."""
    chunks, size = [], 0
    while chunk := await clock.read(request.content.read(CHUNK)):
        size += len(chunk)
        if size > limit:
            raise too_large(limit, what)
        chunks.append(chunk)
    return b"".join(chunks)


def count_leaves(value, limit: int) -> int:
    """How many scalar values a nested list holds (a dict counts its values), stopping past ``limit``."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        else:
            count += 1
    return count

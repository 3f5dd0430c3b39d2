"""LISTEN/NOTIFY on one dedicated connection: wake idle workers, long-polls and partition holders.

    zkpipe_work    new or released partitions        -> ``work`` is set (the claim loop wakes)
    zkpipe_job     a job reached a final state       -> that job's waiters wake
    zkpipe_cancel  a job with leased partitions ended -> ``on_cancel(job_id)`` stops its local proving

Notifications are a shortcut, never the only path: the claim loop polls every
``claim_poll_interval_s``, long-polls re-read the store as often, and heartbeats notice lost or
cancelled leases. A dropped connection is reopened after ``reconnect_s``.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Callable

import asyncpg

from .pg_store import CHANNEL_CANCEL, CHANNEL_JOB, CHANNEL_WORK

log = logging.getLogger("zkpipe.cluster")


class Notifications:
    def __init__(self, url: str, reconnect_s: float = 1.0) -> None:
        self.url = url
        self.reconnect_s = reconnect_s
        self.work = asyncio.Event()
        self.on_cancel: Callable[[str], None] = lambda job_id: None
        self.connected = asyncio.Event()
        self.received = 0
        self._job_waiters: dict[str, set[asyncio.Event]] = {}

    def _dispatch(self, _conn, _pid, channel: str, payload: str) -> None:
        self.received += 1
        if channel == CHANNEL_WORK:
            self.work.set()
        elif channel == CHANNEL_JOB:
            for event in self._job_waiters.get(payload, ()):
                event.set()
        elif channel == CHANNEL_CANCEL:
            self.on_cancel(payload)

    @contextlib.contextmanager
    def job_finished(self, job_id: str):
        """An event set when ``job_id`` reaches a final state (while the block runs)."""
        event = asyncio.Event()
        self._job_waiters.setdefault(job_id, set()).add(event)
        try:
            yield event
        finally:
            waiters = self._job_waiters.get(job_id)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._job_waiters[job_id]

    def wake_all_waiters(self) -> None:
        for waiters in self._job_waiters.values():
            for event in waiters:
                event.set()

    async def run(self) -> None:
        """Listen until cancelled, reconnecting after a lost connection."""
        while True:
            conn = None
            try:
                conn = await asyncpg.connect(self.url)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn: lost.set())
                for channel in (CHANNEL_WORK, CHANNEL_JOB, CHANNEL_CANCEL):
                    await conn.add_listener(channel, self._dispatch)
                self.connected.set()
                self.work.set()  # anything queued while we were not listening
                await lost.wait()
                log.warning("the LISTEN connection was lost; reconnecting (polling meanwhile)")
            except Exception as exc:  # refused, reset, timed out, auth: all retried
                log.warning("LISTEN connection failed: %s; retrying in %.1f s (polling meanwhile)", exc,
                            self.reconnect_s)
            finally:
                self.connected.clear()
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(conn.close(timeout=2))
            await asyncio.sleep(self.reconnect_s)

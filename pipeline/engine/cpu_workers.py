"""CPU work that may run in worker processes, away from the event loop's GIL.

The reference (pure-Python) G2 MSM holds the GIL for its whole run; in threads it starves
the event loop (measured: loop lag 70 ms with two G2 threads next to the gpu stage, 14 ms
without). With ``g2_msm_executor="process"`` it runs in a spawned process pool instead. Only
small, picklable values cross: the zkey path and the witness array go in, one G2 point comes
back. Each worker process decodes a key's B2 points once and keeps them (``_B2_KEYS``).

``G2Workers`` owns that pool. A worker process that dies (OOM killer, a signal) breaks a
``ProcessPoolExecutor`` for good: every call in it fails with ``BrokenProcessPool``, and so does
every later submit. ``G2Workers`` then builds a fresh pool and runs each affected MSM once more
on it (a death usually has nothing to do with the one MSM that was running: every call in the
pool fails at once, other partitions' included). A second death of the same MSM fails only its
partition, with ``G2WorkerDied``.

``G2Msm`` is one partition's MSM: ``done`` is true only once no pool runs its work any more
(cancelling a call that already runs does not stop it), so the partition's host memory is
given back only then (``when_finished``).
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

import numpy as np
from ..errors import InternalError

log = logging.getLogger("pipeline.engine")

_B2_KEYS: dict[str, Any] = {}  # zkey path -> the host backend's key handle (B2 decoded), per worker process
_B2_KEPT = 4


def g2_msm_from_path(zkey_path: str, staged: np.ndarray) -> tuple[tuple, float, float]:
    """Σ w_i B2_i for the key at ``zkey_path`` on the host backend; returns (Jacobian point, start,
    end) as perf_counter s."""
    from ..backends import host_backend
    from ..formats.zkey import read_zkey

    t0 = time.perf_counter()
    backend = host_backend()
    if zkey_path not in _B2_KEYS:
        if len(_B2_KEYS) >= _B2_KEPT:
            _B2_KEYS.pop(next(iter(_B2_KEYS)))
        key = backend.load_key(read_zkey(zkey_path, map_points=True))  # only B2 is decoded: map, do not read
        key.points("b2")
        _B2_KEYS[zkey_path] = key
    t1 = time.perf_counter()  # the decode above happens once per process and key: not the MSM's time
    point = backend.msm_b_g2(_B2_KEYS[zkey_path], staged)
    return point, t1 if t1 - t0 > 0 else t0, time.perf_counter()


def _ready() -> bool:
    from pipeline.backends import host_backend  # pay the imports before the first MSM
    import pipeline.formats.zkey  # noqa: F401

    return host_backend() is not None


def warm_up(executor: Executor, workers: int) -> None:
    """Blocking: start every worker process now (not on the event loop at the first submit)."""
    if isinstance(executor, ProcessPoolExecutor):
        for fut in [executor.submit(_ready) for _ in range(workers)]:
            fut.result()


def make_g2_executor(kind: str, workers: int) -> Executor:
    if kind == "process":
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    return ThreadPoolExecutor(workers, thread_name_prefix="zkpipe-g2")


class G2WorkerDied(InternalError):
    """The worker process running a partition's G2 MSM died, on the first pool and on a fresh one."""


class G2Workers:
    """The pool of CPU G2 MSMs (threads or spawned processes), rebuilt when a worker process dies."""

    def __init__(self, kind: str, workers: int) -> None:
        self.kind = kind
        self.workers = workers
        self.executor = make_g2_executor(kind, workers)
        self.rebuilds = 0
        self.running: set[G2Msm] = set()  # MSMs whose work has not ended (for shutdown)
        self._rebuild_lock = asyncio.Lock()

    def start(self, fn: Callable, *args: Any) -> "G2Msm":
        """Start ``fn(*args)`` on the pool now (an asyncio task; call on the event loop)."""
        return G2Msm(self, fn, args)

    async def submit(self, fn: Callable, *args: Any) -> tuple[Executor, Future]:
        """``fn(*args)`` queued on the current pool: (that pool, the call)."""
        executor = self.executor
        try:
            return executor, executor.submit(fn, *args)
        except BrokenProcessPool:  # a worker died while no MSM of ours was waiting on it
            await self.rebuild(executor)
            executor = self.executor
            return executor, executor.submit(fn, *args)

    async def rebuild(self, broken: Executor) -> None:
        """Replace ``broken`` by a fresh, started pool (once, however many MSMs noticed it)."""
        async with self._rebuild_lock:
            if self.executor is not broken:
                return
            fresh = make_g2_executor(self.kind, self.workers)
            await asyncio.to_thread(warm_up, fresh, self.workers)  # spawning processes blocks
            self.executor = fresh
            self.rebuilds += 1
            log.warning("a CPU G2 MSM worker process died; started a fresh pool (rebuild %d)", self.rebuilds)
            broken.shutdown(wait=False, cancel_futures=True)

    async def shutdown(self) -> None:
        """Cancel queued MSMs, wait for running ones, stop the pool."""
        await asyncio.to_thread(self.executor.shutdown, wait=True, cancel_futures=True)
        for msm in list(self.running):
            msm.cancel()
        if self.running:
            await asyncio.gather(*(msm.task for msm in list(self.running)), return_exceptions=True)


class G2Msm:
    """One partition's CPU G2 MSM: ``await msm.result()``; ``cancel()``; ``when_finished(callback)``."""

    def __init__(self, workers: G2Workers, fn: Callable, args: tuple) -> None:
        self._workers = workers
        self._fn = fn
        self._args = args
        self._call: Future | None = None
        self._abandoned = False
        workers.running.add(self)
        # Never cancelled from outside: the task ends exactly when the pool is done with the work.
        self.task = asyncio.get_running_loop().create_task(self._run(), name="zkpipe-g2-msm")
        self.task.add_done_callback(self._ended)

    async def _run(self) -> tuple:
        for attempt in (1, 2):
            executor, call = await self._workers.submit(self._fn, *self._args)
            if self._abandoned:
                call.cancel()
            self._call = call
            try:
                return await asyncio.wrap_future(call)
            except BrokenProcessPool as exc:
                await self._workers.rebuild(executor)
                if self._abandoned:
                    raise asyncio.CancelledError() from exc
                if attempt == 2:
                    raise G2WorkerDied(f"the worker process running the CPU G2 MSM died twice (the pool was "
                                       f"rebuilt after each death): {exc}") from exc
        raise AssertionError("unreachable")

    async def result(self) -> tuple:
        """(Jacobian point, start, end); raises ``G2WorkerDied`` (or the MSM's own error)."""
        try:
            return await asyncio.shield(self.task)  # the caller's cancellation must not cancel the work
        except asyncio.CancelledError:
            if self.task.cancelled() and not asyncio.current_task().cancelling():
                raise RuntimeError("the CPU G2 MSM was cancelled before it ran (pool shut down)") from None
            raise

    def cancel(self) -> None:
        """Drop the MSM: a queued call never runs; a running one finishes and its result is ignored."""
        self._abandoned = True
        if self._call is not None:
            self._call.cancel()

    @property
    def done(self) -> bool:
        return self.task.done()

    def when_finished(self, callback: Callable[[], None]) -> None:
        """``callback()`` on the loop once no pool runs this MSM's work (now if none does)."""
        if self.task.done():
            callback()
        else:
            self.task.add_done_callback(lambda _task: callback())

    def _ended(self, task: asyncio.Task) -> None:
        self._workers.running.discard(self)
        if not task.cancelled():
            task.exception()  # retrieved: a dropped MSM's failure is not "never retrieved"

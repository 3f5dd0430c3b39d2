"""The scheduler decides, never computes: admission order, and which device takes a partition.

Admission: pending partitions wait in one heap ordered by (priority, job submission order,
partition index): critical before high before normal before low, FIFO within one. A cancelled
job's partitions are skipped when they surface. Device choice: prefer a device where the key
is already resident; among the rest, the shortest gpu queue; a resident device wins unless it
has ``RELOAD_PENALTY`` more partitions queued than another (then loading a copy pays off).
Batches: ``take_matching`` takes, from a device's queue, the waiting partitions that may share a
pass with the one about to run (same key: a streamed key's points cross once for all of them).
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

from .jobs import Job

RELOAD_PENALTY = 2  # queued partitions a resident device may be behind before another device loads the key


@dataclass(order=True)
class Pending:
    priority: int
    seq: int
    index: int
    job: Job = field(compare=False)
    source: Any = field(compare=False)


class AdmissionQueue:
    def __init__(self) -> None:
        self._heap: list[Pending] = []
        self._nonempty = asyncio.Event()

    def push_job(self, job: Job, sources: list) -> None:
        for i, src in enumerate(sources):
            heapq.heappush(self._heap, Pending(int(job.priority), job.seq, i, job, src))
        self._nonempty.set()

    async def pop(self) -> Pending:
        """The highest-priority partition whose job is still live."""
        while True:
            while self._heap:
                item = heapq.heappop(self._heap)
                if not item.job.finished:
                    return item
            self._nonempty.clear()
            await self._nonempty.wait()

    def drop_job(self, job: Job) -> None:
        before = len(self._heap)
        self._heap = [p for p in self._heap if p.job is not job]
        if len(self._heap) != before:
            heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)


def choose_device(devices: list, resident: set[int]) -> Any:
    """The device for a partition whose key is resident on device indices ``resident``."""
    def load(dev) -> int:
        return (dev.queue.qsize() if dev.queue is not None else 0) + dev.partitions_in_gpu

    best_any = min(devices, key=load)
    on_resident = [d for d in devices if d.index in resident]
    if not on_resident:
        return best_any
    best_resident = min(on_resident, key=load)
    return best_resident if load(best_resident) - load(best_any) <= RELOAD_PENALTY else best_any


class Sequencer:
    """Tie-breakers for the stage queues: entries are (priority, job seq, index, tick, item)."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def entry(self, job: Job, index: int, item: Any) -> tuple:
        return (int(job.priority), job.seq, index, next(self._ticks), item)


def take_matching(queue: asyncio.PriorityQueue, matches: Callable[[Any], bool], limit: int) -> list:
    """Up to ``limit`` items of ``queue`` (entries ``(..., item)``) for which ``matches(item)``, in
    priority order, taken out of it; the others stay, in their order. No await: the caller runs
    on the loop, so nothing else touches the queue meanwhile."""
    taken, kept = [], []
    while limit > 0 and not queue.empty():
        entry = queue.get_nowait()
        if len(taken) < limit and matches(entry[-1]):
            taken.append(entry[-1])
        else:
            kept.append(entry)
    for entry in kept:
        queue.put_nowait(entry)
        queue.task_done()  # its get above and this put are one stay in the queue
    return taken

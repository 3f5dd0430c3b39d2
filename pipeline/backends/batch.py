"""Several partitions of one key through the device together: ``Backend.start_batch``'s work.

The engine drives a batch step by step, holding the GPU lock for the whole pass::

    work = backend.start_batch(key, items, with_b_g2)        # device thread
    while work.enqueue_next(active)                          # device thread: queue one step
        await work.wait_for_room()                           # loop: at most ``depth`` steps ahead
    await work.wait(); work.results()                        # None for a partition that left

``active[i]`` is False once partition i's job is finished (cancelled, failed elsewhere): it
takes no further step, so a cancelled partition leaves the batch at the next step boundary.

Two kinds of batch:

- ``SequentialBatch``: one step per partition, each ``start_partition`` (the default, and what
  a resident key does: the points are on the device already, batching would only delay).
- ``StreamedPass``: a key with streamed sections (``placement.py``): one *prologue* step per
  partition (its quotient H and its MSMs over resident sections), then one step per chunk of
  the streamed points, for every partition still in the batch; the partial sums of a section
  are added at the end. Backends implement ``_prologue`` and ``_chunk``.
"""
from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import numpy as np

from .placement import SECTIONS, Chunk, is_g2

if TYPE_CHECKING:  # protocol.py imports this module
    from .protocol import MsmResults, WitnessShape

BatchItem = tuple[np.ndarray, "WitnessShape | None"]  # (staged witness, its shape)


class BatchWork(Protocol):
    def enqueue_next(self, active: Sequence[bool]) -> bool:
        """Queue the next step for the partitions still ``active`` (blocking: the device thread);
        False once every step is queued."""

    async def wait_for_room(self) -> None:
        """Until at most ``depth`` queued steps are unfinished (the loop awaits events)."""

    async def wait(self) -> None:
        """Until every queued step is done."""

    def results(self) -> "list[MsmResults | None]":
        """One entry per item: its MSMs, or None if it left the batch. Gives back the batch's
        resources (like ``close``)."""

    def close(self) -> None:
        """Give back the batch's resources without results (lets the device finish first)."""


class SequentialBatch:
    """The default batch: step i is ``backend.start_partition`` of item i; at most ``depth``
    partitions' work queued at once."""

    depth = 2

    def __init__(self, backend: Any, key: Any, items: Sequence[BatchItem], with_b_g2: bool) -> None:
        self.backend, self.key, self.items, self.with_b_g2 = backend, key, list(items), with_b_g2
        self.works: list[Any] = [None] * len(self.items)
        self._next = 0

    def enqueue_next(self, active: Sequence[bool]) -> bool:
        while self._next < len(self.items):
            i = self._next
            self._next += 1
            if active[i]:
                witness, shape = self.items[i]
                self.works[i] = self.backend.start_partition(self.key, witness, self.with_b_g2, shape)
                return True
        return False

    async def wait_for_room(self) -> None:
        queued = [w for w in self.works if w is not None]
        for work in queued[:max(0, len(queued) - self.depth + 1)]:
            await work.wait()

    async def wait(self) -> None:
        for work in self.works:
            if work is not None:
                await work.wait()

    def results(self) -> "list[MsmResults | None]":
        try:
            return [None if w is None else w.result() for w in self.works]
        finally:
            self.close()

    def close(self) -> None:
        for work in self.works:
            if work is not None:
                work.close()


class StreamedPass:
    """The steps of a streamed pass and who is still in it; subclasses queue the device work.

    ``_prologue(i)`` computes partition i's H and its resident sections' MSMs; ``_chunk(chunk,
    live)`` the streamed points of ``chunk`` times the scalars of every partition in ``live``;
    a backend's ``results`` hands ``combine`` each partition's {section: [partial points]}."""

    depth = 2

    def __init__(self, curve, n_items: int, chunks: Sequence[Chunk], with_b_g2: bool) -> None:
        self.curve = curve
        self.n_items = n_items
        self.with_b_g2 = with_b_g2
        if not with_b_g2:  # B2 is computed elsewhere (the host): its points need not cross at all
            chunks = [dataclasses.replace(c, slices=tuple(s for s in c.slices if s.section != "b2")) for c in chunks]
        self.chunks = [c for c in chunks if c.slices]
        self.steps = [("prologue", i) for i in range(n_items)] + [("chunk", j) for j in range(len(self.chunks))]
        self.cursor = 0
        self.left = [False] * n_items
        self.host_s = 0.0  # time spent queueing steps (a starved device thread shows here)
        self.blocked_s = 0.0  # of host_s, time a step waited for the device (an event it needs the host to see)

    def live(self) -> list[int]:
        return [i for i in range(self.n_items) if not self.left[i]]

    def enqueue_next(self, active: Sequence[bool]) -> bool:
        for i, is_active in enumerate(active):
            if not is_active:
                self.left[i] = True  # once out, out: its partial sums would be incomplete
        while self.cursor < len(self.steps):
            kind, index = self.steps[self.cursor]
            self.cursor += 1
            t0 = time.perf_counter()
            if kind == "prologue" and not self.left[index]:
                self._prologue(index)
                self.host_s += time.perf_counter() - t0
                return True
            if kind == "chunk" and self.live():
                self._chunk(self.chunks[index], self.live())
                self.host_s += time.perf_counter() - t0
                return True
        return False

    def combine(self, partials: "list[dict[str, list] | None]", timings: "list[dict[str, float]]") -> "list[MsmResults | None]":
        """Add up each section's partial sums (host ints: a few points per chunk)."""
        from .protocol import G1Jacobian, G2Jacobian, MsmResults

        out: list = []
        g1, g2 = self.curve.g1, self.curve.g2
        for i in range(self.n_items):
            if self.left[i] or partials[i] is None:
                out.append(None)
                continue
            sums = {}
            for section in SECTIONS:
                group = g2 if is_g2(section) else g1
                total = group.infinity
                for point in partials[i].get(section, ()):
                    total = group.add(total, point)
                sums[section] = total
            b2 = G2Jacobian(*sums["b2"]) if self.with_b_g2 else None
            out.append(MsmResults(G1Jacobian(*sums["a"]), G1Jacobian(*sums["b1"]), b2, G1Jacobian(*sums["c"]),
                                  G1Jacobian(*sums["h"]), dict(timings[i])))
        return out

    # -- what a backend implements ------------------------------------------------------------
    def _prologue(self, index: int) -> None:
        raise NotImplementedError

    def _chunk(self, chunk: Chunk, live: list[int]) -> None:
        raise NotImplementedError

"""Big host arrays into device buffers at memory speed: worker threads copy pieces into a ring of
pinned buffers while the GPU copies earlier pieces out of them.

A pageable ``cuMemcpyHtoD`` copies through the driver's own staging on one thread; from a key
mapped from its files (``keycache``) that thread also takes every page fault, so the load runs at
one core's speed. Here the page faults and copies into pinned memory are spread over the formats
worker pool, and each filled piece goes to the device with ``cuMemcpyHtoDAsync`` (DMA from
pinned memory) on the backend's stream; a slot is refilled only once its previous copy's event
has completed. ``pipeline_pieces`` is the ordering alone (tested on the CPU with fakes).
"""
from __future__ import annotations

import collections
from collections.abc import Callable
from concurrent.futures import Executor

import numpy as np

from ...formats.binfile import worker_pool
from ._bindings import driver
from .errors import check
from .memory import DeviceAllocator, DeviceBuffer, PinnedHostBuffer
from .streams import Event

PIECE_BYTES = 64 << 20
SLOTS = 8  # pinned pieces in flight: SLOTS - 1 fills overlap one copy to the device
STAGED_MIN_BYTES = 2 * PIECE_BYTES  # smaller arrays: one plain copy


def pipeline_pieces(total: int, piece: int, slots: int, pool: Executor, fill: Callable[[int, int, int], None],
                    send: Callable[[int, int, int], None], wait: Callable[[int], None]) -> None:
    """Bytes [0, total) in pieces: ``fill(slot, a, b)`` on ``pool`` (up to ``slots`` at once),
    ``send(slot, a, b)`` in order on this thread once that fill is done, and ``wait(slot)`` before a
    slot is filled again (its previous send has completed) and, at the end, for every slot used."""
    pending: collections.deque = collections.deque()
    used: set[int] = set()
    try:
        for k, a in enumerate(range(0, total, piece)):
            b, slot = min(a + piece, total), k % slots
            if len(pending) == slots:
                _send_oldest(pending, send)
            if slot in used:
                wait(slot)
            used.add(slot)
            pending.append((slot, a, b, pool.submit(fill, slot, a, b)))
        while pending:
            _send_oldest(pending, send)
    finally:
        for _, _, _, future in pending:  # an error: let the other fills finish before the buffers go
            future.cancel() or future.exception()
        for slot in sorted(used):
            wait(slot)


def _send_oldest(pending: collections.deque, send) -> None:
    slot, a, b, future = pending.popleft()
    future.result()
    send(slot, a, b)


def staged_upload(allocator: DeviceAllocator, stream, h_array: np.ndarray, what: str) -> DeviceBuffer:
    """``h_array`` in a new device buffer (complete when this returns), through pinned pieces."""
    src = np.asarray(h_array)
    if src.nbytes < STAGED_MIN_BYTES or not src.flags.c_contiguous:
        return allocator.upload(src, what)
    flat = src.reshape(-1).view(np.uint8)
    device = allocator.device
    d_buf = allocator.alloc(flat.shape[0], what)
    ring: list[PinnedHostBuffer] = []
    events: list[Event] = []
    try:
        for _ in range(min(SLOTS, -(-flat.shape[0] // PIECE_BYTES))):
            ring.append(PinnedHostBuffer(device, PIECE_BYTES))
            events.append(Event(timing=False))

        def fill(slot: int, a: int, b: int) -> None:
            np.copyto(ring[slot].array[: b - a], flat[a:b])

        def send(slot: int, a: int, b: int) -> None:
            check(driver.cuMemcpyHtoDAsync(d_buf.ptr + a, ring[slot].ptr, b - a, stream.handle), "cuMemcpyHtoDAsync")
            events[slot].record(stream)

        device.activate()
        pipeline_pieces(flat.shape[0], PIECE_BYTES, len(ring), worker_pool(), fill, send,
                        lambda slot: events[slot].synchronize())
    except BaseException:
        stream.synchronize()
        d_buf.free()
        raise
    finally:
        for event in events:
            event.close()
        for buf in ring:
            buf.free()
    return d_buf

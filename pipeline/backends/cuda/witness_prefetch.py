"""Witnesses copied to the device while their partitions wait for the GPU lock (``CudaOptions.witness_prefetch``).

A resident partition's first step is its witness's upload: 2^26 Fr from page-locked staging is ~2.1 GB,
~40 ms at PCIe speed, all of it under the GPU lock (bench/NOTES.md, session 16), and nothing in the
partition can run beside it (every step reads the witness). The copy engine is idle meanwhile while the
partition before it computes, so the engine asks for the next partition's witness early
(``Backend.prefetch_witness``): it goes to the device on a copy stream, in a block taken in that
stream's order, and ``start_partition`` of the same array makes the kernels' stream wait for the copy's
event instead of uploading. A prefetch nobody takes goes back after its copy (``drop``).
"""
from __future__ import annotations

import threading

import numpy as np

from ._bindings import driver
from .errors import DeviceBudgetError, check
from .memory import DeviceAllocator, DeviceBuffer
from .streams import Event, Stream


class WitnessPrefetches:
    """Prefetched witnesses by their staged array's address (the engine hands ``start_partition`` the
    array it prefetched: the same pinned buffer)."""

    def __init__(self, allocator: DeviceAllocator, copy_stream: Stream) -> None:
        self.allocator, self.copy_stream = allocator, copy_stream
        self._held: dict[tuple[int, int], tuple[DeviceBuffer, Event]] = {}
        self._lock = threading.Lock()  # the engine's device threads call in

    @staticmethod
    def _id(witness: np.ndarray) -> tuple[int, int]:
        return int(witness.ctypes.data), int(witness.nbytes)

    def start(self, witness: np.ndarray) -> int:
        """Queue ``witness``'s copy on the copy stream; the device bytes held (0: not started, the
        array is not contiguous 64-bit words, is already held, or the allocator's budget is short)."""
        if witness.dtype != np.uint64 or not witness.flags.c_contiguous or witness.nbytes == 0:
            return 0
        key = self._id(witness)
        with self._lock:
            if key in self._held:
                return 0
        try:
            d_w = self.allocator.alloc(witness.nbytes, "prefetched witness", stream=self.copy_stream)
        except DeviceBudgetError:
            return 0  # the partition uploads it itself, as without a prefetch
        try:
            check(driver.cuMemcpyHtoDAsync(d_w.ptr, witness.ctypes.data, witness.nbytes, self.copy_stream.handle),
                  "cuMemcpyHtoDAsync")
            copied = Event(timing=False).record(self.copy_stream)
        except BaseException:
            d_w.free()
            raise
        with self._lock:
            raced = key in self._held  # another thread prefetched the same array meanwhile: keep its copy
            if not raced:
                self._held[key] = (d_w, copied)
        if raced:
            self._free_after_copy(d_w, copied)
            return 0
        return witness.nbytes

    def _after_copy(self, copied: Event) -> None:
        """The kernels' stream (the allocator's) orders its later work (a kernel's read, the block's free)
        after the copy."""
        self.allocator.stream.wait(copied)
        copied.close()  # the wait is queued; the driver keeps what it needs

    def _free_after_copy(self, d_w: DeviceBuffer, copied: Event) -> None:
        self._after_copy(copied)
        d_w.free()  # in the allocator's stream order

    def take(self, witness: np.ndarray) -> DeviceBuffer | None:
        """``witness``'s prefetched buffer, the kernels' stream's later work ordered after its copy; None
        if none is held. The caller frees the buffer (in that stream's order, the allocator's)."""
        with self._lock:
            held = self._held.pop(self._id(witness), None)
        if held is None:
            return None
        d_w, copied = held
        self._after_copy(copied)
        return d_w

    def drop(self, witness: np.ndarray) -> bool:
        """Free ``witness``'s prefetch if it was not taken (after its copy)."""
        d_w = self.take(witness)
        if d_w is None:
            return False
        d_w.free()
        return True

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for d_w, copied in held:
            self._free_after_copy(d_w, copied)

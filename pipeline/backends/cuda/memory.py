"""Device memory through one allocator with an explicit byte budget.

Every device buffer comes from ``DeviceAllocator.alloc`` and is a context manager; running
past the budget raises ``DeviceBudgetError`` before CUDA is asked (DESIGN: memory is budgeted,
not hoped for). Names of buffers follow the repository's convention: ``d_`` for device.
"""
from __future__ import annotations

import threading

import numpy as np

from ._bindings import driver
from .errors import DeviceBudgetError, check


class DeviceBuffer:
    def __init__(self, allocator: "DeviceAllocator", ptr: int, nbytes: int, what: str) -> None:
        self._allocator = allocator
        self.ptr = ptr
        self.nbytes = nbytes
        self.what = what

    def __enter__(self) -> "DeviceBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __int__(self) -> int:
        return self.ptr

    def free(self) -> None:
        if self.ptr:
            self._allocator._release(self)
            self.ptr = 0

    def offset(self, nbytes: int) -> int:
        """Address ``nbytes`` into the buffer (for sub-ranges passed to kernels)."""
        if not 0 <= nbytes <= self.nbytes:
            raise ValueError(f"{self.what}: offset {nbytes} outside {self.nbytes} bytes")
        return self.ptr + nbytes

    def upload(self, h_array: np.ndarray, stream=None, offset: int = 0) -> None:
        h = np.ascontiguousarray(h_array)
        if offset + h.nbytes > self.nbytes:
            raise ValueError(f"{self.what}: upload of {h.nbytes} bytes at {offset} overflows {self.nbytes}")
        if h.nbytes == 0:
            return
        if stream is None:
            check(driver.cuMemcpyHtoD(self.ptr + offset, h.ctypes.data, h.nbytes), "cuMemcpyHtoD")
        else:  # pageable memory: the copy is staged, and complete for the host when it returns
            check(driver.cuMemcpyHtoDAsync(self.ptr + offset, h.ctypes.data, h.nbytes, stream.handle),
                  "cuMemcpyHtoDAsync")

    def download(self, h_out: np.ndarray, stream=None, offset: int = 0) -> np.ndarray:
        """Blocking copy into ``h_out`` (after the stream's earlier work)."""
        if h_out.nbytes == 0:
            return h_out
        if stream is not None:
            stream.synchronize()
        check(driver.cuMemcpyDtoH(h_out.ctypes.data, self.ptr + offset, h_out.nbytes), "cuMemcpyDtoH")
        return h_out

    def memset32(self, value: int, stream, n_words: int | None = None) -> None:
        n = self.nbytes // 4 if n_words is None else n_words
        if n:
            check(driver.cuMemsetD32Async(self.ptr, value, n, stream.handle), "cuMemsetD32Async")


class DeviceAllocator:
    """Allocates device memory up to ``budget_bytes`` in all (tracked, thread-safe)."""

    def __init__(self, device, budget_bytes: int) -> None:
        self.device = device
        self.budget_bytes = int(budget_bytes)
        self.in_use_bytes = 0
        self.peak_bytes = 0
        self._lock = threading.Lock()

    def alloc(self, nbytes: int, what: str) -> DeviceBuffer:
        nbytes = max(int(nbytes), 1)
        with self._lock:
            if self.in_use_bytes + nbytes > self.budget_bytes:
                raise DeviceBudgetError(
                    f"device budget exceeded allocating {what}: {nbytes} bytes requested, "
                    f"{self.in_use_bytes} of {self.budget_bytes} in use")
            self.in_use_bytes += nbytes
            self.peak_bytes = max(self.peak_bytes, self.in_use_bytes)
        try:
            self.device.activate()
            ptr = int(check(driver.cuMemAlloc(nbytes), "cuMemAlloc"))
        except BaseException:
            with self._lock:
                self.in_use_bytes -= nbytes
            raise
        return DeviceBuffer(self, ptr, nbytes, what)

    def upload(self, h_array: np.ndarray, what: str, stream=None) -> DeviceBuffer:
        buf = self.alloc(h_array.nbytes, what)
        try:
            buf.upload(h_array, stream)
        except BaseException:
            buf.free()
            raise
        return buf

    def _release(self, buf: DeviceBuffer) -> None:
        # Work queued on any stream may still read the buffer: finish it before the free.
        self.device.activate()
        check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
        check(driver.cuMemFree(buf.ptr), "cuMemFree")
        with self._lock:
            self.in_use_bytes -= buf.nbytes


class PinnedHostBuffer:
    """Page-locked host memory (``h_`` side of a staging copy): host-to-device copies from it run
    at full PCIe speed and truly asynchronously, so keep it alive until the stream has synced."""

    def __init__(self, device, nbytes: int) -> None:
        import ctypes

        device.activate()
        self.nbytes = max(int(nbytes), 1)
        self.ptr = int(check(driver.cuMemHostAlloc(self.nbytes, 0), "cuMemHostAlloc"))
        self.array = np.ctypeslib.as_array((ctypes.c_uint8 * self.nbytes).from_address(self.ptr))

    def view(self, dtype, shape) -> np.ndarray:
        count = int(np.prod(shape))
        return self.array[: count * np.dtype(dtype).itemsize].view(dtype).reshape(shape)

    def __enter__(self) -> "PinnedHostBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def free(self) -> None:
        if self.ptr:
            self.array = None
            check(driver.cuMemFreeHost(self.ptr), "cuMemFreeHost")
            self.ptr = 0

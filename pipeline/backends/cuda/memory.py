"""Device memory through one allocator with an explicit byte budget.

Every device buffer comes from ``DeviceAllocator.alloc`` and is a context manager; running
past the budget raises ``DeviceBudgetError`` before CUDA is asked (DESIGN: memory is budgeted,
not hoped for). Names of buffers follow the repository's convention: ``d_`` for device.

Given a stream, the allocator is stream-ordered: buffers come from the device's memory pool
(``cuMemAllocAsync``) and go back to it in that stream's order (``cuMemFreeAsync``), so the
dozens of short-lived scratch buffers of one proof cost neither a device-wide sync nor a trip
to the driver's allocator each. Such buffers belong to that stream: work on another stream
that touches one must be ordered after it. Without a stream, ``cuMemAlloc`` and a free that
first waits for the whole context.
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from ._bindings import driver
from .errors import DeviceBudgetError, check

log = logging.getLogger(__name__)


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
        """Copy ``h_array`` in, queued on ``stream``; with none, done when this returns."""
        h = np.ascontiguousarray(h_array)
        if offset + h.nbytes > self.nbytes:
            raise ValueError(f"{self.what}: upload of {h.nbytes} bytes at {offset} overflows {self.nbytes}")
        if h.nbytes == 0:
            return
        own = self._allocator.stream
        if stream is None and own is not None:  # after the allocation, in its stream's order
            check(driver.cuMemcpyHtoDAsync(self.ptr + offset, h.ctypes.data, h.nbytes, own.handle),
                  "cuMemcpyHtoDAsync")
            own.synchronize()
        elif stream is None:
            check(driver.cuMemcpyHtoD(self.ptr + offset, h.ctypes.data, h.nbytes), "cuMemcpyHtoD")
        else:  # pageable memory: the copy is staged, and complete for the host when it returns
            check(driver.cuMemcpyHtoDAsync(self.ptr + offset, h.ctypes.data, h.nbytes, stream.handle),
                  "cuMemcpyHtoDAsync")

    def download(self, h_out: np.ndarray, stream=None, offset: int = 0) -> np.ndarray:
        """Blocking copy into ``h_out`` (after the stream's earlier work)."""
        if h_out.nbytes == 0:
            return h_out
        stream = stream or self._allocator.stream
        if stream is not None:
            stream.synchronize()
        check(driver.cuMemcpyDtoH(h_out.ctypes.data, self.ptr + offset, h_out.nbytes), "cuMemcpyDtoH")
        return h_out

    def memset32(self, value: int, stream, n_words: int | None = None) -> None:
        n = self.nbytes // 4 if n_words is None else n_words
        if n:
            check(driver.cuMemsetD32Async(self.ptr, value, n, stream.handle), "cuMemsetD32Async")


ADDRESS_MASK = (1 << 64) - 1  # a base address shifted before a buffer's start wraps like the kernel's arithmetic


class DeviceAddress:
    """A raw device address (inside some buffer) where a ``DeviceBuffer`` is expected: only
    ``.ptr`` is read, and nothing is freed through it."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class DeviceAllocator:
    """Allocates device memory up to ``budget_bytes`` in all (tracked, thread-safe); stream-ordered
    from the device's memory pool when given a stream (see the module docstring)."""

    def __init__(self, device, budget_bytes: int, stream=None) -> None:
        self.device = device
        self.budget_bytes = int(budget_bytes)
        self.in_use_bytes = 0
        self.peak_bytes = 0
        self._lock = threading.Lock()
        self.stream = stream
        self.pool_retries = 0  # allocations the pool refused until trimmed (each waits for the stream)
        self._pool = None
        if stream is not None:
            device.activate()
            self._pool = check(driver.cuDeviceGetDefaultMemPool(device.handle), "cuDeviceGetDefaultMemPool")
            # Keep freed blocks for reuse (up to the budget) rather than handing them back at every sync.
            check(driver.cuMemPoolSetAttribute(self._pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                               driver.cuuint64_t(self.budget_bytes)), "cuMemPoolSetAttribute")
            # A block taken in another stream's order (a prefetched witness, on the copy stream) must not be one
            # whose free is still queued here: the pool would make that stream wait for the free, i.e. hold the
            # copy back behind the running partition (its H buffer has the witness's size). A guard: session 17
            # measured no difference with it, the prefetches that ran were done in time either way.
            check(driver.cuMemPoolSetAttribute(
                self._pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0),
                "cuMemPoolSetAttribute")

    def alloc(self, nbytes: int, what: str, stream=None) -> DeviceBuffer:
        """``stream`` (stream-ordered allocators only): take the block in that stream's order instead of
        the allocator's (a copy beside the kernels' stream; the buffer still goes back in the
        allocator's stream order, so that stream must wait for the other's use of it first)."""
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
            ptr = self._alloc_pooled(nbytes, stream or self.stream) if self.stream is not None \
                else int(check(driver.cuMemAlloc(nbytes), "cuMemAlloc"))
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

    def _alloc_pooled(self, nbytes: int, stream) -> int:
        err, ptr = driver.cuMemAllocAsync(nbytes, stream.handle)
        if err == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            # The pool may hold freed blocks of the wrong sizes: let them all go, then try once more.
            self.pool_retries += 1
            log.debug("device pool refused %d bytes: trimmed, retrying (%d so far)", nbytes, self.pool_retries)
            self.trim()
            err, ptr = driver.cuMemAllocAsync(nbytes, stream.handle)
        return int(check((err, ptr), "cuMemAllocAsync"))

    def trim(self) -> None:
        """Give the pool's unused memory back to the driver (after an evicted key, at close)."""
        if self._pool is not None:
            self.device.activate()
            self.stream.synchronize()
            check(driver.cuMemPoolTrimTo(self._pool, 0), "cuMemPoolTrimTo")

    def _release(self, buf: DeviceBuffer) -> None:
        self.device.activate()
        if self.stream is not None:  # after the work queued on the stream so far
            check(driver.cuMemFreeAsync(buf.ptr, self.stream.handle), "cuMemFreeAsync")
        else:  # work queued on any stream may still read the buffer: finish it before the free
            check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
            check(driver.cuMemFree(buf.ptr), "cuMemFree")
        with self._lock:
            self.in_use_bytes -= buf.nbytes


class PinnedHostBuffer:
    """Page-locked host memory (``h_`` side of a staging copy): host-to-device copies from it run
    at full PCIe speed and truly asynchronously, so keep it alive until the stream has synced."""

    def __init__(self, device, nbytes: int, portable: bool = False) -> None:
        import ctypes

        device.activate()
        self.device = device
        self.nbytes = max(int(nbytes), 1)
        flags = driver.CU_MEMHOSTALLOC_PORTABLE if portable else 0  # portable: pinned for every device's context
        self.ptr = int(check(driver.cuMemHostAlloc(self.nbytes, flags), "cuMemHostAlloc"))
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
            self.device.activate()  # callers may be threads that never touched the device
            check(driver.cuMemFreeHost(self.ptr), "cuMemFreeHost")
            self.ptr = 0


class HostRegistration:
    """Existing host memory (a key's point arrays, possibly mapped read-only from the key file)
    page-locked in place for asynchronous copies, without a second copy of tens of GB; ``close``
    unlocks it. Where the driver refuses (limits
    on locked memory), ``registered`` is False and copies from it are pageable (slower, correct)."""

    def __init__(self, device, array: np.ndarray) -> None:
        if not array.flags.c_contiguous:
            raise ValueError("only a C-contiguous array can be registered")
        device.activate()
        self.device = device
        self.array = array
        self.ptr = int(array.ctypes.data)
        self.nbytes = int(array.nbytes)
        # mapped too: kernels may read it in place (a streamed pass gathers its tail points so)
        flags = driver.CU_MEMHOSTREGISTER_PORTABLE | driver.CU_MEMHOSTREGISTER_DEVICEMAP
        if not array.flags.writeable:  # a key's points mapped read-only from its file
            flags |= driver.CU_MEMHOSTREGISTER_READ_ONLY
        err = driver.cuMemHostRegister(self.ptr, self.nbytes, flags)[0] if self.nbytes else None
        self.registered = err == driver.CUresult.CUDA_SUCCESS
        self.device_ptr: int | None = None  # the array's address for kernels, when the driver maps it
        if self.registered:
            err_ptr, d_ptr = driver.cuMemHostGetDevicePointer(self.ptr, 0)
            if err_ptr == driver.CUresult.CUDA_SUCCESS:
                self.device_ptr = int(d_ptr)
        if self.nbytes and not self.registered:
            log.warning("could not page-lock %.1f GB of host arrays in place (%s): copies from them run at "
                        "pageable speed", self.nbytes / 1e9, err)

    def close(self) -> None:
        if self.registered:
            self.device.activate()
            check(driver.cuMemHostUnregister(self.ptr), "cuMemHostUnregister")
            self.registered = False
            self.device_ptr = None
        self.array = None

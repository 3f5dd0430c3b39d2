"""Device -> host copies of a key's big arrays at pinned-memory speed.

A plain ``cuMemcpyDtoH`` into a fresh numpy array ran at ~3.4 GB/s on the H200 host (31 s for the
77 GB of points at 2^27, bench/results/dev_setup_27_bls12381.md): the driver stages a pageable
copy through its own small pinned buffer, one piece at a time, and every page of the new array
faults on first touch in that one thread. Here two pinned staging buffers alternate: the device
fills one while a few threads copy the other into the array (numpy's copy releases the GIL, so
the page faults and the memcpy run in parallel).
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

STAGING_BYTES = 256 << 20  # per staging buffer: two of them, pinned once per setup
COPY_THREADS = 8  # host threads copying a staged piece into the array


def pipelined_copy(n_bytes: int, dst: np.ndarray, stages: tuple[np.ndarray, np.ndarray],
                   fill: Callable[[int, int, int], None], pool: ThreadPoolExecutor, threads: int) -> None:
    """Copy ``n_bytes`` into ``dst`` (a flat uint8 array) through two staging arrays: ``fill(stage,
    offset, size)`` puts bytes [offset, offset + size) of the source into ``stages[stage][:size]``
    and returns when they are there; the copy of one stage into ``dst`` overlaps the next fill."""
    size = stages[0].shape[0]
    pending: list[list[Future]] = [[], []]
    for k, offset in enumerate(range(0, n_bytes, size)):
        which = k % 2
        for future in pending[which]:  # this stage's bytes from two pieces ago are in dst
            future.result()
        m = min(size, n_bytes - offset)
        fill(which, offset, m)
        src, piece = stages[which], -(-m // threads)
        pending[which] = [pool.submit(np.copyto, dst[offset + a:offset + min(a + piece, m)], src[a:min(a + piece, m)])
                          for a in range(0, m, piece)]
    for futures in pending:
        for future in futures:
            future.result()


class HostDownloader:
    """Two pinned staging buffers and a copy pool, for several downloads on one stream."""

    def __init__(self, device, stream, staging_bytes: int = STAGING_BYTES, threads: int = COPY_THREADS) -> None:
        from ..backends.cuda.memory import PinnedHostBuffer

        self.stream, self.threads = stream, threads
        self._buffers = [PinnedHostBuffer(device, staging_bytes) for _ in range(2)]
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="zkpipe-setup-copy")

    def __enter__(self) -> "HostDownloader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def download(self, d_ptr: int, h_out: np.ndarray) -> np.ndarray:
        """``h_out`` (C-contiguous) filled from device address ``d_ptr``, after the stream's earlier work."""
        from ..backends.cuda._bindings import driver
        from ..backends.cuda.errors import check

        if not h_out.flags.c_contiguous:
            raise ValueError("download target must be C-contiguous")
        flat = h_out.reshape(-1).view(np.uint8)
        stages = (self._buffers[0].array, self._buffers[1].array)

        def fill(which: int, offset: int, size: int) -> None:
            check(driver.cuMemcpyDtoHAsync(self._buffers[which].ptr, d_ptr + offset, size, self.stream.handle),
                  "cuMemcpyDtoHAsync")
            self.stream.synchronize()

        pipelined_copy(flat.shape[0], flat, stages, fill, self._pool, self.threads)
        return h_out

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for buf in self._buffers:
            buf.free()
        self._buffers = []

"""Engine test helpers: asyncio debug mode, fixture paths, and a fake device backend.

The fake backend computes nothing: it sleeps instead of running kernels, returns points at
infinity, and allocates "device memory" from a ``FakeDeviceAllocator`` that raises on
over-allocation, exactly as a GPU's allocator would. It exists to test the engine's own
accounting (GPU lock, VRAM budget, backpressure, cancellation) at partition counts the pure
Python CPU backend could not reach in a test run; proofs from the real CPU backend are
tested separately.
"""
from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from pipeline.backends.protocol import Backend, G1Jacobian, G2Jacobian, MsmResults
from tests.conftest import enable_asyncio_debug, fixture_dir


@pytest.fixture(autouse=True)
async def asyncio_debug_mode():
    enable_asyncio_debug()
    yield


def key_files(curve: str, circuit: str) -> dict[str, Path]:
    d = fixture_dir(curve, circuit)
    return {"zkey_path": d / "circuit_final.zkey", "r1cs_path": d / "circuit.r1cs", "wasm_path": d / "circuit.wasm"}


def wtns(curve: str, circuit: str) -> str:
    return str(fixture_dir(curve, circuit) / "witness.wtns")


class FakeOutOfMemory(MemoryError):
    pass


class FakeDeviceAllocator:
    """Device memory of a fixed size; over-allocation raises like cudaMalloc's out-of-memory."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.peak = 0
        self.ooms = 0
        self._lock = threading.Lock()

    def alloc(self, n: int) -> None:
        with self._lock:
            if self.used + n > self.capacity:
                self.ooms += 1
                raise FakeOutOfMemory(f"out of memory: {n} bytes requested, {self.used}/{self.capacity} in use")
            self.used += n
            self.peak = max(self.peak, self.used)

    def free(self, n: int) -> None:
        with self._lock:
            self.used -= n


class FakeKey:
    def __init__(self, zkey) -> None:
        self.zkey = zkey


class FakeBackend(Backend):
    """Sleeps instead of computing; takes key and scratch memory from a FakeDeviceAllocator.
    With ``enqueue=True``, ``start_partition`` returns at once and the work completes ``gpu_s``
    later on its own (like queued kernels): the engine must await it, not block on it."""

    name = "fake"

    def __init__(self, allocator: FakeDeviceAllocator, key_bytes: int = 1000, scratch: int = 500,
                 gpu_s: float = 0.01, enqueue: bool = False, batch: int = 1) -> None:
        self.allocator = allocator
        self.batch = batch  # max_batch: > 1 stands for a streamed key (a pass shared by partitions)
        self.batches: list[int] = []  # the size of every batch started
        self.paused = False  # while set, enqueued work does not complete (a device busy elsewhere)
        self.enqueue = enqueue
        self.closed_works = 0
        self.shapes = []  # the WitnessShape each partition came with
        self.key_bytes = key_bytes
        self.scratch = scratch
        self.gpu_s = gpu_s
        self.calls = 0
        self.running = 0
        self.max_running = 0
        self.loaded = 0
        self.during_compute = None  # optional hook(thread) called inside compute_h
        self._lock = threading.Lock()

    def key_device_bytes(self, zkey) -> int:
        return self.key_bytes

    def scratch_bytes(self, key, batch=1) -> int:
        return self.scratch * batch

    def max_batch(self, key) -> int:
        return self.batch

    def start_batch(self, key, items, with_b_g2):
        self.batches.append(len(items))
        return super().start_batch(key, items, with_b_g2)

    def load_key(self, zkey, placement=None):
        self.allocator.alloc(self.key_bytes)
        self.loaded += 1
        return FakeKey(zkey)

    def unload_key(self, key) -> None:
        self.allocator.free(self.key_bytes)
        self.loaded -= 1

    def compute_h(self, key, witness):
        self.allocator.alloc(self.scratch)  # freed at the end of msms: the partition's device scratch
        with self._lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.calls += 1
        if self.during_compute is not None:
            self.during_compute()
        time.sleep(self.gpu_s / 2)
        return "h"

    def h_to_host(self, h):
        raise NotImplementedError

    def msms(self, key, witness, h, with_b_g2=True):
        time.sleep(self.gpu_s / 2)
        with self._lock:
            self.running -= 1
        self.allocator.free(self.scratch)
        return infinity_results(key, with_b_g2, {"msm_ms": self.gpu_s / 2 * 1e3})

    def msm_b_g2(self, key, witness):
        return G2Jacobian(*key.zkey.curve.g2.infinity)

    def start_partition(self, key, witness, with_b_g2=True, shape=None):
        self.shapes.append(shape)
        if not self.enqueue:
            return super().start_partition(key, witness, with_b_g2, shape)
        self.allocator.alloc(self.scratch)
        with self._lock:
            self.calls += 1
        return FakeWork(self, key, with_b_g2, time.monotonic() + self.gpu_s)


def infinity_results(key, with_b_g2, timings):
    g1, g2 = key.zkey.curve.g1, key.zkey.curve.g2
    inf1 = G1Jacobian(*g1.infinity)
    return MsmResults(inf1, inf1, G2Jacobian(*g2.infinity) if with_b_g2 else None, inf1, inf1, timings)


class FakeWork:
    """Queued fake device work: done once its deadline passed; scratch freed once, by result or close."""

    def __init__(self, backend, key, with_b_g2, deadline) -> None:
        self.backend, self.key, self.with_b_g2, self.deadline = backend, key, with_b_g2, deadline
        self.closed = False

    def done(self) -> bool:
        return not self.backend.paused and time.monotonic() >= self.deadline

    async def wait(self) -> None:
        while not self.done():
            await asyncio.sleep(max(0.005, self.deadline - time.monotonic()))

    def result(self):
        assert self.done(), "result() before the work completed"
        self.close()
        return infinity_results(self.key, self.with_b_g2, {"h_ms": 0.0, "msm_ms": self.backend.gpu_s * 1e3})

    def close(self) -> None:
        if not self.closed:
            time.sleep(max(0.0, self.deadline - time.monotonic()))  # like a stream sync: the device finishes
            self.closed = True
            self.backend.allocator.free(self.backend.scratch)
            self.backend.closed_works += 1


@pytest.fixture
def fake_device():
    """(allocator, backend) sized for one key and one partition's scratch."""
    allocator = FakeDeviceAllocator(1500)
    return allocator, FakeBackend(allocator, key_bytes=1000, scratch=500)


def factory_for(backend):
    return lambda ordinal: backend


async def until(condition, what: str, timeout: float = 30.0) -> None:
    """Wait for ``condition()`` (checked every 10 ms); the timeout is a hang guard, not a measurement."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def settle(engine, timeout: float = 10.0) -> None:
    """Wait until no partition is in flight (dropped partitions leave at their next boundary)."""
    deadline = time.monotonic() + timeout
    while engine.pipeline.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert engine.pipeline.in_flight == 0, engine.status()


class FakePinnedBuffer:
    """Stands for page-locked memory: a numpy block that must be freed exactly once."""

    def __init__(self, nbytes: int) -> None:
        import numpy as np

        self.array = np.zeros(nbytes, dtype=np.uint8)
        self.nbytes = nbytes
        self.freed = False

    def view(self, dtype, shape):
        import numpy as np

        count = int(np.prod(shape))
        return self.array[: count * np.dtype(dtype).itemsize].view(dtype).reshape(shape)

    def free(self) -> None:
        assert not self.freed, "pinned buffer freed twice"
        self.freed = True


class FakePinnedBackend(FakeBackend):
    """A FakeBackend that offers pinned staging memory, and notes whether the gpu stage got it."""

    pins_host_memory = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.buffers: list[FakePinnedBuffer] = []
        self.staged_from_pinned = 0

    def pinned_host_buffer(self, nbytes: int) -> FakePinnedBuffer:
        buffer = FakePinnedBuffer(nbytes)
        with self._lock:
            self.buffers.append(buffer)
        return buffer

    def compute_h(self, key, witness):
        import numpy as np

        with self._lock:
            if any(not b.freed and np.shares_memory(witness, b.array) for b in self.buffers):
                self.staged_from_pinned += 1
        return super().compute_h(key, witness)

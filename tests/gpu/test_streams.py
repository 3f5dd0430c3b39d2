"""Streams, events, the memory budget and error reporting of pipeline/backends/cuda."""
from __future__ import annotations

import asyncio
import time

import pytest

from pipeline.backends.cuda.errors import CudaError, DeviceBudgetError
from pipeline.backends.cuda.memory import DeviceAllocator
from pipeline.backends.cuda.streams import Event, Stream, event_ready

pytestmark = pytest.mark.gpu


def test_event_ready_does_not_block_the_loop(cuda_backend, runtime):
    """A ~0.3 s kernel: while awaiting its event, a 1 ms ticker keeps running (lag measured)."""
    async def main():
        lags = []
        done = asyncio.Event()

        async def ticker():
            while not done.is_set():
                t0 = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - t0 - 0.001)

        task = asyncio.create_task(ticker())
        plain = DeviceAllocator(cuda_backend.device, budget_bytes=1 << 20)  # not tied to the backend's stream
        with Stream(cuda_backend.device) as stream, Event() as ev, plain.alloc(4, "flag") as d_flag:
            t0 = time.perf_counter()
            runtime.kernels.launch("test_spin", 1, 32, (600_000_000, d_flag.ptr), stream)  # ~0.3 s at 2 GHz
            ev.record(stream)
            await event_ready(ev)
            waited = time.perf_counter() - t0
        done.set()
        await task
        return waited, lags

    waited, lags = asyncio.run(main(), debug=True)
    assert waited > 0.1, "the kernel should have taken a while"
    assert len(lags) > 50
    assert max(lags) < 0.02, f"loop lag {max(lags) * 1e3:.1f} ms while awaiting an event"
    print(f"event wait {waited * 1e3:.0f} ms, {len(lags)} ticks, max loop lag {max(lags) * 1e3:.2f} ms")


def test_allocation_past_the_budget_raises_before_cuda(cuda_backend):
    alloc = DeviceAllocator(cuda_backend.device, budget_bytes=1 << 20)
    with alloc.alloc(1 << 19, "half"):
        with pytest.raises(DeviceBudgetError, match="other half"):
            alloc.alloc((1 << 19) + 1, "other half")
    assert alloc.in_use_bytes == 0


def test_failed_launch_names_the_kernel(cuda_backend, runtime):
    with pytest.raises(CudaError, match="test_spin"):
        runtime.kernels.launch("test_spin", 1, 4096, (1, 0), cuda_backend.stream)  # 4096 threads: invalid


def test_wrong_argument_count_is_a_type_error(runtime, cuda_backend):
    with pytest.raises(TypeError, match="test_spin"):
        runtime.kernels.launch("test_spin", 1, 1, (1,), cuda_backend.stream)


def test_a_stream_of_the_greatest_priority_runs_beside_a_busy_one(cuda_backend, runtime):
    """Stream(device, priority): made at the context's greatest priority (bench/gpu_msm_overlap.py's second
    stream), its short kernel finishes while a ~0.3 s one still runs on a stream of the default priority."""
    least, greatest = Stream.priority_range(cuda_backend.device)
    assert greatest <= least  # lower numbers come first
    plain = DeviceAllocator(cuda_backend.device, budget_bytes=1 << 20)
    with Stream(cuda_backend.device) as busy, Stream(cuda_backend.device, greatest) as urgent, \
            Event() as long_done, Event() as short_done, plain.alloc(8, "flags") as d_flags:
        runtime.kernels.launch("test_spin", 1, 32, (600_000_000, d_flags.ptr), busy)  # ~0.3 s at 2 GHz
        long_done.record(busy)
        runtime.kernels.launch("test_spin", 1, 32, (1000, d_flags.ptr + 4), urgent)
        short_done.record(urgent)
        short_done.synchronize()
        assert not long_done.query(), "the short kernel waited for the long one"
        long_done.synchronize()

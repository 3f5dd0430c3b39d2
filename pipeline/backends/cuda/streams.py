"""Streams and events, and awaiting an event without blocking the asyncio loop.

``event_ready`` polls ``cuEventQuery`` with an exponential back-off of ``asyncio.sleep``; the
loop keeps running other tasks meanwhile (its lag is measured in tests/gpu/test_streams.py).
"""
from __future__ import annotations

from contextlib import contextmanager

from ._bindings import driver
from .errors import CudaError, check


class Stream:
    def __init__(self, device, priority: int | None = None) -> None:
        """``priority``: 0 the default, lower numbers first (``priority_range``); the block scheduler
        then places the pending blocks of a higher-priority stream's kernels before others'."""
        device.activate()
        self.device = device
        flags = driver.CUstream_flags.CU_STREAM_NON_BLOCKING
        self.handle = check(driver.cuStreamCreate(flags) if priority is None
                            else driver.cuStreamCreateWithPriority(int(flags), priority), "cuStreamCreate")
        self.recent_kernels: list[str] = []  # names the kernels a failed sync may be about

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def priority_range(device) -> tuple[int, int]:
        """(least, greatest) stream priority of the current context: greatest is the lower number."""
        device.activate()
        return tuple(check(driver.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange"))

    def note_launch(self, kernel: str) -> None:
        self.recent_kernels.append(kernel)
        del self.recent_kernels[:-8]

    def wait(self, event: "Event") -> None:
        """Work queued here from now on starts after ``event`` (recorded on another stream) fired."""
        check(driver.cuStreamWaitEvent(self.handle, event.handle, 0), "cuStreamWaitEvent")

    def synchronize(self) -> None:
        try:
            check(driver.cuStreamSynchronize(self.handle), "cuStreamSynchronize")
        except CudaError as exc:
            raise CudaError(exc.call, exc.error, ", ".join(self.recent_kernels) or None) from exc
        self.recent_kernels.clear()

    def close(self) -> None:
        if self.handle is not None:
            self.device.activate()
            check(driver.cuStreamSynchronize(self.handle), "cuStreamSynchronize")
            check(driver.cuStreamDestroy(self.handle), "cuStreamDestroy")
            self.handle = None


class Event:
    def __init__(self, timing: bool = True) -> None:
        flags = driver.CUevent_flags.CU_EVENT_DEFAULT if timing else driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = check(driver.cuEventCreate(flags), "cuEventCreate")

    def __enter__(self) -> "Event":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self, stream: Stream) -> "Event":
        check(driver.cuEventRecord(self.handle, stream.handle), "cuEventRecord")
        return self

    def query(self) -> bool:
        status = driver.cuEventQuery(self.handle)[0]
        if status == driver.CUresult.CUDA_SUCCESS:
            return True
        if status == driver.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((status,), "cuEventQuery")
        return False

    def synchronize(self) -> None:
        check(driver.cuEventSynchronize(self.handle), "cuEventSynchronize")

    def elapsed_ms(self, start: "Event") -> float:
        return float(check(driver.cuEventElapsedTime(start.handle, self.handle), "cuEventElapsedTime"))

    def close(self) -> None:
        if self.handle is not None:
            check(driver.cuEventDestroy(self.handle), "cuEventDestroy")
            self.handle = None


class PhaseClock:
    """Device milliseconds per named phase of queued work, summed over its occurrences: events
    recorded on ``stream`` around each phase. Off, it records nothing (no cost on the product's path)."""

    def __init__(self, stream: Stream, on: bool) -> None:
        self.stream, self.on = stream, on
        self.marks: list[tuple[str, Event, Event]] = []

    @contextmanager
    def phase(self, name: str):
        if not self.on:
            yield
            return
        start = Event().record(self.stream)
        try:
            yield
        finally:
            self.marks.append((name, start, Event().record(self.stream)))

    def totals_ms(self) -> dict[str, float]:
        """Per phase, its summed device time (every event must have fired: synchronise first)."""
        out: dict[str, float] = {}
        for name, start, end in self.marks:
            out[name] = out.get(name, 0.0) + end.elapsed_ms(start)
        return out

    def close(self) -> None:
        for _, start, end in self.marks:
            start.close()
            end.close()
        self.marks = []


async def event_ready(event, first_poll_s: float = 50e-6, max_poll_s: float = 2e-3) -> None:
    """Complete once ``event`` (anything with a non-blocking ``query()``) has fired; never blocks
    the loop longer than one cuEventQuery."""
    import asyncio  # here, not at the top: a one-shot prove never awaits, and asyncio (with ssl) was
    # ~90 ms of the backend's import on the H200 host, beside numpy's (bench/results/oneshot_prove_cuda.md)

    delay = first_poll_s
    while not event.query():
        await asyncio.sleep(delay)
        delay = min(delay * 2, max_poll_s)

"""One partition's device work after it was enqueued: awaited through a CUDA event, its five
MSM results read from a small pinned buffer, its phases timed by events between them.

``CudaPartitionWork`` is the CUDA backend's ``PartitionWork`` (backends/protocol.py). Every
device buffer of the partition was freed in stream order when the work was enqueued; what the
work still holds is host-side: the pinned result buffer (back to its pool on ``result`` or
``close``) and the events.
"""
from __future__ import annotations

import threading

import numpy as np

from ...errors import InternalError
from ..protocol import G1Jacobian, G2Jacobian, MsmResults
from .memory import PinnedHostBuffer
from .msm import xyzz_to_jacobian
from .streams import Event, event_ready

# Result slots (each one G2-sized XYZZ point): the five MSMs, then the batch sums of the ones of a
# split witness (zeros when not split: infinity); after them the device's split counts (2 x u32).
MSM_SLOTS = ("a", "b1", "b2", "c", "h", "a_ones", "b1_ones", "b2_ones", "c_ones")
COUNTS_BYTES = 8


def results_bytes(slot_bytes: int) -> int:
    return len(MSM_SLOTS) * slot_bytes + COUNTS_BYTES


class PinnedResultPool:
    """Small page-locked buffers for the five MSM results of a partition (an async device-to-host
    copy needs pinned memory; pinning per proof would cost more than the copy)."""

    def __init__(self, device, nbytes: int) -> None:
        self.device = device
        self.nbytes = nbytes
        self._free: list[PinnedHostBuffer] = []
        self._lock = threading.Lock()

    def take(self) -> PinnedHostBuffer:
        with self._lock:
            if self._free:
                return self._free.pop()
        return PinnedHostBuffer(self.device, self.nbytes)

    def give_back(self, buf: PinnedHostBuffer) -> None:
        with self._lock:
            self._free.append(buf)

    def close(self) -> None:
        with self._lock:
            for buf in self._free:
                buf.free()
            self._free.clear()


ONES_SUFFIX = "_ones_ms"


H_PHASES = ("upload_ms", "spmv_ms", "ntt_ms")  # the witness's copy, the sparse products, the transforms


def h_time_ms(phases: dict[str, float]) -> float:
    """H's device time: its phases' sum (those present)."""
    return sum(phases.get(k, 0.0) for k in H_PHASES)


def partition_timings(phases: dict[str, float]) -> dict[str, float]:
    """A partition's timings from its phases between events (``PhaseEvents.elapsed_ms``), with h_ms and
    msm_ms, its H and its MSMs (the 0/1 split included). A split section's time is two phases, its ones'
    point sum (msm_a_ones_ms) and then its tail (msm_a_ms, with the shared digit sort where it is made):
    msm_a_ms becomes their sum, and msm_a_ones_ms stays beside it as its part."""
    timings = dict(phases)
    for key, ones in phases.items():
        if key.startswith("msm_") and key.endswith(ONES_SUFFIX):
            whole = key[:-len(ONES_SUFFIX)] + "_ms"
            timings[whole] = timings.get(whole, 0.0) + ones
    timings["h_ms"] = h_time_ms(phases)
    timings["msm_ms"] = timings.get("split_ms", 0.0) + sum(
        v for k, v in phases.items() if k.startswith("msm_"))
    return timings


class PhaseEvents:
    """Events recorded on the stream between phases; elapsed times once the last one fired."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.marks: list[tuple[str, Event]] = [("start", Event().record(stream))]

    def mark(self, phase: str) -> None:
        self.marks.append((phase, Event().record(self.stream)))

    @property
    def last(self) -> Event:
        return self.marks[-1][1]

    def elapsed_ms(self) -> dict[str, float]:
        return {name: ev.elapsed_ms(prev) for (_, prev), (name, ev) in zip(self.marks, self.marks[1:])}

    def close(self) -> None:
        for _, ev in self.marks:
            ev.close()
        self.marks.clear()


class CudaPartitionWork:
    def __init__(self, curve, device, events: PhaseEvents, h_results: PinnedHostBuffer, pool: PinnedResultPool,
                 slot_bytes: int, with_b_g2: bool, keep_alive: tuple = (),
                 expected_counts: tuple[int, int] | None = None) -> None:
        self.curve = curve
        self.device = device
        self.events = events
        self.h_results = h_results
        self.pool = pool
        self.slot_bytes = slot_bytes
        self.with_b_g2 = with_b_g2
        self._keep_alive = keep_alive  # host arrays an async copy may still read
        self.expected_counts = expected_counts  # (ones, others) the host counted, when split
        self._closed = False

    def done(self) -> bool:
        self.device.activate()  # the loop thread polls works of several devices in turn
        return self.events.last.query()

    query = done  # what ``event_ready`` polls

    async def wait(self) -> None:
        await event_ready(self)

    def wait_blocking(self) -> None:
        self.device.activate()
        self.events.last.synchronize()

    def result(self) -> MsmResults:
        """The MSMs as Jacobian points (the work must be done: ``wait`` first)."""
        if self._closed:
            raise RuntimeError("the partition's work was already closed")
        self.wait_blocking()  # returns at once after ``wait``; keeps a direct caller correct
        n_words = len(MSM_SLOTS) * self.slot_bytes // 4
        raw = self.h_results.view(np.uint32, (n_words + COUNTS_BYTES // 4,))
        words = raw[:n_words].reshape(len(MSM_SLOTS), self.slot_bytes // 4)
        if self.expected_counts is not None and tuple(int(x) for x in raw[n_words:]) != self.expected_counts:
            found = tuple(int(x) for x in raw[n_words:])
            self.close()
            raise InternalError(f"the device split the witness into {found} (ones, others), the host counted "
                                f"{self.expected_counts}: the MSMs would be wrong")
        g1, g2, fq = self.curve.g1, self.curve.g2, self.curve.fq
        g1_words = words.shape[1] // 2  # a G1 XYZZ point fills half a (G2-sized) slot

        def point(name):
            i = MSM_SLOTS.index(name)
            if name.startswith("b2"):
                return xyzz_to_jacobian(g2, fq, words[i].copy())
            return xyzz_to_jacobian(g1, fq, words[i, :g1_words].copy())

        points = {"h": G1Jacobian(*point("h"))}
        for name in ("a", "b1", "b2", "c"):
            group = g2 if name == "b2" else g1
            total = group.add(point(name), point(f"{name}_ones"))  # the tail and the ones of a split
            points[name] = (G2Jacobian if name == "b2" else G1Jacobian)(*total)
        if not self.with_b_g2:
            points["b2"] = None
        timings = partition_timings(self.events.elapsed_ms())
        self.close()
        return MsmResults(points["a"], points["b1"], points["b2"], points["c"], points["h"], timings)

    def close(self) -> None:
        """Give back the pinned buffer and events; waits for the device first (it may still write)."""
        if self._closed:
            return
        self._closed = True
        self.wait_blocking()
        self.pool.give_back(self.h_results)
        self.events.close()
        self._keep_alive = ()

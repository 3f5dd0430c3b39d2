"""Timings, counters and gauges: the engine's own measurements (DESIGN rule 4).

- per partition: queue waits, synth_ms, prep_msm_ms, gpu_lock_wait_ms, gpu_total_ms (with
  the backend's split: gpu_h_ms, gpu_msm_ms, spmv/ntt where given), b_g2_msm_ms,
  epilogue_ms, total_ms (``PartitionProof.timings_ms``);
- a timeline of stage intervals (who ran what, where, when) for overlap checks and plots;
- counters (jobs, partitions, failures), recent stage medians, GPU-lock busy fraction,
  event-loop lag; rendered as a dict (``Engine.status()``) and as Prometheus text.
"""
from __future__ import annotations

import asyncio
import collections
import statistics
import time
from dataclasses import dataclass

STAGE_TIMINGS = ("synth_ms", "prep_msm_ms", "gpu_lock_wait_ms", "gpu_total_ms", "b_g2_msm_ms", "epilogue_ms",
                 "total_ms")


@dataclass(frozen=True)
class Interval:
    """One stage of one partition: [start, end] in perf_counter seconds."""

    job_id: str
    partition: int
    stage: str  # synthesize | prep_msm | gpu | b_g2_msm | epilogue
    worker: str
    device: int | None
    start: float
    end: float


class Metrics:
    def __init__(self, timeline_kept: int, recent_kept: int = 512) -> None:
        self.started = time.perf_counter()
        self.counters: collections.Counter[str] = collections.Counter()
        self.timeline: collections.deque[Interval] = collections.deque(maxlen=timeline_kept)
        self.recent: dict[str, collections.deque[float]] = {
            k: collections.deque(maxlen=recent_kept) for k in STAGE_TIMINGS}
        self.in_stage: collections.Counter[str] = collections.Counter()
        self.peak_in_flight = 0
        self.loop_lag_max_ms = 0.0
        self.loop_lag_last_ms = 0.0
        self.loop_lags: collections.deque[float] = collections.deque(maxlen=1200)

    def record(self, interval: Interval) -> None:
        self.timeline.append(interval)

    def partition_finished(self, timings_ms: dict[str, float], ok: bool) -> None:
        self.counters["partitions_done" if ok else "partitions_failed"] += 1
        if ok:
            for k in STAGE_TIMINGS:
                if k in timings_ms:
                    self.recent[k].append(timings_ms[k])

    def medians(self) -> dict[str, float]:
        return {k: statistics.median(v) for k, v in self.recent.items() if v}

    async def probe_loop_lag(self, interval_s: float) -> None:
        """Sleep ``interval_s`` again and again; the overshoot is how late the loop runs callbacks."""
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(interval_s)
            lag_ms = max(0.0, (time.perf_counter() - t0 - interval_s) * 1e3)
            self.loop_lag_last_ms = lag_ms
            self.loop_lag_max_ms = max(self.loop_lag_max_ms, lag_ms)
            self.loop_lags.append(lag_ms)


def lock_busy_fraction(device, now: float, since: float) -> float:
    busy = device.lock_busy_s
    if device.lock_held_since is not None:
        busy += now - device.lock_held_since
    wall = now - since
    return busy / wall if wall > 0 else 0.0


def prometheus_text(status: dict) -> str:
    """The status snapshot as Prometheus exposition text (names prefixed ``zkpipe_``)."""
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[dict, float]]) -> None:
        lines.append(f"# HELP zkpipe_{name} {help_text}")
        lines.append(f"# TYPE zkpipe_{name} {kind}")
        for labels, value in samples:
            label_text = ",".join(f'{k}="{v}"' for k, v in labels.items())
            lines.append(f"zkpipe_{name}{{{label_text}}} {float(value):g}" if label_text
                         else f"zkpipe_{name} {float(value):g}")

    for name, value in sorted(status["counters"].items()):
        metric(f"{name}_total", "counter", f"{name.replace('_', ' ')} since the engine started", [({}, value)])
    metric("queue_depth", "gauge", "partitions waiting in each stage queue",
           [({"stage": k}, v) for k, v in status["queues"].items()])
    metric("partitions_in_stage", "gauge", "partitions being worked on in each stage",
           [({"stage": k}, v) for k, v in status["in_stage"].items()])
    metric("partitions_in_flight", "gauge", "partitions admitted and not finished", [({}, status["partitions_in_flight"])])
    metric("gpu_lock_busy_fraction", "gauge", "share of wall time each device's GPU lock was held",
           [({"device": d["index"]}, d["gpu_lock_busy_fraction"]) for d in status["devices"]])
    metric("vram_budget_used_bytes", "gauge", "bytes of each device's VRAM budget in use",
           [({"device": d["index"]}, d["vram"]["used_bytes"]) for d in status["devices"]])
    metric("host_budget_used_bytes", "gauge", "bytes of the host budgets in use",
           [({"budget": "partitions"}, status["host_budget"]["used_bytes"]),
            ({"budget": "keys"}, status["keys"]["host_budget"]["used_bytes"])])
    staging = status.get("staging") or {}
    if staging.get("enabled"):
        metric("staging_pinned_bytes", "gauge", "page-locked witness staging memory held (in use and idle)",
               [({}, staging["pinned_bytes"])])
    metric("stage_median_ms", "gauge", "median stage time over recent partitions",
           [({"stage": k}, v) for k, v in status["stage_medians_ms"].items()])
    metric("loop_lag_ms", "gauge", "event loop lag: last and maximum",
           [({"which": "last"}, status["loop_lag_ms"]["last"]), ({"which": "max"}, status["loop_lag_ms"]["max"])])
    return "\n".join(lines) + "\n"

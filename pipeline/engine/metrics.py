"""Timings, counters and gauges: the engine's own measurements (DESIGN rule 4).

- per partition: queue waits, synth_ms, prep_msm_ms, gpu_lock_wait_ms, gpu_total_ms (with
  the backend's split: gpu_h_ms, gpu_msm_ms, spmv/ntt where given), b_g2_msm_ms,
  epilogue_ms, total_ms (``PartitionProof.timings_ms``);
- a timeline of stage intervals (who ran what, where, when) for overlap checks and plots;
- counters (jobs, partitions, failures), recent stage medians, GPU-lock busy fraction,
  event-loop lag: a dict (``Engine.status()``);
- the same for Prometheus through ``prometheus_client`` (the reference client, so its naming,
  units and exposition are Prometheus's own): stage and queue times and loop lag as histograms
  in seconds, counters present from zero, gauges read from the status at scrape time, all in
  one ``CollectorRegistry`` that the HTTP service shares (``Metrics.registry``).
"""
from __future__ import annotations

import asyncio
import collections
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

STAGE_TIMINGS = ("synth_ms", "prep_msm_ms", "gpu_lock_wait_ms", "gpu_total_ms", "b_g2_msm_ms", "epilogue_ms",
                 "total_ms")
# timings_ms key -> stage label of zkpipe_engine_partition_stage_seconds
STAGE_LABELS = {"synth_ms": "synthesize", "prep_msm_ms": "prep_msm", "gpu_lock_wait_ms": "gpu_lock_wait",
                "gpu_total_ms": "gpu", "b_g2_msm_ms": "b_g2_msm", "epilogue_ms": "epilogue"}
GPU_STEPS = {"gpu_h_ms": "h", "gpu_msm_ms": "msm"}  # the backend's split of gpu_total_ms
QUEUE_STAGES = ("admission", "synthesize", "prep_msm", "gpu", "epilogue")
# 1 ms .. 10 min: a 2^10 circuit's stage on the GPU up to a 2^27 partition on the CPU backend.
SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0, 600.0)
LOOP_LAG_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
# Every counter the engine keeps (Engine.status()["counters"]), exported from zero.
JOB_EVENTS = ("submitted", "done", "failed", "cancelled")
PARTITION_OUTCOMES = ("done", "failed", "dropped")


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
    def __init__(self, timeline_kept: int, recent_kept: int = 512, registry: CollectorRegistry | None = None) -> None:
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
        # -- Prometheus ------------------------------------------------------------------------
        self.registry = registry if registry is not None else CollectorRegistry()
        self.stage_seconds = Histogram(
            "zkpipe_engine_partition_stage_seconds", "Time a partition spent in each stage (finished partitions)",
            ["stage"], buckets=SECONDS_BUCKETS, registry=self.registry)
        self.queue_seconds = Histogram(
            "zkpipe_engine_partition_queue_wait_seconds", "Time a partition waited before each stage",
            ["stage"], buckets=SECONDS_BUCKETS, registry=self.registry)
        self.gpu_step_seconds = Histogram(
            "zkpipe_engine_gpu_step_seconds", "The backend's split of the GPU stage (h: a,b,c and H; msm: the MSMs)",
            ["step"], buckets=SECONDS_BUCKETS, registry=self.registry)
        self.partition_seconds = Histogram(
            "zkpipe_engine_partition_seconds", "Admission to proof, per finished partition",
            buckets=SECONDS_BUCKETS, registry=self.registry)
        self.loop_lag_seconds = Histogram(
            "zkpipe_engine_event_loop_lag_seconds", "How late the event loop ran a timer (the loop-lag probe)",
            buckets=LOOP_LAG_BUCKETS, registry=self.registry)
        for label in STAGE_LABELS.values():  # every series present from the start, at zero
            self.stage_seconds.labels(stage=label)
        for stage in QUEUE_STAGES:
            self.queue_seconds.labels(stage=stage)
        for step in GPU_STEPS.values():
            self.gpu_step_seconds.labels(step=step)

    def expose(self, status: Callable[[], dict]) -> None:
        """Export the gauges and counters of ``status()`` (read at every scrape) in the registry."""
        self.registry.register(_StatusCollector(status))

    def exposition(self) -> str:
        """The registry as Prometheus text (format 0.0.4)."""
        return generate_latest(self.registry).decode()

    def record(self, interval: Interval) -> None:
        self.timeline.append(interval)

    def partition_finished(self, timings_ms: dict[str, float], ok: bool) -> None:
        self.counters["partitions_done" if ok else "partitions_failed"] += 1
        if not ok:
            return
        for k in STAGE_TIMINGS:
            if k in timings_ms:
                self.recent[k].append(timings_ms[k])
        for key, ms in timings_ms.items():
            if key in STAGE_LABELS:
                self.stage_seconds.labels(stage=STAGE_LABELS[key]).observe(ms / 1e3)
            elif key == "total_ms":
                self.partition_seconds.observe(ms / 1e3)
            elif key == "admission_wait_ms":
                self.queue_seconds.labels(stage="admission").observe(ms / 1e3)
            elif key.endswith("_queue_ms"):
                self.queue_seconds.labels(stage=key[: -len("_queue_ms")]).observe(ms / 1e3)
            elif key in GPU_STEPS:
                self.gpu_step_seconds.labels(step=GPU_STEPS[key]).observe(ms / 1e3)

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
            self.loop_lag_seconds.observe(lag_ms / 1e3)


def lock_held_seconds(device, now: float) -> float:
    """Seconds the device's GPU lock has been held since the engine started (the hold in progress too)."""
    busy = device.lock_busy_s
    if device.lock_held_since is not None:
        busy += now - device.lock_held_since
    return busy


def lock_busy_fraction(device, now: float, since: float) -> float:
    wall = now - since
    return lock_held_seconds(device, now) / wall if wall > 0 else 0.0


class _StatusCollector:
    """Prometheus families from ``Engine.status()``, computed when Prometheus scrapes."""

    def __init__(self, status: Callable[[], dict]) -> None:
        self._status = status

    def describe(self) -> list:
        return []  # nothing to check at registration; the names are fixed below

    def collect(self) -> Iterator[Metric]:
        status = self._status()
        counters = status.get("counters", {})
        jobs = CounterMetricFamily("zkpipe_engine_jobs", "Engine jobs by event since the engine started",
                                   labels=["event"])
        for event in JOB_EVENTS:
            jobs.add_metric([event], counters.get(f"jobs_{event}", 0))
        yield jobs
        partitions = CounterMetricFamily("zkpipe_engine_partitions", "Partitions by outcome since the engine started",
                                         labels=["outcome"])
        for outcome in PARTITION_OUTCOMES:
            partitions.add_metric([outcome], counters.get(f"partitions_{outcome}", 0))
        yield partitions
        yield CounterMetricFamily("zkpipe_engine_partitions_left_with_g2_msm_running",
                                  "Partitions that ended while their CPU G2 MSM still ran",
                                  value=counters.get("partitions_left_with_g2_msm_running", 0))
        yield CounterMetricFamily("zkpipe_engine_g2_msm_pool_rebuilds", "G2 MSM worker pools rebuilt after dying",
                                  value=counters.get("g2_msm_pool_rebuilds", 0))
        yield _gauge("zkpipe_engine_queue_depth", "Partitions waiting in each stage queue", "queue",
                     status.get("queues", {}))
        yield _gauge("zkpipe_engine_partitions_in_stage", "Partitions being worked on in each stage", "stage",
                     status.get("in_stage", {}))
        yield GaugeMetricFamily("zkpipe_engine_partitions_in_flight", "Partitions admitted and not finished",
                                value=status.get("partitions_in_flight", 0))
        devices = status.get("devices", [])
        held = CounterMetricFamily("zkpipe_engine_gpu_lock_held_seconds",
                                   "Time each device's GPU lock was held (rate() is the busy fraction)",
                                   labels=["device"])
        used = GaugeMetricFamily("zkpipe_engine_vram_budget_used_bytes", "Bytes of each device's VRAM budget in use",
                                 labels=["device"])
        capacity = GaugeMetricFamily("zkpipe_engine_vram_budget_bytes", "Each device's VRAM budget (unbounded: absent)",
                                     labels=["device"])
        for d in devices:
            held.add_metric([str(d["index"])], d.get("gpu_lock_held_s", 0.0))
            used.add_metric([str(d["index"])], d["vram"]["used_bytes"])
            if d["vram"].get("capacity_bytes") is not None:
                capacity.add_metric([str(d["index"])], d["vram"]["capacity_bytes"])
        yield from (held, used, capacity)
        host = GaugeMetricFamily("zkpipe_engine_host_budget_used_bytes", "Bytes of the host budgets in use",
                                 labels=["budget"])
        host.add_metric(["partitions"], status.get("host_budget", {}).get("used_bytes", 0))
        host.add_metric(["keys"], status.get("keys", {}).get("host_budget", {}).get("used_bytes", 0))
        yield host
        placed = GaugeMetricFamily("zkpipe_engine_key_device_copies",
                                   "Keys loaded on each device, by placement (resident, partly resident, streamed)",
                                   labels=["device", "placement"])
        counts: dict[tuple[str, str], int] = {}
        for key in status.get("keys", {}).get("keys", {}).values():
            for device, mode in key.get("placement", {}).items():
                counts[device, mode] = counts.get((device, mode), 0) + 1
        for d in devices:
            for mode in ("resident", "partly resident", "streamed"):
                placed.add_metric([str(d["index"]), mode], counts.get((str(d["index"]), mode), 0))
        yield placed
        yield GaugeMetricFamily("zkpipe_engine_staging_pinned_bytes",
                                "Page-locked witness staging memory held (in use and idle)",
                                value=(status.get("staging") or {}).get("pinned_bytes", 0))


def _gauge(name: str, help_text: str, label: str, values: dict) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help_text, labels=[label])
    for key, value in values.items():
        family.add_metric([str(key)], value)
    return family

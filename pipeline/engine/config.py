"""EngineConfig: every knob of the engine, in one frozen dataclass with checked values."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from ..backends import BACKEND_NAMES, CudaOptions

PRIORITIES = ("critical", "high", "normal", "low")  # highest first
G2_PLACEMENTS = ("gpu", "cpu")


@dataclass(frozen=True)
class EngineConfig:
    # -- where proofs run -------------------------------------------------------------------
    backend: str = "auto"  # "cpu" | "cuda" | "auto", given to pipeline.backends.create_backend
    devices: tuple[int, ...] | None = None  # device ordinals; None: every device the backend reports
    gpu_workers_per_device: int = 2  # workers taking turns at one device's GPU lock
    cuda: CudaOptions = field(default_factory=CudaOptions)  # given to the CUDA backend ([engine.cuda])

    # -- CPU stage workers (each with its own named thread pool) ---------------------------
    synthesize_workers: int = 2
    prep_msm_workers: int = 1
    epilogue_workers: int = 2
    g2_msm_workers: int = 2  # workers for the G2 MSM of B when g2_msm_placement == "cpu"
    g2_msm_executor: str = "process"  # "process" (off the loop's GIL; see cpu_workers.py) | "thread"

    # -- queues and budgets (backpressure) -------------------------------------------------
    queue_size: int = 2  # bound of every inter-stage queue (per device for the gpu stage)
    max_partitions_in_flight: int = 8  # partitions admitted and not yet finished, all stages
    host_memory_budget_bytes: int | None = None  # partitions in flight (witness, buffers); None: unbounded
    staging_buffers_kept: int = 4  # idle pinned staging buffers kept for reuse (pinning is slow)
    key_host_budget_bytes: int | None = None  # resident keys on the host (LRU); None: unbounded
    vram_budget_bytes: int | None = None  # per device: resident keys + one pass's scratch; None: unbounded
    # Partitions of one streamed key (points larger than the VRAM budget) that share a pass of its
    # points: the gpu stage takes up to this many waiting partitions of the key at once.
    gpu_batch_max: int = 10

    # -- what a proof includes -------------------------------------------------------------
    g2_msm_placement: str = "gpu"  # "gpu": in the backend's msms; "cpu": started in prep_msm, joined in the epilogue
    verify_proofs: bool = False  # verify every proof in the epilogue (our verifier; slow in pure Python)
    check_r1cs: bool = True  # check witnesses against the key's registered .r1cs

    # -- prepared keys (pipeline.keycache, docs/key_cache.md) --------------------------------
    key_cache: bool = True  # open keys from their cache folder, prepared and cached at the first load
    key_cache_dir: str | None = None  # None: a .zkpipe-keycache folder beside each key (if writable)

    # -- bookkeeping -----------------------------------------------------------------------
    finished_jobs_kept: int = 1000  # finished jobs remembered for idempotent resubmission and lookup
    timeline_events_kept: int = 10000  # stage intervals kept for status and plots
    loop_lag_interval_s: float = 0.05  # how often the loop-lag probe wakes
    # Python's GIL switch interval while the engine runs (restored at shutdown); None or 0: leave it
    # (Python's 5 ms). A device's thread makes thousands of driver calls a pass, each giving the GIL
    # back and taking it again beside prep_msm's numpy threads: at 2^26 under a 16 GiB budget, 0.5 ms
    # against 5 took the streamed partition from 1.60 to 1.41 s (same call, session 21,
    # bench/results/streamed_keys_bls12381_2e26_s21_point_sums.md). With the pure-Python CPU backend it
    # keeps loop lag near 5 ms (the 5 ms default gives 12 ms median, 60+ ms p95: bench/results/engine_*).
    gil_switch_interval_s: float | None = 0.0005

    def __post_init__(self) -> None:
        positive = ("gpu_workers_per_device", "synthesize_workers", "prep_msm_workers", "epilogue_workers",
                    "g2_msm_workers", "gpu_batch_max", "queue_size", "max_partitions_in_flight", "finished_jobs_kept",
                    "timeline_events_kept")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"EngineConfig.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.staging_buffers_kept, int) or self.staging_buffers_kept < 0:
            raise ValueError(f"EngineConfig.staging_buffers_kept must be a non-negative integer, "
                             f"got {self.staging_buffers_kept!r}")
        for name in ("host_memory_budget_bytes", "key_host_budget_bytes", "vram_budget_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"EngineConfig.{name} must be a positive number of bytes or None, got {value!r}")
        if self.backend not in BACKEND_NAMES:
            raise ValueError(f"EngineConfig.backend must be one of {BACKEND_NAMES}, got {self.backend!r}")
        if self.g2_msm_placement not in G2_PLACEMENTS:
            raise ValueError(f"EngineConfig.g2_msm_placement must be one of {G2_PLACEMENTS}, got {self.g2_msm_placement!r}")
        if self.g2_msm_executor not in ("process", "thread"):
            raise ValueError(f"EngineConfig.g2_msm_executor must be 'process' or 'thread', got {self.g2_msm_executor!r}")
        if self.devices is not None:
            devices = tuple(self.devices)
            if not devices or len(set(devices)) != len(devices) or any(not isinstance(d, int) or d < 0 for d in devices):
                raise ValueError(f"EngineConfig.devices must be distinct non-negative ordinals, got {self.devices!r}")
            object.__setattr__(self, "devices", devices)
        gil = self.gil_switch_interval_s
        if gil is not None and (isinstance(gil, bool) or not isinstance(gil, (int, float)) or gil < 0):
            raise ValueError(f"EngineConfig.gil_switch_interval_s must be a non-negative number of seconds "
                             f"(0: leave Python's) or None, got {gil!r}")
        if self.loop_lag_interval_s <= 0:
            raise ValueError("EngineConfig.loop_lag_interval_s must be positive")
        if not isinstance(self.cuda, CudaOptions):
            raise ValueError(f"EngineConfig.cuda must be CudaOptions, got {type(self.cuda).__name__}")
        if not isinstance(self.key_cache, bool):
            raise ValueError(f"EngineConfig.key_cache must be true or false, got {self.key_cache!r}")
        if self.key_cache_dir is not None and (not isinstance(self.key_cache_dir, str) or not self.key_cache_dir):
            raise ValueError(f"EngineConfig.key_cache_dir must be a folder path or None, got {self.key_cache_dir!r}")

    @classmethod
    def from_dict(cls, values: dict) -> "EngineConfig":
        """From a config file's mapping (the ``cuda`` table included); unknown names are an error,
        not silently ignored."""
        _refuse_unknown(cls, values, "engine")
        values = dict(values)
        if values.get("devices") is not None:
            values["devices"] = tuple(values["devices"])
        if isinstance(values.get("cuda"), dict):
            _refuse_unknown(CudaOptions, values["cuda"], "[engine.cuda]")
            values["cuda"] = CudaOptions(**values["cuda"])
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)


def _refuse_unknown(cls, values: dict, what: str) -> None:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {what} settings: {', '.join(unknown)} (known: {', '.join(sorted(known))})")

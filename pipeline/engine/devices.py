"""A device as the engine sees it: a backend instance, its GPU lock, VRAM budget and thread.

The engine reaches the accelerator only through the ``Backend`` protocol
(``pipeline.groth16.backend``), plus optional methods a backend may offer; absent
ones mean "nothing to account" (the CPU backend has none):

- ``scratch_bytes(key) -> int``: device memory one partition needs beyond the resident key
  (taken after the GPU lock, given back before it is released);
- ``key_device_bytes(zkey) -> int``: device memory ``load_key(zkey)`` will hold;
- ``memory_budget_bytes() -> int``: a default VRAM budget when the config sets none;
- ``visible_devices() -> list[int]``: ordinals to use when the config lists none.
- ``pinned_host_buffer(nbytes)``: page-locked host memory for prep_msm's staging pool (see staging.py).
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .budgets import ByteBudget

BackendFactory = Callable[[int], Any]  # device ordinal -> Backend


def default_backend_factory(name: str, cuda_options=None) -> BackendFactory:
    """Backends by name; a CUDA backend gets ``cuda_options`` (``EngineConfig.cuda``)."""
    from ..backends import create_backend

    options = {} if cuda_options is None else {"options": cuda_options}

    def make(ordinal: int):
        return create_backend(name, **options) if ordinal == 0 else create_backend(name, device=ordinal, **options)

    return make


class Device:
    def __init__(self, index: int, ordinal: int, backend: Any, gpu_workers: int, vram_budget_bytes: int | None) -> None:
        self.index = index  # position in the engine's device list
        self.ordinal = ordinal  # the backend's device number
        self.backend = backend
        self.gpu_lock = asyncio.Semaphore(1)  # the GPU lock: one partition's kernels at a time
        if vram_budget_bytes is None:
            probe = getattr(backend, "memory_budget_bytes", None)
            vram_budget_bytes = probe() if probe is not None else None
        self.vram = ByteBudget(f"device {index} VRAM", vram_budget_bytes)
        # Backend calls block their thread until the device is done; one thread per GPU worker.
        self.executor = ThreadPoolExecutor(gpu_workers, thread_name_prefix=f"zkpipe-gpu{index}")
        self.queue: asyncio.PriorityQueue | None = None  # the device's gpu-stage queue, set by the engine
        self.lock_busy_s = 0.0  # time the lock was held (for the busy fraction)
        self.lock_held_since: float | None = None
        self.partitions_in_gpu = 0

    def scratch_bytes(self, key_handle: Any) -> int:
        probe = getattr(self.backend, "scratch_bytes", None)
        return int(probe(key_handle)) if probe is not None else 0

    def key_device_bytes(self, zkey: Any) -> int:
        probe = getattr(self.backend, "key_device_bytes", None)
        return int(probe(zkey)) if probe is not None else 0


def make_devices(config, factory: BackendFactory | None) -> list[Device]:
    """Backends per configured device (or per visible device), each with its lock and budget."""
    factory = factory or default_backend_factory(config.backend, config.cuda)
    backends: dict[int, Any] = {}
    if config.devices is not None:
        ordinals = list(config.devices)
    else:
        backends[0] = factory(0)
        visible = getattr(backends[0], "visible_devices", None)
        ordinals = list(visible()) if visible is not None else [0]
        ordinals = ordinals or [0]
    for ordinal in ordinals:
        if ordinal not in backends:
            backends[ordinal] = factory(ordinal)
    return [Device(i, o, backends[o], config.gpu_workers_per_device, config.vram_budget_bytes)
            for i, o in enumerate(ordinals)]

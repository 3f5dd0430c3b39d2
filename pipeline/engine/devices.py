"""A device as the engine sees it: a backend instance, its GPU lock, VRAM budget and thread.

The engine reaches the accelerator only through the ``Backend`` protocol
(``pipeline.backends.protocol``), budgets included: ``scratch_bytes(key)`` (device memory one
partition takes after the GPU lock and gives back before it is released), ``key_device_bytes``,
``memory_budget_bytes`` (the default VRAM budget), ``visible_devices`` and
``pinned_host_buffer`` (prep_msm's staging pool, staging.py) are declared members with
defaults, so a backend without device memory accounts nothing.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..backends.protocol import Backend
from .budgets import ByteBudget

BackendFactory = Callable[[int], Backend]  # device ordinal -> Backend


def default_backend_factory(name: str, cuda_options=None) -> BackendFactory:
    """Backends by name; a CUDA backend gets ``cuda_options`` (``EngineConfig.cuda``)."""
    from ..backends import create_backend

    options = {} if cuda_options is None else {"options": cuda_options}

    def make(ordinal: int):
        return create_backend(name, **options) if ordinal == 0 else create_backend(name, device=ordinal, **options)

    return make


class Device:
    def __init__(self, index: int, ordinal: int, backend: Backend, gpu_workers: int,
                 vram_budget_bytes: int | None) -> None:
        self.index = index  # position in the engine's device list
        self.ordinal = ordinal  # the backend's device number
        self.backend = backend
        self.gpu_lock = asyncio.Semaphore(1)  # the GPU lock: one partition's kernels at a time
        if vram_budget_bytes is None:
            vram_budget_bytes = backend.memory_budget_bytes()
        self.vram = ByteBudget(f"device {index} VRAM", vram_budget_bytes)
        # Blocking backend calls (key uploads, enqueueing a partition's work) run here; the device
        # work itself is awaited on the loop through events.
        self.executor = ThreadPoolExecutor(gpu_workers, thread_name_prefix=f"zkpipe-gpu{index}")
        self.queue: asyncio.PriorityQueue | None = None  # the device's gpu-stage queue, set by the engine
        self.lock_busy_s = 0.0  # time the lock was held (for the busy fraction)
        self.lock_held_since: float | None = None
        self.partitions_in_gpu = 0
        self.prefetching = False  # a waiting partition's witness is on its way (one at a time: pipeline.py)
        self.scratch_held = 0  # the lock holder's scratch, counted in vram.used until it gives the lock back

    def scratch_bytes(self, key_handle: Any, batch: int = 1) -> int:
        return int(self.backend.scratch_bytes(key_handle, batch))

    def place_key(self, zkey: Any, room_bytes: int | None = None, witness: Any = None):
        """Where the backend would keep ``zkey`` under this device's whole VRAM budget; extras such as
        fixed-base tables only within ``room_bytes``, chosen for witnesses shaped like ``witness``
        (``Backend.place_key``)."""
        return self.backend.place_key(zkey, self.vram.capacity, room_bytes, witness=witness)

    def key_device_bytes(self, zkey: Any) -> int:
        return int(self.backend.key_device_bytes(zkey))


def make_devices(config, factory: BackendFactory | None) -> list[Device]:
    """Backends per configured device (or per visible device), each with its lock and budget."""
    factory = factory or default_backend_factory(config.backend, config.cuda)
    backends: dict[int, Backend] = {}
    if config.devices is not None:
        ordinals = list(config.devices)
    else:
        backends[0] = factory(0)
        ordinals = list(backends[0].visible_devices()) or [0]
    for ordinal in ordinals:
        if ordinal not in backends:
            backends[ordinal] = factory(ordinal)
    return [Device(i, o, backends[o], config.gpu_workers_per_device, config.vram_budget_bytes)
            for i, o in enumerate(ordinals)]

"""The server's only coupling to ``pipeline.engine``: start/stop, keys, submit, status (metrics: one registry).

Everything the HTTP layer needs from the engine passes through ``EngineAdapter``, so an engine
API change is a change here and nowhere else. Engine objects (jobs, proofs) are turned into
plain JSON-ready values on the way out.
"""
from __future__ import annotations

from typing import Any

from ..engine.config import PRIORITIES, EngineConfig
from ..engine.jobs import Job, JobCancelled, JobEvent, JobFailed, PartitionProof
from ..engine.keystore import KeyInUse, KeyLoadError, UnknownKey
from .keys import KeyInfo

__all__ = ["EngineAdapter", "Job", "JobCancelled", "JobEvent", "JobFailed", "KeyInUse", "KeyLoadError", "PRIORITIES",
           "UnknownKey", "proofs_to_json"]


def proofs_to_json(proofs: list[PartitionProof]) -> list[dict[str, Any]]:
    """One ``{"proof": proof.json, "public_signals": public.json}`` per partition, in order."""
    return [{"proof": p.proof_json, "public_signals": p.public_json} for p in proofs]


def partition_timings(proofs: list[PartitionProof]) -> list[dict[str, float]]:
    return [dict(p.timings_ms) for p in proofs]


def engine_class():
    from ..engine import Engine

    return Engine


class EngineAdapter:
    """Owns one ``Engine``: ``async with EngineAdapter(cfg) as engine:``."""

    def __init__(self, config: EngineConfig, registry=None) -> None:
        self.config = config
        self.registry = registry  # the service's prometheus_client registry: the engine adds its metrics there
        self._engine = None
        self._registered: dict[str, tuple] = {}

    async def __aenter__(self) -> "EngineAdapter":
        self._engine = engine_class()(self.config, registry=self.registry)
        await self._engine.__aenter__()
        return self

    async def __aexit__(self, *exc_info) -> None:
        """Stop without draining: unfinished jobs stay in the job store and run after the next start."""
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.shutdown(drain=False)

    # -- keys ----------------------------------------------------------------------------------
    def register(self, key: KeyInfo) -> None:
        """Tell the engine about a key (again, if its files changed); it loads on first use or preload()."""
        paths = (key.zkey_path, key.r1cs_path, key.wasm_path, key.mtime_ns)
        if self._registered.get(key.key_id) == paths:
            return
        try:
            self._engine.register_key(key.key_id, zkey_path=key.zkey_path, r1cs_path=key.r1cs_path,
                                      wasm_path=key.wasm_path)
        except KeyInUse:  # its files changed while loaded: keep serving the loaded one until evicted
            return
        self._registered[key.key_id] = paths

    async def preload(self, key_id: str) -> None:
        await self._engine.preload(key_id)

    async def evict(self, key_id: str) -> bool:
        """Drop the key from host and devices; False if it was not resident. Raises ``KeyInUse``."""
        was_resident = key_id in self.resident_keys()
        await self._engine.evict(key_id)
        return was_resident

    def resident_keys(self) -> dict[str, list[int]]:
        """Key id -> device indices holding it, for every key resident on the host or a device."""
        keys = self.status().get("keys", {}).get("keys", {})
        return {key_id: list(info.get("devices", [])) for key_id, info in keys.items()
                if info.get("host_resident") or info.get("devices")}

    # -- jobs ----------------------------------------------------------------------------------
    async def submit(self, key_id: str, partitions: list, priority: str, request_id: str) -> Job:
        return await self._engine.submit(key_id, partitions, priority=priority, request_id=request_id)

    # -- observability ---------------------------------------------------------------------------
    def status(self) -> dict:
        return self._engine.status() if self._engine is not None else {}

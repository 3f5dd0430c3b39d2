"""Cluster mode's part of the app's cleanup context: store, engine, worker, job service, in order.

Teardown (SIGTERM, SIGINT) drains: the worker stops claiming, finishes what it holds within
``drain_timeout_s`` and releases the rest to the queue at once, then marks itself stopped.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from pathlib import Path

from aiohttp import web

from ...config import Config, ConfigError, ServerConfig
from ...engine.config import EngineConfig
from ..engine_adapter import PRIORITIES, EngineAdapter
from ..keys import KeyFolder
from ..state import CLUSTER, ENGINE, KEYS, METRICS, SERVICE, STARTED_AT, UPLOADS
from ..spool import Spool
from ..uploads import UploadParser
from .notify import Notifications
from .pg_store import PostgresJobStore
from .service import ClusterJobService
from .shared_spool import SharedSpool
from .worker import ClusterWorker, WorkerSettings
from ..background import crash_reporter

log = logging.getLogger("zkpipe.cluster")
WORKER_ID_FILE = "worker_id"


def worker_settings(server: ServerConfig, engine: EngineConfig, source: str) -> WorkerSettings:
    for name in ("lease_s", "heartbeat_interval_s", "claim_poll_interval_s", "affinity_max_age_s", "drain_timeout_s"):
        if getattr(server, name) <= 0:
            raise ConfigError(f"{source}: {name} must be positive, got {getattr(server, name)}")
    if server.heartbeat_interval_s > server.lease_s / 2:
        raise ConfigError(f"{source}: heartbeat_interval_s ({server.heartbeat_interval_s}) must be at most "
                          f"lease_s / 2 ({server.lease_s / 2}), or a slow heartbeat loses live leases")
    for name in ("max_partition_attempts", "max_db_partition_bytes"):
        if getattr(server, name) < 1:
            raise ConfigError(f"{source}: {name} must be at least 1, got {getattr(server, name)}")
    if server.worker_max_partitions < 0:
        raise ConfigError(f"{source}: worker_max_partitions must be >= 0 (0: the engine's max_partitions_in_flight)")
    return WorkerSettings(server.lease_s, server.heartbeat_interval_s, server.claim_poll_interval_s,
                          server.affinity_max_age_s, server.max_partition_attempts,
                          server.worker_max_partitions or engine.max_partitions_in_flight)


def stable_worker_id(state_dir: Path) -> str:
    """This state folder's worker id: kept across restarts, so a restarted worker frees its old leases at once."""
    path = state_dir / WORKER_ID_FILE
    with contextlib.suppress(FileNotFoundError):
        return path.read_text().strip()
    worker_id = f"{os.uname().nodename}-{uuid.uuid4().hex[:8]}"
    path.write_text(worker_id + "\n")
    return worker_id


@contextlib.asynccontextmanager
async def cluster_worker(app: web.Application, config: Config, keys: KeyFolder, state_dir: Path,
                         engine_config: EngineConfig):
    server = config.server
    settings = worker_settings(server, engine_config, config.source)
    worker_id = await asyncio.to_thread(stable_worker_id, state_dir)
    store = PostgresJobStore(server.store_url, fsync=server.fsync)
    await store.open()
    try:
        spool = Spool(state_dir / "spool", fsync=False)  # uploads in transit only: the database keeps accepted jobs
        notifications = Notifications(server.store_url)
        metrics = app[METRICS]
        async with EngineAdapter(engine_config, metrics.registry) as engine:
            for key in keys.all():
                engine.register(key)
            shared = SharedSpool(Path(server.shared_spool_dir), fsync=server.fsync) if server.shared_spool_dir else None
            worker = ClusterWorker(worker_id, store, notifications, engine, keys, state_dir / "claims", settings, shared)
            await worker.start()
            service = ClusterJobService(store, spool, worker, notifications, server.result_ttl_s,
                                        server.janitor_interval_s, server.max_db_partition_bytes)
            await service.recover()
            app[KEYS], app[ENGINE], app[SERVICE], app[CLUSTER] = keys, engine, service, worker
            app[UPLOADS] = UploadParser(keys, spool, PRIORITIES, server)
            app[STARTED_AT] = time.time()
            background = asyncio.create_task(service.run(), name="zkpipe-cluster")
            background.add_done_callback(crash_reporter("the cluster worker"))
            metrics.watch_service(service)
            metrics.watch_cluster(worker)
            log.info("worker %s: %d key(s), store %s", worker_id, len(keys.all()), store.path)
            try:
                yield
            finally:
                metrics.unwatch_service()
                await worker.drain(server.drain_timeout_s)
                background.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):  # a crash was logged already
                    await background
    finally:
        await store.close()


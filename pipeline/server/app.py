"""``create_app(config)``: the one factory of the HTTP service.

One cleanup context owns every resource, in order: the state folder's lock, the keys folder,
the job store and spool, the engine, then the job service's background task. Teardown runs in
reverse: the background task stops (jobs in flight stay stored and run again next start), the
engine stops, the store closes. ``on_shutdown`` first wakes every long-poll.
"""
from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from ..config import Config
from ..errors import Unavailable
from .engine_adapter import PRIORITIES, EngineAdapter
from .errors import StartupError, auth_middleware, error_middleware, json_error_bodies
from .job_log import JobObserver
from .jobs import JobService
from .keys import KeyFolder, build_example_keys
from .metrics import ServerMetrics
from .routes import routes
from .state import ENGINE, KEYS, METRICS, SERVER_CONFIG, SERVICE, STARTED_AT, UPLOADS
from .storage_health import StorageHealth
from .spool import Spool
from .store import JobStore
from .store_api import is_shared_store
from .uploads import UploadParser
from .background import crash_reporter

log = logging.getLogger("zkpipe.server")
LOCK_FILE = "zkpipe.lock"


class StateDirBusy(StartupError, Unavailable):
    """Another server holds this state folder."""


@contextlib.contextmanager
def state_dir_lock(state_dir: Path):
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StateDirBusy(f"{state_dir}: another zkpipe server uses this state folder") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing drops the lock


def create_app(config: Config) -> web.Application:
    server = config.server
    metrics = ServerMetrics()  # the one registry: the engine adds its families to it
    middlewares = [metrics.middleware(), error_middleware]
    if server.auth_token:
        middlewares.append(auth_middleware(server.auth_token))
    app = web.Application(client_max_size=server.max_body_bytes, middlewares=middlewares)
    app[SERVER_CONFIG] = server
    app[METRICS] = metrics
    app.add_routes(routes)
    app.cleanup_ctx.append(lambda app: lifecycle(app, config))
    app.on_shutdown.append(_wake_long_polls)
    app.on_response_prepare.append(json_error_bodies)
    return app


async def lifecycle(app: web.Application, config: Config) -> AsyncIterator[None]:
    server = config.server
    state_dir = Path(server.state_dir)
    engine_config = config.engine_config()  # a bad [engine] table fails here, before anything starts
    with state_dir_lock(state_dir):
        keys_dir = Path(server.keys_dir) if server.keys_dir else build_example_keys(state_dir / "keys")
        if not keys_dir.is_dir():
            raise FileNotFoundError(f"keys folder {keys_dir} does not exist")
        keys = KeyFolder(keys_dir)
        await asyncio.to_thread(keys.scan)
        for key_id, reason in keys.errors.items():
            log.warning("key %s not usable: %s", key_id, reason)
        if is_shared_store(server.store_url):  # a worker of a cluster (docs/cluster.md)
            from .cluster.lifecycle import cluster_worker

            async with cluster_worker(app, config, keys, state_dir, engine_config):
                yield
            return
        health = StorageHealth()
        store = JobStore(state_dir / "jobs.sqlite3", fsync=server.fsync, health=health)
        await store.open()
        try:
            spool = Spool(state_dir / "spool", fsync=server.fsync, health=health)
            metrics = app[METRICS]
            async with EngineAdapter(engine_config, metrics.registry) as engine:
                for key in keys.all():
                    engine.register(key)
                service = JobService(store, spool, engine, keys, server.result_ttl_s, server.janitor_interval_s,
                                     health, observer=JobObserver(metrics))
                await service.recover()
                app[KEYS], app[ENGINE], app[SERVICE] = keys, engine, service
                app[UPLOADS] = UploadParser(keys, spool, PRIORITIES, server)
                app[STARTED_AT] = time.time()
                background = asyncio.create_task(service.run(), name="zkpipe-jobs")
                background.add_done_callback(crash_reporter("the job service"))
                metrics.watch_service(service)
                log.info("serving %d key(s) from %s; state in %s", len(keys.all()), keys_dir, state_dir)
                try:
                    yield
                finally:
                    metrics.unwatch_service()
                    background.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):  # a crash was logged already
                        await background
        finally:
            await store.close()



async def _wake_long_polls(app: web.Application) -> None:
    if SERVICE in app:
        app[SERVICE].wake_waiters()

"""The application's state, under typed ``web.AppKey``s (set up by ``app.lifecycle``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ..config import ServerConfig
from .engine_adapter import EngineAdapter
from .jobs import JobService
from .keys import KeyFolder
from .metrics import ServerMetrics
from .uploads import UploadParser

if TYPE_CHECKING:  # cluster mode (and asyncpg) load only when the store is PostgreSQL
    from .cluster.worker import ClusterWorker

SERVER_CONFIG = web.AppKey("server_config", ServerConfig)
ENGINE = web.AppKey("engine", EngineAdapter)
KEYS = web.AppKey("keys", KeyFolder)
SERVICE = web.AppKey("service", JobService)
UPLOADS = web.AppKey("uploads", UploadParser)
STARTED_AT = web.AppKey("started_at", float)
METRICS = web.AppKey("metrics", ServerMetrics)
CLUSTER = web.AppKey("cluster", "ClusterWorker")  # set only when this server is a worker of a cluster

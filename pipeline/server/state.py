"""The application's state, under typed ``web.AppKey``s (set up by ``app.lifecycle``)."""
from __future__ import annotations

from aiohttp import web

from ..config import ServerConfig
from .engine_adapter import EngineAdapter
from .jobs import JobService
from .keys import KeyFolder
from .metrics import ServerMetrics
from .uploads import UploadParser

SERVER_CONFIG = web.AppKey("server_config", ServerConfig)
ENGINE = web.AppKey("engine", EngineAdapter)
KEYS = web.AppKey("keys", KeyFolder)
SERVICE = web.AppKey("service", JobService)
UPLOADS = web.AppKey("uploads", UploadParser)
STARTED_AT = web.AppKey("started_at", float)
METRICS = web.AppKey("metrics", ServerMetrics)

"""The service's logs: text or JSON lines on stderr, and an access log of one line per request.

``configure_logging(level, "json")`` makes every record one JSON object per line (time, level,
logger, message, plus the record's structured ``fields``: job events and access lines carry
theirs); ``"text"`` keeps the classic ``time LEVEL logger: message`` line.
"""
from __future__ import annotations

import datetime
import logging
import sys

import orjson
from aiohttp.abc import AbstractAccessLogger

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
ACCESS_LOGGER = "zkpipe.access"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body = {"time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
                .isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        body.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


def configure_logging(level: str, fmt: str = "text") -> None:
    """The root handler on stderr, in ``fmt`` (text | json); replaces handlers set before."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log_format must be one of {LOG_FORMATS}, got {fmt!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


class AccessLogger(AbstractAccessLogger):
    """One line per request: client, method, path, status, size, duration (structured in JSON)."""

    def log(self, request, response, time: float) -> None:
        fields = {"event": "http_request", "remote": request.remote, "method": request.method,
                  "path": request.path_qs, "status": response.status, "bytes": response.body_length,
                  "duration_s": round(time, 6)}
        self.logger.info('%s "%s %s" %d %d %.1fms', request.remote, request.method, request.path_qs,
                         response.status, response.body_length, time * 1e3, extra={"fields": fields})

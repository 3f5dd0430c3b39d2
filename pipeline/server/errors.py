"""Errors as JSON, and the two middlewares every request passes: auth, then error mapping.

Every error body is ``{"error": {"code": <stable snake_case>, "message": <what and why>}}``.
"""
from __future__ import annotations

import hmac
import logging
from typing import Any

import orjson
from aiohttp import web

from ..errors import ZkpipeError

log = logging.getLogger("zkpipe.server")

OPEN_PATHS = frozenset({"/healthz"})

# aiohttp's own HTTP errors (no route, wrong method, body too large ...) get these codes.
HTTP_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
              409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type",
              422: "unprocessable", 503: "unavailable"}


class ApiError(ZkpipeError):
    """An HTTP answer other than success: status, stable code and message (the JSON error body)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json",
                        headers=headers)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return json_response({"error": {"code": code, "message": message}}, status, headers)


def auth_middleware(token: str):
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def check_token(request: web.Request, handler):
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                raise ApiError(401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer <token>)",
                               {"WWW-Authenticate": 'Bearer realm="zkpipe"'})
        return await handler(request)

    return check_token


@web.middleware
async def error_middleware(request: web.Request, handler):
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.message, exc.headers)
    except web.HTTPRequestEntityTooLarge as exc:
        return error_response(413, "payload_too_large", exc.text or "request body too large")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = HTTP_CODES.get(exc.status, "http_error")
        message = exc.reason if exc.status in (404, 405) else (exc.text or exc.reason)
        if exc.status == 404:
            message = f"no route for {request.method} {request.path}"
        elif exc.status == 405:
            message = f"method {request.method} not allowed on {request.path}"
        return error_response(exc.status, code, message)
    except Exception:  # the service stays up; the log has the traceback
        log.exception("unhandled error in %s %s", request.method, request.path)
        return error_response(500, "internal_error", "internal error (see the server log)")

"""Errors as JSON, and the two middlewares every request passes: auth, then error mapping.

Every error body is ``{"error": {"code": <stable snake_case>, "message": <what and why>}}``.
"""
from __future__ import annotations

import hmac
import logging
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from ..errors import BadInput, Unavailable, ZkpipeError
from .storage_health import StorageUnavailable

log = logging.getLogger("zkpipe.server")

OPEN_PATHS = frozenset({"/healthz"})

# aiohttp's own HTTP errors (no route, wrong method, body too large ...) get these codes.
HTTP_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
              408: "request_timeout", 409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type",
              417: "expectation_failed", 431: "headers_too_large",
              422: "unprocessable", 503: "unavailable", 507: "insufficient_storage"}


class StartupError(ZkpipeError):
    """The service cannot start: one line for the operator. Each kind also says whose fault it is
    (``BadInput``: a store that cannot be used; ``Unavailable``: a busy port or state folder)."""


class ApiError(ZkpipeError):
    """An HTTP answer other than success: status, stable code and message (the JSON error body).

    ``close``: the connection cannot be reused (its body was not read to the end).
    """

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None,
                 close: bool = False) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}
        self.close = close


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json",
                        headers=headers)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return json_response({"error": {"code": code, "message": message}}, status, headers)


STORAGE_RETRY_AFTER_S = 5


def storage_error_response(exc: StorageUnavailable) -> web.Response:
    """507 while the disk is full, 503 for another storage failure; the client may retry later."""
    status, code = (507, "insufficient_storage") if exc.disk_full else (503, "storage_unavailable")
    return error_response(status, code, f"the server cannot store jobs now ({exc.message}); retry later",
                          {"Retry-After": str(STORAGE_RETRY_AFTER_S)})


def auth_middleware(token: str):
    """Every path but the open ones needs ``Authorization: Bearer <token>`` (scheme in any case, RFC 7235)."""
    expected = token.encode()

    @web.middleware
    async def check_token(request: web.Request, handler):
        if request.path not in OPEN_PATHS and not _token_matches(request.headers.get("Authorization", ""), expected):
            raise ApiError(401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer <token>)",
                           {"WWW-Authenticate": 'Bearer realm="zkpipe"'})
        return await handler(request)

    return check_token


def _token_matches(header: str, expected: bytes) -> bool:
    scheme, _, credentials = header.strip().partition(" ")
    try:  # a header of any bytes: aiohttp hands non-UTF-8 ones over with surrogate escapes
        given = credentials.strip().encode("utf-8", "surrogateescape")
    except UnicodeError:
        return False
    return hmac.compare_digest(given, expected) and scheme.lower() == "bearer"


@web.middleware
async def error_middleware(request: web.Request, handler):
    try:
        return await handler(request)
    except ApiError as exc:
        response = error_response(exc.status, exc.code, exc.message, exc.headers)
        if exc.close:
            response.force_close()
        return response
    except StorageUnavailable as exc:
        return storage_error_response(exc)
    except (HttpProcessingError, RequestPayloadError) as exc:  # aiohttp's parser, on a body read by a handler
        response = error_response(400, "malformed_body", f"cannot read the request body: {one_line(exc)}")
        response.force_close()
        return response
    except BadInput as exc:  # the caller's fault, by the error tree, where no route said more
        return error_response(400, "bad_input", one_line(exc))
    except Unavailable as exc:
        return error_response(503, "unavailable", one_line(exc), {"Retry-After": str(STORAGE_RETRY_AFTER_S)})
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
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None  # RFC 9110: 405 names them
        return error_response(exc.status, code, message, allow)
    except Exception:  # the service stays up; the log has the traceback
        log.exception("unhandled error in %s %s", request.method, request.path)
        return error_response(500, "internal_error", "internal error (see the server log)")


async def json_error_bodies(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: an error aiohttp answers by itself, outside the middlewares (an unknown
    ``Expect`` is a 417 before any handler runs), still gets the API's JSON error body."""
    if response.status < 400 or not isinstance(response, web.Response) or response.content_type == "application/json":
        return
    message = " ".join((response.text or response.reason or "").split())[:300]
    body = orjson.dumps({"error": {"code": HTTP_CODES.get(response.status, "http_error"), "message": message}})
    response.content_type = "application/json"
    response.body = body
    response.headers["Content-Length"] = str(len(body))  # set already for the plain-text body


def one_line(exc: BaseException) -> str:
    """An exception as one bounded line (it may quote bytes a client sent)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:300]

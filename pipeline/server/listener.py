"""The listening socket: aiohttp's low-level server with the limits a public port needs.

``serving(config)`` runs the application on a socket bound first (so a busy port fails
before anything starts) and gives every connection to ``ConnectionFactory``:

- at most ``max_connections`` connections are open at once; one more is answered ``503`` (JSON)
  and closed at once, so slow or idle clients cannot use up the file descriptors;
- a connection must send a complete request head within ``header_timeout_s`` of connecting
  or of its previous response, else it is closed (aiohttp's keep-alive timer, which it arms
  at connect: the same timer closes idle keep-alive connections);
- request line and header lines are bounded (``max_line_size``, ``max_field_size``);
- a request aiohttp's parser rejects (a bad request line, a header too long, a bad chunked
  body ...) is answered with the API's ``{"error": {...}}`` body, like every other error.

Bodies have their own timeouts, enforced where they are read (``uploads.BodyClock``).
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
import socket
from collections.abc import AsyncIterator
from http import HTTPStatus

import orjson
from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestHandler

from ..config import Config, ServerConfig
from ..errors import Unavailable
from .errors import HTTP_CODES, StartupError, error_response, one_line
from .logs import ACCESS_LOGGER, AccessLogger

log = logging.getLogger("zkpipe.server")
FD_RESERVE = 256  # descriptors kept for the store, the spool, keys and the engine beyond the connections
BACKLOG = 128
# After an early answer (408, 413 ...) the rest of the body is read and dropped for at most this long,
# so that the client sees the answer rather than a reset; then the connection is closed.
LINGER_S = 2.0


class CannotListen(StartupError, Unavailable):
    """The address to listen on cannot be had (in use, not ours, unknown)."""


def _busy_response() -> bytes:
    body = orjson.dumps({"error": {"code": "too_many_connections",
                                   "message": "the server has as many open connections as it takes; retry later"}})
    head = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")
    return head.encode() + body


BUSY_RESPONSE = _busy_response()


class RefuseBusy(asyncio.Protocol):
    """A connection beyond the cap: 503 at once, then closed (its request, if any, is not read)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(BUSY_RESPONSE)
        transport.close()


class JsonErrorRequestHandler(RequestHandler):
    """aiohttp's connection handler, with parser errors answered in the API's JSON error shape."""

    def __init__(self, factory: "ConnectionFactory", *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._factory = factory
        self._counted = True

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs; raises if a response was already started
        if status >= 500:
            text = "internal error (see the server log)"
        elif isinstance(exc, ContentEncodingError):
            text = f"malformed request: cannot decode the body's Content-Encoding ({one_line(exc)})"
        else:
            text = f"malformed request: {one_line(exc) if exc is not None else message or HTTPStatus(status).phrase}"
        response = error_response(status, HTTP_CODES.get(status, "bad_request"), text)
        response.force_close()
        return response

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        if self._counted:
            self._counted = False
            self._factory.open_connections -= 1


class ConnectionFactory:
    """The protocol factory of the listening socket: a handler per connection, up to the cap."""

    def __init__(self, server: web.Server, config: ServerConfig) -> None:
        self.server = server
        self.max_connections = config.max_connections
        self.open_connections = 0
        self.refused = 0
        self.handler_kwargs = handler_settings(config)

    def __call__(self) -> asyncio.BaseProtocol:
        if self.open_connections >= self.max_connections:
            self.refused += 1
            return RefuseBusy()
        self.open_connections += 1  # counted now: accepts of one loop turn come before their connection_made
        return JsonErrorRequestHandler(self, self.server, loop=asyncio.get_running_loop(), **self.handler_kwargs)


def handler_settings(config: ServerConfig) -> dict:
    """aiohttp ``RequestHandler`` settings from the server's config (the access log too: logs.py)."""
    access_log = logging.getLogger(ACCESS_LOGGER) if config.access_log else None
    return {"keepalive_timeout": config.header_timeout_s, "max_line_size": config.max_line_size,
            "max_field_size": config.max_field_size, "lingering_time": LINGER_S, "access_log": access_log,
            "access_log_class": AccessLogger}


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, or ``StartupError`` naming the address (e.g. already in use)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise CannotListen(f"cannot listen on {host}:{port}: {reason}") from None
    return sock


def raise_open_file_limit(max_connections: int) -> None:
    """Let the process hold ``max_connections`` sockets plus a reserve, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        if target < wanted:
            log.warning("open file limit %d is below max_connections + %d = %d: lower max_connections", target,
                        FD_RESERVE, wanted)


@contextlib.asynccontextmanager
async def serving(config: Config, sock: socket.socket | None = None) -> AsyncIterator[tuple[str, int]]:
    """Run the application on ``sock`` (bound from the config when not given); yields (host, port)."""
    from .app import create_app

    server = config.server
    sock = sock or bind(server.host, server.port)  # a busy port fails before keys and engine start
    raise_open_file_limit(server.max_connections)
    runner = web.AppRunner(create_app(config), handle_signals=False, **handler_settings(server))
    listening = None
    try:
        await runner.setup()
        factory = ConnectionFactory(runner.server, server)
        listening = await asyncio.get_running_loop().create_server(factory, sock=sock, backlog=BACKLOG)
        yield sock.getsockname()[:2]
    finally:
        if listening is not None:
            listening.close()  # no new connections; runner.cleanup() then closes the open ones
        else:
            sock.close()
        await runner.cleanup()

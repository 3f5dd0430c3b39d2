"""The listening sockets of ``zkpipe serve``, bound before anything starts.

Binding first means a taken port fails at once, in one line, before the keys are scanned, the
engine started or anything claims to serve; aiohttp then serves on these sockets (``SockSite``).
"""
from __future__ import annotations

import errno
import socket

from ..errors import Unavailable


class CannotListen(Unavailable):
    """The address cannot be bound; the message names it and what to do."""


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind_sockets(host: str, port: int) -> list[socket.socket]:
    """One listening socket per address ``host`` resolves to (``port`` 0: a free port)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CannotListen(f"cannot listen on {_url(host, port)}: unknown host ({exc.strerror})") from None
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for family, kind, proto, _, address in infos:
            if address in seen:
                continue
            seen.add(address)
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does: restarts rebind at once
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                hint = (" (another server is using it: stop it or pick another --port)"
                        if exc.errno == errno.EADDRINUSE else "")
                raise CannotListen(f"cannot listen on {_url(str(address[0]), port)}: "
                                   f"{exc.strerror or exc}{hint}") from None
            sock.listen(socket.SOMAXCONN)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets

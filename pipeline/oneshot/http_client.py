"""A minimal HTTP/1.1 client on the ``_socket`` module, for ``zkpipe prove --server`` (``remote``).

``http.client`` was ~40 ms of that path's start (it imports ``email.parser``, ``ssl``, ...) for
three small requests. This client does what they need and no more: one keep-alive connection,
request bodies sent with a Content-Length, answers framed by Content-Length (aiohttp's
``web.Response``, every answer of ``zkpipe serve``), by the chunked transfer coding (a streamed
aiohttp answer) or by the end of the connection. ``ssl`` is imported only for an https URL, and
``socket`` with it: an http URL needs only the C module under it (``socket``'s enums and
``selectors`` were ~2.5 ms of this path's start on the dev box).

A keep-alive connection the server has closed between two requests (its idle timeout) shows as
a connection that ends, or is reset, before the answer's first byte: the request is sent once
more on a new connection. Nothing else is retried.

Errors: ``OSError`` for the transport (refused, reset, timed out: ``TimeoutError``; a name that
does not resolve: ``gaierror``), ``ProtocolError`` for an answer that is not HTTP/1.x.
"""
from __future__ import annotations

import _socket

from ..errors import BadInput, Unavailable

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_LINE = 64 * 1024  # the longest status, header or chunk-size line taken (aiohttp sends lines of < 8 KiB)
RECV_BYTES = 64 * 1024


class ProtocolError(BadInput):
    """The peer answered, but not in HTTP/1.x: the URL names something that is no zkpipe server."""


class ClosedBeforeAnswer(Unavailable, ConnectionError):
    """The connection ended before the first byte of the answer (still an ``OSError``, as the
    transport's other failures are)."""


def split_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path prefix) of ``http[s]://HOST[:PORT][/PREFIX]`` (no scheme: http);
    ``ValueError`` for anything else. Not ``urllib.parse``: ~2 ms of imports for one split."""
    scheme, sep, rest = url.partition("://")
    scheme, rest = (scheme.lower(), rest) if sep else ("http", url)
    netloc, _, path = rest.split("#", 1)[0].split("?", 1)[0].partition("/")
    netloc = netloc.rpartition("@")[2]  # user:password@ is not ours to use
    if netloc.startswith("["):  # an IPv6 address: [::1]:9820
        host, _, port_text = netloc[1:].partition("]")
        if port_text and not port_text.startswith(":"):
            raise ValueError(url)
        port_text = port_text[1:]
    else:
        host, _, port_text = netloc.partition(":")
    if scheme not in DEFAULT_PORTS or not host or (port_text and not port_text.isdigit()):
        raise ValueError(url)
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        raise ValueError(url)
    return scheme, host.lower(), port, f"/{path}".rstrip("/")


class Connection:
    """One connection to ``scheme://host:port``, opened on the first request and kept alive."""

    def __init__(self, scheme: str, host: str, port: int, timeout_s: float) -> None:
        self.scheme, self.host, self.port, self.timeout_s = scheme, host, port, timeout_s
        name = f"[{host}]" if ":" in host else host
        self.host_header = name if port == DEFAULT_PORTS[scheme] else f"{name}:{port}"
        self.sock: _socket.socket | None = None
        self.buf = bytearray()  # received and not yet parsed
        self.answering = False  # a byte of the current answer has arrived

    def request(self, method: str, target: str, headers: dict[str, str],
                body: bytes | None = None) -> tuple[int, bytes]:
        """(status, body) of one request; the body is sent with a Content-Length."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity",
                 *(f"{name}: {value}" for name, value in headers.items())]
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        reused = self.sock is not None
        try:
            return self._exchange(head, body)
        except ClosedBeforeAnswer:
            if not reused:
                raise
        return self._exchange(head, body)  # the server closed the idle connection: once more, on a new one

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.buf.clear()

    # -- one request and its answer ---------------------------------------------------------------
    def _exchange(self, head: bytes, body: bytes | None) -> tuple[int, bytes]:
        if self.sock is None:
            self._connect()
        self.answering = False
        try:
            self.sock.sendall(head)  # apart from the body: a witness is not copied once more
            if body:
                self.sock.sendall(body)
            return self._answer()
        except (BrokenPipeError, ConnectionResetError) as exc:
            self.close()
            if self.answering:
                raise
            raise ClosedBeforeAnswer(f"the server closed the connection ({exc.strerror or exc})") from None
        except BaseException:  # a connection in the middle of an answer is of no further use
            self.close()
            raise

    def _connect(self) -> None:
        # The host as bytes: getaddrinfo encodes a str with the 'idna' codec, ~1 ms of imports.
        host = self.host.encode() if self.host.isascii() else self.host
        error: OSError | None = None
        if self.scheme == "https":
            from socket import socket as new_socket  # what ssl wraps (it wants socket's class)
        else:
            new_socket = _socket.socket
        for family, kind, proto, _, address in _socket.getaddrinfo(host, self.port, type=_socket.SOCK_STREAM):
            sock = new_socket(family, kind, proto)
            sock.settimeout(self.timeout_s)  # each connect, send and receive; TimeoutError past it
            try:
                sock.connect(address)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                import ssl  # only here: ~9-14 ms of imports that an http URL never needs

                context = ssl.create_default_context()
                context.set_alpn_protocols(["http/1.1"])
                try:
                    sock = context.wrap_socket(sock, server_hostname=self.host)
                except OSError:
                    sock.close()
                    raise
            self.sock = sock
            self.buf.clear()
            return
        raise error  # getaddrinfo gives at least one address or raises

    def _answer(self) -> tuple[int, bytes]:
        version, status, headers = self._head()
        while 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            version, status, headers = self._head()
        connection = headers.get("connection", "").lower()
        keep = "close" not in connection and (version != b"HTTP/1.0" or "keep-alive" in connection)
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            length = headers["content-length"].split(",")[0].strip()
            if not length.isdigit():
                raise ProtocolError(f"Content-Length {headers['content-length']!r}")
            body = self._exact(int(length))
        elif status in (204, 304):
            body = b""
        else:  # framed by the connection's end
            while self._receive():
                pass
            body, keep = bytes(self.buf), False
            self.buf.clear()
        if not keep:
            self.close()
        return status, body

    def _head(self) -> tuple[bytes, int, dict[str, str]]:
        """The status line and header fields (names in lower case; repeated ones joined by ', ')."""
        line = self._line()
        version, _, rest = line.partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"not an HTTP answer: {line[:60]!r}")
        headers: dict[str, str] = {}
        while line := self._line():
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise ProtocolError(f"a header line without a colon: {line[:60]!r}")
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return version, int(code), headers

    def _chunked(self) -> bytes:
        parts = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()  # a chunk extension is ignored
            try:
                size = int(size_text, 16)
            except ValueError:
                size = -1
            if size < 0:
                raise ProtocolError(f"a chunk size {size_text[:20]!r}")
            if size == 0:
                break
            parts.append(self._exact(size))
            if self._line():
                raise ProtocolError("a chunk longer than its size")
        while self._line():  # trailer fields, up to the blank line
            pass
        return b"".join(parts)

    # -- the receive buffer -----------------------------------------------------------------------
    def _receive(self) -> bool:
        """More bytes into ``buf``; False at the connection's end."""
        data = self.sock.recv(RECV_BYTES)
        if data:
            self.answering = True
            self.buf += data
        return bool(data)

    def _more(self) -> None:
        if not self._receive():
            if not self.answering:
                raise ClosedBeforeAnswer("the server closed the connection without answering")
            raise ConnectionError("the server closed the connection in the middle of its answer")

    def _line(self) -> bytes:
        while (end := self.buf.find(b"\r\n")) < 0:
            if len(self.buf) > MAX_LINE:
                raise ProtocolError(f"a line longer than {MAX_LINE} bytes")
            self._more()
        line = bytes(self.buf[:end])
        del self.buf[:end + 2]
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._more()
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

"""The service on a real listening socket (``listener.serving``: what ``zkpipe serve`` runs), in this
process, and a raw-bytes HTTP exchange for requests no well-behaved client would send."""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson

from pipeline.config import Config
from pipeline.server.listener import bind, serving


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self):
        return orjson.loads(self.body)


@dataclass
class LiveServer:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port)

    async def exchange(self, request: bytes, timeout_s: float = 20.0) -> RawResponse:
        """Send raw bytes on a new connection, read one response."""
        reader, writer = await self.open()
        try:
            writer.write(request)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            return await asyncio.wait_for(read_response(reader), timeout_s)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def read_response(reader: asyncio.StreamReader) -> RawResponse:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return RawResponse(status, headers, body)


@contextlib.asynccontextmanager
async def live_server(config: Config) -> AsyncIterator[LiveServer]:
    async with serving(config, bind("127.0.0.1", 0)) as (host, port):
        yield LiveServer(host, port)

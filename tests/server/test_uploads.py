"""Upload bodies within bounds: streamed to the spool part by part, timed, and read a few at a time."""
from __future__ import annotations

import asyncio

from tests.server.live_server import live_server, read_response
from tests.server.malformed_requests import AUTH_LINE, BOUNDARY, MULTIPART
from tests.server.server_helpers import FIXTURES, make_config

WITNESS = (FIXTURES / "bn128" / "chain_2e8" / "witness.wtns").read_bytes()


def upload_head(length: int) -> bytes:
    return (b"POST /v1/jobs HTTP/1.1\r\nHost: zkpipe\r\n" + AUTH_LINE + b"Content-Type: " + MULTIPART +
            b"\r\nContent-Length: " + str(length).encode() + b"\r\n\r\n")


def body_start() -> bytes:
    """key_id, then one whole .wtns part, then the start of a second part (the body goes on)."""
    key = b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="key_id"\r\n\r\nchain_bn128\r\n'
    part = (b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="w"; filename="%d.wtns"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n")
    return key + part % 0 + WITNESS + b"\r\n" + part % 1 + WITNESS[:100]


async def test_a_file_part_is_on_disk_before_the_body_ends_not_held_in_memory(tmp_path):
    tmp_spool = tmp_path / "state" / "spool" / "tmp"
    async with live_server(make_config(tmp_path)) as server:
        reader, writer = await server.open()
        writer.write(upload_head(10 << 20) + body_start())  # 10 MiB announced, a few KiB sent
        try:
            await asyncio.sleep(0.2)
            writer.write(WITNESS[100:200])  # aiohttp's multipart reader ends a part once it has read past it
            for _ in range(200):
                spooled = list(tmp_spool.glob("*/part-00000.wtns"))
                if spooled and spooled[0].stat().st_size == len(WITNESS):
                    break
                await asyncio.sleep(0.05)
            assert [p.read_bytes() for p in spooled] == [WITNESS]
        finally:
            writer.close()
        for _ in range(200):  # the client went away: its upload is dropped
            if not list(tmp_spool.iterdir()):
                break
            await asyncio.sleep(0.05)
        assert list(tmp_spool.iterdir()) == []


async def test_a_body_that_stops_arriving_gets_408_and_its_connection_is_closed(tmp_path):
    async with live_server(make_config(tmp_path, body_read_timeout_s=0.3)) as server:
        reader, writer = await server.open()
        writer.write(upload_head(10 << 20) + body_start())
        answer = await asyncio.wait_for(read_response(reader), 10)
        assert answer.status == 408 and answer.json()["error"]["code"] == "body_timeout"
        assert "no progress for 0.3 s" in answer.json()["error"]["message"]
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()


async def trickle(writer: asyncio.StreamWriter, every_s: float) -> None:
    """A little body every ``every_s`` (more than a multipart boundary): never idle, never done."""
    while not writer.is_closing():
        await asyncio.sleep(every_s)
        writer.write(b"x" * 64)


async def test_a_body_that_trickles_past_the_whole_body_limit_gets_408(tmp_path):
    async with live_server(make_config(tmp_path, body_read_timeout_s=5.0, body_timeout_s=0.6)) as server:
        reader, writer = await server.open()
        writer.write(upload_head(10 << 20) + body_start())
        dripping = asyncio.create_task(trickle(writer, 0.05))
        try:
            answer = await asyncio.wait_for(read_response(reader), 10)
        finally:
            dripping.cancel()
            writer.close()
        assert answer.status == 408 and "not complete after 0.6 s" in answer.json()["error"]["message"]


async def test_uploads_beyond_the_concurrent_limit_wait_then_get_503(tmp_path):
    async with live_server(make_config(tmp_path, max_concurrent_uploads=1, body_read_timeout_s=0.5)) as server:
        reader, writer = await server.open()
        writer.write(upload_head(10 << 20) + body_start())  # holds the only upload slot
        dripping = asyncio.create_task(trickle(writer, 0.1))
        try:
            await asyncio.sleep(0.2)
            second = await server.exchange(upload_head(len(body_start())) + body_start())
            assert second.status == 503 and second.json()["error"]["code"] == "too_many_uploads"
            assert second.headers["retry-after"] == "1"
        finally:
            dripping.cancel()
            writer.close()

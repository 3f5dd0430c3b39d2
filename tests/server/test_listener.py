"""The listening socket as ``zkpipe serve`` runs it: malformed requests, slow clients, the connection cap."""
from __future__ import annotations

import asyncio
import socket

import pytest

from pipeline.server.errors import StartupError
from pipeline.server.listener import bind
from tests.server.live_server import live_server, read_response
from tests.server.malformed_requests import CORPUS, get
from tests.server.server_helpers import TOKEN, make_config

HEALTHZ = get(b"/healthz")


async def test_every_malformed_request_gets_a_4xx_json_error_and_the_service_stays_up(tmp_path):
    wrong = []
    async with live_server(make_config(tmp_path)) as server:
        for case in CORPUS:
            try:
                answer = await server.exchange(case.request)
                code = answer.json()["error"]["code"] if answer.headers.get("content-type", "").startswith(
                    "application/json") else answer.body[:80]
                if (answer.status, code) != (case.status, case.code):
                    wrong.append(f"{case.name}: {answer.status} {code!r}, expected {case.status} {case.code!r}")
            except Exception as exc:  # no answer at all, or not JSON
                wrong.append(f"{case.name}: {type(exc).__name__}: {exc}")
            health = await server.exchange(HEALTHZ)
            assert health.status == 200, f"/healthz after {case.name}: {health}"
    assert not wrong, "\n".join(wrong)
    assert len(CORPUS) >= 40


async def test_the_bearer_scheme_is_case_insensitive(tmp_path):
    async with live_server(make_config(tmp_path)) as server:
        for scheme in (b"bearer", b"BEARER", b"Bearer"):
            answer = await server.exchange(get(b"/v1/keys", b"Authorization: " + scheme + b" " + TOKEN.encode() + b"\r\n"))
            assert answer.status == 200, (scheme, answer)


async def test_a_connection_that_never_finishes_its_headers_is_closed(tmp_path):
    async with live_server(make_config(tmp_path, header_timeout_s=0.3)) as server:
        reader, writer = await server.open()
        writer.write(b"POST /v1/jobs HTTP/1.1\r\nHost: zkpipe\r\nContent-Type: appl")  # and nothing more
        idle_reader, idle_writer = await server.open()  # sends nothing at all
        try:
            assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
            assert await asyncio.wait_for(idle_reader.read(), 10) == b""
        finally:
            writer.close()
            idle_writer.close()
        assert (await server.exchange(HEALTHZ)).status == 200


async def test_connections_beyond_the_cap_get_503_json_then_are_served_once_one_closes(tmp_path):
    async with live_server(make_config(tmp_path, max_connections=3)) as server:
        held = [await server.open() for _ in range(3)]
        for _, writer in held:
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: zkpipe\r\n")  # unfinished heads hold the connections
        await asyncio.sleep(0.2)
        reader, writer = await server.open()
        busy = await asyncio.wait_for(read_response(reader), 10)
        writer.close()
        assert busy.status == 503 and busy.json()["error"]["code"] == "too_many_connections"
        assert busy.headers["retry-after"] == "1"
        held.pop()[1].close()
        await asyncio.sleep(0.2)
        assert (await server.exchange(HEALTHZ)).status == 200
        for _, writer in held:
            writer.close()


def test_a_port_in_use_is_one_line_naming_the_address():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartupError) as caught:
            bind("127.0.0.1", port)
    assert str(caught.value) == f"cannot listen on 127.0.0.1:{port}: address already in use"

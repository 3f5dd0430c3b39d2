"""Upload bodies within bounds: streamed to the spool part by part, timed, and read a few at a time;
the three body shapes (multipart, one .wtns as the body, JSON inputs), the key named by id or fingerprint."""
from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest

from pipeline.formats.key_fingerprint import zkey_fingerprint
from pipeline.server import uploads
from pipeline.server.spool import Spool
from pipeline.server.storage_health import StorageUnavailable
from tests.server.faults import FaultyDisk
from tests.server.live_server import live_server, read_response
from tests.server.malformed_requests import AUTH_LINE, BOUNDARY, MULTIPART
from tests.server.server_helpers import AUTH, FIXTURES, check_proof, make_config, multiplier_witness, vk_for

WITNESS = (FIXTURES / "bn128" / "chain_2e8" / "witness.wtns").read_bytes()
RAW = {**AUTH, "Content-Type": "application/octet-stream"}
MULT_FINGERPRINT = zkey_fingerprint(FIXTURES / "bn128" / "multiplier" / "circuit_final.zkey")


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


# -- one .wtns as the body; the key by fingerprint --------------------------------------------------
@pytest.mark.parametrize("key", [{"key_id": "mult_bn128"}, {"key_fingerprint": MULT_FINGERPRINT}])
async def test_a_wtns_body_is_a_job_of_one_partition_with_its_fields_in_the_query(client, tmp_path, key):
    wtns = multiplier_witness(tmp_path / "w.wtns", "bn128", 4, 9).read_bytes()
    resp = await client.post("/v1/jobs", params={**key, "priority": "high", "request_id": "raw-1", "wait": "60"},
                             data=wtns, headers=RAW)
    assert resp.status == 202, await resp.text()
    job = await resp.json()
    assert (job["key_id"], job["priority"], job["request_id"], job["state"]) == ("mult_bn128", "high", "raw-1", "done")
    assert job["progress"]["partitions_total"] == 1 and job["proofs"][0]["public_signals"] == ["36"]
    assert check_proof(vk_for("mult_bn128"), job["proofs"][0])


async def test_multipart_and_json_bodies_may_name_their_key_by_fingerprint(client, tmp_path):
    form = aiohttp.FormData(default_to_multipart=True)
    form.add_field("key_fingerprint", MULT_FINGERPRINT)
    form.add_field("witness", multiplier_witness(tmp_path / "w.wtns", "bn128", 2, 9).read_bytes(), filename="w.wtns",
                   content_type="application/octet-stream")
    job = await (await client.post("/v1/jobs", params={"wait": "60"}, data=form, headers=AUTH)).json()
    assert job["key_id"] == "mult_bn128" and job["proofs"][0]["public_signals"] == ["18"]
    body = {"key_fingerprint": MULT_FINGERPRINT, "inputs": [{"a": 3, "b": 9}]}
    resp = await client.post("/v1/jobs", params={"wait": "60"}, data=orjson.dumps(body),
                             headers={**AUTH, "Content-Type": "application/json"})
    job = await resp.json()
    assert job["key_id"] == "mult_bn128" and job["proofs"][0]["public_signals"] == ["27"]


BAD_RAW = {  # query, body, status, code, a word of the message
    "no_key": ({}, "ok", 400, "missing_key_id", "key_fingerprint"),
    "both_names": ({"key_id": "mult_bn128", "key_fingerprint": MULT_FINGERPRINT}, "ok", 400,
                   "key_id_and_fingerprint", "not both"),
    "unknown_fingerprint": ({"key_fingerprint": "ab" * 32}, "ok", 404, "unknown_key", "abab"),
    "unknown_parameter": ({"key_id": "mult_bn128", "flavour": "x"}, "ok", 400, "unknown_field", "flavour"),
    "bad_priority": ({"key_id": "mult_bn128", "priority": "asap"}, "ok", 400, "bad_priority", "asap"),
    "empty_body": ({"key_id": "mult_bn128"}, b"", 400, "no_partitions", "empty"),
    "not_a_witness": ({"key_id": "mult_bn128"}, b"not a witness at all", 422, "bad_witness", "the request body"),
    "other_curve": ({"key_id": "mult_bn128"}, ("bls12381", "multiplier"), 422, "witness_curve_mismatch", "bls12381"),
}


@pytest.mark.parametrize("name", list(BAD_RAW))
async def test_a_bad_wtns_body_is_4xx_naming_the_problem_and_nothing_is_spooled(client, tmp_path, name):
    query, body, status, code, word = BAD_RAW[name]
    if body == "ok":
        body = (FIXTURES / "bn128" / "multiplier" / "witness.wtns").read_bytes()
    elif isinstance(body, tuple):
        body = (FIXTURES / body[0] / body[1] / "witness.wtns").read_bytes()
    resp = await client.post("/v1/jobs", params=query, data=body, headers=RAW)
    assert resp.status == status, await resp.text()
    error = (await resp.json())["error"]
    assert error["code"] == code and word in error["message"], error
    spool = tmp_path / "state" / "spool"
    assert list((spool / "tmp").iterdir()) == [] and list((spool / "jobs").iterdir()) == []


# -- writing a witness to the spool ------------------------------------------------------------------
@pytest.mark.parametrize("write_batch, one_call", [(uploads.WRITE_BATCH, True), (1000, False)])
async def test_a_witness_is_spooled_whole_in_one_thread_call_when_small_else_batch_by_batch(
        client, monkeypatch, write_batch, one_call):
    monkeypatch.setattr(uploads, "WRITE_BATCH", write_batch)
    calls = []  # (bytes, last) of each blocking write
    real_append = uploads.UploadParser._append

    def append(self, out, job_id, name, data, last):
        calls.append((len(data), last))
        return real_append(self, out, job_id, name, data, last)

    monkeypatch.setattr(uploads.UploadParser, "_append", append)
    resp = await client.post("/v1/jobs", params={"key_id": "chain_bn128", "wait": "60"}, data=WITNESS, headers=RAW)
    job = await resp.json()
    assert job["state"] == "done" and check_proof(vk_for("chain_bn128"), job["proofs"][0])
    assert sum(n for n, _ in calls) == len(WITNESS) and [last for _, last in calls][-1] is True
    assert (len(calls) == 1) is one_call and [last for _, last in calls[:-1]] == [False] * (len(calls) - 1)


def test_a_spool_write_that_fails_closes_its_file_and_says_why(tmp_path, monkeypatch):
    full_after_open = iter([False, True]).__next__  # the disk fills between the open and the write
    FaultyDisk(full_after_open).install(monkeypatch.setattr)
    spool = Spool(tmp_path / "spool", fsync=False)
    parser = uploads.UploadParser.__new__(uploads.UploadParser)
    parser.spool = spool
    opened = []
    real_create = spool.create_file
    monkeypatch.setattr(spool, "create_file", lambda *a: opened.append(real_create(*a)) or opened[-1])
    with pytest.raises(StorageUnavailable, match="part-00000.wtns"):
        parser._append(None, "job1", uploads.partition_file(0), b"witness bytes", True)
    assert len(opened) == 1 and opened[0]._fh.closed

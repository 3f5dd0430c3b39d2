"""The service's logs: JSON lines with every job event and an access line per request; the access log can be off."""
from __future__ import annotations

import logging

import aiohttp
import orjson
import pytest

from pipeline.server.logs import JsonFormatter, configure_logging
from tests.conftest import FIXTURES
from tests.server.serve_process import ServeProcess, wait_final
from tests.server.server_helpers import AUTH

pytestmark = pytest.mark.slow


async def run_one_job(tmp_path, **env) -> list[str]:
    server = ServeProcess(tmp_path)
    server.env = env
    try:
        await server.start()
        form = aiohttp.FormData()
        form.add_field("key_id", "mult_bn128")
        form.add_field("w", (FIXTURES / "bn128" / "multiplier" / "witness.wtns").read_bytes(), filename="w.wtns",
                       content_type="application/octet-stream")
        async with aiohttp.ClientSession(headers=AUTH) as session:
            async with session.post(f"{server.url}/v1/jobs", data=form) as resp:
                assert resp.status == 202
                job_id = (await resp.json())["job_id"]
            assert (await wait_final(session, server.url, job_id, 60))["state"] == "done"
        assert server.stop() == 0
    finally:
        server.kill()
    return (tmp_path / "serve-1.log").read_text().splitlines()


async def test_json_logs_carry_every_job_event_and_an_access_line_per_request(tmp_path):
    lines = await run_one_job(tmp_path, ZKPIPE_LOG_FORMAT="json")
    records = [orjson.loads(line) for line in lines if line.startswith("{")]
    plain = [line for line in lines if not line.startswith("{") and not line.startswith("zkpipe serve:")]
    assert plain == []  # every log record is one JSON object per line
    events = [r.get("event") for r in records]
    for event in ("job_accepted", "job_started", "job_partition_done", "job_done", "http_request"):
        assert event in events, event
    done = next(r for r in records if r.get("event") == "job_partition_done")
    assert done["partition"] == 0 and done["done"] == "1/1" and done["synthesize_s"] > 0 and done["gpu_s"] > 0
    access = next(r for r in records if r.get("event") == "http_request" and r["method"] == "POST")
    assert access["path"] == "/v1/jobs" and access["status"] == 202 and access["duration_s"] > 0
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)


async def test_the_access_log_is_off_by_a_setting_and_job_events_stay(tmp_path):
    lines = await run_one_job(tmp_path, ZKPIPE_ACCESS_LOG="false")
    assert not [line for line in lines if "zkpipe.access" in line]
    assert [line for line in lines if "zkpipe.jobs: job " in line and " done: " in line]


def test_json_formatter_includes_the_exception():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("zkpipe.x", logging.ERROR, __file__, 1, "failed %s", ("here",), sys.exc_info())
    body = orjson.loads(JsonFormatter().format(record))
    assert body["message"] == "failed here" and body["level"] == "error" and "ValueError: boom" in body["exception"]


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ValueError, match="log_format"):
        configure_logging("info", "xml")

"""The job service under storage failures and lost state: nothing accepted is lost, nothing stops for good."""
from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import uuid
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.server import create_app
from pipeline.server import storage_health
from pipeline.server import store as store_module
from pipeline.server.jobs import JobService
from pipeline.server.state import SERVICE
from pipeline.server.spool import Spool
from pipeline.server.store import JobRow, JobStore, manifest_of
from pipeline.server.uploads import partition_file
from tests.server.faults import DiskSwitch, FaultyDisk
from tests.server.server_helpers import AUTH, check_proof, make_config, multiplier_witness, vk_for

pytestmark = pytest.mark.usefixtures("fast_probes")


@pytest.fixture
def fast_probes(monkeypatch):
    monkeypatch.setattr(storage_health, "PROBE_INTERVAL_S", 0.05)


def witness_form(tmp_path: Path, a: int, b: int) -> aiohttp.FormData:
    form = aiohttp.FormData(default_to_multipart=True)
    form.add_field("key_id", "mult_bn128")
    path = multiplier_witness(tmp_path / f"w{a}x{b}.wtns", "bn128", a, b)
    form.add_field("witness", path.read_bytes(), filename=path.name, content_type="application/octet-stream")
    return form


async def until(predicate, seconds: float, what: str, client=None) -> None:
    """Wait (bounded) for a condition the service reaches by itself."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not await predicate():
        if asyncio.get_running_loop().time() > deadline:
            jobs = await (await client.get("/v1/jobs", headers=AUTH)).json() if client is not None else ""
            raise AssertionError(f"not reached in {seconds} s: {what} {jobs}")
        await asyncio.sleep(0.05)


async def final_job(client, job_id: str, seconds: float = 60.0) -> dict:
    job = {}

    async def finished() -> bool:
        nonlocal job
        job = await (await client.get(f"/v1/jobs/{job_id}", params={"wait": "2"}, headers=AUTH)).json()
        return job["state"] in ("done", "failed", "cancelled")

    await until(finished, seconds, f"job {job_id} finished")
    return job


async def healthz(client) -> tuple[int, dict]:
    resp = await client.get("/healthz")
    return resp.status, await resp.json()


def refused_final_write(caplog, job_id: str):
    async def seen() -> bool:
        return any("cannot store its final state" in r.getMessage() and job_id in r.getMessage() for r in caplog.records)

    return seen


async def test_a_full_disk_refuses_jobs_with_507_keeps_the_service_and_resumes_when_space_returns(tmp_path, monkeypatch,
                                                                                                  caplog):
    caplog.set_level(logging.WARNING, "zkpipe.server")
    disk = DiskSwitch()
    FaultyDisk(disk).install(monkeypatch.setattr)
    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        resp = await client.post("/v1/jobs", data=witness_form(tmp_path, 3, 5), headers=AUTH)
        assert resp.status == 202
        before = (await resp.json())["job_id"]
        disk.full = True

        for body, headers in [(witness_form(tmp_path, 4, 5), AUTH),
                              (b'{"key_id": "mult_bn128", "inputs": [{"a": 1, "b": 2}]}',
                               {**AUTH, "Content-Type": "application/json"})]:
            resp = await client.post("/v1/jobs", data=body, headers=headers)
            assert resp.status == 507 and resp.content_type == "application/json", await resp.text()
            assert (await resp.json())["error"]["code"] == "insufficient_storage"
            assert resp.headers["Retry-After"]
        status, body = await healthz(client)
        assert status == 503 and body["status"] == "unhealthy"
        assert "insufficient_storage" in [p["code"] for p in body["problems"]]

        # the job accepted before finishes meanwhile: its result cannot be stored, so it is retried, not lost
        await until(refused_final_write(caplog, before), 60, "the first job's final write refused", client)
        assert (await (await client.get(f"/v1/jobs/{before}", headers=AUTH)).json())["state"] != "done"
        assert client.app[SERVICE].stopped is None

        disk.full = False
        await until(lambda: _is_healthy(client), 10, "/healthz ok again")
        resp = await client.post("/v1/jobs", data=witness_form(tmp_path, 6, 5), headers=AUTH)
        assert resp.status == 202, await resp.text()
        after = (await resp.json())["job_id"]
        vk = vk_for("mult_bn128")
        for job_id, public in [(before, "15"), (after, "30")]:
            job = await final_job(client, job_id)
            assert job["state"] == "done", job
            assert job["proofs"][0]["public_signals"] == [public] and check_proof(vk, job["proofs"][0])
    spool = tmp_path / "state" / "spool"
    assert list((spool / "jobs").iterdir()) == [] and list((spool / "tmp").iterdir()) == []


async def _is_healthy(client) -> bool:
    return (await healthz(client))[0] == 200


async def test_a_final_state_the_locked_store_refuses_is_stored_later_not_left_running(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, "zkpipe.server")
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        resp = await client.post("/v1/jobs", data=witness_form(tmp_path, 7, 5), headers=AUTH)
        assert resp.status == 202
        job_id = (await resp.json())["job_id"]
        locker = sqlite3.connect(tmp_path / "state" / "jobs.sqlite3", timeout=30, isolation_level=None)
        try:
            locker.execute("BEGIN IMMEDIATE")  # another process holds SQLite's write lock
            await until(refused_final_write(caplog, job_id), 60, "the final write refused while locked", client)
            job = await (await client.get(f"/v1/jobs/{job_id}", headers=AUTH)).json()
            assert job["state"] in ("queued", "running") and "proofs" not in job
            status, body = await healthz(client)
            assert status == 503 and "storage_unavailable" in [p["code"] for p in body["problems"]]
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        job = await final_job(client, job_id, 30)
        assert job["state"] == "done" and job["proofs"][0]["public_signals"] == ["35"]
        stored = await client.app[SERVICE].store.get(job_id)
        assert stored.state == "done"
        await until(lambda: _is_healthy(client), 10, "/healthz ok again")


async def test_healthz_reports_a_stopped_job_service(tmp_path, monkeypatch):
    async def broken_dispatcher(self):
        raise RuntimeError("the dispatcher broke")

    monkeypatch.setattr(JobService, "_dispatch_loop", broken_dispatcher)
    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        await until(lambda: _not_healthy(client), 10, "/healthz unhealthy")
        status, body = await healthz(client)
        assert status == 503 and body["problems"][0]["code"] == "job_service_stopped"
        assert "the dispatcher broke" in body["problems"][0]["message"] and body["error"] == body["problems"][0]


async def _not_healthy(client) -> bool:
    return (await healthz(client))[0] == 503


@pytest.mark.parametrize("store_file", ["missing", "empty"])
async def test_accepted_jobs_in_the_spool_survive_a_lost_store_and_run(tmp_path, store_file):
    state = tmp_path / "state"
    spool = Spool(state / "spool", fsync=False)
    row = JobRow(job_id=uuid.uuid4().hex, key_id="mult_bn128", priority="high", input_kind="wtns", n_partitions=1,
                 request_id="kept-1")
    spool.write_file(row.job_id, partition_file(0), multiplier_witness(tmp_path / "w.wtns", "bn128", 9, 5).read_bytes())
    spool.commit(row.job_id, manifest_of(row))
    unknown = state / "spool" / "jobs" / uuid.uuid4().hex  # a folder of no known shape: kept aside, never deleted
    unknown.mkdir()
    (unknown / partition_file(0)).write_bytes(b"whatever it was")
    if store_file == "empty":
        (state / "jobs.sqlite3").write_bytes(b"")

    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        job = await final_job(client, row.job_id)
        assert job["state"] == "done" and job["priority"] == "high" and job["request_id"] == "kept-1"
        assert job["proofs"][0]["public_signals"] == ["45"] and check_proof(vk_for("mult_bn128"), job["proofs"][0])
        form_with_id = witness_form(tmp_path, 9, 5)
        form_with_id.add_field("request_id", "kept-1")
        again = await client.post("/v1/jobs", data=form_with_id, headers=AUTH)
        assert again.status == 200 and (await again.json())["job_id"] == row.job_id
        assert client.app[SERVICE].restored_from_spool == 1
    assert (state / "spool" / "orphaned" / unknown.name / partition_file(0)).read_bytes() == b"whatever it was"


async def test_a_start_while_the_disk_is_full_serves_and_runs_the_stored_jobs_once_space_returns(tmp_path, monkeypatch):
    state = tmp_path / "state"
    store = JobStore(state / "jobs.sqlite3", fsync=False)
    await store.open()
    row, _ = await store.insert(JobRow(job_id=uuid.uuid4().hex, key_id="mult_bn128", priority="normal",
                                       input_kind="wtns", n_partitions=1))
    await store.mark_running(row.job_id, 1.0)  # the previous process died while proving it
    await store.close()
    spool = Spool(state / "spool", fsync=False)
    spool.write_file(row.job_id, partition_file(0), multiplier_witness(tmp_path / "w.wtns", "bn128", 8, 5).read_bytes())
    spool.commit(row.job_id, manifest_of(row))
    disk = DiskSwitch()
    disk.full = True
    FaultyDisk(disk).install(monkeypatch.setattr)
    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        status, body = await healthz(client)
        assert status == 503 and body["problems"][0]["code"] == "insufficient_storage"
        disk.full = False
        job = await final_job(client, row.job_id)
        assert job["state"] == "done" and job["proofs"][0]["public_signals"] == ["40"]
        await until(lambda: _is_healthy(client), 10, "/healthz ok again")


async def test_a_long_poll_gets_the_stored_final_state_from_memory_before_the_spool_is_cleared(tmp_path, monkeypatch):
    """The waiter is answered with the row and proofs just stored: no second read of the store,
    and not after the spool clean-up (held here until the answer is in)."""
    cleared = threading.Event()
    real_discard = Spool.discard

    def held_discard(spool, job_id):  # runs in a worker thread
        cleared.wait(30)
        real_discard(spool, job_id)

    monkeypatch.setattr(Spool, "discard", held_discard)
    async with TestClient(TestServer(create_app(make_config(tmp_path)))) as client:
        reads = []
        for name in ("get", "get_result"):
            real = getattr(JobStore, name)
            monkeypatch.setattr(JobStore, name, lambda store, job_id, real=real, name=name:
                                reads.append(name) or real(store, job_id))
        try:
            resp = await client.post("/v1/jobs", params={"wait": "60"}, data=witness_form(tmp_path, 5, 5), headers=AUTH)
            job = await resp.json()
            assert job["state"] == "done" and job["proofs"][0]["public_signals"] == ["25"]
            assert reads == []
            assert (tmp_path / "state" / "spool" / "jobs" / job["job_id"]).is_dir()  # not cleared yet
        finally:
            cleared.set()
        await until(lambda: _spool_empty(tmp_path), 10, "the spool cleared")
        stored = await client.app[SERVICE].store.get(job["job_id"])
        assert stored.state == "done" and stored.timings["upload_ms"] >= 0


async def _spool_empty(tmp_path) -> bool:
    return list((tmp_path / "state" / "spool" / "jobs").iterdir()) == []

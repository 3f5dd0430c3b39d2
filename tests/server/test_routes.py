"""Every route and every error, through aiohttp's test client against the real engine (CPU backend)."""
from __future__ import annotations

import asyncio
import io
import threading

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.server import create_app

from tests.server.server_helpers import AUTH, FIXTURES, check_proof, make_config, multiplier_witness, vk_for


def wtns_form(key_id: str | None, files: list[tuple[str, bytes]], **fields) -> aiohttp.FormData:
    form = aiohttp.FormData(default_to_multipart=True)
    if key_id is not None:
        form.add_field("key_id", key_id)
    for name, value in fields.items():
        form.add_field(name, value)
    for filename, data in files:
        form.add_field("witness", data, filename=filename, content_type="application/octet-stream")
    return form


def fixture_wtns(curve: str, circuit: str) -> bytes:
    return (FIXTURES / curve / circuit / "witness.wtns").read_bytes()


async def wait_final(client, job_id: str, seconds: float = 60.0) -> dict:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        resp = await client.get(f"/v1/jobs/{job_id}", params={"wait": "10"}, headers=AUTH)
        assert resp.status == 200
        job = await resp.json()
        if job["state"] in ("done", "failed", "cancelled"):
            return job
    raise AssertionError(f"job {job_id} not finished after {seconds} s")


async def expect_error(resp, status: int, code: str, *words: str) -> dict:
    assert resp.status == status, await resp.text()
    assert resp.content_type == "application/json"
    error = (await resp.json())["error"]
    assert error["code"] == code
    for word in words:
        assert word in error["message"], error["message"]
    return error


# -- health, auth, status, metrics --------------------------------------------------------------------
async def test_healthz_needs_no_token(client):
    resp = await client.get("/healthz")
    assert resp.status == 200 and (await resp.json()) == {"status": "ok"}


@pytest.mark.parametrize("method,path", [("GET", "/v1/keys"), ("GET", "/v1/jobs"), ("POST", "/v1/jobs"),
                                         ("GET", "/v1/jobs/abc"), ("DELETE", "/v1/jobs/abc"), ("GET", "/v1/status"),
                                         ("GET", "/metrics"), ("POST", "/v1/keys/mult_bn128/preload"),
                                         ("GET", "/v1/keys/mult_bn128/verification_key"),
                                         ("POST", "/v1/keys/mult_bn128/evict")])
async def test_every_other_route_answers_401_without_the_token(client, method, path):
    resp = await client.request(method, path)
    await expect_error(resp, 401, "unauthorized", "bearer")
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    resp = await client.request(method, path, headers={"Authorization": "Bearer wrong"})
    await expect_error(resp, 401, "unauthorized")


async def test_no_token_configured_means_open_routes(tmp_path):
    app = create_app(make_config(tmp_path, auth_token=""))
    async with TestClient(TestServer(app)) as open_client:
        assert (await open_client.get("/v1/keys")).status == 200


async def test_status_reports_server_and_engine(client):
    resp = await client.get("/v1/status", headers=AUTH)
    assert resp.status == 200
    body = await resp.json()
    assert set(body) == {"server", "engine"}
    assert body["server"]["jobs"] == {"queued": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0}
    assert body["server"]["jobs_active"] == 0 and body["server"]["key_errors"] == {}
    engine = body["engine"]
    assert engine["state"] == "running" and [d["backend"] for d in engine["devices"]] == ["cpu"]
    assert engine["partitions_in_flight"] == 0 and "host_budget" in engine and "queues" in engine
    # which backend runs, and why (the test config asks for cpu)
    assert engine["devices"][0]["backend_choice"] == {"requested": "cpu", "chosen": "cpu", "reason": "asked for"}


async def test_metrics_is_prometheus_text_from_one_registry(client):
    resp = await client.get("/metrics", headers=AUTH)
    assert resp.status == 200 and resp.content_type == "text/plain"
    assert resp.headers["Content-Type"].startswith("text/plain; version=")  # prometheus_client's own
    text = await resp.text()
    assert "# TYPE zkpipe_server_jobs_total counter" in text
    assert 'zkpipe_server_jobs_total{outcome="accepted"} 0.0' in text  # counters exist from zero
    assert "# TYPE zkpipe_engine_partitions_total counter" in text  # the engine's families, same registry
    assert "# TYPE zkpipe_engine_partition_stage_seconds histogram" in text
    assert "# TYPE zkpipe_http_request_duration_seconds histogram" in text
    assert "process_cpu_seconds_total" in text and "python_info" in text  # the client's standard collectors
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    assert len(names) == len([line for line in text.splitlines() if line.startswith("# TYPE")])  # no duplicates


async def test_metrics_speaks_openmetrics_when_the_scraper_asks(client):
    resp = await client.get("/metrics", headers={**AUTH, "Accept": "application/openmetrics-text; version=1.0.0"})
    assert resp.status == 200 and resp.content_type == "application/openmetrics-text"
    assert (await resp.text()).rstrip().endswith("# EOF")


async def test_metrics_time_requests_and_jobs_in_seconds(client):
    wtns = fixture_wtns("bn128", "multiplier")
    resp = await client.post("/v1/jobs", data=wtns_form("mult_bn128", [("w.wtns", wtns)]), headers=AUTH)
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "done"
    await client.get("/v1/nothing", headers=AUTH)
    text = await (await client.get("/metrics", headers=AUTH)).text()
    assert 'zkpipe_http_request_duration_seconds_count{method="POST",route="/v1/jobs",status="202"} 1.0' in text
    assert 'zkpipe_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 1.0' in text
    assert 'zkpipe_server_job_seconds_count{outcome="done"} 1.0' in text
    assert 'zkpipe_server_job_seconds_count{outcome="failed"} 0.0' in text
    assert "zkpipe_server_job_queued_seconds_count 1.0" in text
    assert 'zkpipe_engine_partition_stage_seconds_count{stage="synthesize"} 1.0' in text


async def test_unknown_route_and_method_answer_json(client):
    await expect_error(await client.get("/v1/nothing", headers=AUTH), 404, "not_found", "/v1/nothing")
    resp = await client.put("/v1/jobs", headers=AUTH)
    await expect_error(resp, 405, "method_not_allowed", "PUT")
    assert set(resp.headers["Allow"].split(",")) == {"GET", "HEAD", "POST"}  # RFC 9110: a 405 names them


# -- keys -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key_id, curve, circuit", [("mult_bn128", "bn128", "multiplier"),
                                                    ("bare_bls12381", "bls12381", "multiplier")])
async def test_verification_key_route_serves_snarkjs_verification_key(client, key_id, curve, circuit):
    resp = await client.get(f"/v1/keys/{key_id}/verification_key", headers=AUTH)
    assert resp.status == 200
    assert await resp.json() == orjson.loads((FIXTURES / curve / circuit / "vk.json").read_bytes())


async def test_verification_key_of_an_unknown_key_is_404(client):
    await expect_error(await client.get("/v1/keys/nope/verification_key", headers=AUTH), 404, "unknown_key", "nope")


async def test_keys_lists_the_folder(client):
    body = await (await client.get("/v1/keys", headers=AUTH)).json()
    keys = {k["key_id"]: k for k in body["keys"]}
    assert set(keys) == {"mult_bn128", "mult_bls12381", "chain_bn128", "bare_bls12381"}
    assert keys["mult_bn128"]["curve"] == "bn128" and keys["mult_bn128"]["n_vars"] == 4
    assert keys["mult_bls12381"]["curve"] == "bls12381" and keys["mult_bls12381"]["has_wasm"]
    assert not keys["bare_bls12381"]["has_wasm"] and not keys["bare_bls12381"]["has_r1cs"]
    assert keys["chain_bn128"]["has_wasm"] and keys["chain_bn128"]["has_r1cs"]


async def test_preload_makes_a_key_resident_and_evict_drops_it(client):
    resp = await client.post("/v1/keys/mult_bn128/preload", headers=AUTH)
    assert resp.status == 200 and (await resp.json())["resident"] is True
    keys = {k["key_id"]: k for k in (await (await client.get("/v1/keys", headers=AUTH)).json())["keys"]}
    assert keys["mult_bn128"]["resident"] is True
    resp = await client.post("/v1/keys/mult_bn128/evict", headers=AUTH)
    assert resp.status == 200 and (await resp.json())["resident"] is False
    keys = {k["key_id"]: k for k in (await (await client.get("/v1/keys", headers=AUTH)).json())["keys"]}
    assert keys["mult_bn128"]["resident"] is False


@pytest.mark.parametrize("key_id", ["nope", "..%2F..%2Fetc%2Fpasswd", ".hidden", "mult_bn128.zkey"])
async def test_preload_of_an_unknown_or_outside_key_is_404(client, key_id):
    await expect_error(await client.post(f"/v1/keys/{key_id}/preload", headers=AUTH), 404, "unknown_key")


async def test_a_new_zkey_in_the_folder_is_found_without_restart(client, config):
    from pathlib import Path

    keys_dir = Path(config.server.keys_dir)
    (keys_dir / "late.zkey").symlink_to(FIXTURES / "bn128" / "multiplier" / "circuit_final.zkey")
    form = wtns_form("late", [("w.wtns", fixture_wtns("bn128", "multiplier"))])
    resp = await client.post("/v1/jobs", data=form, headers=AUTH)
    assert resp.status == 202
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "done"


# -- jobs: the good paths --------------------------------------------------------------------------------
async def test_wtns_job_with_partitions_in_order_gives_valid_proofs(client, tmp_path):
    files = [(f"w{i}.wtns", multiplier_witness(tmp_path / f"w{i}.wtns", "bn128", 3 + i, 5).read_bytes())
             for i in range(3)]
    resp = await client.post("/v1/jobs", data=wtns_form("mult_bn128", files, priority="high"), headers=AUTH)
    assert resp.status == 202
    accepted = await resp.json()
    assert set(accepted) == {"job_id", "state"} and accepted["state"] == "queued"
    assert resp.headers["Location"] == f"/v1/jobs/{accepted['job_id']}"
    job = await wait_final(client, accepted["job_id"])
    assert job["state"] == "done", job
    assert job["progress"] == {"partitions_done": 3, "partitions_total": 3}
    assert job["priority"] == "high" and job["error"] is None
    assert [p["public_signals"] for p in job["proofs"]] == [[str((3 + i) * 5)] for i in range(3)]
    vk = vk_for("mult_bn128")
    assert all(check_proof(vk, item) for item in job["proofs"])
    assert job["proofs"][0]["proof"]["protocol"] == "groth16" and job["proofs"][0]["proof"]["curve"] == "bn128"
    assert len(job["timings"]["partitions_ms"]) == 3 and job["timings"]["total_ms"] > 0


async def test_json_inputs_job_runs_the_circuit_wasm(client):
    body = {"key_id": "chain_bn128", "inputs": [orjson.loads((FIXTURES / "bn128/chain_2e8/input.json").read_bytes())]}
    resp = await client.post("/v1/jobs", data=orjson.dumps(body), headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 202
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "done", job
    expected = orjson.loads((FIXTURES / "bn128/chain_2e8/public.json").read_bytes())
    assert job["proofs"][0]["public_signals"] == expected
    assert check_proof(vk_for("chain_bn128"), job["proofs"][0])


async def test_a_json_body_over_a_mib_is_parsed_off_the_loop_and_runs(client, monkeypatch):
    from pipeline.server import uploads

    inputs = orjson.loads((FIXTURES / "bn128/chain_2e8/input.json").read_bytes())
    body = orjson.dumps({"key_id": "chain_bn128", "inputs": [inputs]}) + b" " * (uploads.JSON_IN_THREAD_BYTES + 1)
    parsed_in = []  # for each parse of the big body: was it on the event loop's thread?
    real_loads = orjson.loads

    def loads(data):
        if len(data) == len(body):
            parsed_in.append(threading.current_thread() is threading.main_thread())
        return real_loads(data)

    monkeypatch.setattr(uploads.orjson, "loads", loads)
    resp = await client.post("/v1/jobs", data=io.BytesIO(body), headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 202, await resp.text()
    assert parsed_in == [False]  # a worker thread, not the event loop's
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "done", job


async def test_same_request_id_returns_the_same_job(client):
    wtns = fixture_wtns("bls12381", "multiplier")
    first = await client.post("/v1/jobs", data=wtns_form("mult_bls12381", [("a.wtns", wtns)], request_id="r-1"),
                              headers=AUTH)
    again = await client.post("/v1/jobs", data=wtns_form("mult_bls12381", [("a.wtns", wtns)], request_id="r-1"),
                              headers=AUTH)
    assert first.status == 202 and again.status == 200
    assert (await first.json())["job_id"] == (await again.json())["job_id"]
    job = await wait_final(client, (await first.json())["job_id"])
    assert job["request_id"] == "r-1" and job["state"] == "done"


async def test_a_request_id_reused_for_another_key_or_size_is_refused_with_409(client):
    first = await client.post("/v1/jobs", data=wtns_form("mult_bls12381", [("a.wtns", fixture_wtns(
        "bls12381", "multiplier"))], request_id="r-2"), headers=AUTH)
    job_id = (await first.json())["job_id"]
    other_key = wtns_form("mult_bn128", [("a.wtns", fixture_wtns("bn128", "multiplier"))], request_id="r-2")
    resp = await client.post("/v1/jobs", data=other_key, headers=AUTH)
    await expect_error(resp, 409, "request_id_conflict", job_id)
    assert "'mult_bls12381'" in (await resp.json())["error"]["message"]
    two = fixture_wtns("bls12381", "multiplier")
    resp = await client.post("/v1/jobs", data=wtns_form("mult_bls12381", [("a.wtns", two), ("b.wtns", two)],
                                                        request_id="r-2"), headers=AUTH)
    await expect_error(resp, 409, "request_id_conflict", "1 partition(s)")
    assert (await wait_final(client, job_id))["state"] == "done"  # the first job is unharmed
    listed = (await (await client.get("/v1/jobs", headers=AUTH)).json())["jobs"]
    assert [j["job_id"] for j in listed] == [job_id]  # nothing was stored for the refused ones


async def test_a_submit_that_waits_answers_with_the_finished_job_as_get_shows_it(client, tmp_path):
    """One round trip (``prove --server``): stored before the answer as always (202, Location),
    the answer is the finished job with its proofs; a known request_id (200) the same way."""
    form = lambda: wtns_form("mult_bn128", [("w.wtns", multiplier_witness(tmp_path / "w.wtns", "bn128", 6, 7)
                                                        .read_bytes())], request_id="w-1")
    resp = await client.post("/v1/jobs", params={"wait": "60"}, data=form(), headers=AUTH)
    assert resp.status == 202
    job = await resp.json()
    assert resp.headers["Location"] == f"/v1/jobs/{job['job_id']}"
    assert job["state"] == "done" and job["proofs"][0]["public_signals"] == ["42"]
    assert check_proof(vk_for("mult_bn128"), job["proofs"][0])
    assert job == await (await client.get(f"/v1/jobs/{job['job_id']}", headers=AUTH)).json()
    assert {"upload_ms", "spool_commit_ms", "store_insert_ms", "queued_ms", "total_ms"} <= set(job["timings"])
    again = await client.post("/v1/jobs", params={"wait": "60"}, data=form(), headers=AUTH)
    assert again.status == 200 and await again.json() == job


async def test_a_submit_that_waits_answers_when_its_job_is_cancelled(client):
    chain = fixture_wtns("bn128", "chain_2e8")
    await client.post("/v1/jobs", data=wtns_form("chain_bn128", [("c.wtns", chain)] * 4), headers=AUTH)  # ahead of it
    waiting = asyncio.create_task(client.post("/v1/jobs", params={"wait": "60"}, headers=AUTH, data=wtns_form(
        "chain_bn128", [("c.wtns", chain)] * 4, priority="low", request_id="victim")))
    victim = None
    while victim is None:
        listed = (await (await client.get("/v1/jobs", headers=AUTH)).json())["jobs"]
        victim = next((j["job_id"] for j in listed if j["request_id"] == "victim"), None)
        await asyncio.sleep(0.02)
    assert (await client.delete(f"/v1/jobs/{victim}", headers=AUTH)).status == 200
    resp = await waiting
    job = await resp.json()
    assert resp.status == 202 and job["job_id"] == victim and job["state"] == "cancelled" and "proofs" not in job


async def test_a_submit_with_a_bad_wait_is_refused_before_its_body_is_read(client):
    form = wtns_form("mult_bn128", [("w.wtns", fixture_wtns("bn128", "multiplier"))])
    resp = await client.post("/v1/jobs", params={"wait": "soon"}, data=form, headers=AUTH)
    await expect_error(resp, 400, "bad_wait", "soon")
    assert resp.headers.get("Connection", "").lower() == "close"
    assert (await (await client.get("/v1/jobs", headers=AUTH)).json())["jobs"] == []


async def test_list_jobs_filters_by_state(client):
    wtns = fixture_wtns("bn128", "multiplier")
    job_id = (await (await client.post("/v1/jobs", data=wtns_form("mult_bn128", [("a.wtns", wtns)]),
                                       headers=AUTH)).json())["job_id"]
    await wait_final(client, job_id)
    done = (await (await client.get("/v1/jobs", params={"state": "done"}, headers=AUTH)).json())["jobs"]
    assert [j["job_id"] for j in done] == [job_id] and "proofs" not in done[0]
    assert (await (await client.get("/v1/jobs", params={"state": "queued"}, headers=AUTH)).json())["jobs"] == []
    await expect_error(await client.get("/v1/jobs", params={"state": "lost"}, headers=AUTH), 400, "bad_state", "lost")
    await expect_error(await client.get("/v1/jobs", params={"limit": "x"}, headers=AUTH), 400, "bad_limit")


async def test_cancel_a_queued_job_and_refuse_to_cancel_a_done_one(client, tmp_path):
    chain = fixture_wtns("bn128", "chain_2e8")
    blocker = await client.post("/v1/jobs", data=wtns_form("chain_bn128", [("c.wtns", chain)] * 4), headers=AUTH)
    victim = await client.post("/v1/jobs", data=wtns_form("chain_bn128", [("c.wtns", chain)] * 4, priority="low"),
                               headers=AUTH)
    victim_id = (await victim.json())["job_id"]
    resp = await client.delete(f"/v1/jobs/{victim_id}", headers=AUTH)
    assert resp.status == 200 and (await resp.json())["state"] == "cancelled"
    assert (await client.delete(f"/v1/jobs/{victim_id}", headers=AUTH)).status == 200  # idempotent
    done = await wait_final(client, (await blocker.json())["job_id"])
    assert done["state"] == "done"
    await expect_error(await client.delete(f"/v1/jobs/{done['job_id']}", headers=AUTH), 409, "job_finished")
    job = await wait_final(client, victim_id)
    assert job["state"] == "cancelled" and "proofs" not in job


async def test_unknown_job_and_bad_wait(client):
    await expect_error(await client.get("/v1/jobs/0123abcd", headers=AUTH), 404, "unknown_job")
    await expect_error(await client.delete("/v1/jobs/0123abcd", headers=AUTH), 404, "unknown_job")
    await expect_error(await client.get("/v1/jobs/x", params={"wait": "soon"}, headers=AUTH), 400, "bad_wait")
    await expect_error(await client.get("/v1/jobs/x", params={"wait": "-1"}, headers=AUTH), 400, "bad_wait")


async def test_a_job_the_engine_fails_is_reported_failed_without_server_paths(client, tmp_path):
    from pipeline.curves import curve_by_name
    from pipeline.formats.wtns import write_wtns

    bad = tmp_path / "bad.wtns"
    write_wtns(bad, curve_by_name("bn128"), [1, 36, 5, 7])  # a well-formed witness whose c is not a * b
    resp = await client.post("/v1/jobs", data=wtns_form("mult_bn128", [("bad.wtns", bad.read_bytes())]),
                             headers=AUTH)
    assert resp.status == 202
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "failed" and "proofs" not in job
    assert job["error"]["code"] == "bad_input"  # the caller's fault, by the error tree
    message = job["error"]["message"]
    assert "partition 0" in message and str(tmp_path) not in message and "/spool/" not in message, message


@pytest.mark.parametrize("inputs, words", [
    ([{"x0": "1", "k": "2"}], ["inputs[0]: missing input signal(s) 'c'"]),
    ([{"x0": "1", "k": "2", "c": "3", "d": "4"}], ["inputs[0]: 'd' is not an input signal"]),
    ([{"x0": "1", "k": "2", "c": "3"}, {"x0": ["1", "2"], "k": "2", "c": "x"}],
     ["inputs[1]: input signal 'x0' takes 1 value(s), got 2", "'x' is not an integer"]),
])
async def test_circuit_inputs_that_do_not_fit_are_refused_at_submit_naming_the_signal(client, tmp_path, inputs, words):
    body = orjson.dumps({"key_id": "chain_bn128", "inputs": inputs})
    resp = await client.post("/v1/jobs", data=body, headers={**AUTH, "Content-Type": "application/json"})
    await expect_error(resp, 422, "bad_circuit_inputs", *words)
    assert str(tmp_path) not in (await resp.json())["error"]["message"]
    assert list((tmp_path / "state" / "spool" / "jobs").iterdir()) == []  # nothing accepted


# -- jobs: every rejected request, and the service stays up ---------------------------------------------------
BAD_REQUESTS = {
    "malformed_json": (b"{not json", "application/json", 400, "malformed_json", "not valid JSON"),
    "json_not_object": (b"[1, 2]", "application/json", 400, "malformed_json", "object"),
    "missing_key_id": (b'{"inputs": [{"a": 1}]}', "application/json", 400, "missing_key_id", "key_id"),
    "unknown_key": (b'{"key_id": "ghost", "inputs": [{"a": 1}]}', "application/json", 404, "unknown_key", "ghost"),
    "bad_priority": (b'{"key_id": "chain_bn128", "inputs": [{"a": 1}], "priority": "urgent"}', "application/json",
                     400, "bad_priority", "urgent"),
    "empty_inputs": (b'{"key_id": "chain_bn128", "inputs": []}', "application/json", 400, "bad_inputs", "inputs"),
    "inputs_not_objects": (b'{"key_id": "chain_bn128", "inputs": [3]}', "application/json", 400, "bad_inputs",
                           "inputs[0]"),
    "unknown_field": (b'{"key_id": "chain_bn128", "inputs": [{"a": 1}], "colour": 1}', "application/json", 400,
                      "unknown_field", "colour"),
    "inputs_without_wasm": (b'{"key_id": "bare_bls12381", "inputs": [{"a": 1}]}', "application/json", 422,
                            "no_witness_generator", "bare_bls12381.wasm"),
    "bad_request_id": (b'{"key_id": "chain_bn128", "inputs": [{"a": 1}], "request_id": 7}', "application/json", 400,
                       "bad_request_id", "request_id"),
    "wrong_media_type": (b"hello", "text/plain", 415, "unsupported_media_type", "text/plain"),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
async def test_bad_json_requests_are_4xx_naming_the_problem(client, name):
    body, content_type, status, code, word = BAD_REQUESTS[name]
    resp = await client.post("/v1/jobs", data=body, headers={**AUTH, "Content-Type": content_type})
    await expect_error(resp, status, code, word)


@pytest.mark.parametrize("key_id,files,fields,status,code,words", [
    ("mult_bn128", [("bls.wtns", ("bls12381", "multiplier"))], {}, 422, "witness_curve_mismatch",
     ("partition 0", "bls.wtns", "bls12381", "bn128")),
    ("mult_bn128", [("ok.wtns", ("bn128", "multiplier")), ("chain.wtns", ("bn128", "chain_2e8"))], {}, 422,
     "witness_size_mismatch", ("partition 1", "chain.wtns", "244", "expects 4")),
    ("mult_bn128", [("junk.wtns", b"not a witness at all")], {}, 422, "bad_witness", ("partition 0", "junk.wtns")),
    ("mult_bn128", [], {}, 400, "no_partitions", ("wtns",)),
    (None, [("ok.wtns", ("bn128", "multiplier"))], {}, 400, "missing_key_id", ("key_id",)),
    ("mult_bn128", [("ok.wtns", ("bn128", "multiplier"))], {"priority": "asap"}, 400, "bad_priority", ("asap",)),
    ("mult_bn128", [("ok.wtns", ("bn128", "multiplier"))], {"flavour": "x"}, 400, "unknown_field", ("flavour",)),
    ("ghost", [("ok.wtns", ("bn128", "multiplier"))], {}, 404, "unknown_key", ("ghost",)),
])
async def test_bad_witness_uploads_are_4xx_naming_the_problem(client, key_id, files, fields, status, code, words):
    parts = [(name, src if isinstance(src, bytes) else fixture_wtns(*src)) for name, src in files]
    resp = await client.post("/v1/jobs", data=wtns_form(key_id, parts, **fields), headers=AUTH)
    await expect_error(resp, status, code, *words)


async def test_too_large_bodies_are_413_and_nothing_is_spooled(tmp_path):
    config = make_config(tmp_path, max_body_bytes=2000, max_partitions_per_job=3)
    async with TestClient(TestServer(create_app(config))) as small:
        wtns = fixture_wtns("bn128", "chain_2e8")  # 7884 bytes
        resp = await small.post("/v1/jobs", data=wtns_form("chain_bn128", [("big.wtns", wtns)]), headers=AUTH)
        await expect_error(resp, 413, "payload_too_large", "2000")
        big_json = orjson.dumps({"key_id": "chain_bn128", "inputs": [{"x0": "1" * 3000}]})
        resp = await small.post("/v1/jobs", data=big_json, headers={**AUTH, "Content-Type": "application/json"})
        await expect_error(resp, 413, "payload_too_large")
        many = [("m.wtns", fixture_wtns("bn128", "multiplier"))] * 4
        resp = await small.post("/v1/jobs", data=wtns_form("mult_bn128", many), headers=AUTH)
        await expect_error(resp, 413, "too_many_partitions", "3")
        assert list((tmp_path / "state" / "spool" / "tmp").iterdir()) == []
        assert list((tmp_path / "state" / "spool" / "jobs").iterdir()) == []
        assert (await small.get("/healthz")).status == 200


async def test_service_keeps_working_after_bad_requests(client):
    for body, content_type, *_ in BAD_REQUESTS.values():
        await client.post("/v1/jobs", data=body, headers={**AUTH, "Content-Type": content_type})
    await client.post("/v1/jobs", data=wtns_form("mult_bn128", [("j", b"junk")]), headers=AUTH)
    resp = await client.post("/v1/jobs", data=wtns_form("mult_bn128", [("ok.wtns", fixture_wtns("bn128", "multiplier"))]),
                             headers=AUTH)
    job = await wait_final(client, (await resp.json())["job_id"])
    assert job["state"] == "done" and check_proof(vk_for("mult_bn128"), job["proofs"][0])


async def test_without_a_keys_folder_the_bundled_examples_are_served(tmp_path):
    config = make_config(tmp_path, keys_dir="")
    async with TestClient(TestServer(create_app(config))) as default_client:
        keys = {k["key_id"]: k for k in (await (await default_client.get("/v1/keys", headers=AUTH)).json())["keys"]}
        assert {"chain_bn128", "chain_bls12381"} <= set(keys)
        assert keys["chain_bls12381"]["curve"] == "bls12381" and keys["chain_bls12381"]["has_wasm"]
        from pipeline.server.keys import EXAMPLES_DIR

        inputs = orjson.loads((EXAMPLES_DIR / "chain_bls12381" / "input.json").read_bytes())
        resp = await default_client.post("/v1/jobs", data=orjson.dumps({"key_id": "chain_bls12381", "inputs": [inputs]}),
                                         headers={**AUTH, "Content-Type": "application/json"})
        assert resp.status == 202
        job = await wait_final(default_client, (await resp.json())["job_id"])
        assert job["state"] == "done", job

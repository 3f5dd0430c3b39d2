"""The HTTP handlers: parse, call the job service or the engine adapter, answer JSON. Nothing more."""
from __future__ import annotations

import asyncio
import time

from aiohttp import web

from ..formats.errors import FormatError
from .engine_adapter import KeyInUse, KeyLoadError
from .errors import ApiError, json_response
from .jobs import RequestIdConflict
from .keys import valid_key_id, verification_key_json
from .messages import public_message
from .state import CLUSTER, ENGINE, KEYS, METRICS, SERVER_CONFIG, SERVICE, STARTED_AT, UPLOADS
from .store import STATES, JobRow

routes = web.RouteTableDef()


def job_json(row: JobRow, proofs: list | None = None) -> dict:
    body = {
        "job_id": row.job_id, "key_id": row.key_id, "state": row.state, "priority": row.priority,
        "request_id": row.request_id,
        "progress": {"partitions_done": row.partitions_done, "partitions_total": row.n_partitions},
        "created_at": row.created_at, "started_at": row.started_at, "finished_at": row.finished_at,
        "timings": row.timings,
        "error": {"code": row.error_code, "message": row.error_message} if row.state == "failed" else None,
    }
    if proofs is not None:
        body["proofs"] = proofs
    return body


def _job_id(request: web.Request) -> str:
    job_id = request.match_info["job_id"]
    if not (0 < len(job_id) <= 64 and job_id.isalnum()):
        raise ApiError(404, "unknown_job", f"no job {job_id!r}")
    return job_id


def _key_id(request: web.Request):
    key_id = request.match_info["key_id"]
    key = request.app[KEYS].get(key_id) if valid_key_id(key_id) else None
    if key is None:
        raise ApiError(404, "unknown_key", f"unknown key {key_id!r}")
    return key


def _number(request: web.Request, name: str, default: float, low: float, high: float, close: bool = False) -> float:
    """``close``: a refusal closes the connection (a request body is left unread)."""
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ApiError(400, f"bad_{name}", f"query parameter {name}={raw!r} is not a number", close=close) from None
    if not low <= value or value != value:
        raise ApiError(400, f"bad_{name}", f"query parameter {name} must be >= {low}, got {raw!r}", close=close)
    return min(value, high)


# -- health, status, metrics ----------------------------------------------------------------------
@routes.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    """200 while jobs can be taken and run; 503 naming each problem (job service stopped, storage failing)."""
    problems = request.app[SERVICE].problems() if SERVICE in request.app else [
        {"code": "starting", "message": "the service is not started"}]
    if not problems:
        return json_response({"status": "ok"})
    return json_response({"status": "unhealthy", "problems": problems, "error": problems[0]}, status=503)


@routes.get("/v1/status")
async def status(request: web.Request) -> web.Response:
    app = request.app
    service = app[SERVICE]
    server = {
        "uptime_s": round(time.time() - app[STARTED_AT], 3),
        "jobs": await service.store.counts(),
        "jobs_active": service.active_count(),
        "dispatch_queue": service.queue_depth(),
        "counters": dict(service.counters),
        "keys_dir": str(app[KEYS].root),
        "state_dir": app[SERVER_CONFIG].state_dir,
        "key_errors": app[KEYS].errors,
    }
    if CLUSTER in app:  # every worker of the shared store: host, devices, resident keys, last heartbeat
        worker = app[CLUSTER]
        server["worker_id"] = worker.worker_id
        server["workers"] = await worker.registry.list(worker.settings.lease_s)
        server["partitions"] = await service.store.partition_counts()
    else:  # the single-host job service: its local spool and storage health
        server.update(restored_from_spool=service.restored_from_spool, problems=service.problems(),
                      storage_failures=service.health.failures)
    return json_response({"server": server, "engine": app[ENGINE].status()})


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    return request.app[METRICS].response(request)  # server, engine (and cluster worker): one registry


# -- keys -----------------------------------------------------------------------------------------
@routes.get("/v1/keys")
async def list_keys(request: web.Request) -> web.Response:
    keys = request.app[KEYS]
    await asyncio.to_thread(keys.scan)
    engine = request.app[ENGINE]
    resident = engine.resident_keys()
    body = [{**key.to_json(), "resident": key.key_id in resident, "devices": resident.get(key.key_id, [])}
            for key in keys.all()]
    return json_response({"keys": body, "errors": keys.errors})


@routes.get("/v1/keys/{key_id}/verification_key")
async def verification_key(request: web.Request) -> web.Response:
    """The key's snarkjs verification_key.json (for `snarkjs groth16 verify` and `zkpipe verify`)."""
    key = _key_id(request)
    try:
        return json_response(await asyncio.to_thread(verification_key_json, key))
    except FormatError as exc:
        raise ApiError(422, "bad_key", f"key {key.key_id!r} is not a usable zkey: {exc.reason}") from exc


@routes.post("/v1/keys/{key_id}/preload")
async def preload_key(request: web.Request) -> web.Response:
    key = _key_id(request)
    engine = request.app[ENGINE]
    engine.register(key)
    started = time.perf_counter()
    try:
        await engine.preload(key.key_id)
    except KeyLoadError as exc:
        raise ApiError(422, "bad_key", f"key {key.key_id!r} cannot be loaded: {public_message(str(exc))}") from exc
    return json_response({"key_id": key.key_id, "resident": True,
                          "load_ms": round((time.perf_counter() - started) * 1e3, 3)})


@routes.post("/v1/keys/{key_id}/evict")
async def evict_key(request: web.Request) -> web.Response:
    key = _key_id(request)
    engine = request.app[ENGINE]
    engine.register(key)
    try:
        was_resident = await engine.evict(key.key_id)
    except KeyInUse as exc:
        raise ApiError(409, "key_in_use", f"key {key.key_id!r} has jobs in flight; evict it when they finish "
                       f"({exc})") from exc
    return json_response({"key_id": key.key_id, "resident": False, "was_resident": was_resident})


# -- jobs -----------------------------------------------------------------------------------------
@routes.post("/v1/jobs")
async def submit_job(request: web.Request) -> web.Response:
    """202 once the job is stored (200: a known request_id's job). With ?wait=SECONDS the answer
    waits until the job is finished or the seconds pass, and is the job as GET shows it (proofs
    when done): submit and result in one round trip (``zkpipe prove --server``)."""
    service = request.app[SERVICE]
    service.check_accepting()  # refused before the body is read while the storage fails
    wait = _number(request, "wait", 0.0, 0.0, request.app[SERVER_CONFIG].max_wait_s, close=True)
    upload = await request.app[UPLOADS].parse(request)
    try:
        row, created = await service.accept(upload)
    except RequestIdConflict as exc:
        raise ApiError(409, "request_id_conflict", str(exc)) from None
    body = {"job_id": row.job_id, "state": row.state}
    if wait > 0:  # the job is stored already: waiting changes what the answer says, not when it is safe
        waited, proofs = await service.wait(row.job_id, wait)
        body = job_json(waited or row, proofs)
    return json_response(body, status=202 if created else 200, headers={"Location": f"/v1/jobs/{row.job_id}"})


@routes.get("/v1/jobs")
async def list_jobs(request: web.Request) -> web.Response:
    state = request.query.get("state")
    if state is not None and state not in STATES:
        raise ApiError(400, "bad_state", f"unknown state {state!r} (expected one of: {', '.join(STATES)})")
    max_listed = request.app[SERVER_CONFIG].max_jobs_listed
    limit = int(_number(request, "limit", 100, 1, max_listed))
    rows = await request.app[SERVICE].list(state, request.query.get("key_id"), limit)
    return json_response({"jobs": [job_json(row) for row in rows]})


@routes.get("/v1/jobs/{job_id}")
async def get_job(request: web.Request) -> web.Response:
    job_id = _job_id(request)
    wait = _number(request, "wait", 0.0, 0.0, request.app[SERVER_CONFIG].max_wait_s)
    row, proofs = await request.app[SERVICE].wait(job_id, wait)
    if row is None:
        raise ApiError(404, "unknown_job", f"no job {job_id!r} (finished jobs are kept for a limited time)")
    return json_response(job_json(row, proofs))


@routes.delete("/v1/jobs/{job_id}")
async def cancel_job(request: web.Request) -> web.Response:
    job_id = _job_id(request)
    row = await request.app[SERVICE].cancel(job_id)
    if row is None:
        raise ApiError(404, "unknown_job", f"no job {job_id!r}")
    if row.state in ("done", "failed"):
        raise ApiError(409, "job_finished", f"job {job_id} already finished ({row.state}); nothing to cancel")
    return json_response(job_json(row))

"""Hand one proof to a running ``zkpipe serve`` and get the same two files a local proof writes.

The server finds the key by its fingerprint (``formats.key_fingerprint``: the verification key
the proof will verify against), never by file name, so a server that serves another key under
the same name is refused, not used. The witness goes as it is (a ``.wtns`` file part); the
proof comes back as snarkjs JSON. Standard library only: no numpy, no asyncio, no aiohttp, no
orjson (its import was ~10 ms of this path's start; the bodies here are a few kB), and no
http.client (~40 ms with its email and ssl imports: ``http_client`` is a socket client of its own),
so this path starts in a few milliseconds past the interpreter's own start.

One round trip when the job finishes within the POST's wait (the server names the key by its
fingerprint, takes the witness as the body and answers once the proof is there):

    POST /v1/jobs?key_fingerprint=..&wait=30   the .wtns as the body   -> the job: proof, public
    GET  /v1/jobs/{id}?wait=30                 only while not done (long poll)

A server from before that (it answers the octet-stream body with 415) gets the older three:

    GET  /v1/keys                  which key id has this fingerprint
    POST /v1/jobs                  multipart: key_id, priority, the witness       -> job id
    GET  /v1/jobs/{id}?wait=30     until done (long poll)                         -> proof, public
"""
from __future__ import annotations

import json
import os
import time

from ..errors import BadInput, Unavailable, ZkpipeError
from ..formats.key_fingerprint import zkey_fingerprint
from .http_client import Connection, ProtocolError, split_url
from .timeline import Timeline

FINAL_STATES = ("done", "failed", "cancelled")
POLL_WAIT_S = 30.0


class ServerRefused(BadInput):
    """The server refused the request (HTTP 4xx), or does not serve this key."""


class ServerUnreachable(Unavailable):
    """No zkpipe server answers at the URL."""


class RemoteJobFailed(ZkpipeError):
    """The server took the job and it failed there (or did not finish in time): exit 1, as ``submit``."""


class _Refused(ServerRefused):
    """A 4xx answer, with the API's error code (``unknown_key``, ``unsupported_media_type``, ...)."""

    def __init__(self, message: str, status: int, code: str | None) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class _Server:
    """One keep-alive connection; every answer is JSON (``{"error": {...}}`` on failure)."""

    def __init__(self, url: str, token: str, timeout_s: float) -> None:
        try:
            scheme, host, port, self.prefix = split_url(url)
        except ValueError:
            raise ServerRefused(f"--server {url!r}: expected http://HOST:PORT") from None
        self.conn = Connection(scheme, host, port, timeout_s)
        self.url = f"{scheme}://{self.conn.host_header}"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None):
        headers = dict(self.headers)
        if content_type:
            headers["Content-Type"] = content_type
        where = self.url + path.split("?")[0]  # messages name the route, not the query
        try:
            status, raw = self.conn.request(method, self.prefix + path, headers, body)
        except OSError as exc:  # refused, reset, timed out, a name that does not resolve
            raise ServerUnreachable(f"no zkpipe server answers at {self.url} ({exc.strerror or exc}); "
                              "start one with `zkpipe serve --keys-dir DIR`, or prove here without --server") from None
        except ProtocolError as exc:
            raise ServerRefused(f"{where}: {exc}, not a zkpipe server's answer") from None
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:  # json.JSONDecodeError, or bytes that are not UTF-8
            raise ServerRefused(f"{where}: HTTP {status}, not a zkpipe server's answer") from None
        if status >= 400:
            error = (answer.get("error") or {}) if isinstance(answer, dict) else {}
            text = f"{where}: HTTP {status}: {error.get('message') or raw[:200]!r}"
            if status >= 500:
                raise RemoteJobFailed(text)
            raise _Refused(text, status, error.get("code"))
        return answer

    def close(self) -> None:
        self.conn.close()


def _multipart(fields: dict[str, str], file_field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    boundary = os.urandom(16).hex()
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{filename}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def find_key_id(keys: list[dict], fingerprint: str, key_path: str, url: str) -> str:
    """The id under which the server serves the key with ``fingerprint`` (its file's own name first)."""
    matching = [k["key_id"] for k in keys if k.get("fingerprint") == fingerprint]
    if not matching:
        served = ", ".join(k.get("key_id", "?") for k in keys) or "none"
        raise ServerRefused(f"the server at {url} does not serve the key {key_path} (its keys: {served}); "
                          "put it in the server's --keys-dir, or prove here without --server")
    stem = os.path.splitext(os.path.basename(key_path))[0]
    return stem if stem in matching else matching[0]


def _submit_and_wait(server: _Server, fingerprint: str, key_path: str, witness: bytes, request_id: str) -> dict:
    """The job, proved within the POST's wait or still running (its state), in one round trip."""
    query = f"key_fingerprint={fingerprint}&priority=high&request_id={request_id}&wait={POLL_WAIT_S:.0f}"
    try:
        return server.call("POST", f"/v1/jobs?{query}", witness, "application/octet-stream")
    except _Refused as exc:
        if exc.code == "unknown_key":
            raise ServerRefused(f"the server at {server.url} does not serve the key {key_path} ({exc}); "
                                "put it in the server's --keys-dir, or prove here without --server") from None
        raise


def _submit_multipart(server: _Server, fingerprint: str, key_path: str, wtns_path: str, witness: bytes,
                      request_id: str, timeline: Timeline) -> dict:
    """A server from before the octet-stream body: list its keys, then a multipart POST (job id)."""
    with timeline.step("find the key on the server"):
        key_id = find_key_id(server.call("GET", "/v1/keys").get("keys", []), fingerprint, key_path, server.url)
    with timeline.step(f"submit the job (key {key_id})"):
        body, content_type = _multipart({"key_id": key_id, "priority": "high", "request_id": request_id},
                                        "witness", os.path.basename(wtns_path), witness)
        return server.call("POST", "/v1/jobs", body, content_type)


def prove_remote(url: str, key_path: str, wtns_path: str, token: str, timeline: Timeline,
                 wait_s: float = 600.0) -> tuple[object, object, dict]:
    """(proof.json, public.json, the finished job as the server shows it: id, timings) for one
    witness, proved by the server at ``url``."""
    with timeline.step("fingerprint the key, read the witness"):
        fingerprint = zkey_fingerprint(key_path)
        with open(wtns_path, "rb") as fh:
            witness = fh.read()
    # request_id: were the connection to drop before the answer, the client's one retry
    # (http_client) gets this job back instead of a second one
    request_id = os.urandom(16).hex()
    server = _Server(url, token, timeout_s=POLL_WAIT_S + 30)
    try:
        try:
            with timeline.step("submit the job and wait for the proof (one request)"):
                job = _submit_and_wait(server, fingerprint, key_path, witness, request_id)
        except _Refused as exc:
            if exc.code != "unsupported_media_type":
                raise
            job = _submit_multipart(server, fingerprint, key_path, wtns_path, witness, request_id, timeline)
        if job.get("state") not in FINAL_STATES:
            with timeline.step("wait for the proof"):
                job = _wait(server, job, wait_s)
    finally:
        server.close()
    if job["state"] != "done":
        reason = (job.get("error") or {}).get("message", "")
        raise RemoteJobFailed(f"job {job['job_id']} {job['state']}: {reason}".rstrip(": "))
    item = job["proofs"][0]
    return item["proof"], item["public_signals"], job


def _wait(server: _Server, job: dict, wait_s: float) -> dict:
    deadline = time.monotonic() + wait_s
    while job.get("state") not in FINAL_STATES:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RemoteJobFailed(f"job {job['job_id']} not done after {wait_s:.0f} s (still {job.get('state')})")
        job = server.call("GET", f"/v1/jobs/{job['job_id']}?wait={min(left, POLL_WAIT_S):.1f}")
    return job


ACCEPT_STEPS = (("upload_ms", "witness received and checked"), ("spool_commit_ms", "spool commit (fsync)"),
                ("store_insert_ms", "job store insert (fsync)"))
PARTITION_STEPS = (  # a partition's timings (engine stages), in the order they happen
    ("admission_wait_ms", "to the engine's admission"), ("synthesize_queue_ms", "queued for synthesize"),
    ("synth_ms", "synthesize"), ("prep_msm_queue_ms", "queued for prep_msm"), ("prep_msm_ms", "prep_msm"),
    ("gpu_queue_ms", "queued for the gpu stage"), ("gpu_lock_wait_ms", "GPU lock wait"), ("gpu_total_ms", "gpu stage"),
    ("epilogue_queue_ms", "queued for the epilogue"), ("b_g2_join_wait_ms", "G2 MSM join"), ("epilogue_ms", "epilogue"))
JOB_TOTAL = (("total_ms", "whole job: spool commit to result stored"),)


def server_report(job: dict) -> str:
    """The server's own split of a job's time (``--timings``): what the client's wait held."""
    timings = job.get("timings") or {}
    first = (timings.get("partitions_ms") or [{}])[0]
    rows = [f"on the server (job {job.get('job_id', '?')}, ms):"]
    for source, steps in ((timings, ACCEPT_STEPS), (first, PARTITION_STEPS), (timings, JOB_TOTAL)):
        rows += [f"  {source[key]:8.1f}  {name}" for key, name in steps if isinstance(source.get(key), (int, float))]
    return "\n".join(rows)


def write_json(path: str, obj) -> None:
    """The same bytes as ``formats.snarkjs_json`` writes for a local proof."""
    with open(path, "wb") as fh:
        fh.write(json.dumps(obj, indent=2).encode() + b"\n")  # orjson's OPT_INDENT_2 layout, byte for byte

"""``POST /v1/jobs`` bodies: parsed, size-limited, spooled and checked before a job exists.

Three shapes:
- ``multipart/form-data``: fields ``key_id``, ``priority``, ``request_id``; every file part is a
  partition (a ``.wtns``), in the order sent, whatever its field name. Every file part streams
  to the spool's tmp folder as it arrives (at most ``WRITE_BATCH`` bytes of it in memory); the
  body size is counted as it arrives.
- ``application/octet-stream``: the body is one ``.wtns`` (a job of one partition), the fields
  are query parameters. What ``zkpipe prove --server`` sends: aiohttp's multipart reader parses
  each part's headers with the email package (~2 ms of the event loop per job on the dev box).
- ``application/json``: ``{"key_id", "inputs": [{signal: value}, ...], "priority", "request_id"}``,
  one inputs object per partition, for keys with a ``.wasm``. Its own size limit
  (``max_json_body_bytes``, far below the witness files') is checked before it is parsed, and
  no partition may hold more values than the circuit has signals.

In every shape ``key_fingerprint`` (``formats.key_fingerprint``) may name the key instead of
``key_id``: a client that has the key file finds it on the server without listing the keys first.

Bodies are read within the limits of ``request_body`` (time, concurrent uploads). Every
witness is read (in a worker thread) and checked against the key: curve, length and
witness[0] = 1. A problem is an ``ApiError`` naming the partition and its file.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, replace

import numpy as np
import orjson
from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from ..config import ServerConfig
from ..formats.errors import FormatError
from ..formats.wtns import read_wtns
from .errors import ApiError, one_line
from .input_check import check_circuit_inputs
from .keys import KeyFolder, KeyInfo
from .request_body import CHUNK, BodyClock, UploadSlots, count_leaves, read_limited, too_large
from .spool import Spool, SpoolFile

FIELD_LIMIT = 4096  # bytes of a non-file multipart field
WRITE_BATCH = 1 << 20  # bytes of a file part gathered before one write to the spool (in a worker thread)
INPUTS_FILE = "inputs.json"
JSON_IN_THREAD_BYTES = 1 << 20  # JSON bodies larger than this are parsed off the event loop
REQUEST_ID_MAX = 200
JSON_TYPES = ("application/json", "")
MULTIPART_TYPE = "multipart/form-data"
RAW_TYPE = "application/octet-stream"
FIELDS = ("key_id", "key_fingerprint", "priority", "request_id")
RAW_QUERY = {*FIELDS, "wait"}  # ``wait`` is the route's own (routes.submit_job)
RAW_BODY_NAME = "the request body"  # how errors name an octet-stream body's witness


@dataclass(frozen=True)
class Upload:
    """A job's body, spooled in tmp/ and checked; not yet accepted."""

    job_id: str
    key: KeyInfo
    priority: str
    request_id: str | None
    input_kind: str  # "wtns" | "inputs"
    n_partitions: int
    received_ms: float = 0.0  # from the start of parsing to the checked, spooled body


def partition_file(index: int) -> str:
    return f"part-{index:05d}.wtns"


def _malformed(exc: Exception) -> ApiError:
    return ApiError(400, "malformed_multipart", f"cannot read the multipart body: {one_line(exc)}", close=True)


class UploadParser:
    def __init__(self, keys: KeyFolder, spool: Spool, priorities: tuple[str, ...], limits: ServerConfig) -> None:
        self.keys = keys
        self.spool = spool
        self.priorities = priorities
        self.max_body_bytes = limits.max_body_bytes
        self.max_json_bytes = min(limits.max_json_body_bytes, limits.max_body_bytes)
        self.max_partitions = limits.max_partitions_per_job
        self.read_timeout_s, self.body_timeout_s = limits.body_read_timeout_s, limits.body_timeout_s
        self.slots = UploadSlots(limits.max_concurrent_uploads, limits.body_read_timeout_s)

    async def parse(self, request: web.Request) -> Upload:
        kind = request.content_type
        if kind not in JSON_TYPES and kind not in (MULTIPART_TYPE, RAW_TYPE):
            raise ApiError(415, "unsupported_media_type",
                           f"Content-Type {kind!r}: send multipart/form-data (.wtns files), "
                           f"application/octet-stream (one .wtns) or application/json (circuit inputs)", close=True)
        limit, what = (self.max_json_bytes, "JSON body") if kind in JSON_TYPES else (self.max_body_bytes, "request body")
        if request.content_length is not None and request.content_length > limit:
            raise too_large(limit, what, request.content_length)  # before a byte of it is read
        started = time.perf_counter()
        async with self.slots.slot():
            clock = BodyClock(self.read_timeout_s, self.body_timeout_s)
            job_id = uuid.uuid4().hex
            try:
                if kind == MULTIPART_TYPE:
                    upload = await self._multipart(request, job_id, clock)
                elif kind == RAW_TYPE:
                    upload = await self._raw(request, job_id, clock)
                else:
                    upload = await self._json(request, job_id, clock)
                return replace(upload, received_ms=(time.perf_counter() - started) * 1e3)
            except BaseException:
                await asyncio.to_thread(self.spool.discard, job_id)
                raise

    # -- the two body shapes ---------------------------------------------------------------------
    async def _multipart(self, request: web.Request, job_id: str, clock: BodyClock) -> Upload:
        try:
            reader = await request.multipart()
        except (ValueError, AssertionError, HttpProcessingError) as exc:
            raise _malformed(exc) from exc
        fields: dict[str, str] = {}
        filenames: list[str] = []
        received = 0
        try:
            while (part := await clock.read(reader.next())) is not None:
                if not isinstance(part, BodyPartReader):
                    raise ApiError(400, "nested_multipart", "a part of the body is itself multipart: send each "
                                   ".wtns as a file part of the form-data body", close=True)
                if part.filename is not None or part.headers.get("Content-Type") == "application/octet-stream":
                    if len(filenames) >= self.max_partitions:
                        raise ApiError(413, "too_many_partitions",
                                       f"a job may have at most {self.max_partitions} partitions", close=True)
                    received = await self._save_part(part, job_id, partition_file(len(filenames)), received, clock)
                    filenames.append(part.filename or part.name or f"part {len(filenames)}")
                else:
                    name, value = await self._field(part, clock)
                    received += len(value)
                    fields[name] = value.decode("utf-8", errors="replace").strip()
        except (ValueError, RuntimeError, HttpProcessingError) as exc:  # aiohttp's multipart parser on a broken body
            raise _malformed(exc) from exc
        key = await self._key(fields.get("key_id"), fields.get("key_fingerprint"))
        priority = self._priority(fields.get("priority"))
        request_id = self._request_id(fields.get("request_id"))
        if not filenames:
            raise ApiError(400, "no_partitions", "no witness file parts: send one .wtns file part per partition")
        await asyncio.to_thread(self._check_witnesses, key, job_id, filenames)
        return Upload(job_id, key, priority, request_id, "wtns", len(filenames))

    async def _raw(self, request: web.Request, job_id: str, clock: BodyClock) -> Upload:
        """One .wtns as the body; key_id (or key_fingerprint), priority, request_id in the query."""
        received = await self._save_stream(lambda: request.content.read(CHUNK), job_id, partition_file(0), 0, clock)
        query = request.query
        unknown = sorted(set(query) - RAW_QUERY)
        if unknown:
            raise ApiError(400, "unknown_field", f"unknown query parameter(s) {', '.join(unknown)} "
                           f"(expected {', '.join(sorted(RAW_QUERY))})")
        key = await self._key(query.get("key_id"), query.get("key_fingerprint"))
        priority = self._priority(query.get("priority"))
        request_id = self._request_id(query.get("request_id"))
        if not received:
            raise ApiError(400, "no_partitions", "the request body is empty: send one .wtns file")
        await asyncio.to_thread(self._check_witnesses, key, job_id, [RAW_BODY_NAME])
        return Upload(job_id, key, priority, request_id, "wtns", 1)

    async def _field(self, part: BodyPartReader, clock: BodyClock) -> tuple[str, bytes]:
        name = part.name or ""
        if name not in FIELDS:
            raise ApiError(400, "unknown_field", f"unknown form field {name!r} "
                           "(expected key_id or key_fingerprint, priority, request_id and .wtns file parts)",
                           close=True)
        value = b""
        while chunk := await clock.read(part.read_chunk(FIELD_LIMIT + 1)):
            value += chunk
            if len(value) > FIELD_LIMIT:
                raise ApiError(400, "field_too_long", f"form field {name!r} exceeds {FIELD_LIMIT} bytes", close=True)
        return name, value

    async def _save_part(self, part: BodyPartReader, job_id: str, name: str, received: int, clock: BodyClock) -> int:
        """Stream one file part to the spool; return the body bytes received so far."""
        return await self._save_stream(lambda: part.read_chunk(CHUNK), job_id, name, received, clock)

    async def _save_stream(self, read_chunk, job_id: str, name: str, received: int, clock: BodyClock) -> int:
        """Stream one witness (``read_chunk()`` until b"") to the spool file ``name``; return the
        body bytes received so far. The file is opened with the first ``WRITE_BATCH`` of it, and
        its last write closes it: a witness below ``WRITE_BATCH`` takes one worker-thread call."""
        out: SpoolFile | None = None
        batch = bytearray()
        try:
            while chunk := await clock.read(read_chunk()):
                received += len(chunk)
                if received > self.max_body_bytes:
                    raise too_large(self.max_body_bytes)
                batch += chunk
                if len(batch) >= WRITE_BATCH:
                    full, batch = batch, bytearray()
                    out = await asyncio.to_thread(self._append, out, job_id, name, full, False)
            out = await asyncio.to_thread(self._append, out, job_id, name, batch, True)
        finally:
            if out is not None:  # left open by an error between two writes
                await asyncio.to_thread(out.close)
        return received

    def _append(self, out: SpoolFile | None, job_id: str, name: str, data: bytes, last: bool) -> SpoolFile | None:
        """Blocking: ``data`` onto the spool file (created when ``out`` is None); the file is closed
        when ``last`` (None returned) and when the write fails (its error raised)."""
        out = out or self.spool.create_file(job_id, name)
        try:
            out.write(data)
        except BaseException:
            with contextlib.suppress(Exception):  # the write's error is the one to report
                out.close()
            raise
        if last:
            out.close()
            return None
        return out

    async def _json(self, request: web.Request, job_id: str, clock: BodyClock) -> Upload:
        body = await read_limited(request, self.max_json_bytes, clock, "JSON body")
        try:
            doc = await asyncio.to_thread(orjson.loads, body) if len(body) > JSON_IN_THREAD_BYTES else orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, "malformed_json", f"request body is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ApiError(400, "malformed_json", "request body must be a JSON object")
        unknown = sorted(set(doc) - {*FIELDS, "inputs"})
        if unknown:
            raise ApiError(400, "unknown_field", f"unknown field(s) {', '.join(unknown)} "
                           "(expected key_id or key_fingerprint, inputs, priority, request_id)")
        key = await self._key(doc.get("key_id"), doc.get("key_fingerprint"))
        priority = self._priority(doc.get("priority"))
        request_id = self._request_id(doc.get("request_id"))
        inputs = doc.get("inputs")
        if not isinstance(inputs, list) or not inputs:
            raise ApiError(400, "bad_inputs", "'inputs' must be a non-empty list with one object of circuit "
                           "inputs per partition")
        if len(inputs) > self.max_partitions:
            raise ApiError(413, "too_many_partitions", f"a job may have at most {self.max_partitions} partitions")
        for index, item in enumerate(inputs):
            if not isinstance(item, dict) or not item:
                raise ApiError(400, "bad_inputs", f"inputs[{index}] must be a non-empty object {{signal: value}}")
            if count_leaves(item, key.n_vars) > key.n_vars:  # every input value is one of the witness's signals
                raise ApiError(422, "too_many_input_values", f"inputs[{index}] holds more values than key "
                               f"{key.key_id!r}'s circuit has signals ({key.n_vars})")
        if key.wasm_path is None:
            raise ApiError(422, "no_witness_generator", f"key {key.key_id!r} has no {key.key_id}.wasm beside its "
                           "zkey: send .wtns files (multipart) instead of circuit inputs")
        await asyncio.to_thread(check_circuit_inputs, key, inputs)  # 422 naming a missing or unknown signal
        await asyncio.to_thread(self.spool.write_file, job_id, INPUTS_FILE, orjson.dumps(inputs))
        return Upload(job_id, key, priority, request_id, "inputs", len(inputs))

    # -- fields ------------------------------------------------------------------------------------
    async def _key(self, key_id, fingerprint=None) -> KeyInfo:
        """The key named by ``key_id``, or by ``fingerprint`` (one of the two)."""
        if key_id not in (None, "") and fingerprint not in (None, ""):
            raise ApiError(400, "key_id_and_fingerprint", "give 'key_id' or 'key_fingerprint', not both")
        if fingerprint not in (None, ""):
            if not isinstance(fingerprint, str):
                raise ApiError(400, "bad_key_fingerprint", "'key_fingerprint' must be a string")
            find, named = self.keys.by_fingerprint, f"with fingerprint {fingerprint[:80]!r}"
            wanted = fingerprint
        elif isinstance(key_id, str) and key_id:
            find, named, wanted = self.keys.get, repr(key_id), key_id
        else:
            raise ApiError(400, "missing_key_id", "'key_id' is required (a key name from GET /v1/keys), "
                           "or 'key_fingerprint'")
        key = find(wanted)
        if key is None:  # maybe added to the folder since the last scan
            await asyncio.to_thread(self.keys.scan)
            key = find(wanted)
        if key is None:
            raise ApiError(404, "unknown_key", f"unknown key {named} (known: "
                           f"{', '.join(sorted(k.key_id for k in self.keys.all())) or 'none'})")
        return key

    def _priority(self, value) -> str:
        if value is None or value == "":
            return "normal"
        if not isinstance(value, str) or value.lower() not in self.priorities:
            raise ApiError(400, "bad_priority", f"unknown priority {value!r} (expected one of: "
                           f"{', '.join(self.priorities)})")
        return value.lower()

    @staticmethod
    def _request_id(value) -> str | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str) or len(value) > REQUEST_ID_MAX:
            raise ApiError(400, "bad_request_id", f"'request_id' must be a string of at most {REQUEST_ID_MAX} chars")
        return value

    def _check_witnesses(self, key: KeyInfo, job_id: str, filenames: list[str]) -> None:
        """Blocking: each spooled .wtns must parse and match the key."""
        tmp = self.spool.tmp_root / job_id
        for index, filename in enumerate(filenames):
            where = f"partition {index} ({filename!r})"
            try:
                witness = read_wtns(tmp / partition_file(index))
            except FormatError as exc:
                raise ApiError(422, "bad_witness", f"{where}: not a usable .wtns file: {exc.reason}") from exc
            if witness.curve.name != key.curve:
                raise ApiError(422, "witness_curve_mismatch", f"{where}: witness is over {witness.curve.name} but "
                               f"key {key.key_id!r} is for {key.curve}")
            if len(witness) != key.n_vars:
                raise ApiError(422, "witness_size_mismatch", f"{where}: witness has {len(witness)} values but key "
                               f"{key.key_id!r} expects {key.n_vars} (a witness of another circuit?)")
            first = witness.values[0]
            if int(first[0]) != 1 or np.any(first[1:]):
                raise ApiError(422, "bad_witness", f"{where}: witness[0] must be the constant 1")

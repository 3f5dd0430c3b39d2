"""``POST /v1/jobs`` bodies: parsed, size-limited, spooled and checked before a job exists.

Two shapes:
- ``multipart/form-data``: fields ``key_id``, ``priority``, ``request_id``; every file part is a
  partition (a ``.wtns``), in the order sent, whatever its field name. Files stream to the
  spool's tmp folder; the body size is counted as it arrives.
- ``application/json``: ``{"key_id", "inputs": [{signal: value}, ...], "priority", "request_id"}``,
  one inputs object per partition, for keys with a ``.wasm``.

Every witness is read (in a worker thread) and checked against the key: curve, length and
witness[0] = 1. A problem is an ``ApiError`` naming the partition and its file.
"""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
from aiohttp import web

from ..formats.errors import FormatError
from ..formats.wtns import read_wtns
from .errors import ApiError
from .keys import KeyFolder, KeyInfo
from .store import Spool

FIELD_LIMIT = 4096  # bytes of a non-file multipart field
CHUNK = 1 << 16
SPILL_BYTES = 4 << 20  # a file part larger than this streams to disk as it arrives
INPUTS_FILE = "inputs.json"
JSON_IN_THREAD_BYTES = 1 << 20  # JSON bodies larger than this are parsed off the event loop
REQUEST_ID_MAX = 200


@dataclass(frozen=True)
class Upload:
    """A job's body, spooled in tmp/ and checked; not yet accepted."""

    job_id: str
    key: KeyInfo
    priority: str
    request_id: str | None
    input_kind: str  # "wtns" | "inputs"
    n_partitions: int


def partition_file(index: int) -> str:
    return f"part-{index:05d}.wtns"


class UploadParser:
    def __init__(self, keys: KeyFolder, spool: Spool, priorities: tuple[str, ...], max_body_bytes: int,
                 max_partitions: int) -> None:
        self.keys = keys
        self.spool = spool
        self.priorities = priorities
        self.max_body_bytes = max_body_bytes
        self.max_partitions = max_partitions

    async def parse(self, request: web.Request) -> Upload:
        length = request.content_length
        if length is not None and length > self.max_body_bytes:
            raise self._too_large(length)
        job_id = uuid.uuid4().hex
        tmp = self.spool.tmp_root / job_id  # made by the first write
        try:
            if request.content_type == "multipart/form-data":
                upload = await self._multipart(request, job_id, tmp)
            elif request.content_type in ("application/json", ""):
                upload = await self._json(request, job_id, tmp)
            else:
                raise ApiError(415, "unsupported_media_type",
                               f"Content-Type {request.content_type!r}: send multipart/form-data (.wtns files) "
                               f"or application/json (circuit inputs)")
        except BaseException:
            await asyncio.to_thread(self.spool.discard, job_id)
            raise
        return upload

    def _too_large(self, size: int | None = None) -> ApiError:
        seen = f" ({size} bytes)" if size is not None else ""
        return ApiError(413, "payload_too_large", f"request body{seen} exceeds the limit of {self.max_body_bytes} bytes")

    # -- the two body shapes ---------------------------------------------------------------------
    async def _multipart(self, request: web.Request, job_id: str, tmp: Path) -> Upload:
        try:
            reader = await request.multipart()
        except (ValueError, AssertionError) as exc:
            raise ApiError(400, "malformed_multipart", f"cannot read the multipart body: {exc}") from exc
        fields: dict[str, str] = {}
        filenames: list[str] = []
        in_memory: dict[int, bytes] = {}  # small parts, written with the checks in one thread hop
        received = 0
        try:
            while (part := await reader.next()) is not None:
                if part.filename is not None or part.headers.get("Content-Type") == "application/octet-stream":
                    if len(filenames) >= self.max_partitions:
                        raise ApiError(413, "too_many_partitions",
                                       f"a job may have at most {self.max_partitions} partitions")
                    received, data = await self._save_part(part, job_id, partition_file(len(filenames)), received)
                    if data is not None:
                        in_memory[len(filenames)] = data
                    filenames.append(part.filename or part.name or f"part {len(filenames)}")
                else:
                    name = part.name or ""
                    if name not in ("key_id", "priority", "request_id"):
                        raise ApiError(400, "unknown_field", f"unknown form field {name!r} "
                                       "(expected key_id, priority, request_id and .wtns file parts)")
                    raw = await part.read_chunk(FIELD_LIMIT + 1)
                    if len(raw) > FIELD_LIMIT:
                        raise ApiError(400, "field_too_long", f"form field {name!r} exceeds {FIELD_LIMIT} bytes")
                    received += len(raw)
                    fields[name] = raw.decode("utf-8", errors="replace").strip()
        except ValueError as exc:  # aiohttp's multipart parser on a broken body
            raise ApiError(400, "malformed_multipart", f"cannot read the multipart body: {exc}") from exc
        key = await self._key(fields.get("key_id"))
        priority = self._priority(fields.get("priority"))
        request_id = self._request_id(fields.get("request_id"))
        if not filenames:
            raise ApiError(400, "no_partitions", "no witness file parts: send one .wtns file part per partition")
        await asyncio.to_thread(self._write_and_check, key, job_id, filenames, in_memory)
        return Upload(job_id, key, priority, request_id, "wtns", len(filenames))

    async def _save_part(self, part, job_id: str, name: str, received: int) -> tuple[int, bytes | None]:
        """Read one file part: kept in memory up to SPILL_BYTES (returned), else streamed to the spool."""
        buffer = bytearray()
        fh = None
        try:
            while chunk := await part.read_chunk(CHUNK):
                received += len(chunk)
                if received > self.max_body_bytes:
                    raise self._too_large()
                if fh is None:
                    buffer += chunk
                    if len(buffer) > SPILL_BYTES:
                        fh = await asyncio.to_thread(self.spool.create_file, job_id, name)
                        await asyncio.to_thread(fh.write, buffer)
                        buffer = bytearray()
                else:
                    await asyncio.to_thread(fh.write, chunk)
        finally:
            if fh is not None:
                await asyncio.to_thread(fh.close)
        return received, (bytes(buffer) if fh is None else None)

    async def _json(self, request: web.Request, job_id: str, tmp: Path) -> Upload:
        body = await request.read()  # client_max_size answers 413 beyond the limit
        try:
            doc = await asyncio.to_thread(orjson.loads, body) if len(body) > JSON_IN_THREAD_BYTES else orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise ApiError(400, "malformed_json", f"request body is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ApiError(400, "malformed_json", "request body must be a JSON object")
        unknown = sorted(set(doc) - {"key_id", "inputs", "priority", "request_id"})
        if unknown:
            raise ApiError(400, "unknown_field", f"unknown field(s) {', '.join(unknown)} "
                           "(expected key_id, inputs, priority, request_id)")
        key = await self._key(doc.get("key_id"))
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
        if key.wasm_path is None:
            raise ApiError(422, "no_witness_generator", f"key {key.key_id!r} has no {key.key_id}.wasm beside its "
                           "zkey: send .wtns files (multipart) instead of circuit inputs")
        await asyncio.to_thread(self.spool.write_file, job_id, INPUTS_FILE, orjson.dumps(inputs))
        return Upload(job_id, key, priority, request_id, "inputs", len(inputs))

    # -- fields ------------------------------------------------------------------------------------
    async def _key(self, key_id) -> KeyInfo:
        if not isinstance(key_id, str) or not key_id:
            raise ApiError(400, "missing_key_id", "'key_id' is required (a key name from GET /v1/keys)")
        key = self.keys.get(key_id)
        if key is None:  # maybe added to the folder since the last scan
            await asyncio.to_thread(self.keys.scan)
            key = self.keys.get(key_id)
        if key is None:
            raise ApiError(404, "unknown_key", f"unknown key {key_id!r} (known: "
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

    def _write_and_check(self, key: KeyInfo, job_id: str, filenames: list[str], in_memory: dict[int, bytes]) -> None:
        """Blocking: write the parts held in memory; each .wtns must parse and match the key."""
        tmp = self.spool.tmp_root / job_id
        for index, data in in_memory.items():
            self.spool.write_file(job_id, partition_file(index), data)
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

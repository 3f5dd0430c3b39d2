"""The iden3 "sections" container under .zkey, .wtns and .r1cs (and .ptau).

    magic    4 bytes ("zkey", "wtns", "r1cs")
    version  u32
    nSections u32
    nSections x { type u32, size u64, data[size] }       all little-endian

``read_layout`` scans only the 12-byte section headers (one small read each) and checks that
the container is whole: right magic and version, every section inside the file, no id twice,
nothing after the last section. Section contents are then read with ``SectionCursor`` (small
headers: every read is bounds-checked) or ``read_array`` (bulk data straight into an aligned
numpy array: bytes touched once, big reads split over a small thread pool, no Python work per
element). ``over_chunks`` runs blockwise numpy passes (checks, unpacking) on the same pool.
"""
from __future__ import annotations

import math
import os
import struct
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from .errors import FormatError

FILE_HEADER = struct.Struct("<4sII")  # magic, version, nSections
SECTION_HEADER = struct.Struct("<IQ")  # type, size
T = TypeVar("T")


@dataclass(frozen=True)
class BinFile:
    """Where each section's data lies: ``sections[id] = (offset, size)`` in bytes."""

    path: str
    magic: str
    version: int
    file_size: int
    sections: dict[int, tuple[int, int]]
    section_names: dict[int, str] = field(default_factory=dict)

    def label(self, section_id: int) -> str:
        name = self.section_names.get(section_id)
        return f"section {section_id} ({name})" if name else f"section {section_id}"

    def require(self, section_id: int) -> tuple[int, int]:
        if section_id not in self.sections:
            present = sorted(self.sections)
            raise FormatError(self.path, f"{self.label(section_id)} is missing (sections present: {present})")
        return self.sections[section_id]

    def expect_size(self, section_id: int, expected: int, what: str) -> tuple[int, int]:
        """The section's (offset, size), after checking that size is exactly ``expected``."""
        offset, size = self.require(section_id)
        if size != expected:
            raise FormatError(self.path, f"{self.label(section_id)}: expected {expected} bytes for {what}, "
                                         f"found {size}")
        return offset, size

    def read_bytes(self, section_id: int) -> bytes:
        offset, size = self.require(section_id)
        return _pread_exact(self.path, offset, size)

    def cursor(self, section_id: int) -> "SectionCursor":
        return SectionCursor(self.path, self.label(section_id), self.read_bytes(section_id))


def read_layout(path: str | os.PathLike, magic: str, versions: tuple[int, ...] | int,
                section_names: dict[int, str] | None = None) -> BinFile:
    """Scan a sections container; raise ``FormatError`` unless it is whole and well formed."""
    path = os.fspath(path)
    if isinstance(versions, int):
        versions = (versions,)
    try:
        with open(path, "rb", buffering=0) as fh:
            file_size = os.fstat(fh.fileno()).st_size
            head = fh.read(FILE_HEADER.size)
            if len(head) < FILE_HEADER.size:
                raise FormatError(path, f"truncated: {file_size} bytes, a {magic} file starts with a "
                                        f"{FILE_HEADER.size}-byte header (magic, version, section count)")
            found_magic, version, n_sections = FILE_HEADER.unpack(head)
            if found_magic != magic.encode():
                raise FormatError(path, f"not a {magic} file: expected magic {magic.encode()!r}, "
                                        f"found {found_magic!r}")
            if version not in versions:
                want = " or ".join(str(v) for v in versions)
                raise FormatError(path, f"unsupported {magic} version: expected {want}, found {version}")
            sections: dict[int, tuple[int, int]] = {}
            pos = FILE_HEADER.size
            for index in range(n_sections):
                raw = os.pread(fh.fileno(), SECTION_HEADER.size, pos)
                if len(raw) < SECTION_HEADER.size:
                    raise FormatError(path, f"truncated: header of section {index + 1} of {n_sections} "
                                            f"at offset {pos} is cut off (file is {file_size} bytes)")
                section_id, size = SECTION_HEADER.unpack(raw)
                data_offset = pos + SECTION_HEADER.size
                if data_offset + size > file_size:
                    name = (section_names or {}).get(section_id)
                    label = f"section {section_id} ({name})" if name else f"section {section_id}"
                    raise FormatError(path, f"truncated: {label} at offset {data_offset} claims {size} bytes "
                                            f"but only {file_size - data_offset} remain")
                if section_id in sections:
                    raise FormatError(path, f"section {section_id} appears twice (data at offsets "
                                            f"{sections[section_id][0]} and {data_offset})")
                sections[section_id] = (data_offset, size)
                pos = data_offset + size
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    if pos != file_size:
        raise FormatError(path, f"{file_size - pos} unexpected bytes after the last of {n_sections} sections "
                                f"(sections end at offset {pos})")
    return BinFile(path, magic, version, file_size, sections, dict(section_names or {}))


def _pread_exact(path: str, offset: int, size: int) -> bytes:
    try:
        with open(path, "rb", buffering=0) as fh:
            data = os.pread(fh.fileno(), size, offset)
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) != size:
        raise FormatError(path, f"file changed while reading: wanted {size} bytes at offset {offset}, "
                                f"got {len(data)}")
    return data


READ_CHUNK_BYTES = 32 << 20  # one worker's share of a big read; page-cache copies scale with threads
ROWS_PER_TASK = 1 << 18  # rows per worker task for vectorized checks and copies
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_submit_locks: dict[str, threading.Lock] = {}  # per pool: one caller's tasks queued together (over_chunks)


def worker_pool(name: str = "formats") -> ThreadPoolExecutor:
    """Threads for big reads and numpy passes (both release the GIL), one pool per ``name``, made
    on first use. A pool's tasks run in the order they were queued, so work that must not wait
    behind another's takes a pool of its own: a streamed pass's host split, queued under the GPU
    lock, behind prep_msm's witness scans of the next partitions (backends/placement.py)."""
    with _pools_lock:
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1),
                                                     thread_name_prefix=f"zkpipe-{name}")
            _submit_locks[name] = threading.Lock()
        return pool


def _forget_pools_after_fork() -> None:
    global _pools_lock
    _pools.clear()  # a forked child has none of the parent's threads: make fresh pools on demand
    _submit_locks.clear()
    _pools_lock = threading.Lock()  # and the lock may have been held by a parent's thread


os.register_at_fork(after_in_child=_forget_pools_after_fork)


def chunk_bounds(total: int, chunk: int) -> list[tuple[int, int]]:
    """[start, stop) of the pieces of ``chunk`` that cover [0, total)."""
    return [(a, min(a + chunk, total)) for a in range(0, total, chunk)]


def over_chunks(total: int, chunk: int, task: Callable[[int, int], T], pool: str = "formats") -> list[T]:
    """``task(start, stop)`` over [0, total) in pieces of ``chunk``, on the worker pool named
    ``pool`` when there is more than one piece; results in order, the first exception re-raised
    (the pieces not yet started are then cancelled).

    A call's pieces are queued together, so two calls at once run one after the other, not side by
    side: two witness scans started together (a job's first two partitions in prep_msm) had their
    pieces interleaved and both ended at about twice one scan's time, which held the first GPU
    stage back (a 2^26 seed stream's first partition: 0.64 s against 0.28 s alone, bench/NOTES.md
    session 32)."""
    bounds = chunk_bounds(total, chunk)
    if len(bounds) <= 1:
        return [task(a, b) for a, b in bounds]
    executor = worker_pool(pool)
    with _submit_locks[pool]:  # held while queueing only, never while waiting: a task may queue pieces too
        futures = [executor.submit(task, a, b) for a, b in bounds]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        raise


def read_array(binfile: BinFile, section_id: int, start: int, dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Read ``shape`` items of ``dtype`` from ``start`` bytes into a section, into a fresh aligned array.

    ``preadv`` straight into the array's memory (the bytes are touched once), in 32 MiB pieces
    on the worker pool for big arrays.
    """
    nbytes = np.dtype(dtype).itemsize * math.prod(shape)
    offset, size = binfile.require(section_id)
    if start + nbytes > size:
        raise FormatError(binfile.path, f"{binfile.label(section_id)}: expected at least {start + nbytes} "
                                        f"bytes, found {size}")
    out = np.empty(shape, dtype=dtype)  # only now: the file really holds these bytes
    if nbytes == 0:
        return out
    view = memoryview(out.reshape(-1).view(np.uint8))
    try:
        with open(binfile.path, "rb", buffering=0) as fh:
            fd = fh.fileno()

            def fill(a: int, b: int) -> bool:
                while a < b:
                    got = os.preadv(fd, [view[a:b]], offset + start + a)
                    if got <= 0:
                        return False
                    a += got
                return True

            if not all(over_chunks(nbytes, READ_CHUNK_BYTES, fill)):
                raise FormatError(binfile.path, f"file changed while reading {binfile.label(section_id)}")
    except OSError as exc:
        raise FormatError(binfile.path, f"cannot read: {exc.strerror or exc}") from exc
    return out


class SectionCursor:
    """Bounds-checked little-endian reads over one section's bytes (headers, small sections)."""

    def __init__(self, path: str, label: str, data: bytes) -> None:
        self.path = path
        self.label = label
        self.data = data
        self.pos = 0

    def _take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise FormatError(self.path, f"{self.label}: too short: {what} needs {n} bytes at offset "
                                         f"{self.pos}, section is {len(self.data)} bytes")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u32(self, what: str) -> int:
        return int.from_bytes(self._take(4, what), "little")

    def u64(self, what: str) -> int:
        return int.from_bytes(self._take(8, what), "little")

    def bigint(self, n_bytes: int, what: str) -> int:
        return int.from_bytes(self._take(n_bytes, what), "little")

    def raw(self, n_bytes: int, what: str) -> bytes:
        return self._take(n_bytes, what)

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def expect_end(self, what: str) -> None:
        if self.pos != len(self.data):
            raise FormatError(self.path, f"{self.label}: expected {self.pos} bytes ({what}), "
                                         f"found {len(self.data)}")

    def fail(self, message: str) -> FormatError:
        return FormatError(self.path, f"{self.label}: {message}")


def first_not_below(values: np.ndarray, modulus: int) -> int | None:
    """Index of the first row of ``values`` ((n, limbs) uint64, little-endian) that is >= modulus.

    Vectorized: a block whose top limbs all lie below the modulus's top limb is below it (one
    maximum: the common case); other blocks get a lexicographic compare from the top limb
    down. Blocks on the worker pool.
    """
    limbs = values.shape[-1]
    if values.shape[0] == 0 or modulus >= 1 << (64 * limbs):
        return None
    mod_limbs = [np.uint64((modulus >> (64 * i)) & 0xFFFFFFFFFFFFFFFF) for i in range(limbs)]

    def first_bad(a: int, b: int) -> int | None:
        rows = values[a:b]
        if rows[:, -1].max() < mod_limbs[-1]:
            return None
        below = np.zeros(b - a, dtype=bool)
        equal = np.ones(b - a, dtype=bool)
        for i in reversed(range(limbs)):
            column = rows[:, i]
            below |= equal & (column < mod_limbs[i])
            equal &= column == mod_limbs[i]
        return None if below.all() else a + int(np.argmin(below))

    return next((i for i in over_chunks(values.shape[0], ROWS_PER_TASK, first_bad) if i is not None), None)


def check_power_of_two(path: str, label: str, value: int, what: str) -> None:
    if value <= 0 or value & (value - 1):
        raise FormatError(path, f"{label}: {what} must be a power of two, found {value}")

"""Checksums of big byte ranges at disk speed: xxh3-128 of 64 MiB blocks on the worker threads,
then of the blocks' digests (a two-level tree, so a block's place and the total size count).

xxh3 is not a cryptographic hash. It guards against stale and damaged caches, not against an
attacker: whoever can write the key file or the cache folder can make wrong proofs anyway. At
~10 GB/s per core (GIL released) it costs far less than reading the bytes; BLAKE2b would cost
~0.5 GB/s per core, more than the rest of preparing a key.
"""
from __future__ import annotations

import os
import threading

import numpy as np
import xxhash

from ..formats.binfile import over_chunks
from ..formats.zkey import ZkeyHeader

BLOCK_BYTES = 64 << 20  # one task's share; also the tree's leaf size (fixed: digests depend on it)
_buffers = threading.local()


def tree_digest(size: int, leaves: list[bytes]) -> str:
    """The digest of ``size`` bytes from the digests of their BLOCK_BYTES blocks, in order."""
    h = xxhash.xxh3_128(size.to_bytes(8, "little"))
    for leaf in leaves:
        h.update(leaf)
    return h.hexdigest()


def digest_array(data: np.ndarray) -> str:
    """The digest of a contiguous array's bytes (the same as ``digest_file_range`` of a file holding them)."""
    flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    leaves = over_chunks(flat.shape[0], BLOCK_BYTES, lambda a, b: xxhash.xxh3_128_digest(flat[a:b]))
    return tree_digest(flat.shape[0], leaves)


def digest_file_range(path: str | os.PathLike, offset: int, size: int) -> str:
    """The digest of ``size`` bytes of a file from ``offset``, read in blocks on the worker threads
    (``OSError`` if the file is shorter)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        def leaf(a: int, b: int) -> bytes:
            view = scratch(b - a)
            done = 0
            while done < b - a:
                got = os.preadv(fd, [view[done:]], offset + a + done)
                if got <= 0:
                    raise OSError(f"{path}: ends before byte {offset + a + done} (expected {offset + size})")
                done += got
            return xxhash.xxh3_128_digest(view)

        return tree_digest(size, over_chunks(size, BLOCK_BYTES, leaf))
    finally:
        os.close(fd)


def scratch(nbytes: int) -> memoryview:
    """This thread's block buffer (kept: a fresh 64 MiB each time would cost page faults), cut to ``nbytes``."""
    buf = getattr(_buffers, "buf", None)
    if buf is None or len(buf) < nbytes:
        buf = _buffers.buf = bytearray(max(nbytes, BLOCK_BYTES))
    return memoryview(buf)[:nbytes]


def zkey_content_digest(header: ZkeyHeader, section4: np.ndarray | None = None) -> str:
    """What a prepared key is computed from: sections 1-3 (header, vk) and 4 (coefficients), all of
    their bytes. ``section4``: that section's bytes when the caller has read them already.
    The point sections are not in it: the cache never copies them (they are mapped from the key)."""
    bf = header.binfile
    parts = [digest_array(np.frombuffer(bf.read_bytes(section_id), dtype=np.uint8)) for section_id in (1, 2, 3)]
    offset, size = bf.require(4)
    parts.append(digest_array(section4) if section4 is not None else digest_file_range(bf.path, offset, size))
    return xxhash.xxh3_128_hexdigest(" ".join(parts).encode())

"""``prepare_key``: a zkey ready for the backends, from its cache folder when that is valid, else
prepared now (and cached for the next start).

Where: ``<cache_dir>/<key file name>.<hash of its path>/``; ``cache_dir`` defaults to a
``.zkpipe-keycache`` folder beside the key, and when that cannot be written the key is read the
plain way (logged once per folder). Valid: made by this zkpipe version and cache format, from a
key whose sections 1-4 have the content digest recorded (checksum.py: every byte of them,
re-read at each start, so an edit is seen whatever the file's size or times say), every array
whole and matching its digest.

Concurrent starts: a lock file beside the folder (``flock``), shared while a cache is checked and
opened, exclusive while one is built. The builder writes a temporary folder and renames it into
place, so a reader sees the old cache or the whole new one; a second builder waits for the first,
then finds its cache valid and opens it.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import xxhash

from .. import progress
from ..formats.binfile import read_array
from ..formats.coeff_table import coefficient_table
from ..formats.types import CsrMatrix, Groth16Zkey
from ..formats.zkey import read_coefficients, read_points, read_vk_points, read_zkey, read_zkey_header, zkey_from_parts
from .checksum import zkey_content_digest
from .csr import coefficient_order, gather, split_row_ptr
from .folder import MANIFEST, CacheInvalid, open_folder, write_folder

log = logging.getLogger("zkpipe.keycache")
DEFAULT_DIR_NAME = ".zkpipe-keycache"
_unwritable_logged: set[str] = set()


@dataclass(frozen=True)
class KeyCacheSettings:
    enabled: bool = True
    cache_dir: str | None = None  # None: a .zkpipe-keycache folder beside each key


@dataclass(frozen=True, eq=False)
class PreparedKey:
    zkey: Groth16Zkey
    source: str  # "cache": opened from a valid cache; "built": prepared now and cached; "uncached": read, no cache
    seconds: float
    key_bytes: int  # the zkey file's size
    cache_folder: str | None
    reason: str = ""  # why the cache was built, or not used

    def summary(self) -> dict:
        """For status pages: where the key came from and how long that took."""
        return {"source": self.source, "seconds": round(self.seconds, 3), "key_bytes": self.key_bytes,
                "cache_folder": self.cache_folder, "reason": self.reason}


def cache_folder(zkey_path: str | os.PathLike, settings: KeyCacheSettings) -> Path | None:
    """The key's cache folder (its parent made if needed), or None: off, or not writable."""
    if not settings.enabled:
        return None
    path = Path(zkey_path).resolve()
    root = Path(settings.cache_dir).expanduser() if settings.cache_dir else path.parent / DEFAULT_DIR_NAME
    try:
        root.mkdir(parents=True, exist_ok=True)
        writable = os.access(root, os.W_OK | os.X_OK)
    except OSError:
        writable = False
    if not writable:
        if str(root) not in _unwritable_logged:
            _unwritable_logged.add(str(root))
            log.warning("key cache: cannot write %s; keys there are read without a cache", root)
        return None
    return root / f"{path.name}.{xxhash.xxh3_64_hexdigest(str(path).encode())}"


def prepare_key(zkey_path: str | os.PathLike, settings: KeyCacheSettings = KeyCacheSettings()) -> PreparedKey:
    """The key with its CSR and the table of its values (``coeff_table``), mapped from its cache
    folder or prepared now (see the module docstring).
    Raises ``FormatError`` for a bad key; a cache that cannot be written only costs the caching."""
    t0 = time.perf_counter()
    zkey_path = os.fspath(zkey_path)
    folder = cache_folder(zkey_path, settings)
    if folder is None:
        why = "the cache is off" if not settings.enabled else "the cache folder is not writable"
        return _done(read_zkey(zkey_path), "uncached", t0, None, why)
    with progress.bar(f"preparing {Path(zkey_path).name}", total=4, unit="step") as bar:
        header = read_zkey_header(zkey_path)
        bar.update()
        opened, source, reason = _open_or_build(folder, header, bar)
        bar.update(bar.total - bar.n)
    if opened is None:  # the cache could not be written: the key as read, CSR built at load
        return _done(read_zkey(zkey_path), "uncached", t0, None, reason)
    vk, ic = read_vk_points(header)
    zkey = zkey_from_parts(header, vk, ic, opened.coefficients, read_points(header, map_points=True), opened.csr,
                           coeff_table=opened.coeff_table, coeff_table_prepared=True)
    return _done(zkey, source, t0, str(folder), reason)


def prepare_in_memory(zkey: Groth16Zkey) -> Groth16Zkey:
    """The key as its cache would hold it, made in memory: for keys that have no file to cache
    beside (a development key made on the GPU), so that every later load (a bench's rows, an
    engine's reloads) takes the CSR and the coefficient table instead of recomputing them. As in
    the cache, the coefficients are put in CSR order and the CSR's columns and values are slices
    of them: no second copy (a 2^26 key's is ~11 GB)."""
    if zkey.csr is not None and zkey.coeff_table_prepared:
        return zkey
    order, row_ptr = coefficient_order(zkey.coeff_matrix, zkey.coeff_constraint, zkey.domain_size)
    matrix, constraint, signal, values = (gather(a, order) for a in (zkey.coeff_matrix, zkey.coeff_constraint,
                                                                        zkey.coeff_signal, zkey.coeff_values_stored))
    del order
    ptr_a, ptr_b = split_row_ptr(row_ptr, zkey.domain_size)
    n_a = int(ptr_a[-1])
    a, b = CsrMatrix(ptr_a, signal[:n_a], values[:n_a]), CsrMatrix(ptr_b, signal[n_a:], values[n_a:])
    return replace(zkey, coeff_matrix=matrix, coeff_constraint=constraint, coeff_signal=signal,
                   coeff_values_stored=values, csr=(a, b), coeff_table=coefficient_table([a.vals, b.vals]),
                   coeff_table_prepared=True)


def _open_or_build(folder: Path, header, bar):
    """(opened or None, source, reason): the valid cache, else one built now under the exclusive lock."""
    lock = folder.with_name(folder.name + ".lock")
    bar.set_postfix_str("checking the cache")
    with _locked(lock, exclusive=False):
        opened, reason, content = _try_open(folder, header, None)
    if opened is not None:
        return opened, "cache", ""
    with _locked(lock, exclusive=True):
        opened, reason, content = _try_open(folder, header, content)  # another process may have built it meanwhile
        if opened is not None:
            return opened, "cache", ""
        log.info("key cache %s: %s; preparing the key", folder, reason)
        built = _build(folder, header, bar)
    if built is None:
        return None, "uncached", "writing the cache failed"
    return built, "built", reason


def _done(zkey: Groth16Zkey, source: str, t0: float, folder: str | None, reason: str) -> PreparedKey:
    prepared = PreparedKey(zkey, source, time.perf_counter() - t0, os.path.getsize(zkey.path), folder, reason)
    what = {"cache": "opened its cache", "built": "prepared and cached", "uncached": "read (no cache)"}[source]
    mapped = "; its points are mapped, read when uploaded" if source != "uncached" else ""
    why = f"; {reason}" if source != "cache" and reason else ""
    log.info("key %s: %s in %.2f s (%.2f GB, %.2f GB/s of key bytes%s)%s", zkey.path, what, prepared.seconds,
             prepared.key_bytes / 1e9, prepared.key_bytes / 1e9 / max(prepared.seconds, 1e-9), mapped, why)
    return prepared


def _try_open(folder: Path, header, content: str | None):
    """(opened or None, why not, the key's content digest if it was computed)."""
    if not (folder / MANIFEST).exists():
        return None, "no cache yet", content
    content = content or zkey_content_digest(header)
    try:
        return open_folder(folder, header, content), "", content
    except CacheInvalid as exc:
        return None, str(exc), content


def _build(folder: Path, header, bar):
    """Prepare the key into a fresh folder and swap it in; what ``open_folder`` gives, or None
    when the cache could not be written (logged)."""
    bf = header.binfile
    _, size = bf.require(4)
    bar.set_postfix_str("reading the coefficients")
    raw = read_array(bf, 4, 0, np.uint8, (size,))  # read once: hashed, then parsed
    content = zkey_content_digest(header, raw)
    coefficients = read_coefficients(header, raw)
    del raw
    bar.set_postfix_str("sorting A and B by row")
    order, row_ptr = coefficient_order(coefficients[0], coefficients[1], header.domain_size)
    bar.update()
    bar.set_postfix_str("writing the cache")
    for stale in folder.parent.glob(f".{folder.name}.*"):  # dead builders' leftovers (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        tmp.mkdir()
        write_folder(tmp, header, content, coefficients, order, row_ptr)
        bar.update()
        del coefficients, order
        _swap_in(tmp, folder)
    except OSError as exc:
        log.warning("key cache %s: cannot write it (%s); the key is used without a cache", folder, exc)
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return open_folder(folder, header, content, verify=False)  # just written from memory


def _swap_in(tmp: Path, folder: Path) -> None:
    stale = None
    if folder.exists():
        stale = folder.with_name(f".{folder.name}.stale-{secrets.token_hex(4)}")
        os.rename(folder, stale)  # readers that mapped its files keep them (unlinked files live on)
    os.rename(tmp, folder)
    if stale is not None:
        shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path, exclusive: bool):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock

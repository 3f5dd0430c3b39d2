"""prepare_key: a cached key is bit for bit the key a fresh parse and CSR build give; a cache
that is stale, foreign or damaged is rebuilt (with a log line), never used; concurrent builders
leave one whole cache."""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import pipeline
from pipeline.curves import curve_by_name
from pipeline.formats.coeff_table import coefficient_table
from pipeline.formats.errors import FormatError
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_random_zkey
from pipeline.keycache import KeyCacheSettings, csr_matrices, prepare_key
from pipeline.keycache import folder as folder_module
from pipeline.keycache import prepare as prepare_module
from pipeline.keycache.csr import coefficient_order
from tests.conftest import fixture_dir
from tests.formats.conftest import patch_sections, section

POINTS = ("a", "b1", "b2", "c", "h")
COEFFICIENTS = ("coeff_matrix", "coeff_constraint", "coeff_signal", "coeff_values_stored")
VK = ("n_vars", "n_public", "domain_size", "alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2", "ic")


def assert_same_key(prepared, path) -> None:
    """``prepared`` holds exactly what a fresh parse + CSR build of ``path`` gives (coefficients in CSR order)."""
    fresh = read_zkey(path)
    assert prepared.curve is fresh.curve
    for name in VK:
        assert getattr(prepared, name) == getattr(fresh, name), name
    for name in POINTS:
        assert np.array_equal(getattr(prepared, f"points_{name}"), getattr(fresh, f"points_{name}")), name
    order, _ = coefficient_order(fresh.coeff_matrix, fresh.coeff_constraint, fresh.domain_size)
    for name in COEFFICIENTS:
        got = getattr(prepared, name)
        assert got.dtype == getattr(fresh, name).dtype and np.array_equal(got, getattr(fresh, name)[order]), name
    for got, want in zip(prepared.csr, csr_matrices(fresh)):
        for field in ("row_ptr", "cols", "vals"):
            assert getattr(got, field).dtype == getattr(want, field).dtype
            assert np.array_equal(getattr(got, field), getattr(want, field)), field
    assert_table_of_csr(prepared)


def assert_table_of_csr(zkey) -> None:
    """``zkey`` carries the prepared coefficient table of its CSR values: the distinct values a
    table found on them has (its rows may come in another order: the cache finds them in file
    order), with each value's uint16 index pointing at its own value."""
    assert zkey.coeff_table_prepared
    a, b = zkey.csr
    want, got = coefficient_table([a.vals, b.vals]), zkey.coeff_table
    assert (got is None) == (want is None)
    if got is None:
        return
    assert got.table.dtype == np.uint64 and got.table.shape == want.table.shape
    assert np.array_equal(np.unique(got.table, axis=0), np.unique(want.table, axis=0))  # the same distinct rows
    for m, index in zip((a, b), got.indices, strict=True):
        assert index.dtype == np.uint16 and index.shape == (m.vals.shape[0],)
        assert np.array_equal(got.table[index], m.vals)


@pytest.fixture
def key_copy(tmp_path):
    """A fixture key copied into tmp_path (its cache goes beside it)."""
    def copy(curve_name: str = "bn128", circuit: str = "chain_2e8") -> Path:
        dst = tmp_path / f"{curve_name}_{circuit}.zkey"
        shutil.copyfile(fixture_dir(curve_name, circuit) / "circuit_final.zkey", dst)
        return dst
    return copy


def random_key(tmp_path: Path, curve_name: str, log_n: int = 12, seed: int = 1) -> Path:
    path = tmp_path / f"random_{curve_name}_{log_n}.zkey"
    write_random_zkey(path, curve_by_name(curve_name), n_vars=(1 << log_n) - 5, domain_size=1 << log_n, n_public=2,
                      seed=seed)
    return path


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
@pytest.mark.parametrize("circuit", ["multiplier", "poseidon2", "chain_2e10"])
def test_cached_fixture_key_is_the_fresh_parse_bit_for_bit(key_copy, curve_name, circuit):
    path = key_copy(curve_name, circuit)
    built = prepare_key(path)
    assert built.source == "built" and built.reason == "no cache yet"
    assert Path(built.cache_folder).parent == path.parent / ".zkpipe-keycache"
    cached = prepare_key(path)
    assert cached.source == "cache" and cached.cache_folder == built.cache_folder
    for prepared in (built, cached):
        assert_same_key(prepared.zkey, path)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_cached_random_key_is_the_fresh_parse_bit_for_bit(tmp_path, curve_name):
    path = random_key(tmp_path, curve_name)  # coefficients in random order: the general sort
    settings = KeyCacheSettings(cache_dir=str(tmp_path / "elsewhere"))
    assert prepare_key(path, settings).source == "built"
    cached = prepare_key(path, settings)
    assert cached.source == "cache" and Path(cached.cache_folder).parent == tmp_path / "elsewhere"
    assert_same_key(cached.zkey, path)
    assert isinstance(cached.zkey.points_b2, np.memmap)  # mapped from the key file, not copied


def test_cached_arrays_are_read_only_maps(key_copy):
    path = key_copy()
    prepare_key(path)
    zkey = prepare_key(path).zkey
    for arr in (zkey.coeff_values_stored, zkey.csr[0].row_ptr, zkey.points_a):
        assert isinstance(arr, np.memmap) and not arr.flags.writeable


def _rebuilt_because(caplog, path, settings=KeyCacheSettings()) -> str:
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="zkpipe.keycache"):
        prepared = prepare_key(path, settings)
    assert prepared.source == "built"
    assert any(prepared.reason in r.getMessage() and "preparing the key" in r.getMessage() for r in caplog.records)
    assert_same_key(prepared.zkey, path)
    return prepared.reason


def test_changed_coefficients_rebuild_the_cache(key_copy, caplog):
    path = key_copy()
    prepare_key(path)
    data = path.read_bytes()
    coefficients = bytearray(section(data, 4))
    coefficients[-32] ^= 0x01  # the last value's lowest bit: still below r, same size, same everything else
    path.write_bytes(patch_sections(data, {4: bytes(coefficients)}))
    assert "coefficients changed" in _rebuilt_because(caplog, path)
    assert prepare_key(path).source == "cache"


def test_changed_vk_rebuilds_the_cache(key_copy, caplog):
    path = key_copy()
    prepare_key(path)
    data = path.read_bytes()
    header = bytearray(section(data, 2))
    n8q = int.from_bytes(header[:4], "little")
    alpha = 4 + n8q + 4 + 32 + 12  # n8q, q, n8r, r, nVars nPublic domainSize
    g1 = 2 * n8q
    alpha1, beta1 = header[alpha : alpha + g1], header[alpha + g1 : alpha + 2 * g1]
    header[alpha : alpha + 2 * g1] = beta1 + alpha1  # swapped: both valid points, another key
    path.write_bytes(patch_sections(data, {2: bytes(header)}))
    assert "changed" in _rebuilt_because(caplog, path)
    assert prepare_key(path).zkey.alpha1 == read_zkey(path).alpha1


def test_changed_points_need_no_rebuild_and_are_seen(key_copy):
    path = key_copy()
    prepare_key(path)
    data = path.read_bytes()
    h = bytearray(section(data, 9))
    h[:8] = bytes(8)  # H[0].x: the points are mapped from the key, never cached
    path.write_bytes(patch_sections(data, {9: bytes(h)}))
    prepared = prepare_key(path)
    assert prepared.source == "cache"
    assert_same_key(prepared.zkey, path)


@pytest.mark.parametrize("change, reason", [
    (lambda m: m.setattr(folder_module, "CACHE_FORMAT", 99), f"cache format {folder_module.CACHE_FORMAT}), this is zkpipe"),
    (lambda m: m.setattr(pipeline, "__version__", "9.9.9"), "this is zkpipe 9.9.9"),
])
def test_a_cache_of_another_version_is_rebuilt(key_copy, caplog, monkeypatch, change, reason):
    path = key_copy()
    prepare_key(path)
    change(monkeypatch)
    assert reason in _rebuilt_because(caplog, path)


@pytest.mark.parametrize("damage, reason", [
    (lambda f: os.truncate(f / "coeff_values.bin", (f / "coeff_values.bin").stat().st_size - 32), "truncated"),
    (lambda f: os.truncate(f / "row_ptr_b.bin", 0), "truncated"),
    (lambda f: (f / "coeff_signal.bin").unlink(), "coeff_signal.bin"),
    (lambda f: _flip_byte(f / "coeff_values.bin"), "checksum"),
    (lambda f: _flip_byte(f / "coeff_index.bin"), "coeff_index.bin does not match its checksum"),
    (lambda f: os.truncate(f / "coeff_index.bin", (f / "coeff_index.bin").stat().st_size - 2), "truncated"),
    (lambda f: _flip_byte(f / "coeff_table.bin"), "coeff_table.bin does not match its checksum"),
    (lambda f: (f / "coeff_table.bin").unlink(), "coeff_table.bin"),
    (lambda f: (f / "manifest.json").write_text("{\"format\": 1, "), "unreadable manifest"),
    (lambda f: (f / "manifest.json").write_text("[]"), "unreadable manifest"),
])
def test_a_damaged_cache_is_rebuilt_never_used(key_copy, caplog, damage, reason):
    path = key_copy()
    folder = Path(prepare_key(path).cache_folder)
    damage(folder)
    assert reason in _rebuilt_because(caplog, path)
    assert prepare_key(path).source == "cache"


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(data)


def test_leftovers_of_a_dead_builder_are_removed(key_copy):
    path = key_copy()
    folder = Path(prepare_key(path).cache_folder)
    leftover = folder.with_name(f".{folder.name}.tmp-1-dead")
    leftover.mkdir()
    (leftover / "coeff_values.bin").write_bytes(b"half")
    shutil.rmtree(folder)
    assert prepare_key(path).source == "built"
    assert not leftover.exists()


def test_cache_off_or_unwritable_reads_the_key_plainly(key_copy, tmp_path, caplog):
    path = key_copy()
    off = prepare_key(path, KeyCacheSettings(enabled=False))
    assert off.source == "uncached" and off.zkey.csr is None and off.reason == "the cache is off"
    assert not (path.parent / ".zkpipe-keycache").exists()
    blocked = tmp_path / "a_file"
    blocked.write_text("")  # a cache dir under a file cannot be made
    with caplog.at_level(logging.WARNING, logger="zkpipe.keycache"):
        unwritable = prepare_key(path, KeyCacheSettings(cache_dir=str(blocked / "cache")))
    assert unwritable.source == "uncached" and "cannot write" in caplog.text
    assert np.array_equal(unwritable.zkey.points_h, read_zkey(path).points_h)


def test_a_bad_key_is_a_format_error_and_leaves_no_cache(key_copy):
    path = key_copy()
    data = path.read_bytes()
    path.write_bytes(patch_sections(data, {4: section(data, 4)[:-1]}))
    with pytest.raises(FormatError, match="section 4"):
        prepare_key(path)
    folder = prepare_module.cache_folder(path, KeyCacheSettings())
    assert not folder.exists() and not list(folder.parent.glob(f".{folder.name}.*"))


def test_concurrent_builders_in_threads_one_builds_the_other_opens_its_cache(key_copy, monkeypatch):
    path = key_copy()
    real_write, started = folder_module.write_folder, threading.Event()

    def slow_write(*args):
        started.set()
        time.sleep(0.5)  # the other thread arrives while this one holds the lock mid-build
        real_write(*args)

    monkeypatch.setattr(prepare_module, "write_folder", slow_write)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(prepare_key, path)
        started.wait(10)
        second = pool.submit(prepare_key, path)
        results = [first.result(), second.result()]
    assert [r.source for r in results] == ["built", "cache"]
    for r in results:
        assert_same_key(r.zkey, path)


def _prepare_in_child(path: str) -> tuple[str, int]:
    prepared = prepare_key(path)
    return prepared.source, int(np.asarray(prepared.zkey.csr[1].row_ptr)[-1])


def test_concurrent_builders_in_processes_leave_one_whole_cache(tmp_path):
    path = random_key(tmp_path, "bls12381", log_n=14)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_prepare_in_child, [str(path)] * 2))
    assert sorted(source for source, _ in results) == ["built", "cache"]
    want = csr_matrices(read_zkey(path))[1].row_ptr[-1]
    assert all(n_b == want for _, n_b in results)
    assert prepare_key(path).source == "cache"
    folders = list((tmp_path / ".zkpipe-keycache").iterdir())
    assert sorted(f.name.endswith(".lock") for f in folders) == [False, True]  # one folder, its lock, no leftovers


def test_a_cache_that_cannot_be_written_costs_only_the_caching(key_copy, monkeypatch, caplog):
    path = key_copy()

    def disk_full(folder, *args):
        (folder / "coeff_values.bin").write_bytes(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(prepare_module, "write_folder", disk_full)
    with caplog.at_level(logging.WARNING, logger="zkpipe.keycache"):
        prepared = prepare_key(path)
    assert prepared.source == "uncached" and prepared.reason == "writing the cache failed"
    assert "No space left on device" in caplog.text
    assert np.array_equal(csr_matrices(prepared.zkey)[0].vals, csr_matrices(read_zkey(path))[0].vals)
    root = path.parent / ".zkpipe-keycache"
    assert sorted(p.suffix for p in root.iterdir()) == [".lock"]  # no folder, no temp left behind

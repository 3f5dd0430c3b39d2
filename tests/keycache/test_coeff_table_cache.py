"""The coefficient table in the prepared-key cache: a prepared key carries the table of its CSR
values (found once, when the cache is built, then mapped at each start), or a recorded "none"
when the key has more than 2^16 distinct values; a cache of format 1 (no table) is rebuilt.
(Damaged table files: test_prepare.py's damaged-cache cases; the backend's use of it:
tests/backends/cuda/test_coefficient_table_key.py.)"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from pipeline.formats.coeff_table import MAX_TABLE
from pipeline.formats.zkey import read_coefficients, read_points, read_vk_points, read_zkey_header, zkey_from_parts
from pipeline.keycache import KeyCacheSettings, prepare_key
from pipeline.keycache import folder as folder_module
from tests.conftest import fixture_dir
from tests.keycache.test_prepare import assert_same_key, assert_table_of_csr, random_key


def _manifest(prepared) -> dict:
    return json.loads((Path(prepared.cache_folder) / folder_module.MANIFEST).read_text())


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
@pytest.mark.parametrize("key", ["chain_2e10", "random"])
def test_a_prepared_key_carries_the_table_of_its_csr_built_and_from_the_cache(tmp_path, curve_name, key):
    path = random_key(tmp_path, curve_name) if key == "random" else fixture_dir(curve_name, key) / "circuit_final.zkey"
    settings = KeyCacheSettings(cache_dir=str(tmp_path / "cache"))
    built = prepare_key(path, settings)
    cached = prepare_key(path, settings)
    assert (built.source, cached.source) == ("built", "cache")
    for prepared in (built, cached):
        assert_table_of_csr(prepared.zkey)
    table = cached.zkey.coeff_table
    assert np.array_equal(table.table, built.zkey.coeff_table.table)
    assert all(np.array_equal(i, j) for i, j in zip(table.indices, built.zkey.coeff_table.indices, strict=True))
    assert isinstance(table.table, np.memmap) and isinstance(table.indices[0], np.memmap)  # mapped, not recomputed
    assert not table.indices[1].flags.writeable
    assert _manifest(cached)["coeff_table"] == {"distinct_values": table.table.shape[0]}
    n_a = cached.zkey.csr[0].vals.shape[0]
    assert table.indices[0].shape == (n_a,) and table.indices[1].shape == (len(cached.zkey.coeff_signal) - n_a,)


def test_a_random_keys_table_is_found_in_file_order_still_exact(tmp_path):
    """Random keys list their values in another order than the CSR's: the cached table's rows
    come in file order, and every index still points at its own value (assert_table_of_csr)."""
    prepared = prepare_key(random_key(tmp_path, "bn128", log_n=15))  # 65530 distinct values: just below 2^16
    assert prepared.zkey.coeff_table.table.shape[0] == 65530 <= MAX_TABLE
    assert_table_of_csr(prepared.zkey)


def test_a_key_with_too_many_values_records_none(tmp_path):
    path = random_key(tmp_path, "bls12381", log_n=16)  # ~2^17 random values
    built = prepare_key(path)
    cached = prepare_key(path)
    assert (built.source, cached.source) == ("built", "cache")
    for prepared in (built, cached):
        assert prepared.zkey.coeff_table_prepared and prepared.zkey.coeff_table is None
    manifest = _manifest(cached)
    assert manifest["coeff_table"] is None and "coeff_index" not in manifest["arrays"]
    folder = Path(cached.cache_folder)
    assert not (folder / "coeff_table.bin").exists() and not (folder / "coeff_index.bin").exists()


def test_a_format_1_cache_is_rebuilt_with_its_table(tmp_path, caplog):
    path = fixture_dir("bn128", "chain_2e10") / "circuit_final.zkey"
    settings = KeyCacheSettings(cache_dir=str(tmp_path))
    folder = Path(prepare_key(path, settings).cache_folder)
    # what format 1 wrote: the same arrays, no table
    manifest = json.loads((folder / folder_module.MANIFEST).read_text())
    manifest["format"] = 1
    del manifest["coeff_table"]
    for name in ("coeff_table", "coeff_index"):
        del manifest["arrays"][name]
        (folder / f"{name}.bin").unlink()
    (folder / folder_module.MANIFEST).write_text(json.dumps(manifest))
    with caplog.at_level(logging.INFO, logger="zkpipe.keycache"):
        rebuilt = prepare_key(path, settings)
    assert rebuilt.source == "built" and "(cache format 1), this is zkpipe" in rebuilt.reason
    assert_same_key(rebuilt.zkey, path)  # with its table
    assert (folder / "coeff_index.bin").exists() and prepare_key(path, settings).source == "cache"


def test_a_manifest_without_the_table_entry_is_rebuilt(tmp_path):
    path = fixture_dir("bls12381", "chain_2e10") / "circuit_final.zkey"
    settings = KeyCacheSettings(cache_dir=str(tmp_path))
    folder = Path(prepare_key(path, settings).cache_folder)
    manifest = json.loads((folder / folder_module.MANIFEST).read_text())
    del manifest["coeff_table"]
    (folder / folder_module.MANIFEST).write_text(json.dumps(manifest))
    rebuilt = prepare_key(path, settings)
    assert rebuilt.source == "built" and "does not describe the arrays" in rebuilt.reason
    assert_table_of_csr(rebuilt.zkey)


def test_a_plain_key_has_no_prepared_table_and_a_table_needs_the_prepared_csr():
    path = fixture_dir("bn128", "multiplier") / "circuit_final.zkey"
    plain = prepare_key(path, KeyCacheSettings(enabled=False)).zkey
    assert not plain.coeff_table_prepared and plain.coeff_table is None
    header = read_zkey_header(path)
    vk, ic = read_vk_points(header)
    with pytest.raises(ValueError, match="prepared CSR"):
        zkey_from_parts(header, vk, ic, read_coefficients(header), read_points(header), coeff_table_prepared=True)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
@pytest.mark.parametrize("key", ["chain_2e10", "random"])
def test_a_key_prepared_in_memory_is_the_key_its_cache_would_hold(tmp_path, curve, key):
    """A key without a cache (a development key made on the GPU) prepared once in memory: its
    coefficients in CSR order with the CSR's columns and values slices of them (no second copy),
    and the table of its values: what prepare_key opens from a cache, array for array."""
    from pipeline.formats.zkey import read_zkey
    from pipeline.keycache import prepare_in_memory

    path = random_key(tmp_path, curve) if key == "random" else fixture_dir(curve, key) / "circuit_final.zkey"
    prepared = prepare_in_memory(read_zkey(path))
    assert prepared.coeff_table_prepared and prepare_in_memory(prepared) is prepared
    cached = prepare_key(path, KeyCacheSettings(cache_dir=str(tmp_path / "cache"))).zkey
    for name in ("coeff_matrix", "coeff_constraint", "coeff_signal", "coeff_values_stored"):
        assert np.array_equal(getattr(prepared, name), getattr(cached, name)), name
    for mine, theirs in zip(prepared.csr, cached.csr):
        for field in ("row_ptr", "cols", "vals"):
            assert np.array_equal(getattr(mine, field), getattr(theirs, field)), field
    assert np.shares_memory(prepared.csr[1].vals, prepared.coeff_values_stored)
    assert_table_of_csr(prepared)

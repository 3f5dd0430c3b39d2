"""The CUDA backend's coefficient table of a key (CudaBackend.coefficient_table and the key bytes it
changes), without a GPU: the methods run on a stand-in holding the backend's attributes. Off by
default; on, computed once per key object, exact, and the key's device bytes shrink by what the
32-byte values gave up; a key prepared through the key cache brings its table (or its "none"),
taken as it is."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda import backend as backend_module
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.options import CudaOptions
from pipeline.backends.cuda.spmv_long import long_rows, long_rows_bytes_bound
from pipeline.curves import curve_by_name
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_random_zkey
from pipeline.keycache import KeyCacheSettings, prepare_key
from pipeline.keycache.csr import csr_matrices
from tests.conftest import fixture_dir


def stand_in(table_on: bool, long_rows: bool = False) -> SimpleNamespace:
    fake = SimpleNamespace(csr_value_table=table_on, spmv_long_rows=long_rows, _coeff_tables={})
    fake.coefficient_table = lambda zkey: CudaBackend.coefficient_table(fake, zkey)
    fake._csr_device_bytes = lambda zkey: CudaBackend._csr_device_bytes(fake, zkey)
    fake._ntt_table_bytes = CudaBackend._ntt_table_bytes
    return fake


def test_the_option_is_on_by_default():
    assert CudaOptions().csr_value_table is True
    with pytest.raises(ValueError, match="csr_value_table must be true or false"):
        CudaOptions(csr_value_table="yes")


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_keys_table_is_computed_once_exact_and_shrinks_its_device_bytes(curve_name):
    zkey = read_zkey(fixture_dir(curve_name, "chain_2e10") / "circuit_final.zkey")
    off, on = stand_in(False), stand_in(True)
    assert CudaBackend.coefficient_table(off, zkey) is None
    table = CudaBackend.coefficient_table(on, zkey)
    assert CudaBackend.coefficient_table(on, zkey) is table  # once per key object
    a, b = csr_matrices(zkey)
    for m, idx in zip((a, b), table.indices):
        assert np.array_equal(table.table[idx], m.vals)
    full, indexed = CudaBackend.key_device_bytes(off, zkey), CudaBackend.key_device_bytes(on, zkey)
    assert full - indexed == zkey.coeff_values_stored.nbytes - table.nbytes > 0
    # the long rows' lists (CudaOptions.spmv_long_rows) count their bound: every listed row holds 17+ entries
    listed = CudaBackend.key_device_bytes(stand_in(False, long_rows=True), zkey) - full
    assert listed == long_rows_bytes_bound(len(zkey.coeff_signal))
    assert sum(4 * max(len(long_rows(m.row_ptr)), 1) for m in (a, b)) <= listed + 2


@pytest.fixture
def never_computed(monkeypatch):
    """The backend's own way to a table fails the test: a prepared key must not need it."""
    def fail(*_):
        raise AssertionError("the table was computed, not taken from the prepared key")
    monkeypatch.setattr(backend_module, "coefficient_table", fail)
    monkeypatch.setattr(backend_module, "csr_matrices", fail)


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_a_prepared_keys_table_is_taken_not_computed(tmp_path, curve_name, never_computed):
    path = fixture_dir(curve_name, "chain_2e10") / "circuit_final.zkey"
    settings = KeyCacheSettings(cache_dir=str(tmp_path))
    prepare_key(path, settings)
    zkey = prepare_key(path, settings).zkey  # from the cache
    off, on = stand_in(False), stand_in(True)
    assert CudaBackend.coefficient_table(off, zkey) is None
    table = CudaBackend.coefficient_table(on, zkey)
    assert table is zkey.coeff_table and CudaBackend.coefficient_table(on, zkey) is table
    for m, idx in zip(zkey.csr, table.indices, strict=True):
        assert np.array_equal(table.table[idx], m.vals)
    full, indexed = CudaBackend.key_device_bytes(off, zkey), CudaBackend.key_device_bytes(on, zkey)
    assert full - indexed == zkey.coeff_values_stored.nbytes - table.nbytes > 0


def test_a_prepared_none_is_none_without_computing(tmp_path, never_computed):
    path = tmp_path / "many_values.zkey"  # ~2^17 random coefficient values: more than a uint16 index holds
    write_random_zkey(path, curve_by_name("bn128"), n_vars=(1 << 16) - 5, domain_size=1 << 16, n_public=2, seed=3)
    zkey = prepare_key(path).zkey
    assert zkey.coeff_table_prepared and zkey.coeff_table is None
    assert CudaBackend.coefficient_table(stand_in(True), zkey) is None

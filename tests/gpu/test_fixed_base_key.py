"""A resident key's fixed-base tables (backends/cuda/fixed_base.py, CudaOptions.msm_fixed_base): a
partition over tables of any set of sections equals the plain partition and the CPU's, with and without
the 0/1 split, within the scratch ``scratch_bytes`` promised; ``drop_fixed_bases`` gives the plain
points back (same results, the tables' bytes freed); ``place_key`` takes tables only where its room has
them."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cpu.backend import CpuBackend
from pipeline.backends.placement import KeyPlacement
from pipeline.backends.protocol import WitnessShape
from pipeline.backends.cuda.fixed_base import FIXED_BASE_ORDER, TABLE_SETS, table_extra_bytes
from tests.gpu.test_backend import _fixture
from tests.gpu.test_split import _mixed_witness, _run, _same

pytestmark = pytest.mark.gpu

SUBSETS = [("a", "b1", "b2", "c", "h"), ("b2", "h"), ("c",), ("a", "c")]
# Tables of two and three bucket sets (the table holds every S-th window), alone and mixed with one-set ones:
# the witness MSMs over tables of different plans sort their digits once a plan (CudaBackend._enqueue_msms).
SETS = {("a", "b1", "b2", "c", "h"): [(1,) * 5, (2, 1, 2, 1, 3)], ("b2", "h"): [(1, 1), (2, 2)],
        ("c",): [(1,)], ("a", "c"): [(1, 1), (3, 3)]}
CASES = [(fixed, sets) for fixed in SUBSETS for sets in SETS[fixed]]


def _witness(curve, zkey, seed: str):
    # public signals that are 1, 1, 0 and other: C's rows of infinity and its skipped ones meet all three
    prefix = ([1, 1, 0, 5] + [1] * zkey.n_public)[: zkey.n_public + 1]
    witness = _mixed_witness(curve.fr, zkey.n_vars, random.Random(seed), 0.3, 0.4, prefix)
    return witness, WitnessShape.of(witness, zkey.n_public + 1)


def _partition(backend, key, witness, shape, min_bits):
    """The partition's results; the scratch it took stays within ``scratch_bytes`` and all comes back."""
    backend.stream.synchronize()
    resident = backend.allocator.in_use_bytes
    backend.allocator.peak_bytes = resident
    results = _run(backend, key, witness, shape, min_bits)
    backend.stream.synchronize()
    assert backend.allocator.in_use_bytes == resident
    assert backend.allocator.peak_bytes - resident <= backend.scratch_bytes(key)
    return results


@pytest.mark.parametrize("min_bits", [2.0, 0.0], ids=["plain", "split"])
@pytest.mark.parametrize("fixed,sets", CASES, ids=[f"{'-'.join(f)}:{''.join(map(str, s))}" for f, s in CASES])
def test_a_partition_over_tables_equals_the_plain_one(cuda_backend, gpu_curve, fixed, sets, min_bits):
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    witness, shape = _witness(gpu_curve, zkey, f"{fixed} {min_bits}")
    key = cuda_backend.load_key(zkey)
    try:
        plain = _partition(cuda_backend, key, witness, shape, min_bits)
    finally:
        cuda_backend.unload_key(key)
    key = cuda_backend.load_key(zkey, KeyPlacement(fixed_base=fixed, fixed_base_sets=sets))
    try:
        assert sorted(key.tables) == sorted(fixed) and not set(fixed) & set(key.d_points)
        assert {s: t.plan.table_sets for s, t in key.tables.items()} == dict(zip(fixed, sets))
        assert key.tables.get("c") is None or key.tables["c"].lead == zkey.n_public + 1
        tabled = _partition(cuda_backend, key, witness, shape, min_bits)
    finally:
        cuda_backend.unload_key(key)
    _same(gpu_curve, plain, tabled)
    if len(fixed) == len(FIXED_BASE_ORDER) and set(sets) == {1}:
        cpu = CpuBackend()
        cpu_key = cpu.load_key(zkey)
        _same(gpu_curve, tabled, cpu.msms(cpu_key, witness, cpu.compute_h(cpu_key, witness)))


def test_a_key_is_loaded_with_its_tables_built(cuda_backend, gpu_curve):
    """load_key returns with the tables' builds done, not queued ahead of the first partition (the
    engine's preload and its load time end with them)."""
    from pipeline.backends.cuda._bindings import driver

    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    key = cuda_backend.load_key(zkey, KeyPlacement(fixed_base=FIXED_BASE_ORDER, fixed_base_sets=(2,) * 5))
    try:
        (err,) = driver.cuStreamQuery(cuda_backend.stream.handle)
        assert err == driver.CUresult.CUDA_SUCCESS  # nothing of the load still queued on the stream
        assert sorted(key.tables) == sorted(FIXED_BASE_ORDER)
    finally:
        cuda_backend.unload_key(key)


def test_dropped_tables_give_the_plain_points_back(cuda_backend, gpu_curve):
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    witness, shape = _witness(gpu_curve, zkey, "drop")
    msm = cuda_backend.runtime(gpu_curve).msm
    full = cuda_backend.key_device_bytes(zkey)
    extra = sum(table_extra_bytes(msm, zkey, s) for s in FIXED_BASE_ORDER)
    key = cuda_backend.load_key(zkey, KeyPlacement(fixed_base=FIXED_BASE_ORDER, device_bytes=full + extra))
    try:
        before = _partition(cuda_backend, key, witness, shape, 0.0)
        g2_before = cuda_backend.msm_b_g2(key, witness)
        held = cuda_backend.allocator.in_use_bytes
        assert cuda_backend.drop_fixed_bases(key) == extra
        assert key.placement.fixed_base == () and key.placement.device_bytes == full
        assert not key.tables and sorted(key.d_points) == sorted(FIXED_BASE_ORDER)
        assert cuda_backend.allocator.in_use_bytes == held - extra
        after = _partition(cuda_backend, key, witness, shape, 0.0)
        plain_again = _partition(cuda_backend, key, witness, shape, 2.0)
        assert gpu_curve.g2.eq(cuda_backend.msm_b_g2(key, witness), g2_before)
    finally:
        cuda_backend.unload_key(key)
    _same(gpu_curve, before, after)
    _same(gpu_curve, before, plain_again)


def test_place_key_takes_tables_only_where_its_room_has_them(cuda_backend, gpu_curve):
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    msm = cuda_backend.runtime(gpu_curve).msm
    full = cuda_backend.key_device_bytes(zkey)
    saved, cuda_backend.fixed_base = cuda_backend.fixed_base, True
    try:
        everything = cuda_backend.place_key(zkey, None, 1 << 40)
        assert everything.fixed_base == FIXED_BASE_ORDER and everything.mode == "resident"
        assert everything.device_bytes == full + sum(table_extra_bytes(msm, zkey, s) for s in FIXED_BASE_ORDER)
        assert everything.tables == dict.fromkeys(FIXED_BASE_ORDER, 1) and everything.tables_refused == ()
        tighter = cuda_backend.place_key(zkey, 1 << 40, everything.device_bytes - 1)
        assert tighter.fixed_base and tighter.tables != everything.tables  # fewer tables, or one of two sets
        assert tighter.device_bytes < everything.device_bytes
        assert tighter.tables_refused and all(" of " in r and r.endswith("GiB") for r in tighter.tables_refused)
        none = cuda_backend.place_key(zkey, 1 << 40, 0)
        assert none.fixed_base == ()  # every section tried with every count of sets, each named with its need
        assert [r.split(":")[0] for r in none.tables_refused] == [
            f"{s} ({n} set{'s' if n > 1 else ''})" for s in FIXED_BASE_ORDER for n in TABLE_SETS]
        cuda_backend.fixed_base = False
        assert cuda_backend.place_key(zkey, 1 << 40, 1 << 40) == KeyPlacement(device_bytes=full)
    finally:
        cuda_backend.fixed_base = saved


@pytest.mark.parametrize("section", ["c", "b2"])
def test_a_table_built_in_pieces_is_the_table_built_at_once(cuda_backend, gpu_curve, monkeypatch, section):
    """msm.TABLE_BUILD_ROWS: a window's doublings and inversions in pieces (a 2^24 key's tables take four)
    give the bytes of the whole window's, C's rows of infinity included."""
    import numpy as np

    from pipeline.backends.cuda import msm as msm_module
    from pipeline.backends.cuda.fixed_base import table_rows

    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    msm = cuda_backend.runtime(gpu_curve).msm
    lead, n = table_rows(zkey, section)
    key = cuda_backend.load_key(zkey)
    tables = []
    try:
        for rows in (msm_module.TABLE_BUILD_ROWS, 97):
            monkeypatch.setattr(msm_module, "TABLE_BUILD_ROWS", rows)
            table = msm.build_table(section == "b2", key.d_points[section].ptr, n, lead=lead)
            try:
                words = np.zeros(table.d_table.nbytes // 4, dtype=np.uint32)
                tables.append(table.d_table.download(words, cuda_backend.stream))
            finally:
                table.free()
    finally:
        cuda_backend.unload_key(key)
    assert (lead + n) > 97 * 2 and np.array_equal(tables[0], tables[1])
    assert not tables[0][: lead * msm.xyzz_bytes(section == "b2") // 8].any()  # infinity rows: all zero

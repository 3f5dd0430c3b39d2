"""The benchmarks' MSM rows over fixed-base tables (bench.gpu_msm.time_table_msms, which bench.kernels_vs_sppark and
bench.gpu_msm_fixed_base time): one timing a size and kind over the table of the runner's plan, and a table that does not fit the free device memory skipped with the reason. Their results are
checked in test_msm.py (the same enqueue_fixed). And bench.gpu_stage's prefetched-witness rows (stage_once)."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.curves import BLS12_381

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_table_timings_cover_every_size_and_kind_and_skip_a_table_without_room(cuda_backend, monkeypatch, g2):
    from bench.gpu_msm import random_msm_data, time_table_msms

    msm = cuda_backend.runtime(BLS12_381).msm
    points, scalars = random_msm_data(np.random.default_rng(5), BLS12_381, g2, 1 << 11)
    timings = list(time_table_msms(cuda_backend, BLS12_381, g2, [9, 11], points, scalars, lambda _: 2))
    assert [(t.log_n, t.timing.scalars) for t in timings] == [(k, kind) for k in (9, 11) for kind in scalars]
    for t in timings:
        assert t.timing.ms > 0 and t.build_ms > 0 and t.skipped is None
        assert t.timing.plan == msm.plan_fixed(1 << t.log_n)
        assert t.table_gb * 1e9 == msm.table_bytes(g2, 1 << t.log_n)
    monkeypatch.setattr(type(cuda_backend.device), "free_bytes", lambda self: 1 << 20)
    skipped = list(time_table_msms(cuda_backend, BLS12_381, g2, [9], points, scalars, lambda _: 2))
    assert [(t.log_n, t.timing) for t in skipped] == [(9, None)] and skipped[0].skipped.endswith("0.0 GB free")


def test_the_stage_bench_times_a_prefetched_witness_and_the_stage_takes_its_copy(cuda_backend, gpu_curve):
    """bench.gpu_stage --prefetched: stage_once copies the witness ahead and waits for the copy before its clock,
    start_partition takes that copy (nothing stays held: the allocator ends where it started), and with the
    prefetch off it says so rather than time an upload under the prefetched label."""
    import random

    from bench.gpu_stage import stage_once
    from pipeline.backends.protocol import WitnessShape
    from tests.gpu.test_backend import _fixture
    from tests.gpu.test_split import _mixed_witness

    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    witness = _mixed_witness(gpu_curve.fr, zkey.n_vars, random.Random("stage bench"), 0.3, 0.4,
                             [1] + [3] * zkey.n_public)
    shape = WitnessShape.of(witness, zkey.n_public + 1)
    saved = cuda_backend.prefetches_witness
    key = cuda_backend.load_key(zkey)
    try:
        resident = cuda_backend.allocator.in_use_bytes
        cuda_backend.prefetches_witness = True
        timings = stage_once(cuda_backend, key, witness, shape, prefetched=True)
        cuda_backend.stream.synchronize()
        assert timings["total_ms"] > 0
        assert cuda_backend.allocator.in_use_bytes == resident
        cuda_backend.prefetches_witness = False
        with pytest.raises(RuntimeError, match="witness_prefetch is off"):
            stage_once(cuda_backend, key, witness, shape, prefetched=True)
    finally:
        cuda_backend.prefetches_witness = saved
        cuda_backend.unload_key(key)

"""The MSM's window width (msm.plan_msm), computed without a GPU: the cost model's choice where the
per-bucket tables fit the device's L2, the widest width whose tables fit where they would not
(bench/NOTES.md, session 8: 2^26 at c = 22 against c = 20, same call); a runner plans with its
device's L2 and sizes its scratch by the same plan."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda import msm as msm_module
from pipeline.backends.cuda.msm import (ADDITIONS_WINDOW_MODEL, BALANCED_WINDOW_MODEL, MEASURED_WIDTHS, MsmRunner,
                                       measured_width, plan_msm)
from pipeline.curves import BLS12_381, BN254

H200_L2 = 50 << 20


def table_bytes(plan) -> int:
    return 4 * plan.n_buckets


@pytest.mark.parametrize("bits", [BLS12_381.fr.bits, BN254.fr.bits])
@pytest.mark.parametrize("log_n", range(10, 28))
def test_a_cache_only_narrows_windows_whose_tables_would_not_fit(bits, log_n):
    free, cached = plan_msm(1 << log_n, bits), plan_msm(1 << log_n, bits, cache_bytes=H200_L2)
    if table_bytes(free) <= H200_L2:
        assert cached == free
    else:
        assert cached.c < free.c and table_bytes(cached) <= H200_L2
        wider = plan_msm(1 << log_n, bits, c=cached.c + 1)
        assert table_bytes(wider) > H200_L2  # the widest that fits


def test_the_additions_only_model_would_take_c_22_at_the_seed_sizes_and_the_cache_narrows_it_to_20():
    additions = ADDITIONS_WINDOW_MODEL
    for log_n in (26, 27):
        assert plan_msm(1 << log_n, BLS12_381.fr.bits, model=additions).c == 22
        assert plan_msm(1 << log_n, BLS12_381.fr.bits, cache_bytes=H200_L2, model=additions).c == 20
    assert plan_msm(1 << 24, BLS12_381.fr.bits, cache_bytes=H200_L2, model=additions).c == 20  # its tables fit


def test_an_explicit_width_is_kept_and_a_tiny_cache_still_gets_a_plan():
    assert plan_msm(1 << 26, 255, c=22, cache_bytes=H200_L2).c == 22
    assert plan_msm(1 << 20, 255, cache_bytes=1).c >= 2


def test_a_runner_plans_and_sizes_scratch_with_its_devices_l2():
    kernels = SimpleNamespace(curve=BLS12_381, device=SimpleNamespace(l2_bytes=H200_L2))
    msm = MsmRunner(kernels, allocator=None, stream=None)
    bare = MsmRunner(SimpleNamespace(curve=BLS12_381), allocator=None, stream=None)
    assert msm.cache_bytes == H200_L2 and bare.cache_bytes is None
    # the balanced model keeps 2^26 inside L2 by itself: never more buckets with the cache
    assert msm.scratch_bytes(1 << 26, False) <= bare.scratch_bytes(1 << 26, False)
    assert msm.scratch_bytes(1 << 22, False) == bare.scratch_bytes(1 << 22, False)


def test_the_balanced_model_plans_every_msm():
    """The balanced model weighs short buckets (a warp waits for its longest) and the cost of a bucket's
    partial and running sums, fitted to the 2^24 G2 sweep of session 12 (c = 16 fastest of 14..22 on both
    curves; G1 at 2^24 likewise c = 16, 0.84x of c = 20). Session 13's G1 sweep with level 0 flat found its
    choices within 1-3% of the fastest at 2^16-2^24 on both curves: the runner plans G1 and G2 with it."""
    assert plan_msm(1 << 24, BLS12_381.fr.bits, cache_bytes=H200_L2).c == 16
    assert plan_msm(1 << 22, BN254.fr.bits, cache_bytes=H200_L2).c == 15  # the sweep's fastest on BN254
    assert plan_msm(1 << 22, BLS12_381.fr.bits, cache_bytes=H200_L2, model=ADDITIONS_WINDOW_MODEL).c == 18
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381, device=SimpleNamespace(l2_bytes=H200_L2)), None, None)
    assert msm.plan(1 << 24, True).c == 16 and msm.plan(1 << 24, False).c == 16
    assert msm.plan(1 << 26, False).c == 20  # as before: session 8's sweep (19 ~ 20 < 22)
    assert msm.plan(1 << 25, False).c == 17  # MEASURED_WIDTHS (session 36's sweep)
    msm.measured_widths = False  # bench.gpu_stage --model-widths rows: the model's width, scratch sized by it
    assert msm.plan(1 << 25, False).c == 19
    assert msm.scratch_bytes(1 << 25, False) == msm.scratch_bytes(1 << 25, False, c=19)
    msm.measured_widths = True
    bn = MsmRunner(SimpleNamespace(curve=BN254, device=SimpleNamespace(l2_bytes=H200_L2)), None, None)
    # session 19's sweeps: BN254's fastest at 2^26 (245 ms against 265 at c = 17) and 2^20
    assert bn.plan(1 << 26, False).c == 20 and bn.plan(1 << 20, False).c == 15
    scratch_at_20 = bn.scratch_bytes(1 << 26, False)
    bn.window_model = (2.2, 6.5)  # the model before session 19 (bench.gpu_stage --window-model rows)
    # c = 17: 15 windows of digit slots against 13, and the scratch sized by the same plan
    assert bn.plan(1 << 26, False).c == 17 and bn.scratch_bytes(1 << 26, False) > scratch_at_20
    for log_n in range(10, 28):
        for g2 in (False, True):
            assert msm.plan(1 << log_n, g2) == plan_msm(1 << log_n, BLS12_381.fr.bits, cache_bytes=H200_L2,
                                                        model=BALANCED_WINDOW_MODEL)
    assert msm.scratch_bytes(1 << 22, True) != msm.scratch_bytes(1 << 22, False)


@pytest.mark.parametrize("bits", [BLS12_381.fr.bits, BN254.fr.bits])
@pytest.mark.parametrize("log_n", range(12, 27, 2))
def test_windows_sharing_one_bucket_set_plan_wider_and_reduce_one_window(bits, log_n):
    """A fixed-base table (shared_buckets): the bucket cost is paid once, so the width is at least the
    plain one's (session 22's rows: c = 16-20 against 13-17); the counters (one a window and bucket) still
    fit L2, and the reduction's segments are sized for one window."""
    plain = plan_msm(1 << log_n, bits, cache_bytes=H200_L2)
    shared = plan_msm(1 << log_n, bits, cache_bytes=H200_L2, shared_buckets=True)
    assert shared.c >= plain.c and table_bytes(shared) <= H200_L2
    assert shared.n_windows == -(-(bits + 1) // shared.c)
    assert shared.buckets_per_window // shared.seg_len <= (1 << 16) or shared.seg_len == shared.buckets_per_window
    assert plan_msm(1 << 24, bits, cache_bytes=H200_L2, shared_buckets=True).c == 20  # call 3's 2^24 tables


def test_a_fixed_base_plan_sorts_by_bucket_set_and_keeps_the_plain_candidates_widths():
    """A table's W digit windows share S bucket sets (window w in set w mod S, the table holding every S-th
    window); its digit sort keys them by set and magnitude (pippenger.cuh, table_key), S 2^(c-1) counters:
    with one set 2 MB at c = 20, where a counter a window and bucket (the layout before) took 27 MB and its
    scatter 62 against 39 ms at 2^26 (session 27). Its widths are the plain candidates' (W 2^(c-1) inside
    L2): wider measured slower at 2^25 and 2^26. A plain plan has no sets."""
    bits = BLS12_381.fr.bits
    for log_n in range(10, 28):
        for c in (3, 13, 20, 24):
            for sets in (1, 2, 3, 200):
                plan = plan_msm(1 << log_n, bits, c=c, cache_bytes=H200_L2, shared_buckets=True, table_sets=sets)
                assert plan.table_sets == min(sets, plan.n_windows)
                assert plan.sort_buckets == plan.table_sets * plan.buckets_per_window
                assert plan.table_windows == -(-plan.n_windows // plan.table_sets)
                reduced = plan.table_sets * plan.buckets_per_window  # the reduction's threads: segments of all sets
                assert reduced // plan.seg_len <= 1 << 16
                assert plan.seg_len == 1 or reduced // (plan.seg_len // 2) > 1 << 16  # the shortest such segments
        chosen = plan_msm(1 << log_n, bits, cache_bytes=H200_L2, shared_buckets=True)
        assert 4 * chosen.n_buckets <= H200_L2 and chosen.table_sets == 1
        plain = plan_msm(1 << log_n, bits, cache_bytes=H200_L2)
        assert plain.table_sets == 0 and plain.sort_buckets == plain.n_buckets
    assert plan_msm(1 << 26, bits, cache_bytes=H200_L2, shared_buckets=True).c == 20  # c = 22 measured 2.5% slower
    two = plan_msm(1 << 26, bits, cache_bytes=H200_L2, shared_buckets=True, table_sets=2)
    assert (two.c, two.n_windows, two.table_windows, two.sort_buckets) == (20, 13, 7, 1 << 20)
    with pytest.raises(ValueError, match="at least one bucket set"):
        plan_msm(1 << 10, bits, shared_buckets=True, table_sets=0)


def test_measured_widths_plan_the_swept_sizes_and_the_model_the_rest(monkeypatch):
    """MEASURED_WIDTHS (sessions 35-36's H200 sweeps): the swept sizes 2^12-2^27 take the measured width, sizes
    round to the nearest swept log2, and the model plans everything else: other sizes, another model, an
    explicit width, a fixed-base table's shared buckets, a cache too small for the measured width, and a plan
    asked for the model's widths (measured=False)."""
    bls = BLS12_381.fr.bits
    for bits, widths in MEASURED_WIDTHS.items():
        for log_n, c in widths.items():
            assert plan_msm(1 << log_n, bits, cache_bytes=H200_L2).c == c
            assert plan_msm(int(2 ** (log_n + 0.4)), bits, cache_bytes=H200_L2).c == c
        assert plan_msm(1 << 26, bits, cache_bytes=H200_L2).c == 20  # measured where the model's is the fastest
        assert measured_width(1 << 28, bits) is None and measured_width(1 << 11, bits) is None
    assert plan_msm(1 << 22, bls, cache_bytes=H200_L2).c == 15  # G2 119 -> 111 ms, G1 40.7 -> 39.9
    assert plan_msm(1 << 15, BN254.fr.bits, cache_bytes=H200_L2).c == 8
    assert plan_msm(1 << 25, bls, cache_bytes=H200_L2).c == 17  # G1 268.7 -> 251.0 ms, G2 790.3 -> 713.9
    assert plan_msm(1 << 25, bls, cache_bytes=H200_L2, measured=False).c == 19  # the model's
    assert plan_msm(1 << 22, bls, cache_bytes=H200_L2, measured=False).c == 16
    assert plan_msm(1 << 22, bls, model=ADDITIONS_WINDOW_MODEL).c == 18
    assert plan_msm(1 << 22, bls, c=12).c == 12
    tiny = 4 * 18 << 13  # below c = 15's counters (18 windows x 2^14): the model's widths that fit
    assert plan_msm(1 << 22, bls, cache_bytes=tiny).c < 15
    table_plans = [plan_msm(1 << k, bls, shared_buckets=True, table_sets=s) for k in (16, 22) for s in (1, 2)]
    monkeypatch.setattr(msm_module, "MEASURED_WIDTHS", {})
    assert plan_msm(1 << 22, bls).c == 16  # without the table: the model's choice, as before session 35
    assert [plan_msm(1 << k, bls, shared_buckets=True, table_sets=s) for k in (16, 22) for s in (1, 2)] == table_plans

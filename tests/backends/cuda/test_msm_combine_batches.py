"""msm.enqueue_combine without a GPU: which deferred MSMs share a msm_combine_windows_batch launch
(at most COMBINE_BATCH of one group, in the order given) and what each launch is given (the results'
pointers, the window sums' pointers, n_windows | c << 16, the count; unused items zero)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.kernels import SIGNATURES
from pipeline.backends.cuda.msm import COMBINE_BATCH, DeferredWindows, MsmRunner
from pipeline.curves import BLS12_381, BN254


class RecordingKernels:
    def __init__(self, curve) -> None:
        self.curve = curve
        self.launches: list[tuple] = []

    def launch(self, expr, grid, block, args, stream, shared_bytes=0):
        assert len(args) == len(SIGNATURES[expr.split("<", 1)[0]])
        self.launches.append((expr, grid, block, args))


@pytest.mark.parametrize("curve", [BN254, BLS12_381])
def test_each_group_goes_in_launches_of_at_most_the_batch_size(curve):
    kernels = RecordingKernels(curve)
    msm = MsmRunner(kernels, None, SimpleNamespace(handle=0))
    g1_items = [DeferredWindows(False, 1000 + 10 * k, 10 + k, 16 + k % 3, 7000 + k) for k in range(6)]
    g2_item = DeferredWindows(True, 5000, 14, 18, 9000)
    msm.enqueue_combine([g1_items[0], None, g2_item, *g1_items[1:]])
    launches = kernels.launches
    assert [e for e, *_ in launches] == ["msm_combine_windows_batch<fq_t>"] * 2 + \
        [f"msm_combine_windows_batch<{msm.g2_field}>"]
    (_, grid0, block0, a0), (_, _, block1, a1), (_, _, block2, a2) = launches
    assert grid0 == 1 and block0 == 32 * COMBINE_BATCH  # four G1 items, a warp each
    assert a0[:4] == (7000, 7001, 7002, 7003) and a0[4:8] == (1000, 1010, 1020, 1030)
    assert a0[8:12] == tuple(d.n_windows | d.c << 16 for d in g1_items[:4]) and a0[12] == 4
    assert block1 == 64 and a1[:4] == (7004, 7005, 0, 0) and a1[4:8] == (1040, 1050, 0, 0) and a1[12] == 2
    assert a1[8:12] == (*(d.n_windows | d.c << 16 for d in g1_items[4:]), 0, 0)
    assert block2 == 32 and a2[:8] == (9000, 0, 0, 0, 5000, 0, 0, 0) and a2[8] == 14 | 18 << 16  # a G2 pair: one warp
    assert msm.window_sums_bytes(True) == 2 * msm.window_sums_bytes(False)
    assert msm.max_windows() == -(-(curve.fr.bits + 1) // 2)


def test_nothing_deferred_launches_nothing():
    kernels = RecordingKernels(BN254)
    MsmRunner(kernels, None, SimpleNamespace(handle=0)).enqueue_combine([None, None])
    assert kernels.launches == []


def test_the_window_sums_slot_holds_the_most_windows_any_plan_has():
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    most = max(msm.plan(1 << k, False, c).n_windows for k in (4, 10, 20) for c in range(2, 23))
    assert most == msm.max_windows()

"""msm.enqueue_combine without a GPU: which deferred MSMs share a msm_combine_windows_batch launch
(consecutive slots of one buffer, at most COMBINE_BATCH, one group a launch) and what each launch is
given (the results' pointers, the slot stride in points, n_windows | c << 16, the count)."""
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
def test_consecutive_slots_share_a_launch_up_to_the_batch_size(curve):
    kernels = RecordingKernels(curve)
    msm = MsmRunner(kernels, None, SimpleNamespace(handle=0))
    g1, g2 = msm.window_sums_bytes(False), msm.window_sums_bytes(True)
    base, base2 = 1 << 20, 1 << 30
    g1_items = [DeferredWindows(False, base + k * g1, 10 + k, 16 + k % 3, 7000 + k) for k in (0, 1, 2, 3, 4, 6)]
    g2_item = DeferredWindows(True, base2, 14, 18, 9000)
    msm.enqueue_combine([g1_items[0], None, g2_item, *g1_items[1:]])
    launches = kernels.launches
    assert [e for e, *_ in launches] == ["msm_combine_windows_batch<fq_t>"] * 3 + \
        [f"msm_combine_windows_batch<{msm.g2_field}>"]
    (_, grid0, block0, a0), (_, _, block1, a1), (_, _, block2, a2), (_, _, block3, a3) = launches
    assert grid0 == 1 and block0 == 32 * COMBINE_BATCH  # four G1 items, a warp each
    assert a0[:4] == (7000, 7001, 7002, 7003) and a0[4] == base and a0[5] == msm.max_windows()
    assert a0[6:10] == tuple(d.n_windows | d.c << 16 for d in g1_items[:4]) and a0[10] == 4
    assert block1 == 32 and a1[:4] == (7004, 0, 0, 0) and a1[4] == base + 4 * g1 and a1[10] == 1  # a new launch: the first was full
    assert a2[:4] == (7006, 0, 0, 0) and a2[4] == base + 6 * g1  # slot 6: not next to slot 4
    assert block3 == 32 and a3[:4] == (9000, 0, 0, 0) and a3[4] == base2 and a3[6] == 14 | 18 << 16  # a G2 pair: one warp
    assert g2 == 2 * g1 and msm.max_windows() == -(-(curve.fr.bits + 1) // 2)


def test_nothing_deferred_launches_nothing():
    kernels = RecordingKernels(BN254)
    MsmRunner(kernels, None, SimpleNamespace(handle=0)).enqueue_combine([None, None])
    assert kernels.launches == []


def test_the_window_sums_slot_holds_the_most_windows_any_plan_has():
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    most = max(msm.plan(1 << k, False, c).n_windows for k in (4, 10, 20) for c in range(2, 23))
    assert most == msm.max_windows()

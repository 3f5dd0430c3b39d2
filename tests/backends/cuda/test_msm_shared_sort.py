"""One digit sort for the MSMs of one scalar vector (msm.MsmRunner.sort, CudaOptions.msm_shared_sort)
without a GPU: the runner's launches and buffers recorded, and the backend's order (A, B1, B2 and C read
one sort, freed after C's MSM; C skips the public signals' points). The MSMs' results are checked on the
GPU (tests/gpu/test_split.py, tests/gpu/test_msm.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.msm import MsmRunner
from pipeline.backends.cuda.options import CudaOptions
from pipeline.curves import BLS12_381
from tests.backends.cuda.launch_recorder import Recorder


@pytest.fixture
def runner():
    rec = Recorder()
    kernels = SimpleNamespace(curve=BLS12_381, launch=rec.launch)
    msm = MsmRunner(kernels, rec, SimpleNamespace(handle=0))
    return rec, msm


def launches(rec, name: str) -> list[tuple]:
    return [e for e in rec.events if e[0] == "launch" and e[1].startswith(name)]


def test_msms_given_one_sort_launch_no_sort_of_their_own_and_read_its_entries(runner):
    rec, msm = runner
    n = 1000
    digits = msm.sort(0xA0, n)
    assert len(launches(rec, "msm_count_digits")) == 1 and len(launches(rec, "msm_scatter_digits")) == 1
    for g2 in (False, False, True):
        msm.enqueue(g2, 0xB0, 0xA0, n, 0xC0, digits=digits)
    assert len(launches(rec, "msm_count_digits")) == 1 and len(launches(rec, "msm_scatter_digits")) == 1
    level0 = launches(rec, "msm_accumulate_flat") + launches(rec, "msm_accumulate<fq2_pair_lazy_t, true")
    assert len(level0) == 3 and {args[2] for _, _, args, *_ in level0} == {digits.d_entries.ptr}
    freed = {e[2] for e in rec.events if e[0] == "free"}
    assert digits.d_entries.ptr not in freed and digits.d_offsets.ptr not in freed  # the owner frees it
    digits.free()
    freed = {e[2] for e in rec.events if e[0] == "free"}
    assert {digits.d_entries.ptr, digits.d_offsets.ptr} <= freed


def test_an_msm_without_a_sort_given_sorts_and_frees_its_own(runner):
    rec, msm = runner
    msm.enqueue(False, 0xB0, 0xA0, 1000, 0xC0)
    msm.enqueue(False, 0xB0, 0xA0, 1000, 0xC0)
    assert len(launches(rec, "msm_count_digits")) == 2
    allocated = [e for e in rec.events if e[0] == "free" and e[1] in ("msm digit entries", "msm bucket offsets")]
    assert len(allocated) == 4


def test_a_sort_of_other_scalars_or_another_plan_is_refused(runner):
    rec, msm = runner
    digits = msm.sort(0xA0, 1000)
    with pytest.raises(ValueError, match="1000 scalars"):
        msm.enqueue(False, 0xB0, 0xA0, 999, 0xC0, digits=digits)
    with pytest.raises(ValueError, match="plan"):
        msm.enqueue(False, 0xB0, 0xA0, 1000, 0xC0, c=digits.plan.c + 1, digits=digits)


def test_held_digits_count_in_the_scratch_bound(runner):
    _, msm = runner
    for n in (1 << 10, 1 << 20, 1 << 26):
        for g2 in (False, True):
            plan = msm.plan(n, g2)
            assert msm.scratch_bytes(n, g2, held_digits=True) >= msm.scratch_bytes(n, g2)
            assert msm.scratch_bytes(n, g2, held_digits=True) <= msm.scratch_bytes(n, g2) + 4 * n * plan.n_windows


class FakeMsm:
    """Records _enqueue_msms' calls in order."""

    def __init__(self, shared: bool) -> None:
        self.shared_sort = shared
        self.calls: list[tuple] = []

    def xyzz_bytes(self, g2):
        return 288

    def sort(self, d_scalars, n, d_point_index=0):
        calls = self.calls
        calls.append(("sort", d_scalars, n, d_point_index))
        return SimpleNamespace(free=lambda: calls.append(("free digits",)))

    def enqueue(self, g2, d_points, d_scalars, n, out, d_point_index=0, d_windows=0, digits=None, skip_below=0):
        self.calls.append(("msm", d_points, d_scalars, n, d_point_index, digits is not None, skip_below))

    def enqueue_point_sum(self, g2, base, d_idx, count, out):
        self.calls.append(("ones", base))


    def sort_fixed(self, plan, stride, d_scalars, n, d_point_index=0):
        calls = self.calls
        calls.append(("sort fixed", d_scalars, n, d_point_index, stride))
        return SimpleNamespace(free=lambda: calls.append(("free fixed digits",)))

    def enqueue_fixed(self, table, d_scalars, n, out, d_point_index=0, digits=None):
        self.calls.append(("fixed", table.d_table.ptr, d_scalars, n, d_point_index, digits is not None))


def _key(shared: bool, fixed=()):
    """A stand-in key; ``fixed``: its sections kept as tables (at 0x10000000 on, none in d_points)."""
    zkey = SimpleNamespace(n_vars=100, n_public=2, domain_size=128, curve=BLS12_381)
    points = {name: SimpleNamespace(ptr=ptr) for name, ptr in
              (("a", 0x1000000), ("b1", 0x2000000), ("b2", 0x3000000), ("c", 0x4000000), ("h", 0x5000000))}
    tables = {name: SimpleNamespace(d_table=SimpleNamespace(ptr=0x10000000 + points[name].ptr), plan="P",
                                    n=zkey.domain_size if name == "h" else zkey.n_vars) for name in fixed}
    return SimpleNamespace(zkey=zkey, runtime=SimpleNamespace(msm=FakeMsm(shared)),
                           d_points={k: v for k, v in points.items() if k not in fixed}, tables=tables)


G1_ROW = 2 * 8 * BLS12_381.fq.limbs  # bytes of an affine G1 point


def _msm_calls(split: bool, prefix_other: int, fixed=(), ones: bool = False, **kwargs) -> list[tuple]:
    """_enqueue_msms on the stand-in key with the option on (witness at 0x100; a split's others at 0x800,
    their indices at 0x900): the runner's calls, the ones' sums left out unless ``ones``."""
    key = _key(shared=True, fixed=fixed)
    shape = SimpleNamespace(n_one=40, n_other=50, prefix_one=1, prefix_other=prefix_other)
    dsplit = SimpleNamespace(shape=shape, d_one_idx=SimpleNamespace(ptr=0x700), d_other_scalars=SimpleNamespace(ptr=0x800),
                             d_other_idx=SimpleNamespace(ptr=0x900)) if split else None
    CudaBackend._enqueue_msms(None, key, SimpleNamespace(ptr=0x100), SimpleNamespace(ptr=0x200),
                              SimpleNamespace(ptr=0x300), True, None, dsplit, **kwargs)
    return [c for c in key.runtime.msm.calls if ones or c[0] != "ones"]


@pytest.mark.parametrize("split", [False, True], ids=["whole witness", "split tails"])
def test_the_backend_sorts_once_for_a_b1_b2_c_and_c_skips_the_public_points(split):
    calls = _msm_calls(split, prefix_other=1)
    kinds = [c[0] for c in calls]
    assert kinds == ["sort", "msm", "msm", "msm", "msm", "free digits", "msm"]  # a, b1, b2, c | h
    assert [c[5] for c in calls if c[0] == "msm"] == [True, True, True, True, False]
    sort, a, c = calls[0], calls[1], calls[4]
    assert sort[1:] == a[2:5] == c[2:5]  # sorted the scalars (and point indices) A's and C's MSMs take
    assert c[1] == 0x4000000 - 3 * G1_ROW and c[6] == 3  # C's base shifted back past 1 + n_public signals, skipped
    assert [x[6] for x in calls if x[0] == "msm"] == [0, 0, 0, 3, 0]


@pytest.mark.parametrize("split", [False, True], ids=["whole witness", "split tails"])
def test_c_alone_sorts_its_own_scalars_past_the_public_signals(split):
    calls = _msm_calls(split, prefix_other=2, sections=("c", "h"))
    assert [c[0] for c in calls] == ["msm", "msm"] and not calls[0][5] and calls[0][6] == 0
    if split:  # indexed by signal from the shifted base, the others' public prefix left out
        assert calls[0][1:5] == (0x4000000 - 3 * G1_ROW, 0x800 + 32 * 2, 50 - 2, 0x900 + 4 * 2)
    else:  # scalar k is signal 3 + k, point k of the section
        assert calls[0][1:5] == (0x4000000, 0x100 + 3 * 32, 100 - 3, 0)


def test_without_the_option_every_msm_sorts_its_own_and_b2_left_out_leaves_a_b1_c_sharing():
    key = _key(shared=False)
    CudaBackend._enqueue_msms(None, key, SimpleNamespace(ptr=0x100), SimpleNamespace(ptr=0x200),
                              SimpleNamespace(ptr=0x300), True, None)
    assert [c[0] for c in key.runtime.msm.calls] == ["msm"] * 5
    key = _key(shared=True)
    CudaBackend._enqueue_msms(None, key, SimpleNamespace(ptr=0x100), SimpleNamespace(ptr=0x200),
                              SimpleNamespace(ptr=0x300), False, None)  # B2 on the host
    assert [c[0] for c in key.runtime.msm.calls] == ["sort", "msm", "msm", "msm", "free digits", "msm"]


def test_the_option_is_on_by_default_and_checked():
    assert CudaOptions().msm_shared_sort is True
    with pytest.raises(ValueError, match="msm_shared_sort"):
        CudaOptions(msm_shared_sort=1)


@pytest.mark.parametrize("partial_levels", ["in_place", "tree"])
def test_skip_below_reaches_level_zero_only(runner, partial_levels):
    rec, msm = runner
    msm.partial_levels = partial_levels
    digits = msm.sort(0xA0, 1000)
    msm.enqueue(False, 0xB0, 0xA0, 1000, 0xC0, digits=digits, skip_below=9)
    level0 = launches(rec, "msm_accumulate_flat")
    assert [args[-1] for _, _, args, *_ in level0] == [9]  # the affine level reads the points
    if partial_levels == "tree":
        levels = launches(rec, "msm_accumulate<fq_lazy_t, false")
        assert levels and all(args[-1] == 0 for _, _, args, *_ in levels)  # partials: no points to skip
    else:  # the pieces' sums take no points (and no skip) at all
        assert len(launches(rec, "msm_sum_pieces<fq_lazy_t>")) == 1
        assert not launches(rec, "msm_accumulate<fq_lazy_t, false")


@pytest.mark.parametrize("split", [False, True], ids=["whole witness", "split tails"])
def test_msms_over_tables_share_one_table_sort_freed_before_the_plain_ones_sort(split):
    """Sections with fixed-base tables go first and read one sort with the tables' stride (every scalar:
    a table is indexed by signal, C's public rows are infinity), freed before the plain MSMs share theirs."""
    calls = _msm_calls(split, prefix_other=1, fixed=("b2", "c", "h"))
    assert [c[0] for c in calls] == ["sort fixed", "fixed", "fixed", "free fixed digits",
                                     "sort", "msm", "msm", "free digits", "fixed"]  # b2, c | a, b1 | h
    sort_fixed, b2, c = calls[0], calls[1], calls[2]
    scalars = (0x800, 50, 0x900) if split else (0x100, 100, 0)  # every other, or the whole witness
    assert sort_fixed[1:] == (*scalars, 100) and b2[2:5] == c[2:5] == scalars and b2[5] and c[5]
    assert b2[1] == 0x13000000 and c[1] == 0x14000000  # row k of a table is signal k: no base shifted back
    assert calls[-1][1:6] == (0x15000000, 0x200, 128, 0, False)  # H over its table, its own sort


def test_the_ones_of_a_table_section_are_summed_from_its_window_zero():
    calls = _msm_calls(True, prefix_other=1, fixed=("c",), ones=True)
    ones = [c[1] for c in calls if c[0] == "ones"]
    assert ones == [0x14000000, 0x1000000, 0x2000000, 0x3000000]  # c first, from its table by signal; a, b1, b2 plain


def test_one_table_section_sorts_alone_and_the_rest_still_share():
    calls = _msm_calls(False, prefix_other=1, fixed=("a",))
    assert [c[0] for c in calls] == ["fixed", "sort", "msm", "msm", "msm", "free digits", "msm"]
    assert not calls[0][5]  # a sort of its own inside enqueue_fixed


def test_a_table_sort_is_refused_by_a_plain_msm_and_by_a_table_of_another_stride(runner):
    rec, msm = runner
    plan = msm.plan_fixed(1000)
    digits = msm.sort_fixed(plan, 1000, 0xA0, 1000)
    assert digits.stride == 1000 and len(launches(rec, "msm_scatter_digits")) == 1
    with pytest.raises(ValueError, match="fixed-base table given to a plain MSM"):
        msm.enqueue(False, 0xB0, 0xA0, 1000, 0xC0, digits=digits)
    other = SimpleNamespace(g2=False, plan=plan, n=1004, d_table=SimpleNamespace(ptr=0xD0))
    with pytest.raises(ValueError, match="1004 rows a window"):
        msm.enqueue_fixed(other, 0xA0, 1000, 0xC0, digits=digits)
    same = SimpleNamespace(g2=False, plan=plan, n=1000, d_table=SimpleNamespace(ptr=0xD0))
    msm.enqueue_fixed(same, 0xA0, 1000, 0xC0, digits=digits)
    level0 = launches(rec, "msm_accumulate_flat")
    assert [args[1:3] for _, _, args, *_ in level0] == [(0xD0, digits.d_entries.ptr)]  # the table's rows, the sort's entries

"""Which sections of a resident key get a fixed-base table (backends/cuda/fixed_base.py), and the bytes
they count, without a GPU; the tables' MSMs are checked on the GPU (tests/gpu/test_fixed_base_key.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.fixed_base import (FIXED_BASE_ORDER, choose_fixed_bases, table_build_bytes,
                                               table_extra_bytes, table_rows)
from pipeline.backends.cuda.msm import TABLE_BUILD_ROWS, MsmRunner
from pipeline.backends.placement import KeyPlacement, section_bytes
from pipeline.curves import BLS12_381, BN254


def _runner(curve):
    return MsmRunner(SimpleNamespace(curve=curve, device=SimpleNamespace(l2_bytes=60 << 20)), None, None)


def _zkey(curve, log_n: int):
    n = 1 << log_n
    return SimpleNamespace(n_vars=n - 8, n_public=3, domain_size=n, curve=curve)


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_tables_are_indexed_like_their_scalars_and_count_what_they_add(curve):
    msm, zkey = _runner(curve), _zkey(curve, 24)
    assert table_rows(zkey, "c") == (4, zkey.n_vars - 4) and table_rows(zkey, "a") == (0, zkey.n_vars)
    assert table_rows(zkey, "h") == (0, zkey.domain_size)
    for section in FIXED_BASE_ORDER:
        lead, n = table_rows(zkey, section)
        windows = msm.plan_fixed(lead + n).n_windows
        assert table_extra_bytes(msm, zkey, section) == (windows * (lead + n) - n) * section_bytes(zkey, section) // n
        assert table_build_bytes(msm, zkey, section) == 2 * section_bytes(zkey, section) // n * TABLE_BUILD_ROWS
    # at 2^24 a witness section's tables all take c = 20, 13 windows: one sort serves A, B1, B2 and C
    assert {msm.plan_fixed(sum(table_rows(zkey, s))) for s in ("a", "b1", "b2", "c")} == {msm.plan_fixed(zkey.n_vars)}


def test_sections_are_taken_in_order_while_they_fit_and_a_smaller_later_one_still_may():
    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 20)
    extra = {s: table_extra_bytes(msm, zkey, s) for s in FIXED_BASE_ORDER}
    assert extra["b2"] == 2 * extra["a"]  # G2 points are twice G1's
    for chosen in (("h",), ("b2", "h"), ("b2", "h", "a")):
        room = sum(extra[s] for s in chosen) + extra["a"] // 2  # no room for the next one
        # b2 first when it fits; else the smaller ones after it, while they fit
        assert choose_fixed_bases(msm, zkey, lambda sections: sum(extra[s] for s in sections) <= room) == chosen
    assert choose_fixed_bases(msm, zkey, lambda sections: True) == FIXED_BASE_ORDER
    assert choose_fixed_bases(msm, zkey, lambda sections: False) == ()


def test_a_table_scratch_bound_covers_its_sort_and_its_one_set_of_buckets():
    msm = _runner(BLS12_381)
    for n in (1 << 10, 1 << 20, 1 << 24):
        for g2 in (False, True):
            plan = msm.plan_fixed(n)
            entries = n * plan.n_windows
            fixed = msm.scratch_bytes(n, g2, held_digits=True, fixed=True)
            assert fixed >= 8 * entries + 4 * plan.sort_buckets  # the digits, their ranks, the counts
            assert fixed >= 4 * entries + msm.xyzz_bytes(g2) * plan.buckets_per_window  # held entries, the sums


def test_a_placement_keeps_tables_only_of_resident_sections():
    KeyPlacement(fixed_base=("b2", "h"))
    with pytest.raises(ValueError, match="not all resident"):
        KeyPlacement(resident=("a", "b1", "b2", "c"), chunk_h=64, fixed_base=("h",))


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_no_table_where_it_would_not_widen_the_windows(curve):
    """At 2^26 the plain plan is c = 20 already: a table there measured 0.96 (BLS12-381) and 1.06 (BN254) of
    the plain MSM, so none is taken however much room there is; at 2^24 and below every section's is."""
    msm = _runner(curve)
    assert choose_fixed_bases(msm, _zkey(curve, 26), lambda sections: True) == ()
    for log_n in (8, 16, 20, 24):
        assert choose_fixed_bases(msm, _zkey(curve, log_n), lambda sections: True) == FIXED_BASE_ORDER


def test_a_failed_build_gives_the_built_tables_points_back(monkeypatch):
    """build_tables: a section's build that fails (out of memory, say) leaves the key as it was: the tables
    built before it copy their window 0 back into plain buffers and are freed."""
    from pipeline.backends.cuda import fixed_base

    events = []

    class Buf:
        def __init__(self, what, ptr=0x1000):
            self.what, self.ptr, self.nbytes = what, ptr, 0

        def free(self):
            events.append(("free", self.what))

    class Msm:
        allocator = SimpleNamespace(alloc=lambda nbytes, what: Buf(what))
        stream = SimpleNamespace(handle=0)

        def build_table(self, g2, d_points, n, lead=0):
            if g2:
                raise MemoryError("out of memory")
            return SimpleNamespace(n=lead + n, lead=lead, d_table=SimpleNamespace(ptr=0x2000),
                                   free=lambda: events.append(("free", "table")))

    zkey = _zkey(BLS12_381, 10)
    points = {s: Buf(f"points {s}") for s in ("h", "b2")}
    copies = []
    monkeypatch.setattr(fixed_base, "driver", SimpleNamespace(cuMemcpyDtoDAsync=lambda *args: args))
    monkeypatch.setattr(fixed_base, "check", lambda result, what: copies.append(what))
    with pytest.raises(MemoryError):
        fixed_base.build_tables(Msm(), zkey, points, ("h", "b2"))
    assert sorted(points) == ["b2", "h"] and points["h"].what == "key points h"  # h's points copied back
    assert events == [("free", "points h"), ("free", "table")] and copies == ["cuMemcpyDtoDAsync"]

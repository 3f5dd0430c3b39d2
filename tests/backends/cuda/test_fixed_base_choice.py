"""Which sections of a resident key get a fixed-base table (backends/cuda/fixed_base.py), and the bytes
they count, without a GPU; the tables' MSMs are checked on the GPU (tests/gpu/test_fixed_base_key.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.fixed_base import (FIXED_BASE_ORDER, TABLE_SETS, choose_fixed_bases, table_build_bytes,
                                               table_extra_bytes, table_fits_indices, table_rows)
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
        row = section_bytes(zkey, section) // n
        for sets in TABLE_SETS + (3,):
            windows = msm.plan_fixed(lead + n, table_sets=sets).table_windows
            assert windows == -(-msm.plan_fixed(lead + n).n_windows // sets)  # every S-th window
            assert table_extra_bytes(msm, zkey, section, sets) == (windows * (lead + n) - n) * row
        assert table_build_bytes(msm, zkey, section) == 2 * row * TABLE_BUILD_ROWS
    # at 2^24 a witness section's tables all take c = 20, 13 windows: one sort serves A, B1, B2 and C
    assert {msm.plan_fixed(sum(table_rows(zkey, s))) for s in ("a", "b1", "b2", "c")} == {msm.plan_fixed(zkey.n_vars)}


def test_sections_are_taken_in_order_while_they_fit_with_the_fewest_sets_that_do():
    """FIXED_BASE_ORDER, each section with the fewest bucket sets whose table still fits (one set: 15 units
    beyond the points of a G1 section at 2^20, 16 windows; two sets: 7), a later, smaller one where an earlier
    did not fit."""
    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 20)
    units = {1: 15, 2: 7}
    cost = {(s, sets): (2 if s == "b2" else 1) * units[sets] for s in FIXED_BASE_ORDER for sets in TABLE_SETS}
    for (s, sets), c in cost.items():  # the units are the tables' real proportions, within C's 4 rows of infinity
        assert abs(table_extra_bytes(msm, zkey, s, sets) / table_extra_bytes(msm, zkey, "a", 1) - c / 15) < 1e-4

    def chosen(room: int) -> dict:
        return choose_fixed_bases(msm, zkey, lambda tables: sum(cost[s, n] for s, n in tables.items()) <= room)
    assert chosen(90) == dict.fromkeys(FIXED_BASE_ORDER, 1)
    assert chosen(60) == {"b2": 1, "h": 1, "a": 1}
    assert chosen(50) == {"b2": 1, "h": 1}
    assert chosen(40) == {"b2": 1, "h": 2}  # H of two sets where one does not fit
    assert chosen(20) == {"b2": 2}
    assert chosen(7) == {"h": 2}
    assert chosen(6) == {}
    assert choose_fixed_bases(msm, zkey, lambda tables: True) == dict.fromkeys(FIXED_BASE_ORDER, 1)
    # another order (CudaOptions.msm_fixed_base_order): H first takes its one set where B2's two would have
    # left H none; sections left out get no table
    assert choose_fixed_bases(msm, zkey, lambda t: sum(cost[s, n] for s, n in t.items()) <= 15, ("h", "b2")) == {
        "h": 1}
    assert choose_fixed_bases(msm, zkey, lambda t: sum(cost[s, n] for s, n in t.items()) <= 15) == {"b2": 2}
    assert choose_fixed_bases(msm, zkey, lambda tables: True, ("c",)) == {"c": 1}
    # other bucket sets tried (CudaOptions.msm_fixed_base_sets): two sets only gives every section a half table
    # where one set would have taken B2 and H whole
    two = lambda tables: sum(cost[s, n] for s, n in tables.items()) <= 45  # noqa: E731
    assert choose_fixed_bases(msm, zkey, two) == {"b2": 1, "h": 1}
    assert choose_fixed_bases(msm, zkey, two, FIXED_BASE_ORDER, (2,)) == dict.fromkeys(FIXED_BASE_ORDER, 2)


def test_a_table_scratch_bound_covers_its_sort_and_its_bucket_sets():
    msm = _runner(BLS12_381)
    for n in (1 << 10, 1 << 20, 1 << 24):
        for g2 in (False, True):
            for sets in TABLE_SETS:
                plan = msm.plan_fixed(n, table_sets=sets)
                entries = n * plan.n_windows
                fixed = msm.scratch_bytes(n, g2, held_digits=True, fixed=True, table_sets=sets)
                assert fixed >= 8 * entries + 4 * plan.sort_buckets  # the digits, their ranks, the counts
                assert fixed >= 4 * entries + msm.xyzz_bytes(g2) * plan.sort_buckets  # held entries, the sums
                assert plan.sort_buckets == sets * plan.buckets_per_window


def test_a_placement_names_each_tables_sets_in_one_form_and_drops_them_with_their_bytes():
    """KeyPlacement: tables without sets given have one set each (one form for one placement); a count a table
    of at least one; ``without_tables`` is the placement after its tables were dropped (the keystore's and the
    backend's)."""
    assert KeyPlacement(fixed_base=("b2", "h")) == KeyPlacement(fixed_base=("b2", "h"), fixed_base_sets=(1, 1))
    assert KeyPlacement(fixed_base=("b2", "h"), fixed_base_sets=(1, 2)).tables == {"b2": 1, "h": 2}
    for bad in ((1,), (1, 0)):
        with pytest.raises(ValueError, match="one count of at least 1 a table"):
            KeyPlacement(fixed_base=("b2", "h"), fixed_base_sets=bad)
    placed = KeyPlacement(device_bytes=1000, fixed_base=("h",), fixed_base_sets=(2,), tables_refused=("b2 (1 set)",),
                          fixed_base_order=("b2", "h"))
    dropped = placed.without_tables(300)
    assert dropped == KeyPlacement(device_bytes=700) and dropped.tables_refused == dropped.fixed_base_order == ()


def test_a_placement_keeps_tables_only_of_resident_sections():
    KeyPlacement(fixed_base=("b2", "h"))
    with pytest.raises(ValueError, match="not all resident"):
        KeyPlacement(resident=("a", "b1", "b2", "c"), chunk_h=64, fixed_base=("h",))


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_every_size_takes_tables_where_there_is_room(curve):
    """With the sort's keys by bucket set (session 27) a one-set table measured 0.65-0.96 of the plain MSM at
    every size, 2^26 too (0.90 BLS12-381, 0.96 BN254, where the plans' widths agree): every section takes one
    where the room has it, up to the entries' 31 index bits."""
    msm = _runner(curve)
    for log_n in (8, 16, 20, 24, 26):
        assert choose_fixed_bases(msm, _zkey(curve, log_n), lambda tables: True) == dict.fromkeys(FIXED_BASE_ORDER, 1)
    assert not table_fits_indices(msm, 1 << 28, 1) and table_fits_indices(msm, 1 << 26, 1)


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

        def build_table(self, g2, d_points, n, lead=0, table_sets=1):
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
        fixed_base.build_tables(Msm(), zkey, points, {"h": 1, "b2": 2})
    assert sorted(points) == ["b2", "h"] and points["h"].what == "key points h"  # h's points copied back
    assert events == [("free", "points h"), ("free", "table")] and copies == ["cuMemcpyDtoDAsync"]


def test_a_placement_names_the_tables_it_left_out_with_their_need_and_the_room():
    """place_key's tables at seed-like sizes (BLS12-381 2^26, 40 GiB of plain key): each table tried and refused is
    named with its bucket sets, the bytes it needed and the room; the order option changes which section wins."""
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.backends.cuda.options import CudaOptions

    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 26)
    backend = CudaBackend.__new__(CudaBackend)  # no device: placing is arithmetic on the key's sizes
    backend.options = CudaOptions()

    def place(room_gib: int, order=FIXED_BASE_ORDER) -> KeyPlacement:
        backend.options = CudaOptions(msm_fixed_base_order=order)
        return backend._with_fixed_bases(zkey, msm, 40 << 30, room_gib << 30, backend.options.msm_fixed_base_order)

    tight = place(125)
    assert tight.tables == {"h": 2}
    refused = dict(r.split(": ") for r in tight.tables_refused)
    assert list(refused)[:3] == ["b2 (1 set)", "b2 (2 sets)", "h (1 set)"]
    assert all(v.endswith(" of 125.0 GiB") and float(v.split()[0]) > 125 for v in refused.values())
    h_one = float(refused["h (1 set)"].split()[0])
    assert place(int(h_one) + 1).tables.keys() == {"b2"}  # room for H's one set, but B2's two sets come first
    assert place(int(h_one) + 1, ("h", "b2", "a", "b1", "c")).tables == {"h": 1}
    assert place(int(h_one) + 1, ("h",)).tables_refused == ()
    assert place(1000, ()).tables == {}  # an empty order: no tables, not the default order
    backend.options = CudaOptions(msm_fixed_base_sets=(2,))  # the placement tries the sets the options name
    assert backend._with_fixed_bases(zkey, msm, 40 << 30, 1000 << 30, FIXED_BASE_ORDER).tables == dict.fromkeys(
        FIXED_BASE_ORDER, 2)


def test_auto_takes_h_first_for_a_seed_witness_where_b2_first_would_leave_h_none():
    """"auto" (the default order option) at the room of H's one-set table beside a 2^26 BLS12-381 key: before any
    witness, and for a random one, B2 comes first as FIXED_BASE_ORDER says; for the seed's witness (95% in {0, 1},
    split) H does, and the placement says which order it used."""
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.backends.cuda.options import CudaOptions
    from pipeline.backends.protocol import WitnessShape

    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 26)
    backend = CudaBackend.__new__(CudaBackend)  # no device: placing is arithmetic on the key's sizes
    backend.options, backend.msm_split_min_bits = CudaOptions(), CudaOptions().msm_split_min_bits
    assert backend.options.msm_fixed_base_order == "auto"
    n = zkey.n_vars
    seed = WitnessShape(n, n * 475 // 1000, n // 20, 4, 1, 3)
    random = WitnessShape(n, 0, n, 4, 1, 3)
    tight = backend._with_fixed_bases(zkey, msm, 40 << 30, 125 << 30, FIXED_BASE_ORDER)
    h_one = float(dict(r.split(": ") for r in tight.tables_refused)["h (1 set)"].split()[0])
    room = (int(h_one) + 1) << 30

    def place(witness) -> KeyPlacement:
        return backend._with_fixed_bases(zkey, msm, 40 << 30, room, backend.fixed_base_order(witness))
    for witness in (None, random):
        assert place(witness).tables.keys() == {"b2"} and place(witness).fixed_base_order == FIXED_BASE_ORDER
    assert place(seed).tables == {"h": 1} and place(seed).fixed_base_order == ("h", "b2", "a", "b1", "c")
    backend.options = CudaOptions(msm_fixed_base_order=("c",))  # an explicit order is taken as it is
    assert backend.fixed_base_order(seed) == ("c",) and backend.fixed_base_order(None) == ("c",)

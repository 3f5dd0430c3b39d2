"""Which sections of a resident key get a fixed-base table (backends/cuda/fixed_base.py), and the bytes
they count, without a GPU; the tables' MSMs are checked on the GPU (tests/gpu/test_fixed_base_key.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.fixed_base import (FIXED_BASE_ORDER, TABLE_SETS, choose_fixed_bases, fill_tables,
                                               table_build_bytes, table_extra_bytes, table_fits_indices, table_gain,
                                               table_pays, table_rows)
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


def _unit_costs(msm, zkey) -> dict:
    """Each table's bytes beyond its points at 2^20 in units: 15 for a G1 section's one-set table (16 windows),
    7 for its two-set one, twice that for B2's."""
    units = {1: 15, 2: 7}
    cost = {(s, sets): (2 if s == "b2" else 1) * units[sets] for s in FIXED_BASE_ORDER for sets in TABLE_SETS}
    for (s, sets), c in cost.items():  # the units are the tables' real proportions, within C's 4 rows of infinity
        assert abs(table_extra_bytes(msm, zkey, s, sets) / table_extra_bytes(msm, zkey, "a", 1) - c / 15) < 1e-4
    return cost


def test_a_fill_takes_sections_in_order_while_they_fit_with_the_fewest_sets_that_do():
    """fill_tables: FIXED_BASE_ORDER, each section with the fewest bucket sets whose table still fits, a later,
    smaller one where an earlier did not fit; the candidates refused for room are named with the tables before."""
    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 20)
    cost = _unit_costs(msm, zkey)

    def fill(room: int, order=FIXED_BASE_ORDER, tried=TABLE_SETS) -> dict:
        return fill_tables(msm, zkey, lambda tables: sum(cost[s, n] for s, n in tables.items()) <= room, order,
                           tried)[0]
    assert fill(90) == dict.fromkeys(FIXED_BASE_ORDER, 1)
    assert fill(60) == {"b2": 1, "h": 1, "a": 1}
    assert fill(50) == {"b2": 1, "h": 1}
    assert fill(40) == {"b2": 1, "h": 2}  # H of two sets where one does not fit
    assert fill(20) == {"b2": 2}
    assert fill(7) == {"h": 2}
    assert fill(6) == {}
    # another order (CudaOptions.msm_fixed_base_order): H first takes its one set where B2's two would have left H
    # none; sections left out get no table
    assert fill(15, ("h", "b2")) == {"h": 1} and fill(15) == {"b2": 2}
    assert fill(1000, ("c",)) == {"c": 1}
    assert fill(45, tried=(2,)) == dict.fromkeys(FIXED_BASE_ORDER, 2)
    refused = fill_tables(msm, zkey, lambda tables: sum(cost[s, n] for s, n in tables.items()) <= 40,
                          FIXED_BASE_ORDER, TABLE_SETS)[1]
    assert refused[:2] == [{"b2": 1, "h": 1}, {"b2": 1, "h": 2, "a": 1}]


def test_the_choice_is_the_fill_that_saves_the_most():
    """choose_fixed_bases: where every one-set table fits, all of them (each saves more than its two-set
    half); where B2's and H's one-set tables fit and no more, every section at two sets saves more (on an
    H100, 2^24 BLS12-381: 778-780 against 802 ms a stage, session 49); with one count tried, that count."""
    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 20)
    cost = _unit_costs(msm, zkey)

    def chosen(room: int, tried=TABLE_SETS) -> dict:
        return choose_fixed_bases(msm, zkey, lambda tables: sum(cost[s, n] for s, n in tables.items()) <= room,
                                  FIXED_BASE_ORDER, tried)[0]
    for section in FIXED_BASE_ORDER:
        assert table_gain(msm, zkey, section, 1) > table_gain(msm, zkey, section, 2) > 0
    assert chosen(90) == dict.fromkeys(FIXED_BASE_ORDER, 1)
    assert chosen(45) == dict.fromkeys(FIXED_BASE_ORDER, 2)  # the greedy fill: B2 and H at one set, 45 units
    assert sum(table_gain(msm, zkey, s, 2) for s in FIXED_BASE_ORDER) > sum(
        table_gain(msm, zkey, s, 1) for s in ("b2", "h"))
    assert chosen(45, (1,)) == {"b2": 1, "h": 1} and chosen(6) == {}
    assert choose_fixed_bases(msm, zkey, lambda tables: True, ("c",))[0] == {"c": 1}


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_a_table_over_a_seed_witness_tail_pays_only_where_the_model_clears_the_margin(curve):
    """A seed witness (5% of the values past {0, 1}, split) leaves a witness section's MSM a 0.84M-scalar tail at
    2^24: a two-set table's 20-bit windows cost more than they save (measured 49 against 40 ms for B2, 17 against
    14 for A, BLS12-381 on an H100, session 49), so the model prices it dearer than plain; H's scalars are the
    quotient's, random, and its table pays at any witness."""
    msm, zkey = _runner(curve), _zkey(curve, 24)
    seed = 0.05
    for section in ("a", "b1", "b2", "c"):
        assert table_gain(msm, zkey, section, 2, seed) < 0 and not table_pays(msm, zkey, section, 2, seed)
        assert table_pays(msm, zkey, section, 1) and table_pays(msm, zkey, section, 2)  # a random witness
    assert table_pays(msm, zkey, "h", 1, seed) and table_gain(msm, zkey, "h", 1, seed) == table_gain(msm, zkey, "h", 1)
    room = choose_fixed_bases(msm, zkey, lambda tables: True, ("h", "b2", "a", "b1", "c"), TABLE_SETS, seed)[0]
    assert room.get("h") == 1 and all(sets == 1 for sets in room.values())  # no two-set table over a tail
    if curve is BLS12_381:  # its one-set tail tables: 4% by the model, under the margin (measured +7.5% for B2)
        assert room == {"h": 1}


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
        assert choose_fixed_bases(msm, _zkey(curve, log_n), lambda tables: True)[0] == dict.fromkeys(FIXED_BASE_ORDER, 1)
    assert not table_fits_indices(msm, 1 << 28, 1) and table_fits_indices(msm, 1 << 26, 1)


def test_a_failed_build_gives_the_built_tables_points_back(monkeypatch):
    """build_tables: each section's build is waited for (a load ends with its tables); a section's build that
    fails (out of memory, say) leaves the key as it was: the tables built before it copy their window 0 back
    into plain buffers and are freed."""
    from pipeline.backends.cuda import fixed_base

    events = []

    class Buf:
        def __init__(self, what, ptr=0x1000):
            self.what, self.ptr, self.nbytes = what, ptr, 0

        def free(self):
            events.append(("free", self.what))

    class Msm:
        allocator = SimpleNamespace(alloc=lambda nbytes, what: Buf(what))
        stream = SimpleNamespace(handle=0, synchronize=lambda: events.append(("waited", "build")))

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
    # h's build waited for before b2's began; then h's table goes back to points
    assert events == [("free", "points h"), ("waited", "build"), ("free", "table")] and copies == ["cuMemcpyDtoDAsync"]


def test_a_placement_names_the_tables_it_left_out_with_their_need_and_the_room():
    """place_key's tables at seed-like sizes (BLS12-381 2^26, 40 GiB of plain key): each table tried and refused is
    named with its bucket sets, the bytes it needed and the room; the order option changes which section wins."""
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.backends.cuda.options import CudaOptions

    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 26)
    backend = CudaBackend.__new__(CudaBackend)  # no device: placing is arithmetic on the key's sizes
    backend.options, backend.msm_split_min_bits = CudaOptions(), CudaOptions().msm_split_min_bits

    def place(room_gib: int, order=FIXED_BASE_ORDER) -> KeyPlacement:
        backend.options = CudaOptions(msm_fixed_base_order=order)
        return backend._with_fixed_bases(zkey, msm, 40 << 30, room_gib << 30)

    tight = place(125)
    assert tight.tables == {"h": 2}
    refused = dict(r.split(": ") for r in tight.tables_refused)
    assert list(refused)[:3] == ["b2 (1 set)", "b2 (2 sets)", "h (1 set)"]
    assert all(v.endswith(" of 125.0 GiB") and float(v.split()[0]) > 125 for v in refused.values())
    h_one = float(refused["h (1 set)"].split()[0])
    assert place(int(h_one) + 1).tables.keys() == {"b2"}  # room for H's one set, but B2's two sets come first
    # H first: H and A at two sets save more than H at one (the model: 0.23 of a G1 MSM against 0.13; session 27
    # measured a two-set table at 0.94 of plain at 2^26, a one-set one at 0.90); H alone, its one set
    assert place(int(h_one) + 1, ("h", "b2", "a", "b1", "c")).tables == {"h": 2, "a": 2}
    assert place(int(h_one) + 1, ("h",)).tables == {"h": 1}
    assert place(int(h_one) + 1, ("h",)).tables_refused == ()
    assert place(1000, ()).tables == {}  # an empty order: no tables, not the default order
    backend.options = CudaOptions(msm_fixed_base_sets=(2,))  # the placement tries the sets the options name
    assert backend._with_fixed_bases(zkey, msm, 40 << 30, 1000 << 30).tables == dict.fromkeys(
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
    tight = backend._with_fixed_bases(zkey, msm, 40 << 30, 125 << 30)
    h_one = float(dict(r.split(": ") for r in tight.tables_refused)["h (1 set)"].split()[0])
    room = (int(h_one) + 1) << 30

    def place(witness) -> KeyPlacement:
        return backend._with_fixed_bases(zkey, msm, 40 << 30, room, witness)
    for witness in (None, random):
        assert place(witness).tables.keys() == {"b2"} and place(witness).fixed_base_order == FIXED_BASE_ORDER
    assert place(seed).tables == {"h": 1} and place(seed).fixed_base_order == ("h", "b2", "a", "b1", "c")
    backend.options = CudaOptions(msm_fixed_base_order=("c",))  # an explicit order is taken as it is
    assert backend.fixed_base_order(seed) == ("c",) and backend.fixed_base_order(None) == ("c",)


def test_a_2e24_key_in_an_h100s_room_takes_every_table_at_two_sets():
    """The case measured (session 49, results/gpu_stage_24_s49_h100_sets2_p{1,2}.md): a 2^24 BLS12-381 key (~12 GiB of
    points, CSR and twiddles) in the ~76 GiB an H100 leaves it has room for B2's and H's one-set tables and no
    more (802 ms a stage), or for all five at two sets (778-780 ms): the placement takes the five. For a seed
    witness it takes H's one-set table alone (its tails' tables measured slower than plain)."""
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.backends.cuda.options import CudaOptions
    from pipeline.backends.protocol import WitnessShape

    msm, zkey = _runner(BLS12_381), _zkey(BLS12_381, 24)
    backend = CudaBackend.__new__(CudaBackend)  # no device: placing is arithmetic on the key's sizes
    backend.msm_split_min_bits = CudaOptions().msm_split_min_bits

    def place(sets=TABLE_SETS, witness=None) -> dict:
        backend.options = CudaOptions(msm_fixed_base_sets=sets)
        return backend._with_fixed_bases(zkey, msm, 12 << 30, 76 << 30, witness).tables
    assert place((1,)) == {"b2": 1, "h": 1}
    assert place() == place((2,)) == dict.fromkeys(FIXED_BASE_ORDER, 2)
    n = zkey.n_vars
    assert place(witness=WitnessShape(n, n * 475 // 1000, n // 20, 4, 1, 3)) == {"h": 1}


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_the_order_tables_are_offered_in_is_the_cost_models_gain_a_byte(curve):
    """placement.table_order ranks sections by milliseconds saved a byte; the fills are priced by the window cost
    model (table_gain). They are one model: for a random witness the model's gain a byte of B2's table over a G1
    section's is G2_TABLE_MS_A_BYTE at every size (session 22 measured 1.65, the model 1.6), the G1 sections tie
    (FIXED_BASE_ORDER keeps them), and for a seed witness H's table, whose scalars stay random, leads."""
    from pipeline.backends.placement import G2_TABLE_MS_A_BYTE, table_order
    from pipeline.backends.protocol import WitnessShape
    msm = _runner(curve)
    for log_n in (20, 22, 24, 26):
        zkey = _zkey(curve, log_n)

        def a_byte(section: str, share: float) -> float:
            return table_gain(msm, zkey, section, 1, share) / table_extra_bytes(msm, zkey, section, 1)
        g1 = a_byte("a", 1.0)
        assert a_byte("b2", 1.0) / g1 == pytest.approx(G2_TABLE_MS_A_BYTE, rel=1e-3)
        assert all(a_byte(s, 1.0) == pytest.approx(g1, rel=1e-3) for s in ("h", "b1", "c"))
        seed = WitnessShape(zkey.n_vars, int(0.475 * zkey.n_vars), int(0.05 * zkey.n_vars), 4, 1, 3)
        assert table_order(seed, split=True)[0] == "h" == max(FIXED_BASE_ORDER, key=lambda s: a_byte(s, 0.05))
        assert table_order(None, split=True)[0] == "b2" == max(FIXED_BASE_ORDER, key=lambda s: a_byte(s, 1.0))

"""NttRunner.ntt's natural-order path without a GPU: its launches and buffers recorded. The passes but the
last two run in place on the data, the one before the last writes a scratch array, the last (ntt_pass's REV
form) reads it and writes the data, scaled by n^-1 only for the inverse; with three passes or more the
scratch array is allocated after the first launch; a one-pass transform runs in place with no scratch array;
the scratch array goes back after the last pass. With natural_in_place, where in_place_plan has a plan, every
pass runs on the data and the last one is ntt_pass_rev_in_place, with nothing allocated. The index arithmetic is
modelled in test_ntt_pass_model.py and the kernels are checked bit-exact in tests/gpu/test_ntt.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.launch import NTT_FUSE_REVERSE, NTT_FUSE_SCALE, PASS_ELEMENTS_LOG
from pipeline.backends.cuda import ntt as ntt_module
from pipeline.backends.cuda.ntt import NttRunner, in_place_plan, natural_plan, pass_plan
from tests.backends.cuda.launch_recorder import Recorder, recorded_ntt_runner

DATA = 0x900000


def runner(log_max: int) -> tuple[Recorder, NttRunner]:
    return recorded_ntt_runner(log_max)


@pytest.mark.parametrize("log_n", [3, 8, 9, 16, 20, 27])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("short_pass", ["top", "middle", "last"])
def test_the_last_pass_alone_reads_the_scratch_array_and_reverses(log_n, inverse, short_pass):
    rec, ntt = runner(log_n)
    ntt.natural_short_pass = short_pass
    ntt.ntt(DATA, log_n, inverse=inverse)
    plan = natural_plan(log_n, short_pass=short_pass)
    assert (plan != natural_plan(log_n)) == (short_pass != "top" and log_n in (20, 27))
    launches = [e for e in rec.events if e[0] == "launch"]
    assert len(launches) == len(plan)
    allocs = [e for e in rec.events if e[0] == "alloc"]
    elem = ntt.elem_bytes
    if len(plan) == 1:
        assert allocs == []
    else:
        assert [(a[1], a[3]) for a in allocs] == [("ntt natural order", (1 << log_n) * elem)]
        assert rec.events[-1] == ("free", "ntt natural order", allocs[0][2])  # after the last launch
        first_launch, alloc = rec.events.index(launches[0]), rec.events.index(allocs[0])
        assert (alloc > first_launch) == (len(plan) >= 3)  # queued work hides the allocation where it can
    scratch = allocs[0][2] if allocs else None
    one_over_n = ntt.fr.limbs_from_ints([ntt.fr.to_mont(pow(1 << log_n, -1, ntt.fr.modulus))])[0]
    for i, ((_, expr, args, grid, block, shared), (lo, k, tl)) in enumerate(zip(launches, plan)):
        last = i == len(plan) - 1
        src, dst = args[0], args[1]
        assert src == (scratch if last and i else DATA) and dst == (scratch if i == len(plan) - 2 else DATA)
        assert expr == f"ntt_pass<fr_t, false, {ntt.natural_radix}, {'true' if last else 'false'}>"
        assert args[3:6] == (lo, k, tl) and args[7] == int(inverse) and args[9] == log_n
        assert args[11] == int(last and inverse)
        if last and inverse:
            assert args[10] == one_over_n.tobytes()
        assert grid * (1 << (k + tl)) == 1 << log_n and shared == (1 << (k + tl)) * elem
        assert block == max((1 << (k + tl)) >> ntt.natural_radix, 1)


def test_the_separate_reversal_and_a_bad_radix():
    rec, ntt = runner(10)
    ntt.fused_reversal = False
    ntt.ntt(DATA, 10)
    exprs = [e[1] for e in rec.events if e[0] == "launch"]
    assert exprs[-1] == "ntt_bit_reverse_tiles<fr_t>" and all(x.startswith("ntt_pass_pairs") for x in exprs[:-1])
    ntt.fused_reversal, ntt.natural_radix = True, 4
    with pytest.raises(ValueError, match="natural_radix"):
        ntt.ntt(DATA, 10)


@pytest.mark.parametrize("log_n", [11, 19, 20, 21, 27])
@pytest.mark.parametrize("inverse", [False, True])
def test_the_in_place_plan_runs_every_pass_on_the_data_with_no_scratch_array(log_n, inverse):
    """natural_in_place: in_place_plan's upper passes in place on the data, then ntt_pass_rev_in_place on the
    low kr bits (one block a middle value, two sets of 2^2kr elements of shared memory), n^-1 only for the
    inverse; nothing allocated."""
    rec, ntt = runner(log_n)
    ntt.natural_in_place = True
    ntt.ntt(DATA, log_n, inverse=inverse)
    upper, kr = in_place_plan(log_n)
    launches = [e for e in rec.events if e[0] == "launch"]
    assert [e for e in rec.events if e[0] == "alloc"] == [] and len(launches) == len(upper) + 1
    for (_, expr, args, grid, block, shared), (lo, k, tl) in zip(launches, upper):
        assert expr == f"ntt_pass<fr_t, false, {ntt.natural_radix}, false>"
        assert args[:2] == (DATA, DATA) and args[3:6] == (lo, k, tl) and args[11] == 0
    _, expr, args, grid, block, shared = launches[-1]
    assert expr == f"ntt_pass_rev_in_place<fr_t, {ntt.natural_radix}>"
    assert args[0] == DATA and args[2] == kr and args[4] == int(inverse) and args[6] == log_n
    assert args[8] == int(inverse)
    if inverse:
        one_over_n = ntt.fr.limbs_from_ints([ntt.fr.to_mont(pow(1 << log_n, -1, ntt.fr.modulus))])[0]
        assert args[7] == one_over_n.tobytes()
    elems = 1 << (2 * kr + 1)
    assert grid == 1 << (log_n - 2 * kr) and shared == elems * ntt.elem_bytes
    assert block == max(min(elems, 1 << PASS_ELEMENTS_LOG) >> ntt.natural_radix, 1)


@pytest.mark.parametrize("log_n", [17, 22, 25])
def test_without_an_in_place_plan_the_scratch_array_serves(log_n):
    """A last pass of 1-2 stages (2^17, 2^25: blocks too small) or of 6-8 (2^22: two sets past shared memory)."""
    rec, ntt = runner(log_n)
    ntt.natural_in_place = True
    ntt.ntt(DATA, log_n)
    assert in_place_plan(log_n) is None
    assert [e[1] for e in rec.events if e[0] == "alloc"] == ["ntt natural order"]
    assert [e[1] for e in rec.events if e[0] == "launch"][-1] == f"ntt_pass<fr_t, false, {ntt.natural_radix}, true>"


@pytest.mark.parametrize("path", ["natural", "in place", "radix pairs", "radix groups", "coset quotient"])
@pytest.mark.parametrize("dependent", [True, False])
def test_passes_after_a_transforms_first_are_dependent_launches(monkeypatch, path, dependent):
    """dependent_passes (over kernels built with the wait): every pass but a transform's first is a dependent
    launch (its kernel waits for the pass before it); the first waits for earlier work the ordinary way, and so
    does ntt_pass_rev_in_place, which has no wait in it. Off: no dependent launch at all."""
    monkeypatch.setattr(ntt_module, "NTT_DEPENDENT_BUILT", True)
    rec, ntt = runner(21)
    ntt.dependent_passes = dependent
    if path == "natural":
        ntt.ntt(DATA, 20)
    elif path == "in place":
        ntt.natural_in_place = True
        ntt.ntt(DATA, 20)
    elif path == "coset quotient":
        ntt._coset_tables[20] = SimpleNamespace(consts=SimpleNamespace(ptr=0x555))
        ntt.radix_passes(DATA, 20, dit=True, inverse=False, coset=True, quotient=(0x100, 0x200))
    else:
        ntt.pass_kernel = path.split()[1]
        ntt.radix_passes(DATA, 20, dit=False, inverse=False)
    exprs = [e[1] for e in rec.events if e[0] == "launch"]
    assert len(exprs) == 3 and len(rec.dependent) == 3
    expected = [False, dependent, dependent and path != "in place"]
    assert rec.dependent == expected
    if path == "in place":
        assert exprs[-1].startswith("ntt_pass_rev_in_place")


@pytest.mark.parametrize("path", ["natural", "radix"])
def test_dependent_passes_over_kernels_built_without_the_wait_are_refused_before_any_launch(monkeypatch, path):
    monkeypatch.setattr(ntt_module, "NTT_DEPENDENT_BUILT", False)
    rec, ntt = runner(20)
    ntt.dependent_passes = True
    with pytest.raises(ValueError, match="NTT_DEPENDENT_BUILT"):
        ntt.ntt(DATA, 20) if path == "natural" else ntt.radix_passes(DATA, 20, dit=False, inverse=False)
    assert rec.events == []


@pytest.mark.parametrize("short_pass", ["top", "middle"])
@pytest.mark.parametrize("kernel", ["pairs", "groups"])
def test_the_radix_passes_follow_their_short_pass_plan(short_pass, kernel):
    """radix_short_pass: the radix passes launch pass_plan's plan with the short pass there, both directions."""
    for dit in (False, True):
        rec, ntt = runner(20)
        ntt.radix_short_pass, ntt.pass_kernel = short_pass, kernel
        ntt.radix_passes(DATA, 20, dit=dit, inverse=False)
        launched = [args[3:6] if kernel == "groups" else args[2:5] for e, _, args, *_ in rec.events if e == "launch"]
        assert launched == pass_plan(20, dit, short_pass=short_pass)
    ntt.radix_short_pass = "last"
    with pytest.raises(ValueError, match="top or in the middle"):
        ntt.radix_passes(DATA, 20, dit=False, inverse=False)


@pytest.mark.parametrize("log_n", [2, 9, 20, 27])
@pytest.mark.parametrize("inverse", [False, True])
def test_the_last_pass_on_the_pairs_kernel_reads_the_scratch_array(log_n, inverse):
    """natural_kernel "pairs": the passes before the last as with "groups", the last on ntt_pass_pairs with
    NTT_FUSE_REVERSE (and NTT_FUSE_SCALE, n^-1 the coset constants' first, for the inverse) from the scratch array
    (q_b) into the data, a thread a pair; a one-pass plan stays the groups kernel's."""
    rec, ntt = runner(log_n)
    ntt._coset_tables[log_n] = SimpleNamespace(consts=SimpleNamespace(ptr=0x555))
    ntt.natural_kernel = "pairs"
    ntt.ntt(DATA, log_n, inverse=inverse)
    plan = natural_plan(log_n)
    launches = [e for e in rec.events if e[0] == "launch"]
    assert len(launches) == len(plan)
    if len(plan) == 1:
        assert launches[0][1] == f"ntt_pass<fr_t, false, {ntt.natural_radix}, true>"
        return
    assert all(e[1] == f"ntt_pass<fr_t, false, {ntt.natural_radix}, false>" for e in launches[:-1])
    scratch = next(e[2] for e in rec.events if e[0] == "alloc")
    _, expr, args, grid, block, shared = launches[-1]
    _, k, tl = plan[-1]
    fuse = NTT_FUSE_REVERSE | (NTT_FUSE_SCALE if inverse else 0)
    assert expr == f"ntt_pass_pairs<fr_t, false, {'true' if inverse else 'false'}, {fuse}>"
    assert args == (DATA, 0x777, 0, k, tl, log_n, 1, 0x555 if inverse else 0, 0, scratch)
    assert grid * (1 << (k + tl)) == 1 << log_n and block == 1 << (k + tl - 1)
    assert shared == (1 << (k + tl)) * ntt.elem_bytes
    assert rec.events[-1] == ("free", "ntt natural order", scratch)


def test_the_plan_is_kept_per_size_and_settings():
    """The plan a transform runs is natural_plan's for the runner's settings at the time, also after a setting
    changes between two transforms of one size."""
    rec, ntt = runner(20)
    ntt.ntt(DATA, 20)
    ntt.natural_rev_rows_log = None
    ntt.ntt(DATA, 20)
    tls = [e[2][5] for e in rec.events if e[0] == "launch"]
    assert tls[2] == natural_plan(20)[-1][2] and tls[5] == natural_plan(20, rev_rows_log=None)[-1][2]
    assert tls[2] != tls[5]


@pytest.mark.parametrize("path", ["radix pairs", "natural pairs"])
def test_a_pairs_pass_past_2_31_elements_is_refused_before_any_launch(path):
    """The pairs kernel indexes in 32 bits: H's radix passes and the natural transform whose last pass is the pairs
    kernel's refuse 2^32 with nothing launched or allocated; the groups kernel's natural transform takes it."""
    rec, ntt = runner(32)
    with pytest.raises(ValueError, match="indexes in 32 bits"):
        if path == "radix pairs":
            ntt.radix_passes(DATA, 32, dit=False, inverse=False)
        else:
            ntt.natural_kernel = "pairs"
            ntt.ntt(DATA, 32)
    assert rec.events == []
    ntt.natural_kernel = "groups"
    ntt.ntt(DATA, 32)
    assert [e[1] for e in rec.events if e[0] == "launch"][-1] == f"ntt_pass<fr_t, false, {ntt.natural_radix}, true>"

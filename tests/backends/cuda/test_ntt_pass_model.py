"""The index arithmetic of ntt_pass's register groups and of ntt_bit_reverse_tiles, written out in
Python statement by statement (cuda_src/ntt/ntt.cuh) and run on small transforms against the
CPU reference (backends/cpu/ntt.py): a wrong group, pairing or twiddle index shows up here, before any GPU time. The
kernels themselves are checked bit-exact on the GPU (tests/gpu/test_ntt.py)."""
from __future__ import annotations

import random

import pytest

from pipeline.backends.cuda.launch import NTT_BR_TILE_LOG, NTT_NATURAL_RADIX, NTT_RADIX_BUILT
from pipeline.backends.cpu.ntt import ntt as reference_ntt
from pipeline.backends.cpu.ntt import to_odd_coset
from pipeline.backends.cuda.ntt import (coset_twiddle_index, in_place_plan, natural_plan, pass_plan, twiddle_count,
                                        twiddle_index)
from pipeline.curves import BN254


def rev(i: int, bits: int) -> int:
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


def model_stages(s, table, p, lo, k, tl, lw_base, rows, log_tw, inverse, compact, dit, radix):
    """ntt_stages<F, DIT, R, ROWS> on one block's elements ``s`` (ntt_group's statements, register groups of up
    to ``radix`` stages): ntt_pass's and ntt_pass_rev_in_place's butterflies."""
    n_elems = len(s)
    done = 0
    while done < k:
        g = min(radix, k - done)
        t0 = done if dit else k - done - g
        for b in range(n_elems >> g):  # ntt_group<F, DIT, g>
            lt, u = b & ((1 << tl) - 1), b >> tl
            vbase = ((u >> t0) << (t0 + g)) | (u & ((1 << t0) - 1))
            slots = [((vbase | (m << t0)) << tl) | lt for m in range(1 << g)]
            x = [s[e] for e in slots]
            for st in range(g):
                i = st if dit else g - 1 - st
                t = t0 + i
                for q in range(1 << (g - 1)):
                    m0 = ((q >> i) << (i + 1)) | (q & ((1 << i) - 1))
                    m1 = m0 | (1 << i)
                    v0 = vbase | (m0 << t0)
                    j = ((v0 & ((1 << t) - 1)) << lo) | (0 if rows else lw_base | lt)
                    index, neg = twiddle_index(j, lo + t, log_tw, inverse, compact)
                    w = (p - table[index]) % p if neg else table[index]  # the folded sign, undone
                    a, c = x[m0], x[m1]
                    if dit:
                        x[m0], x[m1] = (a + c * w) % p, (a - c * w) % p
                    else:
                        x[m0], x[m1] = (a + c) % p, (a - c) * w % p
            for e, v in zip(slots, x):
                s[e] = v
        done += g


def model_pass(data, table, p, lo, k, tl, log_tw, inverse, compact, dit, radix, out=None):
    """ntt_pass<F, DIT, R, REV> over every block of one launch, as the kernel indexes it: data -> data, or with
    ``out`` the REV form (a DIF transform's last pass, tl rows a block) storing into out at reversed indices."""
    n = len(data)
    log_n = n.bit_length() - 1
    n_elems = 1 << (k + tl)
    rows = out is not None
    lw_blocks_log = 0 if rows else lo - tl
    for block in range(n // n_elems):
        hi, lw_base = block >> lw_blocks_log, 0 if rows else (block & ((1 << lw_blocks_log) - 1)) << tl

        def gidx(e):
            if rows:
                return (((e & ((1 << tl) - 1)) << (log_n - k - tl)) | block) << k | (e >> tl)
            return (hi << (lo + k)) | ((e >> tl) << lo) | (lw_base | (e & ((1 << tl) - 1)))
        s = [data[gidx(e)] for e in range(n_elems)]
        model_stages(s, table, p, lo, k, tl, lw_base, rows, log_tw, inverse, compact, dit, radix)
        for e in range(n_elems):
            if rows:
                out[rev(gidx(e), log_n)] = s[e]
            else:
                data[gidx(e)] = s[e]


def model_pass_pairs(data, table, p, lo, k, tl, log_tw, inverse, compact, dit, coset=None, out=None):
    """ntt_pass_pairs<F, DIT> over every block of one launch: every thread's pair in its "registers",
    the trades between stages done for all threads at once (a shuffle or a shared-memory round).
    ``coset``: (n^-1 or None, w_2n): the forward DIT onto the odd coset (NTT_FUSE_COSET), scaled by
    n^-1 in its half-size-1 stage when given (NTT_FUSE_SCALE). ``out``: NTT_FUSE_REVERSE (a DIF transform's last
    pass, lo = 0, 2^tl rows a block): from data into out at reversed indices."""
    n, threads = len(data), 1 << (k + tl - 1)
    log_n = n.bit_length() - 1
    rows = out is not None
    lw_blocks_log = 0 if rows else lo - tl
    rows_log = (n // (threads * 2)).bit_length() - 1  # log2 of the grid: log_n - k - tl
    for block in range(n // (threads * 2)):
        his = [((b & ((1 << tl) - 1)) << rows_log) | block if rows else block >> lw_blocks_log for b in range(threads)]
        lws = [0 if rows else ((block & ((1 << lw_blocks_log) - 1)) << tl) | (b & ((1 << tl) - 1))
               for b in range(threads)]
        x, y = [0] * threads, [0] * threads
        for b in range(threads):
            vb, base = b >> tl, (his[b] << (lo + k)) | lws[b]
            in0 = base | ((vb << 1 if dit else vb) << lo)
            x[b], y[b] = data[in0], data[in0 | ((1 if dit else 1 << (k - 1)) << lo)]
        for st in range(k):
            t = st if dit else k - 1 - st
            if st > 0:
                bit = tl + (t - 1 if dit else t)
                sent = [y[b] if not (b >> bit) & 1 else x[b] for b in range(threads)]
                for b in range(threads):
                    got = sent[b ^ (1 << bit)]
                    if not (b >> bit) & 1:
                        y[b] = got
                    else:
                        x[b] = got
            for b in range(threads):
                j = (((b >> tl) & ((1 << t) - 1)) << lo) | lws[b]
                if coset:
                    index = coset_twiddle_index(j, lo + t, log_tw, compact)
                    w = table[index] if index is not None else \
                        table[twiddle_index(j, lo + t, log_tw, False, compact)[0]] * coset[1] % p
                    if coset[0] is not None and lo + t == 0:  # n^-1 x + (n^-1 w_4) y: consts[0], consts[1]
                        x[b] = x[b] * coset[0] % p
                        w = w * coset[0] % p
                elif lo + t == 0:
                    w = 1
                else:
                    index, neg = twiddle_index(j, lo + t, log_tw, inverse, compact)
                    w = (p - table[index]) % p if neg else table[index]
                a, c = x[b], y[b]
                if dit:
                    x[b], y[b] = (a + c * w) % p, (a - c * w) % p
                else:
                    x[b], y[b] = (a + c) % p, (a - c) * w % p
        for b in range(threads):
            vb, base = b >> tl, (his[b] << (lo + k)) | lws[b]
            out0 = base | ((vb if dit else vb << 1) << lo)
            out1 = out0 | ((1 << (k - 1) if dit else 1) << lo)
            if rows:
                out[rev(out0, log_n)], out[rev(out1, log_n)] = x[b], y[b]
            else:
                data[out0], data[out1] = x[b], y[b]


def twiddle_table(fr, log_tw, compact):
    p = fr.modulus
    if compact:
        w_t = fr.root_of_unity(log_tw)
        return [pow(w_t, m, p) for m in range(twiddle_count(log_tw, True))]
    return [0] + [pow(fr.root_of_unity(h.bit_length()), i - h, p)
                  for i in range(1, twiddle_count(log_tw, False)) for h in [1 << (i.bit_length() - 1)]]


@pytest.mark.parametrize("radix", NTT_RADIX_BUILT)
@pytest.mark.parametrize("log_n", [1, 2, 3, 4, 5, 7, 10])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
def test_passes_in_register_groups_compute_the_transform(radix, log_n, compact):
    fr, p = BN254.fr, BN254.fr.modulus
    log_tw = log_n + 1  # a larger domain's table, as a key's transforms read it
    table = twiddle_table(fr, log_tw, compact)
    rng = random.Random(log_n * 10 + radix)
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    for inverse in (False, True):
        expect = reference_ntt(fr, values, inverse)
        if inverse:  # the passes leave the 1/n scaling to a later step
            expect = [v * (1 << log_n) % p for v in expect]
        dif = list(values)  # natural in, bit-reversed out
        for lo, k, tl in pass_plan(log_n, dit=False):
            model_pass(dif, table, p, lo, k, tl, log_tw, inverse, compact, False, radix)
        assert [dif[rev(o, log_n)] for o in range(1 << log_n)] == expect, ("DIF", inverse)
        dit = [values[rev(i, log_n)] for i in range(1 << log_n)]  # bit-reversed in, natural out
        for lo, k, tl in pass_plan(log_n, dit=True):
            model_pass(dit, table, p, lo, k, tl, log_tw, inverse, compact, True, radix)
        assert dit == expect, ("DIT", inverse)


@pytest.mark.parametrize("stages, elements_log", [(8, 10), (3, 3), (4, 6), (10, 10)])
@pytest.mark.parametrize("log_n", [1, 2, 5, 7, 11])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
@pytest.mark.parametrize("short_pass", ["top", "middle"])
def test_passes_of_register_pairs_compute_the_transform(stages, elements_log, log_n, compact, short_pass):
    """ntt_pass_pairs (a thread's pair traded between stages) on the default plan and on plans with
    passes at lo > 0 and tl = 0 or with many low bits, the short pass at the top or in the middle, against the
    reference, both directions."""
    fr, p = BN254.fr, BN254.fr.modulus
    log_tw = log_n + 1
    table = twiddle_table(fr, log_tw, compact)
    rng = random.Random(log_n * 7 + stages)  # one generator: a value a draw, not one value n times
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    for inverse in (False, True):
        expect = reference_ntt(fr, values, inverse)
        if inverse:
            expect = [v * (1 << log_n) % p for v in expect]
        dif = list(values)
        for lo, k, tl in pass_plan(log_n, False, min(stages, max(log_n, 1)), elements_log, short_pass):
            model_pass_pairs(dif, table, p, lo, k, tl, log_tw, inverse, compact, False)
        assert [dif[rev(o, log_n)] for o in range(1 << log_n)] == expect, ("DIF", inverse)
        dit = [values[rev(i, log_n)] for i in range(1 << log_n)]
        for lo, k, tl in pass_plan(log_n, True, min(stages, max(log_n, 1)), elements_log, short_pass):
            model_pass_pairs(dit, table, p, lo, k, tl, log_tw, inverse, compact, True)
        assert dit == expect, ("DIT", inverse)


@pytest.mark.parametrize("stages, elements_log", [(8, 10), (3, 3), (4, 6)])
@pytest.mark.parametrize("log_n", [1, 2, 3, 7, 11])
@pytest.mark.parametrize("table_extra", [0, 1, 3])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
@pytest.mark.parametrize("short_pass", ["top", "middle"])
def test_the_coset_twiddles_evaluate_on_the_odd_coset(stages, elements_log, log_n, table_extra, compact, short_pass):
    """The forward DIT of ntt_pass_pairs with NTT_FUSE_COSET after the unscaled inverse DIF: the odd coset's
    evaluations, n times them without NTT_FUSE_SCALE; a table of the transform's size (the top stage's
    twiddle a product with w_2n) and of larger domains (every twiddle read)."""
    fr, p = BN254.fr, BN254.fr.modulus
    log_tw = log_n + table_extra
    table = twiddle_table(fr, log_tw, compact)
    rng = random.Random(log_n * 13 + stages + table_extra)  # one generator: a value a draw, not one value n times
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    n_inv, w2n = pow(1 << log_n, -1, p), fr.root_of_unity(log_n + 1)
    expect = to_odd_coset(fr, values)
    for scale in (n_inv, None):
        data = list(values)
        for lo, k, tl in pass_plan(log_n, False, min(stages, log_n), elements_log, short_pass):
            model_pass_pairs(data, table, p, lo, k, tl, log_tw, True, compact, False)
        for lo, k, tl in pass_plan(log_n, True, min(stages, log_n), elements_log, short_pass):
            model_pass_pairs(data, table, p, lo, k, tl, log_tw, False, compact, True, (scale if lo == 0 else None, w2n))
        assert data == (expect if scale else [v * (1 << log_n) % p for v in expect]), scale


@pytest.mark.parametrize("stages, elements_log", [(3, 3), (4, 4), (4, 6), (5, 5), (9, 10), (10, 10)])
@pytest.mark.parametrize("log_n", [9, 11])
@pytest.mark.parametrize("short_pass", ["top", "middle"])
def test_other_pass_plans_compute_the_transform(stages, elements_log, log_n, short_pass):
    """Plans of other stage counts and block sizes (NttRunner.stages_per_pass; PASS_ELEMENTS_LOG in
    small), full passes at lo > 0 with no low bits to coalesce (tl = 0) included."""
    fr, p = BN254.fr, BN254.fr.modulus
    table = twiddle_table(fr, log_n, False)
    rng = random.Random(stages * 100 + log_n)  # one generator: a value a draw, not one value n times
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    plans = [pass_plan(log_n, dit, stages, elements_log, short_pass) for dit in (False, True)]
    # the case of the 10-stage plan's middle passes at 2^21+
    if (stages, elements_log) in ((3, 3), (4, 4)) and short_pass == "top":
        assert any(lo > 0 and tl == 0 for lo, k, tl in plans[0]), plans[0]
    for inverse in (False, True):
        expect = reference_ntt(fr, values, inverse)
        if inverse:
            expect = [v * (1 << log_n) % p for v in expect]
        dif = list(values)
        for lo, k, tl in plans[0]:
            model_pass(dif, table, p, lo, k, tl, log_n, inverse, False, False, 1)
        assert [dif[rev(o, log_n)] for o in range(1 << log_n)] == expect, ("DIF", inverse)
        dit = [values[rev(i, log_n)] for i in range(1 << log_n)]
        for lo, k, tl in plans[1]:
            model_pass(dit, table, p, lo, k, tl, log_n, inverse, False, True, 1)
        assert dit == expect, ("DIT", inverse)


NATURAL_PLAN_CASES = [(8, 10), (3, 3), (4, 6), (3, 5), (10, 10)]
NATURAL_PLAN_SIZES = [1, 2, 3, 5, 7, 9, 11]


@pytest.mark.parametrize("stages, elements_log", NATURAL_PLAN_CASES)
@pytest.mark.parametrize("log_n", NATURAL_PLAN_SIZES)
@pytest.mark.parametrize("radix", NTT_RADIX_BUILT)
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
@pytest.mark.parametrize("short_pass", ["top", "middle", "last"])
@pytest.mark.parametrize("rev_rows_log", [None, 0, 1])
def test_the_natural_order_plan_stores_the_transform_in_natural_order(stages, elements_log, log_n, radix, compact,
                                                                       short_pass, rev_rows_log):
    """NttRunner.ntt's fused path: DIF passes (the first from the data into a scratch array, the middle ones in
    place there) and the REV pass from the scratch array back into the data, whose blocks hold 2^tl rows (as
    many as fill a block, or at most 2^rev_rows_log): the natural-order transform, both directions (the
    inverse's n^-1 left out), with no bit-reversal pass; the plan's short pass at the top, in the middle or last."""
    check_natural_plan(stages, elements_log, log_n, radix, compact, short_pass, rev_rows_log, "groups")


@pytest.mark.parametrize("stages, elements_log", NATURAL_PLAN_CASES)
@pytest.mark.parametrize("log_n", NATURAL_PLAN_SIZES)
@pytest.mark.parametrize("short_pass", ["top", "middle", "last"])
@pytest.mark.parametrize("rev_rows_log", [None, 0, 1])
def test_the_pairs_kernels_reversing_pass_stores_the_transform_in_natural_order(stages, elements_log, log_n,
                                                                                 short_pass, rev_rows_log):
    """The same with the last pass on the pairs kernel (NttRunner.natural_kernel "pairs", NTT_FUSE_REVERSE): its
    blocks' rows as the thread's low bits; a one-pass plan stays the groups kernel's (one block, in place)."""
    check_natural_plan(stages, elements_log, log_n, NTT_NATURAL_RADIX, False, short_pass, rev_rows_log, "pairs")


def check_natural_plan(stages, elements_log, log_n, radix, compact, short_pass, rev_rows_log, last_kernel):
    fr, p = BN254.fr, BN254.fr.modulus
    log_tw = log_n + 1
    table = twiddle_table(fr, log_tw, compact)
    rng = random.Random(log_n * 31 + stages + radix)
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    plan = natural_plan(log_n, min(stages, log_n), elements_log, short_pass, rev_rows_log)
    assert sorted(k for _, k, _ in plan) == sorted(k for _, k, _ in natural_plan(log_n, min(stages, log_n),
                                                                                 elements_log))
    lo, k, tl = plan[-1]
    full = min(elements_log - k, log_n - k)
    assert lo == 0 and tl == (full if rev_rows_log is None or k < min(stages, log_n) else min(full, rev_rows_log))
    for inverse in (False, True):
        expect = reference_ntt(fr, values, inverse)
        if inverse:
            expect = [v * (1 << log_n) % p for v in expect]
        data, scratch = list(values), [None] * (1 << log_n)
        for i, (lo, k, tl) in enumerate(plan):
            src = data if i == 0 else scratch
            last = i == len(plan) - 1
            if last and last_kernel == "pairs" and i > 0:
                model_pass_pairs(src, table, p, lo, k, tl, log_tw, inverse, compact, False, out=data)
            elif last:
                model_pass(src, table, p, lo, k, tl, log_tw, inverse, compact, False, radix, out=data)
            else:
                if i == 0:
                    scratch[:] = data  # the first pass's src -> dst, modelled as a copy and a pass in place
                model_pass(scratch, table, p, lo, k, tl, log_tw, inverse, compact, False, radix)
        assert data == expect, inverse


def model_rev_in_place(data, table, p, k, log_tw, inverse, compact, radix):
    """ntt_pass_rev_in_place<F, R> over every block of its launch, as the kernel indexes it: block m holds the
    set of middle m and that of rev(m) (or one, m its own reverse) as rows, runs the k DIF stages of the low
    bits on each row (model_stages), and stores each element at its reversed index, in place.
    Returns the index sets each live block read and wrote."""
    n = len(data)
    log_n = n.bit_length() - 1
    mid = log_n - 2 * k
    touched = []
    for m in range(1 << mid):
        mr = rev(m, mid)
        if mr < m:
            continue
        tl = k + (1 if mr != m else 0)
        n_elems = 1 << (k + tl)

        def gidx(e):
            v, lt = e >> tl, e & ((1 << tl) - 1)
            return ((lt & ((1 << k) - 1)) << (log_n - k)) | ((mr if lt >> k else m) << k) | v
        reads = [gidx(e) for e in range(n_elems)]
        s = [data[i] for i in reads]
        model_stages(s, table, p, 0, k, tl, 0, True, log_tw, inverse, compact, False, radix)
        writes = [rev(i, log_n) for i in reads]
        for i, v in zip(writes, s):
            data[i] = v
        touched.append((set(reads), set(writes)))
    return touched


# (stages, elements_log, log_n) where in_place_plan has a plan with any last pass of 1-5 stages (the model checks
# the kernel's indexing for every kr; ntt() takes 3-5): 2^9-2^13 with 8-stage passes, and plans of several passes
# with short ones
IN_PLACE_CASES = [(st, el, n) for st, el in [(8, 10), (3, 3), (4, 6), (3, 5)]
                  for n in ((9, 10, 11, 12, 13) if st == 8 else (4, 5, 7, 9, 10, 11))
                  if in_place_plan(n, min(st, n), el, last_min=1) is not None]


@pytest.mark.parametrize("stages, elements_log, log_n", IN_PLACE_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("radix", NTT_RADIX_BUILT)
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
def test_the_in_place_plan_stores_the_transform_in_natural_order(stages, elements_log, log_n, radix, compact):
    """NttRunner.ntt with natural_in_place: in_place_plan's DIF passes over the upper bits in place, then
    ntt_pass_rev_in_place on the low kr bits: the natural-order transform, both directions (n^-1 left out).
    Every live block writes exactly the indices it read (so no block overwrites what another has yet to
    read), and the blocks together read every index once; the launches are as many as natural_plan's."""
    fr, p = BN254.fr, BN254.fr.modulus
    log_tw = log_n + 1
    table = twiddle_table(fr, log_tw, compact)
    upper, kr = in_place_plan(log_n, min(stages, log_n), elements_log, last_min=1)
    assert 1 <= kr <= 5 and 2 * kr <= log_n and len(upper) + 1 == len(natural_plan(log_n, min(stages, log_n),
                                                                                     elements_log))
    assert sum(k for _, k, _ in upper) + kr == log_n and upper[-1][0] == kr
    rng = random.Random(log_n * 37 + stages + radix)
    values = [rng.randrange(p) for _ in range(1 << log_n)]
    for inverse in (False, True):
        expect = reference_ntt(fr, values, inverse)
        if inverse:
            expect = [v * (1 << log_n) % p for v in expect]
        data = list(values)
        for lo, k, tl in upper:
            model_pass(data, table, p, lo, k, tl, log_tw, inverse, compact, False, radix)
        touched = model_rev_in_place(data, table, p, kr, log_tw, inverse, compact, radix)
        assert data == expect, inverse
        assert all(reads == writes for reads, writes in touched)
        assert sorted(i for reads, _ in touched for i in reads) == list(range(1 << log_n))


def test_the_in_place_plan_keeps_the_pass_count_or_declines():
    """The plans the H200 runs (8-stage passes): 2^19-2^21 and 2^27-2^29 in place with kr = log_n mod 8, the
    rest (a bottom pass of 1-2 or 6-8 stages, or one pass) with the scratch array."""
    for log_n in range(1, 31):
        plan = in_place_plan(log_n)
        r = log_n - 8 * ((log_n - 1) // 8)
        if log_n <= 8 or not 3 <= r <= 5:
            assert plan is None, log_n
        else:
            upper, kr = plan
            assert kr == r and len(upper) + 1 == len(natural_plan(log_n)) and all(k == 8 for _, k, _ in upper)
    assert in_place_plan(20) == ([(12, 8, 2), (4, 8, 2)], 4) and in_place_plan(21)[1] == 5


def test_a_pass_plan_wider_than_a_block_is_refused():
    with pytest.raises(ValueError, match="11 stages"):
        pass_plan(20, False, stages=11, elements_log=10)


@pytest.mark.parametrize("log_n", [2 * NTT_BR_TILE_LOG, 2 * NTT_BR_TILE_LOG + 1, 2 * NTT_BR_TILE_LOG + 4])
def test_tiled_bit_reversal_is_the_permutation(log_n):
    s = NTT_BR_TILE_LOG
    w, hi_shift = 1 << s, log_n - s
    data = list(range(1 << log_n))
    out = list(data)
    touched = set()
    for m in range(1 << (log_n - 2 * s)):  # one block per m; m > rev(m) returns
        mr = rev(m, log_n - 2 * s)
        if m > mr:
            continue
        t0 = {(e >> s, e & (w - 1)): data[((e >> s) << hi_shift) | (m << s) | (e & (w - 1))] for e in range(w * w)}
        t1 = {(e >> s, e & (w - 1)): data[((e >> s) << hi_shift) | (mr << s) | (e & (w - 1))] for e in range(w * w)}
        for e in range(w * w):
            a2, b2 = e >> s, e & (w - 1)
            src = (rev(b2, s), rev(a2, s))
            for dst_m, tile in ((mr, t0), (m, t1)):
                index = (a2 << hi_shift) | (dst_m << s) | b2
                assert index not in touched or dst_m == m == mr
                touched.add(index)
                out[index] = tile[src]
    assert out == [rev(i, log_n) for i in range(1 << log_n)]


def test_where_the_short_pass_goes():
    """pass_plan's "middle": the same passes, the short one second from the top where there are three or more
    (else at the top); natural_plan's "last": the short one last (lo = 0, 2^tl rows filling its block) where it
    has NTT_SHORT_LAST_MIN_STAGES to 7 stages (else at the top); every plan's passes cover the bits once."""
    for log_n in range(1, 31):
        plan = natural_plan(log_n)
        ks, short = [k for _, k, _ in plan], plan[0][1]
        middle, last = natural_plan(log_n, short_pass="middle"), natural_plan(log_n, short_pass="last")
        for moved in (middle, last, pass_plan(log_n, False, short_pass="middle")):
            assert moved[0][0] + moved[0][1] == log_n and moved[-1][0] == 0
            assert all(lo == nxt_lo + nxt_k for (lo, _, _), (nxt_lo, nxt_k, _) in zip(moved, moved[1:]))
        assert pass_plan(log_n, True, short_pass="middle") == pass_plan(log_n, False, short_pass="middle")[::-1]
        if len(plan) >= 3 and short < 8:
            assert [k for _, k, _ in middle] == [ks[1], short, *ks[2:]], log_n
        else:
            assert middle == plan, log_n
        if len(plan) > 1 and 3 <= short < 8:
            assert [k for _, k, _ in last] == [*ks[1:], short], log_n
            assert last[-1] == (0, short, min(10 - short, log_n - short))
        else:
            assert last == plan, log_n
    assert natural_plan(20, short_pass="last") == [(12, 8, 2), (4, 8, 2), (0, 4, 6)]
    assert pass_plan(20, False, short_pass="middle") == [(12, 8, 2), (8, 4, 6), (0, 8, 0)]
    with pytest.raises(ValueError, match="top or in the middle"):
        pass_plan(20, False, short_pass="last")
    with pytest.raises(ValueError, match="not 'bottom'"):
        natural_plan(20, short_pass="bottom")

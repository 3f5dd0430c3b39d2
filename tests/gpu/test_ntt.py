"""NTT kernels (cuda_src/ntt) bit-exact with the CPU reference (pipeline/backends/cpu/ntt.py)."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.backends.cpu.ntt import ntt as ntt_ref
from pipeline.backends.cpu.ntt import quotient_on_coset, to_odd_coset
from pipeline.backends.cuda.launch import (NTT_DEPENDENT_BUILT, NTT_PASS_KERNEL, NTT_PASS_KERNELS, NTT_PASS_VARIANTS,
                                          NTT_RADIX_BUILT, STAGES_PER_PASS_COMPARED)

pytestmark = pytest.mark.gpu


def _upload_mont(backend, fr, values):
    return backend.allocator.upload(fr.limbs_from_ints([fr.to_mont(v) for v in values]), "test ntt data")


def _download_plain(backend, fr, buf, n):
    out = np.zeros((n, fr.limbs), dtype=np.uint64)
    buf.download(out, backend.stream)
    return [fr.from_mont(v) for v in fr.ints_from_limbs(out)]


def _random_words(fr, rng, n):
    """n elements' limbs from a numpy generator, each below 2^(bits-1) < p."""
    words = rng.integers(0, 2**63, size=(n, fr.limbs), dtype=np.uint64)
    words[:, -1] &= np.uint64((1 << (fr.bits - 1 - 64 * (fr.limbs - 1))) - 1)
    return words


def _random_values(fr, rng, n):
    vals = [rng.randrange(fr.modulus) for _ in range(n)]
    for i, v in enumerate([0, 1, fr.modulus - 1][:n]):
        vals[i] = v
    return vals


@pytest.mark.parametrize("log_n", [0, 1, 2, 3, 5, 8, 9, 11, 12])
@pytest.mark.parametrize("inverse", [False, True])
def test_ntt_matches_reference(cuda_backend, runtime, gpu_curve, log_n, inverse):
    fr, n = gpu_curve.fr, 1 << log_n
    values = _random_values(fr, random.Random(f"{gpu_curve.name}{log_n}{inverse}"), n)
    with _upload_mont(cuda_backend, fr, values) as d:
        runtime.ntt.ntt(d.ptr, log_n, inverse=inverse)
        got = _download_plain(cuda_backend, fr, d, n)
    assert got == ntt_ref(fr, values, inverse=inverse)


def test_ntt_round_trip_and_spot_values_at_2_20(cuda_backend, runtime, gpu_curve):
    fr, log_n = gpu_curve.fr, 20
    n, p = 1 << log_n, gpu_curve.fr.modulus
    rng = np.random.default_rng(7)
    words = _random_words(fr, rng, n)
    with cuda_backend.allocator.upload(words, "x") as d, cuda_backend.allocator.alloc(words.nbytes, "X") as d2:
        runtime.ntt.to_mont(d2.ptr, d.ptr, n)
        runtime.ntt.ntt(d2.ptr, log_n)
        spectrum = np.zeros_like(words)
        runtime.ntt.from_mont(d.ptr, d2.ptr, n)
        d.download(spectrum, cuda_backend.stream)
        runtime.ntt.ntt(d2.ptr, log_n, inverse=True)
        back = np.zeros_like(words)
        runtime.ntt.from_mont(d.ptr, d2.ptr, n)
        d.download(back, cuda_backend.stream)
    assert np.array_equal(back, words)
    x = fr.ints_from_limbs(words)
    w = fr.root_of_unity(log_n)
    got = fr.ints_from_limbs(spectrum)
    for k in (1, n - 3):  # X_k = sum_j x_j w^(jk) by Horner at w^k
        wk, acc = pow(w, k, p), 0
        for v in reversed(x):
            acc = (acc * wk + v) % p
        assert got[k] == acc


@pytest.mark.parametrize("log_n", [0, 1, 2, 4, 9, 10, 12])
def test_coset_quotient_matches_reference(cuda_backend, runtime, gpu_curve, log_n):
    fr, n = gpu_curve.fr, 1 << log_n
    rng = random.Random(f"{gpu_curve.name}q{log_n}")
    a, b, c = (_random_values(fr, rng, n) for _ in range(3))
    with _upload_mont(cuda_backend, fr, a) as da, _upload_mont(cuda_backend, fr, b) as db, \
            _upload_mont(cuda_backend, fr, c) as dc:
        runtime.ntt.quotient(da.ptr, db.ptr, dc.ptr, log_n)  # H in a's buffer
        out = np.zeros((n, fr.limbs), dtype=np.uint64)
        da.download(out, cuda_backend.stream)
    assert fr.ints_from_limbs(out) == quotient_on_coset(fr, a, b, c)


@pytest.mark.parametrize("n", [1, 255, 4096])
def test_elementwise_product_matches_reference(cuda_backend, runtime, gpu_curve, n):
    """snarkjs's c = a o b (``NttRunner.mul``, ff_mul), Montgomery in and out, with 0, 1 and p - 1
    among random values."""
    fr = gpu_curve.fr
    rng = random.Random(f"{gpu_curve.name}mul{n}")
    a, b = (([0, 1, fr.modulus - 1] + _random_values(fr, rng, n))[:n] for _ in range(2))
    b.reverse()
    with _upload_mont(cuda_backend, fr, a) as da, _upload_mont(cuda_backend, fr, b) as db, \
            cuda_backend.allocator.alloc(n * 8 * fr.limbs, "c") as dc:
        runtime.ntt.mul(dc.ptr, da.ptr, db.ptr, n)
        out = np.zeros((n, fr.limbs), dtype=np.uint64)
        dc.download(out, cuda_backend.stream)
    assert [fr.from_mont(v) for v in fr.ints_from_limbs(out)] == [x * y % fr.modulus for x, y in zip(a, b)]


@pytest.mark.parametrize("log_n", [1, 3, 9, 12])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("compact", [False, True], ids=["levels", "compact"])
def test_transforms_read_a_larger_domains_table_in_either_layout(cuda_backend, runtime, gpu_curve, log_n, inverse,
                                                                  compact):
    """One forward table of 2^16's domain serves a 2^log_n transform both ways, in the level or the
    compact layout (the inverse's sign folded into the butterfly); a layout change rebuilds it."""
    from pipeline.backends.cuda.ntt import NttRunner

    fr, n = gpu_curve.fr, 1 << log_n
    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    try:
        ntt.ensure_twiddles(16, compact=not compact)
        ntt.ensure_twiddles(5, compact=compact)  # the other layout, still for 2^16
        assert (ntt.log_max, ntt.compact) == (16, compact)
        values = _random_values(fr, random.Random(f"wide{gpu_curve.name}{log_n}{inverse}{compact}"), n)
        with _upload_mont(cuda_backend, fr, values) as d:
            ntt.ntt(d.ptr, log_n, inverse=inverse)
            got = _download_plain(cuda_backend, fr, d, n)
    finally:
        ntt.close()
    assert got == ntt_ref(fr, values, inverse=inverse)


# The scratch path: 1 pass (one block, in place), 2 passes (the scratch array in between), 5 (3-stage passes); other
# plans; 2^20's three passes: test_ntt_round_trip_and_spot_values_at_2_20. With natural_in_place, in_place_plan's
# sizes: kr = 3, 4, 5 at 2^11-2^13 (8-stage passes), 2^15 with 4-stage ones (three upper passes, kr = 3), 2^13 with 10
# (kr = 3); 2^8, 2^10 (kr = 2) and 2^16 have no in-place plan (the scratch path, as before)
# With natural_short_pass "last" (where it has 3 stages or more): 3, 4, 5, 7 stages last after 8-stage passes
# (2^11-2^13, 2^15), 3 after a 10- and a 9-stage pass; "middle" (three passes or more): 3, 1, 2, 3 stages.
NATURAL_CASES = [(k, st, "scratch")
                 for k, st in [(1, 8), (5, 8), (8, 8), (9, 8), (13, 8), (14, 3), (11, 10), (12, 9)]] + \
    [(k, st, "in-place") for k, st in [(8, 8), (10, 8), (11, 8), (12, 8), (13, 8), (15, 4), (13, 10), (16, 8)]] + \
    [(k, st, "short-last") for k, st in [(11, 8), (12, 8), (13, 8), (15, 8), (13, 10), (12, 9)]] + \
    [(k, st, "short-middle") for k, st in [(11, 4), (13, 4), (14, 3), (15, 6)]]


@pytest.mark.parametrize("log_n, stages, path", NATURAL_CASES, ids=str)
@pytest.mark.parametrize("radix_log", NTT_RADIX_BUILT, ids=lambda r: f"radix{r}")
def test_the_natural_order_transform_with_the_reversal_in_its_last_pass_matches_the_reference(
        cuda_backend, runtime, gpu_curve, log_n, stages, path, radix_log):
    """NttRunner.ntt's fused path (ntt_pass's REV form ends the DIF passes in natural order; a scratch array
    between passes; with natural_in_place, ntt_pass_rev_in_place: a block of a middle value and its reverse, no
    scratch array; with natural_short_pass, the short pass in the middle or last), forward and inverse (n^-1 in
    the last pass's stores), with every register-group size built, against the reference; the data's neighbours
    are left alone (the scratch array is the transform's own)."""
    from pipeline.backends.cuda.ntt import NttRunner, natural_plan

    fr, n = gpu_curve.fr, 1 << log_n
    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    ntt.natural_radix, ntt.stages_per_pass = radix_log, min(stages, log_n)
    ntt.natural_in_place = path == "in-place"
    ntt.natural_short_pass = path.removeprefix("short-") if path.startswith("short-") else "top"
    if path.startswith("short-"):
        assert natural_plan(log_n, ntt.stages_per_pass, short_pass=ntt.natural_short_pass) != \
            natural_plan(log_n, ntt.stages_per_pass)
    assert ntt.fused_reversal
    seed = f"fused{gpu_curve.name}{log_n}{stages}{radix_log}" + {"scratch": "", "in-place": "in place"}.get(path, path)
    values = _random_values(fr, random.Random(seed), n)
    guard = _random_values(fr, random.Random("guard"), 64)
    try:
        for inverse in (False, True):
            with _upload_mont(cuda_backend, fr, guard + values + guard) as d:
                ntt.ntt(d.ptr + 64 * ntt.elem_bytes, log_n, inverse=inverse)
                got = _download_plain(cuda_backend, fr, d, n + 128)
            assert got[:64] == guard and got[64 + n:] == guard
            assert got[64:64 + n] == ntt_ref(fr, values, inverse=inverse), inverse
    finally:
        ntt.close()


@pytest.mark.parametrize("log_n", [19, 20, 21, 22, 23])
def test_the_other_natural_plans_equal_the_default_at_the_benchmarked_sizes(cuda_backend, runtime, gpu_curve, log_n):
    """At 2^19-2^21 the in-place last pass (kr = 3, 4, 5; 2^21's blocks take 64 KiB of shared memory, past the
    default limit that CurveKernels.launch raises), and at 2^19-2^23 the short pass last (3-7 stages), each equal
    the default transform word for word, both directions (the default is checked against the reference above)."""
    from pipeline.backends.cuda.ntt import NttRunner, in_place_plan, natural_plan

    fr, n = gpu_curve.fr, 1 << log_n
    others = (["in place"] if log_n <= 21 else []) + ["short pass last"]
    assert (in_place_plan(log_n) is not None) == (log_n <= 21)
    assert natural_plan(log_n, short_pass="last") != natural_plan(log_n)
    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    rng = np.random.default_rng(log_n)
    words = _random_words(fr, rng, n)
    try:
        with cuda_backend.allocator.upload(words, "x") as d, cuda_backend.allocator.alloc(words.nbytes, "X") as d2:
            for inverse in (False, True):
                results = {}
                for plan in ["default", *others]:
                    ntt.natural_in_place = plan == "in place"
                    ntt.natural_short_pass = "last" if plan == "short pass last" else "top"
                    ntt.to_mont(d2.ptr, d.ptr, n)
                    ntt.ntt(d2.ptr, log_n, inverse=inverse)
                    results[plan] = np.zeros_like(words)
                    d2.download(results[plan], cuda_backend.stream)
                for plan in others:
                    assert np.array_equal(results["default"], results[plan]), (plan, inverse)
                assert not np.array_equal(results["default"], words)
    finally:
        ntt.close()


@pytest.mark.skipif(not NTT_DEPENDENT_BUILT, reason="the ntt kernels are built without the wait "
                                                   "(launch.NTT_DEPENDENT_BUILT off): no dependent launch to test")
@pytest.mark.parametrize("log_n", [19, 20, 21, 22])
def test_dependent_launches_of_the_later_passes_give_the_same_words(cuda_backend, runtime, gpu_curve, log_n):
    """NttRunner.dependent_passes (the passes after a transform's first as programmatic dependent launches, the
    kernels waiting for the pass before them) against every pass an ordinary launch, word for word, at the
    benchmarked sizes: the natural-order transform both ways, the radix passes of both kernels, the coset
    transform with the fused quotient (H's last step). The ordinary path is checked against the reference above,
    which runs with the default setting too."""
    _assert_settings_give_the_same_words(cuda_backend, runtime, gpu_curve.fr, log_n, log_n + 100,
                                         "dependent_passes", (False, True))


def _assert_settings_give_the_same_words(cuda_backend, runtime, fr, log_n, seed, attribute, values):
    """Each of NttRunner's ``attribute`` ``values`` gives the first one's words, on the same three vectors, for: the
    natural transform both ways, the radix passes of both kernels (DIF forward, DIT inverse) and the fused quotient
    (H's last step); and each step changes its output vector."""
    from pipeline.backends.cuda.ntt import NttRunner

    rng = np.random.default_rng(seed)
    vectors = [_random_words(fr, rng, 1 << log_n) for _ in range(3)]
    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)

    def radix(kernel, dit):
        def run(d):
            ntt.pass_kernel = kernel
            try:
                ntt.radix_passes(d[0], log_n, dit=dit, inverse=dit)
            finally:
                ntt.pass_kernel = NTT_PASS_KERNEL
        return run

    steps = {f"{kernel} {'DIT' if dit else 'DIF'}": radix(kernel, dit) for kernel in NTT_PASS_KERNELS
             for dit in (False, True)}
    steps["quotient"] = lambda d: ntt.quotient(*d, log_n)
    steps["natural forward"] = lambda d: ntt.ntt(d[0], log_n)
    steps["natural inverse"] = lambda d: ntt.ntt(d[0], log_n, inverse=True)
    try:
        for name, step in steps.items():
            results = []
            for value in values:
                setattr(ntt, attribute, value)
                bufs = [cuda_backend.allocator.upload(v, f"{attribute} {i}") for i, v in enumerate(vectors)]
                try:
                    step([b.ptr for b in bufs])
                    results.append(np.zeros_like(vectors[0]))
                    bufs[0].download(results[-1], cuda_backend.stream)
                finally:
                    for b in bufs:
                        b.free()
            assert all(np.array_equal(results[0], r) for r in results[1:]), (name, attribute)
            assert not np.array_equal(results[0], vectors[0]), name
    finally:
        ntt.close()


# 2^17 (three passes: 1 + 8 + 8 stages) with the default, tiled bit reversal only: its CPU reference
# takes seconds.
@pytest.mark.parametrize("log_n, tiled", [(k, t) for k in (1, 3, 6, 7, 8, 9, 11, 13) for t in (False, True)] + [(17, True)],
                         ids=lambda v: {False: "elementwise-reverse", True: "tiled-reverse"}.get(v, v)
                         if isinstance(v, bool) else str(v))
@pytest.mark.parametrize("pass_kernel, radix_log", NTT_PASS_VARIANTS, ids=lambda v: str(v))
def test_every_built_pass_variant_and_bit_reversal_match_the_reference(cuda_backend, runtime, gpu_curve, log_n,
                                                                       pass_kernel, radix_log, tiled):
    """Each pass kernel (launch.NTT_PASS_KERNELS; the "groups" one with each register-group size of
    launch.NTT_RADIX_BUILT) and both bit reversals, on sizes across the tile threshold (2^8), the warp
    (a "pairs" block of 2^5 threads) and the pass boundaries (2^10, 2^16): the forward and inverse
    transform (DIF + bit reversal) and the odd coset (DIF inverse, then DIT; the
    pairs kernel's coset twiddles with a table of the transform's size and of the next)."""
    from pipeline.backends.cuda.ntt import NttRunner

    fr, n = gpu_curve.fr, 1 << log_n
    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    ntt.pass_kernel, ntt.radix_log, ntt.tiled_bit_reverse = pass_kernel, radix_log, tiled
    ntt.fused_reversal = False  # the passes of this variant, then a bit-reversal pass
    values = _random_values(fr, random.Random(f"variant{gpu_curve.name}{log_n}{pass_kernel}{radix_log}{tiled}"), n)
    try:
        for inverse in (False, True):
            with _upload_mont(cuda_backend, fr, values) as d:
                ntt.ntt(d.ptr, log_n, inverse=inverse)
                assert _download_plain(cuda_backend, fr, d, n) == ntt_ref(fr, values, inverse=inverse), inverse
        for table_log in (log_n, log_n + 1):  # the pairs coset's top twiddle: a product, then read
            ntt.ensure_twiddles(table_log)
            with _upload_mont(cuda_backend, fr, values) as d:
                ntt.to_odd_coset(d.ptr, log_n)
                assert _download_plain(cuda_backend, fr, d, n) == to_odd_coset(fr, values), table_log
    finally:
        ntt.close()


@pytest.mark.parametrize("attribute, value, log_n, message", [
    ("radix_log", max(NTT_RADIX_BUILT) + 1, 4, "radix_log must be one of"),
    ("pass_kernel", "quads", 4, "pass_kernel must be one of"),
    ("pass_kernel", "pairs", 32, "indexes in 32 bits")])
def test_a_pass_variant_that_is_not_built_is_refused(cuda_backend, runtime, attribute, value, log_n, message):
    """Before any table is made or kernel launched."""
    from pipeline.backends.cuda.ntt import NttRunner

    ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    setattr(ntt, attribute, value)
    try:
        with pytest.raises(ValueError, match=message):
            ntt.radix_passes(0, log_n, dit=False, inverse=False)
        assert ntt.d_tw is None
    finally:
        ntt.close()


OTHER_PASS_KERNEL = next(k for k in NTT_PASS_KERNELS if k != NTT_PASS_KERNEL)


@pytest.mark.parametrize("stages, pass_kernel", [(s, NTT_PASS_KERNEL) for s in STAGES_PER_PASS_COMPARED] +
                         [(s, OTHER_PASS_KERNEL) for s in (8, 10)])
@pytest.mark.parametrize("log_n", [21, 22])
def test_other_pass_plans_equal_the_default_at_sizes_of_three_passes(cuda_backend, runtime, gpu_curve, stages,
                                                                     pass_kernel, log_n):
    """The pass plans bench/kernels_vs_sppark.py compares (9 or 10 stages a launch; at 2^21-2^22 a
    middle pass with no low bits to coalesce) and the other pass kernel give the default plan's
    transform, forward, inverse and on the odd coset, element for element, and X_1 by Horner."""
    from pipeline.backends.cuda.ntt import NttRunner, pass_plan

    assert len(pass_plan(log_n, False, stages)) == 3
    fr, n, p = gpu_curve.fr, 1 << log_n, gpu_curve.fr.modulus
    rng = np.random.default_rng(log_n * 100 + stages)
    words = _random_words(fr, rng, n)
    other = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
    other.stages_per_pass, other.pass_kernel = stages, pass_kernel
    outputs = {}
    try:
        for name, ntt in (("default", runtime.ntt), ("other", other)):
            for what in ("forward", "inverse", "coset"):
                with cuda_backend.allocator.upload(words, "x") as d:
                    if what == "coset":
                        ntt.to_odd_coset(d.ptr, log_n)
                    else:
                        ntt.ntt(d.ptr, log_n, inverse=what == "inverse")
                    out = np.zeros_like(words)
                    d.download(out, cuda_backend.stream)
                outputs[name, what] = out
    finally:
        other.close()
    for what in ("forward", "inverse", "coset"):
        assert np.array_equal(outputs["other", what], outputs["default", what]), what
    # the transform is linear: words read as plain integers transform like the values they encode
    x = fr.ints_from_limbs(words)
    w, acc = fr.root_of_unity(log_n), 0
    for v in reversed(x):
        acc = (acc * w + v) % p
    assert fr.ints_from_limbs(outputs["other", "forward"][1:2])[0] == acc


@pytest.mark.parametrize("log_n", [17, 18, 19, 20, 21, 22])
def test_the_short_pass_in_the_middle_gives_the_same_words(cuda_backend, runtime, gpu_curve, log_n):
    """NttRunner.radix_short_pass and natural_short_pass "middle" (the short pass second from the top: 1-6
    stages at 2^17-2^22, as at 2^25-2^30) against "top", each alone, word for word: the radix passes of both
    kernels both ways, the fused quotient (H's last step) and the natural transform (the default's results are
    checked against the reference above)."""
    from pipeline.backends.cuda.ntt import natural_plan, pass_plan

    assert pass_plan(log_n, False, short_pass="middle") != pass_plan(log_n, False)
    assert natural_plan(log_n, short_pass="middle") != natural_plan(log_n)
    for attribute in ("radix_short_pass", "natural_short_pass"):
        _assert_settings_give_the_same_words(cuda_backend, runtime, gpu_curve.fr, log_n, log_n + 200, attribute,
                                             ("top", "middle"))


@pytest.mark.parametrize("log_n", [11, 17, 20, 21])
def test_fewer_rows_in_the_reversing_pass_give_the_same_words(cuda_backend, runtime, gpu_curve, log_n):
    """NttRunner.natural_rev_rows_log 0 and 1 (the natural transform's last pass in blocks of 1 or 2 rows, runs of
    1 or 2 reversed indices) against as many rows as fill a block, word for word, both directions."""
    from pipeline.backends.cuda.ntt import natural_plan

    assert natural_plan(log_n, rev_rows_log=0) != natural_plan(log_n)
    _assert_settings_give_the_same_words(cuda_backend, runtime, gpu_curve.fr, log_n, log_n + 300,
                                         "natural_rev_rows_log", (None, 0, 1))


@pytest.mark.parametrize("log_n", [2, 9, 11, 17, 20, 21])
def test_the_pairs_kernels_reversing_pass_gives_the_same_words(cuda_backend, runtime, gpu_curve, log_n):
    """NttRunner.natural_kernel "pairs" (the natural transform's last pass on ntt_pass_pairs with NTT_FUSE_REVERSE,
    the inverse's n^-1 from the coset constants) against "groups" (ntt_pass's REV), word for word, both directions:
    2^2 is one pass (the groups kernel's either way), 2^9 a 1-stage pass above an 8-stage one."""
    _assert_settings_give_the_same_words(cuda_backend, runtime, gpu_curve.fr, log_n, log_n + 400,
                                         "natural_kernel", ("groups", "pairs"))


@pytest.mark.parametrize("log_n, in_place", [(1, False), (8, False), (9, False), (17, False), (20, False),
                                             (21, False), (20, True)], ids=str)
def test_transforms_replayed_from_graphs_give_the_plain_launches_words(cuda_backend, runtime, gpu_curve, log_n,
                                                                        in_place):
    """natural_graph_max_log: two buffers transformed in turn, three times forward, three times inverse, three times
    forward again (each buffer, size and direction queued plainly, then captured, then replayed; the two buffers'
    graphs share the size's scratch array), against a runner without graphs doing the same, word for word."""
    from pipeline.backends.cuda.ntt import NttRunner

    fr = gpu_curve.fr
    rng = np.random.default_rng(log_n + 500)
    vectors = [_random_words(fr, rng, 1 << log_n) for _ in range(2)]
    results = []
    for graph_max_log in (-1, log_n):
        ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
        ntt.natural_graph_max_log, ntt.natural_in_place = graph_max_log, in_place
        bufs = [cuda_backend.allocator.upload(v, f"graphs {i}") for i, v in enumerate(vectors)]
        try:
            for inverse in (False, True, False):
                for _ in range(3):
                    for b in bufs:
                        ntt.ntt(b.ptr, log_n, inverse=inverse)
            assert len(ntt._graphs) == (4 if graph_max_log >= 0 else 0)
            out = [np.zeros_like(v) for v in vectors]
            for b, o in zip(bufs, out):
                b.download(o, cuda_backend.stream)
            results.append(out)
        finally:
            for b in bufs:
                b.free()
            ntt.close()
    assert all(np.array_equal(a, b) for a, b in zip(*results))
    assert not np.array_equal(results[0][0], vectors[0])


@pytest.mark.parametrize("log_n", [1, 2, 8, 9, 17, 21])
def test_the_fused_quotient_equals_the_elementwise_kernels(cuda_backend, runtime, gpu_curve, log_n):
    """The pairs kernel's forward DIT onto the odd coset by its twiddles (a's scaled by n^-1 in its first
    pass, c's carrying the quotient in its last; one pass at 2^1-2^8) gives H element for element as the
    "groups" kernel with ntt_coset_scale and ntt_quotient, with a twiddle table of the transform's own size
    (the top stage's twiddle a product) and of a larger domain (every coset twiddle read); and the groups
    kernel refuses the coset transform."""
    from pipeline.backends.cuda.ntt import NttRunner

    fr, n = gpu_curve.fr, 1 << log_n
    rng = np.random.default_rng(log_n)
    vectors = []
    for _ in range(3):
        vectors.append(_random_words(fr, rng, n))  # < p: read as Montgomery forms
    outputs = {}
    for kernel, table_log in (("pairs", log_n), ("pairs", log_n + 2), ("groups", log_n)):
        ntt = NttRunner(runtime.ntt.kernels, cuda_backend.allocator, cuda_backend.stream)
        ntt.pass_kernel = kernel
        ntt.ensure_twiddles(table_log)
        try:
            assert ntt.fusible(log_n) == (kernel == "pairs")
            bufs = [cuda_backend.allocator.upload(v, f"quotient {i}") for i, v in enumerate(vectors)]
            try:
                ntt.quotient(*(b.ptr for b in bufs), log_n)
                out = np.zeros_like(vectors[0])
                bufs[0].download(out, cuda_backend.stream)
                outputs[kernel, table_log - log_n] = out
                if kernel == "groups":
                    with pytest.raises(ValueError, match="the coset transform is the forward DIT of the pairs"):
                        ntt.radix_passes(bufs[0].ptr, log_n, dit=True, inverse=False, coset=True)
            finally:
                for b in bufs:
                    b.free()
        finally:
            ntt.close()
    assert np.array_equal(outputs["pairs", 0], outputs["groups", 0])
    assert np.array_equal(outputs["pairs", 2], outputs["groups", 0])
    if log_n <= 9:  # and the CPU's quotient
        ints = [[fr.from_mont(x) for x in fr.ints_from_limbs(v)] for v in vectors]
        assert fr.ints_from_limbs(outputs["pairs", 0]) == quotient_on_coset(fr, *ints)

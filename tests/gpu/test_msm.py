"""Bucket MSM (cuda_src/msm) against the reference Pippenger (pipeline/backends/cpu/msm.py).

Edge cases: n = 1, 2, 2^k + 1; zero and one scalars (bit-heavy), r - 1 (negative top digits),
points at infinity, repeated points (P + P and P + (-P) inside buckets, forced by tiny windows),
and a 2^20 MSM checked through folding: with points tiled from 1024 distinct ones,
sum_i s_i P_(i mod 1024) = sum_j (sum_{i = j mod 1024} s_i) P_j, a 1024-point reference MSM.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.backends.cpu.msm import msm as msm_ref
from pipeline.backends.cuda.launch import G1_LEVEL0_CHUNKED_BUILT, PLAIN_SUMS
from pipeline.backends.cuda.msm import xyzz_to_jacobian

from .helpers import encode_points, random_points, scalar_words

pytestmark = pytest.mark.gpu

_POINTS: dict = {}


def _points(group, count):
    key = (group.name, count)
    if key not in _POINTS:
        _POINTS[key] = random_points(group, random.Random(group.name), count)
    return _POINTS[key]


def _edge_points(group, count):
    """``count`` random points (count > 7) with the edges a bucket sum must survive: the point at
    infinity (all-zero in the key), a repeated point (a doubling) and P beside -P."""
    points = list(_points(group, count))
    points[3] = None
    points[4] = points[5]
    points[6] = (points[7][0], group.ops.neg(points[7][1]))
    return points


def _gpu_msm(backend, runtime, curve, group, points_h, scalars, c=None):
    alloc = backend.allocator
    with alloc.upload(points_h, "points") as d_p, alloc.upload(scalar_words(curve.fr, scalars), "scalars") as d_s:
        return runtime.msm.run(group, d_p.ptr, d_s.ptr, len(scalars), c)


def _scalars(kind, fr, rng, n):
    r = fr.modulus
    if kind == "random":
        return [rng.randrange(r) for _ in range(n)]
    if kind == "bit_heavy":  # 80% in {0, 1}, like a witness of bits
        return [rng.choice((0, 1)) if rng.random() < 0.8 else rng.randrange(r) for _ in range(n)]
    if kind == "edges":
        base = [0, 1, 2, r - 1, r - 2, (r - 1) // 2, 1 << 128, (1 << 253)]
        return [base[i % len(base)] for i in range(n)]
    if kind == "small":
        return [rng.randrange(16) for _ in range(n)]
    raise ValueError(kind)


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("n,kind,c", [(1, "random", None), (2, "random", None), (33, "random", None),
                                       (33, "edges", None), (65, "small", 3), (200, "bit_heavy", None),
                                       (300, "random", 4)])
def test_msm_matches_reference(cuda_backend, runtime, gpu_curve, group_name, n, kind, c):
    group = getattr(gpu_curve, group_name)
    rng = random.Random(f"{gpu_curve.name}{group_name}{n}{kind}")
    points = _edge_points(group, n) if n > 7 else list(_points(group, n))
    scalars = _scalars(kind, gpu_curve.fr, rng, n)
    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, encode_points(gpu_curve, group, points), scalars, c)
    assert group.eq(got, msm_ref(group, points, scalars))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("c", [None, 15, 17])
def test_msm_of_unreduced_scalars_sums_them_mod_r(cuda_backend, runtime, gpu_curve, group_name, c):
    """The digit kernels take each scalar's least magnitude mod r (msm_least_magnitude): values at and past r, up
    to 2^256 - 1, sum as their residues, and those just past (r - 1) / 2 flip the point's sign (widths 15 and
    17: BLS12-381's top window holds r's top bits, past half the window)."""
    group, r = getattr(gpu_curve, group_name), gpu_curve.fr.modulus
    rng = random.Random(f"unreduced{gpu_curve.name}{group_name}{c}")
    residues = [rng.randrange(r) for _ in range(40)] + [(r - 1) // 2, (r + 1) // 2, r - 1, 0, 1, 2]
    unreduced = [v + r * rng.randrange((2**256 - 1 - v) // r + 1) for v in residues] + [r, 2 * r, 2**256 - 1]
    residues += [0, 0, (2**256 - 1) % r]
    points = _edge_points(group, len(unreduced))
    enc = encode_points(gpu_curve, group, points)
    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, unreduced, c)
    assert group.eq(got, msm_ref(group, points, residues))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_msm_of_zero_scalars_is_infinity_and_of_ones_is_the_sum(cuda_backend, runtime, gpu_curve, group_name):
    group = getattr(gpu_curve, group_name)
    points = _points(group, 100)
    enc = encode_points(gpu_curve, group, points)
    assert group.eq(_gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, [0] * 100), group.infinity)
    total = group.infinity
    for pt in points:
        total = group.add(total, group.from_affine(pt))
    assert group.eq(_gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, [1] * 100), total)


def _folding_case(gpu_curve, seed: int, kind: str = "random", n: int = 1 << 20, distinct: int = 1024):
    """(points tiled from ``distinct`` ones, n scalars, the distinct points, the folded scalars): with
    points[i] = base[i mod distinct], sum_i s_i points[i] = sum_j (sum_{i = j mod distinct} s_i) base[j], a
    small reference MSM."""
    group, fr = gpu_curve.g1, gpu_curve.fr
    base = _points(group, distinct)
    tiled = np.tile(encode_points(gpu_curve, group, base), (n // distinct, 1, 1))
    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2**63, size=(n, 4), dtype=np.uint64)
    words[:, 3] &= np.uint64((1 << (fr.bits - 1 - 192)) - 1)
    if kind == "bit_heavy":
        pick = rng.random(n)
        words[pick < 0.8] = 0
        words[pick < 0.4, 0] = 1
    scalars = fr.ints_from_limbs(words)
    folded = [0] * distinct
    for i, s in enumerate(scalars):
        folded[i % distinct] += s
    return tiled, scalars, base, [s % fr.modulus for s in folded]


@pytest.mark.parametrize("kind", ["random", "bit_heavy"])
def test_msm_g1_at_2_20_by_folding(cuda_backend, runtime, gpu_curve, kind):
    group = gpu_curve.g1
    tiled, scalars, base, folded = _folding_case(gpu_curve, 11, kind)
    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, tiled, scalars)
    assert group.eq(got, msm_ref(group, base, folded))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_binned_digit_sort_matches_the_scatter_and_the_reference(cuda_backend, runtime, gpu_curve, group_name):
    """The binned sort (msm_bin_digits, msm_place_digits) at bins of 1, 2, 8 and a window's buckets
    (max_bin_bits 0, 1, 3, unbounded), against the ranks-and-scatter sort and the reference: windows
    that leave most buckets and so whole bins empty (c = 12 over 700 points), a hot bucket
    (bit-heavy), every digit sign (edges), a tail MSM's point index (points taken in a shuffled order)."""
    group = getattr(gpu_curve, group_name)
    rng = random.Random(f"binned {gpu_curve.name} {group_name}")
    points = list(_points(group, 700))
    points[3] = None
    points[4] = points[5]
    enc = encode_points(gpu_curve, group, points)
    order = list(range(len(points)))
    rng.shuffle(order)
    msm, alloc = runtime.msm, cuda_backend.allocator
    g2 = group_name == "g2"
    try:
        for kind, c in [("random", None), ("random", 12), ("bit_heavy", 3), ("edges", 5)]:
            scalars = _scalars(kind, gpu_curve.fr, rng, len(order))
            expected = msm_ref(group, [points[j] for j in order], scalars)
            with alloc.upload(enc, "points") as d_p, alloc.upload(scalar_words(gpu_curve.fr, scalars), "s") as d_s, \
                    alloc.upload(np.array(order, dtype=np.uint32), "point index") as d_idx, \
                    alloc.alloc(msm.xyzz_bytes(g2), "result") as d_out:
                results = []
                for binned, max_bits in [(False, 31), (True, 0), (True, 1), (True, 3), (True, 31)]:
                    msm.binned_sort, msm.max_bin_bits = binned, max_bits
                    msm.enqueue(g2, d_p.ptr, d_s.ptr, len(order), d_out.ptr, c, d_point_index=d_idx.ptr)
                    raw = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
                    d_out.download(raw, cuda_backend.stream)
                    results.append(xyzz_to_jacobian(group, gpu_curve.fq, raw))
            for (binned, max_bits), got in zip([(False, 31), (True, 0), (True, 1), (True, 3), (True, 31)], results):
                assert group.eq(got, expected), (kind, c, binned, max_bits)
    finally:
        msm.binned_sort, msm.max_bin_bits = None, 31


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_scalars_from_the_host_in_pieces_match_the_reference(cuda_backend, runtime, gpu_curve, group_name):
    """Scalars copied in from host memory piece by piece, each piece's digits counted as it arrives
    (MsmRunner.sort's h_scalars, msm_count_digits over a piece with the whole MSM's rank stride): pieces of
    uneven sizes, one piece (copied whole on the runner's stream) and no copy stream, under both digit sorts
    (ranks and the scatter; binned), a tail MSM's point index, page-locked and pageable host memory; against
    the reference and against the same scalars already on the device."""
    from pipeline.backends.cuda.memory import PinnedHostBuffer

    group = getattr(gpu_curve, group_name)
    rng = random.Random(f"host pieces {gpu_curve.name} {group_name}")
    points = _edge_points(group, 700)
    enc = encode_points(gpu_curve, group, points)
    order = list(range(len(points)))
    rng.shuffle(order)
    msm, alloc, g2 = runtime.msm, cuda_backend.allocator, group_name == "g2"
    saved = (msm.scalar_pieces, msm.scalar_piece_min, msm.copy_stream, msm.binned_sort)
    settings = [(16, 100, True, False), (3, 200, True, True), (7, 1, True, False), (1, 1, True, False),
                (16, 100, False, False)]  # (most pieces, least scalars a piece, copy stream, binned)
    try:
        for kind, c in [("random", None), ("bit_heavy", 3), ("edges", 5)]:
            scalars = _scalars(kind, gpu_curve.fr, rng, len(order))
            expected = msm_ref(group, [points[j] for j in order], scalars)
            words = scalar_words(gpu_curve.fr, scalars)
            with alloc.upload(enc, "points") as d_p, alloc.alloc(words.nbytes, "s") as d_s, \
                    alloc.upload(np.array(order, dtype=np.uint32), "point index") as d_idx, \
                    alloc.alloc(msm.xyzz_bytes(g2), "result") as d_out, \
                    PinnedHostBuffer(cuda_backend.device, words.nbytes) as h_pinned:
                pinned = h_pinned.view(np.uint32, words.shape)
                pinned[:] = words
                for most, least, copies, binned in settings:
                    for host in (pinned, words):
                        msm.scalar_pieces, msm.scalar_piece_min, msm.binned_sort = most, least, binned
                        msm.copy_stream = saved[2] if copies else None
                        d_s.memset32(0, cuda_backend.stream)  # what the copy must overwrite
                        msm.enqueue(g2, d_p.ptr, d_s.ptr, len(order), d_out.ptr, c, d_point_index=d_idx.ptr,
                                    h_scalars=host)
                        raw = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
                        d_out.download(raw, cuda_backend.stream)
                        got = xyzz_to_jacobian(group, gpu_curve.fq, raw)
                        assert group.eq(got, expected), (kind, c, most, least, copies, binned, host is pinned)
                        on_device = np.zeros_like(words)
                        d_s.download(on_device, cuda_backend.stream)
                        assert np.array_equal(on_device, words)
    finally:
        msm.scalar_pieces, msm.scalar_piece_min, msm.copy_stream, msm.binned_sort = saved


def test_an_msm_g1_at_2_20_from_the_host_in_eight_pieces_by_folding(cuda_backend, runtime, gpu_curve):
    """2^20 scalars from page-locked host memory in 8 pieces of 2^17 (grids of the size a 2^24 MSM's
    pieces have), against the folded reference."""
    from pipeline.backends.cuda.memory import PinnedHostBuffer

    group, msm, alloc = gpu_curve.g1, runtime.msm, cuda_backend.allocator
    tiled, scalars, base, folded = _folding_case(gpu_curve, 12, "bit_heavy")
    words = scalar_words(gpu_curve.fr, scalars)
    saved = (msm.scalar_pieces, msm.scalar_piece_min)
    try:
        msm.scalar_pieces, msm.scalar_piece_min = 8, 1 << 17
        with alloc.upload(tiled, "points") as d_p, alloc.alloc(words.nbytes, "s") as d_s, \
                PinnedHostBuffer(cuda_backend.device, words.nbytes) as h_pinned:
            host = h_pinned.view(np.uint32, words.shape)
            host[:] = words
            got = msm.run(group, d_p.ptr, d_s.ptr, len(scalars), h_scalars=host)
    finally:
        msm.scalar_pieces, msm.scalar_piece_min = saved
    assert group.eq(got, msm_ref(group, base, folded))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_both_level0_schemes_match_the_reference_at_any_entries_a_thread(cuda_backend, runtime, gpu_curve, group_name):
    """Level 0 flat (msm_accumulate_flat: ranges of T entries across bucket boundaries, pieces placed by
    msm_piece_counts) and chunked (at most T of one bucket): T from 2 to 128, windows that leave most
    buckets empty (c = 10 over 400 points: a thread's range crosses many) or few and long (c = 3), a hot
    bucket (bit-heavy), a doubling and P + (-P) inside buckets, the point at infinity."""
    group = getattr(gpu_curve, group_name)
    rng = random.Random(f"level0 {gpu_curve.name} {group_name}")
    points = _edge_points(group, 400)
    enc = encode_points(gpu_curve, group, points)
    cases = [("random", None), ("random", 10), ("bit_heavy", 3), ("edges", 5)]
    msm = runtime.msm
    g1_blocks = msm.g1_min_blocks
    try:
        for kind, c in cases:
            scalars = _scalars(kind, gpu_curve.fr, rng, len(points))
            expected = msm_ref(group, points, scalars)
            for flat in (True, False):
                for entries in (2, 7, 64, 128):  # 128: flat's default at scale (msm.MAX_CHUNK)
                    _level0_scheme(msm, flat)
                    msm.level0_entries = entries
                    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, scalars, c)
                    assert group.eq(got, expected), (kind, c, flat, entries)
    finally:
        msm.level0_flat, msm.level0_entries, msm.g1_min_blocks = None, None, g1_blocks


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_pieces_summed_in_place_and_by_the_tree_match_the_reference(cuda_backend, runtime, gpu_curve, group_name):
    """Level 0's pieces summed in place (msm_sum_pieces: one item a bucket of up to 16; msm_sum_hot_chunks: a
    tree for hotter ones) and by the levels into fresh buffers before session 56 (MsmRunner.partial_levels):
    95% ones at 2 entries a thread put ~570 pieces in one bucket (three levels of the tree), bit-heavy ones a few
    hot buckets, random ones 1-3 pieces a bucket; a doubling, P + (-P) and the point at infinity inside."""
    group = getattr(gpu_curve, group_name)
    rng = random.Random(f"pieces {gpu_curve.name} {group_name}")
    points = _edge_points(group, 1200)
    enc = encode_points(gpu_curve, group, points)
    r = gpu_curve.fr.modulus
    mostly_ones = [1 if rng.random() < 0.95 else rng.randrange(r) for _ in points]
    cases = [(mostly_ones, 4), (_scalars("bit_heavy", gpu_curve.fr, rng, len(points)), 3),
             (_scalars("random", gpu_curve.fr, rng, len(points)), 6)]
    msm = runtime.msm
    try:
        for k, (scalars, c) in enumerate(cases):
            expected = msm_ref(group, points, scalars)
            for levels in ("in_place", "tree"):
                for entries in (2, 16, 128):
                    msm.partial_levels, msm.level0_entries = levels, entries
                    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, scalars, c)
                    assert group.eq(got, expected), (k, c, levels, entries)
    finally:
        msm.partial_levels, msm.level0_entries = "in_place", None


def _level0_scheme(msm, flat: bool) -> None:
    """Level 0 flat, or chunked at a G1 occupancy its chunked kernel is built for (launch.G1_LEVEL0_CHUNKED_BUILT;
    the default, BLS12-381's 3 blocks an SM, has none). The caller restores ``g1_min_blocks``."""
    msm.level0_flat = flat
    if not flat and msm.g1_min_blocks not in G1_LEVEL0_CHUNKED_BUILT:
        msm.g1_min_blocks = G1_LEVEL0_CHUNKED_BUILT[0]


def test_every_built_occupancy_variant_of_the_g1_bucket_kernel_matches_the_reference(cuda_backend, runtime, gpu_curve):
    """msm_accumulate_flat<fq_t, B> is instantiated for each B of launch.G1_MIN_BLOCKS_BUILT (register
    caps that trade spills for occupancy); whichever a runner picks must give the same sum."""
    from pipeline.backends.cuda.launch import G1_MIN_BLOCKS_BUILT
    group = gpu_curve.g1
    rng = random.Random(f"variants {gpu_curve.name}")
    points = list(_points(group, 300))
    points[4] = points[5]  # P + P inside a bucket (with the tiny window below)
    scalars = _scalars("edges", gpu_curve.fr, rng, 150) + _scalars("random", gpu_curve.fr, rng, 150)
    enc = encode_points(gpu_curve, group, points)
    expected = msm_ref(group, points, scalars)
    default = runtime.msm.g1_min_blocks
    try:
        for blocks in G1_MIN_BLOCKS_BUILT:
            runtime.msm.g1_min_blocks = blocks
            for c in (None, 4):
                got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, scalars, c)
                assert group.eq(got, expected), (blocks, c)
    finally:
        runtime.msm.g1_min_blocks = default


def test_every_built_g2_field_and_occupancy_variant_matches_the_reference(cuda_backend, runtime, gpu_curve):
    """The G2 bucket kernels over fq2_pair_t (two lanes a point) at each B of launch.G2_MIN_BLOCKS_BUILT,
    and over fq2_t (one thread a point): launch.G2_VARIANTS_BUILT, give the same sum: small and default windows (levels of
    partial sums, segments), a doubling inside a bucket, the ones of a split (enqueue_point_sum)."""
    from pipeline.backends.cuda.launch import G2_VARIANTS_BUILT
    group = gpu_curve.g2
    rng = random.Random(f"g2 variants {gpu_curve.name}")
    points = list(_points(group, 300))
    points[4] = points[5]
    scalars = _scalars("edges", gpu_curve.fr, rng, 150) + _scalars("random", gpu_curve.fr, rng, 150)
    enc = encode_points(gpu_curve, group, points)
    expected = msm_ref(group, points, scalars)
    msm = runtime.msm
    default = (msm.g2_field, msm.g2_min_blocks)
    try:
        for field, blocks in G2_VARIANTS_BUILT:
            msm.g2_field, msm.g2_min_blocks = field, blocks
            for c in (None, 3):
                got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, scalars, c)
                assert group.eq(got, expected), (field, blocks, c)
    finally:
        msm.g2_field, msm.g2_min_blocks = default


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("indexed", [False, True], ids=["whole", "point index"])
def test_an_msm_over_another_msms_sort_skips_the_points_below_its_section(cuda_backend, runtime, gpu_curve,
                                                                         group_name, indexed):
    """C's MSM reads A's digit sort (msm_shared_sort): the sort covers every scalar, C has no points for
    the first `skip` (the public signals), so its base is shifted back by `skip` rows and entries below
    `skip_below` add nothing and are never read. Equals the reference MSM over the suffix, with and without
    a tail MSM's point index (the split's others, in signal order), for skips of 0, 1 and 5."""
    group = getattr(gpu_curve, group_name)
    g2 = group_name == "g2"
    rng = random.Random(f"skip {gpu_curve.name} {group_name} {indexed}")
    points = list(_points(group, 300))
    points[7] = None
    n = len(points)
    signals = sorted(rng.sample(range(n), 120)) if indexed else list(range(n))  # the scalars' points
    scalars = _scalars("random", gpu_curve.fr, rng, len(signals))
    scalars[0], scalars[1] = 1, 0  # digits of the skipped prefix too
    msm, alloc = runtime.msm, cuda_backend.allocator
    with alloc.upload(scalar_words(gpu_curve.fr, scalars), "scalars") as d_s, \
            alloc.upload(np.array(signals, dtype=np.uint32), "point index") as d_idx, \
            alloc.alloc(msm.xyzz_bytes(g2), "result") as d_out:
        digits = msm.sort(d_s.ptr, len(signals), d_idx.ptr if indexed else 0)
        try:
            for skip in (0, 1, 5):
                section = encode_points(gpu_curve, group, points[skip:])  # no points for signals below skip
                row = section.nbytes // (n - skip)
                with alloc.upload(section, "section") as d_p:
                    msm.enqueue(g2, d_p.ptr - skip * row, d_s.ptr, len(signals), d_out.ptr,
                                d_point_index=d_idx.ptr if indexed else 0, digits=digits, skip_below=skip)
                    raw = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
                    d_out.download(raw, cuda_backend.stream)
                kept = [(points[j], s) for j, s in zip(signals, scalars) if j >= skip]
                expected = msm_ref(group, [p for p, _ in kept], [s for _, s in kept])
                assert group.eq(xyzz_to_jacobian(group, gpu_curve.fq, raw), expected), skip
        finally:
            digits.free()


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_point_sum_of_indexed_points_matches_the_reference_at_every_level_count(cuda_backend, runtime, gpu_curve,
                                                                               group_name):
    """enqueue_point_sum (the ones of a split witness): sum_k points[indices[k]], indices repeated
    (P + P inside a partial) and the point at infinity among the points; counts that need no level
    (1, 2), odd ones, and several levels of partial sums."""
    group = getattr(gpu_curve, group_name)
    base = list(_points(group, 64))
    base[5] = None  # the point at infinity (all-zero in the key)
    enc = encode_points(gpu_curve, group, base)
    rng = np.random.default_rng(7 if group_name == "g1" else 8)
    alloc = cuda_backend.allocator
    with alloc.upload(enc, "points") as d_p, alloc.alloc(runtime.msm.xyzz_bytes(group_name == "g2"), "out") as d_out:
        for count in (1, 2, 3, 33, 1000, 5000):
            idx = rng.integers(0, len(base), size=count, dtype=np.uint32)
            expected = group.infinity
            for i in idx:
                if base[i] is not None:
                    expected = group.add(expected, group.from_affine(base[i]))
            with alloc.upload(idx, "indices") as d_idx:
                runtime.msm.enqueue_point_sum(group_name == "g2", d_p.ptr, d_idx.ptr, count, d_out.ptr)
                raw = np.zeros(runtime.msm.xyzz_bytes(group_name == "g2") // 4, dtype=np.uint32)
                d_out.download(raw, runtime.msm.stream)
            got = xyzz_to_jacobian(group, gpu_curve.fq, raw)
            assert group.eq(got, expected), count


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("tables", ["page-locked", "spent", "memsets"])
def test_point_sums_of_a_list_match_the_reference(cuda_backend, runtime, gpu_curve, group_name, tables):
    """enqueue_point_sums (a streamed pass's ones sums of one partition and chunk): counts of no sum
    (infinity), one level (d_out written by level 0), and up to six levels through the two ping-pong
    buffers, into neighbouring slots; level tables copied from page-locked room, from room too small
    for them (memsets instead), or written by memsets."""
    from pipeline.backends.cuda.msm import PairTables, PointSum

    group, g2 = getattr(gpu_curve, group_name), group_name == "g2"
    base = list(_points(group, 64))
    base[9] = None  # the point at infinity (all-zero in the key)
    enc = encode_points(gpu_curve, group, base)
    rng = np.random.default_rng(11 if g2 else 12)
    counts = [5000, 0, 2, 70000, 1, 33]
    lists = [rng.integers(0, len(base), size=n, dtype=np.uint32) for n in counts]
    msm, alloc, slot = runtime.msm, cuda_backend.allocator, runtime.msm.xyzz_bytes(g2)
    room = {"page-locked": 4096, "spent": 8, "memsets": None}[tables]
    pair_tables = PairTables(cuda_backend.device, room) if room else None
    flat = np.concatenate(lists)
    try:
        with alloc.upload(enc, "points") as d_p, alloc.upload(flat, "indices") as d_idx, \
                alloc.alloc(slot * len(counts), "outs") as d_out:
            d_out.memset32(0xFFFFFFFF, cuda_backend.stream)  # every slot written, none left from before
            at = np.cumsum([0] + counts)
            sums = [PointSum(d_p.ptr, d_idx.ptr + 4 * int(at[k]), n, d_out.ptr + k * slot) for k, n in enumerate(counts)]
            msm.enqueue_point_sums(g2, sums, pair_tables)
            raw = np.zeros(slot * len(counts) // 4, dtype=np.uint32)
            d_out.download(raw, msm.stream)
    finally:
        if pair_tables is not None:
            pair_tables.close()
    for k, idx in enumerate(lists):
        multiplicity = np.bincount(idx, minlength=len(base))
        expected = group.infinity
        for point, m in zip(base, multiplicity):
            if point is not None and m:
                expected = group.add(expected, group.mul(group.from_affine(point), int(m)))
        got = xyzz_to_jacobian(group, gpu_curve.fq, raw[k * slot // 4:(k + 1) * slot // 4])
        assert group.eq(got, expected), (counts[k], tables)


def test_deferred_windows_combined_in_batches_match_the_reference(cuda_backend, runtime, gpu_curve):
    """enqueue with d_windows leaves the window sums in a slot; enqueue_combine combines them: six G1
    MSMs of different sizes (different window widths c, so different window counts: a launch of four
    and one of two), two G2 MSMs (c = 2: the most windows a slot holds), and an MSM of no scalars
    (infinity, nothing deferred) among them."""
    msm, alloc, fr = runtime.msm, cuda_backend.allocator, gpu_curve.fr
    rng = random.Random(f"{gpu_curve.name}-deferred")
    cases = [(False, 40, None), (False, 300, 4), (False, 700, None), (False, 0, None), (False, 65, 3),
             (False, 1000, 7), (False, 33, None), (True, 200, None), (True, 9, 2)]
    slot_bytes, win_bytes = msm.xyzz_bytes(True), msm.window_sums_bytes(True)
    with alloc.alloc(len(cases) * win_bytes, "windows") as d_win, \
            alloc.alloc(len(cases) * slot_bytes, "outs") as d_out:
        expected, deferred, keep = [], [], []
        for k, (g2, n, c) in enumerate(cases):
            group = gpu_curve.g2 if g2 else gpu_curve.g1
            points = list(_points(group, max(n, 1)))[:n]
            scalars = _scalars("random", fr, rng, n)
            expected.append(msm_ref(group, points, scalars) if n else group.infinity)
            d_p = alloc.upload(encode_points(gpu_curve, group, points or list(_points(group, 1))), "points")
            d_s = alloc.upload(scalar_words(fr, scalars or [0]), "scalars")
            keep += [d_p, d_s]
            deferred.append(msm.enqueue(g2, d_p.ptr, d_s.ptr, n, d_out.ptr + k * slot_bytes, c,
                                        d_windows=d_win.ptr + k * win_bytes))
        assert deferred[3] is None and all(d is not None for i, d in enumerate(deferred) if i != 3)
        msm.enqueue_combine(deferred)
        raw = np.zeros(len(cases) * slot_bytes // 4, dtype=np.uint32)
        d_out.download(raw, msm.stream)
        for buf in keep:
            buf.free()
    words = raw.reshape(len(cases), slot_bytes // 4)
    for k, (g2, n, c) in enumerate(cases):
        group = gpu_curve.g2 if g2 else gpu_curve.g1
        got = xyzz_to_jacobian(group, gpu_curve.fq, words[k] if g2 else words[k, : slot_bytes // 8].copy())
        assert group.eq(got, expected[k]), (k, g2, n, c)


def _msm_in_pieces(backend, runtime, g2: bool, enc: np.ndarray, words: np.ndarray, piece: int, c=None) -> np.ndarray:
    """start_buckets, add_piece over [lo, lo + piece) of the points and scalars, finish_buckets: the raw
    XYZZ result (Montgomery words)."""
    msm, alloc = runtime.msm, backend.allocator
    n, row = len(enc), enc[0].nbytes
    out = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
    with alloc.upload(enc, "points") as d_p, alloc.upload(words, "scalars") as d_s, \
            alloc.alloc(msm.xyzz_bytes(g2), "result") as d_out:
        sums = msm.start_buckets(g2, n, c)
        for lo in range(0, n, piece):
            msm.add_piece(sums, d_p.ptr + lo * row, d_s.ptr + lo * words[0].nbytes, min(piece, n - lo))
        msm.finish_buckets(sums, d_out.ptr)
        d_out.download(out, msm.stream)
    return out


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_an_msm_in_pieces_matches_the_reference_at_any_piece_size(cuda_backend, runtime, gpu_curve, group_name):
    """MsmRunner.start_buckets / add_piece / finish_buckets (a streamed H's MSM): pieces of 1, 97, 256,
    the whole and more than the whole, with the point at infinity, a repeated point and P, -P among the
    points; windows of the plan, tiny ones (c = 3: every bucket hit by every piece) and wide ones (c = 12:
    most buckets empty in most pieces); random, bit-heavy and edge scalars. The allocator gets back what it
    gave (the bucket sums are freed by finish_buckets)."""
    group = getattr(gpu_curve, group_name)
    g2 = group_name == "g2"
    rng = random.Random(f"pieces {gpu_curve.name} {group_name}")
    points = _edge_points(group, 700)
    enc = encode_points(gpu_curve, group, points)
    in_use = cuda_backend.allocator.in_use_bytes
    for kind, c in [("random", None), ("bit_heavy", 3), ("edges", 12), ("random", 12)]:
        scalars = _scalars(kind, gpu_curve.fr, rng, len(points))
        expected = msm_ref(group, points, scalars)
        for piece in (1, 97, 256, 700, 1000):
            if piece == 1 and (g2 or kind != "random"):
                continue  # 700 one-point pieces: once per curve is enough
            raw = _msm_in_pieces(cuda_backend, runtime, g2, enc, scalar_words(gpu_curve.fr, scalars), piece, c)
            got = xyzz_to_jacobian(group, gpu_curve.fq, raw)
            assert group.eq(got, expected), (kind, c, piece)
    assert cuda_backend.allocator.in_use_bytes == in_use


def test_an_msm_g1_at_2_20_in_pieces_by_folding(cuda_backend, runtime, gpu_curve):
    """2^20 points in 16 pieces of 2^16 + 3 under the whole MSM's plan (its windows, not a piece's), checked
    by folding against a 1024-point reference MSM (test_msm_g1_at_2_20_by_folding)."""
    group, fr = gpu_curve.g1, gpu_curve.fr
    tiled, scalars, base, folded = _folding_case(gpu_curve, 12)
    assert runtime.msm.plan((1 << 16) + 3, False).c != runtime.msm.plan(len(scalars), False).c
    raw = _msm_in_pieces(cuda_backend, runtime, False, tiled, scalar_words(fr, scalars), (1 << 16) + 3)
    assert group.eq(xyzz_to_jacobian(group, gpu_curve.fq, raw), msm_ref(group, base, folded))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("n,kind,c,indexed,sets", [
    (1, "random", None, False, 1), (40, "edges", 4, False, 1), (300, "random", 5, False, 1),
    (300, "bit_heavy", None, False, 1), (257, "random", 7, True, 1), (200, "small", 3, False, 1),
    (40, "edges", 4, False, 2), (300, "random", 9, False, 3), (257, "random", 7, True, 2),
    (300, "bit_heavy", 5, False, 2), (1, "random", None, False, 2), (300, "random", 3, False, 85)])
def test_an_msm_over_a_fixed_base_table_matches_the_reference(cuda_backend, runtime, gpu_curve, group_name, n, kind,
                                                              c, indexed, sets):
    """Fixed bases (pippenger.cuh): the table 2^(c w) P_i made on the device (doublings, batched inversion)
    and the digits of every window summed in one set of buckets. Equals the reference MSM for random,
    edge (0, 1, r - 1, ...), bit-heavy and small scalars, with the edge points (infinity, a repeat, P and
    -P), narrow windows (many windows, long buckets: doublings inside buckets) and a tail MSM's point
    index (scalar k multiplies point index[k] of a larger table); n = 0 is infinity. ``sets``: the bucket
    sets S (digit window w into set w mod S, the table holding every S-th window, 2^(c S) apart); S as many
    as the windows is a plain MSM's layout over a table of one window."""
    group = getattr(gpu_curve, group_name)
    g2 = group_name == "g2"
    rng = random.Random(f"table {gpu_curve.name} {group_name} {n} {kind} {c}")
    count = 2 * n + 3 if indexed else n  # the table's points; an indexed MSM picks n of them
    points = _edge_points(group, count) if count > 7 else list(_points(group, count))
    signals = sorted(rng.sample(range(count), n)) if indexed else list(range(n))
    scalars = _scalars(kind, gpu_curve.fr, rng, n)
    msm, alloc = runtime.msm, cuda_backend.allocator
    with alloc.upload(encode_points(gpu_curve, group, points), "points") as d_p, \
            alloc.upload(scalar_words(gpu_curve.fr, scalars), "scalars") as d_s, \
            alloc.upload(np.array(signals, dtype=np.uint32), "point index") as d_idx, \
            alloc.alloc(msm.xyzz_bytes(g2), "result") as d_out:
        table = msm.build_table(g2, d_p.ptr, count, c, table_sets=sets)
        try:
            assert c is None or table.plan.c == c
            assert table.plan.table_sets == min(sets, table.plan.n_windows)
            assert table.d_table.nbytes == msm.table_bytes(g2, count, c, sets)
            raw = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
            msm.enqueue_fixed(table, d_s.ptr, n, d_out.ptr, d_idx.ptr if indexed else 0)
            d_out.download(raw, cuda_backend.stream)
            expected = msm_ref(group, [points[j] for j in signals], scalars)
            assert group.eq(xyzz_to_jacobian(group, gpu_curve.fq, raw), expected)
            msm.enqueue_fixed(table, d_s.ptr, 0, d_out.ptr)
            d_out.download(raw, cuda_backend.stream)
            assert group.eq(xyzz_to_jacobian(group, gpu_curve.fq, raw), group.infinity)
        finally:
            table.free()


def test_a_fixed_base_msm_at_2_20_by_folding_matches_the_reference(cuda_backend, runtime, gpu_curve):
    """A table at the plan's own width (c = 16, 16 windows at 2^20: ~400 entries a bucket, several levels
    of partials) over 2^20 points tiled from 1024 distinct ones, checked by folding (module docstring)."""
    group = gpu_curve.g1
    tiled, scalars, base, folded = _folding_case(gpu_curve, 2020)
    msm, alloc = runtime.msm, cuda_backend.allocator
    with alloc.upload(tiled, "points") as d_p, alloc.upload(scalar_words(gpu_curve.fr, scalars), "scalars") as d_s:
        table = msm.build_table(False, d_p.ptr, len(scalars))
        try:
            got = msm.run_fixed(group, table, d_s.ptr, len(scalars))
        finally:
            table.free()
    assert group.eq(got, msm_ref(group, base, folded))


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_bucket_sums_over_the_lazy_field_and_the_plain_one_match_the_reference(cuda_backend, runtime, gpu_curve,
                                                                              group_name):
    """MsmRunner.lazy picks the bucket kernels over the lazy form of Fq (launch.LAZY_FIELDS, values in [0, 2p)
    inside a thread; by default but for launch.PLAIN_SUMS) or over the plain field: both give the reference sum, with the edges a
    bucket must survive (infinity, P + P, P + -P), both level-0 schemes, small windows (many partial levels)
    and the split's point sums."""
    group = getattr(gpu_curve, group_name)
    g2 = group_name == "g2"
    rng = random.Random(f"lazy msm {gpu_curve.name} {group_name}")
    points = _edge_points(group, 400)
    enc = encode_points(gpu_curve, group, points)
    scalars = _scalars("edges", gpu_curve.fr, rng, 200) + _scalars("random", gpu_curve.fr, rng, 200)
    expected = msm_ref(group, points, scalars)
    msm = runtime.msm
    measured_plain = (gpu_curve.name, group_name.upper()) in PLAIN_SUMS
    assert msm.lazy is None and ("lazy" in msm._sum_field(g2)) != measured_plain  # the default: as measured
    g1_blocks = msm.g1_min_blocks
    try:
        for lazy in (True, False):
            msm.lazy = lazy
            assert ("lazy" in msm._sum_field(g2)) == lazy
            for flat in (True, False):
                _level0_scheme(msm, flat)
                for c in (None, 3):
                    got = _gpu_msm(cuda_backend, runtime, gpu_curve, group, enc, scalars, c)
                    assert group.eq(got, expected), (lazy, flat, c)
            ones = [i for i, s in enumerate(scalars) if s == 1]
            alloc = cuda_backend.allocator
            with alloc.upload(enc, "points") as d_p, \
                    alloc.upload(np.array(ones, dtype=np.uint32), "indices") as d_i, \
                    alloc.alloc(msm.xyzz_bytes(g2), "sum") as d_out:
                msm.enqueue_point_sum(g2, d_p.ptr, d_i.ptr, len(ones), d_out.ptr)
                words = np.zeros(msm.xyzz_bytes(g2) // 4, dtype=np.uint32)
                d_out.download(words, msm.stream)
            want = msm_ref(group, [points[i] for i in ones], [1] * len(ones))
            assert group.eq(xyzz_to_jacobian(group, gpu_curve.fq, words), want), ("point sum", lazy)
    finally:
        msm.lazy, msm.level0_flat, msm.g1_min_blocks = None, None, g1_blocks

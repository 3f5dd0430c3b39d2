"""A streamed pass (points in chunks, several partitions per pass) gives the resident MSMs bit
for bit: the chunk plan covers every point once, the C section's offset and the H walk are
right, partial sums add up, and a partition that leaves mid-pass gets no result."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from pipeline.backends.cpu import CpuBackend
from pipeline.backends.placement import PASS_POOL, HostSplit, KeyPlacement, SECTIONS, plan_chunks, section_span
from pipeline.formats.binfile import ROWS_PER_TASK, over_chunks, worker_pool
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from tests.conftest import fixture_dir


def key_and_witnesses(curve_name: str, circuit: str = "chain_2e8"):
    d = fixture_dir(curve_name, circuit)
    zkey = read_zkey(d / "circuit_final.zkey")
    w = read_wtns(d / "witness.wtns").values
    rng = np.random.default_rng(7)
    # A second witness of the same shape: random scalars below r (no constraint need hold for MSMs).
    other = w.copy()
    other[:, :] = rng.integers(0, 2**63, size=other.shape, dtype=np.uint64)
    other[:, -1] >>= 8
    heavy = np.zeros_like(w)  # bit-heavy: the split walk's ones and a short tail
    heavy[:, 0] = rng.random(len(w)) < 0.9
    heavy[::7] = other[::7]
    return zkey, [np.ascontiguousarray(w), other, heavy]


@pytest.mark.parametrize("resident,chunk_signals,chunk_h", [((), 37, 50), (("h",), 100, 0), (("a", "c"), 1, 64),
                                                            (("b2",), 10_000, 7)])
def test_chunk_plan_covers_every_streamed_point_once(resident, chunk_signals, chunk_h):
    zkey, _ = key_and_witnesses("bn128")
    placement = KeyPlacement(resident, chunk_signals, chunk_h)
    seen = {s: [] for s in SECTIONS}
    for chunk in plan_chunks(zkey, placement):
        step = chunk_signals if chunk.scalars == "witness" else chunk_h
        assert 0 < chunk.hi - chunk.lo <= step
        for s in chunk.slices:
            first, _ = section_span(zkey, s.section)
            assert chunk.lo + s.scalar_offset == first + s.point_lo  # the scalar of each point
            assert chunk.lo + s.scalar_offset + s.count <= chunk.hi
            seen[s.section].extend(range(s.point_lo, s.point_hi))
    for s in SECTIONS:
        expected = [] if s in resident else list(range(section_span(zkey, s)[1]))
        assert seen[s] == expected, s


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_streamed_pass_equals_resident_msms(curve_name):
    zkey, witnesses = key_and_witnesses(curve_name)
    backend = CpuBackend()
    resident = backend.load_key(zkey)
    expected = []
    for w in witnesses:
        expected.append(backend.msms(resident, w, backend.compute_h(resident, w)))
    # chunk sizes that divide nothing; H partly resident in one, fully streamed in the other
    for placement in (KeyPlacement((), 37, 61), KeyPlacement(("h", "b1"), 100, 0)):
        key = backend.load_key(zkey, placement)
        assert backend.max_batch(key) > 1
        work = backend.start_batch(key, [(w, None) for w in witnesses], with_b_g2=True)
        steps = 0
        while work.enqueue_next([True] * len(witnesses)):
            steps += 1
        assert steps == len(witnesses) + len(plan_chunks(zkey, placement))
        got = work.results()
        g1, g2 = zkey.curve.g1, zkey.curve.g2
        for e, r in zip(expected, got):
            for name in ("a_g1", "b_g1", "c_g1", "h_g1"):
                assert g1.eq(getattr(r, name), getattr(e, name)), (placement, name)
            assert g2.eq(r.b_g2, e.b_g2), placement


def test_a_partition_that_leaves_mid_pass_gets_no_result_and_the_others_are_exact():
    zkey, witnesses = key_and_witnesses("bn128")
    backend = CpuBackend()
    resident = backend.load_key(zkey)
    w = witnesses[1]
    expected = backend.msms(resident, w, backend.compute_h(resident, w), with_b_g2=False)
    key = backend.load_key(zkey, KeyPlacement((), 50, 128))
    work = backend.start_batch(key, [(witnesses[0], None), (w, None)], with_b_g2=False)
    assert work.chunks and all(s.section != "b2" for c in work.chunks for s in c.slices)  # B2 is the host's
    active = [True, True]
    steps = 0
    while work.enqueue_next(active):
        steps += 1
        if steps == 3:  # both prologues and one chunk done: the first partition is cancelled
            active = [False, True]
    first, second = work.results()
    assert first is None
    assert second.b_g2 is None
    assert zkey.curve.g1.eq(second.a_g1, expected.a_g1) and zkey.curve.g1.eq(second.h_g1, expected.h_g1)


def test_placement_rejects_unknown_sections_and_missing_chunk_sizes():
    with pytest.raises(ValueError, match="unknown key sections"):
        KeyPlacement(("a", "z"))
    with pytest.raises(ValueError, match="chunk_signals"):
        KeyPlacement(("h",), 0, 0)
    with pytest.raises(ValueError, match="chunk_h"):
        KeyPlacement(("a", "b1", "b2", "c"), 0, 0)
    assert KeyPlacement().mode == "resident"
    assert KeyPlacement(("h",), 8, 0).mode == "partly resident"
    assert KeyPlacement((), 8, 8).mode == "streamed"


def test_csr_row_chunks_cover_every_entry_once_and_split_between_rows():
    from pipeline.backends.cuda.csr_stream import plan_csr_chunks

    rng = np.random.default_rng(3)
    counts_a = rng.integers(0, 6, size=1000)
    counts_b = rng.integers(0, 4, size=1000)
    counts_a[500] = 400  # one row larger than a chunk
    a = np.concatenate([[0], np.cumsum(counts_a)]).astype(np.uint32)
    b = np.concatenate([[0], np.cumsum(counts_b)]).astype(np.uint32)
    chunks = plan_csr_chunks(a, b, max_bytes=36 * 50, elem=32)
    assert chunks[0].r0 == 0 and chunks[-1].r1 == 1000
    for prev, ch in zip(chunks, chunks[1:]):
        assert prev.r1 == ch.r0 and prev.a1 == ch.a0 and prev.b1 == ch.b0
    for ch in chunks:
        assert (ch.a0, ch.a1, ch.b0, ch.b1) == (a[ch.r0], a[ch.r1], b[ch.r0], b[ch.r1])
        assert ch.nbytes(32) <= 36 * 50 or ch.r1 - ch.r0 == 1  # only a single huge row goes over
    assert any(ch.r1 - ch.r0 == 1 and ch.r0 == 500 for ch in chunks)


def test_the_host_split_gathers_a_sections_other_points_with_their_scalars():
    """HostSplit.others_of: the points whose scalars are neither 0 nor 1, in signal order, for a
    section that starts at a later signal (C), with their scalars; the whole tail MSM's input."""
    rng = np.random.default_rng(5)
    n = 5000
    witness = np.zeros((n, 4), dtype=np.uint64)
    kind = rng.integers(0, 3, size=n)
    witness[kind == 1, 0] = 1
    witness[kind == 2] = rng.integers(0, 2**62, size=(int((kind == 2).sum()), 4), dtype=np.uint64)
    split = HostSplit(witness)
    points = rng.integers(0, 2**63, size=(n - 9, 2, 6), dtype=np.uint64)  # point k is signal 9 + k
    got_points, got_scalars = split.others_of(points, 9, n - 9)
    others = [x for x in range(9, n) if kind[x] == 2 and witness[x].any()]
    assert np.array_equal(got_points, points[[x - 9 for x in others]])
    assert np.array_equal(got_scalars, witness[others])
    staged = np.full_like(got_points, 7)  # into a caller's buffer (the streamed pass's pinned staging)
    again, _ = split.others_of(points, 9, n - 9, out=staged)
    assert again is staged and np.array_equal(staged, got_points)
    with pytest.raises(ValueError, match="out is"):
        split.others_of(points, 9, n - 9, out=staged[1:])


def test_the_host_split_finds_a_signal_ranges_ones_and_others_without_copying_them():
    """HostSplit.ranges against a count, edges included; and it searches the index arrays in
    place: numpy, given Python ints, would search an int64 copy of each (tens of MB per call at
    seed scale, once per chunk slice and partition)."""
    import tracemalloc

    rng = np.random.default_rng(8)
    n = 1 << 18
    witness = np.zeros((n, 4), dtype=np.uint64)
    kind = rng.integers(0, 3, size=n)
    witness[kind == 1, 0] = 1
    witness[kind == 2, 1] = 7
    split = HostSplit(witness)
    for lo, hi in [(0, 0), (0, n), (n, n), (1, 2), *sorted(map(tuple, np.sort(rng.integers(0, n, (20, 2)))))]:
        (o0, o1), (t0, t1) = split.ranges(lo, hi)
        assert o1 - o0 == int((kind[lo:hi] == 1).sum()) and t1 - t0 == int((kind[lo:hi] == 2).sum())
        assert (o0, t0) == (int((kind[:lo] == 1).sum()), int((kind[:lo] == 2).sum()))
    tracemalloc.start()
    try:
        split.ranges(n // 3, n // 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < split.ones.nbytes // 8, f"ranges allocated {peak} bytes"


def test_the_host_split_never_queues_behind_a_full_formats_pool():
    """A streamed pass builds its host split and gathers its tails under the GPU lock, while
    prep_msm scans the next partitions' witnesses on the formats pool: the pass has a pool of its
    own (placement.PASS_POOL), so a formats pool busy with blocked tasks does not hold it up."""
    release = threading.Event()
    formats = worker_pool()
    blockers = [formats.submit(release.wait, 30) for _ in range(2 * formats._max_workers)]  # every worker, and a queue
    try:
        n = 3 * ROWS_PER_TASK  # several tasks: they go to a pool, not the caller's thread
        witness = np.zeros((n, 4), dtype=np.uint64)
        witness[::3, 0] = 1
        witness[1::3] = 5
        built: list = []
        caller = threading.Thread(target=lambda: built.append(HostSplit(witness)))
        caller.start()
        caller.join(timeout=20)  # it would wait the blockers' 30 s if it shared their pool
        assert built, "HostSplit waited behind the formats pool"
        split = built[0]
        assert len(split.ones) == len(range(0, n, 3)) and len(split.others) == len(range(1, n, 3))
        names: set[str] = set()
        over_chunks(n, ROWS_PER_TASK, lambda a, b: names.add(threading.current_thread().name), pool=PASS_POOL)
        assert names and all(name.startswith(f"zkpipe-{PASS_POOL}") for name in names)
        assert not any(b.done() for b in blockers)
    finally:
        release.set()
        for b in blockers:
            b.result(timeout=30)

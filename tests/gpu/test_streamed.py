"""Streamed keys on the GPU (backends/cuda/streamed.py): a pass over points streamed from
page-locked host memory, several partitions at once, gives the resident path's MSMs bit for bit
(both curves, G1 and G2, chunk sizes that divide nothing, H resident or streamed, a partition
that leaves mid-pass); a budget smaller than the key places it streamed; the engine proves with
such a key under such a budget, every proof valid, the device allocator never past its budget."""
from __future__ import annotations

import asyncio
from dataclasses import replace

import numpy as np
import pytest

from pipeline.backends.cuda.errors import DeviceBudgetError
from pipeline.backends.placement import SECTIONS, KeyPlacement, plan_chunks
from pipeline.backends.protocol import WitnessShape
from pipeline.engine import Engine, EngineConfig
from pipeline.formats.types import VerificationKey
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.verifier import verify
from tests.conftest import fixture_dir

pytestmark = pytest.mark.gpu

# H streamed in the pass's chunks, resident, then through each partition's prologue in pieces (17 of 61
# points, and 1000 + 24 of a 2^10 domain)
PLACEMENTS = [KeyPlacement((), 37, 61), KeyPlacement(("h",), 100, 0), KeyPlacement(("a", "b2"), 1024, 1000),
              KeyPlacement((), 37, 61, h_per_partition=True), KeyPlacement(("a", "b2"), 1024, 1000, h_per_partition=True)]


def placement_id(p: KeyPlacement) -> str:
    return f"{p.mode}-{p.chunk_signals}-{p.chunk_h}" + ("-h-per-partition" if p.h_per_partition else "")


def witnesses(curve_name: str, circuit: str = "chain_2e10"):
    d = fixture_dir(curve_name, circuit)
    zkey = read_zkey(d / "circuit_final.zkey")
    w = np.ascontiguousarray(read_wtns(d / "witness.wtns").values)
    rng = np.random.default_rng(11)
    other = rng.integers(0, 2**63, size=w.shape, dtype=np.uint64)
    other[:, -1] >>= 8  # below r for both curves
    bits = (rng.random(len(w)) < 0.9).astype(np.uint64)  # a bit-heavy one
    heavy = np.zeros_like(w)
    heavy[:, 0] = bits
    return zkey, [w, other, heavy]


def resident_results(backend, zkey, items) -> list:
    """Each witness's MSMs with the key resident: what every streamed pass must equal."""
    resident = backend.load_key(zkey)
    try:
        return [backend.start_partition(resident, w, True, None).result() for w in items]
    finally:
        backend.unload_key(resident)


def assert_same_msms(curve, expected, got) -> None:
    for e, r in zip(expected, got, strict=True):
        for name in ("a_g1", "b_g1", "c_g1", "h_g1"):
            assert curve.g1.eq(getattr(r, name), getattr(e, name)), name
        assert curve.g2.eq(r.b_g2, e.b_g2)


def run_batch(backend, key, items, with_b_g2=True, leave_at=None, shapes=False, inspect=None):
    """The pass, as the engine drives it; ``shapes``: with each witness's WitnessShape, so that the
    bit-heavy ones take the 0 / 1 split; ``inspect(work)``: called once the pass is done, before
    its results (which close it)."""
    prefix = key.zkey.n_public + 1
    work = backend.start_batch(key, [(w, WitnessShape.of(w, prefix) if shapes else None) for w in items], with_b_g2)
    active = [True] * len(items)
    steps = 0
    while work.enqueue_next(active):
        steps += 1
        asyncio.run(work.wait_for_room())
        if leave_at is not None and steps == leave_at[0]:
            active[leave_at[1]] = False
    asyncio.run(work.wait())
    if inspect is not None:
        inspect(work)
    return work.results()


@pytest.mark.parametrize("shapes", [False, True], ids=["plain", "split"])
@pytest.mark.parametrize("placement", PLACEMENTS, ids=placement_id)
def test_streamed_pass_equals_resident_partitions(cuda_backend, gpu_curve, placement, shapes):
    zkey, items = witnesses(gpu_curve.name)
    expected = resident_results(cuda_backend, zkey, items)
    in_use = cuda_backend.allocator.in_use_bytes
    key = cuda_backend.load_key(zkey, placement)
    try:
        got = run_batch(cuda_backend, key, items, shapes=shapes)
        assert cuda_backend.allocator.in_use_bytes == in_use + key.resident_bytes  # the pass gave back its scratch
    finally:
        cuda_backend.unload_key(key)
    assert_same_msms(gpu_curve, expected, got)


@pytest.mark.parametrize("h_per_partition", [False, True], ids=["h-in-chunks", "h-per-partition"])
def test_a_partition_that_leaves_mid_pass_has_no_result_and_the_rest_are_exact(cuda_backend, gpu_curve,
                                                                               h_per_partition):
    zkey, items = witnesses(gpu_curve.name)
    placement = KeyPlacement((), 100, 300, h_per_partition=h_per_partition)
    resident = cuda_backend.load_key(zkey)
    try:
        expected = cuda_backend.start_partition(resident, items[2], False, None).result()
    finally:
        cuda_backend.unload_key(resident)
    key = cuda_backend.load_key(zkey, placement)
    try:
        assert len(plan_chunks(zkey, placement)) > 4
        got = run_batch(cuda_backend, key, items, with_b_g2=False, leave_at=(len(items) + 2, 0))
    finally:
        cuda_backend.unload_key(key)
    assert got[0] is None and got[2].b_g2 is None
    assert gpu_curve.g1.eq(got[2].a_g1, expected.a_g1) and gpu_curve.g1.eq(got[2].h_g1, expected.h_g1)


def resident_need(backend, zkey) -> int:
    """Device bytes of the key resident plus one partition's scratch: a budget one byte smaller
    must stream some of it."""
    key = backend.load_key(zkey)
    try:
        return backend.key_device_bytes(zkey) + backend.scratch_bytes(key, 1)
    finally:
        backend.unload_key(key)


def test_place_key_streams_under_a_small_budget_and_refuses_one_too_small(cuda_backend, gpu_curve):
    zkey, _ = witnesses(gpu_curve.name)
    need = resident_need(cuda_backend, zkey)
    assert cuda_backend.place_key(zkey, None).mode == "resident"
    assert cuda_backend.place_key(zkey, need).mode == "resident"
    # Well below the resident need, above what streaming every point still needs (the NTT's tables,
    # one partition's H phase): a half of the need was under that floor once a partition held three
    # vectors instead of five.
    for budget in (need - 1, need * 3 // 4):
        small = cuda_backend.place_key(zkey, budget)
        assert small.mode in ("streamed", "partly resident")
        key = cuda_backend.load_key(zkey, small)
        try:
            assert small.device_bytes + cuda_backend.scratch_bytes(key, 1) <= budget
        finally:
            cuda_backend.unload_key(key)
    with pytest.raises(DeviceBudgetError, match="even with every point streamed"):
        cuda_backend.place_key(zkey, 4096)


@pytest.mark.parametrize("table", [False, True], ids=["values", "coefficient-table"])
@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_engine_proves_with_a_key_larger_than_its_vram_budget(cuda_backend, curve, table):
    """With ``table``, the key's coefficients as indices into its table of values
    (CudaOptions.csr_value_table): a smaller key, placed by its own size."""
    folder = fixture_dir(curve, "chain_2e10")
    zkey = read_zkey(folder / "circuit_final.zkey")
    default, cuda_backend.csr_value_table = cuda_backend.csr_value_table, table
    try:
        budget = resident_need(cuda_backend, zkey) - 1
    finally:
        cuda_backend.csr_value_table = default

    async def main():
        config = EngineConfig(backend="cuda", devices=(0,), gpu_workers_per_device=2, vram_budget_bytes=budget,
                              queue_size=10, max_partitions_in_flight=12, gpu_batch_max=5,
                              cuda=replace(cuda_backend.options, csr_value_table=table))  # the options the budget was measured with
        async with Engine(config) as engine:
            engine.register_key("k", zkey_path=folder / "circuit_final.zkey")
            jobs = [await engine.submit("k", [str(folder / "witness.wtns")] * 5) for _ in range(2)]
            proofs = [p for job in jobs for p in await job.result()]
            return proofs, engine.status()

    proofs, status = asyncio.run(main())
    assert status["keys"]["keys"]["k"]["placement"]["0"] in ("streamed", "partly resident")
    assert max(p.timings_ms["gpu_batch"] for p in proofs) > 1
    assert status["devices"][0]["vram"]["peak_bytes"] <= budget
    vk = VerificationKey.from_zkey(zkey)
    assert all(verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c) for p in proofs)


@pytest.mark.parametrize("table", [False, True], ids=["values", "coefficient-table"])
def test_h_with_the_csr_streamed_in_row_chunks_equals_the_resident_h(cuda_backend, gpu_curve, table):
    """The sparse products read the CSR in row chunks of a few hundred bytes (many chunks, rows
    split anywhere), with every point section resident or streamed; with ``table``
    (CudaOptions.csr_value_table) the coefficients are uint16 indices into the key's table of
    values, resident or streamed, and H is the same bit for bit."""
    zkey, items = witnesses(gpu_curve.name)
    resident = cuda_backend.load_key(zkey)
    try:
        expected_h = cuda_backend.h_to_host(h := cuda_backend.compute_h(resident, items[0]))
        h.free()
        expected = cuda_backend.start_partition(resident, items[1], True, None).result()
    finally:
        cuda_backend.unload_key(resident)
    default, cuda_backend.csr_value_table = cuda_backend.csr_value_table, table
    try:
        chunk = 1 << 9 if table else 1 << 12  # a table's entries are 6 bytes, not 36: smaller chunks, as many
        placements = [KeyPlacement(points, 300, 200, csr_chunk_bytes=chunk) for points in (SECTIONS, ())]
        for placement in placements + [KeyPlacement()] * table:  # the table's resident CSR too
            key = cuda_backend.load_key(zkey, placement)
            try:
                assert ("vals_table" in key.d_csr) == table
                assert placement.csr_chunk_bytes == 0 or len(key.csr_chunks) > 10
                h = cuda_backend.compute_h(key, items[0])
                assert np.array_equal(cuda_backend.h_to_host(h), expected_h)
                h.free()
                got = run_batch(cuda_backend, key, [items[1]])[0]
            finally:
                cuda_backend.unload_key(key)
            assert gpu_curve.g1.eq(got.h_g1, expected.h_g1) and gpu_curve.g2.eq(got.b_g2, expected.b_g2)
    finally:
        cuda_backend.csr_value_table = default


def mixed_items(curve_name: str):
    """A witness of 95% bits and full-width values below r, and one of bits only."""
    zkey, (_, _, heavy) = witnesses(curve_name)
    rng = np.random.default_rng(13)
    mixed = heavy.copy()
    some = rng.random(len(mixed)) < 0.05
    mixed[some] = rng.integers(0, 2**63, size=(int(some.sum()), mixed.shape[1]), dtype=np.uint64) >> np.uint64(8)
    return zkey, [mixed, heavy]


def run_with_tails(backend, key, items, tails: str) -> tuple[list, list[bool], list[bool]]:
    """The pass with stream_tails ``tails`` ("prologue-host": the host splits and gathers);
    (results, tails_done, which partitions the device split)."""
    from pipeline.backends.cuda.streamed import CudaStreamedPass
    default, backend.stream_tails = backend.stream_tails, tails.split("-")[0]
    CudaStreamedPass.device_tails = tails != "prologue-host"
    seen: dict[str, list[bool]] = {}

    def inspect(work) -> None:
        seen["done"] = list(work.tails_done)
        seen["device"] = [lists is not None for lists in work.split_lists]
    try:
        got = run_batch(backend, key, items, shapes=True, inspect=inspect)
    finally:
        backend.stream_tails = default
        CudaStreamedPass.device_tails = True
    return got, seen["done"], seen["device"]


@pytest.mark.parametrize("tails", ["prologue", "prologue-host", "chunks"])
@pytest.mark.parametrize("placement", PLACEMENTS, ids=placement_id)
def test_tails_in_the_prologue_or_the_chunks_equal_the_resident_msms(cuda_backend, gpu_curve, placement, tails):
    """stream_tails="prologue" (the default): a bit-heavy witness's values other than 0 and 1 go
    through one MSM per section over points gathered on the device from the mapped key, the split
    made there too ("prologue-host": split and gathered on the host), where the prologue's room
    allows; else the chunks run them. "chunks": a tail MSM per chunk slice. The same sums as the
    resident MSMs, bit for bit, every way."""
    zkey, items = mixed_items(gpu_curve.name)
    expected = resident_results(cuda_backend, zkey, items)
    key = cuda_backend.load_key(zkey, placement)
    try:
        got, done, device = run_with_tails(cuda_backend, key, items, tails)
    finally:
        cuda_backend.unload_key(key)
    if tails == "chunks":
        assert done == [False, False] and device == [False, False]
    elif "a" in placement.resident:  # room from the resident MSMs' scratch: the tails fit the prologue
        assert done == [True, True]
        assert device == [tails == "prologue"] * 2
    assert all(d <= t for d, t in zip(device, done))  # a device split always runs its tails
    assert_same_msms(gpu_curve, expected, got)


def test_device_split_of_a_key_streamed_whole_equals_the_resident_msms(cuda_backend, gpu_curve):
    """Every section streamed (the seed's case under a small budget), the split and the tails on
    the device: the fixture's prologue is too small for the tails, so the key gets the room a CSR
    streamed in 4 MiB chunks would give it (1 MiB: BLS12-381's G2 tail MSM needs ~1.1 MB of scratch)."""
    zkey, items = mixed_items(gpu_curve.name)
    expected = resident_results(cuda_backend, zkey, items)
    key = cuda_backend.load_key(zkey, PLACEMENTS[0])
    key.csr_chunk_max = max(key.csr_chunk_max, 4 << 20)
    try:
        got, done, device = run_with_tails(cuda_backend, key, items, "prologue")
    finally:
        cuda_backend.unload_key(key)
    assert done == [True, True] and device == [True, True]
    assert_same_msms(gpu_curve, expected, got)


@pytest.mark.parametrize("row_bytes", [64, 96, 128, 192])
def test_gather_rows_copies_rows_of_mapped_host_memory_bit_exact(cuda_backend, gpu_curve, row_bytes):
    """gather_rows (a streamed pass's tail points): dst[k] = src[idx[k] - first] over page-locked
    host memory read in place; rows of every point size of both curves, the first and last row,
    a row twice."""
    from pipeline.backends.cuda.memory import HostRegistration
    from pipeline.backends.cuda.split import enqueue_gather_rows
    rng = np.random.default_rng(row_bytes)
    n, first, count = 5000, 7, 1234
    rows = rng.integers(0, 2**32, size=(n, row_bytes // 4), dtype=np.uint64).astype(np.uint32)
    idx = np.sort(rng.integers(first, n + first, size=count)).astype(np.uint32)
    idx[0], idx[1], idx[-1] = first, first, n + first - 1
    reg = HostRegistration(cuda_backend.device, rows)
    out = np.zeros((count, row_bytes // 4), dtype=np.uint32)
    try:
        assert reg.registered and reg.device_ptr is not None
        msm = cuda_backend.runtime(gpu_curve).msm
        with cuda_backend.allocator.upload(idx, "test indices") as d_idx, \
                cuda_backend.allocator.alloc(out.nbytes, "test rows") as d_out:
            enqueue_gather_rows(msm.kernels, cuda_backend.stream, d_out.ptr, reg.device_ptr, d_idx.ptr, count,
                                row_bytes, first)
            d_out.download(out, cuda_backend.stream)
    finally:
        reg.close()
    assert np.array_equal(out, rows[idx.astype(np.int64) - first])


def test_phase_clock_times_the_pass_without_changing_its_sums(cuda_backend, gpu_curve):
    """CudaStreamedPass.profile_phases (bench/streamed_profile.py) records events around each kind of
    queued work: the sums stay bit for bit, and the phases' device time fits inside the pass's."""
    from pipeline.backends.cuda.streamed import CudaStreamedPass
    zkey, (w, _, heavy) = witnesses(gpu_curve.name)
    items = [w, heavy]
    expected = resident_results(cuda_backend, zkey, items)
    key = cuda_backend.load_key(zkey, PLACEMENTS[0])
    CudaStreamedPass.profile_phases = True
    timings: dict[str, float] = {}
    try:
        got = run_batch(cuda_backend, key, items, shapes=True, inspect=lambda work: timings.update(work.pass_timings()))
    finally:
        CudaStreamedPass.profile_phases = False
        cuda_backend.unload_key(key)
    phases = {k: v for k, v in timings.items() if k.startswith("phase ")}
    assert "phase prologue: H ms" in phases and "phase chunk: G1 ones sums ms" in phases
    assert "phase chunk: h MSMs ms" in phases and all(v >= 0 for v in phases.values())
    assert sum(phases.values()) <= timings["stream_pass_ms"] * 1.01 + 0.1
    assert_same_msms(gpu_curve, expected, got)

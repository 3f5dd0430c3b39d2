"""The CUDA placement of a key larger than its budget (streamed.place_streamed), computed without a
GPU: the MSM's scratch bounds are arithmetic (an MsmRunner with no device). Chunks shrink to fit a
tight budget and then grow while they fit; whatever is chosen fits; too small a budget is refused
by name."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.errors import DeviceBudgetError
from pipeline.backends.cuda.msm import MsmRunner
from pipeline.backends.cuda.ntt import table_bytes as ntt_table_bytes
from pipeline.backends.cuda.split import split_scratch_bytes
from pipeline.backends.cuda.streamed import (MAX_CHUNKS, MIN_CHUNK_BYTES, PLACED_FOR_BATCH, chunk_candidates,
                                             pass_scratch_bytes, place_streamed, prologue_scratch_bytes)
from pipeline.backends.placement import plan_chunks
from pipeline.curves import BLS12_381, BN254
from pipeline.formats.zkey import read_zkey
from tests.conftest import fixture_dir

GIB = 1 << 30


def seed_shaped(curve, log_n: int):
    """The sizes place_streamed reads, of a 2^log_n key with 8 public inputs (no points needed)."""
    n = 1 << log_n
    return SimpleNamespace(curve=curve, n_vars=n - 8, domain_size=n, log_domain_size=log_n, n_public=8)


def need(msm, zkey, placement) -> int:
    return placement.device_bytes + pass_scratch_bytes(msm, zkey, placement, PLACED_FOR_BATCH)


def test_chunk_candidates_halve_down_to_the_floor():
    sizes = chunk_candidates(1 << 30)
    assert sizes[0] == 1 << 30 and sizes[-1] == MIN_CHUNK_BYTES
    assert all(a == 2 * b for a, b in zip(sizes, sizes[1:]))
    assert chunk_candidates(1 << 20, 1 << 40)[-1] == (1 << 40) // MAX_CHUNKS  # never more than MAX_CHUNKS chunks


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=["bn128", "bls12381"])
def test_a_small_key_streams_under_a_budget_below_its_resident_need(curve):
    zkey = read_zkey(fixture_dir(curve.name, "chain_2e10") / "circuit_final.zkey")
    msm = MsmRunner(SimpleNamespace(curve=curve), None, None)
    csr = zkey.coeff_values_stored.nbytes + 4 * len(zkey.coeff_signal) + 8 * (zkey.domain_size + 1)
    for budget in (6 << 20, 4_300_000):  # far below a 1 GiB chunk's pass, below the key resident with its scratch
        placement = place_streamed(msm, zkey, budget, csr, 1 << 30)
        assert placement.streamed and need(msm, zkey, placement) <= budget
        assert plan_chunks(zkey, placement)
    with pytest.raises(DeviceBudgetError, match="even with every point streamed"):
        place_streamed(msm, zkey, 4096, csr, 1 << 30)


def test_at_seed_scale_the_room_goes_to_the_csr_then_to_larger_chunks():
    """2^26 BLS12-381, the NTT's tables counted as a streamed key keeps them (the compact twiddle
    table, 1 GiB; a level table per direction was 4 GiB and made 8 GiB too small). Under 16 GiB a CSR of
    32-byte values (6.7 GB) stays resident beside 1 GiB chunks; under 12 GiB it streams and the
    chunks double past 1 GiB; under 8 GiB everything streams and one partition's quotient (three
    2 GiB vectors) still fits; under 6 GiB nothing does."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    csr, tables = int(zkey.domain_size * 2.5 * 40), ntt_table_bytes(26, 32, compact=True)
    signal_bytes = 3 * 96 + 192  # a, b1, c (G1) and b2 (G2) points of one signal
    roomy = place_streamed(msm, zkey, 16 * GIB, csr, 1 << 30, fixed_bytes=tables)
    assert need(msm, zkey, roomy) <= 16 * GIB and roomy.csr_chunk_bytes == 0
    assert roomy.device_bytes == tables + csr
    middle = place_streamed(msm, zkey, 12 * GIB, csr, 1 << 30, fixed_bytes=tables)
    assert need(msm, zkey, middle) <= 12 * GIB and middle.csr_chunk_bytes > 0
    assert middle.chunk_signals * signal_bytes > 1 << 30
    tight = place_streamed(msm, zkey, 8 * GIB, csr, 1 << 30, fixed_bytes=tables)
    assert need(msm, zkey, tight) <= 8 * GIB and tight.resident == () and tight.csr_chunk_bytes > 0
    with pytest.raises(DeviceBudgetError):
        place_streamed(msm, zkey, 6 * GIB, csr, 1 << 30, fixed_bytes=tables)


def test_the_chunks_grow_past_a_doubling_into_the_room_left():
    """2^26 BLS12-381 under 16 GiB with the coefficient table and the NTT's tables: doubling stops
    at 2 GiB chunks (4 GiB would not fit), and the half steps after it take the chunks to 3 GiB:
    12 chunks a pass where doubling alone made 19 (each costs every partition its MSMs' fixed
    costs), the pass still within the budget."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    nnz, row_ptrs, table = int(2 * 2.3 * zkey.domain_size), 8 * (zkey.domain_size + 1), 271 * 32
    placement = place_streamed(msm, zkey, 16 * GIB, nnz * (2 + 4) + table + row_ptrs, 1 << 30, table,
                               ntt_table_bytes(26, 32, compact=True))
    signal_bytes = 3 * 96 + 192
    assert 2 * GIB < placement.chunk_signals * signal_bytes < 4 * GIB
    assert need(msm, zkey, placement) <= 16 * GIB
    assert len(plan_chunks(zkey, placement)) == 12
    capped = place_streamed(msm, zkey, 16 * GIB, nnz * (2 + 4) + table + row_ptrs, 1 << 30, table,
                            ntt_table_bytes(26, 32, compact=True), max_chunk_bytes=2 * GIB)
    assert capped.chunk_signals * signal_bytes <= 2 * GIB and len(plan_chunks(zkey, capped)) == 19


def test_a_partitions_peak_is_three_vectors_of_the_domain_not_five():
    """The prologue's order (witness MSMs and split, then H with the witness freed after spmv,
    the quotient in a's buffer): at 2^26 with nothing resident, the witness and two vectors
    (6 GiB) beside a CSR chunk, where the witness, H, a, b and c were held together (10 GiB)."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    vector = zkey.domain_size * 32
    assert prologue_scratch_bytes(msm, zkey, (), csr_chunk=1 << 20) == zkey.n_vars * 32 + 2 * vector + (1 << 20)
    assert prologue_scratch_bytes(msm, zkey, (), 0) == 3 * vector  # the quotient's a, b and c
    everything = prologue_scratch_bytes(msm, zkey, ("a", "b1", "b2", "c", "h"), witness_extra=7, held_extra=5)
    h_msm = msm.scratch_bytes(zkey.domain_size, False)
    assert everything == 5 + max(zkey.n_vars * 32 + 7 + msm.scratch_bytes(zkey.n_vars, True), vector + h_msm,
                                 3 * vector)


def test_at_seed_scale_a_coefficient_table_keeps_the_csr_on_the_device_under_16_gib():
    """2^26 BLS12-381, 2.3 coefficients a row in A and in B: as 32-byte values the CSR (~11 GB)
    streams under 16 GiB; as uint16 indices into a table (CudaOptions.csr_value_table) it fits
    beside one partition's quotient and stays resident, the table counted on the device."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    nnz, row_ptrs = int(2 * 2.3 * zkey.domain_size), 8 * (zkey.domain_size + 1)
    values = place_streamed(msm, zkey, 16 * GIB, nnz * (32 + 4) + row_ptrs, 1 << 30)
    assert values.csr_chunk_bytes > 0
    table_bytes = 271 * 32
    indexed = place_streamed(msm, zkey, 16 * GIB, nnz * (2 + 4) + table_bytes + row_ptrs, 1 << 30, table_bytes)
    assert indexed.csr_chunk_bytes == 0 and need(msm, zkey, indexed) <= 16 * GIB
    streamed = place_streamed(msm, zkey, 16 * GIB, 40 * GIB, 1 << 30, table_bytes)  # a CSR too big to keep
    assert streamed.csr_chunk_bytes > 0
    assert streamed.device_bytes == place_streamed(msm, zkey, 16 * GIB, 40 * GIB, 1 << 30).device_bytes + table_bytes


def test_at_seed_scale_the_device_split_fits_the_room_a_pass_reserves():
    """CudaStreamedPass._device_tails_fit at 2^26 (95% bits, the G2 tail the largest): the witness,
    the split's scratch and one gathered tail with its MSM fit the pass's room beyond its result
    slots (``pass_scratch_bytes(.., 0)``: the chunk phase's buffers are taken after the prologues),
    though not one prologue's own peak (three vectors): measured against that peak, every
    partition was split on the host (session 9, streamed_profile_bls12381_2e26.md)."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    nnz, row_ptrs = int(2 * 2.3 * zkey.domain_size), 8 * (zkey.domain_size + 1)
    tables = ntt_table_bytes(26, 32, compact=True)
    placement = place_streamed(msm, zkey, 16 * GIB, nnz * (2 + 4) + 271 * 32 + row_ptrs, 1 << 30, 271 * 32, tables)
    others = zkey.n_vars // 20
    need = zkey.n_vars * 32 + split_scratch_bytes(zkey.n_vars) + others * 192 + msm.scratch_bytes(others, True)
    assert need <= pass_scratch_bytes(msm, zkey, placement, 0)
    assert need > prologue_scratch_bytes(msm, zkey, placement.resident, placement.csr_chunk_bytes)


@pytest.mark.parametrize("budget_gib", [16, 8])
def test_at_seed_scale_h_through_the_prologues_leaves_the_chunks_and_counts_its_pieces(budget_gib):
    """2^26 BLS12-381 with H's points through each partition's prologue (h_per_partition): the pass's
    chunks hold the witness sections only, the chunk phase has no H buffer or H MSM, and the
    prologue counts H, two piece buffers and the bucket sums of one MSM of the domain at its own
    window width (13 windows of 2^19 buckets, 1.3 GB) beside one piece's sort and sums. It fits both
    budgets the chunk mode fits."""
    zkey = seed_shaped(BLS12_381, 26)
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), None, None)
    nnz, row_ptrs = int(2 * 2.3 * zkey.domain_size), 8 * (zkey.domain_size + 1)
    tables = ntt_table_bytes(26, 32, compact=True)
    csr = nnz * (2 + 4) + 271 * 32 + row_ptrs
    placement = place_streamed(msm, zkey, budget_gib * GIB, csr, 1 << 30, 271 * 32, tables, h_per_partition=True)
    assert "h" in placement.streamed and placement.h_in_prologues and not placement.h_in_chunks
    assert need(msm, zkey, placement) <= budget_gib * GIB
    chunks = plan_chunks(zkey, placement)
    assert chunks and all(c.scalars == "witness" for c in chunks)
    assert {s.section for c in chunks for s in c.slices} == set(placement.streamed) - {"h"}
    plan = msm.plan(zkey.domain_size, False)
    buckets = plan.n_buckets * msm.xyzz_bytes(False)
    assert buckets == 13 * (1 << 19) * 192
    vector, piece = zkey.domain_size * 32, placement.chunk_h
    assert piece < zkey.domain_size  # pieces, not the whole section at once
    h_phase = vector + 2 * piece * 96 + buckets + msm.scratch_bytes(piece, False, c=plan.c)
    prologue = prologue_scratch_bytes(msm, zkey, placement.resident, placement.csr_chunk_bytes, h_pieces=piece)
    assert prologue >= max(h_phase, 3 * vector + piece * 96)  # the first piece's copy runs beside the quotient
    assert pass_scratch_bytes(msm, zkey, placement, 0) >= h_phase
    in_chunks = place_streamed(msm, zkey, budget_gib * GIB, csr, 1 << 30, 271 * 32, tables)
    assert in_chunks.h_in_chunks and not in_chunks.h_in_prologues
    assert any(c.scalars == "h" for c in plan_chunks(zkey, in_chunks))


def test_a_piece_msm_counts_its_buckets_and_sorts_at_the_whole_msms_width():
    """MsmRunner.piece_scratch_bytes: the bucket sums of the whole MSM's plan, held throughout, plus
    the larger of one piece's scratch at that width (not the piece's own plan: its windows are the
    whole MSM's) and the finishing steps."""
    msm = MsmRunner(SimpleNamespace(curve=BN254), None, None)
    n, piece = 1 << 24, 1 << 21
    plan = msm.plan(n, False)
    assert msm.plan(piece, False).c != plan.c  # a piece alone would plan other windows
    buckets = plan.n_buckets * msm.xyzz_bytes(False)
    assert msm.piece_scratch_bytes(n, piece, False) >= buckets + msm.scratch_bytes(piece, False, c=plan.c)
    assert msm.piece_scratch_bytes(n, piece, False) < buckets + msm.scratch_bytes(n, False)
    assert msm.piece_scratch_bytes(n, 2 * n, False) == msm.piece_scratch_bytes(n, n, False)  # one piece at most n

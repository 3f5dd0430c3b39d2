"""CudaBackend end to end on the snarkjs fixtures: spmv + H, the MSMs and whole proofs equal the CPU's."""
from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cpu.backend import CpuBackend
from pipeline.backends.cpu.spmv import evaluate_abc
from pipeline.formats.types import MATRIX_A, MATRIX_B
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.prover import Blinding, prove
from pipeline.keycache.csr import csr_matrices


pytestmark = pytest.mark.gpu

CIRCUITS = ("multiplier", "bits", "chain_2e8")


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture(curve, circuit):
    d = FIXTURES / curve.name / circuit
    return read_zkey(d / "circuit_final.zkey"), read_wtns(d / "witness.wtns")


def _download_fr(backend, fr, buf, n: int) -> list[int]:
    """n Fr elements of a device buffer, Montgomery form on the device, plain ints here."""
    h = np.zeros((n, fr.limbs), dtype=np.uint64)
    buf.download(h, backend.stream)
    return [fr.from_mont(v) for v in fr.ints_from_limbs(h)]


def test_spmv_matches_reference_on_random_coefficients(cuda_backend, runtime, gpu_curve):
    fr, rng = gpu_curve.fr, random.Random(gpu_curve.name)
    n_rows, n_vars, m = 1 << 10, 300, 5000
    rows = [rng.randrange(n_rows) for _ in range(m - 64)] + [7] * 64  # one long row
    values = [rng.choice((1, fr.modulus - 1, rng.randrange(fr.modulus))) for _ in range(m)]
    r2 = fr.r_mont * fr.r_mont % fr.modulus
    fake = SimpleNamespace(
        domain_size=n_rows, curve=gpu_curve, csr=None,
        coeff_matrix=np.array([rng.choice((MATRIX_A, MATRIX_B)) for _ in range(m)], dtype=np.uint32),
        coeff_constraint=np.array(rows, dtype=np.uint32),
        coeff_signal=np.array([rng.randrange(n_vars) for _ in range(m)], dtype=np.uint32),
        coeff_values_stored=fr.limbs_from_ints([v * r2 % fr.modulus for v in values]))
    witness = [1] + [rng.choice((0, 1, rng.randrange(fr.modulus))) for _ in range(n_vars - 1)]
    alloc, elem = cuda_backend.allocator, 8 * fr.limbs
    bufs = []
    for matrix in csr_matrices(fake):
        bufs += [alloc.upload(a, "csr") for a in (matrix.row_ptr, matrix.cols, matrix.vals)]
    outs = [alloc.alloc(n_rows * elem, x) for x in "abc"]
    try:
        with alloc.upload(fr.limbs_from_ints(witness), "w") as d_w:
            runtime.kernels.launch("spmv_ab<fr_t>", (n_rows + 127) // 128, 128,
                                   (outs[0].ptr, outs[1].ptr, *[b.ptr for b in bufs], d_w.ptr, n_rows),
                                   cuda_backend.stream)
            runtime.ntt.mul(outs[2].ptr, outs[0].ptr, outs[1].ptr, n_rows)  # c = a o b, as _enqueue_h does
            got = [_download_fr(cuda_backend, fr, o, n_rows) for o in outs]
    finally:
        for b in bufs + outs:
            b.free()
    assert tuple(got) == evaluate_abc(fake, values, witness)


@pytest.mark.parametrize("with_table", [False, True], ids=["values", "table"])
def test_spmv_with_long_rows_apart_matches_reference(cuda_backend, runtime, gpu_curve, with_table):
    """CudaOptions.spmv_long_rows: rows of more than SPMV_LONG_ROW terms (17, 33, 254 like a packing row,
    600) computed a warp a row and the rest a thread a row skipping them, in both value forms; rows that
    are long in A and short in B, empty rows, a row of exactly SPMV_LONG_ROW terms."""
    from pipeline.backends.cuda.csr_stream import launch_resident_spmv
    from pipeline.backends.cuda.device_key import upload_csr
    from pipeline.backends.cuda.launch import SPMV_LONG_ROW
    from pipeline.formats.coeff_table import coefficient_table

    fr, rng = gpu_curve.fr, random.Random(f"long rows {gpu_curve.name}")
    n_rows, n_vars = 1 << 10, 400
    terms = []  # (matrix, row)
    for row, length in ((3, 17), (5, 33), (9, 254), (10, 600), (11, SPMV_LONG_ROW), (700, 254), (1023, 40)):
        terms += [(MATRIX_A, row)] * length
    terms += [(MATRIX_B, 5)] * 2 + [(MATRIX_B, 9)] * 300  # row 5 short in B, row 9 long in both
    terms += [(rng.choice((MATRIX_A, MATRIX_B)), rng.randrange(20, 600)) for _ in range(3000)]
    m = len(terms)
    values = [rng.choice((1, 2, fr.modulus - 1, rng.randrange(fr.modulus))) for _ in range(m)]
    r2 = fr.r_mont * fr.r_mont % fr.modulus
    fake = SimpleNamespace(
        domain_size=n_rows, curve=gpu_curve, csr=None,
        coeff_matrix=np.array([t[0] for t in terms], dtype=np.uint32),
        coeff_constraint=np.array([t[1] for t in terms], dtype=np.uint32),
        coeff_signal=np.array([rng.randrange(n_vars) for _ in range(m)], dtype=np.uint32),
        coeff_values_stored=fr.limbs_from_ints([v * r2 % fr.modulus for v in values]))
    witness = [1] + [rng.choice((0, 1, rng.randrange(fr.modulus))) for _ in range(n_vars - 1)]
    matrices = csr_matrices(fake)
    table = coefficient_table([mx.vals for mx in matrices]) if with_table else None
    alloc, elem = cuda_backend.allocator, 8 * fr.limbs
    d_csr = upload_csr(alloc.upload, matrices, table, with_long_rows=True)
    assert d_csr["a_long"].nbytes // 4 == 6 and d_csr["b_long"].nbytes // 4 >= 1  # 17, 33, 254, 600, 254, 40
    outs = [alloc.alloc(n_rows * elem, x) for x in "abc"]
    try:
        with alloc.upload(fr.limbs_from_ints(witness), "w") as d_w:
            for o in outs[:2]:
                o.memset32(0xFFFFFFFF, cuda_backend.stream)  # a row neither kernel wrote would show
            launch_resident_spmv(runtime.kernels, cuda_backend.stream, d_csr, (outs[0].ptr, outs[1].ptr), d_w.ptr,
                                 n_rows, elem)
            runtime.ntt.mul(outs[2].ptr, outs[0].ptr, outs[1].ptr, n_rows)
            got = [_download_fr(cuda_backend, fr, o, n_rows) for o in outs]
    finally:
        for b in (*d_csr.values(), *outs):
            b.free()
    assert tuple(got) == evaluate_abc(fake, values, witness)


@pytest.mark.parametrize("circuit", CIRCUITS)
def test_gpu_h_and_msms_equal_cpu_on_fixture(cuda_backend, gpu_curve, circuit):
    zkey, wtns = _fixture(gpu_curve, circuit)
    cpu = CpuBackend()
    cpu_key, gpu_key = cpu.load_key(zkey), cuda_backend.load_key(zkey)
    try:
        h_cpu = cpu.compute_h(cpu_key, wtns.values)
        h_gpu = cuda_backend.compute_h(gpu_key, wtns.values)
        assert np.array_equal(cuda_backend.h_to_host(h_gpu), h_cpu)
        m_gpu = cuda_backend.msms(gpu_key, wtns.values, h_gpu)
        h_gpu.free()
        m_cpu = cpu.msms(cpu_key, wtns.values, h_cpu)
        g1, g2 = gpu_curve.g1, gpu_curve.g2
        for name in ("a_g1", "b_g1", "c_g1", "h_g1"):
            assert g1.eq(getattr(m_gpu, name), getattr(m_cpu, name)), name
        assert g2.eq(m_gpu.b_g2, m_cpu.b_g2)
    finally:
        cuda_backend.unload_key(gpu_key)


def test_gpu_proof_equals_cpu_proof_for_fixed_blinding(cuda_backend, gpu_curve):
    zkey, wtns = _fixture(gpu_curve, "bits")
    blinding = Blinding(r=123456789, s=987654321)
    cpu = CpuBackend()
    gpu_key = cuda_backend.load_key(zkey)
    try:
        p_gpu = prove(cuda_backend, gpu_key, zkey, wtns, blinding)
    finally:
        cuda_backend.unload_key(gpu_key)
    p_cpu = prove(cpu, cpu.load_key(zkey), zkey, wtns, blinding)
    assert (p_gpu.pi_a, p_gpu.pi_b, p_gpu.pi_c, p_gpu.public_signals) == \
        (p_cpu.pi_a, p_cpu.pi_b, p_cpu.pi_c, p_cpu.public_signals)


def test_a_step_by_step_proof_reports_h_as_timed_on_the_device(cuda_backend, gpu_curve):
    """compute_h returns once H is queued, so its host time read 0.0 ms (and H's device time fell
    into the first MSM's): msms reports the phases of H that compute_h's events timed."""
    zkey, wtns = _fixture(gpu_curve, "chain_2e8")
    key = cuda_backend.load_key(zkey)
    try:
        timings = prove(cuda_backend, key, zkey, wtns).timings_ms
    finally:
        cuda_backend.unload_key(key)
    assert timings["upload_ms"] >= 0 and timings["spmv_ms"] > 0 and timings["ntt_ms"] > 0
    assert timings["h_ms"] == pytest.approx(timings["upload_ms"] + timings["spmv_ms"] + timings["ntt_ms"])
    assert timings["msm_ms"] > 0 and timings["msm_a_ms"] > 0


def test_proofs_give_back_every_scratch_byte(cuda_backend, gpu_curve):
    """H and the witness copy live from compute_h to the end of msms, then go (a persistent
    daemon proving 2^24 keys would otherwise lose 512 MiB of VRAM per proof)."""
    zkey, wtns = _fixture(gpu_curve, "chain_2e8")
    key = cuda_backend.load_key(zkey)
    try:
        resident = cuda_backend.allocator.in_use_bytes
        for _ in range(3):
            prove(cuda_backend, key, zkey, wtns)
            assert cuda_backend.allocator.in_use_bytes == resident
        h = cuda_backend.compute_h(key, wtns.values)
        assert cuda_backend.allocator.in_use_bytes > resident
        h.free()  # a caller that stops before msms
        assert cuda_backend.allocator.in_use_bytes == resident
    finally:
        cuda_backend.unload_key(key)


def test_stream_ordered_and_synchronous_memory_give_the_same_proof(cuda_backend, gpu_curve):
    from pipeline.backends.cuda.backend import CudaBackend
    from pipeline.backends.cuda.options import CudaOptions

    zkey, wtns = _fixture(gpu_curve, "chain_2e8")
    blinding = Blinding(r=31337, s=271828)
    plain = CudaBackend(options=CudaOptions(stream_ordered_memory=False))
    proofs = []
    try:
        assert cuda_backend.allocator.stream is not None and plain.allocator.stream is None
        for backend in (cuda_backend, plain):
            key = backend.load_key(zkey)
            try:
                proofs.append(prove(backend, key, zkey, wtns, blinding))
                # the key, twiddles and the coset tables the first proof made stay; the rest goes
                resident = backend.allocator.in_use_bytes
                again = prove(backend, key, zkey, wtns, blinding)
                assert backend.allocator.in_use_bytes == resident
                assert (again.pi_a, again.pi_b, again.pi_c) == (proofs[-1].pi_a, proofs[-1].pi_b, proofs[-1].pi_c)
            finally:
                backend.unload_key(key)
    finally:
        plain.close()
    pooled, synchronous = proofs
    assert (pooled.pi_a, pooled.pi_b, pooled.pi_c) == (synchronous.pi_a, synchronous.pi_b, synchronous.pi_c)

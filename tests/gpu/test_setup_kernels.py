"""The development setup's kernels (cuda_src/setup) bit-exact with their CPU twins
(pipeline/setup/scalars.py, cpu.py, coefficients.py) on fresh random inputs and edge cases:
sizes 1 and 2^k + 1, scalars 0, 1, r - 1, a signal in no term, a signal in every row, threads
holding many elements of one batch inversion, fixed-base passes split into several chunks."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.backends.cuda.setup_kernels import SetupRunner, TablePlan, window_bases
from pipeline.curves.encoding import encode_g1_mont, encode_g2_mont
from pipeline.formats.compact_r1cs import CompactR1cs, CsrMatrix
from pipeline.setup.circuit import terms
from pipeline.setup.cpu import generator_multiples
from pipeline.setup.gpu import GpuDevSetup
from pipeline.setup.scalars import combine, evaluate_signals, lagrange_scale, lagrange_values

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="session")
def dev_setup(cuda_backend):
    setup = GpuDevSetup(cuda_backend)
    yield setup
    setup.close()


@pytest.fixture(scope="session")
def setup_runner(dev_setup, gpu_curve):
    return dev_setup.runner(gpu_curve)


def _edge_and_random(p: int, rng: random.Random, n: int) -> list[int]:
    values = [rng.randrange(p) for _ in range(n)]
    for i, v in enumerate([0, 1, p - 1, 2, p - 2][:n]):
        values[i] = v
    return values


def _upload_mont(runner, values):
    fr = runner.curve.fr
    return runner.allocator.upload(fr.limbs_from_ints([fr.to_mont(v) for v in values]), "test fr values")


def _download_fr(runner, buf, n, mont=True) -> list[int]:
    fr = runner.curve.fr
    out = buf.download(np.zeros((n, fr.limbs), dtype=np.uint64), runner.stream)
    return [fr.from_mont(v) if mont else v for v in fr.ints_from_limbs(out)]


@pytest.mark.parametrize("n, log_size, start, stride", [
    (1, 0, 0, 1), (2, 1, 0, 1), (17, 5, 0, 1), (1025, 11, 0, 1), (1025, 12, 1, 2), (33, 7, 5, 3)])
@pytest.mark.parametrize("threads", [None, 7])
def test_lagrange_values_match_cpu(setup_runner, n, log_size, start, stride, threads):
    fr = setup_runner.curve.fr
    rng = random.Random(f"{fr.name}{n}{log_size}{start}")
    tau = rng.randrange(2, fr.modulus)
    for scale in (lagrange_scale(fr, log_size, tau), 0, 1, fr.modulus - 1):
        want = lagrange_values(fr, log_size, tau, n, start, stride, scale)
        with setup_runner.allocator.alloc(32 * n, "test lagrange") as d_out:
            kwargs = {"threads": threads} if threads else {}
            setup_runner.lagrange(d_out.ptr, n, log_size, tau, scale, start, stride, **kwargs)
            assert _download_fr(setup_runner, d_out, n) == want


def test_lagrange_at_a_root_of_unity_gives_zero_there(setup_runner):
    """tau on the domain (the secrets exclude it): the zero denominator gives 0, as on the CPU."""
    fr = setup_runner.curve.fr
    tau = pow(fr.root_of_unity(4), 3, fr.modulus)  # w^3 of the 16-point domain
    want = lagrange_values(fr, 4, tau, 16, scale=5)
    with setup_runner.allocator.alloc(32 * 16, "test lagrange") as d_out:
        setup_runner.lagrange(d_out.ptr, 16, 4, tau, 5, threads=3)
        got = _download_fr(setup_runner, d_out, 16)
    assert got == want and got[3] == 0


def _random_circuit(curve, rng, n_rows, n_signals, terms_per_row, heavy_signal=None) -> CompactR1cs:
    """A circuit whose C matrix holds random terms (A, B empty); coefficients from a table of 7."""
    signals, lengths = [], []
    for _ in range(n_rows):
        chosen = rng.sample(range(n_signals), min(terms_per_row, n_signals))
        if heavy_signal is not None and heavy_signal not in chosen:
            chosen[0] = heavy_signal
        signals += chosen
        lengths.append(len(chosen))
    starts = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    codes = np.array([rng.randrange(7) for _ in signals], dtype=np.uint16)
    table = curve.fr.limbs_from_ints(_edge_and_random(curve.fr.modulus, rng, 7))
    empty = CsrMatrix(np.zeros(n_rows + 1, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.uint16))
    c = CsrMatrix(starts, np.array(signals, dtype=np.uint32), codes)
    return CompactR1cs(curve, n_signals, 0, 0, n_signals - 1, empty, empty, c, table)


@pytest.mark.parametrize("n_rows, n_signals, terms_per_row, heavy", [
    (0, 1, 1, None), (1, 1, 1, None), (9, 17, 2, None), (40, 200, 3, None), (5000, 300, 2, 0), (257, 1025, 1, None)])
def test_per_signal_evaluations_match_cpu(setup_runner, n_rows, n_signals, terms_per_row, heavy):
    """The signal in every row (heavy) spans several levels of chunk sums; with more signals than
    terms, many signals have none."""
    curve, fr = setup_runner.curve, setup_runner.curve.fr
    rng = random.Random(f"{fr.name}{n_rows}{n_signals}")
    r1cs = _random_circuit(curve, rng, n_rows, n_signals, terms_per_row, heavy)
    lagrange = _edge_and_random(fr.modulus, rng, n_rows + 1)  # + the constant's public row
    want = evaluate_signals(r1cs, lagrange)[2]
    rows, signals, codes = terms(r1cs.c)
    alloc = setup_runner.allocator
    with alloc.upload(signals, "test signals") as d_s, alloc.upload(rows, "test rows") as d_r, \
            alloc.upload(codes, "test codes") as d_c, alloc.upload(r1cs.coeff_table, "test table") as d_t, \
            _upload_mont(setup_runner, lagrange) as d_l, alloc.alloc(32 * n_signals, "test out") as d_out:
        grouped = setup_runner.group_by_signal(d_s.ptr, d_r.ptr, d_c.ptr, len(signals), n_signals)
        try:
            setup_runner.evaluate(d_out.ptr, grouped, d_t.ptr, d_l.ptr, n_signals)
        finally:
            for buf in grouped:
                buf.free()
        assert _download_fr(setup_runner, d_out, n_signals) == want


@pytest.mark.parametrize("n", [1, 2, 33])
def test_combine_matches_cpu(setup_runner, n):
    p = setup_runner.curve.fr.modulus
    rng = random.Random(n)
    u, v, w = (_edge_and_random(p, rng, n) for _ in range(3))
    alpha, beta, scale = rng.randrange(p), p - 1, rng.randrange(p)
    with _upload_mont(setup_runner, u) as d_u, _upload_mont(setup_runner, v) as d_v, \
            _upload_mont(setup_runner, w) as d_w:
        setup_runner.combine(d_w.ptr, d_u.ptr, d_v.ptr, d_w.ptr, n, alpha, beta, scale)  # in place, as the setup does
        assert _download_fr(setup_runner, d_w, n) == combine(p, u, v, w, alpha, beta, scale)


def test_stored_coefficients_are_table_values_times_r2_in_record_order(setup_runner):
    fr = setup_runner.curve.fr
    rng = random.Random(3)
    n = 65
    table = _edge_and_random(fr.modulus, rng, 9)
    codes = [rng.randrange(9) for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    rr = fr.r_mont * fr.r_mont % fr.modulus
    alloc = setup_runner.allocator
    with alloc.upload(fr.limbs_from_ints(table), "test table") as d_t, \
            alloc.upload(np.array(codes, dtype=np.uint16), "test codes") as d_c, \
            alloc.upload(np.array(order, dtype=np.uint32), "test positions") as d_pos, \
            alloc.alloc(32 * n, "test out") as d_out:
        setup_runner.stored_coefficients(d_out.ptr, d_c.ptr, d_t.ptr, d_pos.ptr, n)
        got = _download_fr(setup_runner, d_out, n, mont=False)
    want = [0] * n
    for code, pos in zip(codes, order):
        want[pos] = table[code] * rr % fr.modulus
    assert got == want


def _encode(curve, group, points):
    return encode_g2_mont(curve, points) if group.ops.degree == 2 else encode_g1_mont(curve, points)


@pytest.mark.parametrize("group_name", ["g1", "g2"])
def test_generator_table_holds_the_signed_digit_multiples(dev_setup, gpu_curve, group_name):
    group = getattr(gpu_curve, group_name)
    runner = SetupRunner(dev_setup.runner(gpu_curve).kernels, dev_setup.backend.allocator, dev_setup.backend.stream)
    plan = TablePlan(4, 3)
    try:
        _, d_table = runner.generator_table(group, plan)
        bytes_per = runner.point_bytes(group)
        got = d_table.download(np.zeros(plan.entries * bytes_per // 8, dtype=np.uint64), runner.stream)
        want = [group.to_affine(group.mul(group.from_affine(base), d))
                for base in window_bases(group, plan) for d in range(1, plan.half + 1)]
        assert np.array_equal(got, _encode(gpu_curve, group, want).reshape(-1))
    finally:
        runner.close()


@pytest.mark.parametrize("group_name", ["g1", "g2"])
@pytest.mark.parametrize("n, chunk, affine_threads, plan", [
    (1, None, None, None), (2, None, None, None), (17, None, None, None), (33, 8, 3, None),
    (20, 7, 2, TablePlan(5, 52))])
def test_fixed_base_matches_cpu(dev_setup, gpu_curve, group_name, n, chunk, affine_threads, plan):
    """Scalars 0 (infinity: all zero), 1, r - 1, 2, r - 2 and random; passes of ``chunk`` points whose
    affine conversion shares inversions over ``affine_threads`` threads; a narrower window."""
    group, fr = getattr(gpu_curve, group_name), gpu_curve.fr
    scalars = _edge_and_random(fr.modulus, random.Random(f"{n}{group_name}"), n)
    want = _encode(gpu_curve, group, generator_multiples(group, scalars, fr.bits))
    runner = SetupRunner(dev_setup.runner(gpu_curve).kernels, dev_setup.backend.allocator, dev_setup.backend.stream)
    try:
        if plan is not None:
            runner.generator_table(group, plan)
        kwargs = {k: v for k, v in (("chunk", chunk), ("affine_threads", affine_threads)) if v}
        with _upload_mont(runner, scalars) as d_k, runner.allocator.alloc(want.nbytes, "test points") as d_out:
            runner.fixed_base(group, d_out.ptr, d_k.ptr, n, **kwargs)
            got = d_out.download(np.zeros_like(want), runner.stream)
    finally:
        runner.close()
    assert np.array_equal(got, want)
    assert not got[0].any()  # scalar 0: the point at infinity, stored as zeros

"""The 0 / 1 split of a witness (cuda_src/msm/split.cuh, backends/cuda/split.py): the MSMs of a
split partition equal the plain ones and the CPU's, whatever mix of 0, 1 and other values the
witness and its public prefix hold; a shape that does not describe the witness is an error."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.backends.cpu.backend import CpuBackend
from pipeline.backends.protocol import WitnessShape
from pipeline.errors import InternalError
from tests.gpu.test_backend import _fixture

pytestmark = pytest.mark.gpu


def _mixed_witness(fr, n: int, rng: random.Random, p_zero: float, p_one: float, prefix: list[int]) -> np.ndarray:
    values = list(prefix)
    while len(values) < n:
        u = rng.random()
        values.append(0 if u < p_zero else 1 if u < p_zero + p_one else
                      rng.choice((2, fr.modulus - 1, rng.randrange(fr.modulus))))
    return fr.limbs_from_ints(values)


def _run(backend, key, witness, shape, min_bits):
    saved, backend.msm_split_min_bits = backend.msm_split_min_bits, min_bits
    try:
        work = backend.start_partition(key, witness, True, shape)
        work.wait_blocking()
        return work.result()
    finally:
        backend.msm_split_min_bits = saved


def _same(curve, m1, m2) -> None:
    g1, g2 = curve.g1, curve.g2
    for name in ("a_g1", "b_g1", "c_g1", "h_g1"):
        assert g1.eq(getattr(m1, name), getattr(m2, name)), name
    assert g2.eq(m1.b_g2, m2.b_g2)


# (p_zero, p_one, prefix values): public signals that are 1, other, 0; all ones; no ones; all zeros
MIXES = [(0.45, 0.45, [1, 1, 5]), (0.2, 0.6, [1, 0, 7]), (0.0, 1.0, [1, 1, 1]), (0.5, 0.0, [1, 9, 0]),
         (1.0, 0.0, [1, 0, 0]), (0.3, 0.3, [1, 2, 1])]


@pytest.mark.parametrize("mix", MIXES, ids=[f"z{m[0]}-o{m[1]}" for m in MIXES])
def test_split_msms_equal_plain_and_cpu_on_a_fixture_key(cuda_backend, gpu_curve, mix):
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    p_zero, p_one, prefix = mix
    prefix = (prefix + [1] * zkey.n_public)[: zkey.n_public + 1]
    prefix[0] = 1
    witness = _mixed_witness(gpu_curve.fr, zkey.n_vars, random.Random(str(mix)), p_zero, p_one, prefix)
    shape = WitnessShape.of(witness, zkey.n_public + 1)
    key = cuda_backend.load_key(zkey)
    try:
        split = _run(cuda_backend, key, witness, shape, 0.0)
        plain = _run(cuda_backend, key, witness, shape, 2.0)  # never split
    finally:
        cuda_backend.unload_key(key)
    assert "split_ms" in split.timings_ms and "split_ms" not in plain.timings_ms
    for section in ("a", "b1", "b2", "c"):  # each split section's ones timed as a part of it
        ones = split.timings_ms[f"msm_{section}_ones_ms"]
        assert 0 <= ones <= split.timings_ms[f"msm_{section}_ms"]
        assert f"msm_{section}_ones_ms" not in plain.timings_ms
    t = split.timings_ms
    assert t["msm_ms"] == pytest.approx(t["split_ms"] + t.get("msm_combine_ms", 0.0) + sum(
        t[f"msm_{s}_ms"] for s in ("a", "b1", "b2", "c", "h")))
    _same(gpu_curve, split, plain)
    cpu = CpuBackend()
    cpu_key = cpu.load_key(zkey)
    _same(gpu_curve, split, cpu.msms(cpu_key, witness, cpu.compute_h(cpu_key, witness)))


@pytest.mark.parametrize("log_n", [16])
def test_split_equals_plain_on_a_seed_shaped_key_past_the_chunking(cuda_backend, gpu_curve, log_n):
    """A real key (the GPU development setup: points of a real setup, so sums in any order agree)
    and the seed-shaped circuit's 95%-bit witness, at a size where the ones and the tail both go
    through several partial-sum levels."""
    from pipeline.setup.adopt import adopt_dev_key
    from tests.gpu.helpers import seed_dev_key

    dev_key, witness = seed_dev_key(cuda_backend, gpu_curve, log_n)
    shape = WitnessShape.of(witness.values, dev_key.zkey.n_public + 1)
    assert shape.n_one > 1000 and shape.n_other > 100
    key = adopt_dev_key(cuda_backend, dev_key)
    try:
        _same(gpu_curve, _run(cuda_backend, key, witness.values, shape, 0.0),
              _run(cuda_backend, key, witness.values, shape, 2.0))
    finally:
        cuda_backend.unload_key(key)


def test_a_shape_that_does_not_describe_the_witness_is_an_internal_error(cuda_backend, gpu_curve):
    zkey, wtns = _fixture(gpu_curve, "bits")
    shape = WitnessShape.of(wtns.values, zkey.n_public + 1)
    wrong = WitnessShape(shape.n_vars, shape.n_one - 1, shape.n_other + 1, shape.prefix_len, shape.prefix_one,
                         shape.prefix_other)
    key = cuda_backend.load_key(zkey)
    try:
        with pytest.raises(InternalError, match="split the witness"):
            _run(cuda_backend, key, wtns.values, wrong, 0.0)
        _run(cuda_backend, key, wtns.values, shape, 0.0)  # the backend is fine afterwards
    finally:
        cuda_backend.unload_key(key)


def _off_then_on(cuda_backend, gpu_curve, min_bits: float, seed: str, owner, option: str) -> list:
    """One partition of chain_2e8 (a mixed witness) with ``owner.option`` False, then True (restored after):
    both results, each partition giving back every scratch byte it took."""
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    prefix = [1] + [3] * zkey.n_public
    witness = _mixed_witness(gpu_curve.fr, zkey.n_vars, random.Random(seed), 0.3, 0.4, prefix)
    shape = WitnessShape.of(witness, zkey.n_public + 1)
    results = []
    saved = getattr(owner, option)
    key = cuda_backend.load_key(zkey)
    try:
        for value in (False, True):
            setattr(owner, option, value)
            resident = cuda_backend.allocator.in_use_bytes
            results.append(_run(cuda_backend, key, witness, shape, min_bits))
            assert cuda_backend.allocator.in_use_bytes == resident
    finally:
        setattr(owner, option, saved)
        cuda_backend.unload_key(key)
    return results


@pytest.mark.parametrize("min_bits", [2.0, 0.0], ids=["plain", "split"])
def test_batched_window_combination_equals_the_per_msm_one(cuda_backend, gpu_curve, min_bits):
    """CudaOptions.msm_batched_window_combination: start_partition's MSMs leave their window sums, the
    witness MSMs' are combined on a side stream beside H and H's at the end; the results are the
    per-MSM combination's, with and without the 0/1 split, and the partition gives back every scratch
    byte (the key's tables are made at load time)."""
    results = _off_then_on(cuda_backend, gpu_curve, min_bits, "batched", cuda_backend, "batched_window_combination")
    assert "msm_combine_ms" in results[1].timings_ms and "msm_combine_ms" not in results[0].timings_ms
    _same(gpu_curve, results[0], results[1])


def test_a_prefetched_witness_gives_the_uploaded_ones_results_and_every_byte_back(cuda_backend, gpu_curve):
    """CudaOptions.witness_prefetch: the witness copied ahead on the copy stream (while another partition's
    work is queued, as the engine does it), then start_partition of the same array takes it instead of
    uploading; the results equal an uploaded partition's, a prefetch nobody takes is dropped, and the
    allocator ends where it started."""
    zkey, _ = _fixture(gpu_curve, "chain_2e8")
    prefix = [1] + [3] * zkey.n_public
    rng = random.Random("prefetch")
    witnesses = [_mixed_witness(gpu_curve.fr, zkey.n_vars, rng, 0.3, 0.4, prefix) for _ in range(3)]
    shapes = [WitnessShape.of(w, zkey.n_public + 1) for w in witnesses]
    saved = cuda_backend.prefetches_witness
    key = cuda_backend.load_key(zkey)
    try:
        resident = cuda_backend.allocator.in_use_bytes
        uploaded = [_run(cuda_backend, key, w, s, 0.0) for w, s in zip(witnesses[:2], shapes)]
        cuda_backend.prefetches_witness = True
        first = cuda_backend.start_partition(key, witnesses[0], True, shapes[0])  # queued: the device is busy
        assert cuda_backend.prefetch_witness(witnesses[1]) == witnesses[1].nbytes
        assert cuda_backend.prefetch_witness(witnesses[2]) == witnesses[2].nbytes
        second = cuda_backend.start_partition(key, witnesses[1], True, shapes[1])  # takes its prefetch
        cuda_backend.drop_prefetch(witnesses[2])  # nobody takes it
        cuda_backend.drop_prefetch(witnesses[1])  # taken already: nothing to drop
        prefetched = []
        for work in (first, second):
            work.wait_blocking()
            prefetched.append(work.result())
        cuda_backend.stream.synchronize()
        assert cuda_backend.allocator.in_use_bytes == resident
    finally:
        cuda_backend.prefetches_witness = saved
        cuda_backend.unload_key(key)
    for a, b in zip(uploaded, prefetched):
        _same(gpu_curve, a, b)


@pytest.mark.parametrize("min_bits", [2.0, 0.0], ids=["plain", "split"])
def test_one_sort_for_a_b1_b2_gives_the_same_msms(cuda_backend, gpu_curve, min_bits):
    """CudaOptions.msm_shared_sort: A, B1, B2 and C read one digit sort (freed after C's MSM); the results
    equal a sort per MSM, with and without the 0/1 split, and every scratch byte comes back."""
    msm = cuda_backend.runtime(gpu_curve).msm
    results = _off_then_on(cuda_backend, gpu_curve, min_bits, "shared sort", msm, "shared_sort")
    _same(gpu_curve, results[0], results[1])

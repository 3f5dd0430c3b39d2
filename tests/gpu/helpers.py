"""Host-side helpers of the GPU tests: limbs <-> ints, edge values, random points, device round trips."""
from __future__ import annotations

import random

import numpy as np

from pipeline.curves.encoding import encode_g1_mont, encode_g2_mont


def edge_values(p: int) -> list[int]:
    return [0, 1, 2, p - 1, p - 2, (p - 1) // 2, (p + 1) // 2, 1 << 64, (1 << 128) - 1]


def field_values(rng: random.Random, p: int, n_random: int) -> list[int]:
    return edge_values(p) + [rng.randrange(p) for _ in range(n_random)]


def run_on_device(backend, kernels, expr, out_shape_words, inputs, extra_args, n):
    """Upload uint32 word arrays, launch ``expr`` (out, *inputs, *extra_args), download out."""
    alloc, stream = backend.allocator, backend.stream
    bufs = [alloc.upload(np.ascontiguousarray(a), f"test input {i}") for i, a in enumerate(inputs)]
    out = np.zeros(out_shape_words, dtype=np.uint32)
    try:
        with alloc.alloc(out.nbytes, "test output") as d_out:
            kernels.launch(expr, (n + 127) // 128, 128, (d_out.ptr, *[b.ptr for b in bufs], *extra_args), stream)
            d_out.download(out, stream)
    finally:
        for b in bufs:
            b.free()
    return out


def words_from_ints(values, n_words: int) -> np.ndarray:
    raw = b"".join(int(v).to_bytes(4 * n_words, "little") for v in values)
    return np.frombuffer(raw, dtype=np.uint32).reshape(-1, n_words).copy()


def ints_from_words(arr: np.ndarray, n_words: int) -> list[int]:
    raw = np.ascontiguousarray(arr, dtype=np.uint32).tobytes()
    nb = 4 * n_words
    return [int.from_bytes(raw[i:i + nb], "little") for i in range(0, len(raw), nb)]


def lazy_words(arr: np.ndarray, p: int, n_words: int, rng: random.Random) -> np.ndarray:
    """The same field elements with about half moved up by p: words a lazy field (cuda_src/ff/mont.cuh,
    values in [0, 2p)) may hold for them, that a canonical-only kernel would get wrong."""
    values = [v + p if rng.random() < 0.5 else v for v in ints_from_words(arr, n_words)]
    return words_from_ints(values, n_words).reshape(arr.shape)


def random_points(group, rng: random.Random, count: int) -> list:
    """Affine points by a random walk from a random multiple of the generator (cheap, distinct)."""
    g = group.from_affine(group.generator)
    steps = [group.mul(g, rng.randrange(1, group.order)) for _ in range(8)]
    acc = group.mul(g, rng.randrange(1, group.order))
    out = []
    for _ in range(count):
        acc = group.add(acc, steps[rng.randrange(8)])
        out.append(group.to_affine(acc))
    return out


def encode_points(curve, group, points) -> np.ndarray:
    return encode_g2_mont(curve, points) if group.ops.degree == 2 else encode_g1_mont(curve, points)


def scalar_words(fr, values) -> np.ndarray:
    return fr.limbs_from_ints(values).view(np.uint32).reshape(-1, 8)


def seed_dev_key(cuda_backend, curve, log_n: int, n_public: int = 4, download_points: bool = True):
    """(the GPU development key, its points on the device, and the witness) of pipeline.synth's
    seed-shaped circuit of 2^log_n constraints (seeded by log_n); ``download_points`` as GpuDevSetup.run's."""
    from pipeline.setup import DevSecrets
    from pipeline.setup.gpu import GpuDevSetup
    from pipeline.synth import generate_circuit

    r1cs, witness = generate_circuit(log_n, n_public, curve, seed=log_n)
    setup = GpuDevSetup(cuda_backend)
    try:
        return setup.run(r1cs, DevSecrets.draw(curve, r1cs.domain_size, seed=log_n),
                         download_points=download_points), witness
    finally:
        setup.close()

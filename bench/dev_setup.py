"""Development setup on the GPU at seed scale, and one proof's GPU stage on the key it makes.

For each size 2^k and curve: a seed-shaped circuit with a satisfying witness (pipeline.synth's
generate_circuit, default shape, N_PUBLIC public inputs), the GPU setup with its phases
(CUDA events), key bytes per second; then the key's points are handed to the CUDA backend
without an upload (pipeline/setup/adopt.py) and the GPU stage of one proof (bench/gpu_stage.py's
stage_once) is timed with the circuit's witness and with a random-scalar witness of the same
length, in the same run; one proof is checked with our verifier (and with a public input changed).
Tables: bench/results/dev_setup_<sizes>_<curves>.md.

    python3 -m bench.dev_setup --sizes 20 22 24 26 --curves bls12381 bn128
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

import numpy as np

from bench.common import markdown_table, random_below
from bench.gpu_stage import stage_once
from pipeline.backends.cuda import CudaBackend
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import curve_by_name
from pipeline.formats.types import Witness
from pipeline.groth16 import prove
from pipeline.groth16.verifier import verify
from pipeline.setup import DevSecrets
from pipeline.setup.adopt import adopt_dev_key
from pipeline.setup.gpu import GpuDevSetup
from pipeline.synth import CircuitShape, generate_circuit

REPEAT = 3
N_PUBLIC = 8
PHASES = ("host_layout", "lagrange", "evaluations", "download_coefficients", "combine", "h_scalars", "tables",
          "points_a", "points_b1", "points_b2", "points_c", "points_ic", "points_h", "download_points", "assemble")
PHASE_HEADER = ["layout", "Lagrange", "evals", "coeff dl", "combine", "H scalars", "tables", "A", "B1", "B2 (G2)",
                "C", "IC", "H", "points dl", "assemble"]


def make_circuit(curve, log_n: int):
    """(r1cs, witness values, shape label)."""
    r1cs, witness = generate_circuit(log_n, N_PUBLIC, curve, seed=log_n)
    return r1cs, witness.values, f"pipeline.synth, {N_PUBLIC} public inputs, {CircuitShape().describe()}"


def stage_ms(backend, key, witness, split: bool = False) -> dict[str, float]:
    """Median GPU stage; ``split``: with the witness's shape, so the backend splits the 0 / 1 values."""
    shape = WitnessShape.of(witness, key.zkey.n_public + 1) if split else None
    stage_once(backend, key, witness, shape)  # warm-up (kernels, twiddles)
    runs = [stage_once(backend, key, witness, shape) for _ in range(REPEAT)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def check_proof(backend, key, zkey, witness) -> str:
    proof = prove(backend, key, zkey, Witness("<bench witness>", zkey.curve, witness))
    vk = zkey.verification_key()
    ok = verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
    bad = (proof.public_signals[0] + 1,) + proof.public_signals[1:]
    rejected = not verify(vk, bad, proof.pi_a, proof.pi_b, proof.pi_c)
    return f"{'yes' if ok else 'NO'} / {'yes' if rejected else 'NO'}"


def bench_one(backend, setup, curve, log_n: int) -> tuple[list, list, str]:
    t0 = time.perf_counter()
    r1cs, witness, shape = make_circuit(curve, log_n)
    circuit_s = time.perf_counter() - t0
    secrets = DevSecrets.draw(curve, r1cs.domain_size, seed=log_n)
    dev_key = setup.run(r1cs, secrets, path=f"<dev key 2^{log_n}>")
    del r1cs
    t = dev_key.timings_ms
    key_gb = dev_key.key_bytes / 1e9
    setup_row = [curve.name, f"2^{log_n}", f"{circuit_s:.1f}", *(f"{t.get(p + '_ms', 0.0) / 1e3:.2f}" for p in PHASES),
                 f"{t['total_ms'] / 1e3:.2f}", f"{key_gb:.2f}", f"{key_gb / (t['total_ms'] / 1e3):.2f}"]
    print(setup_row, flush=True)
    zkey = dev_key.zkey
    key = adopt_dev_key(backend, dev_key)
    try:
        verdict = check_proof(backend, key, zkey, witness)
        rng = np.random.default_rng(log_n)
        random_witness = random_below(rng, zkey.n_vars, curve.fr.limbs, curve.fr.bits)
        random_witness[0] = 0
        random_witness[0, 0] = 1
        own, rand = stage_ms(backend, key, witness), stage_ms(backend, key, random_witness)
        split = stage_ms(backend, key, witness, split=True)
    finally:
        backend.unload_key(key)
    stage_row = [curve.name, f"2^{log_n}", f"{own['total_ms']:.0f}", f"{split['total_ms']:.0f}",
                 f"{rand['total_ms']:.0f}", f"{own['total_ms'] / rand['total_ms']:.2f}",
                 f"{split['total_ms'] / rand['total_ms']:.2f}", f"{own['h_ms']:.0f} / {rand['h_ms']:.0f}",
                 f"{own['msm_ms']:.0f} / {split['msm_ms']:.0f} / {rand['msm_ms']:.0f}", verdict]
    print(stage_row, flush=True)
    return setup_row, stage_row, shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20])
    parser.add_argument("--curves", nargs="+", default=["bls12381", "bn128"])
    args = parser.parse_args()
    backend = CudaBackend()
    setup = GpuDevSetup(backend)
    setup_rows, stage_rows, shapes = [], [], set()
    try:
        for log_n in args.sizes:
            for name in args.curves:
                setup_row, stage_row, shape = bench_one(backend, setup, curve_by_name(name), log_n)
                setup_rows.append(setup_row)
                stage_rows.append(stage_row)
                shapes.add(shape)
                gc.collect()
    finally:
        setup.close()
        backend.close()
    setup_table = markdown_table(["curve", "domain", "circuit s (host)", *PHASE_HEADER, "setup s", "key GB", "GB/s"],
                                 setup_rows)
    stage_table = markdown_table(["curve", "domain", "stage ms (circuit witness)", "stage ms (circuit witness, 0/1 split)",
                                  "stage ms (random witness)", "ratio", "ratio (split)", "H ms (own / random)",
                                  "MSMs ms (own / split / random)",
                                  "verifies / rejects changed public"], stage_rows)
    note = (f"\nGPU development setup (pipeline/setup/gpu.py) on {backend.device.name}; circuits: "
            f"{', '.join(sorted(shapes))}. Setup phases in seconds (CUDA events; layout, downloads and assemble on "
            f"the host); 'setup s' is the whole call after the kernels were built, 'key GB' the key's bytes "
            f"(points and coefficients, as in the .zkey). Then one proof's GPU stage (compute_h + the five MSMs, "
            f"G2 included) on that key, its points adopted from the setup without an upload: median of {REPEAT} "
            f"after a warm-up, the circuit's own witness against a random-scalar witness of the same length, "
            f"same run.\n")
    out = Path(__file__).with_name("results") / f"dev_setup_{'_'.join(map(str, args.sizes))}_{'_'.join(args.curves)}.md"
    out.write_text("# Development setup on the GPU\n" + note + "\n" + setup_table + "\n\n" + stage_table + "\n")
    print(setup_table + "\n\n" + stage_table)


if __name__ == "__main__":
    main()

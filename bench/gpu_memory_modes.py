"""The whole GPU stage of one proof with stream-ordered device memory (the default: scratch
buffers from the device's pool, freed in stream order) against synchronous memory
(cuMemAlloc, and a context-wide sync before each cuMemFree), in one process, runs
interleaved, same random key and witness. Small keys show the fixed cost per proof. A third
column feeds the stream-ordered backend its witness from pinned memory, as the engine's
staging pool does, instead of a pageable numpy array.

    python3 -m bench.gpu_memory_modes [LOG_SIZES...]     default: 10 14 18 22
Writes bench/results/gpu_memory_modes.md.
"""
from __future__ import annotations

import statistics

import numpy as np

from bench.common import add_log_sizes, arg_parser, markdown_table, random_below, result_path, write_result
from bench.gpu_stage import random_key, stage_once
from pipeline.backends.cuda import CudaBackend
from pipeline.backends.cuda.options import CudaOptions
from pipeline.curves import BLS12_381, BN254


def compare(backends: dict, curve, log_n: int) -> list:
    rng = np.random.default_rng(log_n)
    zkey = random_key(curve, log_n, rng)
    witness = random_below(rng, zkey.n_vars, 4, curve.fr.bits)
    witness[0] = [1, 0, 0, 0]
    keys = {mode: b.load_key(zkey) for mode, b in backends.items()}
    pinned = backends["stream-ordered"].pinned_host_buffer(witness.nbytes)
    pinned_witness = pinned.view(witness.dtype, witness.shape)
    pinned_witness[...] = witness
    runs = [(mode, b, keys[mode], witness) for mode, b in backends.items()]
    runs.append(("pinned", backends["stream-ordered"], keys["stream-ordered"], pinned_witness))
    repeat = 9 if log_n <= 18 else 3
    totals: dict[str, list[float]] = {mode: [] for mode, *_ in runs}
    for _, b, key, w in runs:
        stage_once(b, key, w)  # warm-up: kernel load, twiddles, the pool's first blocks
    for _ in range(repeat):
        for mode, b, key, w in runs:  # interleaved, so drift hits all
            totals[mode].append(stage_once(b, key, w)["total_ms"])
    for mode, b in backends.items():
        b.unload_key(keys[mode])
    pinned.free()
    pooled, synchronous, from_pinned = (statistics.median(totals[m]) for m in ("stream-ordered", "synchronous", "pinned"))
    row = [curve.name, f"2^{log_n}", f"{pooled:.1f}", f"{synchronous:.1f}", f"{synchronous - pooled:+.1f}",
           f"{synchronous / pooled:.2f}", f"{from_pinned:.1f}", f"{pooled / from_pinned:.2f}"]
    print(row, flush=True)
    return row


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [10, 14, 18, 22], "log2 constraints")
    sizes = parser.parse_args().log_sizes
    backends = {"stream-ordered": CudaBackend(options=CudaOptions(stream_ordered_memory=True)),
                "synchronous": CudaBackend(options=CudaOptions(stream_ordered_memory=False))}
    rows = [compare(backends, curve, log_n) for log_n in sizes for curve in (BN254, BLS12_381)]
    for b in backends.values():
        b.close()
    table = markdown_table(["curve", "constraints", "stream-ordered ms", "synchronous ms", "difference ms",
                            "synchronous ÷ stream-ordered", "stream-ordered, pinned witness ms",
                            "pageable ÷ pinned"], rows)
    text = ("# GPU stage: stream-ordered vs synchronous device memory\n\nWall clock of `compute_h` + `msms` "
            "(random key and witness, key resident), median of 9 runs (3 at 2^20 and above) after a "
            f"warm-up, the two modes interleaved in one process on {backends['synchronous'].device.name}.\n\n"
            + table + "\n")
    write_result(result_path("gpu_memory_modes.md"), text, show=table)


if __name__ == "__main__":
    main()

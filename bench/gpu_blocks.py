"""Block sizes of the grid-stride kernels (the launch arguments in pipeline/backends/cuda/launch.py
that no kernel's code depends on), swept in one process: per size, the kernel (or the MSM phase
it runs in) as a ratio to the size in use. The evidence those constants cite.

    python3 -m bench.gpu_blocks [LOG_SIZE]      default 22; both curves
Writes bench/results/gpu_blocks_2e<LOG_SIZE>.md. Needs a GPU.
"""
from __future__ import annotations

import statistics

import numpy as np

from bench.common import (add_log_sizes, arg_parser, bit_heavy, markdown_table, random_below, result_path, time_ms,
                          write_result)
from bench.gpu_stage import random_key
from pipeline.backends.cuda import launch, msm as msm_module
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.kernels import grid_for
from pipeline.curves import BLS12_381, BN254

SIZES = (64, 128, 256, 512, 1024)


def elementwise(backend, rt, log_n: int, rng) -> dict[str, dict[int, float]]:
    """ELEMENTWISE_BLOCK: ff_to_mont, ntt_bit_reverse, ff_mul and ntt_quotient on 2^log_n elements."""
    n, fr = 1 << log_n, rt.kernels.curve.fr
    data = random_below(rng, n, fr.limbs, fr.bits)
    out: dict[str, dict[int, float]] = {}
    with backend.allocator.upload(data, "a") as a, backend.allocator.upload(data, "b") as b, \
            backend.allocator.upload(data, "c") as c, backend.allocator.alloc(data.nbytes, "out") as d_out:
        one = fr.limbs_from_ints([fr.to_mont(1)])[0]
        calls = {"ff_to_mont": ("ff_to_mont<fr_t>", (d_out.ptr, a.ptr, n)),
                 "ntt_bit_reverse": ("ntt_bit_reverse<fr_t>", (a.ptr, log_n, one)),
                 "ff_mul": ("ff_mul<fr_t>", (d_out.ptr, a.ptr, b.ptr, n)),
                 "ntt_quotient": ("ntt_quotient<fr_t>", (d_out.ptr, b.ptr, c.ptr, n))}
        for name, (expr, args) in calls.items():
            out[name] = {blk: time_ms(backend.stream, lambda: rt.kernels.launch(expr, grid_for(n, blk), blk, args,
                                                                               backend.stream)) for blk in SIZES}
    return out


def split_classify(backend, rt, log_n: int, rng) -> dict[int, float]:
    """SPLIT_BLOCK: msm_classify over a witness 80% in {0, 1}, the grid capped as split.py caps it."""
    n, fr = 1 << log_n, rt.kernels.curve.fr
    witness = bit_heavy(rng, random_below(rng, n, fr.limbs, fr.bits))
    with backend.allocator.upload(witness, "witness") as d_w, backend.allocator.alloc(4 * (n + 1), "ones") as d_one, \
            backend.allocator.alloc(4 * (n + 1), "others") as d_other:
        args = (d_w.ptr, n, d_one.ptr, d_other.ptr)
        return {blk: time_ms(backend.stream, lambda: rt.kernels.launch(
            "msm_classify", min(grid_for(n, blk), 1 << 16), blk, args, backend.stream)) for blk in SIZES}


def spmv(backend, curve, log_n: int) -> dict[int, float]:
    """SPMV_BLOCK: spmv_ab over a random key's A and B rows."""
    from bench.gpu_stage import spmv_ms

    key = backend.load_key(random_key(curve, log_n, np.random.default_rng(log_n)))
    witness = random_below(np.random.default_rng(1), key.zkey.n_vars, 4, curve.fr.bits)
    try:
        return {blk: spmv_ms(backend, key, witness, block=blk) for blk in SIZES}
    finally:
        backend.unload_key(key)


def msm_phases(backend, rt, log_n: int, rng) -> dict[str, dict[int, float]]:
    """DIGIT_BLOCK, CHUNK_COUNT_BLOCK, REDUCE_BLOCK: the G1 MSM phase each one's kernels run in
    (median of 3 profiled calls), random scalars, random points."""
    n, curve = 1 << log_n, rt.kernels.curve
    points = random_below(rng, n * 2, curve.fq.limbs, curve.fq.bits)
    scalars = random_below(rng, n, curve.fr.limbs, curve.fr.bits)
    knobs = {"DIGIT_BLOCK": ("count digits", "scatter digits"),
             "CHUNK_COUNT_BLOCK": ("accumulate affine", "combine partials"),
             "REDUCE_BLOCK": ("bucket running sums", "segment sums")}
    out: dict[str, dict[int, float]] = {}
    with backend.allocator.upload(points, "points") as d_p, backend.allocator.upload(scalars, "scalars") as d_s:
        rt.msm.run_xyzz(False, d_p.ptr, d_s.ptr, n)  # warm-up
        rt.msm.profile = True
        for knob, phases in knobs.items():
            default = getattr(msm_module, knob)
            out[f"{knob}: {' + '.join(phases)}"] = row = {}
            for blk in SIZES:
                setattr(msm_module, knob, blk)
                runs = []
                for _ in range(3):
                    rt.msm.run_xyzz(False, d_p.ptr, d_s.ptr, n)
                    runs.append(sum(rt.msm.last_phases_ms[p] for p in phases))
                row[blk] = statistics.median(runs)
            setattr(msm_module, knob, default)
        rt.msm.profile = False
    return out


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [22], "log2 elements / constraints / MSM size")
    log_n = parser.parse_args().log_sizes[0]
    backend = CudaBackend()
    in_use = {"ff_to_mont": launch.ELEMENTWISE_BLOCK, "ntt_bit_reverse": launch.ELEMENTWISE_BLOCK,
              "ntt_quotient": launch.ELEMENTWISE_BLOCK, "ff_mul": launch.ELEMENTWISE_BLOCK, "spmv_ab": launch.SPMV_BLOCK,
              "msm_classify": launch.SPLIT_BLOCK,
              "DIGIT_BLOCK": launch.DIGIT_BLOCK, "CHUNK_COUNT_BLOCK": launch.CHUNK_COUNT_BLOCK,
              "REDUCE_BLOCK": launch.REDUCE_BLOCK}
    rows = []
    for curve in (BN254, BLS12_381):
        rt, rng = backend.runtime(curve), np.random.default_rng(log_n)
        results = {**elementwise(backend, rt, log_n, rng), "spmv_ab": spmv(backend, curve, log_n),
                   "msm_classify": split_classify(backend, rt, log_n, rng),
                   **msm_phases(backend, rt, log_n, rng)}
        for name, by_block in results.items():
            base = by_block[in_use[name.split(":")[0]]]
            rows.append([curve.name, name, in_use[name.split(":")[0]], f"{base:.3f}",
                         *(f"{by_block[b] / base:.2f}" for b in SIZES), min(by_block, key=by_block.get)])
            print(rows[-1], flush=True)
    backend.close()
    table = markdown_table(["curve", "kernel (or MSM phase)", "block in use", "ms in use",
                            *(f"{b} ÷ in use" for b in SIZES), "fastest"], rows)
    text = (f"# Block sizes of the grid-stride kernels, 2^{log_n}\n\nOne process, CUDA-event medians "
            f"(MSM phases: median of 3 profiled calls); ratios to the block size in use.\n\n{table}\n")
    write_result(result_path(f"gpu_blocks_2e{log_n}.md"), text)


if __name__ == "__main__":
    main()

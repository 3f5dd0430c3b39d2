"""A partition's five MSMs (A, B1, B2 in G2, C, H) one after another on one stream, against the same
five spread over two streams (issue 16: the whole GPU stage).

    python3 -m bench.gpu_msm_overlap [LOG_SIZE...] [--curves bls12381 bn128] [--repeat 3] [--out FILE]

An MSM is mostly its level-0 bucket kernel (compute-bound, register-limited occupancy), with a digit
sort (memory-bound) before it and short, narrow kernels after it (partial sums, running sums, the
window combination). One after another, the GPU runs each phase alone; on two streams, one MSM's
sort and tail can run beside another's level 0. Whether that wins, and with which split and stream
priority, is what this measures. Each stream has its own runner and stream-ordered allocator (the
scratch of two MSMs at once); scalars and points are resident (the stage uploads the witness once).
Data: random words (bench/common.py: the kernels' cost does not depend on the values); the timing
is between CUDA events on the first stream, the second stream ordered inside them. Medians of
``--repeat`` after a warm-up. Writes bench/results/gpu_msm_overlap_<sizes>.md (or --out).
"""
from __future__ import annotations

import statistics

import numpy as np

from bench.common import add_curves, add_log_sizes, arg_parser, markdown_table, random_below, write_result
from pipeline.backends.cuda._bindings import driver
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.errors import check
from pipeline.backends.cuda.memory import DeviceAllocator
from pipeline.backends.cuda.msm import MsmRunner
from pipeline.backends.cuda.streams import Event, Stream
from pipeline.curves import curve_by_name

# (stream, G2?, scalars) per MSM, in each stream's queue order; scalars 0..3: A, B (B1 and B2), C, H
ONE_STREAM = [(0, False, 0), (0, False, 1), (0, True, 1), (0, False, 2), (0, False, 3)]
VARIANTS = {
    "one stream (today's order)": (ONE_STREAM, None),
    "G2 on a second stream": ([(1, True, 1), (0, False, 0), (0, False, 1), (0, False, 2), (0, False, 3)], None),
    "B2, H | A, B1, C": ([(0, True, 1), (0, False, 3), (1, False, 0), (1, False, 1), (1, False, 2)], None),
    "B2, H | A, B1, C; second stream first": ([(0, True, 1), (0, False, 3), (1, False, 0), (1, False, 1),
                                               (1, False, 2)], "high"),
    "A, B2, C | B1, H; second stream first": ([(0, False, 0), (0, True, 1), (0, False, 2), (1, False, 1),
                                               (1, False, 3)], "high"),
}


def time_variant(streams, runners, plan, d_g1, d_g2, d_scalars, d_outs, n: int, repeat: int) -> float:
    main, side = streams

    def queue() -> None:
        for k, (s, g2, which) in enumerate(plan):
            runners[s].enqueue(g2, (d_g2 if g2 else d_g1).ptr, d_scalars[which].ptr, n, d_outs[k].ptr)

    times = []
    for rep in range(repeat + 1):  # the first is the warm-up
        with Event() as start, Event() as side_end, Event() as end:
            start.record(main)
            side.wait(start)
            queue()
            side_end.record(side)
            main.wait(side_end)
            end.record(main)
            end.synchronize()
            if rep:
                times.append(end.elapsed_ms(start))
    return statistics.median(times)


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [22, 24])
    add_curves(parser)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    backend = CudaBackend()
    least, greatest = Stream.priority_range(backend.device)
    pool = check(driver.cuDeviceGetDefaultMemPool(backend.device.handle), "cuDeviceGetDefaultMemPool")
    internal = driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES
    rows = []
    for name in args.curves:
        curve = curve_by_name(name)
        rt = backend.runtime(curve)
        fq, fr = curve.fq, curve.fr
        rng = np.random.default_rng(16)
        n_max = 1 << max(args.log_sizes)
        alloc = backend.allocator
        with alloc.upload(random_below(rng, n_max * 2, fq.limbs, fq.bits), "G1 points") as d_g1, \
                alloc.upload(random_below(rng, n_max * 4, fq.limbs, fq.bits), "G2 points") as d_g2:
            d_scalars = [alloc.upload(random_below(rng, n_max, fr.limbs, fr.bits), "scalars") for _ in range(4)]
            d_outs = [alloc.alloc(rt.msm.xyzz_bytes(True), "result") for _ in ONE_STREAM]
            try:
                for deps, log_n in [(d, k) for d in (True, False) for k in args.log_sizes]:
                    # deps False: an allocation may not make its stream wait for a block freed on another
                    try:
                        check(driver.cuMemPoolSetAttribute(pool, internal, int(deps)), "cuMemPoolSetAttribute")
                    except Exception as exc:  # noqa: BLE001 - the rows say so; the default rows stand
                        print(f"pool attribute not set ({exc}): no rows with reuse across streams {deps}")
                        continue
                    base = None
                    for label, (plan, priority) in VARIANTS.items():
                        side = Stream(backend.device, greatest if priority == "high" else least)
                        side_alloc = DeviceAllocator(backend.device, alloc.budget_bytes, side)
                        # an allocator sets the pool's reuse across streams off (memory.py): this row's setting again
                        check(driver.cuMemPoolSetAttribute(pool, internal, int(deps)), "cuMemPoolSetAttribute")
                        runners = [rt.msm, MsmRunner(rt.kernels, side_alloc, side, backend.options.msm_g1_min_blocks)]
                        try:
                            ms = time_variant((backend.stream, side), runners, plan, d_g1, d_g2, d_scalars, d_outs,
                                              1 << log_n, args.repeat)
                        finally:
                            side.close()
                        base = base or ms
                        rows.append([curve.name, f"2^{log_n}", "yes" if deps else "no", label, f"{ms:.1f}",
                                     f"{ms / base:.3f}"])
                        print(rows[-1], flush=True)
            finally:
                check(driver.cuMemPoolSetAttribute(pool, internal, 0), "cuMemPoolSetAttribute")  # memory.py's setting
                for d in d_scalars + d_outs:
                    d.free()
    table = markdown_table(["curve", "n", "pool reuse across streams", "streams (first | second)", "ms (5 MSMs)",
                            "÷ one stream"], rows)
    text = ("# Five MSMs of a partition on one stream and on two (bench/gpu_msm_overlap.py)\n\n"
            f"Stream priorities: least {least}, greatest {greatest} (\"second stream first\": the second stream at "
            "the greatest). Pool reuse across streams: the device pool's REUSE_ALLOW_INTERNAL_DEPENDENCIES (yes, "
            "CUDA's default: an allocation may make its stream wait for a block freed on another; the project's "
            "allocators set it off since session 17). Medians of "
            f"{args.repeat} after a warm-up, CUDA events.\n\n" + table + "\n")
    write_result(args.out or f"bench/results/gpu_msm_overlap_{'_'.join(map(str, args.log_sizes))}.md", text, table)


if __name__ == "__main__":
    main()

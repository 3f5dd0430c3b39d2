"""G1 and G2 MSM on the GPU: points resident, scalars copied from (pinned) host memory on every call.

ms is the median of CUDA-event timings after a warm-up; "Madd/s" is (bucket additions n * windows)
per second, the rate the bucket step runs at. Usage:
  python3 -m bench.gpu_msm [g1_min_log] [g1_max_log] [g2_max_log] [out.md] [--no-variants]

--no-variants skips the occupancy variants of the G1 bucket kernel (the slow part at 2^26).
"""
from __future__ import annotations


import numpy as np

from bench.common import arg_parser, bit_heavy, markdown_table, random_below, time_ms, write_result
from pipeline import progress
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.memory import PinnedHostBuffer
from pipeline.curves import BLS12_381, BN254


phases: list = []
phase_names: list = []


def bench_group(backend, curve, g2: bool, logs, rng, rows, repeat=5):
    rt = backend.runtime(curve)
    fq, fr = curve.fq, curve.fr
    coords = 4 if g2 else 2
    n_max = 1 << max(logs)
    points = random_below(rng, n_max * coords, fq.limbs, fq.bits).reshape(n_max, coords, fq.limbs)
    scalars_all = {"random": random_below(rng, n_max, fr.limbs, fr.bits)}
    scalars_all["80% {0,1}"] = bit_heavy(rng, scalars_all["random"])
    with backend.allocator.upload(points, "bench points") as d_points:
        del points
        for log_n in progress.iterate(logs, f"{curve.name} {'G2' if g2 else 'G1'} MSM sizes"):
            n = 1 << log_n
            for kind, scalars in scalars_all.items():
                nbytes = n * fr.limbs * 8
                with backend.allocator.alloc(nbytes, "bench scalars") as d_s, \
                        PinnedHostBuffer(backend.device, nbytes) as h_pinned:
                    h_scalars = h_pinned.view(np.uint64, (n, fr.limbs))  # the prep stage's staging buffer
                    h_scalars[:] = scalars[:n]

                    def call():
                        d_s.upload(h_scalars, backend.stream)
                        rt.msm.run_xyzz(g2, d_points.ptr, d_s.ptr, n)
                    ms = time_ms(backend.stream, call, warmup=1, repeat=repeat)
                    plan = rt.msm.last_plan
                    if log_n >= max(logs) - 2:  # where the time goes, at the larger sizes
                        rt.msm.profile = True
                        call()
                        rt.msm.profile = False
                        phases.append([curve.name, "G2" if g2 else "G1", f"2^{log_n}", kind] +
                                      [f"{v:.2f}" for v in rt.msm.last_phases_ms.values()])
                        phase_names[:] = list(rt.msm.last_phases_ms)
                rate = n * plan.n_windows / (ms * 1e-3) / 1e6
                rows.append([curve.name, "G2" if g2 else "G1", f"2^{log_n}", kind, f"{ms:.2f}", plan.c,
                             f"{rate:.0f}"])
                print(rows[-1], flush=True)


def main(g1_min: int = 16, g1_max: int = 24, g2_max: int = 22, out_path: str | None = None,
         variants: bool = True) -> str:
    backend = CudaBackend()
    rng = np.random.default_rng(2)
    rows: list = []
    for curve in (BLS12_381, BN254):
        bench_group(backend, curve, False, range(g1_min, g1_max + 1, 2), rng, rows)
    for curve in (BLS12_381, BN254):
        bench_group(backend, curve, True, range(g1_min, g2_max + 1, 2), rng, rows, repeat=3)
    # occupancy variants of the G1 bucket kernel at the target size (bench/NOTES.md, MSM v2)
    for curve in (BLS12_381, BN254) if variants else ():
        default_blocks = backend.runtime(curve).msm.g1_min_blocks
        for min_blocks in [b for b in (1, 3, 4, 5) if b != default_blocks]:
            backend.runtime(curve).msm.g1_min_blocks = min_blocks
            variant: list = []
            bench_group(backend, curve, False, [g1_max], rng, variant)
            rows += [[r[0], f"G1 min_blocks={min_blocks}", *r[2:]] for r in variant]
        backend.runtime(curve).msm.g1_min_blocks = default_blocks
    table = markdown_table(["curve", "group", "n", "scalars", "ms", "window c", "Madd/s"], rows)
    phase_table = markdown_table(["curve", "group", "n", "scalars"] + [f"{p} ms" for p in phase_names], phases)
    text = (f"# MSM on {backend.device.name}\n\nPoints resident on the device, scalars copied from host "
            f"memory (pinned, as the prep_msm stage stages them) on every call; median of CUDA-event timings after one warm-up.\n\n{table}\n\n"
            f"## Phases (one profiled call; host syncs between phases included)\n\n{phase_table}\n")
    backend.close()
    write_result(out_path, text)
    return text


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("g1_min_log", type=int, nargs="?", default=16)
    parser.add_argument("g1_max_log", type=int, nargs="?", default=24)
    parser.add_argument("g2_max_log", type=int, nargs="?", default=22)
    parser.add_argument("out", nargs="?", default=None, help="markdown file (default: print only)")
    parser.add_argument("--no-variants", dest="variants", action="store_false")
    a = parser.parse_intermixed_args()  # --no-variants may come anywhere
    main(a.g1_min_log, a.g1_max_log, a.g2_max_log, a.out, variants=a.variants)

"""G1 (--g2: G2) MSMs at two window widths, for Nsight Compute to read the bucket sums' kernels (GPU host).

    ncu --clock-control none --kernel-name regex:msm_accumulate_flat --launch-skip 1 \
        --section MemoryWorkloadAnalysis --section WarpStateStats python3 -m bench.msm_ncu_probe [LOG_N] [C ...]

reads level 0 (the first lead of session 55's NOTES: ~8% more an addition at c = 20 than at c = 17);

    ncu --clock-control none --csv --metrics gpu__time_duration.sum \
        --kernel-name regex:"msm_sum|msm_hot|scan_|msm_piece|msm_accumulate<" python3 -m bench.msm_ncu_probe --bit-heavy 26 20

times every kernel after level 0 (the pieces' sums, session 56: what is left of "combine partials").

One size (default 2^26, BLS12-381, random points and scalars resident) at each width (default 17 and 20), each
MSM twice (the first a warm-up: ncu's --launch-skip, or read the later rows); with --bit-heavy, once more each over
80% {0,1} scalars (bench.common.bit_heavy: one hot bucket). Each MSM prints a line before it runs, so ncu's rows
can be told apart by the order.
"""
from __future__ import annotations

import sys

import numpy as np

from bench.common import bit_heavy, random_below
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.curves import curve_by_name


def main(log_n: int = 26, widths: tuple[int, ...] = (17, 20), curve_name: str = "bls12381",
         heavy: bool = False, g2: bool = False) -> None:
    backend = CudaBackend()
    curve = curve_by_name(curve_name)
    rt = backend.runtime(curve)
    n, fq, fr, group = 1 << log_n, curve.fq, curve.fr, "G2" if g2 else "G1"
    rng = np.random.default_rng(1)
    coords = 4 if g2 else 2  # field elements: timing only
    points = random_below(rng, coords * n, fq.limbs, fq.bits).reshape(n, coords, fq.limbs)
    kinds = {"random": random_below(rng, n, fr.limbs, fr.bits)}
    if heavy:
        kinds["80% {0,1}"] = bit_heavy(rng, kinds["random"])
    with backend.allocator.upload(points, "probe points") as d_points:
        for kind, scalars in kinds.items():
            with backend.allocator.upload(scalars, "probe scalars") as d_scalars:
                for c in widths:
                    for _ in range(2):
                        print(f"probe: {group} 2^{log_n} c = {c}, {kind} scalars", flush=True)
                        rt.msm.run_xyzz(g2, d_points.ptr, d_scalars.ptr, n, c)
                    plan = rt.msm.last_plan
                    print(f"probe: ({plan.n_windows} windows, {plan.n_buckets} buckets)", flush=True)
    backend.close()


if __name__ == "__main__":
    argv = sys.argv[1:]
    flags = {a for a in argv if a.startswith("--")}
    args = [int(a) for a in argv if not a.startswith("--")]
    main(args[0] if args else 26, tuple(args[1:]) or (17, 20), heavy="--bit-heavy" in flags, g2="--g2" in flags)

"""G1 MSMs at two window widths, for Nsight Compute to read the bucket sums' kernels (GPU host).

    ncu --clock-control none --kernel-name regex:msm_accumulate --launch-skip 6 \
        --section MemoryWorkloadAnalysis --section WarpStateStats python3 -m bench.msm_ncu_probe [LOG_N] [C ...]

(regex:msm_accumulate_flat for level 0 alone; msm_accumulate< for the levels over its partials, the second lead
of session 55's NOTES: ~1.5 ns a partial against 0.36 a level-0 addition.)

One size (default 2^26, BLS12-381, random points and scalars resident) at each width (default 17 and 20), each
MSM twice (the first a warm-up: ncu's --launch-skip, or read the later rows). The question it is for
(bench/NOTES.md, session 55): level 0 costs ~8% more an addition at c = 20 than at c = 17 (session 36's rows), and
not for its pieces' stores (more entries a thread changed nothing); the L2 hit rate, DRAM bytes and stall reasons of
the two widths' launches should say where it goes.
"""
from __future__ import annotations

import sys

import numpy as np

from bench.common import random_below
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.curves import curve_by_name


def main(log_n: int = 26, widths: tuple[int, ...] = (17, 20), curve_name: str = "bls12381") -> None:
    backend = CudaBackend()
    curve = curve_by_name(curve_name)
    rt = backend.runtime(curve)
    n, fq, fr = 1 << log_n, curve.fq, curve.fr
    rng = np.random.default_rng(1)
    points = random_below(rng, 2 * n, fq.limbs, fq.bits).reshape(n, 2, fq.limbs)  # field elements: timing only
    scalars = random_below(rng, n, fr.limbs, fr.bits)
    with backend.allocator.upload(points, "probe points") as d_points, \
            backend.allocator.upload(scalars, "probe scalars") as d_scalars:
        for c in widths:
            for _ in range(2):
                rt.msm.run_xyzz(False, d_points.ptr, d_scalars.ptr, n, c)
            plan = rt.msm.last_plan
            print(f"probe: G1 2^{log_n} c = {c} ({plan.n_windows} windows, {plan.n_buckets} buckets), twice", flush=True)
    backend.close()


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 26, tuple(args[1:]) or (17, 20))

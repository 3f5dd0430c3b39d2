"""One natural-order transform and one run of the radix passes alone, for Nsight Compute (GPU host).

    ncu --clock-control none --kernel-name regex:ntt_pass --metrics ... python3 -m bench.ntt_ncu_probe [LOG_N ...]

Each size runs the natural transform (launch.py's defaults: the last pass stores in natural order from
a scratch array) and then the radix passes alone (in place, bit-reversed out), on the same resident
data, a warm-up of each first. ncu then reports each launch's time, DRAM bytes and L2 hit rate: where
the natural transform's extra microseconds over the radix passes go (bench/NOTES.md, session 38).
"""
from __future__ import annotations

import sys

import numpy as np

from bench.common import random_below
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.curves import curve_by_name


def main(logs: list[int], curve_name: str = "bls12381") -> None:
    backend = CudaBackend()
    curve = curve_by_name(curve_name)
    rt = backend.runtime(curve)
    rt.ntt.ensure_twiddles(max(logs))
    values = random_below(np.random.default_rng(1), 1 << max(logs), curve.fr.limbs, curve.fr.bits)
    with backend.allocator.upload(values, "probe data") as d:
        for log_n in logs:
            for _ in range(2):  # the first of each: a warm-up (ncu --launch-skip, or read the later rows)
                rt.ntt.ntt(d.ptr, log_n)
                backend.stream.synchronize()
                rt.ntt.radix_passes(d.ptr, log_n, False, False)
                backend.stream.synchronize()
            print(f"probe: 2^{log_n}: natural then radix, twice", flush=True)
    rt.ntt.close()
    backend.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [20])

"""Fr NTT on the GPU, data resident in device memory: ms (median of CUDA-event timings) and GB/s.

GB/s counts each radix pass reading and writing the array once, plus the bit-reversal pass
(natural order in and out, as snarkjs). Usage: python3 -m bench.gpu_ntt [min_log] [max_log] [out.md]
"""
from __future__ import annotations


import numpy as np

from bench.common import arg_parser, markdown_table, random_below, time_ms, write_result
from pipeline import progress
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.ntt import pass_plan
from pipeline.curves import BLS12_381, BN254


def main(min_log: int = 16, max_log: int = 27, out_path: str | None = None) -> str:
    backend = CudaBackend()
    rng = np.random.default_rng(1)
    rows = []
    for curve in (BLS12_381, BN254):
        rt = backend.runtime(curve)
        fr = curve.fr
        rt.ntt.ensure_twiddles(max_log)
        for log_n in progress.iterate(range(min_log, max_log + 1), f"{curve.name} NTT sizes"):
            n = 1 << log_n
            data = random_below(rng, n, fr.limbs, fr.bits)
            with backend.allocator.upload(data, "ntt bench data") as d:
                fwd = time_ms(backend.stream, lambda: rt.ntt.ntt(d.ptr, log_n))
                inv = time_ms(backend.stream, lambda: rt.ntt.ntt(d.ptr, log_n, inverse=True))
                radix = time_ms(backend.stream, lambda: rt.ntt.radix_passes(d.ptr, log_n, False, False))
                coset = time_ms(backend.stream, lambda: rt.ntt.to_odd_coset(d.ptr, log_n))
            passes = len(pass_plan(log_n, False)) + 1
            gbs = 2 * passes * n * 32 / (fwd * 1e6)
            rows.append([curve.name, f"2^{log_n}", f"{fwd:.3f}", f"{inv:.3f}", f"{radix:.3f}", f"{coset:.3f}", f"{gbs:.0f}"])
            print(rows[-1], flush=True)
        rt.ntt.close()
    table = markdown_table(["curve", "n", "NTT ms", "iNTT ms", "radix passes only ms", "odd coset (iNTT+shift+NTT) ms",
                            "GB/s (NTT)"], rows)
    text = f"# Fr NTT on {backend.device.name}\n\nData resident on the device; median of 5 after warm-up.\n\n{table}\n"
    backend.close()
    write_result(out_path, text)
    return text


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("min_log", type=int, nargs="?", default=16)
    parser.add_argument("max_log", type=int, nargs="?", default=27)
    parser.add_argument("out", nargs="?", default=None, help="markdown file (default: print only)")
    a = parser.parse_args()
    main(a.min_log, a.max_log, a.out)

"""Is the FP64 pipe free room beside our field products? (issue 11/16: a lever for fewer multiply-pipe cycles).

    python3 -m bench.pipe_rates [--curves bls12381 bn128] [--iters 4096] [--out bench/results/pipe_rates.md]

Hopper retires 64 IMADs and 64 DFMAs an SM a clock on separate pipes, and issues 4 warp instructions an SM a clock
(one a sub-partition). A Montgomery product done partly in 52-bit limbs on the DFMA pipe could run beside the
IMAD.WIDE rows, but only if the kernels are bound by the multiply pipe and not by issue: session 33 found the G1
bucket sums follow the instruction count. This probe measures it directly (bench/pipe_probe.cu, one wave of
resident blocks, cycles from clock64 on the SM):

- IMAD.WIDE alone, DFMA alone, and interleaved: each pipe's warp instructions a sub-partition a clock, and
  whether both together reach the sum (separate pipes) or the issue limit of 1;
- two Montgomery products an iteration (fq_t, fr_t) with 0..D DFMAs beside them: the products' rate as DFMA
  work is added. DFMAs that leave it unchanged are free room; a hybrid product could use that much.

Every number comes from one process on one GPU; the ratios compare rows of that run.
"""
from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

import numpy as np

from bench.common import add_curves, arg_parser, markdown_table, random_below, time_ms, write_result
from pipeline.backends.cuda._bindings import driver
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.errors import check
from pipeline.backends.cuda.kernel_sources import CUDA_SRC
from pipeline.backends.cuda.kernels import PTR, U32, CurveKernels
from pipeline.curves import curve_by_name

PROBE_SOURCE = Path(__file__).with_name("pipe_probe.cu")
BLOCK = 256
PIPE_MIXES = ((8, 0), (0, 8), (8, 8), (16, 8), (8, 16))  # (IMADs, DFMAs) an iteration
FIELD_DFMAS = (0, 8, 16, 32, 64, 128)  # DFMAs beside two Montgomery products
FIELDS = ("fq_t", "fr_t")


def probe_units() -> dict[str, tuple[str, ...]]:
    return {"pipe_probe": (*(f"probe_pipes<{i}, {d}>" for i, d in PIPE_MIXES),
                           *(f"probe_field_mul<{f}, {d}>" for f in FIELDS for d in FIELD_DFMAS))}


class ProbeKernels(CurveKernels):
    units = probe_units()
    signatures = {"probe_pipes": (PTR, PTR, PTR, PTR, U32), "probe_field_mul": (PTR, PTR, PTR, PTR, U32)}
    default_units = None

    def resident_blocks(self, expr: str) -> int:
        """Blocks of ``BLOCK`` threads an SM holds at once (registers and shared memory decide)."""
        return int(check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self._function(expr), BLOCK, 0),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor", expr))


def probe_source_root(into: Path) -> Path:
    """A copy of the package's kernel sources with the probe as one more build unit."""
    root = into / "cuda_src"
    shutil.copytree(CUDA_SRC, root)
    shutil.copy(PROBE_SOURCE, root / "programs" / "pipe_probe.cu")
    return root


def run_probe(backend, kernels, expr: str, args_of, iters: int, per_iter: int) -> dict:
    """One wave (every block resident at once): ops an SM a clock from the blocks' median clock64 span."""
    per_sm = kernels.resident_blocks(expr)
    grid = per_sm * backend.device.sm_count
    with backend.allocator.alloc(8 * grid, "probe cycles") as d_cycles:
        def launch():
            kernels.launch(expr, grid, BLOCK, (*args_of(grid), int(d_cycles), iters), backend.stream)
        ms = time_ms(backend.stream, launch, warmup=1, repeat=3)
        cycles = d_cycles.download(np.empty(grid, dtype=np.uint64), backend.stream)
    span = float(statistics.median(cycles.tolist()))
    ops_per_sm = per_sm * BLOCK * iters * per_iter
    return {"blocks_per_sm": per_sm, "ms": ms, "cycles": span, "per_sm_clk": ops_per_sm / span,
            "mhz": span / (ms * 1e3)}


def main(curves: list[str], iters: int, out: Path | None) -> str:
    backend = CudaBackend()
    rng = np.random.default_rng(7)
    lines = [f"# Pipe rates: IMAD.WIDE, DFMA and the field product ({backend.device.name}, {backend.device.sm_count} "
             f"SMs)\n", "Warp instructions a sub-partition a clock (an SM issues at most 4, one a sub-partition; "
             "Hopper's IMAD and DFMA pipes take 16 lanes a clock each: 0.5 a pipe). One wave of resident blocks of "
             f"{BLOCK} threads, {iters} iterations, cycles from clock64.\n"]
    with tempfile.TemporaryDirectory() as tmp:
        root = probe_source_root(Path(tmp))
        for name in curves:
            curve = curve_by_name(name)
            kernels = ProbeKernels(backend.device, curve, source_root=root)
            n_max = 64 * BLOCK * backend.device.sm_count
            d_in = backend.allocator.upload(rng.integers(1, 2**32, size=1024, dtype=np.uint64).astype(np.uint32),
                                            "probe words")
            din = np.concatenate([[1.0 - 2.0**-40, 2.0**-50], rng.uniform(0.5, 1.0, size=8)])
            d_din = backend.allocator.upload(din, "probe doubles")
            d_out = backend.allocator.alloc(8 * n_max, "probe out")
            rows = []
            for imads, dfmas in PIPE_MIXES:
                r = run_probe(backend, kernels, f"probe_pipes<{imads}, {dfmas}>",
                              lambda g: (int(d_out), int(d_in), int(d_din)), iters, 1)
                warp_ops = r["per_sm_clk"] / 128  # thread ops -> warp instructions a sub-partition
                rows.append([f"{imads} IMAD.WIDE + {dfmas} DFMA", r["blocks_per_sm"],
                             f"{warp_ops * imads:.3f}", f"{warp_ops * dfmas:.3f}", f"{warp_ops * (imads + dfmas):.3f}",
                             f"{r['mhz']:.0f}"])
            lines += [f"## {curve.name}: the pipes\n", markdown_table(
                ["an iteration", "blocks/SM", "IMAD.WIDE /SMSP/clk", "DFMA /SMSP/clk", "both", "SM MHz"], rows), ""]
            rows = []
            for field in FIELDS:
                limbs = curve.fq.limbs if field == "fq_t" else curve.fr.limbs
                bits = curve.fq.bits if field == "fq_t" else curve.fr.bits
                base = None
                for dfmas in FIELD_DFMAS:
                    expr = f"probe_field_mul<{field}, {dfmas}>"
                    grid_max = kernels.resident_blocks(expr) * backend.device.sm_count
                    values = random_below(rng, 3 * grid_max * BLOCK, limbs, bits)
                    with backend.allocator.upload(values, "probe field values") as d_io:
                        r = run_probe(backend, kernels, expr, lambda g: (int(d_io), int(d_din), int(d_out)), iters, 2)
                    muls = r["per_sm_clk"]
                    base = base or muls
                    rows.append([field, dfmas // 2, r["blocks_per_sm"], f"{muls:.4f}", f"{muls / base:.3f}",
                                 f"{muls * dfmas / 2 / 128:.3f}", f"{r['mhz']:.0f}"])
            lines += [f"## {curve.name}: Montgomery products with DFMAs beside\n", markdown_table(
                ["field", "DFMAs a product", "blocks/SM", "products /SM/clk", "vs none", "DFMA /SMSP/clk", "SM MHz"],
                rows), ""]
            for buf in (d_in, d_din, d_out):
                buf.free()
            kernels.close()
    backend.close()
    text = "\n".join(lines) + "\n"
    write_result(out, text)
    return text


if __name__ == "__main__":
    p = arg_parser(__doc__)
    add_curves(p)
    p.add_argument("--iters", type=int, default=4096)
    p.add_argument("--out", type=Path, default=Path("bench/results/pipe_rates.md"))
    a = p.parse_args()
    main(a.curves, a.iters, a.out)

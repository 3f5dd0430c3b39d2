"""Is the FP64 pipe free room beside our field products? (issues 11/16: a lever for fewer multiply-pipe cycles).

    python3 -m bench.pipe_rates [--curves bls12381 bn128] [--iters 16384] [--out bench/results/pipe_rates.md]

Hopper's data sheet gives 64 INT32 and 64 FP64 lanes an SM, on separate pipes, and it issues 4 warp
instructions an SM a clock (one a sub-partition). A Montgomery product done partly in 52-bit limbs on the DFMA
pipe could run beside the IMAD.WIDE rows, but only if the kernels are bound by the multiply pipe and not by
issue: session 33 found the G1 bucket sums follow the instruction count. This probe measures it directly
(bench/pipe_probe.cu: every SM full of resident blocks; the rate over the grid's span at the SMs' own clock):

- mad.wide steps alone, DFMAs alone, and interleaved: each pipe's warp instructions a sub-partition a clock,
  and whether both together reach the sum (separate pipes) or the issue limit of 1;
- two Montgomery products an iteration (fq_t, fr_t) with 0..128 DFMAs beside them: the products' rate as DFMA
  work is added. DFMAs that leave it unchanged are free room; a hybrid product could use that much;
- other products, checked word for word against ours and timed alike: a b as 2N words on the FP64 pipe,
  schoolbook and one level of Karatsuba on the IMAD pipe, each reduced by mont_t::from_wide;
- four products a thread, and two at fewer blocks an SM: whether the products are bound by a pipe (more
  independent work, same rate) or by their carry chains' latency (more work, higher rate);
- `--sections additions` (bench/add_probe.cu): the MSM's XYZZ mixed addition alone in registers, G1 and G2, over
  the plain and the lazy field forms the bucket kernels use: the most a level-0 kernel of these formulas can
  reach, and its price in our Fq products (the same call's rate of two products a thread), beside the count
  bench/stage_floor.py prices an addition at.

Every number comes from one process on one GPU; the ratios compare rows of that run.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from bench.common import add_curves, arg_parser, markdown_table, random_below, uniform_below_modulus, write_result
from pipeline.backends.cuda._bindings import driver
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.errors import check
from pipeline.backends.cuda.kernel_sources import CUDA_SRC
from pipeline.backends.cuda.kernels import PTR, U32, CurveKernels
from pipeline.curves import curve_by_name

PROBE_SOURCE = Path(__file__).with_name("pipe_probe.cu")
ADD_SOURCE = Path(__file__).with_name("add_probe.cu")
SECTIONS = ("pipes", "products", "additions")
BLOCK = 256
PIPE_MIXES = ((8, 0), (0, 8), (8, 8), (16, 8), (8, 16))  # (mad.wide steps, DFMAs) an iteration
FIELD_DFMAS = (0, 8, 16, 32, 64, 128)  # DFMAs beside two Montgomery products an iteration
FIELD_ILP = 4  # one more row: this many independent products a thread, no DFMAs
FIELDS = ("fq_t", "fr_t")
# add_probe.cu's rows: (group, field type, accumulators a point slot); G2's bucket kernels hold a point over two
# lanes (fq2_pair_t), the lazy forms are the bucket sums' (launch.LAZY_FIELDS)
ADD_ROWS = (("G1", "fq_t", 1), ("G1", "fq_lazy_t", 1), ("G1", "fq_lazy_t", 2), ("G2", "fq2_pair_t", 1),
            ("G2", "fq2_pair_lazy_t", 1))


# pipe_probe.cu's product kinds past ours: a b as 2N words first (on the FP64 pipe; schoolbook and one level of
# Karatsuba on the IMAD pipe), then mont_t::from_wide
OTHER_PRODUCTS = {1: "FP64 hybrid", 2: "wide schoolbook", 3: "wide Karatsuba"}


def field_expr(field: str, dfmas: int, products: int, kind: int = 0) -> str:
    return f"probe_field_mul<{field}, {kind}, {dfmas}, {products}>"


def add_expr(field: str, accs: int) -> str:
    return f"probe_madd<{field}, {accs}>"


def probe_units() -> dict[str, tuple[str, ...]]:
    return {"pipe_probe": (*(f"probe_pipes<{i}, {d}>" for i, d in PIPE_MIXES),
                           *(field_expr(f, d, 2) for f in FIELDS for d in FIELD_DFMAS),
                           *(field_expr(f, 0, FIELD_ILP) for f in FIELDS),
                           *(field_expr(f, 0, p, k) for f in FIELDS for k in OTHER_PRODUCTS for p in (2, FIELD_ILP)),
                           *(f"probe_product_check<{f}, {k}>" for f in FIELDS for k in OTHER_PRODUCTS)),
            "add_probe": tuple(add_expr(f, a) for _, f, a in ADD_ROWS)}


class ProbeKernels(CurveKernels):
    units = probe_units()
    signatures = {"probe_pipes": (PTR, PTR, PTR, PTR, U32), "probe_field_mul": (PTR, PTR, PTR, PTR, U32),
                  "probe_product_check": (PTR, PTR, PTR, PTR, U32), "probe_madd": (PTR, PTR, PTR, U32)}
    default_units = ("pipe_probe",)  # add_probe (G2's formulas: the longer compile) at its first launch

    def resident_blocks(self, expr: str) -> int:
        """Blocks of ``BLOCK`` threads an SM holds at once (registers and shared memory decide)."""
        return int(check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self._function(expr), BLOCK, 0),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor", expr))


def probe_source_root(into: Path) -> Path:
    """A copy of the package's kernel sources with the probe as one more build unit."""
    root = into / "cuda_src"
    shutil.copytree(CUDA_SRC, root)
    shutil.copy(PROBE_SOURCE, root / "programs" / "pipe_probe.cu")
    shutil.copy(ADD_SOURCE, root / "programs" / "add_probe.cu")
    return root


def run_probe(backend, kernels, expr: str, args: tuple, iters: int, per_iter: int, per_sm: int | None = None) -> dict:
    """A grid of ``per_sm`` blocks on every SM (default: as many as an SM holds at once), after a warm-up launch:
    ops an SM a clock over the grid's whole span (first block's start to last block's end, global timer), at the
    SMs' clock (clock64 against the timer)."""
    per_sm = per_sm or kernels.resident_blocks(expr)
    grid = per_sm * backend.device.sm_count
    with backend.allocator.alloc(32 * grid, "probe spans") as d_times:
        for _ in range(2):
            kernels.launch(expr, grid, BLOCK, (*args, int(d_times), iters), backend.stream)
        times = d_times.download(np.empty((grid, 4), dtype=np.uint64), backend.stream).astype(np.float64)
    block_ns = times[:, 3] - times[:, 2]
    ghz = float(np.median((times[:, 1] - times[:, 0]) / block_ns))
    span_ns = float(times[:, 3].max() - times[:, 2].min())
    ops_per_sm = per_sm * BLOCK * iters * per_iter
    return {"blocks_per_sm": per_sm, "per_sm_clk": ops_per_sm / (span_ns * ghz), "mhz": ghz * 1e3,
            "overlap": float(np.median(block_ns)) / span_ns}


def field_of(curve, field: str):
    return curve.fq if field == "fq_t" else curve.fr


def time_products(backend, kernels, rng, f, expr: str, products: int, d_din, d_out, iters: int,
                  per_sm: int | None = None) -> dict:
    """run_probe of a probe_field_mul kernel over random values of field ``f`` (products + 1 a thread)."""
    blocks = per_sm or kernels.resident_blocks(expr)
    values = random_below(rng, (products + 1) * blocks * backend.device.sm_count * BLOCK, f.limbs, f.bits)
    with backend.allocator.upload(values, "probe field values") as d_io:
        return run_probe(backend, kernels, expr, (int(d_io), int(d_din), int(d_out)), iters, products, per_sm)


def field_table(backend, kernels, curve, rng, d_din, d_out, iters: int) -> str:
    """Per field: two products a thread with 0..128 DFMAs beside, then FIELD_ILP products a thread, then two
    products at fewer blocks an SM (fewer warps to hide the carry chains' latency), then the other product kinds."""
    rows = []
    for field in FIELDS:
        f = field_of(curve, field)
        most = kernels.resident_blocks(field_expr(field, 0, 2))
        shapes = ([(0, d, 2, None) for d in FIELD_DFMAS] + [(0, 0, FIELD_ILP, None)]
                  + [(0, 0, 2, b) for b in range(1, most)]
                  + [(k, 0, p, None) for k in OTHER_PRODUCTS for p in (2, FIELD_ILP)])
        base = None
        for kind, dfmas, products, per_sm in shapes:
            r = time_products(backend, kernels, rng, f, field_expr(field, dfmas, products, kind), products, d_din,
                              d_out, iters, per_sm)
            rate = r["per_sm_clk"]
            base = base or rate
            rows.append([field, OTHER_PRODUCTS.get(kind, "ours"), products, dfmas // products, r["blocks_per_sm"],
                         r["blocks_per_sm"] * BLOCK // 128, f"{rate:.4f}", f"{rate / base:.3f}", f"{128 / rate:.0f}",
                         f"{rate * dfmas / products / 128:.3f}", f"{r['mhz']:.0f}", f"{r['overlap']:.3f}"])
    return markdown_table(["field", "product", "products a thread", "DFMAs a product", "blocks/SM", "warps/SMSP",
                           "products /SM/clk", "vs first row", "SMSP clk a warp product", "DFMA /SMSP/clk", "SM MHz",
                           "block / grid span"], rows)


def addition_table(backend, kernels, curve, rng, d_din, d_out, iters: int) -> str:
    """add_probe.cu's rows: XYZZ mixed additions in registers an SM a clock, the device's time an addition at that
    rate, and the addition's price in our Fq products (this call's rate of two products a thread, no DFMAs),
    beside bench.stage_floor's count. The formulas are the MSM's own (xyzz_t::add_affine, GPU-tested against the
    CPU reference in tests/gpu); here only their rate is read, so the points are any field values below p."""
    from bench.stage_floor import G1_MADD, G2_MADD

    fq = curve.fq
    product_rate = time_products(backend, kernels, rng, fq, field_expr("fq_t", 0, 2), 2, d_din, d_out,
                                 iters)["per_sm_clk"]
    rows = []
    for group, field, accs in ADD_ROWS:
        expr = add_expr(field, accs)
        lanes = 2 if field.startswith("fq2_pair") else 1
        blocks = kernels.resident_blocks(expr)
        slots = blocks * backend.device.sm_count * BLOCK // lanes
        coords = 2 if group == "G1" else 4  # Fq words of an affine point: x, y (G2: two Fq each)
        points = random_below(rng, (accs + 2) * slots * coords, fq.limbs, fq.bits)
        add_iters = max(1, iters // (8 if group == "G1" else 16))
        with backend.allocator.upload(points, "probe points") as d_pts, \
                backend.allocator.alloc(accs * slots * 2 * coords * 8 * fq.limbs, "probe accumulators") as d_acc:
            r = run_probe(backend, kernels, expr, (int(d_pts), int(d_acc)), add_iters, 2 * accs / lanes)
        rate = r["per_sm_clk"]
        ns = 1e3 / (rate * backend.device.sm_count * r["mhz"])
        rows.append([group, field, accs, r["blocks_per_sm"], f"{rate:.5f}", f"{ns:.3f}",
                     f"{product_rate / rate:.1f}", f"{G1_MADD if group == 'G1' else G2_MADD:g}",
                     f"{r['mhz']:.0f}", f"{r['overlap']:.3f}"])
    return (f"Our Fq product in the same call: {product_rate:.4f} products /SM/clk (two a thread, no DFMAs).\n\n"
            + markdown_table(["group", "field", "accumulators a point", "blocks/SM", "additions /SM/clk",
                              "ns an addition (device)", "Fq products an addition (measured)",
                              "stage_floor's count", "SM MHz", "block / grid span"], rows))


def product_check(backend, kernels, curve, rng, n: int = 1 << 16) -> list[str]:
    """Each other product kind against ours (itself checked against the Python reference in tests/gpu), word for
    word: random operands below p, and the edges 0, 1, p - 2, p - 1 against each other."""
    lines = []
    for field in FIELDS:
        f = field_of(curve, field)
        a, b = uniform_below_modulus(rng, n, f), uniform_below_modulus(rng, n, f)
        edges = [0, 1, f.modulus - 1, f.modulus - 2]
        for i, (x, y) in enumerate((x, y) for x in edges for y in edges):
            a[i], b[i] = ([(v >> (64 * k)) & (2**64 - 1) for k in range(f.limbs)] for v in (x, y))
        for kind, label in OTHER_PRODUCTS.items():
            with backend.allocator.upload(a, "check a") as d_a, backend.allocator.upload(b, "check b") as d_b, \
                    backend.allocator.alloc(a.nbytes, "check ours") as d_ref, \
                    backend.allocator.alloc(a.nbytes, "check other") as d_other:
                kernels.launch(f"probe_product_check<{field}, {kind}>", 256, BLOCK,
                               (int(d_ref), int(d_other), int(d_a), int(d_b), n), backend.stream)
                ref = d_ref.download(np.empty_like(a), backend.stream)
                other = d_other.download(np.empty_like(a), backend.stream)
            bad = int(np.count_nonzero((ref != other).any(axis=1)))
            lines.append(f"- {field}, {label}: equals ours on {n - bad} of {n} operand pairs ({len(edges) ** 2} edge "
                         f"pairs among them){'' if bad == 0 else ': MISMATCH'}")
    return lines


def main(curves: list[str], iters: int, out: Path | None, sections: tuple[str, ...] = SECTIONS) -> str:
    backend = CudaBackend()
    rng = np.random.default_rng(7)
    lines = [f"# Pipe rates: IMAD.WIDE, DFMA and the field product ({backend.device.name}, {backend.device.sm_count} "
             f"SMs)\n", "Warp instructions a sub-partition a clock (an SM issues at most 4, one a sub-partition; "
             "Hopper's IMAD and DFMA pipes take 16 lanes a clock each: 0.5 a pipe). A grid of the blocks of "
             f"{BLOCK} threads an SM holds at once, on every SM, {iters} iterations; the rate is over the grid's span "
             "(global timer) at the SMs' clock (clock64 against it); block / grid span near 1: the blocks ran "
             "side by side. A 'mad.wide' step compiles to IMAD.WIDE.U32 + IADD3 + IMAD.X.\n"]
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
            pipe_mixes = PIPE_MIXES if "pipes" in sections and name == curves[0] else ()  # the same on every curve
            for imads, dfmas in pipe_mixes:
                r = run_probe(backend, kernels, f"probe_pipes<{imads}, {dfmas}>",
                              (int(d_out), int(d_in), int(d_din)), iters, 1)
                warp_ops = r["per_sm_clk"] / 128  # thread ops -> warp instructions a sub-partition
                rows.append([f"{imads} mad.wide + {dfmas} DFMA", r["blocks_per_sm"],
                             f"{warp_ops * imads:.3f}", f"{warp_ops * dfmas:.3f}", f"{warp_ops * (imads + dfmas):.3f}",
                             f"{r['mhz']:.0f}", f"{r['overlap']:.3f}"])
            if rows:
                lines += ["## The pipes\n", markdown_table(
                    ["an iteration", "blocks/SM", "mad.wide /SMSP/clk", "DFMA /SMSP/clk", "both", "SM MHz",
                     "block / grid span"], rows), ""]
            if "products" in sections:
                lines += [f"## {curve.name}: Montgomery products with DFMAs beside, and other products\n",
                          *product_check(backend, kernels, curve, rng), "",
                          field_table(backend, kernels, curve, rng, d_din, d_out, iters), ""]
            if "additions" in sections:
                lines += [f"## {curve.name}: XYZZ mixed additions in registers\n",
                          addition_table(backend, kernels, curve, rng, d_din, d_out, iters), ""]
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
    p.add_argument("--iters", type=int, default=16384)
    p.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    p.add_argument("--out", type=Path, default=Path("bench/results/pipe_rates.md"))
    a = p.parse_args()
    main(a.curves, a.iters, a.out, tuple(a.sections))

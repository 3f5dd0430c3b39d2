"""A kernel change timed against the kernels before it, in one process (GPU host).

A comparison is a ratio measured in one run: between two device calls the same MSM moves by 4-5% (and
sppark's own BN254 rows by up to 27%, session 33), more than most kernel changes gain. So this bench
loads a second set of the MSM kernels, compiled by NVRTC from an earlier source tree (``BEFORE``: a
``cuda_src`` folder, e.g. from ``git archive <commit> pipeline/cuda_src``), beside the package's, and
times both on the same points and scalars in alternating rounds (before, after, after, before, ...), so
clock and thermal drift fall on both alike.

    python3 -m bench.kernel_ab BEFORE [--curves bls12381 bn128] [--g1 20 24 26] [--g2 20 24] [--ntt 20 21]
        [--rounds 4] [--repeat 3] [--infinity 0 0.5] [--out bench/results/kernel_ab.md]   (GPU host)

``--ntt``: the same for the Fr transform in natural order (NttRunner.ntt, forward and inverse, data resident),
the NTT kernels of BEFORE beside the package's. A transform is deterministic, so these rows also say whether
before and after give the same words on the same input.

For changes inside the kernels: the earlier tree is compiled with this package's generated headers and
name expressions, and launched with its argument layouts, so a change of a kernel's name, arguments or
headers fails to compile or launch (the error says so) rather than timing something else. The results
are not compared: bucket entries are ranked by atomics, so their order within a bucket, and with random
off-curve points the sum itself, differs from run to run of the same kernels (session 34). Correctness is
the GPU tests' job. Points are random field elements (bench/common.py says why).
"""
from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from bench.common import (add_curves, alternating_rounds, arg_parser, markdown_table, time_ms, uniform_below_modulus,
                          write_result)
from bench.gpu_msm import random_msm_data
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.kernels import UNITS, CurveKernels
from pipeline.backends.cuda.memory import PinnedHostBuffer
from pipeline.backends.cuda.msm import MsmRunner
from pipeline.backends.cuda.ntt import NttRunner
from pipeline.curves import curve_by_name

UNIFORM = "uniform < r"
HEADER = ["curve", "group", "n", "scalars", "points at infinity", "before ms", "after ms", "after ÷ before", "rounds' ratios"]


class MsmKernels(CurveKernels):
    """A curve's kernels loaded unit by unit as first launched (an MSM needs msm_g1 or msm_g2 only)."""
    default_units = ("msm_g1",)


class NttKernels(CurveKernels):
    """The kernels of a natural-order transform on the groups kernel (NttRunner.ntt's passes and twiddle tables), as
    one unit: an earlier tree may lack other kernels of the package's NTT unit (the pairs kernel's REVERSE
    fusion)."""
    units = {"ntt": tuple(e for e in UNITS["ntt"] if e.startswith(("ntt_pass<", "ntt_twiddle")))}
    default_units = ("ntt",)


def before_after_cells(per_round: list[list[float]], digits: int) -> list[str]:
    """A row's "before ms", "after ms", "after ÷ before" and "rounds' ratios" cells from alternating_rounds' times
    (each round: before, after): the medians over the rounds (``digits`` decimals), their ratio, each round's."""
    b, a = (statistics.median(r[i] for r in per_round) for i in (0, 1))
    return [f"{b:.{digits}f}", f"{a:.{digits}f}", f"{a / b:.3f}", " ".join(f"{r[1] / r[0]:.3f}" for r in per_round)]


def ab_rows(backend: CudaBackend, curve, before_root: Path, g2: bool, logs: list[int], rounds: int,
            repeat: int, rng, uniform: bool = False, infinity: tuple[float, ...] = (0.0,)) -> list[list]:
    """Rows of one curve and group: each share of points at infinity, size and kind of scalars, before and after
    in alternating rounds; ``uniform``: a kind of scalars uniform below r besides (gpu_msm's "random" stay under
    2^(bits - 1)); ``infinity``: shares of the points, at random places, made the point at infinity (all-zero
    words), as a seed key's B sections hold for about half the wires a witness sets to one (bench/NOTES.md,
    session 61). Every share's rows use the same points and scalars, its infinity points a superset of the
    smaller shares'."""
    if not logs:
        return []
    after = backend.runtime(curve).msm
    before = MsmRunner(MsmKernels(backend.device, curve, source_root=before_root), backend.allocator, backend.stream,
                       after.g1_min_blocks)
    before.g2_field, before.g2_min_blocks, before.lazy = after.g2_field, after.g2_min_blocks, after.lazy
    n_max = 1 << max(logs)
    points, scalars = random_msm_data(rng, curve, g2, n_max)
    if uniform:
        scalars[UNIFORM] = uniform_below_modulus(rng, n_max, curve.fr)
    place = rng.random(n_max)  # a point is infinity in every share above its draw
    nbytes = n_max * curve.fr.limbs * 8
    rows = []
    with backend.allocator.alloc(points.nbytes, "ab points") as d_points, \
            backend.allocator.alloc(nbytes, "ab scalars") as d_s, \
            PinnedHostBuffer(backend.device, nbytes) as h_pinned:
        for share in sorted(infinity):
            points[place < share] = 0
            d_points.upload(points, backend.stream)
            for log_n in logs:
                n = 1 << log_n
                h_scalars = h_pinned.view(np.uint64, (n, curve.fr.limbs))
                for kind, values in scalars.items():
                    h_scalars[:] = values[:n]
                    d_s.upload(h_scalars, backend.stream)
                    def timed(i: int) -> float:
                        runner = (before, after)[i]

                        def call():
                            d_s.upload(h_scalars, backend.stream)
                            runner.run_xyzz(g2, d_points.ptr, d_s.ptr, n)
                        return time_ms(backend.stream, call, warmup=1, repeat=repeat)
                    rows.append([curve.name, "G2" if g2 else "G1", f"2^{log_n}", kind, f"{share:.0%}",
                                 *before_after_cells(alternating_rounds(2, rounds, timed), 3)])
                    print(rows[-1], flush=True)
    before.kernels.close()
    return rows


def ntt_ab_rows(backend: CudaBackend, curve, before_root: Path, logs: list[int], rounds: int, repeat: int,
                rng) -> list[list]:
    """Rows of one curve's natural-order transform, forward and inverse, before and after in alternating rounds,
    and whether both give the same words on the same input (the column "same words")."""
    if not logs:
        return []
    after = backend.runtime(curve).ntt
    before = NttRunner(NttKernels(backend.device, curve, source_root=before_root), backend.allocator, backend.stream)
    before.natural_kernel = "groups"
    n_max, limbs = 1 << max(logs), curve.fr.limbs
    for runner in (before, after):
        runner.ensure_twiddles(max(logs))
    values = uniform_below_modulus(rng, n_max, curve.fr)  # any value below r is some element's Montgomery form
    rows = []
    with backend.allocator.upload(values, "ab transform") as d_data:
        for log_n in logs:
            n = 1 << log_n
            for inverse in (False, True):
                outputs = []
                for runner in (before, after):
                    d_data.upload(values[:n], backend.stream)
                    runner.ntt(d_data.ptr, log_n, inverse)
                    outputs.append(d_data.download(np.empty((n, limbs), np.uint64), backend.stream))
                same = bool(np.array_equal(*outputs))

                def timed(i: int) -> float:
                    runner = (before, after)[i]
                    return time_ms(backend.stream, lambda: runner.ntt(d_data.ptr, log_n, inverse), warmup=1,
                                   repeat=repeat)
                rows.append([curve.name, "NTT inverse" if inverse else "NTT", f"2^{log_n}", f"same words: {same}", "",
                             *before_after_cells(alternating_rounds(2, rounds, timed), 4)])
                print(rows[-1], flush=True)
    before.kernels.close()
    return rows


def main(before_root: Path, curves: list[str], g1: list[int], g2: list[int], rounds: int, repeat: int,
         out: str | None, uniform: bool = False, ntt: list[int] = (), infinity: tuple[float, ...] = (0.0,)) -> str:
    if not (before_root / "programs").is_dir():
        raise SystemExit(f"bench.kernel_ab: {before_root} is not a cuda_src folder (no programs/ in it)")
    backend = CudaBackend()
    rng = np.random.default_rng(33)
    rows: list[list] = []
    for name in curves:
        curve = curve_by_name(name)
        rows += ab_rows(backend, curve, before_root, False, g1, rounds, repeat, rng, uniform, tuple(infinity))
        rows += ab_rows(backend, curve, before_root, True, g2, rounds, repeat, rng, uniform, tuple(infinity))
        rows += ntt_ab_rows(backend, curve, before_root, list(ntt), rounds, repeat, rng)
    device = backend.device.name
    backend.close()
    text = (f"# Kernels before and after, same process ({device})\n\n"
            f"Before: the MSM and NTT kernels compiled by NVRTC from `{before_root}`; after: this package's. Same "
            f"points and scalars (points resident, scalars from pinned memory in each timed call; the transforms' "
            f"data resident, \"scalars\" says whether both gave the same words); {rounds} rounds alternating "
            f"which goes first, each the median of {repeat} CUDA-event timings after a warm-up; the columns are "
            f"the medians over the rounds and each round's ratio. \"points at infinity\": the share of the points, at "
            f"random places, that are the point at infinity (all-zero words).\n\n{markdown_table(HEADER, rows)}\n")
    write_result(out, text)
    return text


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("before", type=Path, help="the earlier kernels' cuda_src folder")
    add_curves(parser)
    parser.add_argument("--g1", type=int, nargs="*", default=[20, 24])
    parser.add_argument("--g2", type=int, nargs="*", default=[])
    parser.add_argument("--ntt", type=int, nargs="*", default=[], help="natural-order transform sizes (log2)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="markdown file (default: print only)")
    parser.add_argument("--uniform", action="store_true", help=f'rows of scalars "{UNIFORM}" too')
    parser.add_argument("--infinity", type=float, nargs="*", default=[0.0],
                        help="shares of the points at infinity, a set of MSM rows each (e.g. 0 0.5)")
    args = parser.parse_args()
    main(args.before, args.curves, args.g1, args.g2, args.rounds, args.repeat, args.out, args.uniform, args.ntt,
         args.infinity)

"""Fixed-base tables (issue 16's first lever) against the plain MSM and sppark, same call.

    python3 -m bench.gpu_msm_fixed_base --curves bls12381 bn128 --g1 20 22 24 --g2 20 22 24
    python3 -m bench.gpu_msm_fixed_base --curves bls12381 --g1 26 --g2 --tables plan plan/2 24 --phases

sppark first (one harness call per curve, before this process makes its CUDA context; carry .anchors),
then per curve, group and size: our plain MSM (``MsmRunner.run_xyzz``) and the MSM over a fixed-base
table (``MsmRunner.build_table`` once, then ``enqueue_fixed``), both with the scalars copied from pinned
memory inside every timed call, random and 80% {0,1} scalars; the table's build time and size beside.
Medians of 5 CUDA-event timings after a warm-up (3 at 2^24 G2). Random field elements as points (the
kernels' cost does not depend on the values, bench/common.py); the results are checked in
tests/gpu/test_msm.py. Writes bench/results/gpu_msm_fixed_base.md and .png. ``--tables``: table variants at
every size, a width and bucket sets each (parse_variant); ``--phases``: one profiled call a table row.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.common import REPO, arg_parser, markdown_table, time_ms, write_result
from bench.gpu_msm import phase_table, random_msm_data
from bench.kernels_vs_sppark import SPPARK_MSM_ROWS, harness_args, run_sppark, sppark_ms
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.memory import PinnedHostBuffer
from pipeline.backends.cuda.streams import Event
from pipeline.curves import curve_by_name

GOAL = 0.8  # issue 16: ours / sppark, at most


def parse_variant(spec: str) -> tuple[int | None, int]:
    """A table variant: a width ("plan": the plan's; or C) and, after a slash, its bucket sets (the table
    holding every S-th window; 1 when left out): "plan", "plan/2", "20", "20/2"."""
    width, _, sets = spec.partition("/")
    return (None if width == "plan" else int(width)), int(sets or 1)


def rows_for(backend, curve, g2: bool, logs: list[int], sppark, variants=("plan",), phases=None) -> list[list]:
    rt, fr = backend.runtime(curve), curve.fr
    msm, group = rt.msm, "G2" if g2 else "G1"
    n_max = 1 << max(logs)
    points, scalars = random_msm_data(np.random.default_rng(7), curve, g2, n_max)
    rows = []
    nbytes = n_max * fr.limbs * 8
    with backend.allocator.upload(points, "bench points") as d_points, \
            backend.allocator.alloc(nbytes, "bench scalars") as d_s, \
            backend.allocator.alloc(msm.xyzz_bytes(g2), "bench result") as d_out, \
            PinnedHostBuffer(backend.device, nbytes) as h_pinned:
        for log_n in logs:
            n = 1 << log_n
            repeat = 3 if g2 and log_n >= 24 else 5
            h_scalars = h_pinned.view(np.uint64, (n, fr.limbs))
            plain_ms: dict[str, tuple[float, int]] = {}
            for spec in variants:
                c, sets = parse_variant(spec)
                start, end = Event(), Event()
                start.record(backend.stream)
                table = msm.build_table(g2, d_points.ptr, n, c=c, table_sets=sets)
                end.record(backend.stream)
                end.synchronize()
                build_ms = end.elapsed_ms(start)
                start.close()
                end.close()
                try:
                    table_gb = table.d_table.nbytes / 1e9
                    plan = table.plan
                    sets = f"{plan.table_sets} bucket set{'s' if plan.table_sets > 1 else ''}"
                    keys = f"{sets}, {plan.table_windows} in the table"
                    for kind, values in scalars.items():
                        h_scalars[:] = values[:n]

                        def plain():
                            d_s.upload(h_scalars, backend.stream)
                            msm.run_xyzz(g2, d_points.ptr, d_s.ptr, n)

                        def fixed():
                            d_s.upload(h_scalars, backend.stream)
                            msm.enqueue_fixed(table, d_s.ptr, n, d_out.ptr)
                        if kind not in plain_ms:  # once a size and kind, for every variant
                            plain_ms[kind] = (time_ms(backend.stream, plain, warmup=1, repeat=repeat), msm.last_plan.c)
                        base_ms, plain_c = plain_ms[kind]
                        fixed_ms = time_ms(backend.stream, fixed, warmup=1, repeat=repeat)
                        if phases is not None:
                            msm.profile = True
                            try:
                                fixed()
                                msm._collect_marks()
                            finally:
                                msm.profile = False
                            phases.append((curve.name, group, f"2^{log_n}", f"{kind}, c = {plan.c}, {keys}",
                                           dict(msm.last_phases_ms)))
                        against = sppark_ms(sppark, f"{group} {SPPARK_MSM_ROWS[kind]}", log_n)
                        ratio = lambda ms: f"{ms / against:.2f}" if isinstance(against, float) else "-"  # noqa: E731
                        met = isinstance(against, float) and fixed_ms / against <= GOAL
                        rows.append([curve.name, group, f"2^{log_n}", kind, f"{base_ms:.2f} (c = {plain_c})",
                                     f"{fixed_ms:.2f} (c = {plan.c}, {plan.n_windows} windows, {keys})",
                                     f"{fixed_ms / base_ms:.2f}",
                                     f"{against:.2f}" if isinstance(against, float) else against, ratio(base_ms),
                                     ratio(fixed_ms),
                                     ("met" if met else "not met") if isinstance(against, float) else "-",
                                     f"{build_ms:.0f}", f"{table_gb:.1f}"])
                        print(rows[-1], flush=True)
                finally:
                    table.free()
    return rows


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--curves", nargs="+", default=["bls12381", "bn128"])
    parser.add_argument("--g1", type=int, nargs="*", default=[20, 22, 24], help="none: G2 alone")
    parser.add_argument("--g2", type=int, nargs="*", default=[20, 22, 24], help="none: G1 alone")
    parser.add_argument("--tables", nargs="+", default=["plan"],
                        help="table variants at every size (parse_variant): plan, plan/S, C, C/S")
    parser.add_argument("--phases", action="store_true", help="one profiled call a table row: where its time goes")
    parser.add_argument("--anchors", type=Path, default=REPO / ".anchors")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "gpu_msm_fixed_base.md"))
    args = parser.parse_args()
    # every harness before our CUDA context (the harness owns the GPU while it runs)
    sppark = {name: run_sppark(name, args.anchors, harness_args(args.g1, args.g2, 0), 300) for name in args.curves}
    backend = CudaBackend()
    rows, phases = [], [] if args.phases else None
    try:
        for name in args.curves:
            curve = curve_by_name(name)
            for g2, logs in ((False, args.g1), (True, args.g2)):
                if logs:
                    rows += rows_for(backend, curve, g2, logs, sppark[name], args.tables, phases)
        device = backend.device.name
    finally:
        backend.close()
    table = markdown_table(["curve", "group", "n", "scalars", "plain ms", "fixed-base table ms", "table ÷ plain",
                            "sppark ms", "plain ÷ sppark", "table ÷ sppark", f"table <= {GOAL} sppark",
                            "table build ms", "table GB"], rows)
    text = ("# MSM over fixed-base tables, against the plain MSM and sppark (same call)\n\n" + __doc__.split("\n\n", 2)[2]
            + f"\nDevice: {device}.\n\n" + table + "\n")
    if phases:
        text += f"\n## Phases of the table MSMs (one profiled call; host syncs between phases)\n\n{phase_table(phases)}\n"
    write_result(args.out, text, show=table)
    write_plot(Path(args.out))


def write_plot(table: Path) -> Path | None:
    """``<table>.png`` beside the table (bench.plots.plot_beside)."""
    from bench.plots import plot_beside
    from bench.plots.kernels import plot_fixed_base

    return plot_beside(table, plot_fixed_base)


if __name__ == "__main__":
    main()

"""Fixed-base tables (issue 16's first lever) against the plain MSM and sppark, same call.

    python3 -m bench.gpu_msm_fixed_base --curves bls12381 bn128 --g1 20 22 24 --g2 20 22 24
    python3 -m bench.gpu_msm_fixed_base --curves bls12381 --g1 26 --g2 --tables plan plan/2 24 --phases

sppark first (one harness call per curve, before this process makes its CUDA context; carry .anchors),
then per curve, group and size: our plain MSM (bench.gpu_msm's ``time_msms``: the scalars copied in pieces,
each counted as it arrives) and the MSM over a fixed-base table (``time_table_msms``: ``MsmRunner.build_table``
once, then ``enqueue_fixed``, the scalars copied whole), both copying the scalars from pinned memory inside
every timed call, random and 80% {0,1} scalars; the table's build time and size beside (a table that does not
fit the free device memory is skipped, and says so).
Medians of 5 CUDA-event timings after a warm-up (3 at 2^24 G2). Random field elements as points (the
kernels' cost does not depend on the values, bench/common.py); the results are checked in
tests/gpu/test_msm.py. Writes bench/results/gpu_msm_fixed_base.md and .png. ``--tables``: table variants at
every size, a width and bucket sets each (parse_variant); ``--phases``: one profiled call a table row.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.common import REPO, arg_parser, markdown_table, write_result
from bench.gpu_msm import phase_table, random_msm_data, table_layout, time_msms, time_table_msms
from bench.kernels_vs_sppark import SPPARK_MSM_ROWS, harness_args, run_sppark, sppark_ms
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.curves import curve_by_name

GOAL = 0.8  # issue 16: ours / sppark, at most


def parse_variant(spec: str) -> tuple[int | None, int]:
    """A table variant: a width ("plan": the plan's; or C) and, after a slash, its bucket sets (the table
    holding every S-th window; 1 when left out): "plan", "plan/2", "20", "20/2"."""
    width, _, sets = spec.partition("/")
    return (None if width == "plan" else int(width)), int(sets or 1)


def rows_for(backend, curve, g2: bool, logs: list[int], sppark, variants=("plan",), phases=None) -> list[list]:
    """The table rows of one group: per table variant, size and kind of scalars, the plain MSM (bench.gpu_msm's
    time_msms, timed once a size and kind) beside the MSM over the table (time_table_msms) and sppark's row."""
    group = "G2" if g2 else "G1"
    points, scalars = random_msm_data(np.random.default_rng(7), curve, g2, 1 << max(logs))
    repeats = lambda log_n: 3 if g2 and log_n >= 24 else 5  # noqa: E731
    plain = {(t.log_n, t.scalars): t for t in time_msms(backend, curve, g2, logs, points, scalars, repeats)}
    rows = []
    for spec in variants:
        c, sets = parse_variant(spec)
        for fixed in time_table_msms(backend, curve, g2, logs, points, scalars, repeats, c, sets, phases is not None):
            if fixed.timing is None:
                print(f"{curve.name} {group} {fixed.describe()}", flush=True)
                continue
            t = fixed.timing
            base = plain[t.log_n, t.scalars]
            plan = t.plan
            keys = table_layout(plan)
            if t.phases_ms is not None:
                phases.append((curve.name, group, f"2^{t.log_n}", f"{t.scalars}, c = {plan.c}, {keys}", t.phases_ms))
            against = sppark_ms(sppark, f"{group} {SPPARK_MSM_ROWS[t.scalars]}", t.log_n)
            ratio = lambda ms: f"{ms / against:.2f}" if isinstance(against, float) else "-"  # noqa: E731
            met = isinstance(against, float) and t.ms / against <= GOAL
            rows.append([curve.name, group, f"2^{t.log_n}", t.scalars, f"{base.ms:.2f} (c = {base.plan.c})",
                         f"{t.ms:.2f} (c = {plan.c}, {plan.n_windows} windows, {keys})", f"{t.ms / base.ms:.2f}",
                         f"{against:.2f}" if isinstance(against, float) else against, ratio(base.ms), ratio(t.ms),
                         ("met" if met else "not met") if isinstance(against, float) else "-",
                         f"{fixed.build_ms:.0f}", f"{fixed.table_gb:.1f}"])
            print(rows[-1], flush=True)
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

"""Plots of the committed benchmark results (matplotlib), regenerated from the tables in bench/results/.

    python3 -m bench.plots                 # every plot, into bench/results/
    python3 -m bench.plots --out DIR       # elsewhere

- kernels.py: MSM and NTT time against size, per curve and group, sppark beside ours where a
  table has it (``msm_time_vs_size.png``, ``ntt_time_vs_size.png``), and ours against sppark's
  from the same call (``kernels_vs_sppark.png``, where bench/kernels_vs_sppark.py wrote its table), and the
  MSM over fixed-base tables beside the plain one and sppark (``gpu_msm_fixed_base.png``);
- engine.py: engine throughput against jobs in flight and GPU workers, one plot per engine table
  (``<table>.throughput.png``);
- timeline.py: stage timelines, one row per worker (``<table>.timeline.png``) from a run's
  ``.timeline.json`` (bench/engine_throughput.py writes it) or, for older runs, its ``.timeline.svg``.

Everything is read from the markdown tables (tables.py) and timeline files; nothing is measured here.
"""
from __future__ import annotations

from pathlib import Path

from bench.common import REPO, RESULTS, arg_parser
from pipeline import progress


def plot_beside(table: Path, plot) -> Path | None:
    """``<table>.png`` beside a table just written, drawn by ``plot(table, png, plt)`` (one of kernels.py's);
    None without matplotlib (``python3 -m bench.plots`` draws it later)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plot(table, table.with_suffix(".png"), plt)


def make_all(out: Path) -> list[Path]:
    """Every plot into ``out``; returns the files written."""
    import matplotlib

    from bench.plots import engine, kernels, timeline

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    tables = engine.engine_tables()
    written = []
    with progress.bar("plotting bench/results", total=2 + len(tables), unit="table") as bar:
        written += [kernels.plot_msm(out, plt), kernels.plot_ntt(out, plt)]
        if (vs_sppark := RESULTS / "kernels_vs_sppark.md").exists():
            from bench.kernels_vs_sppark import headlines

            written.append(kernels.plot_vs_sppark(vs_sppark, out / "kernels_vs_sppark.png", plt, headlines()))
        if (fixed := RESULTS / "gpu_msm_fixed_base.md").exists():
            written.append(kernels.plot_fixed_base(fixed, out / "gpu_msm_fixed_base.png", plt))
        bar.update(2)
        for table in tables:
            written.append(engine.plot_throughput(table, out, plt))
            data = timeline.load_timeline(RESULTS / table.stem)
            if data is not None:
                written.append(timeline.plot_timeline(data, engine.title_of(table), out / f"{table.stem}.timeline.png",
                                                      plt))
            bar.update()
    return [p for p in written if p is not None]


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--out", default=str(RESULTS), help="where the PNG files go (default: bench/results)")
    args = parser.parse_args()
    for path in make_all(Path(args.out)):
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)

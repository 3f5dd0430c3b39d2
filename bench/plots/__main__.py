"""``python3 -m bench.plots [--out DIR]``: every plot of bench/results/, from its tables (see __init__)."""
from __future__ import annotations

from pathlib import Path

from bench.common import REPO, RESULTS, arg_parser
from bench.plots import engine, kernels, timeline
from pipeline import progress


def make_all(out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    tables = engine.engine_tables()
    written = []
    with progress.bar("plotting bench/results", total=2 + len(tables), unit="table") as bar:
        written += [kernels.plot_msm(out, plt), kernels.plot_ntt(out, plt)]
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


if __name__ == "__main__":
    main()

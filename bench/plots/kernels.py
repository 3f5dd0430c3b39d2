"""MSM and NTT time against size, per curve (and group for the MSM), with sppark beside ours.

Ours: gpu_msm*.md (first table of each: one row per curve, group, size and scalar kind; the
min_blocks variants are left out) and gpu_ntt.md. sppark: sppark_reference.md, where it has a
point for that curve (``any``: drawn on both curves' panels). ``plot_vs_sppark`` draws a
bench/kernels_vs_sppark.py table, where both sides come from the same call.
"""
from __future__ import annotations

from pathlib import Path

from .tables import RESULTS, log2_size, number, read_tables

CURVES = ("bls12381", "bn128")
SCALAR_STYLES = {"random": ("o-", "C0"), "80% {0,1}": ("s--", "C1")}
NTT_COLUMNS = {"NTT ms": ("o-", "C0"), "iNTT ms": ("^:", "C2"), "odd coset (iNTT+shift+NTT) ms": ("s--", "C1")}
SPPARK_STYLE = {"marker": "*", "markersize": 13, "color": "black", "linestyle": "none", "label": "sppark (same GPU)"}
VS_SPPARK_PANELS = {"G1 MSM": ("G1 MSM",), "G2 MSM": ("G2 MSM",), "Fr NTT and H": ("NTT", "H")}
OURS_STYLES = ("o-", "s--", "^:")
SPPARK_MARKERS = ("*", "X", "P")


def sppark_points(kernel: str, curve: str, group: str) -> list[tuple[int, float]]:
    path = RESULTS / "sppark_reference.md"
    if not path.exists():
        return []
    rows = read_tables(path)[0]
    return sorted((log2_size(r["n"]), number(r["ms"])) for r in rows
                  if r["kernel"] == kernel and r["curve"] in (curve, "any") and r["group"] == group)


def msm_rows() -> dict[tuple[str, str, str], dict[int, float]]:
    """(curve, group, scalars) -> {log2 n: ms}; gpu_msm.md first, other runs only add sizes it lacks."""
    series: dict[tuple[str, str, str], dict[int, float]] = {}
    for path in [RESULTS / "gpu_msm.md", *sorted(RESULTS.glob("gpu_msm_*.md"))]:
        for row in read_tables(path)[0]:
            # gpu_msm_overlap_*.md times five MSMs together (no group); gpu_msm_fixed_base.md has its own plot
            if row.get("group") in ("G1", "G2") and "ms" in row:
                points = series.setdefault((row["curve"], row["group"], row["scalars"]), {})
                points.setdefault(log2_size(row["n"]), number(row["ms"]))
    return series


def _axes_style(ax, title: str) -> None:
    ax.set_title(title)
    ax.set_xlabel("n (points / field elements)")
    ax.set_ylabel("time, ms (log)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _log2_ticks(ax, logs) -> None:
    ax.set_xticks(sorted(logs), [f"$2^{{{k}}}$" for k in sorted(logs)])


def plot_msm(out: Path, plt) -> Path:
    series = msm_rows()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5), layout="constrained")
    for col, curve in enumerate(CURVES):
        for row, group in enumerate(("G1", "G2")):
            ax = axes[row][col]
            logs = set()
            for scalars, (style, color) in SCALAR_STYLES.items():
                points = sorted(series.get((curve, group, scalars), {}).items())
                if points:
                    logs |= {k for k, _ in points}
                    ax.plot([k for k, _ in points], [ms for _, ms in points], style, color=color,
                            label=f"zkpipe, {scalars} scalars")
            sppark = sppark_points("msm", curve, group)
            if sppark:
                logs |= {k for k, _ in sppark}
                ax.plot([k for k, _ in sppark], [ms for _, ms in sppark], **SPPARK_STYLE)
            _log2_ticks(ax, logs)
            _axes_style(ax, f"{curve} {group} MSM")
    fig.suptitle("MSM on one NVIDIA H200: points resident, scalars from pinned host memory "
                 "(bench/results/gpu_msm*.md)")
    path = out / "msm_time_vs_size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_ntt(out: Path, plt) -> Path:
    rows = read_tables(RESULTS / "gpu_ntt.md")[0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained")
    for ax, curve in zip(axes, CURVES):
        mine = [r for r in rows if r["curve"] == curve]
        logs = {log2_size(r["n"]) for r in mine}
        for column, (style, color) in NTT_COLUMNS.items():
            ax.plot([log2_size(r["n"]) for r in mine], [number(r[column]) for r in mine], style, color=color,
                    label=f"zkpipe {column.removesuffix(' ms')}")
        sppark = sppark_points("ntt", curve, "Fr")
        if sppark:
            logs |= {k for k, _ in sppark}
            ax.plot([k for k, _ in sppark], [ms for _, ms in sppark],
                    **{**SPPARK_STYLE, "label": "sppark NTT (same GPU; which Fr not recorded)"})
        _log2_ticks(ax, [k for k in logs if k % 2 == 0 or k == max(logs)])
        _axes_style(ax, f"{curve} Fr NTT")
    fig.suptitle("Fr NTT on one NVIDIA H200, data resident on the device (bench/results/gpu_ntt.md)")
    path = out / "ntt_time_vs_size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def table_series(rows: list[dict[str, str]], label, column: str) -> dict[str, list[tuple[int, float]]]:
    """label(row) -> sorted (log2 n, ms) of ``column``; a cell that is not a number ("not run (no
    .anchors/bench_bls12381)") is left out, not read as the first number in it."""
    series: dict[str, dict[int, float]] = {}
    for r in rows:
        try:
            ms = float(r[column])
        except ValueError:
            continue
        series.setdefault(label(r), {})[log2_size(r["n"])] = ms
    return {name: sorted(points.items()) for name, points in series.items()}


def _finish_panel(ax, rows: list[dict[str, str]], title: str) -> None:
    """Ticks at the rows' sizes, the title, the log scale and the legend."""
    _log2_ticks(ax, {log2_size(r["n"]) for r in rows})
    _axes_style(ax, title)


def _save_titled(fig, table: Path, out: Path, plt) -> Path:
    """The figure under its table's heading, to ``out``."""
    fig.suptitle(table.read_text().splitlines()[0].removeprefix("# "))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


FIXED_BASE_COLUMNS = {"plain ms": ("o-", "C0", "zkpipe, plain"), "fixed-base table ms": ("s--", "C2", "zkpipe, fixed-base table"),
                      "sppark ms": ("*", "black", "sppark (same call)")}


def plot_fixed_base(table: Path, out: Path, plt) -> Path:
    """bench/gpu_msm_fixed_base.py's table: plain, fixed-base table and sppark against size, a panel per
    curve and group, random scalars (the cells' first numbers: "127.60 (c = 20, 13 windows)")."""
    rows = [r for t in read_tables(table) for r in t if "fixed-base table ms" in r and r["scalars"] == "random"]
    panels = list(dict.fromkeys((r["curve"], r["group"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4.2), layout="constrained", squeeze=False)
    for ax, (curve, group) in zip(axes[0], panels):
        mine = [r for r in rows if (r["curve"], r["group"]) == (curve, group)]
        for column, (style, color, label) in FIXED_BASE_COLUMNS.items():
            points = sorted((log2_size(r["n"]), number(r[column])) for r in mine if number(r[column]) is not None)
            ax.plot(*zip(*points), style, color=color, label=label, markersize=11 if style == "*" else 6)
        _finish_panel(ax, mine, f"{curve} {group} MSM, random scalars")
    return _save_titled(fig, table, out, plt)


def plot_vs_sppark(table: Path, out: Path, plt, headlines: dict[tuple[str, str], str] | None = None) -> Path:
    """A bench/kernels_vs_sppark.py table: ours as lines, sppark's rows they are compared with as black
    markers, a row of panels per curve (G1 MSM, G2 MSM, Fr NTT and H). ``headlines``: {(kernel, input): legend
    label} of the rows drawn (the defaults and the fixed-base rows: the variants' rows stay in the table, where
    their dozens of lines would bury the plot); None draws every row under its input."""
    rows = [r for t in read_tables(table) for r in t if "ours ms" in r]
    if headlines is not None:
        rows = [{**r, "label": headlines[r["kernel"], r["input"]]} for r in rows
                if (r["kernel"], r["input"]) in headlines]
    curves = list(dict.fromkeys(r["curve"] for r in rows))
    fig, axes = plt.subplots(len(curves), len(VS_SPPARK_PANELS), figsize=(16, 5.4 * len(curves)),
                             layout="constrained", squeeze=False)
    for row_axes, curve in zip(axes, curves):
        for ax, (title, kernels) in zip(row_axes, VS_SPPARK_PANELS.items()):
            mine = [r for r in rows if r["curve"] == curve and r["kernel"] in kernels]
            if not mine:
                ax.set_visible(False)
                continue
            ours = table_series(mine, lambda r: r.get("label") or (
                r["input"] if len(kernels) == 1 else f"{r['kernel']}: {r['input']}"), "ours ms")
            for i, (label, points) in enumerate(ours.items()):
                ax.plot(*zip(*points), OURS_STYLES[i % len(OURS_STYLES)], color=f"C{i}", label=f"zkpipe, {label}")
            for i, (label, points) in enumerate(table_series(mine, lambda r: r["sppark row"], "sppark ms").items()):
                ax.plot(*zip(*points), **{**SPPARK_STYLE, "marker": SPPARK_MARKERS[i % len(SPPARK_MARKERS)],
                                          "label": f"sppark {label}"})
            _finish_panel(ax, mine, f"{curve} {title}")
    return _save_titled(fig, table, out, plt)

"""Engine throughput against jobs in flight and GPU workers, one plot per engine table.

Reads the tables bench/engine_throughput.py writes (columns dev (absent: 1 device), gw, jif,
s/proof, gpu s/proof, lock busy). With several jobs-in-flight levels, x is jobs in flight and
there is one line per (devices, GPU workers); with one level, x is GPU workers per device.
The dotted lines are the GPU stage's own limit (1 / gpu s/proof): the engine is GPU-bound where
a solid line meets its dotted one.
"""
from __future__ import annotations

import re
from pathlib import Path

from .tables import RESULTS, number, read_tables

def engine_tables() -> list[Path]:
    return sorted(p for pattern in ("engine_*.md", "seam_engine_*.md") for p in RESULTS.glob(pattern))


def throughput_rows(path: Path) -> list[dict]:
    for table in read_tables(path):
        if table and {"gw", "jif", "s/proof"} <= set(table[0]):
            return [{"dev": int(number(r.get("dev", "1"))), "gw": int(number(r["gw"])), "jif": int(number(r["jif"])),
                     "proofs_per_s": 1 / number(r["s/proof"]), "gpu_limit": 1 / number(r["gpu s/proof"]),
                     "lock_busy": number(r["lock busy"])} for r in table]
    return []


def title_of(path: Path) -> str:
    """The table's heading without any folder the run read its key from:
    'cuda backend, bls12381//tmp/rand14, 4 partitions per job' -> 'cuda backend, bls12381/rand14, 4 partitions per job'."""
    heading = next((line for line in path.read_text().splitlines() if line.startswith("# ")), f"# {path.stem}")
    heading = re.sub(r"(\w+)/[^,\s]*/([^/,\s]+)", r"\1/\2", heading[2:].removeprefix("Engine throughput: "))
    gil = re.search(r"GIL switch interval: (\d[\d.]*\d|\d)", path.read_text())
    return heading + (f", GIL switch interval {gil.group(1)} s" if gil else "")


def plot_throughput(path: Path, out: Path, plt) -> Path | None:
    rows = throughput_rows(path)
    if not rows:
        return None
    by_jif = len({r["jif"] for r in rows}) > 1
    x_key, x_label = ("jif", "jobs in flight") if by_jif else ("gw", "GPU workers per device")
    groups = sorted({(r["dev"], r["gw"]) if by_jif else (r["dev"],) for r in rows})
    fig, (ax, busy) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained", width_ratios=(3, 2))
    for i, group in enumerate(groups):
        mine = sorted((r for r in rows if ((r["dev"], r["gw"]) if by_jif else (r["dev"],)) == group),
                      key=lambda r: r[x_key])
        label = f"{group[0]} GPU{'s' if group[0] > 1 else ''}" + (
            f", {group[1]} GPU worker{'s' if group[1] > 1 else ''}" if by_jif else "")
        xs = [r[x_key] for r in mine]
        ax.plot(xs, [r["proofs_per_s"] for r in mine], "o-", color=f"C{i}", label=label)
        ax.plot(xs, [r["gpu_limit"] for r in mine], ":", color=f"C{i}", alpha=0.7)
        busy.plot(xs, [r["lock_busy"] for r in mine], "o-", color=f"C{i}", label=label)
    for axis, ylabel in ((ax, "proofs / s (dotted: GPU stage limit)"), (busy, "GPU lock busy, %")):
        axis.set_xlabel(x_label)
        axis.set_ylabel(ylabel)
        axis.set_xticks(sorted({r[x_key] for r in rows}))
        axis.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    busy.set_ylim(0, 105)
    ax.legend(fontsize=8)
    fig.suptitle(f"Engine throughput: {title_of(path)}\n(bench/results/{path.name})", fontsize=11)
    target = out / f"{path.stem}.throughput.png"
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target

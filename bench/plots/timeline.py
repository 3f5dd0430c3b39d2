"""Stage timelines: one row per worker, one bar per stage interval of a partition.

Data: ``<table>.timeline.json`` (bench/engine_throughput.py writes it: the level and every
interval), or for runs made before that, the ``<table>.timeline.svg`` they left, whose boxes carry
the same intervals (x and width on a known scale; the stage, job and partition in each title).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

COLORS = {"synthesize": "#8ecae6", "prep_msm": "#219ebc", "gpu": "#d62828", "b_g2_msm": "#f77f00",
          "epilogue": "#2a9d8f"}
ROW_ORDER = ("synthesize", "prep_msm", "b_g2_msm")  # then gpu workers, then the epilogue
SVG = "{http://www.w3.org/2000/svg}"
# bench/engine_throughput.py's SVG layout (before it wrote JSON): where the time axis starts and ends.
SVG_LEFT, SVG_RIGHT_MARGIN, SVG_TOP, SVG_ROW = 110.0, 20.0, 40.0, 26.0
TITLE_RE = re.compile(r"^(\w+) job (\w+) part (\d+): ([\d.]+) ms$")


def row_key(row: str) -> tuple:
    if row in ROW_ORDER:
        return (ROW_ORDER.index(row), row)
    return (3, row) if row.startswith("gpu") else (4, row)


def read_svg(path: Path) -> dict:
    """{"level": "...", "intervals": [{row, stage, job, partition, start_s, end_s}]} from an old SVG."""
    root = ET.parse(path).getroot()
    width = float(root.get("width"))
    texts = [(float(t.get("x")), float(t.get("y")), t.text or "") for t in root.iter(f"{SVG}text")]
    rows = [text for x, y, text in texts if x == 10.0 and y > SVG_TOP]
    total_s = next(float(text[:-2]) for _, _, text in reversed(texts) if re.fullmatch(r"[\d.]+ s", text))
    scale = (width - SVG_LEFT - SVG_RIGHT_MARGIN) / total_s
    level = " ".join(re.findall(r"\w+=\S+", texts[0][2]))
    intervals = []
    for rect in root.iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title")
        match = TITLE_RE.match(title.text) if title is not None else None
        if match is None:
            continue  # the legend's swatches
        start = (float(rect.get("x")) - SVG_LEFT) / scale
        row = rows[round((float(rect.get("y")) - 2 - SVG_TOP) / SVG_ROW)]
        intervals.append({"row": row, "stage": match[1], "job": match[2], "partition": int(match[3]),
                          "start_s": start, "end_s": start + float(match[4]) / 1e3})
    return {"level": level, "intervals": intervals}


def load_timeline(stem: Path) -> dict | None:
    """The timeline of ``bench/results/<stem>``: its JSON if there is one, else its SVG, else None."""
    for suffix, reader in ((".timeline.json", lambda p: json.loads(p.read_text())), (".timeline.svg", read_svg)):
        path = stem.with_name(stem.name + suffix)
        if path.exists():
            return reader(path)
    return None


def plot_timeline(data: dict, title: str, target: Path, plt) -> Path:
    intervals = data["intervals"]
    rows = sorted({iv["row"] for iv in intervals}, key=row_key)
    height = 1.2 + 0.42 * len(rows)
    fig, ax = plt.subplots(figsize=(12, height), layout="constrained")
    for stage, color in COLORS.items():
        mine = [iv for iv in intervals if iv["stage"] == stage]
        if not mine:
            continue
        for row in {iv["row"] for iv in mine}:
            spans = [(iv["start_s"], iv["end_s"] - iv["start_s"]) for iv in mine if iv["row"] == row]
            ax.broken_barh(spans, (rows.index(row) - 0.38, 0.76), facecolors=color, edgecolors="#333",
                           linewidth=0.3)
        ax.bar(0, 0, color=color, label=stage)  # legend entry only
    ax.set_yticks(range(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlim(0, max(iv["end_s"] for iv in intervals))
    ax.set_xlabel("seconds since the level started")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_ylabel("worker (gpuD.W: device D, worker W)", fontsize=9)
    fig.legend(ncol=len(COLORS), loc="outside lower center", fontsize=8, frameon=False)
    ax.set_title(f"{title}: {data['level']}" if data.get("level") else title, fontsize=10)
    fig.savefig(target, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return target

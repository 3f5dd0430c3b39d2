"""Markdown pipe tables of bench/results/*.md as lists of row dicts, and the numbers in their cells."""
from __future__ import annotations

import re
from pathlib import Path

from bench.common import RESULTS

__all__ = ["RESULTS", "log2_size", "number", "read_tables"]


def read_tables(path: Path) -> list[list[dict[str, str]]]:
    """Every table of a markdown file, in order: a list of {header: cell} rows per table."""
    tables, header, rows = [], None, []
    for line in path.read_text().splitlines() + [""]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else None
        if cells is None:
            if header is not None:
                tables.append(rows)
            header, rows = None, []
        elif header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            rows.append(dict(zip(header, cells)))
    return tables


def number(cell: str) -> float | None:
    """The first number in a cell ('185.56', '99%' -> 99.0, '2^24' -> 16777216, '-' -> None)."""
    if (power := re.fullmatch(r"2\^(\d+)", cell.strip())):
        return float(2 ** int(power.group(1)))
    match = re.search(r"-?\d+(?:\.\d+)?", cell)
    return float(match.group()) if match else None


def log2_size(cell: str) -> int | None:
    match = re.fullmatch(r"2\^(\d+)", cell.strip())
    return int(match.group(1)) if match else None

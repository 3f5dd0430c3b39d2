"""A resident key's fixed-base tables: which sections get one, building them, dropping them.

A section's table (msm.FixedBaseTable: 2^(c w) P for every window w) lets its MSM share one set of
buckets across the windows, at 13-16 times the points' VRAM (bench/results/gpu_msm_fixed_base.md).
Window 0 of a table is the points themselves, so a section with a table keeps no plain copy; dropping
the table copies window 0 back out. Tables are indexed like the MSM's scalars: the witness sections
by signal (C's first ``n_public + 1`` rows are infinity), H by its index, so that one digit sort with
the table's stride serves A, B1, B2 and C (``MsmRunner.sort_fixed``).
"""
from __future__ import annotations

from ..placement import WITNESS_SECTIONS, is_g2, point_bytes, section_bytes, section_span
from ._bindings import driver
from .errors import check
from .msm import FixedBaseTable, MsmRunner

# Sections in the order they get a table while the room lasts: most milliseconds saved a byte first. At
# 2^24 BLS12-381 a G2 table saved 61 ms of 392 for 39 GB more, a G1 one 18 of 146 for 19 GB (session 22).
FIXED_BASE_ORDER = ("b2", "h", "a", "b1", "c")


def table_rows(zkey, section: str) -> tuple[int, int]:
    """(lead, points) of a section's table: rows of infinity before its points, so that row i goes
    with scalar i (C's points start at signal n_public + 1)."""
    first, n = section_span(zkey, section)
    return (first, n) if section in WITNESS_SECTIONS else (0, n)


def table_extra_bytes(msm: MsmRunner, zkey, section: str) -> int:
    """Device bytes a section's table holds beyond its plain points."""
    lead, n = table_rows(zkey, section)
    return msm.table_bytes(is_g2(section), lead + n) - section_bytes(zkey, section)


def table_build_bytes(msm: MsmRunner, zkey, section: str) -> int:
    """Scratch of building a section's table (``MsmRunner.build_table``)."""
    lead, n = table_rows(zkey, section)
    return msm.table_build_bytes(is_g2(section), lead + n)


def table_pays(msm: MsmRunner, rows: int, g2: bool) -> bool:
    """Whether a table of ``rows`` rows is worth its VRAM: its plan has fewer windows than the plain MSM's.
    A table's gain is the wider windows its one set of buckets allows; where the plans agree (c = 20 at
    2^26) only the per-window reductions go, and the MSM over a table measured 0.96 of plain on
    BLS12-381 and 1.06 (slower) on BN254 (session 23, results/gpu_msm_fixed_base_s23_2e26.md)."""
    windows = msm.plan_fixed(rows).n_windows
    return windows < msm.plan(rows, g2).n_windows and windows * rows < 1 << 31  # entries: 31 index bits


def choose_fixed_bases(msm: MsmRunner, zkey, fits) -> tuple[str, ...]:
    """The sections of FIXED_BASE_ORDER whose table pays (``table_pays``), taken in that order while
    ``fits(sections)`` says the key with those tables still fits (a later, smaller one may fit where an
    earlier did not)."""
    chosen: list[str] = []
    for section in FIXED_BASE_ORDER:
        lead, n = table_rows(zkey, section)
        if n and table_pays(msm, lead + n, is_g2(section)) and fits(tuple(chosen + [section])):
            chosen.append(section)
    return tuple(s for s in FIXED_BASE_ORDER if s in chosen)


def build_tables(msm: MsmRunner, zkey, d_points: dict, sections, on_built=lambda: None) -> dict[str, FixedBaseTable]:
    """Tables of ``sections`` from their plain points in ``d_points``, whose buffers are then freed and
    removed (stream-ordered: after the build read them), one section at a time (a table and its points
    together only for the section being built). If one fails, the tables built so far give their points
    back to ``d_points`` and are freed, so the key is as it was (a key adopted from the setup lives on)."""
    tables: dict[str, FixedBaseTable] = {}
    try:
        for section in sections:
            lead, n = table_rows(zkey, section)
            tables[section] = msm.build_table(is_g2(section), d_points[section].ptr, n, lead=lead)
            d_points.pop(section).free()
            on_built()
    except BaseException:
        for section, table in tables.items():
            if section not in d_points:
                d_points[section] = plain_points(msm.allocator, msm.stream, zkey, table, section)
            table.free()
        raise
    return tables


def plain_points(allocator, stream, zkey, table: FixedBaseTable, section: str):
    """A new buffer of the section's plain points, copied from window 0 of its table."""
    row = point_bytes(zkey.curve, section)
    n = table.n - table.lead
    d_points = allocator.alloc(row * n, f"key points {section}")
    try:
        check(driver.cuMemcpyDtoDAsync(d_points.ptr, table.d_table.ptr + row * table.lead, row * n, stream.handle),
              "cuMemcpyDtoDAsync")
    except BaseException:
        d_points.free()
        raise
    return d_points

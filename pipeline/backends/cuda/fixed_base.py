"""A resident key's fixed-base tables: which sections get one, building them, dropping them.

A section's table (msm.FixedBaseTable: 2^(c S j) P for its windows j) lets its MSM share S sets of
buckets across the windows, at 13-16 times the points' VRAM for S = 1 (bench/results/gpu_msm_fixed_base.md),
about half that for S = 2. Window 0 of a table is the points themselves, so a section with a table keeps no
plain copy; dropping the table copies window 0 back out. Tables are indexed like the MSM's scalars: the witness sections
by signal (C's first ``n_public + 1`` rows are infinity), H by its index, so that one digit sort with
the table's stride serves A, B1, B2 and C (``MsmRunner.sort_fixed``).
"""
from __future__ import annotations

from ..placement import FIXED_BASE_ORDER, WITNESS_SECTIONS, is_g2, point_bytes, section_bytes, section_span
from ._bindings import driver
from .errors import check
from .launch import TABLE_SETS
from .msm import FixedBaseTable, MsmRunner


def table_rows(zkey, section: str) -> tuple[int, int]:
    """(lead, points) of a section's table: rows of infinity before its points, so that row i goes
    with scalar i (C's points start at signal n_public + 1)."""
    first, n = section_span(zkey, section)
    return (first, n) if section in WITNESS_SECTIONS else (0, n)


def table_extra_bytes(msm: MsmRunner, zkey, section: str, sets: int = 1) -> int:
    """Device bytes a section's table of ``sets`` bucket sets holds beyond its plain points."""
    lead, n = table_rows(zkey, section)
    return msm.table_bytes(is_g2(section), lead + n, table_sets=sets) - section_bytes(zkey, section)


def tables_extra_bytes(msm: MsmRunner, zkey, tables: dict[str, int]) -> int:
    """``table_extra_bytes`` of every table (section -> bucket sets)."""
    return sum(table_extra_bytes(msm, zkey, s, sets) for s, sets in tables.items())


def table_build_bytes(msm: MsmRunner, zkey, section: str) -> int:
    """Scratch of building a section's table (``MsmRunner.build_table``)."""
    lead, n = table_rows(zkey, section)
    return msm.table_build_bytes(is_g2(section), lead + n)


def table_fits_indices(msm: MsmRunner, rows: int, sets: int) -> bool:
    """Whether a table of ``rows`` rows and ``sets`` bucket sets keeps its entries inside 31 index bits. Every
    table that does pays: with the sort's keys by set (session 27) the MSM over a one-set table measured
    0.65-0.96 of the plain MSM at 2^20-2^26 on both curves, G1 and G2 (results/gpu_msm_fixed_base_s27_*.md;
    at 2^26, where the plans' widths agree, 0.90 BLS12-381 and 0.96 BN254, against 0.95 and 1.06 with a
    counter a window and bucket)."""
    return msm.plan_fixed(rows, table_sets=sets).table_windows * rows < 1 << 31


def choose_fixed_bases(msm: MsmRunner, zkey, fits, order: tuple[str, ...] = FIXED_BASE_ORDER,
                       tried: tuple[int, ...] = TABLE_SETS) -> dict[str, int]:
    """Tables (section -> bucket sets) for the sections of ``order``, taken in that order while
    ``fits(tables)`` says the key with those tables still fits (a later, smaller one may fit where an
    earlier did not), each with the first bucket-set count of ``tried`` that fits (TABLE_SETS: the fewest)."""
    chosen: dict[str, int] = {}
    for section in order:
        lead, n = table_rows(zkey, section)
        for sets in tried if n else ():
            if table_fits_indices(msm, lead + n, sets) and fits({**chosen, section: sets}):
                chosen[section] = sets
                break
    return chosen


def build_tables(msm: MsmRunner, zkey, d_points: dict, sets: dict[str, int],
                 on_built=lambda: None) -> dict[str, FixedBaseTable]:
    """Tables of the sections of ``sets`` (section -> bucket sets) from their plain points in ``d_points``,
    whose buffers are then freed and removed (stream-ordered: after the build read them), one section at a
    time (a table and its points together only for the section being built). If one fails, the tables built
    so far give their points back to ``d_points`` and are freed, so the key is as it was (a key adopted from
    the setup lives on)."""
    tables: dict[str, FixedBaseTable] = {}
    try:
        for section, table_sets in sets.items():
            lead, n = table_rows(zkey, section)
            tables[section] = msm.build_table(is_g2(section), d_points[section].ptr, n, lead=lead,
                                              table_sets=table_sets)
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

"""A resident key's fixed-base tables: which sections get one, building them, dropping them.

A section's table (msm.FixedBaseTable: 2^(c S j) P for its windows j) lets its MSM share S sets of
buckets across the windows, at 13-16 times the points' VRAM for S = 1 (bench/results/gpu_msm_fixed_base.md),
about half that for S = 2. Window 0 of a table is the points themselves, so a section with a table keeps no
plain copy; dropping the table copies window 0 back out. Tables are indexed like the MSM's scalars: the witness sections
by signal (C's first ``n_public + 1`` rows are infinity), H by its index, so that one digit sort with
the table's stride serves A, B1, B2 and C (``MsmRunner.sort_fixed``).
"""
from __future__ import annotations

from ..placement import (FIXED_BASE_ORDER, G2_ADDITION_COST, MIN_TABLE_GAIN, WITNESS_SECTIONS, is_g2, point_bytes,
                         section_bytes, section_share, section_span)
from ._bindings import driver
from .errors import check
from .launch import TABLE_SETS
from .msm import FixedBaseTable, MsmRunner, window_cost


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


def table_prices(msm: MsmRunner, zkey, section: str, sets: int, share: float = 1.0) -> tuple[float, float]:
    """The window cost model's prices (msm.window_cost, in mixed additions; a G2 one weighs G2_ADDITION_COST) of the
    section's MSM over its plain points and over a table of ``sets`` bucket sets, for the ``share`` of its rows a
    witness leaves to Pippenger (placement.table_share, section_share)."""
    lead, n = table_rows(zkey, section)
    g2 = is_g2(section)
    scalars = max(1, round(n * section_share(section, share)))
    bits, model, weight = zkey.curve.fr.bits, msm.window_model, G2_ADDITION_COST if g2 else 1.0
    plain = window_cost(scalars, bits, msm.plan(scalars, g2).c, model)
    table = window_cost(scalars, bits, msm.plan_fixed(lead + n, table_sets=sets).c, model, True, sets)
    return plain * weight, table * weight


def table_gain(msm: MsmRunner, zkey, section: str, sets: int, share: float = 1.0) -> float:
    """What the table saves the section's MSM by the model (``table_prices``): negative where its wide, fixed windows
    cost more than they save, as a two-set table over the 5% tail of a seed witness at 2^24 (measured 49 against 40
    ms for B2, session 49)."""
    plain, table = table_prices(msm, zkey, section, sets, share)
    return plain - table


def table_pays(msm: MsmRunner, zkey, section: str, sets: int, share: float = 1.0) -> bool:
    """Whether the model's saving clears MIN_TABLE_GAIN of the plain MSM's price: the model priced B2's one-set
    table over a seed witness's tail at 2^24 4% cheaper than plain, and it measured 7.5% dearer (43 against 40
    ms, session 49), so a table the model gives less than that margin is not worth its VRAM."""
    plain, table = table_prices(msm, zkey, section, sets, share)
    return plain - table >= MIN_TABLE_GAIN * plain


def fill_tables(msm: MsmRunner, zkey, fits, order: tuple[str, ...], tried: tuple[int, ...],
                share: float = 1.0) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Sections of ``order`` taken in that order while ``fits(tables)`` says the key with those tables still fits
    (a later, smaller one may fit where an earlier did not), each with the first bucket-set count of ``tried``
    that fits and pays (``table_pays``). Returns the tables (section -> bucket sets) and the candidates refused
    for room, each the tables so far with the refused one last."""
    chosen: dict[str, int] = {}
    refused: list[dict[str, int]] = []
    for section in order:
        lead, n = table_rows(zkey, section)
        for sets in tried if n else ():
            if not (table_fits_indices(msm, lead + n, sets) and table_pays(msm, zkey, section, sets, share)):
                continue
            candidate = {**chosen, section: sets}
            if fits(candidate):
                chosen = candidate
                break
            refused.append(candidate)
    return chosen, refused


def choose_fixed_bases(msm: MsmRunner, zkey, fits, order: tuple[str, ...] = FIXED_BASE_ORDER,
                       tried: tuple[int, ...] = TABLE_SETS,
                       share: float = 1.0) -> tuple[dict[str, int], list[dict[str, int]]]:
    """The tables (section -> bucket sets) that save the most (``table_gain``, for the ``share`` of the witness
    sections' rows a witness leaves to Pippenger) among ``fill_tables``' fills of the room: with ``tried`` (the
    fewest sets that fit first: TABLE_SETS), and with each one count of ``tried`` alone. Where every one-set
    table fits, that is all of them; where not, every section at two sets may save more than a few at one: a
    2^24 BLS12-381 key on an H100 proved a random witness in 778-780 ms over five two-set tables against 802
    over B2's and H's one-set ones (session 49, results/gpu_stage_24_s49_h100_sets2_p{1,2}.md). Ties keep the
    first fill. Returns the tables and the candidates that fill refused for room (``fill_tables``)."""
    fills = [fill_tables(msm, zkey, fits, order, tried, share)]
    if len(tried) > 1:
        fills += [fill_tables(msm, zkey, fits, order, (sets,), share) for sets in tried]

    def saved(fill) -> float:
        return sum(table_gain(msm, zkey, s, sets, share) for s, sets in fill[0].items())
    return max(fills, key=saved)  # max keeps the first of equals


def build_tables(msm: MsmRunner, zkey, d_points: dict, sets: dict[str, int],
                 on_built=lambda: None) -> dict[str, FixedBaseTable]:
    """Tables of the sections of ``sets`` (section -> bucket sets) from their plain points in ``d_points``,
    whose buffers are then freed and removed (stream-ordered: after the build read them), one section at a
    time (a table and its points together only for the section being built), each built when this returns.
    If one fails, the tables built so far give their points back to ``d_points`` and are freed, so the key
    is as it was (a key adopted from the setup lives on)."""
    tables: dict[str, FixedBaseTable] = {}
    try:
        for section, table_sets in sets.items():
            lead, n = table_rows(zkey, section)
            tables[section] = msm.build_table(is_g2(section), d_points[section].ptr, n, lead=lead,
                                              table_sets=table_sets)
            d_points.pop(section).free()
            # Built means done: a key's load (and the engine's preload) ends with its tables. Returning with the
            # builds still queued left them to the first partition: at 2^24 (5 tables, 2 sets) ~9 s of its
            # stage, counted in no load time (session 60, bench/results/streamed_keys_*_s60_*).
            msm.stream.synchronize()
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

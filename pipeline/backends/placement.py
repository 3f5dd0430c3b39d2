"""Where a key's points live for a backend, and the chunks a streamed pass walks through.

A key whose points do not fit the device budget keeps some sections (``a``, ``b1``, ``b2``,
``c``, ``h``) in host memory and streams them through the device in chunks, once per batch of
partitions (``Backend.start_batch``). The plan of a pass is backend-independent and lives here,
so that the CPU backend (the reference) and the CUDA backend walk the same chunks.

Sections and the scalars they take:

- ``a``, ``b1``, ``b2``: point i goes with signal i (all ``n_vars`` signals);
- ``c``: point k goes with signal ``n_public + 1 + k`` (the private signals);
- ``h``: point k goes with the quotient's value k (``domain_size`` of them).

The witness sections share one walk over the signals, so a chunk uploads each partition's
scalars of its signal range once for up to four sections.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..formats.binfile import ROWS_PER_TASK, over_chunks
from ..formats.types import POINT_SECTIONS, point_row_shape

if TYPE_CHECKING:
    from .protocol import WitnessShape

SECTIONS = POINT_SECTIONS  # the key's point sections, in file order (formats.types)
WITNESS_SECTIONS = ("a", "b1", "b2", "c")
# Sections in the order they get a fixed-base table while the room lasts (CudaOptions.msm_fixed_base_order's
# default): most milliseconds saved a byte first, for a random witness. At 2^24 BLS12-381 a G2 table saved 61 ms of
# 392 for 39 GB more, a G1 one 18 of 146 for 19 GB (session 22). A bit-heavy witness runs B2 mostly as a sum of
# ones, which a table does not speed up: there H first (the seed's order, bench/NOTES.md session 29).
FIXED_BASE_ORDER = ("b2", "h", "a", "b1", "c")
# A G2 mixed addition's time over a G1 one's at level 0 of the bucket sums: 1.24 against 0.39 ns (BLS12-381,
# docs/seed_scale.md): the weight of B2's additions in fixed_base.table_gain.
G2_ADDITION_COST = 3.2
# A G2 table's milliseconds saved a byte over a G1 table's, for the same scalars: its additions' weight over its
# points' bytes (twice a G1 point's on both curves), so that table_order ranks sections by the cost model that
# prices them (fixed_base.table_gain). Measured: 61 ms for 39 GB against 18 ms for 19 GB at 2^24 BLS12-381, 1.65
# (session 22, above).
G2_TABLE_MS_A_BYTE = G2_ADDITION_COST / 2
# The least saving, as a share of the plain MSM's modelled price, for which a table is worth its VRAM
# (fixed_base.table_pays): the model priced B2's one-set table over a seed witness's tail at 2^24 4% below plain,
# and it measured 7.5% above (session 49).
MIN_TABLE_GAIN = 0.05
# Nonzero digits of a random scalar (BLS12-381's 255 bits in 20-bit windows); a scalar 1 has one, a 0 none.
RANDOM_SCALAR_DIGITS = 13


def table_share(witness: "WitnessShape | None", split: bool) -> float:
    """The share of a witness section's Pippenger work that witnesses shaped like ``witness`` leave (1: a random
    witness). With the 0 / 1 split only the values other than 0 and 1 go through Pippenger (the ones are a sum of
    their points, which a table does not speed up); without it a 1 is one digit of a random scalar's ~13."""
    if witness is None or witness.n_vars <= 0:
        return 1.0
    ones = 0 if split else witness.n_one / RANDOM_SCALAR_DIGITS
    return (witness.n_other + ones) / witness.n_vars


def section_share(section: str, share: float) -> float:
    """The share of a section's rows that go through Pippenger when a witness leaves ``share`` of a witness section's
    (``table_share``): H's scalars are the quotient's, random whatever the witness, so all of its rows."""
    return 1.0 if section == "h" else share


def table_order(witness: "WitnessShape | None", split: bool) -> tuple[str, ...]:
    """The sections in the order they get a fixed-base table for witnesses shaped like ``witness``
    (``CudaOptions.msm_fixed_base_order`` "auto"): the most milliseconds saved a byte first, a section's
    rate a byte (G2_TABLE_MS_A_BYTE for B2) times the share of its Pippenger work the witness leaves
    (``table_share``; H's scalars are the quotient's, random whatever the witness). Ties, and no witness yet,
    keep FIXED_BASE_ORDER, the order for a random witness; a seed witness (95% in {0, 1}, split) gives
    h, b2, a, b1, c."""
    share = table_share(witness, split)

    def rate(section: str) -> float:
        return (G2_TABLE_MS_A_BYTE if is_g2(section) else 1.0) * section_share(section, share)
    return tuple(sorted(FIXED_BASE_ORDER, key=rate, reverse=True))  # stable: ties keep FIXED_BASE_ORDER


@dataclass(frozen=True)
class KeyPlacement:
    """Which point sections a loaded key keeps on the device (``resident``); the others are
    streamed from host memory, ``chunk_signals`` signals (witness sections) or ``chunk_h`` H
    points per chunk. ``device_bytes``: what ``load_key`` holds on the device."""

    resident: tuple[str, ...] = SECTIONS
    chunk_signals: int = 0
    chunk_h: int = 0
    device_bytes: int = 0
    # The coefficient matrices (CSR) stay in host memory too, and H's sparse products stream them
    # in row chunks of about this many bytes (0: the CSR is resident).
    csr_chunk_bytes: int = 0
    # A streamed H section crosses once per partition, in its prologue, in pieces of ``chunk_h``
    # points into one MSM's bucket sums (CudaOptions.stream_h "prologue"); False: once per pass, in
    # the pass's chunks, an MSM of its own per chunk and partition ("chunks").
    h_per_partition: bool = False
    # Resident sections whose points the device keeps as a fixed-base table (2^(c w) P for its windows w:
    # msm.FixedBaseTable), counted in ``device_bytes``; the backend drops them back to plain points when the
    # budget gets tight (``Backend.drop_fixed_bases``). ``fixed_base_sets``: each table's bucket sets, in the
    # same order (the table holds every S-th window: 1/S of the VRAM of S = 1; left out: 1 each).
    fixed_base: tuple[str, ...] = ()
    fixed_base_sets: tuple[int, ...] = ()
    # The tables tried and left out for want of room, each with the bytes it needed and the room it had
    # ("h (1 set): 130.4 of 125.1 GiB"): why a section has fewer sets, or none, than it might (status).
    tables_refused: tuple[str, ...] = field(default=(), compare=False)
    # The order the sections were offered tables in (CudaOptions.msm_fixed_base_order, or table_order's for the
    # key's witnesses so far): why H has a table and B2 none, say (status).
    fixed_base_order: tuple[str, ...] = field(default=(), compare=False)

    @property
    def tables(self) -> dict[str, int]:
        """The fixed-base tables: section -> its bucket sets."""
        return dict(zip(self.fixed_base, self.fixed_base_sets))

    def without_tables(self, freed_bytes: int) -> "KeyPlacement":
        """This placement once its tables are dropped, which gave ``freed_bytes`` of device memory back."""
        return replace(self, fixed_base=(), fixed_base_sets=(), device_bytes=self.device_bytes - freed_bytes,
                       tables_refused=(), fixed_base_order=())

    def __post_init__(self) -> None:
        if self.fixed_base and not self.fixed_base_sets:  # one form for one set of tables: 1 set each
            object.__setattr__(self, "fixed_base_sets", (1,) * len(self.fixed_base))
        unknown = set(self.resident) - set(SECTIONS)
        if unknown:
            raise ValueError(f"unknown key sections {sorted(unknown)}; sections are {SECTIONS}")
        if self.fixed_base_sets and (len(self.fixed_base_sets) != len(self.fixed_base)
                                     or min(self.fixed_base_sets) < 1):
            raise ValueError(f"fixed-base tables {self.fixed_base} with bucket sets {self.fixed_base_sets}: one "
                             f"count of at least 1 a table")
        if not set(self.fixed_base) <= set(self.resident):
            raise ValueError(f"fixed-base tables {sorted(self.fixed_base)} for sections not all resident "
                             f"({sorted(self.resident)})")
        if any(s in WITNESS_SECTIONS for s in self.streamed) and self.chunk_signals <= 0:
            raise ValueError("a placement that streams witness sections needs chunk_signals > 0")
        if "h" in self.streamed and self.chunk_h <= 0:
            raise ValueError("a placement that streams the H section needs chunk_h > 0")

    @property
    def streamed(self) -> tuple[str, ...]:
        return tuple(s for s in SECTIONS if s not in self.resident)

    @property
    def h_in_prologues(self) -> bool:
        """H streamed through each partition's prologue, in pieces (``h_per_partition``)."""
        return self.h_per_partition and "h" in self.streamed

    @property
    def h_in_chunks(self) -> bool:
        """H streamed through the pass's chunks."""
        return "h" in self.streamed and not self.h_per_partition

    @property
    def mode(self) -> str:
        """"resident", "streamed" (no points on the device) or "partly resident"."""
        if not self.streamed and not self.csr_chunk_bytes:
            return "resident"
        return "streamed" if not self.resident else "partly resident"


def is_g2(section: str) -> bool:
    return section == "b2"


def section_span(zkey, section: str) -> tuple[int, int]:
    """(first scalar index, number of points) of a section: its points are scalars first.. first+n."""
    if section == "c":
        first = zkey.n_public + 1
        return first, zkey.n_vars - first
    if section == "h":
        return 0, zkey.domain_size
    return 0, zkey.n_vars


def point_bytes(curve, section: str) -> int:
    """Bytes of one affine point of ``section`` as the key stores it (x, y over Fq or Fq2)."""
    return 8 * math.prod(point_row_shape(curve, section))


def section_bytes(zkey, section: str) -> int:
    return section_span(zkey, section)[1] * point_bytes(zkey.curve, section)


@dataclass(frozen=True)
class SectionSlice:
    """Points [point_lo, point_hi) of ``section``; their scalars start ``scalar_offset`` into the
    chunk's scalar range."""

    section: str
    point_lo: int
    point_hi: int
    scalar_offset: int

    @property
    def count(self) -> int:
        return self.point_hi - self.point_lo


@dataclass(frozen=True)
class Chunk:
    """One step of a pass: scalars [lo, hi) of ``scalars`` ("witness" or "h") and the streamed
    sections' points that go with them."""

    scalars: str
    lo: int
    hi: int
    slices: tuple[SectionSlice, ...]


def plan_chunks(zkey, placement: KeyPlacement) -> list[Chunk]:
    """The chunks of one pass over ``placement``'s streamed sections: the witness sections in
    signal order, then H (unless its prologues take it: ``h_per_partition``). Every point a pass
    streams is in exactly one slice."""
    chunks = []
    witness_sections = [s for s in WITNESS_SECTIONS if s in placement.streamed]
    if witness_sections:
        step = placement.chunk_signals
        for lo in range(0, zkey.n_vars, step):
            hi = min(lo + step, zkey.n_vars)
            slices = []
            for s in witness_sections:
                first, n = section_span(zkey, s)
                s_lo, s_hi = max(lo, first), min(hi, first + n)
                if s_hi > s_lo:
                    slices.append(SectionSlice(s, s_lo - first, s_hi - first, s_lo - lo))
            if slices:
                chunks.append(Chunk("witness", lo, hi, tuple(slices)))
    if placement.h_in_chunks:
        for lo in range(0, zkey.domain_size, placement.chunk_h):
            hi = min(lo + placement.chunk_h, zkey.domain_size)
            chunks.append(Chunk("h", lo, hi, (SectionSlice("h", lo, hi, 0),)))
    return chunks


def classify_scalars(witness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (is one, is neither 0 nor 1) of a (n, limbs) uint64 plain-form witness."""
    high_zero = ~witness[:, 1:].any(axis=1)
    low = witness[:, 0]
    return high_zero & (low == 1), ~(high_zero & (low <= 1))


# The worker pool of a streamed pass's host work (the split, the tails' gathers, where the device
# cannot do them): its own, so that it never queues behind prep_msm's witness scans on the formats
# pool while the pass holds the GPU lock. Measured alone it changed nothing (2^26 engine row 4.16 ->
# 4.17 s/partition, bench/NOTES.md session 8): what held the pass up was the GIL, and moving the
# split and gathers to the device is what helped.
PASS_POOL = "streamed-pass"


class HostSplit:
    """A witness's 0 / 1 split on the host, for a streamed pass: ascending signal indices of its
    ones and of its other nonzero values (with those values). A chunk slice then sums the points
    of its ones (a batch addition) and runs a tail MSM over its others; zeros cost nothing."""

    def __init__(self, witness: np.ndarray) -> None:
        # Pieces of the witness on the worker pool (numpy releases the GIL): built under the GPU
        # lock, beside the device work already queued, so it must take well under a prologue.
        def piece(a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            is_one, is_other = classify_scalars(witness[a:b])
            others = np.flatnonzero(is_other)
            return (np.flatnonzero(is_one).astype(np.uint32) + np.uint32(a), others.astype(np.uint32) + np.uint32(a),
                    witness[a:b][others])

        parts = over_chunks(len(witness), ROWS_PER_TASK, piece, pool=PASS_POOL)
        self.ones = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint32)
        self.others = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.uint32)
        self.other_scalars = np.ascontiguousarray(np.concatenate([p[2] for p in parts]) if parts else
                                                  witness[:0])

    @classmethod
    def of_lists(cls, ones: np.ndarray, others: np.ndarray, other_scalars: np.ndarray) -> "HostSplit":
        """A split whose lists were made elsewhere (the device compacts them; a pass downloads them)."""
        split = cls.__new__(cls)
        split.ones, split.others, split.other_scalars = ones, others, other_scalars
        return split

    def others_of(self, points: np.ndarray, first: int, count: int,
                  out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The points of this witness's other values among the signals [first, first + count) of a
        section whose point k is signal first + k, gathered in signal order on the worker pool
        (into ``out`` when given: page-locked staging, say), and their scalars: the section's whole
        tail MSM, in one piece."""
        _, (t0, t1) = self.ranges(first, first + count)
        rows = (self.others[t0:t1] - np.uint32(first)).astype(np.intp)
        if out is None:
            out = np.empty((t1 - t0, *points.shape[1:]), dtype=points.dtype)
        elif out.shape != (t1 - t0, *points.shape[1:]) or out.dtype != points.dtype:
            raise ValueError(f"others_of: out is {out.dtype} {out.shape}, the gather needs {points.dtype} "
                             f"{(t1 - t0, *points.shape[1:])}")
        over_chunks(t1 - t0, ROWS_PER_TASK, lambda a, b: np.take(points, rows[a:b], axis=0, out=out[a:b]),
                    pool=PASS_POOL)
        return out, self.other_scalars[t0:t1]

    def ranges(self, lo: int, hi: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """Positions [o0, o1) in ``ones`` and [t0, t1) in ``others`` of the signals in [lo, hi)."""
        # Bounds of the arrays' own dtype: with Python ints numpy searches an int64 copy of the
        # whole array (~11 ms at 2^24 per call, most of a streamed pass's host time, measured).
        bounds = np.array([lo, hi], dtype=np.uint32)
        o0, o1 = np.searchsorted(self.ones, bounds)
        t0, t1 = np.searchsorted(self.others, bounds)
        return (int(o0), int(o1)), (int(t0), int(t1))

    def slice_signals(self, chunk: Chunk, s: SectionSlice) -> tuple[int, int]:
        """The signals [lo, hi) whose scalars multiply the slice's points (its point k: signal lo + k)."""
        lo = chunk.lo + s.scalar_offset
        return lo, lo + s.count

"""Host side of the bucket MSM (cuda_src/msm/pippenger.cuh): sizes, buffers, launch order.

Scalars are Fr in plain form on the device, (n, 8) uint32 words; points are affine_t in
Montgomery form, resident. Scratch buffers live only for one call (DESIGN rule 1: the caller
holds the GPU lock around it). The result is one XYZZ point, turned into Jacobian ints.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...curves.points import CurveGroup
from ._bindings import driver
from .errors import check
from .kernels import BUILT_KERNELS, CurveKernels, grid_for
from .launch import (BATCH_INVERSE_THREADS, CHUNK_COUNT_BLOCK, DIGIT_BLOCK, G1_LEVEL0_CHUNKED_BUILT, G2_FIELD,
                     G2_LEVEL0_CHUNKED_BUILT, G2_MIN_BLOCKS, G1_MIN_BLOCKS, LAZY_FIELDS, LEVEL0_CHUNKED, PLAIN_SUMS,
                     MSM_ACC_THREADS as ACC_BLOCK, PIECE_CLASS_BLOCK, PIECE_CLASS_GRID, PLACE_BLOCK, PLACE_TILE,
                     REDUCE_BLOCK, SCALAR_PIECE_MIN, SCALAR_PIECES, SCAN_THREADS, SCAN_TILE)
from .memory import PinnedHostBuffer
from .streams import Event

TARGET_CHUNKS = 1 << 18  # enough chunks to fill 132 SMs several times over
# madds per thread at level 0; the partial sums above it cost ~1.4/MAX_CHUNK extra. G1 128 against 64
# (session 14, flat single-loop kernel): BLS12-381 2^26 563 -> 547 ms, 2^24 155 -> 154; 256 no better.
# G2 flat 128 too (session 55, same calls, results/gpu_msm_level0_s55.md, _bn.md): 0.99 / 0.98 / 0.98 / 0.96 of flat at
# 64 at 2^22 / 2^24 / 2^25 / 2^26 (BLS12-381), 1.00 / 0.99 / 0.96 at 2^22 / 2^24 / 2^26 (BN254). G1 at 256: within
# 0.4% of 128 at 2^26 on both curves (results/gpu_msm_level0_s55_g1.md).
# The chunked G2 kernel keeps 64: at 128 BLS12-381's G2 took 143.5 ms at 2^22 against 127.8 (session 14,
# bench/results/kernels_vs_sppark_s14.md) and 1592.9 against 1417.9 at 2^26 (session 55).
MAX_CHUNK = 128
MAX_CHUNK_CHUNKED_G2 = 64
# The binned digit sort from this many digit slots (n x windows) up; below, ranks and one scatter. Same call
# (session 15, results/gpu_msm_binned_sort.md): at 2^26 (872M-1G slots) the sort 78 -> 50 ms (BLS12-381
# G1, MSM 548 -> 520 ms) and 73 -> 58 (BN254, 291 -> 275); at 2^24 (252M-268M) mixed: BLS12-381 +2.6 ms,
# BN254 -1 ms of its MSM.
BINNED_SORT_FROM_ENTRIES = 1 << 29
# Full additions a thread when summing a bucket's level-0 pieces: one item sums a bucket of up to this many
# (msm_sum_pieces), a tree of chunks of this many sums hotter ones (MsmRunner._sum_pieces); point sums' levels too.
LEVEL_CHUNK = 16
# Rows of a fixed-base table built at once: its XYZZ step buffer (1.6 GB for BLS12-381's G2) is what a key
# load needs beside the tables, and a 2^24 key's five tables fit the H200's default budget only without
# a whole window's buffer (6.4 GB for G2).
TABLE_BUILD_ROWS = 1 << 22
SEGMENT_THREADS = 1 << 16  # threads of the bucket-reduction step
SCALAR_BYTES = 32  # a scalar's plain words on the device (8 x 32 bits)


def level0_chunk(entries: int, g2: bool = False, flat: bool = True) -> int:
    """Entries per thread at level 0 of the bucket sums: 2..MAX_CHUNK (G2 chunked: MAX_CHUNK_CHUNKED_G2),
    enough threads (TARGET_CHUNKS) for the GPU at any size."""
    most = MAX_CHUNK_CHUNKED_G2 if g2 and not flat else MAX_CHUNK
    return max(2, min(most, 1 << max(0, (entries // TARGET_CHUNKS).bit_length())))


def level0_pieces(entries: int, chunk: int, flat: bool) -> int:
    """Most level-0 outputs of one bucket of ``entries`` entries: chunked ceil(entries / chunk); flat,
    its entries start anywhere in a thread's range, so one more where they do not fit the first."""
    return 1 + -(-(entries - 1) // chunk) if flat else -(-entries // chunk)


@dataclass(frozen=True)
class MsmPlan:
    n: int
    c: int  # window bits
    n_windows: int
    buckets_per_window: int  # 2^(c-1): signed digits
    seg_len: int
    # A fixed-base plan's bucket sets S (pippenger.cuh, fixed bases: digit window w into set w mod S, its table
    # holding every S-th window); 0 for a plain plan.
    table_sets: int = 0

    @property
    def n_buckets(self) -> int:
        return self.n_windows * self.buckets_per_window

    @property
    def sort_buckets(self) -> int:
        """Buckets of the digit sort and the sums: a window's each, or a fixed-base plan's sets'."""
        return self.buckets_per_window * (self.table_sets or self.n_windows)

    @property
    def window_segments(self) -> int:
        """Segments of a window's buckets in the reduction (seg_len buckets each)."""
        return self.buckets_per_window // self.seg_len

    @property
    def table_windows(self) -> int:
        """Windows a fixed-base table of this plan holds: every table_sets-th digit window's."""
        return -(-self.n_windows // self.table_sets)


# The window cost model: windows * (n * (1 + spread / sqrt(lambda)) + bucket_cost * buckets), lambda =
# n / buckets the mean entries of a bucket. spread: a warp waits for its longest bucket, and short buckets
# (small lambda) vary most; bucket_cost: the full additions and memory of a bucket's partial sums and
# running sums, in mixed additions. Fitted to G2's phases at 2^24, c = 14..22 (session 12,
# results/gpu_msm_g2_windows.md: accumulate 1.27 ns a mixed addition at lambda 2048, 1.76 at 32, 2.28 at
# 8; partials + running sums ~6.5 additions a bucket). Same call checks (results/gpu_msm_g2_model.md): G2
# 2^22 c = 16 0.90x of c = 18 (BLS12-381), c = 15 0.85x (BN254); G1 2^24 c = 16 0.84x / 0.82x of c = 20,
# and at 2^26 it keeps c = 20 (session 8's sweep: 19 ~ 20 < 22). With level 0 flat (session 13,
# results/gpu_msm_level0.md) its G1 choices at 2^16-2^24 are the fastest width or within 1-3% of it on
# both curves, where the additions-only model's were up to 11% slower (2^22: c = 18 against 15-16).
# Spread 2.2 -> 1.8 (session 19, G1 sweeps at 2^18, 2^20, 2^25 and 2^26 after Y3 became one dot product,
# results/gpu_msm_window_sweep_s19.md and gpu_msm_2e26_windows_s19.md, random scalars): BN254 2^26 c = 17
# -> 20 (265.0 -> 245.3 ms), 2^20 13 -> 15 (7.30 -> 6.91), 2^18 12 -> 13 on both curves (8.13 -> 7.61 /
# 3.60 -> 3.50); BLS12-381 2^25 16 -> 19 (283.9 either way); 2^22 and 2^24 unchanged. Summed over the eight
# swept sizes, the chosen width's excess over the fastest fell from 36% to 12%. Bit-heavy scalars prefer
# narrower windows (80% {0,1}: BN254 2^26 94.2 -> 99.5 ms): the split's tails see few such scalars.
BALANCED_WINDOW_MODEL = (1.8, 6.5)
ADDITIONS_WINDOW_MODEL = (0.0, 2.8)  # the first model: additions only (kept for bench.gpu_msm's sweep)
# Widths measured fastest on an H200 where the model's choice was not (session 35: results/gpu_msm_sweep_s35_small.md,
# gpu_msm_sweep_s35_span2.md, every width two past both models' choices, G1 and G2; session 36:
# gpu_msm_sweep_s36_2e25_27.md, c = 15-21 at 2^25-2^27): per scalar field (by its bit length: 255 BLS12-381's Fr,
# 254 BN254's) and log2 n, the width of least time for a partition's MSMs of that size (A, B1, C and H in G1, B2 in
# G2: 4 G1 + 1 G2; A, B1, B2 and C share one digit sort, H sorts its own). Against the model's choices the mix ran
# 5-14% faster at 2^14-2^16 (c = 8, where the per-bucket sums weigh most), 9% at BLS12-381's 2^21 (15 against
# 16), 8% at its 2^25 (17 against 19) and 2-4% at 2^19, 2^22-2^23; at 2^26-2^27 the model's 20 is the fastest G1
# width on both curves (the mix ties 17 within 0.1%). No two-parameter model fitted every size (NOTES, session
# 35). Sizes round to the nearest measured log2; outside 2^12-2^27 (and for another model) the model plans.
MEASURED_WIDTHS = {
    255: {12: 8, 13: 8, 14: 8, 15: 8, 16: 8, 17: 10, 18: 13, 19: 15, 20: 13, 21: 15, 22: 15, 23: 15, 24: 16, 25: 17,
          26: 20, 27: 20},
    254: {12: 8, 13: 8, 14: 8, 15: 8, 16: 8, 17: 10, 18: 15, 19: 15, 20: 15, 21: 15, 22: 15, 23: 15, 24: 17, 25: 17,
          26: 20, 27: 20},
}


def scalar_pieces(n: int, most: int = SCALAR_PIECES, least: int = SCALAR_PIECE_MIN) -> list[tuple[int, int]]:
    """(first, count) of the pieces ``n`` scalars from the host are copied in (launch.SCALAR_PIECES): at most
    ``most``, of at least ``least`` scalars each, so one piece below 2 ``least``."""
    k = max(1, min(most, n // least))
    bounds = [j * n // k for j in range(k + 1)]  # sizes differ by one at most, each >= n // k >= least
    return [(a, b - a) for a, b in zip(bounds, bounds[1:])]


def host_scalars_address(h_scalars: np.ndarray, n: int) -> int:
    """The address of ``n`` scalars in host memory, as their plain 32-byte words in a C-contiguous array."""
    if not h_scalars.flags.c_contiguous or h_scalars.nbytes != n * SCALAR_BYTES:
        raise ValueError(f"host scalars: {n} scalars need one C-contiguous array of {n * SCALAR_BYTES} bytes, got "
                         f"{h_scalars.nbytes} bytes{'' if h_scalars.flags.c_contiguous else ', not contiguous'}")
    return h_scalars.ctypes.data


def measured_width(n: int, scalar_bits: int) -> int | None:
    """MEASURED_WIDTHS' width for an MSM of ``n`` scalars, or None where nothing was measured."""
    widths = MEASURED_WIDTHS.get(scalar_bits, {})
    return widths.get(round(math.log2(n))) if n > 0 else None


def signed_windows(scalar_bits: int, c: int) -> int:
    """Digit windows of width ``c`` a scalar of ``scalar_bits`` takes: signed digits, one spare bit for the last carry."""
    return math.ceil((scalar_bits + 1) / c)


def window_cost(n: int, scalar_bits: int, c: int, model: tuple[float, float] = BALANCED_WINDOW_MODEL,
                shared_buckets: bool = False, table_sets: int = 1) -> float:
    """The window cost model's price (above; in mixed additions) of an MSM of ``n`` scalars at width ``c``: over plain
    points (a set of buckets a window), or ``shared_buckets``, over a fixed-base table's ``table_sets`` sets."""
    spread, bucket_cost = model
    buckets, windows = 1 << (c - 1), signed_windows(scalar_bits, c)
    if shared_buckets:  # bucket sets, entries of each
        sets = min(table_sets, windows)
        entries = n * windows // sets
    else:
        sets, entries = windows, n
    return sets * (entries * (1 + spread / math.sqrt(max(entries, 1) / buckets)) + bucket_cost * buckets)


def plan_msm(n: int, scalar_bits: int, c: int | None = None, cache_bytes: int | None = None,
             model: tuple[float, float] = BALANCED_WINDOW_MODEL, shared_buckets: bool = False,
             table_sets: int = 1, measured: bool = True) -> MsmPlan:
    """Window width: MEASURED_WIDTHS' where a sweep measured this size (plain MSMs under the balanced model), else
    the one minimising the cost ``model`` (spread, bucket_cost; above), among those whose
    per-bucket tables (one uint32 a bucket: counts, offsets, chunk offsets) fit ``cache_bytes`` (the
    device's L2) when given. Past L2 the digits' atomics and every thread's search of the chunk offsets
    go to DRAM: at 2^26 the additions-only choice c = 22 (100 MB a table) took 698 ms (BLS12-381 G1,
    random) against 594 at c = 20 (27 MB) and 577 at c = 19, same call (bench/NOTES.md, session 8).
    ``shared_buckets``: an MSM over a fixed-base table (``FixedBaseTable``), whose windows share
    ``table_sets`` sets of buckets (1: one set, every window's entries meet in it and its cost is paid once;
    S: windows w = S j + s in set s, the table holding every S-th window); ``n_windows`` stays the digits',
    and the reduction runs over S windows (``seg_len`` sized for them). Its widths are the plain plan's
    candidates (W 2^(c-1) inside ``cache_bytes``): wider ones measured slower at 2^25 and 2^26 (bucket sums
    and sort grow faster than level 0 shrinks, bench/NOTES.md session 27). ``measured=False``: the model's width
    even where MEASURED_WIDTHS has one (bench.gpu_stage --model-widths compares the two in one call)."""
    if shared_buckets and table_sets < 1:
        raise ValueError(f"a fixed-base plan needs at least one bucket set, not {table_sets}")

    def fits(cc: int) -> bool:  # the per-bucket counters inside the cache
        return cache_bytes is None or 4 * signed_windows(scalar_bits, cc) << (cc - 1) <= cache_bytes

    def cost(cc: int) -> float:
        return window_cost(n, scalar_bits, cc, model, shared_buckets, table_sets)
    if c is None and measured and not shared_buckets and model == BALANCED_WINDOW_MODEL:
        c = measured_width(n, scalar_bits)
        if c is not None and not fits(c):
            c = None  # a cache smaller than the H200's: the model's widths that fit it
    if c is None:
        widths = [cc for cc in range(2, 23) if fits(cc)]
        c = min(widths or range(2, 23), key=cost)
    nb = 1 << (c - 1)
    w = signed_windows(scalar_bits, c)
    sets = min(table_sets, w) if shared_buckets else 0
    reduced = sets or w  # windows the reduction runs over
    seg = 1
    while seg < nb and reduced * nb // seg > SEGMENT_THREADS:
        seg <<= 1
    return MsmPlan(n, c, w, nb, seg, sets)


@dataclass
class FixedBaseTable:
    """2^(c S j) P_i for every table window j < ``plan.table_windows`` (S = ``plan.table_sets``) and row i <
    ``n``, affine, window-major (row j n + i): ``MsmRunner.build_table``. Rows below ``lead`` are the point
    at infinity (C's table, by signal: its points start past the public signals), so window 0 from row
    ``lead`` on is the points themselves. VRAM: table_windows x n points, e.g. 21 GB for 2^24 BLS12-381 G1
    points at c = 20 and S = 1 (a key's tables are counted in its placement: CudaBackend.place_key)."""
    g2: bool
    plan: MsmPlan
    n: int
    d_table: object
    lead: int = 0

    def free(self) -> None:
        self.d_table.free()


@dataclass(frozen=True)
class DeferredWindows:
    """An MSM queued up to its window sums, which wait (contiguous, top window last) at ``d_windows``
    for ``MsmRunner.enqueue_combine``; the result then goes to ``d_out``."""
    g2: bool
    d_windows: int
    n_windows: int
    c: int
    d_out: int


@dataclass
class SortedDigits:
    """``MsmRunner.sort``'s output: the digits of ``n`` scalars grouped by bucket under ``plan`` (entries:
    point index, sign in bit 31; bucket offsets, the count at [n_buckets]). The MSMs of one scalar vector
    over several point sets (a partition's A, B1, B2 and C) read it alike: nothing after the sort writes it.
    Its owner frees it (stream-ordered: after the work queued so far)."""
    plan: MsmPlan
    n: int
    d_offsets: object
    d_entries: object
    stride: int = 0  # ``sort_fixed``'s: entries into tables of this many rows a window (0: ``sort``'s)

    def free(self) -> None:
        self.d_entries.free()
        self.d_offsets.free()


@dataclass
class BucketSums:
    """The bucket sums of an MSM whose points come in pieces (``MsmRunner.start_buckets``): XYZZ
    points, ``plan.n_buckets`` of them on the device, each piece's added in (``add_piece``)."""
    g2: bool
    plan: MsmPlan
    d_buckets: object

    def free(self) -> None:
        self.d_buckets.free()


COMBINE_BATCH = 4  # MSMs one msm_combine_windows_batch launch combines (its out0..out3)


class MsmRunner:
    def __init__(self, kernels: CurveKernels, allocator, stream, g1_min_blocks: int | None = None) -> None:
        self.kernels = kernels
        self.curve = kernels.curve
        self.allocator = allocator
        self.stream = stream
        self.last_plan: MsmPlan | None = None
        # blocks per SM the G1 bucket kernel's registers must allow: 1, 3, 4 or 5 (bench/NOTES.md, MSM v2
        # and v3, session 26). None: per curve as measured (launch.G1_MIN_BLOCKS; CudaOptions.msm_g1_min_blocks).
        self.g1_min_blocks = g1_min_blocks or G1_MIN_BLOCKS.get(self.curve.name, 5)
        # G2: the field type of its kernels (launch.G2_FIELD: "fq2_pair_t", two threads a point, or
        # "fq2_t") and the pair kernel's occupancy variant (launch.G2_MIN_BLOCKS).
        self.g2_field = G2_FIELD
        self.g2_min_blocks = G2_MIN_BLOCKS.get(self.curve.name, 3)
        # Level 0 of the bucket sums: flat (every thread the same number of entries across bucket boundaries) or
        # chunked (at most that many of one bucket a thread). None: per group as measured (launch.LEVEL0_CHUNKED);
        # True / False: both groups (bench/gpu_msm.py --level0, the tests).
        self.level0_flat: bool | None = None
        self.level0_entries: int | None = None  # entries a thread at level 0 (None: level0_chunk; tests set it)
        # (curve, group) pairs whose level 0 runs chunked where not forced (launch.LEVEL0_CHUNKED: none; benches
        # set session 54's {("bls12381", "G2")} beside it)
        self.level0_chunked = set(LEVEL0_CHUNKED)
        # The bucket sums over the lazy form of Fq (launch.LAZY_FIELDS: values in [0, 2p) inside a thread), where
        # the variant has a lazy build. None: lazy but for launch.PLAIN_SUMS (as measured); True / False: both
        # groups (benches compare, tests check both).
        self.lazy: bool | None = None
        self.cache_bytes = getattr(getattr(kernels, "device", None), "l2_bytes", None)  # window widths whose tables fit L2
        self.window_model = BALANCED_WINDOW_MODEL  # plan_msm's (spread, bucket cost); bench.gpu_stage sets others
        self.measured_widths = True  # plan_msm's MEASURED_WIDTHS where they hold (False: the model's; benches compare)
        # The digit sort: binned (two passes whose writes stay together, pippenger.cuh) or ranks and one
        # scatter (the session 13 sort). None: binned from BINNED_SORT_FROM_ENTRIES digit slots; True /
        # False: always or never (benches and tests).
        self.binned_sort: bool | None = None
        self.max_bin_bits = 31  # most low bucket bits a bin spans (tests lower it: many bins at small sizes)
        # One digit sort for a partition's A, B1, B2 and C MSMs (the same scalars), held until C's has read it
        # (CudaBackend._enqueue_msms, CudaOptions.msm_shared_sort); scratch_bytes counts it then.
        self.shared_sort = False
        # Scalars given in host memory (sort's h_scalars) come in over copy_stream in up to scalar_pieces pieces, each
        # counted as it arrives (launch.SCALAR_PIECES; CudaBackend.runtime sets the stream). None or 1: copied whole
        # on the runner's stream, then counted (benches compare).
        self.copy_stream = None
        self.scalar_pieces = SCALAR_PIECES
        self.scalar_piece_min = SCALAR_PIECE_MIN  # tests lower it: pieces at small sizes
        # The levels over level 0's pieces: "in_place" (_sum_pieces: one item a bucket, a tree for hot buckets, no
        # fresh buffers) or "tree" (every bucket through levels of LEVEL_CHUNK partials, each into a fresh buffer:
        # the scheme before session 56, kept for the benches' same-call comparison).
        self.partial_levels = "in_place"
        self.profile = False  # when set, last_phases_ms gets CUDA-event times per phase
        self.last_phases_ms: dict[str, float] = {}
        self._marks: list = []

    def _mark(self, name: str) -> None:
        if self.profile:
            from .streams import Event
            self._marks.append((name, Event().record(self.stream)))

    def _collect_marks(self) -> None:
        if self.profile and self._marks:
            self._marks[-1][1].synchronize()
            self.last_phases_ms = {name: ev.elapsed_ms(prev)
                                   for (_, prev), (name, ev) in zip(self._marks, self._marks[1:])}
            for _, ev in self._marks:
                ev.close()
        self._marks = []

    def _field(self, g2: bool) -> str:
        return self.g2_field if g2 else "fq_t"

    def _lanes(self, g2: bool) -> int:
        """Threads per point in the bucket kernels (ff/fq2_pair.cuh holds a G2 point over two)."""
        return 2 if g2 and self.g2_field == "fq2_pair_t" else 1

    def _level0_variant(self, g2: bool) -> tuple[str, int]:
        field = self._field(g2)
        return field, self.g1_min_blocks if not g2 else self.g2_min_blocks if field == "fq2_pair_t" else 1

    def _sum_field(self, g2: bool) -> str:
        """The field type of the bucket sums' kernels (level 0 and the partial levels): the lazy form of the
        variant's field where ``lazy`` is set and its level-0 kernel is built (launch.LAZY_FIELDS), else the
        plain one."""
        field = self._field(g2)
        lazy = LAZY_FIELDS.get(field)
        wanted = self.lazy if self.lazy is not None else (self.curve.name, "G2" if g2 else "G1") not in PLAIN_SUMS
        return lazy if wanted and lazy and self._level0_name(g2, lazy) in BUILT_KERNELS else field

    def _level0_name(self, g2: bool, field: str) -> str:
        blocks = self._level0_variant(g2)[1]
        return f"msm_accumulate_flat<{field}, {blocks}>" if self._flat(g2) else f"msm_accumulate<{field}, true, {blocks}>"

    def _flat(self, g2: bool) -> bool:
        """Level 0's scheme: ``level0_flat`` when set, else chunked for the pairs of ``level0_chunked`` and flat
        for the rest; the chunked kernel is built for the default occupancy variants only, so other variants run
        flat (and forcing chunked on one of them is an error)."""
        field, blocks = self._level0_variant(g2)
        built = (field, blocks) in G2_LEVEL0_CHUNKED_BUILT if g2 else blocks in G1_LEVEL0_CHUNKED_BUILT
        if self.level0_flat is not None:
            if not self.level0_flat and not built:
                raise ValueError(f"level 0 chunked is not built for {'G2' if g2 else 'G1'} {field} at {blocks} blocks "
                                 f"an SM (launch.G1_LEVEL0_CHUNKED_BUILT, G2_LEVEL0_CHUNKED_BUILT)")
            return self.level0_flat
        return (self.curve.name, "G2" if g2 else "G1") not in self.level0_chunked or not built

    def _affine_accumulate(self, g2: bool) -> str:
        """The level-0 bucket kernel (affine points in), at this runner's occupancy variant and scheme."""
        return self._level0_name(g2, self._sum_field(g2))

    def _launch(self, expr, n_items, block, args, lanes: int = 1):
        """A grid-stride kernel over ``n_items`` items of ``lanes`` threads each."""
        self.kernels.launch(expr, grid_for(n_items * lanes, block), block, args, self.stream)

    def exclusive_scan(self, d_in: int, n: int, d_out: int) -> None:
        """d_out[0..n] = exclusive prefix sums of d_in[0..n), d_out[n] = total (all on the device)."""
        tiles = (n + SCAN_TILE - 1) // SCAN_TILE
        with self.allocator.alloc(4 * (tiles + 1), "scan tile sums") as d_tiles:
            k, s = self.kernels, self.stream
            k.launch("scan_tile_sums", tiles, SCAN_THREADS, (d_in, n, d_tiles.ptr), s)
            k.launch("scan_tile_offsets", 1, SCAN_THREADS, (d_tiles.ptr, tiles), s)
            k.launch("scan_apply", tiles, SCAN_THREADS, (d_in, n, d_tiles.ptr, d_out), s)

    def _chunk_offsets(self, d_offsets, n_buckets: int, chunk: int, what: str, flat: bool = False):
        """Offsets of the chunks of at most ``chunk`` entries per bucket (``flat``: of the pieces of
        level 0's ranges of ``chunk`` entries); their count stays on the device, at index ``n_buckets``."""
        d_chunk_off = self.allocator.alloc(4 * (n_buckets + 1), what)
        counts = "msm_piece_counts" if flat else "msm_chunk_counts"
        with self.allocator.alloc(4 * n_buckets, "chunk counts") as d_counts:
            self._launch(counts, n_buckets, CHUNK_COUNT_BLOCK, (d_offsets.ptr, n_buckets, chunk, d_counts.ptr))
            self.exclusive_scan(d_counts.ptr, n_buckets, d_chunk_off.ptr)
        return d_chunk_off

    def _level0_chunk(self, entries: int, g2: bool) -> int:
        """Entries a thread at level 0: the override (tests, bench) or ``level0_chunk``'s."""
        return self.level0_entries or level0_chunk(entries, g2, self._flat(g2))

    def plan(self, n: int, g2: bool, c: int | None = None) -> MsmPlan:
        return plan_msm(n, self.curve.fr.bits, c, self.cache_bytes, self.window_model,
                        measured=self.measured_widths)

    def scratch_bytes(self, n: int, g2: bool, held_digits: bool = False, c: int | None = None,
                      fixed: bool = False, table_sets: int = 1) -> int:
        """Peak device bytes ``enqueue`` allocates for an MSM of ``n`` scalars (the bounds it sizes by)
        at window width ``c`` (None: its plan's); ``held_digits``: its sorted digits outlive its bucket
        sums (``shared_sort``: later MSMs read them); ``fixed``: ``enqueue_fixed`` over a table of ``n``
        rows and ``table_sets`` bucket sets (its sort and sums over those sets' buckets only)."""
        plan = self.plan_fixed(n, c, table_sets) if fixed else self.plan(n, g2, c)
        nb, xyzz = plan.sort_buckets, self.xyzz_bytes(g2)  # the sort's and the sums' buckets
        reduced = plan.table_sets or plan.n_windows  # windows (a table's: bucket sets) the reduction runs over
        entries = n * plan.n_windows
        chunk = self._level0_chunk(entries, g2)
        chunks = -(-entries // chunk) + nb
        scan = 4 * (nb // SCAN_TILE + 2)
        sort = 8 * entries + 4 * (nb + 1) + 4 * nb + scan + 4 * nb  # entries and their ranks or binned words; bins
        level0 = 4 * entries + 4 * (nb + 1) + 4 * nb + scan + xyzz * chunks
        held = 4 * entries if held_digits else 0  # the entries; their offsets are in the constant below
        tree = self.partial_levels == "tree"  # its levels' fresh buffers beside the pieces
        levels = held + xyzz * (chunks + (min(chunks, -(-chunks // LEVEL_CHUNK) + nb) if tree else 0)) \
            + 3 * 4 * (nb + 1) + scan
        segments = held + xyzz * reduced * plan.window_segments + xyzz * chunks
        return 8 * (nb + 1) + max(sort, level0, levels, segments)

    def table_bytes(self, g2: bool, n: int, c: int | None = None, table_sets: int = 1) -> int:
        """Device bytes of ``build_table``'s table of ``n`` rows."""
        return self.xyzz_bytes(g2) // 2 * self.plan_fixed(n, c, table_sets).table_windows * n

    def table_build_bytes(self, g2: bool, n: int) -> int:
        """Scratch ``build_table`` takes beside the table: one piece of a window, XYZZ."""
        return self.xyzz_bytes(g2) * min(n, TABLE_BUILD_ROWS)

    def xyzz_bytes(self, g2: bool) -> int:
        return 4 * 2 * self.curve.fq.limbs * (2 if g2 else 1) * 4

    def max_windows(self) -> int:
        """Most windows an MSM's plan can have (c >= 2, signed digits of Fr)."""
        return signed_windows(self.curve.fr.bits, 2)

    def window_sums_bytes(self, g2: bool) -> int:
        """Room for one MSM's window sums (``enqueue``'s ``d_windows``), at any size."""
        return self.max_windows() * self.xyzz_bytes(g2)

    def sort(self, d_scalars: int, n: int, d_point_index: int = 0, c: int | None = None,
             h_scalars: np.ndarray | None = None) -> SortedDigits:
        """Steps 1-3 for ``n`` > 0 scalars, queued: their digits grouped by bucket, for ``enqueue(...,
        digits=)`` of every MSM over these scalars (the caller frees it after the last). With ``h_scalars``
        (the same scalars in host memory, page-locked for the copy to overlap and kept until it is done)
        they are first copied to ``d_scalars``, in pieces counted as they arrive (``_count_digits``)."""
        plan = self.plan(n, False, c)  # a plan does not depend on the group
        alloc = self.allocator
        d_offsets = alloc.alloc(4 * (plan.n_buckets + 1), "msm bucket offsets")
        try:
            with alloc.alloc(4 * plan.n_buckets, "msm bucket counts") as d_counts:
                self._mark("start")
                d_entries = self._sort_digits(plan, d_scalars, n, d_point_index, d_counts, d_offsets,
                                              h_scalars=h_scalars)
        except BaseException:
            d_offsets.free()
            raise
        return SortedDigits(plan, n, d_offsets, d_entries)

    def enqueue(self, g2: bool, d_points: int, d_scalars: int, n: int, d_out: int, c: int | None = None,
                d_point_index: int = 0, d_windows: int = 0,
                digits: SortedDigits | None = None, skip_below: int = 0,
                h_scalars: np.ndarray | None = None) -> DeferredWindows | None:
        """Queue sum scalars[i] points[i] on the stream; the XYZZ result (raw Montgomery words,
        ``xyzz_bytes(g2)``) is written to ``d_out``. With ``d_point_index``, scalar i multiplies
        point d_point_index[i] (the tail of a split witness). Nothing here waits for the device:
        counts stay on the device and buffers are sized by upper bounds (pippenger.cuh, step 4).
        With ``d_windows`` (``window_sums_bytes(g2)`` of device memory) the window sums are copied
        there instead of combined, and the returned record goes to ``enqueue_combine`` later: a
        partition's MSMs then share one combination's latency (pippenger.cuh, step 6). With
        ``digits`` (``sort`` of these scalars and point indices, not freed here) the sort is skipped.
        Digits of points below ``skip_below`` add nothing and their points are never read (C's MSM over
        A's digits, from a base shifted back past the public signals). ``h_scalars``: the scalars in host
        memory, copied to ``d_scalars`` as ``sort`` says (not with ``digits``)."""
        if h_scalars is not None and digits is not None:
            raise ValueError("host scalars given with digits sorted already: nothing would read them")
        if n == 0:
            self.last_plan = self.plan(n, g2, c)
            check_memset_zero(d_out, self.xyzz_bytes(g2), self.stream)  # ZZ = 0: the point at infinity
            return None
        own = digits is None
        if own:
            digits = self.sort(d_scalars, n, d_point_index, c, h_scalars=h_scalars)
        elif digits.n != n:
            raise ValueError(f"sorted digits of {digits.n} scalars given to an MSM of {n}")
        elif digits.stride:
            raise ValueError("digits sorted for a fixed-base table given to a plain MSM")
        elif digits.plan != (planned := self.plan(n, g2, c)):
            raise ValueError(f"sorted digits of plan {digits.plan} given to an MSM planned {planned}")
        plan = self.last_plan = digits.plan
        nb_total = plan.n_buckets
        entries_bound = n * plan.n_windows  # at most one nonzero digit per scalar and window
        chunk = self._level0_chunk(entries_bound, g2)
        try:
            # 4: chunked bucket sums, level 0 over affine points, then over partials
            d_partials, d_chunk_off = self._bucket_sums(g2, d_points, digits.d_entries, digits.d_offsets, nb_total,
                                                        entries_bound, n, chunk, skip_below)
        finally:
            if own:
                digits.free()  # stream-ordered: after the bucket sums read them
        try:
            return self._reduce_windows(g2, plan, d_partials.ptr, d_chunk_off.ptr, d_out, d_windows)
        finally:
            d_partials.free()
            d_chunk_off.free()

    def _reduce_windows(self, g2: bool, plan: MsmPlan, d_partials: int, d_chunk_off: int, d_out: int,
                        d_windows: int) -> DeferredWindows | None:
        """Steps 5-6 from the bucket sums (bucket b's at partials[chunk_off[b]] when chunk_off[b + 1] >
        chunk_off[b]): per-window running sums over segments, segment sums, then Horner over the windows
        into ``d_out``, or the window sums to ``d_windows`` (``enqueue``)."""
        xyzz_bytes = self.xyzz_bytes(g2)
        field, lanes = self._field(g2), self._lanes(g2)
        segs = plan.window_segments
        with self.allocator.alloc(xyzz_bytes * plan.n_windows * segs, "msm segment sums") as d_seg:
            self._launch(f"msm_bucket_segments<{field}>", plan.n_windows * segs, REDUCE_BLOCK,
                         (d_seg.ptr, d_partials, d_chunk_off, plan.buckets_per_window,
                          plan.seg_len, plan.n_windows), lanes)
            self._mark("bucket running sums")
            half = segs // 2
            while half >= 1:
                self._launch(f"msm_reduce_halves<{field}>", plan.n_windows * half, REDUCE_BLOCK,
                             (d_seg.ptr, plan.n_windows, segs, half), lanes)
                half //= 2
            self._mark("segment sums")
            if d_windows:
                self._copy_window_sums(d_windows, d_seg.ptr, segs * xyzz_bytes, xyzz_bytes, plan.n_windows)
                return DeferredWindows(g2, d_windows, plan.n_windows, plan.c, d_out)
            self.kernels.launch(f"msm_combine_windows<{field}>", 1, lanes,
                                (d_out, d_seg.ptr, segs, plan.n_windows, plan.c), self.stream)
            self._mark("window combination")
            return None

    # -- an MSM whose points come in pieces ----------------------------------------------------
    def start_buckets(self, g2: bool, n: int, c: int | None = None) -> BucketSums:
        """Queue the zeroed bucket sums (all infinity) of an MSM of ``n`` points that will come in
        pieces (``add_piece``, then ``finish_buckets``): the whole MSM's windows, so that the pieces
        cost the additions of one MSM of ``n``, not each its own windows' worth."""
        plan = self.plan(n, g2, c)
        d_buckets = self.allocator.alloc(self.xyzz_bytes(g2) * plan.n_buckets, "msm bucket sums")
        d_buckets.memset32(0, self.stream)  # ZZ = 0: infinity
        return BucketSums(g2, plan, d_buckets)

    def add_piece(self, sums: BucketSums, d_points: int, d_scalars: int, n: int) -> None:
        """Queue the digits of ``n`` scalars and their points (``d_points[i]`` for ``d_scalars[i]``)
        into ``sums``: sorted and summed under the whole MSM's plan, then each bucket's sum added to
        its running total (msm_merge_buckets)."""
        if n == 0:
            return
        g2, plan = sums.g2, sums.plan
        digits = self.sort(d_scalars, n, 0, plan.c)
        entries_bound = n * plan.n_windows
        try:
            d_partials, d_chunk_off = self._bucket_sums(g2, d_points, digits.d_entries, digits.d_offsets,
                                                        plan.n_buckets, entries_bound, n,
                                                        self._level0_chunk(entries_bound, g2))
        finally:
            digits.free()  # stream-ordered: after the bucket sums read them
        try:
            self._launch(f"msm_merge_buckets<{self._field(g2)}>", plan.n_buckets, REDUCE_BLOCK,
                         (sums.d_buckets.ptr, d_partials.ptr, d_chunk_off.ptr, plan.n_buckets), self._lanes(g2))
            self._mark("merge buckets")
        finally:
            d_partials.free()
            d_chunk_off.free()

    def finish_buckets(self, sums: BucketSums, d_out: int) -> None:
        """Queue the MSM's result from its bucket sums into ``d_out`` (steps 5-6 over buckets that are
        all there: an offset table 0, 1, .., n_buckets), then free them (stream-ordered)."""
        plan = sums.plan
        try:
            with self.allocator.alloc(4 * (plan.n_buckets + 1), "msm dense bucket offsets") as d_ident:
                self._launch("msm_iota", plan.n_buckets + 1, SCAN_THREADS, (d_ident.ptr, plan.n_buckets + 1))
                self._reduce_windows(sums.g2, plan, sums.d_buckets.ptr, d_ident.ptr, d_out, 0)
        finally:
            sums.free()

    def piece_scratch_bytes(self, n: int, piece: int, g2: bool) -> int:
        """Peak device bytes of an MSM of ``n`` points in pieces of at most ``piece`` (``start_buckets``
        to ``finish_buckets``): the bucket sums throughout, and the larger of one piece's sort and sums
        (under the whole MSM's window width) and the finishing steps."""
        plan = self.plan(n, g2)
        buckets = self.xyzz_bytes(g2) * plan.n_buckets
        finish = 4 * (plan.n_buckets + 1) + self.xyzz_bytes(g2) * plan.n_windows * plan.window_segments
        return buckets + max(self.scratch_bytes(min(piece, n), g2, c=plan.c), finish)

    def bin_bits(self, n: int, plan: MsmPlan) -> tuple[int, int] | None:
        """(pb, fb) of the binned sort for ``n`` scalars: bits of a scalar's index, low bucket bits a
        bin spans (a binned word holds both and the sign); None where they do not fit 32 bits or the
        scatter sorts (``binned_sort``, ``BINNED_SORT_FROM_ENTRIES``)."""
        binned = self.binned_sort
        if binned is None:
            binned = n * plan.n_windows >= BINNED_SORT_FROM_ENTRIES
        pb = max(1, (n - 1).bit_length())
        fb = min(plan.c - 1, 31 - pb, self.max_bin_bits)
        return (pb, fb) if binned and fb >= 0 else None

    def _sort_digits(self, plan: MsmPlan, d_scalars: int, n: int, d_point_index: int, d_counts, d_offsets,
                     table_stride: int = 0, h_scalars: np.ndarray | None = None):
        """Steps 1-3: the bucket counts, their offsets (``d_offsets``, total at [n_buckets]) and the
        entries (point index, sign in bit 31) grouped by bucket, returned as a new buffer. Binned
        (pippenger.cuh, msm_bin_digits: two passes whose writes stay near each other) where
        ``bin_bits`` allows, else ranks and one scatter (msm_scatter_digits). ``table_stride``: the keys
        and entries of a fixed-base table of that many points a window (``enqueue_fixed``; ranks and
        the scatter only). ``h_scalars``: copied in first (``_count_digits``)."""
        alloc, nb, s = self.allocator, plan.sort_buckets, self.stream
        table_sets = plan.table_sets if table_stride else 0  # the table's keys (pippenger.cuh, table_key) or plain
        entries_bound = n * plan.n_windows  # at most one nonzero digit per scalar and window
        bits = None if table_stride else self.bin_bits(n, plan)
        # the scatter reads each digit's rank within its bucket; the binned sort places by cursors instead
        d_ranks = alloc.alloc(4 * entries_bound, "msm digit ranks") if bits is None else None
        try:
            d_counts.memset32(0, s)
            self._count_digits(plan, d_scalars, n, d_counts.ptr, d_ranks.ptr if d_ranks is not None else 0,
                               table_sets, h_scalars)
            self.exclusive_scan(d_counts.ptr, nb, d_offsets.ptr)
            self._mark("count digits")
            if bits is None:
                d_entries = self._new_entries(entries_bound, lambda d: self._launch(
                    "msm_scatter_digits", n, DIGIT_BLOCK,
                    (d_scalars, n, plan.c, plan.n_windows, d_offsets.ptr, d_ranks.ptr, d, d_point_index,
                     table_stride, table_sets)))
                self._mark("scatter digits")
                return d_entries
        finally:
            if d_ranks is not None:
                d_ranks.free()  # stream-ordered: after the scatter
        pb, fb = bits
        n_bins = nb >> fb
        with alloc.alloc(4 * n_bins, "msm bin cursors") as d_bins, \
                alloc.alloc(4 * entries_bound, "msm binned digits") as d_binned:
            self._launch("msm_bin_cursors", n_bins, CHUNK_COUNT_BLOCK, (d_offsets.ptr, n_bins, fb, d_bins.ptr))
            self._launch("msm_bin_digits", n, DIGIT_BLOCK,
                         (d_scalars, n, plan.c, plan.n_windows, pb, fb, d_bins.ptr, d_binned.ptr))
            self._mark("bin digits")
            # the counts are spent: they become each bucket's cursor, from its offset
            check(driver.cuMemcpyDtoDAsync(d_counts.ptr, d_offsets.ptr, 4 * nb, s.handle), "cuMemcpyDtoDAsync")
            d_entries = self._new_entries(entries_bound, lambda d: self.kernels.launch(
                "msm_place_digits", grid_for(-(-entries_bound // PLACE_TILE), 1), PLACE_BLOCK,
                (d_binned.ptr, d_offsets.ptr, n_bins, pb, fb, d_counts.ptr, d, d_point_index), s))
            self._mark("place digits")
            return d_entries

    def _count_digits(self, plan: MsmPlan, d_scalars: int, n: int, d_counts: int, d_ranks: int, table_sets: int,
                      h_scalars: np.ndarray | None) -> None:
        """Step 1: the bucket counts (and the ranks, where ``d_ranks``). With ``h_scalars`` the scalars are
        copied to ``d_scalars`` first: over ``copy_stream`` in ``scalar_pieces``, each counted on the runner's
        stream once it has arrived while the next is in flight, or, one piece or no copy stream, whole on
        the runner's stream. The copies start after the work queued before on the runner's stream (which
        may still read ``d_scalars``), and its later work (the scatter reads every scalar) follows the last."""
        pieces, src = [(0, n)], None
        if h_scalars is not None:
            src = host_scalars_address(h_scalars, n)
            if self.copy_stream is not None:
                pieces = scalar_pieces(n, self.scalar_pieces, self.scalar_piece_min)
        beside = len(pieces) > 1  # the copies on copy_stream, each piece's count waiting for its own
        copies, events = self.copy_stream if beside else self.stream, []
        try:
            if beside:
                events.append(Event(timing=False).record(self.stream))
                copies.wait(events[-1])
            for first, count in pieces:
                at = first * SCALAR_BYTES
                if src is not None:
                    check(driver.cuMemcpyHtoDAsync(d_scalars + at, src + at, count * SCALAR_BYTES, copies.handle),
                          "cuMemcpyHtoDAsync")
                if beside:
                    events.append(Event(timing=False).record(copies))
                    self.stream.wait(events[-1])
                self._launch("msm_count_digits", count, DIGIT_BLOCK,
                             (d_scalars + at, count, plan.c, plan.n_windows, d_counts,
                              d_ranks + 4 * first if d_ranks else 0, table_sets, n))
        except BaseException:
            if beside:  # the caller frees d_scalars in the runner's stream order: not before a copy queued here
                events.append(Event(timing=False).record(copies))
                self.stream.wait(events[-1])
            raise
        finally:
            for event in events:  # a queued wait holds what it waits for; destroying the handle frees it after
                event.close()

    def _new_entries(self, entries_bound: int, launch) -> object:
        """A new buffer for the sorted entries, written by ``launch(its address)``; freed if that fails."""
        d_entries = self.allocator.alloc(4 * entries_bound, "msm digit entries")
        try:
            launch(d_entries.ptr)
        except BaseException:
            d_entries.free()
            raise
        return d_entries

    def _copy_window_sums(self, d_dst: int, d_seg: int, src_pitch: int, width: int, rows: int) -> None:
        """Window w's sum (row w of the segment sums, ``src_pitch`` bytes apart) to d_dst[w], one copy."""
        copy = driver.CUDA_MEMCPY2D()
        copy.srcMemoryType = copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.srcDevice, copy.srcPitch = d_seg, src_pitch
        copy.dstDevice, copy.dstPitch = d_dst, width
        copy.WidthInBytes, copy.Height = width, rows
        check(driver.cuMemcpy2DAsync(copy, self.stream.handle), "cuMemcpy2DAsync")

    def enqueue_combine(self, deferred, stream=None) -> None:
        """Combine the windows of ``deferred`` MSMs (``enqueue`` with ``d_windows``; None entries are
        skipped): one launch per group and COMBINE_BATCH of them, each MSM on its own warp (one thread, two
        for a G2 pair), so they pay one Horner chain's latency together. On ``stream`` if given (the
        caller orders it after the MSMs), else the runner's."""
        items = [d for d in deferred if d is not None]
        for g2 in (False, True):
            group = [d for d in items if d.g2 == g2]
            for start in range(0, len(group), COMBINE_BATCH):
                batch = group[start:start + COMBINE_BATCH]
                pad = [0] * (COMBINE_BATCH - len(batch))
                self.kernels.launch(f"msm_combine_windows_batch<{self._field(g2)}>", 1, len(batch) * 32,  # a warp an MSM
                                    (*[d.d_out for d in batch], *pad, *[d.d_windows for d in batch], *pad,
                                     *[d.n_windows | d.c << 16 for d in batch], *pad, len(batch)),
                                    stream or self.stream)

    def _bucket_sums(self, g2: bool, d_points: int, d_entries, d_offsets, n_buckets: int, entries_bound: int,
                     per_bucket_bound: int, chunk: int, skip_below: int = 0):
        """Sum each bucket's entries (affine points, sign in bit 31) into one XYZZ partial: level 0
        over ranges of ``chunk`` entries (flat or chunked: ``level0_flat``), then its pieces summed
        (``partial_levels``: in place, ``_sum_pieces``; "tree": levels of LEVEL_CHUNK partials into fresh buffers
        until the bound on a bucket's entries leaves one). Returns (partials, chunk offsets): bucket b's sum is
        partials[offsets[b]] when offsets[b + 1] > offsets[b]. The caller frees both."""
        alloc, xyzz_bytes, lanes = self.allocator, self.xyzz_bytes(g2), self._lanes(g2)
        flat = self._flat(g2)
        d_chunk_off = self._chunk_offsets(d_offsets, n_buckets, chunk, "msm chunk offsets", flat)
        # pieces (flat) or chunks: at most one a range of ``chunk`` entries plus one a bucket
        chunks_bound = -(-entries_bound // chunk) + n_buckets
        try:
            d_partials = alloc.alloc(xyzz_bytes * chunks_bound, "msm partial sums")
        except BaseException:
            d_chunk_off.free()
            raise
        self._launch(self._affine_accumulate(g2), chunks_bound, ACC_BLOCK,
                     (d_partials.ptr, d_points, d_entries.ptr, 0, d_offsets.ptr, d_chunk_off.ptr,
                      n_buckets, chunk, d_chunk_off.offset(4 * n_buckets), skip_below), lanes)
        self._mark("accumulate affine")
        per_bucket = level0_pieces(per_bucket_bound, chunk, flat)
        if self.partial_levels == "tree":
            d_partials, d_chunk_off = self._tree_levels(g2, d_partials, d_chunk_off, n_buckets, chunks_bound,
                                                        per_bucket)
        else:
            try:
                self._sum_pieces(g2, d_partials.ptr, d_chunk_off.ptr, n_buckets, chunks_bound, per_bucket)
            except BaseException:
                d_partials.free()
                d_chunk_off.free()
                raise
        self._mark("combine partials")
        return d_partials, d_chunk_off

    def _tree_levels(self, g2: bool, d_partials, d_chunk_off, n_buckets: int, chunks_bound: int, per_bucket: int):
        """The levels before session 56 (``partial_levels = "tree"``): every bucket's partials in chunks of
        LEVEL_CHUNK into a fresh buffer, a level at a time, until ``per_bucket`` (the bound) leaves one. Takes the
        level-0 partials and offsets (freed here, also on failure); returns the last level's."""
        field, lanes, xyzz_bytes = self._sum_field(g2), self._lanes(g2), self.xyzz_bytes(g2)
        try:
            while per_bucket > 1:
                d_next_off = self._chunk_offsets(d_chunk_off, n_buckets, LEVEL_CHUNK, "msm chunk offsets")
                next_bound = min(chunks_bound, -(-chunks_bound // LEVEL_CHUNK) + n_buckets)
                d_next = self.allocator.alloc(xyzz_bytes * next_bound, "msm partial sums")
                self._launch(f"msm_accumulate<{field}, false, 1>", next_bound, ACC_BLOCK,
                             (d_next.ptr, 0, 0, d_partials.ptr, d_chunk_off.ptr, d_next_off.ptr,
                              n_buckets, LEVEL_CHUNK, d_next_off.offset(4 * n_buckets), 0), lanes)
                d_partials.free()  # frees wait for the work queued before them (memory.py)
                d_chunk_off.free()
                d_partials, d_chunk_off, chunks_bound = d_next, d_next_off, next_bound
                per_bucket = -(-per_bucket // LEVEL_CHUNK)
        except BaseException:
            d_partials.free()
            d_chunk_off.free()
            raise
        return d_partials, d_chunk_off

    def _sum_pieces(self, g2: bool, d_partials: int, d_piece_off: int, n_buckets: int, pieces_bound: int,
                    per_bucket: int) -> None:
        """Sum each bucket's level-0 pieces into its first, in place (pippenger.cuh, msm_sum_pieces): one item a
        bucket of 2..LEVEL_CHUNK pieces, the items sorted by their piece counts (a counting sort of the buckets, so
        a warp's lanes add as many each), then for hotter buckets a tree of chunks of LEVEL_CHUNK at each of
        ``hot_strides`` (``per_bucket``: the bound on a bucket's pieces), a level a count, a scan and a launch
        whose items exit at once where no bucket is hot. ``pieces_bound``: the bound on all buckets' pieces."""
        field, lanes, fan = self._sum_field(g2), self._lanes(g2), LEVEL_CHUNK
        grid = min(grid_for(n_buckets, PIECE_CLASS_BLOCK), PIECE_CLASS_GRID)
        with self.allocator.alloc(8 * (fan + 1), "msm piece classes") as d_classes, \
                self.allocator.alloc(4 * n_buckets, "msm buckets by pieces") as d_order:
            d_classes.memset32(0, self.stream)
            d_class_counts, d_cursor = d_classes.ptr, d_classes.offset(4 * (fan + 1))
            self.kernels.launch("msm_piece_class_counts", grid, PIECE_CLASS_BLOCK,
                                (d_piece_off, n_buckets, fan, d_class_counts), self.stream)
            self.kernels.launch("msm_piece_class_order", grid, PIECE_CLASS_BLOCK,
                                (d_piece_off, n_buckets, fan, d_class_counts, d_cursor, d_order.ptr), self.stream)
            self._launch(f"msm_sum_pieces<{field}>", n_buckets, ACC_BLOCK,
                         (d_partials, d_piece_off, d_order.ptr, d_class_counts, fan), lanes)
        strides = hot_strides(per_bucket, fan)
        if not strides:
            return
        with self.allocator.alloc(4 * (n_buckets + 1), "msm hot chunk offsets") as d_chunk_off, \
                self.allocator.alloc(4 * n_buckets, "chunk counts") as d_counts:
            for stride in strides:
                self._launch("msm_hot_chunk_counts", n_buckets, CHUNK_COUNT_BLOCK,
                             (d_piece_off, n_buckets, fan, stride, fan, d_counts.ptr))
                self.exclusive_scan(d_counts.ptr, n_buckets, d_chunk_off.ptr)
                self._launch(f"msm_sum_hot_chunks<{field}>", hot_chunks_bound(pieces_bound, fan, stride), ACC_BLOCK,
                             (d_partials, d_piece_off, d_chunk_off.ptr, n_buckets, stride, fan), lanes)

    def enqueue_point_sum(self, g2: bool, d_points: int, d_indices: int, count: int, d_out: int) -> None:
        """Queue sum_k points[indices[k]], k < count (the ones of a split witness: a batch addition,
        no windows) into ``d_out`` as an XYZZ point (``enqueue_point_sums`` of one)."""
        self.enqueue_point_sums(g2, [PointSum(d_points, d_indices, count, d_out)])

    def enqueue_point_sums(self, g2: bool, sums: "list[PointSum]", tables: "PairTables | None" = None) -> None:
        """Queue each point sum of ``sums`` (one group: G1 or G2) into its ``d_out``: the bucket sums
        above with a single bucket. Its count is known here, so every level's offsets are [0, entries]
        pairs written by the host, with no count, scan or allocation per level. One table of pairs and
        two ping-pong partial buffers serve the whole list, and each sum's last level stores into its
        ``d_out``: a streamed pass queues one list per partition and chunk, ~8 API calls a sum fewer
        than one call each (bench/NOTES.md, session 21). ``tables``: page-locked room the pairs are
        copied from (one copy); without it, memsets."""
        xyzz_bytes = self.xyzz_bytes(g2)
        for s in sums:
            if s.count == 0:
                check_memset_zero(s.d_out, xyzz_bytes, self.stream)
        sums = [s for s in sums if s.count]
        if not sums:
            return
        chunks = [self._level0_chunk(s.count, g2) for s in sums]
        levels = [point_sum_levels(s.count, chunk) for s, chunk in zip(sums, chunks)]
        pairs = np.zeros((sum(map(len, levels)), 2), dtype=np.uint32)  # pair k of a sum = [0, sizes[k]]
        at = np.cumsum([0] + [len(sizes) for sizes in levels])
        pairs[:, 1] = np.concatenate(levels)
        field, lanes, h = self._sum_field(g2), self._lanes(g2), self.stream.handle
        with self.allocator.alloc(pairs.nbytes, "point-sum offsets") as d_pairs:
            h_pairs = tables.put(pairs) if tables is not None else None
            if h_pairs is not None:
                check(driver.cuMemcpyHtoDAsync(d_pairs.ptr, h_pairs, pairs.nbytes, h), "cuMemcpyHtoDAsync")
            else:
                d_pairs.memset32(0, self.stream)
                for k, size in enumerate(pairs[:, 1]):
                    check(driver.cuMemsetD32Async(d_pairs.ptr + 8 * k + 4, int(size), 1, h), "cuMemsetD32Async")
            scratch = []  # level k's partials (k >= 1, not the last) in buffer (k - 1) % 2
            try:
                for k in (1, 2):
                    widest = max((sizes[k] for sizes in levels if len(sizes) > k + 1), default=0)
                    if widest:
                        scratch.append(self.allocator.alloc(xyzz_bytes * widest, "point-sum partials"))
                for s, sizes, first, chunk in zip(sums, levels, at, chunks):
                    d_at = d_pairs.ptr + 8 * int(first)
                    out = s.d_out if len(sizes) == 2 else scratch[0].ptr  # level 0 alone: straight into d_out
                    self._launch(self._affine_accumulate(g2), sizes[1], ACC_BLOCK,
                                 (out, s.d_points, s.d_indices, 0, d_at, d_at + 8, 1, chunk, d_at + 12, 0), lanes)
                    for k in range(2, len(sizes)):
                        src = out
                        out = s.d_out if k == len(sizes) - 1 else scratch[(k - 1) % 2].ptr
                        self._launch(f"msm_accumulate<{field}, false, 1>", sizes[k], ACC_BLOCK,
                                     (out, 0, 0, src, d_at + 8 * (k - 1), d_at + 8 * k, 1, LEVEL_CHUNK,
                                      d_at + 8 * k + 4, 0), lanes)
            finally:
                for buf in scratch:
                    buf.free()  # stream-ordered: after the launches that use them

    # -- fixed bases ---------------------------------------------------------------------------
    def plan_fixed(self, n: int, c: int | None = None, table_sets: int = 1) -> MsmPlan:
        return plan_msm(n, self.curve.fr.bits, c, self.cache_bytes, self.window_model, shared_buckets=True,
                        table_sets=table_sets)

    def build_table(self, g2: bool, d_points: int, n: int, c: int | None = None, lead: int = 0,
                    table_sets: int = 1) -> FixedBaseTable:
        """Queue the fixed-base table of ``n`` affine points for ``table_sets`` bucket sets (pippenger.cuh,
        fixed bases): window 0 the points, window j + 1 window j's doubled c S times (XYZZ) and made affine by
        batched inversion. ``lead``: that many rows of infinity before the points (``FixedBaseTable.lead``);
        the plan is that of a table of lead + n rows; ``c`` overrides its width."""
        rows = lead + n
        plan = self.plan_fixed(rows, c, table_sets)
        windows = plan.table_windows
        if windows * rows >= 1 << 31:
            raise ValueError(f"a table of {windows} x {rows} points does not fit the entries' 31 index bits")
        point_bytes = self.xyzz_bytes(g2) // 2
        field = self._field(g2)
        d_table = self.allocator.alloc(point_bytes * windows * rows, "msm fixed-base table")
        try:
            if lead:
                check_memset_zero(d_table.ptr, point_bytes * lead, self.stream)  # all-zero affine: infinity
            check(driver.cuMemcpyDtoDAsync(d_table.ptr + point_bytes * lead, d_points, point_bytes * n,
                                           self.stream.handle), "cuMemcpyDtoDAsync")
            with self.allocator.alloc(self.table_build_bytes(g2, rows), "msm table step") as d_xyzz:
                for w in range(1, windows):
                    for lo in range(0, rows, TABLE_BUILD_ROWS):  # in pieces: the XYZZ buffer stays small
                        count = min(TABLE_BUILD_ROWS, rows - lo)
                        src = d_table.ptr + point_bytes * ((w - 1) * rows + lo)
                        dst = d_table.ptr + point_bytes * (w * rows + lo)
                        self._launch(f"msm_table_step<{field}>", count, REDUCE_BLOCK,
                                     (d_xyzz.ptr, src, count, plan.c * plan.table_sets), self._lanes(g2))
                        threads = min(count, BATCH_INVERSE_THREADS)  # exactly: each takes ceil(count / threads) points
                        block = min(256, threads)
                        self.kernels.launch(f"setup_xyzz_to_affine<{'fq2_t' if g2 else 'fq_t'}>",
                                            -(-threads // block), block, (dst, d_xyzz.ptr, count), self.stream)
        except BaseException:
            d_table.free()
            raise
        return FixedBaseTable(g2, plan, rows, d_table, lead)

    def sort_fixed(self, plan: MsmPlan, stride: int, d_scalars: int, n: int, d_point_index: int = 0) -> SortedDigits:
        """The digits of ``n`` > 0 scalars sorted for tables of ``stride`` rows a window under ``plan`` (a
        table's): keys by bucket set and magnitude (``_sort_digits`` with the table's stride), entries into
        the table, so that ``enqueue_fixed`` of every table of that plan and stride reads them (a partition's
        A, B1, B2 and C). The caller frees them."""
        self._mark("start")
        d_offsets = self.allocator.alloc(4 * (plan.sort_buckets + 1), "msm table offsets")
        try:
            with self.allocator.alloc(4 * plan.sort_buckets, "msm bucket counts") as d_counts:
                d_entries = self._sort_digits(plan, d_scalars, n, d_point_index, d_counts, d_offsets, stride)
        except BaseException:
            d_offsets.free()
            raise
        return SortedDigits(plan, n, d_offsets, d_entries, stride)

    def enqueue_fixed(self, table: FixedBaseTable, d_scalars: int, n: int, d_out: int, d_point_index: int = 0,
                      digits: SortedDigits | None = None) -> None:
        """Queue sum scalars[i] P_(index[i] or i) over ``table`` into ``d_out`` (XYZZ): the digits sorted by
        bucket set and magnitude (``sort_fixed``; with ``digits``, sorted already for a table of this plan
        and stride, not freed here), then the bucket sums and the reduction of its sets as ``enqueue``'s of
        as many windows."""
        g2, plan = table.g2, table.plan
        if n == 0:
            check_memset_zero(d_out, self.xyzz_bytes(g2), self.stream)
            return
        if n > table.n and not d_point_index:
            raise ValueError(f"{n} scalars for a table of {table.n} points")
        own = digits is None
        if own:
            digits = self.sort_fixed(plan, table.n, d_scalars, n, d_point_index)
        elif digits.n != n or digits.plan != plan or digits.stride != table.n:
            raise ValueError(f"sorted digits of {digits.n} scalars, plan {digits.plan}, stride {digits.stride}, given "
                             f"to an MSM of {n} over a table of plan {plan}, {table.n} rows a window")
        entries_bound = n * plan.n_windows
        self.last_plan = plan
        try:
            d_partials, d_chunk_off = self._bucket_sums(g2, table.d_table.ptr, digits.d_entries, digits.d_offsets,
                                                        plan.sort_buckets, entries_bound, entries_bound,
                                                        self._level0_chunk(entries_bound, g2))
        finally:
            if own:
                digits.free()  # stream-ordered: after the bucket sums read them
        try:
            sets = MsmPlan(plan.n, plan.c, plan.table_sets, plan.buckets_per_window, plan.seg_len)
            self._reduce_windows(g2, sets, d_partials.ptr, d_chunk_off.ptr, d_out, 0)
        finally:
            d_partials.free()
            d_chunk_off.free()

    def run_fixed(self, group: CurveGroup, table: FixedBaseTable, d_scalars: int, n: int) -> tuple:
        """Blocking form of ``enqueue_fixed``: the MSM as a Jacobian point of Python ints."""
        g2 = group.ops.degree == 2
        out = np.zeros(self.xyzz_bytes(g2) // 4, dtype=np.uint32)
        with self.allocator.alloc(self.xyzz_bytes(g2), "msm result") as d_result:
            self.enqueue_fixed(table, d_scalars, n, d_result.ptr)
            d_result.download(out, self.stream)
        self._collect_marks()
        return xyzz_to_jacobian(group, self.curve.fq, out)

    def run_xyzz(self, g2: bool, d_points: int, d_scalars: int, n: int, c: int | None = None,
                 h_scalars: np.ndarray | None = None) -> np.ndarray:
        """Blocking form of ``enqueue``: the XYZZ point as raw Montgomery words (4 coordinates)."""
        out = np.zeros(self.xyzz_bytes(g2) // 4, dtype=np.uint32)
        with self.allocator.alloc(self.xyzz_bytes(g2), "msm result") as d_result:
            self.enqueue(g2, d_points, d_scalars, n, d_result.ptr, c, h_scalars=h_scalars)
            d_result.download(out, self.stream)
        self._collect_marks()
        return out

    def run(self, group: CurveGroup, d_points: int, d_scalars: int, n: int, c: int | None = None,
            h_scalars: np.ndarray | None = None) -> tuple:
        """The MSM as a Jacobian point of Python ints (``pipeline.curves.points`` form)."""
        g2 = group.ops.degree == 2
        raw = self.run_xyzz(g2, d_points, d_scalars, n, c, h_scalars)
        return xyzz_to_jacobian(group, self.curve.fq, raw)


@dataclass(frozen=True)
class PointSum:
    """sum_k points[indices[k]], k < count, into ``d_out`` (device addresses)."""
    d_points: int
    d_indices: int
    count: int
    d_out: int


def hot_strides(per_bucket: int, fan: int) -> list[int]:
    """The strides of the hot buckets' tree (MsmRunner._sum_pieces) for at most ``per_bucket`` pieces a bucket:
    none where no bucket can hold more than ``fan`` (one item sums each), else fan^k while a bucket's P pieces
    may leave more than one partial, ceil(P / fan^k)."""
    strides, stride = [], 1
    while per_bucket > fan and stride < per_bucket:
        strides.append(stride)
        stride *= fan
    return strides


def hot_chunks_bound(pieces: int, fan: int, stride: int) -> int:
    """Most chunks of the tree's level at ``stride`` over ``pieces`` pieces in all: a hot bucket of P pieces
    has ceil(P / (fan stride)) <= P / (fan stride) + 1 of them, and at most pieces / (fan + 1) buckets are hot."""
    return min(pieces, pieces // (fan * stride) + pieces // (fan + 1) + 1)


def point_sum_levels(count: int, chunk: int) -> list[int]:
    """A point sum's entries, then its partials at each level down to one (``chunk`` entries a
    thread at level 0, LEVEL_CHUNK above)."""
    sizes = [count, -(-count // chunk)]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // LEVEL_CHUNK))
    return sizes


class PairTables:
    """Page-locked room for point sums' level tables (``enqueue_point_sums``): each ``put`` takes fresh
    room, never reused, so a copy queued from it needs no event; its owner frees it once the stream
    is done (a streamed pass, at close). ``put`` returns None when the room is spent (the caller then
    writes the pairs with memsets)."""

    def __init__(self, device, nbytes: int) -> None:
        self.host = PinnedHostBuffer(device, nbytes)
        self.used = 0

    def put(self, words: np.ndarray) -> int | None:
        if self.used + words.nbytes > self.host.nbytes:
            return None
        at = self.used
        self.host.array[at:at + words.nbytes] = words.reshape(-1).view(np.uint8)
        self.used += -(-words.nbytes // 16) * 16
        return self.host.ptr + at

    def close(self) -> None:
        self.host.free()


def check_memset_zero(d_ptr: int, nbytes: int, stream) -> None:
    check(driver.cuMemsetD8Async(d_ptr, 0, nbytes, stream.handle), "cuMemsetD8Async")


def xyzz_to_jacobian(group: CurveGroup, fq, raw_words: np.ndarray) -> tuple:
    """(X, Y, ZZ, ZZZ) Montgomery words -> Jacobian (X ZZ ZZZ^2, Y ZZ^3 ZZZ^2, ZZ ZZZ), plain ints.

    With x = X/ZZ and y = Y/ZZZ, Z' = ZZ ZZZ gives X' = x Z'^2 and Y' = y Z'^3 (no inversion).
    """
    f = group.ops
    vals = [fq.from_mont(v) for v in fq.ints_from_limbs(raw_words.view(np.uint64))]
    if f.degree == 2:
        vals = [(vals[i], vals[i + 1]) for i in range(0, len(vals), 2)]
    X, Y, ZZ, ZZZ = vals
    if f.is_zero(ZZ):
        return group.infinity
    zzz2 = f.sqr(ZZZ)
    return (f.mul(f.mul(X, ZZ), zzz2), f.mul(f.mul(Y, f.mul(f.sqr(ZZ), ZZ)), zzz2), f.mul(ZZ, ZZZ))

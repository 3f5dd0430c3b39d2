"""Host side of the development setup's kernels (pipeline/cuda_src/setup/): build units, launches, buffers.

``SetupKernels`` is ``CurveKernels`` over the setup's own build units (programs/setup_fr.cu,
setup_g1.cu, setup_g2.cu), so the backend's units are neither rebuilt nor touched.
``SetupRunner`` sequences them on one stream with the backend's allocator. Fr arrays are
Montgomery on the device unless said; point arrays are affine in the zkey's stored form.
Every step here has a Python twin in pipeline/setup/scalars.py or cpu.py that the GPU tests
compare it with bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...curves import Curve
from ...curves.encoding import encode_g1_mont, encode_g2_mont
from ...curves.points import CurveGroup
from ...curves.scalar_mul import batch_to_affine
from .kernels import I32, PTR, SIGNATURES, U32, U64, CurveKernels, grid_for
from .launch import BATCH_INVERSE_THREADS, SETUP_BLOCK, SETUP_MUL_THREADS
from .msm import MsmRunner, signed_windows

SETUP_UNITS: dict[str, tuple[str, ...]] = {
    "setup_fr": (
        "setup_lagrange<fr_t>", "setup_count_signals", "setup_scatter_by_signal",
        "setup_term_sums<fr_t>", "setup_partial_sums<fr_t>", "setup_signal_values<fr_t>",
        "setup_combine<fr_t>", "setup_stored_coefficients<fr_t>",
        "scan_tile_sums", "scan_tile_offsets", "scan_apply", "msm_chunk_counts",
    ),
    "setup_g1": ("setup_fixed_base_mul<fq_t>", "setup_xyzz_to_affine<fq_t>"),
    "setup_g2": ("setup_fixed_base_mul<fq2_t>", "setup_xyzz_to_affine<fq2_t>"),
}
SETUP_SIGNATURES: dict[str, tuple[str, ...]] = {
    **{name: SIGNATURES[name] for name in ("scan_tile_sums", "scan_tile_offsets", "scan_apply", "msm_chunk_counts",
                                           "setup_xyzz_to_affine")},
    "setup_lagrange": (PTR, U64, U64, U64, "fr", "fr", PTR, PTR, I32),
    "setup_count_signals": (PTR, U64, PTR),
    "setup_scatter_by_signal": (PTR, PTR, PTR, U64, PTR, PTR, PTR),
    "setup_term_sums": (PTR, PTR, PTR, PTR, PTR, PTR, PTR, U32, U32, U32),
    "setup_partial_sums": (PTR, PTR, PTR, PTR, U32, U32, U32),
    "setup_signal_values": (PTR, PTR, PTR, U32),
    "setup_combine": (PTR, PTR, PTR, PTR, U64, "fr", "fr", "fr"),
    "setup_stored_coefficients": (PTR, PTR, PTR, PTR, U64),
    "setup_fixed_base_mul": (PTR, PTR, U64, PTR, I32, I32),
}

CODE_BYTES = 2  # coefficient codes are uint16 (pipeline/cuda_src/setup/codes.cuh)
EVAL_CHUNK = 32  # terms per thread at level 0 of the per-signal sums (field products)
LEVEL_CHUNK = 64  # partials per thread at the later levels (field additions)
FIXED_BASE_CHUNK = 1 << 22  # points per fixed-base pass: bounds the XYZZ scratch (0.8 GB on BLS12-381 G1)
TABLE_BUDGET_BYTES = 32 << 20  # fixed-base table: the largest window whose table fits here (L2-sized)
BOOTSTRAP_WINDOW = 4  # the device table is multiplied out of a host-made one of this window (512 points)


class SetupKernels(CurveKernels):
    units = SETUP_UNITS
    signatures = SETUP_SIGNATURES
    default_units = None  # all three setup units at once (built in parallel); none of the prover's


def is_g2(group: CurveGroup) -> bool:
    return group.ops.degree == 2


@dataclass(frozen=True)
class TablePlan:
    window: int  # c: digits in [-2^(c-1), 2^(c-1)]
    n_windows: int

    @property
    def half(self) -> int:
        return 1 << (self.window - 1)

    @property
    def entries(self) -> int:
        return self.n_windows * self.half


def table_plan(scalar_bits: int, point_bytes: int, budget: int = TABLE_BUDGET_BYTES) -> TablePlan:
    """The widest window (fewest additions per product) whose table fits ``budget``."""
    best = TablePlan(2, signed_windows(scalar_bits, 2))
    for c in range(2, 23):
        plan = TablePlan(c, signed_windows(scalar_bits, c))
        if plan.entries * point_bytes <= budget:
            best = plan
    return best


def window_bases(group: CurveGroup, plan: TablePlan) -> list:
    """2^(c win) G for every window, affine (host: ~256 doublings)."""
    out, base = [], group.from_affine(group.generator)
    for _ in range(plan.n_windows):
        out.append(group.to_affine(base))
        for _ in range(plan.window):
            base = group.double(base)
    return out


def host_table(group: CurveGroup, plan: TablePlan) -> list:
    """The table's entries d 2^(c win) G in table order, affine, with Python ints (small plans)."""
    multiples = []
    for base in window_bases(group, plan):
        b = group.from_affine(base)
        acc = b
        for _ in range(plan.half):
            multiples.append(acc)
            acc = group.add(acc, b)
    return batch_to_affine(group, multiples)


def table_scalars(fr, plan: TablePlan) -> np.ndarray:
    """d 2^(c win) mod r for every entry, in table order, Montgomery limbs (the fixed-base kernel's
    scalar form): multiplying G by them gives the table."""
    p, values = fr.modulus, []
    for win in range(plan.n_windows):
        step = fr.to_mont(pow(2, plan.window * win, p))
        acc = 0
        for _ in range(plan.half):
            acc = (acc + step) % p
            values.append(acc)
    return fr.limbs_from_ints(values)


class SetupRunner:
    """The setup's device steps for one curve, on ``stream`` with ``allocator``."""

    def __init__(self, kernels: SetupKernels, allocator, stream) -> None:
        self.kernels, self.allocator, self.stream = kernels, allocator, stream
        self.curve: Curve = kernels.curve
        self.scan = MsmRunner(kernels, allocator, stream).exclusive_scan  # the MSM's three-launch scan
        self._root_tables: dict[int, tuple] = {}
        self._tables: dict[str, tuple] = {}

    # -- sizes and forms -----------------------------------------------------------------------
    @property
    def fr_bytes(self) -> int:
        return 8 * self.curve.fr.limbs

    def point_bytes(self, group: CurveGroup) -> int:
        return 2 * 8 * self.curve.fq.limbs * group.ops.degree

    def xyzz_bytes(self, group: CurveGroup) -> int:
        return 2 * self.point_bytes(group)

    def fr_mont(self, value: int) -> np.ndarray:
        fr = self.curve.fr
        return fr.limbs_from_ints([fr.to_mont(value % fr.modulus)])[0]

    def _launch(self, expr: str, n_threads: int, args: tuple, block: int = SETUP_BLOCK) -> None:
        """Enough blocks for ``n_threads`` (grid-stride kernels loop beyond the cap)."""
        self.kernels.launch(expr, grid_for(n_threads, block), block, args, self.stream)

    def _launch_exact(self, expr: str, n_threads: int, args: tuple) -> None:
        """Exactly ``n_threads`` threads: the batch inversions give each thread ceil(n / threads) elements."""
        block = max(1, min(SETUP_BLOCK, n_threads))
        self.kernels.launch(expr, -(-n_threads // block), block, args, self.stream)

    def _read_u32(self, buf, index: int) -> int:
        out = np.zeros(1, dtype=np.uint32)
        buf.download(out, self.stream, offset=4 * index)
        return int(out[0])

    # -- Lagrange values ---------------------------------------------------------------------------
    def _roots(self, log_size: int) -> tuple:
        """w^k = lo[k mod 2^lo_bits] * hi[k >> lo_bits] tables for the 2^log_size-point domain."""
        if log_size not in self._root_tables:
            fr, p = self.curve.fr, self.curve.fr.modulus
            w = fr.root_of_unity(log_size)
            lo_bits = (log_size + 1) // 2
            lo = [pow(w, i, p) for i in range(1 << lo_bits)]
            step = pow(w, 1 << lo_bits, p)
            hi = [pow(step, j, p) for j in range(1 << (log_size - lo_bits))]
            mont = [fr.limbs_from_ints([fr.to_mont(v) for v in table]) for table in (lo, hi)]
            self._root_tables[log_size] = (self.allocator.upload(mont[0], "setup roots low"),
                                           self.allocator.upload(mont[1], "setup roots high"), lo_bits)
        return self._root_tables[log_size]

    def lagrange(self, d_out: int, n: int, log_size: int, tau: int, scale: int, start: int = 0, stride: int = 1,
                 threads: int = BATCH_INVERSE_THREADS) -> None:
        """d_out[i] = scale w^k / (tau - w^k), k = start + stride i (scalars.lagrange_values); ``threads``
        share the batch inversion (fewer threads, more elements each)."""
        if n and start + stride * (n - 1) >= 1 << log_size:
            raise ValueError(f"Lagrange index {start + stride * (n - 1)} is outside the 2^{log_size}-point domain")
        d_lo, d_hi, lo_bits = self._roots(log_size)
        self._launch_exact("setup_lagrange<fr_t>", min(n, threads),
                           (d_out, n, start, stride, self.fr_mont(tau), self.fr_mont(scale), d_lo.ptr, d_hi.ptr,
                            lo_bits))

    # -- per-signal evaluations ------------------------------------------------------------------
    def group_by_signal(self, d_signals: int, d_rows: int, d_codes: int, m: int, n_signals: int):
        """Counting sort of m terms by signal -> (offsets (n_signals + 1), rows, codes) buffers."""
        alloc = self.allocator
        d_offsets = alloc.alloc(4 * (n_signals + 1), "setup signal offsets")
        d_rows_out = alloc.alloc(4 * m, "setup terms by signal: rows")
        d_codes_out = alloc.alloc(CODE_BYTES * m, "setup terms by signal: codes")
        with alloc.alloc(4 * n_signals, "setup signal counts") as d_counts:
            d_counts.memset32(0, self.stream)
            self._launch("setup_count_signals", m, (d_signals, m, d_counts.ptr))
            self.scan(d_counts.ptr, n_signals, d_offsets.ptr)
            d_cursor = d_counts  # reuse: each signal's slot cursor starts at its offset
            self.kernels.launch_copy(d_cursor.ptr, d_offsets.ptr, 4 * n_signals, self.stream)
            self._launch("setup_scatter_by_signal", m, (d_signals, d_rows, d_codes, m, d_cursor.ptr, d_rows_out.ptr,
                                                        d_codes_out.ptr))
        return d_offsets, d_rows_out, d_codes_out

    def _chunk_offsets(self, d_offsets, n_signals: int, chunk: int):
        d_chunk_off = self.allocator.alloc(4 * (n_signals + 1), "setup chunk offsets")
        with self.allocator.alloc(4 * n_signals, "setup chunk counts") as d_counts:
            self._launch("msm_chunk_counts", n_signals, (d_offsets.ptr, n_signals, chunk, d_counts.ptr))
            self.scan(d_counts.ptr, n_signals, d_chunk_off.ptr)
        return d_chunk_off, self._read_u32(d_chunk_off, n_signals)

    def evaluate(self, d_out: int, grouped: tuple, d_table: int, d_lagrange: int, n_signals: int) -> None:
        """d_out[j] = sum of table[code] * L[row] over signal j's terms (Montgomery; 0 for none)."""
        d_offsets, d_rows, d_codes = grouped
        fb, alloc = self.fr_bytes, self.allocator
        d_chunk_off, n_chunks = self._chunk_offsets(d_offsets, n_signals, EVAL_CHUNK)
        d_partials = alloc.alloc(fb * max(n_chunks, 1), "setup partial sums")
        self._launch("setup_term_sums<fr_t>", n_chunks, (d_partials.ptr, d_codes.ptr, d_rows.ptr, d_table, d_lagrange,
                                                         d_offsets.ptr, d_chunk_off.ptr, n_signals, EVAL_CHUNK,
                                                         n_chunks))
        while True:  # sum the partials of each signal until one is left (as the MSM's buckets)
            d_next_off, n_next = self._chunk_offsets(d_chunk_off, n_signals, LEVEL_CHUNK)
            if n_next == n_chunks:
                d_next_off.free()
                break
            d_next = alloc.alloc(fb * max(n_next, 1), "setup partial sums")
            self._launch("setup_partial_sums<fr_t>", n_next, (d_next.ptr, d_partials.ptr, d_chunk_off.ptr,
                                                              d_next_off.ptr, n_signals, LEVEL_CHUNK, n_next))
            d_partials.free()
            d_chunk_off.free()
            d_partials, d_chunk_off, n_chunks = d_next, d_next_off, n_next
        self._launch("setup_signal_values<fr_t>", n_signals, (d_out, d_partials.ptr, d_chunk_off.ptr, n_signals))
        d_partials.free()
        d_chunk_off.free()

    # -- elementwise -------------------------------------------------------------------------------
    def combine(self, d_out: int, d_u: int, d_v: int, d_w: int, n: int, alpha: int, beta: int, scale: int) -> None:
        """d_out = (beta u + alpha v + w) scale (scalars.combine); d_out may be d_w."""
        self._launch("setup_combine<fr_t>", n, (d_out, d_u, d_v, d_w, n, self.fr_mont(beta), self.fr_mont(alpha),
                                                 self.fr_mont(scale)))

    def stored_coefficients(self, d_out: int, d_codes: int, d_table: int, d_positions: int, n: int) -> None:
        """d_out[pos[i]] = table[codes[i]] R^2 (plain table, the zkey's coefficient form out)."""
        self._launch("setup_stored_coefficients<fr_t>", n, (d_out, d_codes, d_table, d_positions, n))

    # -- fixed-base multiplication ---------------------------------------------------------------
    def to_affine(self, group: CurveGroup, d_out: int, d_xyzz: int, n: int,
                  threads: int = BATCH_INVERSE_THREADS) -> None:
        field = "fq2_t" if is_g2(group) else "fq_t"
        self._launch_exact(f"setup_xyzz_to_affine<{field}>", min(n, threads), (d_out, d_xyzz, n))

    def generator_table(self, group: CurveGroup, plan: TablePlan | None = None):
        """(plan, device table) of the generator's multiples (setup/fixed_base.cuh), kept resident.
        Made by the fixed-base kernel itself, out of a small table built on the host: the entries
        are G times known scalars (no extra kernel, and the unit compiles no doubling code)."""
        if group.name in self._tables and (plan is None or self._tables[group.name][0] == plan):
            return self._tables[group.name]
        fr = self.curve.fr
        plan = plan or table_plan(fr.bits, self.point_bytes(group))
        boot = TablePlan(BOOTSTRAP_WINDOW, signed_windows(fr.bits, BOOTSTRAP_WINDOW))
        encode = encode_g2_mont if is_g2(group) else encode_g1_mont
        d_table = self.allocator.alloc(plan.entries * self.point_bytes(group), f"setup {group.name} table")
        boot_points = encode(self.curve, host_table(group, boot))
        try:
            with self.allocator.upload(boot_points, "setup bootstrap table") as d_boot, \
                    self.allocator.upload(table_scalars(fr, plan), "setup table scalars") as d_k:
                self._multiply(group, boot, d_boot.ptr, d_table.ptr, d_k.ptr, plan.entries)
                self.stream.synchronize()
        except BaseException:
            d_table.free()
            raise
        old = self._tables.pop(group.name, None)
        if old is not None:
            old[1].free()
        self._tables[group.name] = (plan, d_table)
        return self._tables[group.name]

    def fixed_base(self, group: CurveGroup, d_out: int, d_scalars: int, n: int, chunk: int = FIXED_BASE_CHUNK,
                   affine_threads: int = BATCH_INVERSE_THREADS) -> None:
        """d_out[i] = scalars[i] G, affine stored form, in passes of ``chunk`` points."""
        if n == 0:
            return
        plan, d_table = self.generator_table(group)
        self._multiply(group, plan, d_table.ptr, d_out, d_scalars, n, chunk, affine_threads)

    def _multiply(self, group: CurveGroup, plan: TablePlan, d_table: int, d_out: int, d_scalars: int, n: int,
                  chunk: int = FIXED_BASE_CHUNK, affine_threads: int = BATCH_INVERSE_THREADS) -> None:
        field = "fq2_t" if is_g2(group) else "fq_t"
        chunk = min(n, chunk)
        with self.allocator.alloc(chunk * self.xyzz_bytes(group), "setup fixed-base scratch") as d_xyzz:
            for first in range(0, n, chunk):
                count = min(chunk, n - first)
                self._launch(f"setup_fixed_base_mul<{field}>", count,
                             (d_xyzz.ptr, d_scalars + first * self.fr_bytes, count, d_table, plan.window,
                              plan.n_windows), block=SETUP_MUL_THREADS)  # its launch bounds
                self.to_affine(group, d_out + first * self.point_bytes(group), d_xyzz.ptr, count, affine_threads)

    def close(self) -> None:
        for d_lo, d_hi, _ in self._root_tables.values():
            d_lo.free()
            d_hi.free()
        for _, d_table in self._tables.values():
            d_table.free()
        self._root_tables.clear()
        self._tables.clear()

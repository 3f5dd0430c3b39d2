"""Our MSM and NTT kernels beside sppark's, timed in the same call (issue 16), with the ratios
against the issue's goals; the table and a plot beside it (.png).

    python3 -m bench.kernels_vs_sppark [--curves bls12381 bn128] [--g1 20 22 24 26] [--g2 20 22 24]
        [--ntt 20 27] [--anchors .anchors] [--out bench/results/kernels_vs_sppark.md]      (GPU host)

What is timed, and how, is METHOD below (also the table's preamble).
"""
from __future__ import annotations

import platform
import subprocess
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import sppark_stage
from bench.common import REPO, Stopwatch, arg_parser, markdown_table, time_ms, warm, write_result
from bench.gpu_msm import SPLIT, random_msm_data, time_msms, time_table_msms
from pipeline import progress
from pipeline.backends.cuda.backend import CudaBackend  # the import makes no CUDA context
from pipeline.backends.cuda.launch import (G1_LAZY_BUILT, G2_VARIANTS_BUILT, NTT_DEPENDENT_BUILT, NTT_DEPENDENT_PASSES,
                                          NTT_NATURAL_IN_PLACE, NTT_NATURAL_KERNEL, NTT_NATURAL_KERNELS,
                                          NTT_NATURAL_RADIX, NTT_NATURAL_REV_ROWS_LOG, NTT_NATURAL_SHORT_PASS,
                                          NTT_PASS_KERNEL, NTT_PASS_KERNELS, NTT_PASS_VARIANTS, NTT_RADIX_LOG,
                                          NTT_RADIX_SHORT_PASS, STAGES_PER_PASS, STAGES_PER_PASS_COMPARED)
from pipeline.backends.cuda.ntt import SHORT_PASS_PLACES, in_place_plan, natural_plan, pass_plan
from pipeline.curves import curve_by_name

METHOD = """sppark first: one harness call per curve (.anchors/bench_<curve>: shared/anchors/sppark's harness as
`bench.sppark_harness` rebuilds it, with its G2 points made over lane pairs; the shared binary
stored only half of its G2 points, so its G2 row at the run's largest size timed ~half the additions:
bench/results/sppark_g2_points.md), before this process makes its CUDA context. Then ours on the same GPU:
- G1 and G2 MSM: points resident, scalars copied from pinned memory in every call (bench/gpu_msm.py,
  `time_msms`; in pieces, each piece's digits counted while the next is copied: launch.SCALAR_PIECES; the
  "copied whole" rows copy all of them before counting), random and 80% {0,1} scalars, and the 80% {0,1}
  ones once more through the engine's 0/1 split (classified and compacted on the device inside the timed call);
  and both kinds over a fixed-base table of the points (issue 16's first lever, what a proving key's MSMs
  run over where the VRAM holds the tables: bench.gpu_msm's `time_table_msms`, the scalars copied whole;
  each table's width, size and build time in the notes, a table that does not fit the free VRAM skipped).
  sppark: wall clock of `msm_t::invoke` with scalars from pageable memory; it has no split, so the split row is compared
  with its 80% {0,1} row. The default bucket sums run over the lazy form of Fq (values in [0, 2p)
  inside a thread, launch.LAZY_FIELDS); the "plain field" rows time them over the reduced one.
- Fr NTT, data resident: ours natural order in and out (DIF radix passes whose last one stores at the
  bit-reversed index, through a scratch array; the older rows: a bit-reversal pass after the passes) against
  sppark's NR transform (natural in, bit-reversed out: less work), and our radix passes alone
  (natural in, bit-reversed out) as the like-for-like row. Up to 2^22 the natural transform's launches are
  replayed from a CUDA graph from a buffer's second call on (launch.NTT_NATURAL_GRAPH_MAX_LOG).
- H: our whole quotient step (3 inverse + 3 coset forward transforms + the pointwise step, a, b
  and c overwritten) against 7 x one sppark NTT of that size.

Goals (ours / sppark): G1 and G2 MSM <= 0.8, NTT <= 1.0, H <= 1.0. Without the harness the sppark
cells say why, and ours still fill. Medians: ours of 5 CUDA-event timings after a warm-up (3 at
G1 2^26 and G2 2^24), sppark's of 5 (MSM) or 6 (NTT) after its warm-ups. Random data, one draw per
curve (G2's points are G1's words, the NTT's input the random scalars repeated): the kernels' cost
does not depend on the values (bench/common.py).
"""

GOALS = {"G1 MSM": 0.8, "G2 MSM": 0.8, "NTT": 1.0, "H": 1.0}  # ours / sppark, at most
SPPARK_MSM_ROWS = {"random": "MSM", "80% {0,1}": "MSM 80%{0,1}"}  # the harness's names, after "G1 " or "G2 "
SPPARK_NTT = "NTT Fr (NR)"
PLAIN_FIELD = "bucket sums over the plain field (not lazy)"
WHOLE_COPY = "scalars copied whole, then counted"
FIXED_BASE = "over a fixed-base table (the points' window multiples, built once: a proving key's)"
H_NTTS = 7  # the goal: H in at most the time of 7 sppark NTTs of its size


def pass_label(pass_kernel: str, radix_log: int) -> str:
    """A pass kernel as the rows name it (launch.NTT_PASS_KERNELS)."""
    return f"{pass_kernel} passes" + (f" of {radix_log} stage(s) per register group" if pass_kernel == "groups" else "")


def radix_only(passes: str) -> str:
    return f"radix passes only (bit-reversed out), {passes}"


PASSES = pass_label(NTT_PASS_KERNEL, NTT_RADIX_LOG)
NATURAL = f"natural in and out ({pass_label('groups', NTT_NATURAL_RADIX)}, the bit reversal in the last pass)"
RADIX_ONLY = radix_only(PASSES)
# the rows with the other setting of the dependent launches (where the kernels are built for them)
DEPENDENT_FLIPPED = "every pass an ordinary launch" if NTT_DEPENDENT_PASSES else "passes after the first dependent"
TILED_REVERSE = f"natural in and out ({PASSES}, tiled bit-reversal pass)"
ELEMENTWISE_REVERSE = f"natural in and out ({PASSES}, element-wise bit-reversal pass)"
QUOTIENT = "3 iNTT + 3 coset NTT + pointwise"
QUOTIENT_COMPACT = QUOTIENT + ", compact twiddles (a streamed key's)"
HEADER = ["curve", "kernel", "n", "input", "ours ms", "sppark row", "sppark ms", "ours ÷ sppark", "goal"]
SpparkRows = dict[tuple[str, int], float]  # (harness row, log2 n) -> median ms


@dataclass(frozen=True)
class Row:
    """One size of one kernel on one curve: our median and sppark's from the same call."""

    curve: str
    kernel: str  # a key of GOALS
    log_n: int
    input: str  # the scalars, or what our transform does
    ours_ms: float
    against: str  # the harness row compared ("7 x NTT Fr (NR)" for H)
    sppark_ms: float | str  # its median (times 7 for H), or why there is none

    @property
    def ratio(self) -> float | None:
        return None if isinstance(self.sppark_ms, str) else self.ours_ms / self.sppark_ms

    @property
    def goal_met(self) -> bool | None:
        return None if self.ratio is None else self.ratio <= GOALS[self.kernel]

    def cells(self) -> list[str]:
        sppark = self.sppark_ms if isinstance(self.sppark_ms, str) else ms_cell(self.sppark_ms)
        return [self.curve, self.kernel, f"2^{self.log_n}", self.input, ms_cell(self.ours_ms), self.against, sppark,
                ratio_cell(self.ratio), goal_cell(self.kernel, self.goal_met)]


def ms_cell(ms: float) -> str:
    return f"{ms:.2f}" if ms >= 10 else f"{ms:.3f}"


def ratio_cell(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def goal_cell(kernel: str, met: bool | None) -> str:
    goal = f"<= {GOALS[kernel]:g}"
    return goal if met is None else f"{goal}: {'met' if met else 'not met'}"


# -- sppark ------------------------------------------------------------------------------------------
def harness_args(g1: list[int], g2: list[int], ntt_max: int) -> list[int]:
    """G1_MIN G1_MAX NTT_MAX G2_MAX: the harness times even sizes from G1_MIN (G1 up to G1_MAX, G2 up
    to G2_MAX, either skipped when below G1_MIN) and NTTs from 2^16 to NTT_MAX (0: none)."""
    lo = min(g1 + g2, default=0)
    return [lo, max(g1, default=lo - 1), ntt_max, max(g2, default=lo - 1)]


def parse_harness(text: str) -> SpparkRows:
    """Every ``sppark <what> <curve> 2^<log>: median <ms> ms`` line of the harness's output."""
    return {(m["what"], int(m["log"])): float(m["ms"]) for m in sppark_stage.ROW.finditer(text)}


def run_sppark(curve_name: str, anchors: Path, args: list[int], timeout_s: float) -> SpparkRows | str:
    """The harness's medians for one curve, or why there are none."""
    binary = sppark_stage.harness(curve_name, anchors)
    if binary is None:
        shown = anchors.relative_to(REPO) if anchors.is_relative_to(REPO) else anchors
        return f"not run (no {shown / sppark_stage.HARNESS[curve_name]})"
    try:
        out = sppark_stage.harness_output(binary, args, timeout_s)
    except sppark_stage.HarnessFailed as exc:
        return f"not run ({binary.name} exited with {exc.returncode}: {one_line(exc.output, 100)})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"not run ({type(exc).__name__}: {one_line(str(exc))})"
    print(out, flush=True)
    return parse_harness(out)


def one_line(text: str, keep: int = 200) -> str:
    """The end of ``text`` on one line, fit for a table cell."""
    return " ".join(text.split())[-keep:].replace("|", "/")


def sppark_ms(sppark: SpparkRows | str, what: str, log_n: int, times: int = 1) -> float | str:
    if isinstance(sppark, str):
        return sppark
    ms = sppark.get((what, log_n))
    return f"not run (no {what} row at 2^{log_n})" if ms is None else times * ms


# -- ours --------------------------------------------------------------------------------------------
def msm_rows(backend, curve, g2: bool, logs: list[int], points: np.ndarray, scalars: dict,
             sppark: SpparkRows | str, notes: list[str] | None = None, tables: bool = False) -> Iterator[Row]:
    """The defaults' rows (with the 0/1 split's), each of msm_variants' rows, and with ``tables`` the MSM over
    a fixed-base table of the points (random and 80% {0,1}; each table's width, windows, size and build time,
    or why there is none, appended to ``notes``)."""
    group = "G2" if g2 else "G1"
    largest = 24 if g2 else 26  # the sizes timed 3 times, the others 5
    repeats = lambda k: 3 if k >= largest else 5  # noqa: E731
    for t in time_msms(backend, curve, g2, logs, points, scalars, repeats, split=True):
        against = f"{group} {SPPARK_MSM_ROWS[t.scalars.removesuffix(SPLIT)]}"
        yield Row(curve.name, f"{group} MSM", t.log_n, t.scalars, t.ms, against, sppark_ms(sppark, against, t.log_n))
    msm = backend.runtime(curve).msm
    for label, settings in msm_variants(msm, g2):  # random scalars, the runner's settings restored after each
        saved = {name: getattr(msm, name) for name in settings}
        try:
            for name, value in settings.items():
                setattr(msm, name, value)
            for t in time_msms(backend, curve, g2, logs, points, {"random": scalars["random"]}, repeats):
                against = f"{group} {SPPARK_MSM_ROWS[t.scalars]}"
                yield Row(curve.name, f"{group} MSM", t.log_n, f"{t.scalars}, {label}", t.ms, against,
                          sppark_ms(sppark, against, t.log_n))
        finally:
            for name, value in saved.items():
                setattr(msm, name, value)
    if tables:
        for fixed in time_table_msms(backend, curve, g2, logs, points, scalars, repeats):
            if notes is not None and (fixed.timing is None or fixed.timing.scalars == "random"):  # one note a table
                notes.append(f"{curve.name} {group} fixed-base table {fixed.describe()}")
            if fixed.timing is not None:
                t = fixed.timing
                against = f"{group} {SPPARK_MSM_ROWS[t.scalars]}"
                yield Row(curve.name, f"{group} MSM", t.log_n, f"{t.scalars}, {FIXED_BASE}", t.ms, against,
                          sppark_ms(sppark, against, t.log_n))


def msm_variants(msm, g2: bool) -> list[tuple[str, dict]]:
    """The MSM rows beside the defaults, as (label, runner settings): the bucket sums over the plain field
    (launch.LAZY_FIELDS: the default is the lazy form); for G1 the lazy level 0 at its other register caps
    (ptxas: more spills lazy at the default B); for G2 the kernels' other field type and occupancy variants
    (level 0 flat: the scheme built for every variant); and the scalars copied in whole before their digits are
    counted (the default copies them in pieces, each counted as it arrives: launch.SCALAR_PIECES)."""
    variants = [(PLAIN_FIELD, {"lazy": False}), (WHOLE_COPY, {"scalar_pieces": 1})]
    if not g2:
        variants += [(f"lazy, min_blocks {b}", {"g1_min_blocks": b}) for b in G1_LAZY_BUILT if b != msm.g1_min_blocks]
    else:
        default = (msm.g2_field, msm.g2_min_blocks)
        variants += [(f"{g2_variant_name(f, b)}, level 0 flat", {"g2_field": f, "g2_min_blocks": b, "level0_flat": True})
                     for f, b in G2_VARIANTS_BUILT if (f, b) != default]
    return variants


def g2_variant_name(field: str, blocks: int) -> str:
    return f"{field}, min_blocks {blocks}" if field == "fq2_pair_t" else f"{field} (one thread a point)"


def moved_short_passes(log_n: int) -> tuple[list[str], list[str]]:
    """The places of the short pass, other than launch.py's defaults, that change the natural transform's plan
    and the radix passes' plan at 2^log_n ("last" is the natural transform's alone)."""
    natural = [p for p in SHORT_PASS_PLACES
               if natural_plan(log_n, short_pass=p) != natural_plan(log_n, short_pass=NTT_NATURAL_SHORT_PASS)]
    radix = [p for p in SHORT_PASS_PLACES[:2]
             if pass_plan(log_n, False, short_pass=p) != pass_plan(log_n, False, short_pass=NTT_RADIX_SHORT_PASS)]
    return natural, radix


def time_fr(backend, curve, logs: list[int], values: np.ndarray, repeat: int = 5,
            stages_compared: tuple[int, ...] = STAGES_PER_PASS_COMPARED
            ) -> Iterator[tuple[int, float, float, float, float, dict[tuple[str, str], float]]]:
    """(log2 n, natural-order NTT ms, radix passes ms, quotient ms, quotient ms with the compact
    twiddle table of a streamed key, {(kernel, variant): ms}) per size, the first four with the
    defaults (launch.py), the variants: the other pass kernels built, the other pass plans
    compared (NTT and H) and the element-wise bit reversal. Three resident buffers of the largest
    size (a, b, c), filled with ``values`` over and over. The quotient step is what a proof's H runs after the
    sparse products: c = a o b, then the transforms and the pointwise step (H over a). No sizes (e.g.
    --ntt 20 19): no rows."""
    if not logs:
        return
    rt = backend.runtime(curve)
    n_max, elem = 1 << max(logs), 8 * curve.fr.limbs
    rt.ntt.ensure_twiddles(max(logs))
    bufs = []
    try:
        for what in ("bench a", "bench b", "bench c"):
            bufs.append(backend.allocator.alloc(n_max * elem, what))
        d_a, d_b, d_c = bufs
        for d in (d_a, d_b, d_c):
            for start in range(0, n_max, len(values)):
                d.upload(values[:n_max - start], offset=start * elem)
        for log_n in progress.iterate(logs, f"{curve.name} Fr sizes"):
            def quotient():
                rt.ntt.mul(d_c.ptr, d_a.ptr, d_b.ptr, 1 << log_n)
                rt.ntt.quotient(d_a.ptr, d_b.ptr, d_c.ptr, log_n)
            rt.ntt.ensure_twiddles(max(logs), compact=False)
            warm(backend.stream, lambda: rt.ntt.ntt(d_a.ptr, log_n))  # the size's first row, not only its later ones
            ntt = time_ms(backend.stream, lambda: rt.ntt.ntt(d_a.ptr, log_n), repeat=repeat)
            radix = time_ms(backend.stream, lambda: rt.ntt.radix_passes(d_a.ptr, log_n, False, False), repeat=repeat)
            h = time_ms(backend.stream, quotient, repeat=repeat)
            rt.ntt.ensure_twiddles(max(logs), compact=True)
            h_compact = time_ms(backend.stream, quotient, repeat=repeat)
            variants = time_ntt_variants(backend, rt.ntt, d_a.ptr, log_n, repeat, stages_compared)
            try:
                for stages in stages_compared:
                    rt.ntt.stages_per_pass = stages
                    variants["H", f"{QUOTIENT}, {stages} stages per pass (not {STAGES_PER_PASS})"] = time_ms(
                        backend.stream, quotient, repeat=repeat)
                rt.ntt.stages_per_pass = STAGES_PER_PASS
                for other in (k for k in NTT_PASS_KERNELS if k != NTT_PASS_KERNEL):
                    rt.ntt.pass_kernel = other
                    variants["H", f"{QUOTIENT}, {pass_label(other, NTT_RADIX_LOG)}"] = time_ms(
                        backend.stream, quotient, repeat=repeat)
                rt.ntt.pass_kernel = NTT_PASS_KERNEL
                for place in moved_short_passes(log_n)[1]:
                    rt.ntt.radix_short_pass = place
                    variants["H", f"{QUOTIENT}, the short pass at the {place}"] = time_ms(
                        backend.stream, quotient, repeat=repeat)
                rt.ntt.radix_short_pass = NTT_RADIX_SHORT_PASS
                if NTT_DEPENDENT_BUILT:
                    rt.ntt.dependent_passes = not NTT_DEPENDENT_PASSES
                    variants["H", f"{QUOTIENT}, {DEPENDENT_FLIPPED}"] = time_ms(backend.stream, quotient, repeat=repeat)
            finally:
                rt.ntt.stages_per_pass, rt.ntt.pass_kernel = STAGES_PER_PASS, NTT_PASS_KERNEL
                rt.ntt.dependent_passes, rt.ntt.radix_short_pass = NTT_DEPENDENT_PASSES, NTT_RADIX_SHORT_PASS
            yield log_n, ntt, radix, h, h_compact, variants
    finally:
        for buf in bufs:
            buf.free()
        rt.ntt.close()  # the twiddles and coset tables too


def time_ntt_variants(backend, ntt, d_data: int, log_n: int, repeat: int,
                      stages_compared: tuple[int, ...] = STAGES_PER_PASS_COMPARED) -> dict[tuple[str, str], float]:
    """The transform's variants that are not the defaults, one at a time, the defaults restored;
    the level layout of the twiddles (left with it)."""
    out = {}
    ntt.ensure_twiddles(ntt.log_max, compact=False)
    try:
        for kernel, radix_log in NTT_PASS_VARIANTS:
            if pass_label(kernel, radix_log) == PASSES:
                continue  # the default's row
            ntt.pass_kernel, ntt.radix_log = kernel, radix_log
            out["NTT", radix_only(pass_label(kernel, radix_log))] = time_ms(
                backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, False), repeat=repeat)
        ntt.pass_kernel, ntt.radix_log = NTT_PASS_KERNEL, NTT_RADIX_LOG
        for stages in stages_compared:
            ntt.stages_per_pass = stages
            out["NTT", f"{RADIX_ONLY}, {stages} stages per pass (not {STAGES_PER_PASS})"] = time_ms(
                backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, False), repeat=repeat)
            out["NTT", f"{NATURAL}, {stages} stages per pass (not {STAGES_PER_PASS})"] = time_ms(
                backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)  # at 2^20: 2 passes, not 3
        ntt.stages_per_pass = STAGES_PER_PASS
        # the other directions of H's transforms, same work as the row above (its parts: bench/NOTES.md)
        out["NTT", f"radix passes only, inverse (DIF), {PASSES}"] = time_ms(
            backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, True), repeat=repeat)
        out["NTT", f"radix passes only, DIT (bit-reversed in), {PASSES}"] = time_ms(
            backend.stream, lambda: ntt.radix_passes(d_data, log_n, True, False), repeat=repeat)
        if ntt.fusible(log_n):
            out["NTT", f"radix passes only, DIT onto the odd coset, {PASSES}"] = time_ms(
                backend.stream, lambda: ntt.radix_passes(d_data, log_n, True, False, coset=True), repeat=repeat)
        if NTT_DEPENDENT_BUILT:  # dependent launches (session 38): the defaults with the other setting, same transforms
            ntt.dependent_passes = not NTT_DEPENDENT_PASSES
            out["NTT", f"{NATURAL}, {DEPENDENT_FLIPPED}"] = time_ms(backend.stream, lambda: ntt.ntt(d_data, log_n),
                                                                     repeat=repeat)
            out["NTT", f"{RADIX_ONLY}, {DEPENDENT_FLIPPED}"] = time_ms(
                backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, False), repeat=repeat)
            ntt.dependent_passes = NTT_DEPENDENT_PASSES
        # two transforms between one pair of events, per transform: the host's time ahead of the first launch,
        # which a lone transform's events count while the GPU waits, counts once for two
        out["NTT", f"{NATURAL}, two in a row (time / 2)"] = time_ms(
            backend.stream, lambda: (ntt.ntt(d_data, log_n), ntt.ntt(d_data, log_n)), repeat=repeat) / 2
        # the compact twiddle table (session 38): half the level table's entries, so half its reads (the top
        # pass's levels are as many bytes as the data at 2^20); the level table again after
        ntt.ensure_twiddles(ntt.log_max, compact=True)
        out["NTT", f"{NATURAL}, compact twiddles"] = time_ms(backend.stream, lambda: ntt.ntt(d_data, log_n),
                                                               repeat=repeat)
        out["NTT", f"{RADIX_ONLY}, compact twiddles"] = time_ms(
            backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, False), repeat=repeat)
        ntt.ensure_twiddles(ntt.log_max, compact=False)
        # where the short pass sits (session 38): the other places than the defaults', where they move it
        natural_places, radix_places = moved_short_passes(log_n)
        for place in natural_places:
            ntt.natural_short_pass = place
            out["NTT", f"{NATURAL}, the short pass at the {place}"] = time_ms(
                backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)
        ntt.natural_short_pass = NTT_NATURAL_SHORT_PASS
        for place in radix_places:
            ntt.radix_short_pass = place
            out["NTT", f"{RADIX_ONLY}, the short pass at the {place}"] = time_ms(
                backend.stream, lambda: ntt.radix_passes(d_data, log_n, False, False), repeat=repeat)
        ntt.radix_short_pass = NTT_RADIX_SHORT_PASS
        # the reversing pass's rows a block (session 44): the counts other than the default's that change its plan
        for rows_log in (None, 0, 1):
            if natural_plan(log_n, rev_rows_log=rows_log) != natural_plan(log_n):
                ntt.natural_rev_rows_log = rows_log
                rows = "as many rows as fill them" if rows_log is None else f"{1 << rows_log} row(s)"
                out["NTT", f"{NATURAL}, its last pass in blocks of {rows}"] = time_ms(
                    backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)
        ntt.natural_rev_rows_log = NTT_NATURAL_REV_ROWS_LOG
        for kernel in NTT_NATURAL_KERNELS:  # the last pass's kernel (session 45): the other than the default
            if kernel != NTT_NATURAL_KERNEL:
                ntt.natural_kernel = kernel
                out["NTT", f"{NATURAL}, its last pass on the {kernel} kernel"] = time_ms(
                    backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)
        ntt.natural_kernel = NTT_NATURAL_KERNEL
        if in_place_plan(log_n) is not None:  # the last pass in place, no scratch array (session 36)
            ntt.natural_in_place = True
            out["NTT", f"{NATURAL}, that pass in place (no scratch array)"] = time_ms(
                backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)  # the default again in finally
        ntt.fused_reversal = False  # the passes, then a pass of their own for the bit reversal (before session 28)
        out["NTT", TILED_REVERSE] = time_ms(backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)
        ntt.tiled_bit_reverse = False
        out["NTT", ELEMENTWISE_REVERSE] = time_ms(backend.stream, lambda: ntt.ntt(d_data, log_n), repeat=repeat)
    finally:
        ntt.radix_log, ntt.tiled_bit_reverse, ntt.stages_per_pass = NTT_RADIX_LOG, True, STAGES_PER_PASS
        ntt.pass_kernel, ntt.fused_reversal, ntt.natural_in_place = NTT_PASS_KERNEL, True, NTT_NATURAL_IN_PLACE
        ntt.dependent_passes = NTT_DEPENDENT_PASSES
        ntt.natural_short_pass, ntt.radix_short_pass = NTT_NATURAL_SHORT_PASS, NTT_RADIX_SHORT_PASS
        ntt.natural_rev_rows_log, ntt.natural_kernel = NTT_NATURAL_REV_ROWS_LOG, NTT_NATURAL_KERNEL
    return out


def curve_rows(backend, curve, args, sppark: SpparkRows | str, rng, notes: list[str]) -> Iterator[Row]:
    """G1 MSM, G2 MSM, then NTT and H rows of one curve, each group's device buffers freed after it; the
    fixed-base tables' notes in ``notes``."""
    n = 1 << max([*args.g1, *(k + 1 for k in args.g2), args.ntt[0]])  # a G2 point is two G1 points' words
    points, scalars = random_msm_data(rng, curve, False, n)
    if args.g1:
        yield from msm_rows(backend, curve, False, args.g1, points, scalars, sppark, notes, args.tables)
    if args.g2:
        yield from msm_rows(backend, curve, True, args.g2, points.reshape(n // 2, 4, -1), scalars, sppark, notes,
                            args.tables)
    del points
    for log_n, ntt, radix, h, h_compact, variants in time_fr(
            backend, curve, list(range(args.ntt[0], args.ntt[1] + 1)), scalars["random"],
            stages_compared=tuple(args.ntt_stages)):
        ntt_ms = sppark_ms(sppark, SPPARK_NTT, log_n)
        yield Row(curve.name, "NTT", log_n, NATURAL, ntt, SPPARK_NTT, ntt_ms)
        yield Row(curve.name, "NTT", log_n, RADIX_ONLY, radix, SPPARK_NTT, ntt_ms)
        h_sppark = sppark_ms(sppark, SPPARK_NTT, log_n, times=H_NTTS)
        for input_, ms in ((QUOTIENT, h), (QUOTIENT_COMPACT, h_compact)):
            yield Row(curve.name, "H", log_n, input_, ms, f"{H_NTTS} x {SPPARK_NTT}", h_sppark)
        for (kernel, input_), ms in variants.items():
            if kernel == "NTT":
                yield Row(curve.name, kernel, log_n, input_, ms, SPPARK_NTT, ntt_ms)
            else:
                yield Row(curve.name, kernel, log_n, input_, ms, f"{H_NTTS} x {SPPARK_NTT}", h_sppark)


# -- the table ---------------------------------------------------------------------------------------
def summary(rows: list[Row]) -> list[list[str]]:
    """One line per curve, kernel and input: sizes, the ratio's range and at the largest size, the
    goal and at how many sizes it is met."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.curve, row.kernel, row.input), []).append(row)
    out = []
    for (curve, kernel, what), group in groups.items():
        ratios = [r.ratio for r in group if r.ratio is not None]
        last = max(group, key=lambda r: r.log_n)
        out.append([curve, kernel, what, f"2^{group[0].log_n}..2^{last.log_n}",
                    f"{min(ratios):.2f}-{max(ratios):.2f}" if ratios else "-", ratio_cell(last.ratio),
                    f"<= {GOALS[kernel]:g}", f"{sum(r.goal_met for r in group if r.ratio is not None)} of {len(group)}"
                    if ratios else "-"])
    return out


SUMMARY_HEADER = ["curve", "kernel", "input", "sizes", "ours ÷ sppark", "at the largest n", "goal", "met at"]


def markdown(rows: list[Row], device: str, notes: list[str]) -> str:
    sections = []
    for kernel in GOALS:
        mine = [r.cells() for r in rows if r.kernel == kernel]
        if mine:
            sections.append(f"## {kernel}\n\n{markdown_table(HEADER, mine)}\n")
    return (f"# Our MSM and NTT kernels against sppark's on {device}, same call (issue 16)\n\n"
            f"{METHOD}\n" + "".join(f"- {n}\n" for n in notes) + "\n" +
            "\n".join(sections) + f"\n## Summary\n\n{markdown_table(SUMMARY_HEADER, summary(rows))}\n")


def headlines() -> dict[tuple[str, str], str]:
    """{(kernel, input): legend label} of the rows the plot draws: the defaults, the 0/1 split and the fixed-base
    tables for the MSMs, the natural and the radix-only transform and H's defaults."""
    out = {}
    for group in ("G1", "G2"):
        for kind in SPPARK_MSM_ROWS:
            out[f"{group} MSM", kind] = kind
            out[f"{group} MSM", f"{kind}, {FIXED_BASE}"] = f"{kind}, over a fixed-base table"
        out[f"{group} MSM", "80% {0,1}" + SPLIT] = "80% {0,1}" + SPLIT
    out["NTT", NATURAL] = "NTT, natural order in and out"
    out["NTT", RADIX_ONLY] = "NTT, radix passes only (bit-reversed out)"
    out["H", QUOTIENT] = f"H ({QUOTIENT})"
    return out


def write_plot(table: Path) -> Path | None:
    """``<table>.png`` beside the table (bench.plots.plot_beside): the headline rows (``headlines``)."""
    from functools import partial

    from bench.plots import plot_beside
    from bench.plots.kernels import plot_vs_sppark

    return plot_beside(table, partial(plot_vs_sppark, headlines=headlines()))


def main() -> None:
    parser = arg_parser(f"{__doc__}\n{METHOD}")
    parser.add_argument("--curves", nargs="+", choices=sorted(sppark_stage.HARNESS), default=["bls12381", "bn128"])
    parser.add_argument("--g1", type=int, nargs="*", default=[20, 22, 24, 26], metavar="LOG")
    parser.add_argument("--g2", type=int, nargs="*", default=[20, 22, 24], metavar="LOG")
    parser.add_argument("--ntt", type=int, nargs=2, default=[20, 27], metavar=("MIN_LOG", "MAX_LOG"),
                        help="transform sizes; MAX_LOG below MIN_LOG: no NTT or H rows")
    parser.add_argument("--ntt-stages", type=int, nargs="*", default=list(STAGES_PER_PASS_COMPARED), metavar="K",
                        help=f"the other stages-per-launch plans timed beside the default {STAGES_PER_PASS}")
    parser.add_argument("--no-tables", dest="tables", action="store_false",
                        help="no MSM rows over fixed-base tables (a table takes up to 13-16x its points' VRAM)")
    parser.add_argument("--anchors", type=Path, default=REPO / ".anchors", help="folder of the sppark harness binaries")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per harness call")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "kernels_vs_sppark.md")
    args = parser.parse_args()
    call = harness_args(args.g1, args.g2, args.ntt[1])
    notes = [f"{platform.node()}, {time.strftime('%Y-%m-%d %H:%M')}; harness call per curve: "
             f"`bench_<curve> {' '.join(map(str, call))}`"]
    sppark = {}
    for name in args.curves:  # before our CUDA context
        with Stopwatch() as t:
            sppark[name] = run_sppark(name, args.anchors, call, args.timeout)
        notes.append(f"sppark {name}: {t.s:.0f} s" + (f", {sppark[name]}" if isinstance(sppark[name], str) else ""))
        print(notes[-1], flush=True)

    backend = CudaBackend()
    rng = np.random.default_rng(16)
    rows: list[Row] = []
    print(markdown_table(HEADER, []), flush=True)
    for name in args.curves:
        with Stopwatch() as t:
            try:
                for row in curve_rows(backend, curve_by_name(name), args, sppark[name], rng, notes):
                    rows.append(row)
                    print(markdown_table(HEADER, [row.cells()]).splitlines()[-1], flush=True)
                backend.allocator.trim()
            except Exception as exc:  # keep what was measured: the device time is scarce
                traceback.print_exc()
                notes.append(f"ours {name} stopped: {type(exc).__name__}: {one_line(str(exc))}")
        notes.append(f"ours {name} (data, kernel builds, timings): {t.s:.0f} s")
        print(notes[-1], flush=True)
    device = backend.device.name
    backend.close()
    write_result(args.out, markdown(rows, device, notes), show=f"wrote {args.out}")
    print(f"plot: {write_plot(args.out) or 'none (no matplotlib; python3 -m bench.plots draws it)'}")
    print(markdown_table(SUMMARY_HEADER, summary(rows)), flush=True)


if __name__ == "__main__":
    main()

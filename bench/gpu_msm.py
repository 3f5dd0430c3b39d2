"""G1 and G2 MSM on the GPU: points resident, scalars copied from (pinned) host memory on every call.

ms is the median of CUDA-event timings after a warm-up; "Madd/s" is (bucket additions n * windows)
per second, the rate the bucket step runs at. Usage:
  python3 -m bench.gpu_msm [g1_min_log] [g1_max_log] [g2_max_log] [out.md] [--no-variants] [--windows 18,20,22]
      [--g2-windows 16,18,20]

--no-variants skips the occupancy variants of the G1 bucket kernel (the slow part at 2^26).
--windows adds G1 rows at g1_max_log with each window width given instead of plan_msm's choice
(its cost model, msm.BALANCED_WINDOW_MODEL, is fitted, not exact); --g2-windows
the same for G2 at g2_max_log. --window-sweep 16,18,20,22 times G1 at those sizes over every width
between the additions-only and the balanced window models' choices (msm.py), one wider and narrower (--sweep-span K:
K; --sweep-g2: G2 too, up to g2_max_log; --sweep-widths 15-21: those widths instead; --sweep-curves,
--sweep-random: one curve, random scalars only).
--level0 20,22,24 times G1 and G2 (up to g2_max_log) at those sizes with level 0 of the bucket sums
flat and chunked, same data; --level0-entries 32,128,256 adds flat and chunked rows at those entries a thread.
--partial-levels 22,24,26 times G1 and G2 (up to g2_max_log) at those sizes with level 0's pieces summed in place
(msm_sum_pieces, the default) and by the levels into fresh buffers before session 56 (MsmRunner.partial_levels), same
data (--level0-curves and --level0-groups narrow it too).
--sort-compare 24,26 times G1 and G2 (up to g2_max_log) at those sizes with the binned digit sort and
the ranks-and-scatter one, same data.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from bench.common import arg_parser, bit_heavy, markdown_table, random_below, time_ms, write_result
from pipeline import progress
from pipeline.backends.cuda.backend import CudaBackend
from pipeline.backends.cuda.launch import G1_MIN_BLOCKS_BUILT
from pipeline.backends.cuda.memory import PinnedHostBuffer
from pipeline.backends.cuda.msm import ADDITIONS_WINDOW_MODEL, BALANCED_WINDOW_MODEL, MsmPlan, MsmRunner, plan_msm
from pipeline.backends.cuda.split import enqueue_split
from pipeline.backends.cuda.streams import Event
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import BLS12_381, BN254


phases: list = []  # (curve, group, n, scalars, {phase: ms}): variants may time different phases


SPLIT = ", 0/1 split"  # suffix of a bit-heavy kind's row through the 0/1 split


@dataclass(frozen=True)
class MsmTiming:
    """One size and kind of scalars: the median ms, the plan of the (last) Pippenger call, and
    where one profiled call's time went (at the sizes asked for, else None)."""

    curve: str
    group: str  # "G1" or "G2"
    log_n: int
    scalars: str  # "random", "80% {0,1}", or "80% {0,1}" + SPLIT
    ms: float
    plan: MsmPlan
    phases_ms: dict[str, float] | None = None

    @property
    def madd_per_s(self) -> float:
        """Bucket additions (n x windows) per second, in millions."""
        return (1 << self.log_n) * self.plan.n_windows / (self.ms * 1e-3) / 1e6


def random_msm_data(rng, curve, g2: bool, n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """n random points (field elements: bench/common.py says why) and n scalars of each kind."""
    fq, fr = curve.fq, curve.fr
    coords = 4 if g2 else 2
    points = random_below(rng, n * coords, fq.limbs, fq.bits).reshape(n, coords, fq.limbs)
    scalars = {"random": random_below(rng, n, fr.limbs, fr.bits)}
    scalars["80% {0,1}"] = bit_heavy(rng, scalars["random"])
    return points, scalars


def time_msms(backend, curve, g2: bool, logs: Iterable[int], points: np.ndarray, scalars: dict[str, np.ndarray],
              repeats: Callable[[int], int], profile_logs: Iterable[int] = (), split: bool = False,
              c: int | None = None) -> Iterator[MsmTiming]:
    """Our MSM over the first 2^log_n points, per size and kind of scalars: points resident, the
    scalars copied from pinned memory (the prep stage's staging buffer) in every timed call, in pieces whose
    digits are counted as each arrives (MsmRunner.sort's h_scalars; the split rows copy them whole first).
    With ``split``, each bit-heavy kind once more the way the engine takes a bit-heavy witness
    (CudaBackend._enqueue_msms): classified and compacted on the device, the ones summed, the
    others through Pippenger, all inside the timed call (the host's counts are not). ``c``: the
    window width (default: plan_msm's choice)."""
    rt = backend.runtime(curve)
    group, fr = ("G2" if g2 else "G1"), curve.fr
    logs, profile_logs = list(logs), set(profile_logs)
    n_max = 1 << max(logs)
    nbytes = n_max * fr.limbs * 8
    with backend.allocator.upload(points[:n_max], "bench points") as d_points, \
            backend.allocator.alloc(nbytes, "bench scalars") as d_s, \
            backend.allocator.alloc(2 * rt.msm.xyzz_bytes(g2), "bench split results") as d_out, \
            PinnedHostBuffer(backend.device, nbytes) as h_pinned:
        for log_n in progress.iterate(logs, f"{curve.name} {group} MSM sizes"):
            n = 1 << log_n
            h_scalars = h_pinned.view(np.uint64, (n, fr.limbs))
            for kind, values in scalars.items():
                h_scalars[:] = values[:n]

                def call():  # the copy in pieces, each counted as it arrives (MsmRunner.scalar_pieces)
                    rt.msm.run_xyzz(g2, d_points.ptr, d_s.ptr, n, c, h_scalars=h_scalars)
                ms = time_ms(backend.stream, call, warmup=1, repeat=repeats(log_n))
                plan = rt.msm.last_plan
                phases = _profiled(rt.msm, call) if log_n in profile_logs else None
                yield MsmTiming(curve.name, group, log_n, kind, ms, plan, phases)
                if split and kind != "random":
                    shape = WitnessShape.of(values[:n], 0)  # prep_msm counts on the host, off the lock

                    def split_call():
                        d_s.upload(h_scalars, backend.stream)
                        _enqueue_split_msm(rt.msm, g2, d_points.ptr, d_s.ptr, shape, d_out.ptr)
                    ms = time_ms(backend.stream, split_call, warmup=1, repeat=repeats(log_n))
                    yield MsmTiming(curve.name, group, log_n, kind + SPLIT, ms, rt.msm.last_plan)


def _profiled(msm: MsmRunner, call: Callable[[], None]) -> dict[str, float]:
    msm.profile = True
    try:
        call()
    finally:
        msm.profile = False
    return dict(msm.last_phases_ms)


def _enqueue_split_msm(msm: MsmRunner, g2: bool, d_points: int, d_scalars: int, shape: WitnessShape,
                       d_out: int) -> None:
    """The split, the ones' point sum into d_out, Pippenger over the others into the next slot."""
    parts = enqueue_split(msm, d_scalars, shape)
    try:
        msm.enqueue_point_sum(g2, d_points, parts.d_one_idx.ptr, shape.n_one, d_out)
        msm.enqueue(g2, d_points, parts.d_other_scalars.ptr, shape.n_other, d_out + msm.xyzz_bytes(g2),
                    d_point_index=parts.d_other_idx.ptr)
    finally:
        parts.free()  # stream-ordered: after the work queued above


@dataclass(frozen=True)
class TableTiming:
    """An MSM over a fixed-base table (issue 16's first lever: a key's points never change), with the
    table's build time and size; ``timing.plan`` is the table's plan. Where the table would not fit the free
    device memory: ``timing`` None and ``skipped`` says why."""

    log_n: int
    timing: MsmTiming | None
    build_ms: float = 0.0
    table_gb: float = 0.0
    skipped: str | None = None

    def describe(self) -> str:
        """The table as a note names it: width, windows, bucket sets, size and build time."""
        if self.timing is None:
            return f"2^{self.log_n}: no table ({self.skipped})"
        plan = self.timing.plan
        return (f"2^{self.log_n}: c = {plan.c}, {plan.n_windows} windows, {table_layout(plan)}, "
                f"{self.table_gb:.1f} GB, built in {self.build_ms:.0f} ms")


def table_layout(plan: MsmPlan) -> str:
    """A table plan's bucket sets and the windows it holds, as the rows and notes say them."""
    return f"{plan.table_sets} bucket set{'s' if plan.table_sets > 1 else ''}, {plan.table_windows} in the table"


TABLE_MARGIN = 1 << 30  # device bytes left free beside a table, its build and its MSM's scratch


def table_room(backend, msm: MsmRunner, g2: bool, n: int, c: int | None = None, table_sets: int = 1) -> str | None:
    """None where the table of ``n`` points, its build's scratch and one MSM over it fit the device's free
    memory now; else why not (the pool's unused memory given back first)."""
    backend.allocator.trim()
    need = (msm.table_bytes(g2, n, c, table_sets) + msm.table_build_bytes(g2, n)
            + msm.scratch_bytes(n, g2, c=c, fixed=True, table_sets=table_sets) + TABLE_MARGIN)
    free = backend.device.free_bytes()
    return None if need <= free else f"needs {need / 1e9:.1f} GB, {free / 1e9:.1f} GB free"


def time_table_msms(backend, curve, g2: bool, logs: Iterable[int], points: np.ndarray,
                    scalars: dict[str, np.ndarray], repeats: Callable[[int], int], c: int | None = None,
                    table_sets: int = 1, profile: bool = False) -> Iterator[TableTiming]:
    """Our MSM over a fixed-base table of the first 2^log_n points (``MsmRunner.build_table`` once a size,
    timed by events, then ``enqueue_fixed``), per size and kind of scalars: the scalars copied whole from
    pinned memory in every timed call, then sorted for the table. ``c`` and ``table_sets``: the table's width
    (None: its plan's) and bucket sets. ``profile``: one profiled call a row (``MsmTiming.phases_ms``). A size
    whose table does not fit the free device memory yields a skipped timing."""
    msm, group, fr = backend.runtime(curve).msm, ("G2" if g2 else "G1"), curve.fr
    logs = list(logs)
    n_max = 1 << max(logs)
    nbytes = n_max * fr.limbs * 8
    with backend.allocator.upload(points[:n_max], "bench points") as d_points, \
            backend.allocator.alloc(nbytes, "bench scalars") as d_s, \
            backend.allocator.alloc(msm.xyzz_bytes(g2), "bench result") as d_out, \
            PinnedHostBuffer(backend.device, nbytes) as h_pinned:
        for log_n in progress.iterate(logs, f"{curve.name} {group} fixed-base MSM sizes"):
            n = 1 << log_n
            why_not = table_room(backend, msm, g2, n, c, table_sets)
            if why_not is not None:
                yield TableTiming(log_n, None, skipped=why_not)
                continue
            start, end = Event(), Event()
            try:
                start.record(backend.stream)
                table = msm.build_table(g2, d_points.ptr, n, c=c, table_sets=table_sets)
                end.record(backend.stream)
                end.synchronize()
                build_ms = end.elapsed_ms(start)
            finally:
                start.close()
                end.close()
            try:
                h_scalars = h_pinned.view(np.uint64, (n, fr.limbs))
                for kind, values in scalars.items():
                    h_scalars[:] = values[:n]

                    def call():
                        d_s.upload(h_scalars, backend.stream)
                        msm.enqueue_fixed(table, d_s.ptr, n, d_out.ptr)
                    ms = time_ms(backend.stream, call, warmup=1, repeat=repeats(log_n))
                    # enqueue_fixed leaves its marks to the caller (run_fixed collects them)
                    phases_ms = _profiled(msm, lambda: (call(), msm._collect_marks())) if profile else None
                    timing = MsmTiming(curve.name, group, log_n, kind, ms, table.plan, phases_ms)
                    yield TableTiming(log_n, timing, build_ms, table.d_table.nbytes / 1e9)
            finally:
                table.free()


def bench_group(backend, curve, g2: bool, logs, rng, rows, repeat=5, c: int | None = None, label: str | None = None,
                data: tuple | None = None):
    """Rows (and phase rows) of one group over ``logs``; ``label`` names a variant's rows (default
    the group), ``data`` reuses points and scalars (``random_msm_data``) across variants."""
    logs = list(logs)
    if not logs:  # e.g. G2 with g2_max_log below g1_min_log: no G2 rows
        return
    points, scalars = data or random_msm_data(rng, curve, g2, 1 << max(logs))
    profile_logs = [k for k in logs if k >= max(logs) - 2]  # where the time goes, at the larger sizes
    for t in time_msms(backend, curve, g2, logs, points, scalars, lambda _: repeat, profile_logs, c=c):
        group = label or t.group
        if t.phases_ms is not None:
            phases.append((t.curve, group, f"2^{t.log_n}", t.scalars, dict(t.phases_ms)))
        rows.append([t.curve, group, f"2^{t.log_n}", t.scalars, f"{t.ms:.2f}", t.plan.c, f"{t.madd_per_s:.0f}"])
        print(rows[-1], flush=True)


def window_sweep(backend, logs: Iterable[int], rng, rows, span: int = 1, g2_max: int | None = None,
                 widths: range | None = None, curves: Iterable[str] | None = None,
                 kinds: Iterable[str] | None = None) -> None:
    """G1 rows at each size of ``logs`` for every width between the two window models' choices (``span``
    wider and narrower), both curves: the data that moved G1 below 2^24 onto the balanced model (session 13).
    ``g2_max``: G2 rows too at the sizes up to it (a partition's MSMs share one width: one digit sort).
    ``widths``: these widths instead (the models' picks still named); ``curves``, ``kinds``: only these
    curves (by name) and kinds of scalars (e.g. "random": a 2^26-2^27 sweep's time goes to the widths)."""
    for curve in (c for c in (BLS12_381, BN254) if curves is None or c.name in curves):
        msm = backend.runtime(curve).msm
        for g2 in (False, True) if g2_max is not None else (False,):
            for log_n in [k for k in logs if not g2 or k <= g2_max]:
                n = 1 << log_n
                picks = {plan_msm(n, curve.fr.bits, cache_bytes=msm.cache_bytes, model=m, measured=False).c: name
                         for name, m in (("additions model", ADDITIONS_WINDOW_MODEL), ("plan", BALANCED_WINDOW_MODEL))}
                measured = plan_msm(n, curve.fr.bits, cache_bytes=msm.cache_bytes).c
                if measured not in picks:
                    picks[measured] = "measured"
                points, scalars = random_msm_data(rng, curve, g2, n)
                if kinds is not None:
                    scalars = {k: v for k, v in scalars.items() if k in kinds}
                for c in widths or range(min(picks) - span, max(picks) + span + 1):
                    label = f"{'G2' if g2 else 'G1'} c={c}" + (f" ({picks[c]})" if c in picks else "")
                    bench_group(backend, curve, g2, [log_n], rng, rows, repeat=3 if g2 else 5, c=c, label=label,
                                data=(points, scalars))


def compare_variants(backend, logs: Iterable[int], rng, rows, g2_max: int,
                     variants: list[tuple[str, dict]], curves: Iterable[str] | None = None,
                     groups: Iterable[bool] = (False, True)) -> None:
    """G1 and G2 (up to 2^g2_max) rows at each size of ``logs`` once per variant, on the same points and
    scalars: (label suffix, MsmRunner attributes to set); the runner's attributes are restored after.
    ``curves`` (names), ``groups`` (g2 flags): only these (a 2^26 G2 comparison is minutes of device time)."""
    logs, groups = list(logs), tuple(groups)
    for curve in (c for c in (BLS12_381, BN254) if curves is None or c.name in curves):
        msm = backend.runtime(curve).msm
        saved = {name: getattr(msm, name) for _, attrs in variants for name in attrs}
        try:
            for g2 in groups:
                sizes = [k for k in logs if not g2 or k <= g2_max]
                if not sizes:
                    continue
                data = random_msm_data(rng, curve, g2, 1 << max(sizes))
                for suffix, attrs in variants:
                    for name, value in attrs.items():
                        setattr(msm, name, value)
                    label = ("G2" if g2 else "G1") + suffix
                    try:
                        msm._affine_accumulate(g2)  # a variant that is not built says so here, before any launch
                    except ValueError as e:
                        print(f"{curve.name} {label}: left out ({e})", flush=True)
                        continue
                    bench_group(backend, curve, g2, sizes, rng, rows, repeat=3 if g2 else 5, label=label, data=data)
        finally:
            for name, value in saved.items():
                setattr(msm, name, value)


def level0_compare(backend, logs: Iterable[int], rng, rows, g2_max: int, entries: Iterable[int | None] = (None,),
                   curves: Iterable[str] | None = None, groups: Iterable[bool] = (False, True)) -> None:
    """Level 0 of the bucket sums flat and chunked (MsmRunner.level0_flat), at the plan's widths; each once
    per count of ``entries`` a thread (None: msm.level0_chunk's). Chunked is built for the default occupancy
    variants only (launch.G1_LEVEL0_CHUNKED_BUILT): BLS12-381's G1 (3 blocks an SM) has flat rows alone."""
    entries = list(entries)
    variants = [(" flat" + (f" T={t}" if t else ""), {"level0_flat": True, "level0_entries": t}) for t in entries]
    variants += [(" chunked" + (f" T={t}" if t else ""), {"level0_flat": False, "level0_entries": t}) for t in entries]
    compare_variants(backend, logs, rng, rows, g2_max, variants, curves, groups)


def partial_levels_compare(backend, logs: Iterable[int], rng, rows, g2_max: int, curves: Iterable[str] | None = None,
                           groups: Iterable[bool] = (False, True)) -> None:
    """Level 0's pieces summed in place and by the tree of levels before session 56 (MsmRunner.partial_levels)."""
    compare_variants(backend, logs, rng, rows, g2_max,
                     [(" pieces in place", {"partial_levels": "in_place"}), (" partial tree", {"partial_levels": "tree"})],
                     curves, groups)


def sort_compare(backend, logs: Iterable[int], rng, rows, g2_max: int) -> None:
    """The binned digit sort and the ranks-and-scatter one (MsmRunner.binned_sort)."""
    compare_variants(backend, logs, rng, rows, g2_max,
                     [(" binned sort", {"binned_sort": True}), (" scatter sort", {"binned_sort": False})])


def phase_table(rows: list) -> str:
    """One column per phase any row timed, in the order first seen; blank where a row's sort has none."""
    names: list[str] = []
    for *_, ms in rows:
        names += [k for k in ms if k not in names]
    body = [[*head, *(f"{ms[k]:.2f}" if k in ms else "" for k in names)] for *head, ms in rows]
    return markdown_table(["curve", "group", "n", "scalars"] + [f"{k} ms" for k in names], body)


def main(g1_min: int = 16, g1_max: int = 24, g2_max: int = 22, out_path: str | None = None,
         variants: bool = True, windows: Iterable[int] = (), g2_windows: Iterable[int] = (),
         sweep_logs: Iterable[int] = (), level0_logs: Iterable[int] = (), level0_entries: Iterable[int] = (),
         sort_logs: Iterable[int] = (), sweep_span: int = 1, sweep_g2: bool = False, sweep_widths: range | None = None,
         sweep_curves: Iterable[str] | None = None, sweep_kinds: Iterable[str] | None = None,
         level0_curves: Iterable[str] | None = None, level0_groups: Iterable[bool] = (False, True),
         partial_logs: Iterable[int] = ()) -> str:
    backend = CudaBackend()
    rng = np.random.default_rng(2)
    rows: list = []
    for curve in (BLS12_381, BN254):
        bench_group(backend, curve, False, range(g1_min, g1_max + 1, 2), rng, rows)
    for curve in (BLS12_381, BN254):
        bench_group(backend, curve, True, range(g1_min, g2_max + 1, 2), rng, rows, repeat=3)
    # at the largest G1 size, on one set of points and scalars per curve: the occupancy variants of the
    # bucket kernel (bench/NOTES.md, MSM v2) and window widths other than plan_msm's
    for curve in (BLS12_381, BN254) if variants or windows else ():
        data = random_msm_data(rng, curve, False, 1 << g1_max)
        msm = backend.runtime(curve).msm
        default_blocks = msm.g1_min_blocks
        for min_blocks in [b for b in G1_MIN_BLOCKS_BUILT if b != default_blocks] if variants else []:
            msm.g1_min_blocks = min_blocks
            bench_group(backend, curve, False, [g1_max], rng, rows, label=f"G1 min_blocks={min_blocks}", data=data)
        msm.g1_min_blocks = default_blocks
        for c in windows:
            bench_group(backend, curve, False, [g1_max], rng, rows, c=c, label=f"G1 c={c}", data=data)
    for curve in (BLS12_381, BN254) if g2_windows else ():
        data = random_msm_data(rng, curve, True, 1 << g2_max)
        for c in g2_windows:
            bench_group(backend, curve, True, [g2_max], rng, rows, repeat=3, c=c, label=f"G2 c={c}", data=data)
    window_sweep(backend, sweep_logs, rng, rows, sweep_span, g2_max if sweep_g2 else None, sweep_widths, sweep_curves,
                 sweep_kinds)
    level0_compare(backend, level0_logs, rng, rows, g2_max, [None, *level0_entries], level0_curves, level0_groups)
    partial_levels_compare(backend, partial_logs, rng, rows, g2_max, level0_curves, level0_groups)
    sort_compare(backend, sort_logs, rng, rows, g2_max)
    table = markdown_table(["curve", "group", "n", "scalars", "ms", "window c", "Madd/s"], rows)
    text = (f"# MSM on {backend.device.name}\n\nPoints resident on the device, scalars copied from host "
            f"memory (pinned, as the prep_msm stage stages them) on every call; median of CUDA-event timings after one warm-up.\n\n{table}\n\n"
            f"## Phases (one profiled call; host syncs between phases included)\n\n{phase_table(phases)}\n")
    backend.close()
    write_result(out_path, text)
    return text


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("g1_min_log", type=int, nargs="?", default=16)
    parser.add_argument("g1_max_log", type=int, nargs="?", default=24)
    parser.add_argument("g2_max_log", type=int, nargs="?", default=22)
    parser.add_argument("out", nargs="?", default=None, help="markdown file (default: print only)")
    parser.add_argument("--no-variants", dest="variants", action="store_false")
    parser.add_argument("--windows", type=lambda v: [int(c) for c in v.split(",")], default=[],
                        help="G1 window widths to time at g1_max_log, comma-separated")
    parser.add_argument("--g2-windows", type=lambda v: [int(c) for c in v.split(",")], default=[],
                        help="G2 window widths to time at g2_max_log, comma-separated")
    parser.add_argument("--window-sweep", type=lambda v: [int(k) for k in v.split(",")], default=[],
                        help="sizes (log2, comma-separated) of a G1 sweep over the widths around both window models' choices")
    parser.add_argument("--sweep-span", type=int, default=1, help="widths past the models' choices the sweep times")
    parser.add_argument("--sweep-g2", action="store_true", help="the sweep times G2 too, at its sizes up to g2_max_log")
    parser.add_argument("--sweep-widths", type=lambda v: range(int(v.split("-")[0]), int(v.split("-")[1]) + 1),
                        default=None, metavar="LO-HI",
                        help="the sweep times these widths (e.g. 15-21), not the models'")
    parser.add_argument("--sweep-curves", nargs="+", choices=[BLS12_381.name, BN254.name], default=None,
                        help="the sweep's curves (default both)")
    parser.add_argument("--sweep-random", action="store_true",
                        help="the sweep times random scalars only (not the 80%% {0,1} ones too)")
    parser.add_argument("--level0", type=lambda v: [int(k) for k in v.split(",")], default=[],
                        help="sizes (log2, comma-separated) timed with level 0 of the bucket sums flat and chunked "
                             "(G2 up to g2_max_log)")
    parser.add_argument("--level0-entries", type=lambda v: [int(k) for k in v.split(",")], default=[],
                        help="with --level0: flat and chunked rows once more per count of entries a thread (e.g. 32,128,256)")
    parser.add_argument("--level0-curves", nargs="+", choices=[BLS12_381.name, BN254.name], default=None,
                        help="with --level0 or --partial-levels: only these curves")
    parser.add_argument("--level0-groups", nargs="+", choices=["G1", "G2"], default=["G1", "G2"],
                        help="with --level0 or --partial-levels: only these groups")
    parser.add_argument("--partial-levels", type=lambda v: [int(k) for k in v.split(",")], default=[],
                        help="sizes (log2, comma-separated) timed with level 0's pieces summed in place and by the "
                             "levels before session 56 (G2 up to g2_max_log)")
    parser.add_argument("--sort-compare", type=lambda v: [int(k) for k in v.split(",")], default=[],
                        help="sizes (log2, comma-separated) timed with the binned digit sort and the scatter one "
                             "(G2 up to g2_max_log)")
    a = parser.parse_intermixed_args()  # --no-variants may come anywhere
    main(a.g1_min_log, a.g1_max_log, a.g2_max_log, a.out, variants=a.variants, windows=a.windows,
         g2_windows=a.g2_windows, sweep_logs=a.window_sweep, level0_logs=a.level0,
         level0_entries=a.level0_entries, sort_logs=a.sort_compare, sweep_span=a.sweep_span, sweep_g2=a.sweep_g2,
         sweep_widths=a.sweep_widths, sweep_curves=a.sweep_curves, sweep_kinds=["random"] if a.sweep_random else None,
         level0_curves=a.level0_curves, level0_groups=tuple(g == "G2" for g in a.level0_groups),
         partial_logs=a.partial_levels)

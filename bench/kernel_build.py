"""Kernel builds (NVRTC, cache empty): the units compiled on threads of this process, as
``build_units`` does, against spawned worker processes, as it did before (they die under
``python3 -``: a spawned worker re-imports the host's ``__main__``). Same units, fresh cache
each run, the two ways interleaved. Compile only: no GPU needed.

"main-thread stall" is the longest the calling thread waited for the GIL while the threads
compiled (it wakes every 10 ms): near 10 ms means NVRTC runs with the GIL released.

    python3 -m bench.kernel_build [--units arith ntt ...] [--curves bn128 ...] [--repeat 1]
Writes bench/results/kernel_build.md.
"""
from __future__ import annotations

import os
import platform
import statistics
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from bench.common import Stopwatch, add_curves, arg_parser, markdown_table, result_path, write_result
from pipeline.backends.cuda import kernels
from pipeline.backends.cuda.constants import HEADER_NAME, curve_header
from pipeline.curves import curve_by_name


def on_threads(curves, units, cache: Path) -> tuple[float, float]:
    """(wall s, longest main-thread stall ms) of ``build_units``."""
    done = threading.Event()
    worker = threading.Thread(target=lambda: (kernels.build_units(curves, units=units, cache_dir=cache), done.set()))
    stall, last = 0.0, time.perf_counter()
    with Stopwatch() as t:
        worker.start()
        while not done.wait(0.01):
            now = time.perf_counter()
            stall, last = max(stall, now - last), now
        worker.join()
    return t.s, stall * 1e3


def in_spawned_processes(curves, units, cache: Path) -> float:
    """Wall s of the same jobs in spawned processes (the former ``build_units``)."""
    jobs = [(u, kernels.UNITS[u], {HEADER_NAME: curve_header(c)}, "sm_90", cache, None) for c in curves for u in units]
    with Stopwatch() as t:
        with ProcessPoolExecutor(min(len(jobs), os.cpu_count() or 1), mp_context=get_context("spawn")) as pool:
            list(pool.map(kernels._compile_one, jobs))
    return t.s


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--units", nargs="+", choices=list(kernels.UNITS), default=list(kernels.UNITS))
    add_curves(parser)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    curves = [curve_by_name(c) for c in args.curves]
    threads, stalls, processes = [], [], []
    for _ in range(args.repeat):
        for way in ("threads", "processes"):
            with tempfile.TemporaryDirectory() as cache:
                if way == "threads":
                    wall, stall = on_threads(curves, args.units, Path(cache))
                    threads.append(wall)
                    stalls.append(stall)
                else:
                    processes.append(in_spawned_processes(curves, args.units, Path(cache)))
            print(f"{way}: {(threads if way == 'threads' else processes)[-1]:.1f} s", flush=True)
    t, p = statistics.median(threads), statistics.median(processes)
    row = [" ".join(args.units), " ".join(args.curves), len(args.units) * len(curves), f"{t:.1f}", f"{p:.1f}",
           f"{p / t:.2f}", f"{max(stalls):.0f}"]
    table = markdown_table(["units", "curves", "jobs", "threads s", "spawned processes s", "processes ÷ threads",
                            "main-thread stall ms (max)"], [row])
    text = (f"# Kernel builds: threads vs spawned processes\n\nEmpty cache each run, median of {args.repeat}, "
            f"the two ways interleaved; {platform.node()}, {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f} at the end.\n\n{table}\n")
    write_result(result_path("kernel_build.md"), text)


if __name__ == "__main__":
    main()

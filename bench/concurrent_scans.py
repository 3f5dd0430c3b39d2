"""Two witness scans started together, as prep_msm's two workers start a job's first two partitions (issue 11:
the stream's first GPU stage waits for the first scan to end).

    python3 -m bench.concurrent_scans [LOG_SIZE...]      default 22 24; writes bench/results/concurrent_scans.md

"interleaved": the worker pool's pieces of the two scans queued side by side (``ThreadPoolExecutor.map`` from
each caller, formats.binfile.over_chunks before session 32): both scans end at about twice one scan's time.
"in turn": over_chunks as it is, each call's pieces queued together: the first scan ends after about one
scan's time, the second when both would have. One scan alone is timed beside them. Witness: the seed's shape (95%
of values in {0, 1}), the staging copies in fresh arrays (pinned memory in the engine). Medians of
``--repeat`` runs, the three arrangements interleaved.
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from unittest import mock

import numpy as np

from bench.common import add_log_sizes, arg_parser, bit_heavy, markdown_table, random_below, result_path, write_result
from pipeline.curves import BLS12_381
from pipeline.engine import EngineConfig
from pipeline.formats import binfile
from pipeline.groth16 import witness_scan
from pipeline.groth16.witness_scan import scan_witness


def interleaved_over_chunks(total, chunk, task, pool="formats"):
    """over_chunks as it was: each caller's pieces handed to the pool by ``map``, so two callers' interleave."""
    return list(binfile.worker_pool(pool).map(lambda ab: task(*ab), binfile.chunk_bounds(total, chunk)))


def two_scans(witnesses, outs) -> tuple[float, float]:
    """Seconds from the start to the first scan's end and to the second's (two threads started together)."""
    go, ends = threading.Barrier(3), []

    def scan(k: int) -> None:
        go.wait()
        scan_witness(witnesses[k], BLS12_381.fr.modulus, 9, f"witness {k}", out=outs[k])
        ends.append(time.perf_counter())

    threads = [threading.Thread(target=scan, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    first, second = sorted(ends)
    return first - t0, second - t0


def measure(log_n: int, repeat: int) -> list:
    rng = np.random.default_rng(log_n)
    witnesses = [bit_heavy(rng, random_below(rng, 1 << log_n, 4, BLS12_381.fr.bits), 0.95) for _ in range(2)]
    outs = [np.zeros_like(w) for w in witnesses]
    samples = {"alone": [], "interleaved": [], "in turn": []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        scan_witness(witnesses[0], BLS12_381.fr.modulus, 9, "alone", out=outs[0])
        samples["alone"].append((time.perf_counter() - t0, 0.0))
        with mock.patch.object(witness_scan, "over_chunks", interleaved_over_chunks):
            samples["interleaved"].append(two_scans(witnesses, outs))
        samples["in turn"].append(two_scans(witnesses, outs))
    ms = {k: (1e3 * statistics.median(a for a, _ in v), 1e3 * statistics.median(b for _, b in v),
              1e3 * max(a for a, _ in v)) for k, v in samples.items()}
    return [f"2^{log_n}", f"{ms['alone'][0]:.0f}", f"{ms['interleaved'][0]:.0f} ({ms['interleaved'][2]:.0f})",
            f"{ms['interleaved'][1]:.0f}", f"{ms['in turn'][0]:.0f} ({ms['in turn'][2]:.0f})",
            f"{ms['in turn'][1]:.0f}",
            f"{ms['in turn'][0] / ms['interleaved'][0]:.2f}"]


def main() -> None:
    parser = arg_parser(__doc__)
    add_log_sizes(parser, [22, 24])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=None, help="the table's file (default bench/results/concurrent_scans.md)")
    parser.add_argument("--gil-interval", type=float, default=EngineConfig().gil_switch_interval_s,
                        help="sys.setswitchinterval while timing (default: the engine's; 0: Python's own)")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads of the formats pool (default: the library's, min(8, cores)); more than the "
                             "cores stands for a larger host's contention for the GIL, not its speed")
    args = parser.parse_args()
    if args.gil_interval:
        sys.setswitchinterval(args.gil_interval)
    if args.workers:
        with binfile._pools_lock:  # the bench's pool size; the library sizes its pools by the cores
            binfile._pools["formats"] = ThreadPoolExecutor(args.workers, thread_name_prefix="zkpipe-formats")
            binfile._submit_locks["formats"] = threading.Lock()
    rows = [measure(k, args.repeat) for k in args.log_sizes]
    table = markdown_table(["values", "one scan alone ms", "interleaved: first ends ms (worst)",
                            "interleaved: second ends ms", "in turn: first ends ms (worst)", "in turn: second ends ms",
                            "first end, in turn / interleaved"], rows)
    text = (f"# Two witness scans started together (prep_msm's first two partitions)\n\nMedian of {args.repeat} "
            f"runs (the worst in brackets); {platform.node()} ({os.cpu_count()} cores, worker pool of "
            f"{binfile.worker_pool()._max_workers}), "
            f"Python {platform.python_version()}, numpy {np.__version__}, GIL switch interval "
            f"{sys.getswitchinterval() * 1e3:g} ms (the engine's). BLS12-381 witnesses, 95% of values in "
            f"{{0, 1}}; scan_witness with the below-r check, staging into fresh arrays.\n\n{table}\n")
    write_result(args.out or result_path("concurrent_scans.md"), text, show=table)


if __name__ == "__main__":
    main()

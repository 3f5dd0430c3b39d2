"""Where a lone natural-order transform's time goes: the device's work, and the host's queueing ahead of it.

Issue 16's NTT cell times one ``NttRunner.ntt`` between CUDA events. The start event fires as soon as it is queued
(the GPU is idle), so the cell also counts the host's time to make the first launch, and any gap where the host is
later with a launch than the GPU is with the pass before. At 2^20 that cell moved 0.97-1.10 of sppark's from one
process to the next (session 45). One process, alternating rounds (common.alternating_rounds), forward transforms of
resident data, ms between CUDA events, each mode's median over ``--repeat`` transforms:

- lone: what the cell times, its launches queued from Python one by one;
- lone, from a graph: the same launches replayed from a CUDA graph (NttRunner.natural_graph_max_log);
- two in a row (time / 2): the host's time ahead of the first launch counted once for two;
- behind another: a transform queued before the start event, so the GPU is busy while the host queues the timed
  one; the events time the device's work alone (plain launches, and replayed from a graph).

The host column: the median wall time of the ``ntt()`` call itself (queueing only; synchronised after, outside it).

    python3 -m bench.ntt_latency --sizes 20 21 22
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from bench.common import (add_curves, alternating_rounds, arg_parser, markdown_table, random_below, ratio_cell,
                          result_path, time_ms, warm, write_result)

MODES = ("lone", "lone, from a graph", "two in a row (time / 2)", "behind another (the device's time alone)",
         "behind another, from a graph")
GRAPH_MODES = {1, 4}


def host_us(stream, fn, repeat: int) -> float:
    """Median wall microseconds of ``fn()`` (the host's queueing), the stream synchronised between calls."""
    times = []
    for _ in range(repeat):
        stream.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    stream.synchronize()
    return statistics.median(times)


def measure(backend, curve: str, sizes: list[int], rounds: int, repeat: int) -> dict[int, dict]:
    """{log n: {"rounds": per round, ms of each mode; "host": {mode: us}}}."""
    from pipeline.curves import curve_by_name

    ntt = backend.runtime(curve_by_name(curve)).ntt
    ntt.ensure_twiddles(max(sizes))
    fr = ntt.fr
    words = random_below(np.random.default_rng(46), 1 << max(sizes), fr.limbs, fr.modulus.bit_length())
    stream, original = backend.stream, ntt.natural_graph_max_log
    out = {}
    with backend.allocator.upload(words, "ntt latency") as buf:
        try:
            for log_n in sizes:
                def one():
                    ntt.ntt(buf.ptr, log_n)

                def time_one(i: int) -> float:
                    ntt.natural_graph_max_log = log_n if i in GRAPH_MODES else -1
                    if i == 2:
                        return time_ms(stream, lambda: (one(), one()), warmup=2, repeat=repeat) / 2
                    return time_ms(stream, one, warmup=2, repeat=repeat, ahead=one if i >= 3 else None)

                warm(stream, one)
                per_round = alternating_rounds(len(MODES), rounds, time_one)
                host = {}
                for i in (0, 1):
                    ntt.natural_graph_max_log = log_n if i in GRAPH_MODES else -1
                    one(), one()  # a graph's key is captured on its second call
                    host[MODES[i]] = host_us(stream, one, repeat * rounds)
                out[log_n] = {"rounds": per_round, "host": host}
        finally:
            ntt.natural_graph_max_log = original
    return out


def markdown(device: str, results: dict[str, dict[int, dict]], rounds: int, repeat: int) -> str:
    header = ["curve", "n", "mode", "ms", "÷ lone (range)", "host us to queue it"]
    rows = []
    for curve, by_size in results.items():
        for log_n, res in by_size.items():
            per_round = res["rounds"]
            for i, mode in enumerate(MODES):
                host = res["host"].get(mode)
                rows.append([curve, f"2^{log_n}", mode, f"{statistics.median(r[i] for r in per_round):.4f}",
                             ratio_cell(per_round, i) if i else "1", "" if host is None else f"{host:.1f}"])
    return (f"# A lone natural-order NTT: the device's work and the host's queueing ({device})\n\n"
            f"{rounds} rounds, each mode once a round (the first mode of a round rotates); a mode's time in a round "
            f"is the median of {repeat} forward transforms between CUDA events. ms: the median over the rounds; "
            f"÷ lone: the median over the rounds of that round's time ÷ the lone transform's (range: the rounds' "
            f"smallest and largest). \"behind another\": a transform queued before the start event, so the events "
            f"time the device's work alone. host us: the median wall time of the ntt() call (queueing only).\n\n"
            f"{markdown_table(header, rows)}\n")


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 21, 22])
    add_curves(parser)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--out", type=Path, default=result_path("ntt_latency.md"))
    args = parser.parse_args()
    from pipeline.backends import create_backend

    backend = create_backend("cuda")
    results = {c: measure(backend, c, args.sizes, args.rounds, args.repeat) for c in args.curves}
    write_result(args.out, markdown(getattr(backend.device, "name", "cuda"), results, args.rounds, args.repeat))


if __name__ == "__main__":
    main()

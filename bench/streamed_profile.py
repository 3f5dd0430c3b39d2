"""Where a streamed pass spends its time (issue 12): one key, one budget, batches driven straight
through ``CudaBackend.start_batch`` as the engine drives them; host seconds per step (queueing
it: Python, and any copy that waits on the device), device milliseconds per step and per copy
(CUDA events), whether the key's streamed arrays are page-locked, and the resident path on the
same key in the same call for scale; device time per phase of the pass (``PhaseClock`` events
around each kind of queued work: the prologue's H, resident MSMs and tails, each chunk's scalar
uploads, ones sums per group (G1, G2) and MSMs per section), per partition. Rows with the host 0/1 split's arrays page-locked and
without (their copies then wait for the whole stream), and with the split's tail MSMs per chunk
or once per partition (CudaOptions.stream_tails), same call.

    python3 -m bench.streamed_profile --log 24 --budget-gib 3 --batches 1 4

Writes bench/results/streamed_profile_<curve>_2e<log>.md.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import numpy as np

from bench.common import RESULTS, markdown_table, write_result
from bench.streamed_keys import GIB, make_key, pinned_copy_gbps
from pipeline.backends.cuda import CudaBackend
from pipeline.backends.cuda.options import CudaOptions
from pipeline.backends.cuda.streamed import CudaStreamedPass
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import curve_by_name


def drive(backend, key, items) -> dict:
    """One pass, steps timed on the host; device times read from the pass's events before its
    results (which free them)."""
    work = backend.start_batch(key, items, True)
    host = {"prologue": [], "chunk": []}
    waits = 0.0
    t_all = time.perf_counter()
    while True:
        kind = work.steps[work.cursor][0] if work.cursor < len(work.steps) else None
        t0 = time.perf_counter()
        more = work.enqueue_next([True] * len(items))
        if not more:
            break
        host[kind].append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        asyncio.run(work.wait_for_room())
        waits += time.perf_counter() - t1
    asyncio.run(work.wait())
    wall = time.perf_counter() - t_all
    ev = work.step_events
    steps_ms = [ev[0].elapsed_ms(work.started)] + [b.elapsed_ms(a) for a, b in zip(ev, ev[1:])]
    n_pro = len(host["prologue"])
    copies = [end.elapsed_ms(start) for start, end in work.copy_marks]
    timings = work.pass_timings()
    tails_in_prologue = sum(work.tails_done)
    results = work.results()
    assert all(r is not None for r in results)
    return {"wall_s": wall, "waits_s": waits, "host_prologue_ms": 1e3 * statistics.mean(host["prologue"]),
            "host_chunk_ms": 1e3 * statistics.mean(host["chunk"] or [0]), "host_chunk_max_ms":
            1e3 * max(host["chunk"] or [0]), "dev_prologue_ms": statistics.mean(steps_ms[:n_pro]),
            "dev_chunk_ms": statistics.mean(steps_ms[n_pro:] or [0]), "chunks": len(steps_ms) - n_pro,
            "copy_ms": statistics.mean(copies or [0]), "tails_in_prologue": tails_in_prologue, **timings}


def host_profile(title: str, run) -> str:
    """``run()`` under cProfile: its 30 functions with the most time of their own (host side)."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
    body = text.getvalue().strip().split("\n")
    start = next((i for i, line in enumerate(body) if "ncalls" in line), 0)
    return f"\n### Host profile of one pass ({title}), cProfile, by own time\n\n```\n" + \
        "\n".join(body[max(0, start - 3):]) + "\n```\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=int, default=24)
    parser.add_argument("--curve", default="bls12381")
    parser.add_argument("--budget-gib", type=float, default=3.0)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--split-locks", nargs="+", choices=["on", "off"], default=["on", "off"],
                        help="rows with the host 0/1 split's arrays page-locked, and without (pageable copies)")
    parser.add_argument("--tails", nargs="+", choices=["chunks", "prologue"], default=["chunks", "prologue"],
                        help="CudaOptions.stream_tails of the rows: a split witness's tail MSMs per chunk, or once")
    parser.add_argument("--no-phases", dest="phases", action="store_false",
                        help="no events around each phase of the pass (the phase table stays empty)")
    parser.add_argument("--depth", type=int, default=CudaOptions.stream_queue_depth,
                        help="CudaOptions.stream_queue_depth: steps queued ahead of the device")
    parser.add_argument("--csr-table", choices=["off", "on"], default="on" if CudaOptions.csr_value_table else "off",
                        help="CudaOptions.csr_value_table of the backend (its CSR as uint16 indices into a table)")
    parser.add_argument("--stream-h", nargs="+", choices=["prologue", "chunks"], default=["prologue", "chunks"],
                        help="CudaOptions.stream_h of the rows (a placement and key load each): a streamed H's "
                             "points through each partition's prologue in pieces, or through the pass's chunks")
    parser.add_argument("--cprofile", action="store_true",
                        help="run the first row's timed pass once more under cProfile: the host's top functions")
    args = parser.parse_args()
    curve = curve_by_name(args.curve)
    t0 = time.perf_counter()
    zkey, witness = make_key(curve, args.log)
    print(f"key 2^{args.log}: {time.perf_counter() - t0:.1f} s", flush=True)
    w = np.ascontiguousarray(witness.values)
    t0 = time.perf_counter()
    shape = WitnessShape.of(w, zkey.n_public + 1)
    shape_s = time.perf_counter() - t0
    backend = CudaBackend(options=CudaOptions(csr_value_table=args.csr_table == "on", stream_queue_depth=args.depth))
    # the witness from page-locked memory, as the engine's prep_msm stages it (a pageable upload
    # holds the stream and the host: ~0.2 s more per partition at 2^26, in both paths)
    staging = backend.pinned_host_buffer(w.nbytes)
    w_pageable, w = w, staging.view(w.dtype, w.shape)
    w[:] = w_pageable
    del w_pageable
    rows, facts, host_profiles, phase_rows = [], [], [], []
    CudaStreamedPass.profile_phases = args.phases
    try:
        copy_rate = pinned_copy_gbps(backend)
        resident = backend.load_key(zkey)
        try:
            for _ in range(2):  # the second is the timed one
                t0 = time.perf_counter()
                backend.start_partition(resident, w, True, shape).result()
                resident_s = time.perf_counter() - t0
        finally:
            backend.unload_key(resident)
        facts += [f"coefficient table: {args.csr_table}", f"queue depth {args.depth}",
                  f"WitnessShape.of {shape_s * 1e3:.0f} ms", "witness uploaded from page-locked memory (session 7 on)",
                  f"pinned copy rate {copy_rate:.1f} GB/s",
                  f"resident partition (same key, same call): {resident_s * 1e3:.0f} ms"]
        for stream_h in args.stream_h:
            backend.stream_h = stream_h
            placement = backend.place_key(zkey, int(args.budget_gib * GIB))
            t0 = time.perf_counter()
            key = backend.load_key(zkey, placement)
            load_s = time.perf_counter() - t0
            try:
                locked = {n: r.registered for n, r in {**key.host_points, **key.host_csr}.items()}
                facts += [f"H points {stream_h}: placement {placement}, load {load_s:.1f} s, page-locked: {locked}"]
                for tails, lock, batch in [(t, lock, batch) for t in args.tails for lock in args.split_locks
                                           for batch in args.batches]:
                    CudaStreamedPass.lock_split_arrays = lock == "on"
                    backend.stream_tails = tails
                    for _ in range(2):  # the first pays for kernels of new sizes
                        r = drive(backend, key, [(w, shape)] * batch)
                    per_partition = r["wall_s"] / batch
                    head = [stream_h, tails, lock, batch]
                    rows.append([*head, r["tails_in_prologue"], f"{r['wall_s']:.2f}", f"{per_partition * 1e3:.0f}",
                                 f"{per_partition / resident_s:.2f}", f"{r['waits_s']:.2f}",
                                 f"{r['host_prologue_ms']:.1f}", f"{r['host_chunk_ms']:.1f}",
                                 f"{r['host_chunk_max_ms']:.1f}", f"{r['dev_prologue_ms']:.1f}", r["chunks"],
                                 f"{r['dev_chunk_ms']:.1f}", f"{r['copy_ms']:.1f}", f"{r['stream_pass_ms']:.0f}",
                                 f"{r['stream_h2d_gbps']:.1f}"])
                    print(rows[-1], flush=True)
                    phases = {k.removeprefix("phase ").removesuffix(" ms"): v for k, v in r.items()
                              if k.startswith("phase ")}
                    if phases:
                        phase_rows.append((head, {k: v / batch for k, v in phases.items()},
                                           r["stream_pass_ms"] / batch))
                    if args.cprofile and not host_profiles:
                        host_profiles.append(host_profile(f"H {stream_h}, tails {tails}, split page-locked {lock}, "
                                                          f"batch {batch}",
                                                          lambda: drive(backend, key, [(w, shape)] * batch)))
            finally:
                backend.unload_key(key)
    finally:
        staging.free()
        backend.close()
    table = markdown_table(["H points", "tails", "split page-locked", "batch", "partitions with prologue tails", "wall s",
                            "ms/partition", "vs resident", "loop waits s",
                            "host ms/prologue", "host ms/chunk", "host max ms/chunk", "device ms/prologue", "chunks", "device ms/chunk",
                            "copy ms/chunk", "pass device ms", "H2D GB/s"], rows)
    note = "\n".join(f"- {f}" for f in facts)
    names = sorted({name for _, phases, _ in phase_rows for name in phases})
    phase_table = markdown_table(["H points", "tails", "split page-locked", "batch", "pass ms/partition", "phases' sum",
                                  *names],
                                 [[*head, f"{whole:.1f}", f"{sum(phases.values()):.1f}",
                                   *(f"{phases.get(n, 0.0):.1f}" for n in names)]
                                  for head, phases, whole in phase_rows]) if phase_rows else ""
    if phase_table:
        table += ("\n\nDevice ms per partition by phase (CUDA events around each kind of queued work, summed over the "
                  "pass, divided by the batch; the pass's own ms/partition beside them: the difference is time the "
                  "compute stream waited, e.g. for a chunk's copy or the host)\n\n" + phase_table)
    out = RESULTS / f"streamed_profile_{args.curve}_2e{args.log}.md"
    write_result(out, f"# Streamed pass profile, {args.curve} 2^{args.log}, budget {args.budget_gib:g} GiB\n\n"
                 f"{note}\n\n{table}\n" + "".join(host_profiles), show=note + "\n" + table + "".join(host_profiles))


if __name__ == "__main__":
    main()

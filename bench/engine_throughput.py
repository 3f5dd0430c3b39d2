"""Engine throughput: a stream of jobs of N partitions at several jobs-in-flight levels and
gpu_workers_per_device values. Reports s/proof, per-stage medians, GPU-lock busy fraction,
the gpu-stage share (s/proof over the sum of gpu stage times), loop lag and peak host memory;
writes a markdown table and the stage timeline of the last level (JSON, and a PNG drawn by
bench/plots where matplotlib is installed: the bench extra).

    python3 -m bench.engine_throughput --backend cpu --circuit chain_2e8 --partitions 2 \
        --jobs-in-flight 1,2,5 --gpu-workers 1,2,3
    python3 -m bench.engine_throughput --backend cuda --circuit chain_2e10 --partitions 8 \
        --jobs-in-flight 1,2,5,10,20 --gpu-workers 1,2,3        # on the GPU host

Target (issue 4): at saturation the GPU lock is busy >= 95% of the time and s/proof is within
5% of the gpu stage time per proof.
"""
from __future__ import annotations

import asyncio
import json
import platform
import resource
import statistics
import time
from pathlib import Path

from bench.common import CURVE_NAMES, FIXTURES, arg_parser, int_list, result_path
from pipeline import progress
from pipeline.engine import Engine, EngineConfig

STAGES = ("synth_ms", "prep_msm_ms", "gpu_lock_wait_ms", "gpu_total_ms", "b_g2_msm_ms", "epilogue_ms", "total_ms")


async def run_level(args, n_devices: int, gw: int, jobs_in_flight: int, fixture: Path):
    config = EngineConfig(backend=args.backend, devices=tuple(range(n_devices)),
                          gpu_workers_per_device=gw, g2_msm_placement=args.g2,
                          max_partitions_in_flight=max(4, gw * 2 + 4), queue_size=2,
                          gil_switch_interval_s=args.gil_switch_interval)
    async with Engine(config) as engine:
        wasm = fixture / "circuit.wasm"
        engine.register_key("bench", zkey_path=fixture / "circuit_final.zkey", wasm_path=wasm if wasm.exists() else None)
        await engine.preload("bench")
        warm = await engine.submit("bench", [str(fixture / "witness.wtns")])  # first-call costs out of the numbers
        await warm.result()
        n_jobs = max(args.jobs, jobs_in_flight)
        sources = [str(fixture / "witness.wtns")] * args.partitions
        engine.metrics.loop_lags.clear()
        t_start = time.perf_counter()
        proofs = []
        pending: set = set()
        submitted = 0
        while submitted < n_jobs or pending:
            while submitted < n_jobs and len(pending) < jobs_in_flight:
                job = await engine.submit("bench", sources)
                pending.add(asyncio.ensure_future(job.result()))
                submitted += 1
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                proofs.extend(fut.result())
        wall = time.perf_counter() - t_start
        timeline = [iv for iv in engine.timeline() if iv.end >= t_start]
        lags = sorted(engine.metrics.loop_lags) or [0.0]
    gpu_sum = sum(iv.end - max(iv.start, t_start) for iv in timeline if iv.stage == "gpu")
    medians = {k: statistics.median([p.timings_ms[k] for p in proofs if k in p.timings_ms])
               for k in STAGES if any(k in p.timings_ms for p in proofs)}
    # On several devices the gpu stages run side by side: the floor is gpu time per proof / devices.
    row = {"dev": n_devices, "gw": gw, "jif": jobs_in_flight, "proofs": len(proofs), "wall_s": wall,
           "s_per_proof": wall / len(proofs), "gpu_s_per_proof": gpu_sum / len(proofs) / n_devices,
           "lock_busy": gpu_sum / wall / n_devices,
           "partitions_per_device": [sum(1 for iv in timeline if iv.stage == "gpu" and iv.device == d)
                                     for d in range(n_devices)],
           "loop_lag_p95_ms": lags[int(0.95 * (len(lags) - 1))],
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **medians}
    return row, timeline, t_start


def write_timeline(stem: Path, timeline, t0: float, level: str, title: str) -> Path:
    """The last level's stage intervals as ``<stem>.timeline.json`` (the data) and ``.timeline.png``
    (drawn by bench/plots; ``python3 -m bench.plots`` redraws it from the JSON)."""
    intervals = [{"row": iv.worker if iv.stage == "gpu" else iv.stage, "stage": iv.stage, "job": iv.job_id[:6],
                  "partition": iv.partition, "start_s": max(iv.start, t0) - t0, "end_s": iv.end - t0}
                 for iv in timeline]
    data = {"level": level, "intervals": intervals}
    stem.with_name(stem.name + ".timeline.json").write_text(json.dumps(data, indent=0))
    try:
        import matplotlib
    except ImportError:  # the bench extra (pip install '.[bench]') draws it; the JSON is written either way
        return stem.with_name(stem.name + ".timeline.json")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.plots.timeline import plot_timeline

    return plot_timeline(data, title, stem.with_name(stem.name + ".timeline.png"), plt)


def markdown(args, rows, fixture: Path, timeline_name: str) -> str:
    lines = [f"# Engine throughput: {args.backend} backend, {args.curve}/{fixture.name}, "
             f"{args.partitions} partitions per job, G2 MSM on the {args.g2}",
             "", f"Host: {platform.node()} ({platform.machine()}, Python {platform.python_version()}); "
             f"date {time.strftime('%Y-%m-%d %H:%M')}. Jobs per level: max({args.jobs}, jif). "
             f"GIL switch interval: {args.gil_switch_interval or 'default'}.", "",
             "dev = devices used, gw = gpu_workers_per_device, jif = jobs in flight; stage columns are medians "
             "in ms; lock busy = sum of gpu-stage time / wall / dev (mean over the devices); gpu s/proof = "
             "gpu-stage time per proof / dev (the floor s/proof can reach); per device = gpu stages each "
             "device ran.", "",
             "| dev | gw | jif | proofs | s/proof | gpu s/proof | s/proof ÷ gpu | lock busy | synth | prep | lock wait "
             "| gpu | b_g2 | epilogue | total | loop lag p95 ms | peak RSS MiB | per device |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def m(k):
            return f"{r[k]:.0f}" if k in r else "-"
        lines.append(f"| {r['dev']} | {r['gw']} | {r['jif']} | {r['proofs']} | {r['s_per_proof']:.3f} | {r['gpu_s_per_proof']:.3f} | "
                     f"{r['s_per_proof'] / r['gpu_s_per_proof']:.2f} | {r['lock_busy'] * 100:.0f}% | {m('synth_ms')} | "
                     f"{m('prep_msm_ms')} | {m('gpu_lock_wait_ms')} | {m('gpu_total_ms')} | {m('b_g2_msm_ms')} | "
                     f"{m('epilogue_ms')} | {m('total_ms')} | {r['loop_lag_p95_ms']:.1f} | {r['peak_rss_mib']:.0f} | "
                     f"{'/'.join(map(str, r['partitions_per_device']))} |")
    lines += ["", f"Timeline of the last run: [{timeline_name}]({timeline_name}) (one row per worker; data in the "
              "`.timeline.json` beside it)."]
    return "\n".join(lines) + "\n"


async def main() -> None:
    p = arg_parser(__doc__)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--curve", default="bn128", choices=CURVE_NAMES)
    p.add_argument("--circuit", default="chain_2e8")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--jobs", type=int, default=3, help="jobs per level (at least jobs-in-flight)")
    p.add_argument("--jobs-in-flight", type=int_list, default=[1, 2, 5])
    p.add_argument("--gpu-workers", type=int_list, default=[1, 2, 3])
    p.add_argument("--device-counts", type=int_list, default=[1], help="levels of devices used (the first N ordinals), e.g. 1,2")
    p.add_argument("--g2", choices=("gpu", "cpu"), default="gpu")
    p.add_argument("--gil-switch-interval", type=float, default=None)
    p.add_argument("--out", default=None, help="markdown path (default bench/results/engine_<backend>_<circuit>.md)")
    args = p.parse_args()
    # a fixture name under tests/fixtures/CURVE, or a folder holding circuit_final.zkey + witness.wtns
    fixture = Path(args.circuit) if Path(args.circuit).is_dir() else FIXTURES / args.curve / args.circuit
    out = Path(args.out or result_path(f"engine_{args.backend}_{args.curve}_{fixture.name}.md"))
    out.parent.mkdir(parents=True, exist_ok=True)
    rows, last = [], None
    levels = [(n, gw, jif) for n in args.device_counts for gw in args.gpu_workers for jif in args.jobs_in_flight]
    with progress.bar("engine levels", total=len(levels), unit="level", leave=True) as bar:
        for n, gw, jif in levels:
            bar.set_postfix_str(f"dev={n} gw={gw} jif={jif}")
            row, timeline, t0 = await run_level(args, n, gw, jif, fixture)
            rows.append(row)
            last = (timeline, t0, f"dev={n} gw={gw} jif={jif}")
            bar.write(f"dev={n} gw={gw} jif={jif}: {row['s_per_proof']:.3f} s/proof, gpu {row['gpu_s_per_proof']:.3f} "
                      f"s/proof, lock busy {row['lock_busy'] * 100:.0f}%, loop lag p95 {row['loop_lag_p95_ms']:.1f} ms")
            bar.update()
    title = f"{args.backend} backend, {args.curve}/{fixture.name}, {args.partitions} partitions per job"
    drawn = write_timeline(out.with_suffix(""), last[0], last[1], last[2], title)
    out.write_text(markdown(args, rows, fixture, drawn.name))
    print(f"wrote {out} and {drawn}")


if __name__ == "__main__":
    asyncio.run(main())

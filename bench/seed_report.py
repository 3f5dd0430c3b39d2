"""bench/seed_scale.py's report: the markdown tables, the timeline pictures and the host-memory
peak it reads. Run on its own, it redraws the timeline PNGs of a seed_scale table from the
``.timeline.json`` files written beside it (the bench extra's matplotlib needed).

    python3 -m bench.seed_report bench/results/seed_scale_cuda_bls12381_24_26_circuit.md
"""
from __future__ import annotations

import json
import resource
import statistics
import time
from pathlib import Path

from bench.common import arg_parser, markdown_table
from bench.engine_throughput import write_timeline
from bench.sppark_stage import SpparkStage

GIB = 1 << 30
DEVICE_POINTS_ONLY = "; the key's points only on the device (none in host memory: key GB is its host part)"
STAGES = (("synth_ms", "synth"), ("prep_msm_ms", "prep"), ("prep_staging_ms", "prep: staging"),
          ("prep_scan_ms", "prep: scan"), ("gpu_lock_wait_ms", "lock wait"), ("gpu_total_ms", "gpu"))
GPU_STEPS = (("gpu_upload_ms", "upload"), ("gpu_spmv_ms", "spmv"), ("gpu_ntt_ms", "NTTs"),
             ("gpu_h_ms", "H (upload + spmv + NTTs)"), ("gpu_split_ms", "0/1 split"), ("gpu_msm_a_ms", "A"),
             ("gpu_msm_a_ones_ms", "A: ones"), ("gpu_msm_b1_ms", "B1"), ("gpu_msm_b1_ones_ms", "B1: ones"),
             ("gpu_msm_b2_ms", "B2 (G2)"), ("gpu_msm_b2_ones_ms", "B2: ones"), ("gpu_msm_c_ms", "C"),
             ("gpu_msm_c_ones_ms", "C: ones"), ("gpu_msm_h_ms", "H-MSM"), ("gpu_msm_ms", "MSMs"),
             ("gpu_download_ms", "download"))
AFTER = (("b_g2_msm_ms", "B2 on host"), ("epilogue_ms", "epilogue"), ("total_ms", "total"))


def reset_host_rss() -> bool:
    """Start a new peak of resident memory (Linux: clear_refs 5 resets VmHWM); False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def host_rss() -> int:
    """Peak resident bytes since the last reset (VmHWM), else the process's lifetime peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def median_of(proofs: list, key: str) -> float | None:
    values = [p.timings_ms[key] for p in proofs if key in p.timings_ms]
    return statistics.median(values) if values else None


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def spread_of(proofs: list, key: str, pick) -> float | None:
    values = [p.timings_ms[key] for p in proofs if key in p.timings_ms]
    return pick(values) if values else None


def partition_table(jobs: list) -> str:
    """One row per partition index (medians over the jobs), then the median over all, and the least
    and most over all (a median hid that every other partition went without its prefetch: session 17)."""
    columns = [(k, name) for k, name in STAGES + GPU_STEPS + AFTER
               if any(k in p.timings_ms for job in jobs for p in job)]
    rows = []
    for index in range(len(jobs[0])):
        rows.append([str(index), *(ms(median_of([job[index] for job in jobs], k)) for k, _ in columns)])
    every = [p for job in jobs for p in job]
    rows.append(["all", *(ms(median_of(every, k)) for k, _ in columns)])
    rows += [[name, *(ms(spread_of(every, k, pick)) for k, _ in columns)] for name, pick in (("min", min), ("max", max))]
    return markdown_table(["partition", *(name for _, name in columns)], rows)


def summary_row(r: dict) -> list:
    size, key = f"2^{r['log_n']}", ", ".join(f"{k} {v:.1f}" for k, v in r["key_s"].items())
    placement = ", ".join(f"{d}: {mode}" for d, mode in r["placement"].items()) or "-"
    if "s_per_proof" not in r:
        return [size, r["n_vars"], "-", "-", "-", "-", "-", "-", "-", "-", f"{r['key_gb']:.1f}", placement, key,
                r["verdict"]]
    every = [p for job in r["proofs"] for p in job]
    share = statistics.median((p.timings_ms["n_zero"] + p.timings_ms["n_one"]) / r["n_vars"] for p in every)
    vram = "-" if r["peak_vram"] is None else f"{r['peak_vram'] / GIB:.1f}"
    return [size, r["n_vars"], f"{share * 100:.1f}%", f"{len(r['proofs'])} x {len(r['proofs'][0])}",
            f"{r['s_per_proof']:.2f}", f"{r['gpu_s_per_proof']:.2f}", f"{r['s_per_proof'] / r['gpu_s_per_proof']:.3f}",
            f"{r['lock_busy'] * 100:.1f}%", f"{r['peak_rss'] / GIB:.1f}", vram, f"{r['key_gb']:.1f}", placement, key,
            r["verdict"]]


def sppark_row(r: dict, sppark, bit_heavy: bool) -> list:
    size = f"2^{r['log_n']}"
    every = [p for job in r["proofs"] for p in job]
    ours = [median_of(every, k) for k in ("gpu_total_ms", "gpu_msm_ms", "gpu_ntt_ms")]
    if not isinstance(sppark, SpparkStage):
        return [size, *map(ms, ours), sppark, "", "", "", "", ""]
    theirs = [sppark.stage_ms(bit_heavy), sppark.msm_ms(bit_heavy), sppark.ntts_ms()]
    ratios = ["-" if o is None else f"{o / t:.2f}" for o, t in zip(ours, theirs)]
    return [size, *map(ms, ours), *map(ms, theirs), *ratios]


def table_order_note(order: list[str] | None) -> str:
    """The run's fixed-base table order for the table's header (``--table-order``)."""
    if not order:
        return ""
    if order == ["auto"]:
        return "; tables in the order auto picks for the witness (the placement says it)"
    return "; tables taken in the order " + " ".join(order)


def markdown(args, machine: str, results: list, sppark: dict, pictures: list[Path]) -> str:
    bit_heavy = args.witness != "random"
    lines = [f"# Seed-scale proving: {args.backend} backend, {args.curve}, {args.partitions} partitions per job, "
             f"{args.witness} witness", "",
             f"{machine}; {time.strftime('%Y-%m-%d %H:%M')}. Key: --key {args.key} "
             f"({results[0]['shape'] if results else ''}). "
             f"Engine: {args.devices} device(s), {args.gpu_workers} GPU workers each, G2 MSM on the {args.g2}, the "
             f"0/1 split as the backend chooses"
             f"{'; the sparse products a thread a row' if getattr(args, 'thread_a_row', False) else ''}"
             f"{'; witnesses prefetched before the GPU lock' if getattr(args, 'witness_prefetch', True) else '; witnesses uploaded under the GPU lock'}"
             f"; VRAM budget {getattr(args, 'vram_free_share', 0.9):g} of the free memory"
             f"{table_order_note(getattr(args, 'table_order', None))}"
             f"{DEVICE_POINTS_ONLY if getattr(args, 'device_points_only', False) else ''}"
             f". {args.jobs} jobs of {args.partitions} partitions submitted at once "
             f"after a warm-up job; every partition proves the same witness.", "",
             "s/proof: wall time of the stream / jobs (one proof = one job). gpu s/proof: the gpu stages' time "
             "(GPU lock held) per proof and device: the floor s/proof can reach; lock busy: that time / wall. "
             "Peak RSS: the process's resident peak during the stream (VmHWM reset at its start); peak VRAM: "
             "device memory the backend's allocator tracked (key + scratch), peak over the stream. Key times in "
             "seconds: circuit generation (host), the development setup (GPU: including the points' download into "
             "the host key), adopt (CSR upload and twiddles; the points stay where the setup left them), load "
             "(the engine's placement and the backend's load_key; a key that does not fit a device whole has its "
             "setup copy freed and some sections streamed from host memory). Verifies: our verifier on one proof, "
             "and it rejects the proof with a public input changed.", "",
             markdown_table(["size", "n_vars", "0/1 share", "jobs x partitions", "s/proof", "gpu s/proof",
                             "s/proof ÷ gpu", "lock busy", "peak RSS GiB", "peak VRAM GiB", "key GB",
                             "key placement (device: mode)", "key s", "verifies / rejects"],
                            [summary_row(r) for r in results]), ""]
    errors = [f"- 2^{r['log_n']}: {r['error']}" for r in results if r["error"]]
    if errors:
        lines += ["Failed:", "", *errors, ""]
    lines += ["## Against a sppark-built stage (same call)", "",
              "Ours: medians over every partition of the stream (gpu stage under the lock; the MSMs including the "
              "0/1 split; the NTTs of H). sppark: bench/sppark_stage.py, the harness of shared/anchors/sppark "
              "run at each size before our process touched the GPU: 4 G1 + 1 G2 MSMs of 2^k and 6 NTTs of 2^k, "
              + ("its 80% {0,1} rows for the witness MSMs (ours see this witness: fewer full-width scalars)"
                 if bit_heavy else "its random-scalar rows") +
              ", H's MSM random; its NTT is the NR transform (no bit reversal).", "",
              markdown_table(["size", "ours stage ms", "ours MSMs ms", "ours NTTs ms", "sppark stage ms",
                              "sppark MSMs ms", "sppark NTTs ms", "ratio stage", "ratio MSMs", "ratio NTTs"],
                             [sppark_row(r, sppark.get(r["log_n"], "not run"), bit_heavy)
                              for r in results if r["proofs"]]), ""]
    for r in results:
        lines += [f"## 2^{r['log_n']}: per partition (ms, medians over the jobs)", ""]
        if r["proofs"]:
            lines += [partition_table(r["proofs"]), ""]
            if any("gpu_msm_a_ones_ms" in p.timings_ms for job in r["proofs"] for p in job):
                lines += ["\"X: ones\" is the part of X that sums the points of its ones (the 0/1 split); the rest of "
                          "X is its tail MSM over the other scalars (the first tail of a shared digit sort makes it).", ""]
        lines += [f"Host budgets: {r['budgets']}.", ""]
        if r.get("stream_pins") is not None:
            lines += [f"Staging buffers pinned during the stream: {r['stream_pins']} (the others reused; a fresh pin "
                      f"shows in its partition's \"prep: staging\" column).", ""]
    lines += [f"Timelines: {', '.join(f'[{p.name}]({p.name})' for p in pictures) or 'none'} (one row per worker; "
              "the data in the `.timeline.json` beside each)."]
    return "\n".join(lines) + "\n"


def write_timelines(out: Path, results: list, title: str) -> list[Path]:
    """One timeline per size (JSON, and a PNG where matplotlib is installed) beside ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return [write_timeline(out.with_name(f"{out.stem}_2e{r['log_n']}"), r["timeline"], r["t_start"],
                           f"2^{r['log_n']} stream", title) for r in results if r.get("timeline")]


def main() -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("table", type=Path, help="a bench/results/seed_scale_*.md")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.plots.timeline import plot_timeline

    title = args.table.read_text().splitlines()[0].removeprefix("# ")
    for data_path in sorted(args.table.parent.glob(f"{args.table.stem}_2e*.timeline.json")):
        target = data_path.with_name(data_path.name.removesuffix(".json") + ".png")
        print(plot_timeline(json.loads(data_path.read_text()), title, target, plt))


if __name__ == "__main__":
    main()

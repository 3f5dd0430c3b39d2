"""Keys larger than the VRAM budget (issue 12): the same key resident, then streamed under smaller
budgets, with batches of partitions sharing each pass of its points; one call, one key.

    python3 -m bench.streamed_keys --log 26 --curve bls12381 --budgets-gib 0 16 8 --batches 1 2 5 10

The key is a GPU development key of a seed-shaped circuit (pipeline/setup, pipeline/synth) kept in
host memory and registered with the engine as an object (no .zkey file: a 2^26 key is ~40 GB);
witnesses are the circuit's own (bit-heavy). For each budget (0: none, the key resident) and batch
size: one engine, the key preloaded (its placement and load time), then ``--jobs`` jobs of
``--partitions`` partitions; s/proof over the whole stream, GPU lock busy, peak VRAM of the
engine's accounting and of the allocator, and the streamed passes' host-to-device rate (bytes of
points over the time the copy stream spent copying them, CUDA events) against the pinned copy
rate measured at the start of the same call. One proof per row is checked with our verifier;
``--save-proofs FILE`` writes every proof of every row with the verification key (snarkjs JSON),
for ``--verify-saved FILE`` to check them all with snarkjs on a machine that has it (issue 12's
100-partition runs at gpu_workers 1-3: ``--partitions 100 --gpu-workers 1 2 3``).
Writes bench/results/streamed_keys_<curve>_2e<log>.md.

    python3 -m bench.streamed_keys --verify-saved bench/results/streamed_keys_proofs.json    (no GPU)
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import time
from pathlib import Path

from bench.common import REPO, RESULTS, markdown_table, placement_label, write_result
from pipeline.backends.cuda import CudaBackend
from pipeline.backends.cuda.streamed import CudaStreamedPass
from pipeline.backends.cuda.options import CudaOptions
from pipeline.backends.cuda.memory import PinnedHostBuffer
from pipeline.backends.cuda.streams import Event
from pipeline.backends.protocol import WitnessShape
from pipeline.curves import curve_by_name
from pipeline.engine import Engine, EngineConfig
from pipeline.formats.snarkjs_json import proof_to_json, public_to_json, verification_key_to_json
from pipeline.groth16.verifier import verify
from pipeline.keycache import prepare_in_memory
from pipeline.setup import DevSecrets
from pipeline.setup.gpu import GpuDevSetup
from pipeline.synth import generate_circuit

GIB = 1 << 30


def pinned_copy_gbps(backend: CudaBackend, nbytes: int = 2 * GIB, repeat: int = 3) -> float:
    """Host-to-device rate of one large copy from page-locked memory (the copy engine's rate)."""
    from pipeline.backends.cuda._bindings import driver
    from pipeline.backends.cuda.errors import check

    backend.device.activate()
    times = []
    with PinnedHostBuffer(backend.device, nbytes) as host, backend.allocator.alloc(nbytes, "copy rate") as dev:
        for _ in range(repeat + 1):
            start = Event().record(backend.stream)
            check(driver.cuMemcpyHtoDAsync(dev.ptr, host.ptr, nbytes, backend.stream.handle), "cuMemcpyHtoDAsync")
            end = Event().record(backend.stream)
            end.synchronize()
            times.append(end.elapsed_ms(start))
            start.close()
            end.close()
    return nbytes / statistics.median(times[1:]) / 1e6


def make_key(curve, log_n: int, bit_fraction: float | None = None):
    """A development key of a seed-shaped circuit and its witness; ``bit_fraction``: the generator's share
    of bit-valued wires (None: its default, the seed's 0.95)."""
    backend = CudaBackend()
    setup = GpuDevSetup(backend)
    shape = {} if bit_fraction is None else {"bit_fraction": bit_fraction}
    try:
        r1cs, witness = generate_circuit(log_n, 8, curve, seed=log_n, **shape)  # witness: a Witness, bit-heavy
        dev_key = setup.run(r1cs, DevSecrets.draw(curve, r1cs.domain_size, seed=log_n), path=f"<dev key 2^{log_n}>")
        dev_key.free()  # the engine loads the key itself, as its budget allows
        # its CSR and coefficient table once, as the key cache holds them for a key file: every
        # row's load then uploads them (the load column is a prepared key's)
        return prepare_in_memory(dev_key.zkey), witness
    finally:
        setup.close()
        backend.close()


def default_in_flight(batch: int) -> int:
    """Room for a pass's batch and the next batch gathering behind it: a batch stays in flight until
    its epilogues, and at batch + 4 (before session 21) the next pass found at most 4 waiting."""
    return max(2 * batch + 1, batch + 4)


async def run_config(zkey, witness, budget: int | None, batch: int, partitions: int, jobs: int,
                     tails: str = CudaOptions.stream_tails, gil: float | None = None, gpu_workers: int = 2,
                     csr_table: bool = CudaOptions.csr_value_table, depth: int = CudaOptions.stream_queue_depth,
                     chunk_max: int = 0, stream_h: str = CudaOptions.stream_h, in_flight: int = 0,
                     prep_workers: int = 1, split_min_bits: float = CudaOptions.stream_split_min_bits,
                     fixed_base: bool = CudaOptions.msm_fixed_base) -> dict:
    in_flight = in_flight or default_in_flight(batch)
    config = EngineConfig(backend="cuda", devices=(0,), gpu_workers_per_device=gpu_workers, vram_budget_bytes=budget,
                          cuda=CudaOptions(stream_tails=tails, csr_value_table=csr_table, stream_queue_depth=depth,
                                           stream_chunk_max_bytes=chunk_max, stream_h=stream_h,
                                           stream_split_min_bits=split_min_bits, msm_fixed_base=fixed_base),
                          **({} if gil is None else {"gil_switch_interval_s": gil}),  # None: the engine's default
                          gpu_batch_max=batch, queue_size=max(2, batch), max_partitions_in_flight=in_flight,
                          prep_msm_workers=prep_workers, epilogue_workers=2,
                          staging_buffers_kept=in_flight)  # a staging buffer pinned anew costs prep_msm ~0.3 s at 2^26
    async with Engine(config) as engine:
        engine.register_key("k", zkey=zkey)
        t0 = time.perf_counter()
        await engine.preload("k")
        load_s = time.perf_counter() - t0
        gpu = engine.pipeline.devices[0]
        allocator = getattr(gpu.backend, "allocator", None)  # the CUDA backend's: pool retries (each a sync + trim)
        retries0 = getattr(allocator, "pool_retries", 0)
        busy0, t0 = gpu.lock_busy_s, time.perf_counter()
        submitted = [await engine.submit("k", [witness] * partitions) for _ in range(jobs)]
        proofs = [p for job in submitted for p in await job.result()]
        wall = time.perf_counter() - t0
        busy = (gpu.lock_busy_s - busy0) / wall  # over the job stream only, not the preload
        pool_retries = getattr(allocator, "pool_retries", 0) - retries0
        status = engine.status()
    device = status["devices"][0]
    rates = [p.timings_ms.get("gpu_stream_h2d_gbps", 0.0) for p in proofs]  # stages.gpu_timings' names
    vk = zkey.verification_key()
    p = proofs[-1]
    # a pass's timings are shared by its partitions: each partition's share is pass / batch
    share = {name: sum(q.timings_ms.get(f"gpu_{name}", 0.0) / q.timings_ms.get("gpu_batch", 1) for q in proofs)
             / len(proofs) for name in ("stream_pass_ms", "stream_host_ms", "stream_blocked_ms")}
    share["prep_ms"] = statistics.mean(q.timings_ms.get("prep_msm_ms", 0.0) for q in proofs)
    phases: dict[str, float] = {}
    for q in proofs:
        for k, v in q.timings_ms.items():
            if k.startswith("gpu_phase "):
                name = k.removeprefix("gpu_phase ").removesuffix(" ms")
                phases[name] = phases.get(name, 0.0) + v / q.timings_ms.get("gpu_batch", 1) / len(proofs)
    share["phases_ms"] = sum(phases.values())
    # every timing the proofs carry (the engine's stages, the GPU stage's sections), median over the row's partitions
    medians = {k: statistics.median(q.timings_ms[k] for q in proofs if k in q.timings_ms)
               for k in sorted({k for q in proofs for k in q.timings_ms})}
    return {"placement": placement_label(status["keys"]["keys"]["k"]), "load_s": load_s, "medians": medians,
            "pool_retries": pool_retries,
            "s_per_proof": wall / len(proofs), "busy": busy,
            "vram_peak_gb": device["vram"]["peak_bytes"] / 1e9,
            "batch_mean": statistics.mean(q.timings_ms.get("gpu_batch", 1) for q in proofs),
            "h2d_gbps": statistics.median(rates) if any(rates) else 0.0,
            "verifies": verify(vk, p.public_signals, p.pi_a, p.pi_b, p.pi_c), **share, "phases": phases,
            "proofs": [{"public": public_to_json(q.public_signals),
                        "proof": proof_to_json(zkey.curve, q.pi_a, q.pi_b, q.pi_c)} for q in proofs]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--log", type=int, default=26)
    parser.add_argument("--curve", default="bls12381")
    parser.add_argument("--budgets-gib", type=float, nargs="+", default=[0, 16, 8])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--row-jobs", nargs="+", default=[], metavar="GIB:BATCH=JOBS",
                        help="jobs of the streamed rows of that budget and batch (e.g. 16:10=10: the 100-partition "
                             "row), --jobs for the others")
    parser.add_argument("--resident-jobs", type=int, default=None,
                        help="jobs of the resident row (default: --jobs); its s/partition settles in fewer")
    parser.add_argument("--tails", nargs="+", choices=["chunks", "prologue"], default=[CudaOptions.stream_tails],
                        help="CudaOptions.stream_tails of the streamed rows (each one a row)")
    parser.add_argument("--gil-intervals", nargs="+", default=["default"],
                        help="EngineConfig.gil_switch_interval_s of the streamed rows (seconds, 'default': the engine's, "
                             "'python': Python's 5 ms); each a row")
    parser.add_argument("--phases", action="store_true",
                        help="events around each phase of a pass (CudaStreamedPass.profile_phases): their sum per partition")
    parser.add_argument("--gpu-workers", type=int, nargs="+", default=[2],
                        help="EngineConfig.gpu_workers_per_device of the streamed rows; each a row")
    parser.add_argument("--depths", type=int, nargs="+", default=[CudaOptions.stream_queue_depth],
                        help="CudaOptions.stream_queue_depth of the streamed rows; each a row")
    parser.add_argument("--chunk-max-gib", type=float, nargs="+", default=[0],
                        help="CudaOptions.stream_chunk_max_bytes of the streamed rows in GiB (0: no limit); each a row")
    parser.add_argument("--stream-h", nargs="+", choices=["prologue", "chunks"], default=[CudaOptions.stream_h],
                        help="CudaOptions.stream_h of the streamed rows (a streamed H's points through each "
                             "partition's prologue, or through the pass's chunks); each a row")
    parser.add_argument("--csr-table", nargs="+", choices=["off", "on"],
                        default=["on" if CudaOptions.csr_value_table else "off"],
                        help="CudaOptions.csr_value_table of every row (each value a set of rows)")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[0],
                        help="EngineConfig.max_partitions_in_flight of the streamed rows (0: default_in_flight, "
                             "room for the next batch to gather behind a pass); each a row")
    parser.add_argument("--prep-workers", type=int, nargs="+", default=[1],
                        help="EngineConfig.prep_msm_workers of the streamed rows; each a row")
    parser.add_argument("--bit-fractions", type=float, nargs="+", default=[None],
                        help="the circuit generator's share of bit-valued wires, one key each (default: its own, the "
                             "seed's 0.95); with --split-min-bits: where a streamed pass's 0/1 split starts to pay")
    parser.add_argument("--split-min-bits", type=float, nargs="+", default=[CudaOptions.stream_split_min_bits],
                        help="CudaOptions.stream_split_min_bits of the streamed rows (a value above 1: never split); "
                             "each a row")
    parser.add_argument("--fixed-base", nargs="+", choices=["on", "off"],
                        default=["on" if CudaOptions.msm_fixed_base else "off"],
                        help="CudaOptions.msm_fixed_base of the resident rows (a streamed key has no tables); each a row")
    parser.add_argument("--save-proofs", metavar="FILE", help="every proof of every row, with the verification key")
    parser.add_argument("--verify-saved", metavar="FILE", help="check a --save-proofs file with snarkjs (no GPU) and exit")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.verify_saved:
        return verify_saved(args.verify_saved)
    CudaStreamedPass.profile_phases = args.phases
    curve = curve_by_name(args.curve)
    probe = CudaBackend()
    try:
        copy_rate = pinned_copy_gbps(probe)
        device_name = probe.device.name
    finally:
        probe.close()
    rows, phase_rows, saved = [], [], {"rows": []}
    for fraction in args.bit_fractions:
        zkey, witness = make_key(curve, args.log, fraction)
        shape = WitnessShape.of(witness.values, 0)
        share = f"{1 - shape.n_other / shape.n_vars:.1%}"
        run_rows(args, zkey, witness, share, device_name, copy_rate, rows, phase_rows, saved)
        del zkey, witness
        gc.collect()


def run_rows(args, zkey, witness, share: str, device_name: str, copy_rate: float, rows: list, phase_rows: list,
             saved: dict) -> None:
    """Every budget x setting row of one key (its witness's 0/1 share first in each row); with --save-proofs,
    each row's proofs into ``saved`` with the key's verification key."""
    vk = verification_key_to_json(zkey.verification_key()) if args.save_proofs else None
    for budget_gib, table in [(b, t) for t in args.csr_table for b in args.budgets_gib]:
        budget = int(budget_gib * GIB) or None
        for batch, tails, gil, gw, depth, cap, stream_h, in_flight, prep, split, fixed_base in [
                (b, t, g, w, d, c, h, f, p, m, fb) for b in (args.batches if budget else [1])
                for t in (args.tails if budget else [CudaOptions.stream_tails])
                for g in (args.gil_intervals if budget else ["default"])
                for w in (args.gpu_workers if budget else [2])
                for d in (args.depths if budget else [CudaOptions.stream_queue_depth])
                for c in (args.chunk_max_gib if budget else [0])
                for h in (args.stream_h if budget else [CudaOptions.stream_h])
                for f in (args.in_flight if budget else [0])
                for p in (args.prep_workers if budget else [1])
                for m in (args.split_min_bits if budget else [CudaOptions.stream_split_min_bits])
                for fb in ([CudaOptions.msm_fixed_base] if budget else [v == "on" for v in args.fixed_base])]:
            gil_s = None if gil == "default" else 0.0 if gil == "python" else float(gil)
            try:
                jobs = (row_jobs(args.row_jobs, budget_gib, batch, args.jobs) if budget
                        else args.jobs if args.resident_jobs is None else args.resident_jobs)
                r = asyncio.run(run_config(zkey, witness, budget, batch, args.partitions, jobs, tails, gil_s,
                                           gw, table == "on", depth, int(cap * GIB), stream_h, in_flight, prep,
                                           split, fixed_base))
            except Exception as exc:  # a budget too small for the key is a result, not a crash
                rows.append([share, f"{budget_gib:g}", batch, f"refused: {type(exc).__name__}: {str(exc)[:160]}",
                             *["-"] * 12])
                print(rows[-1], flush=True)
                write_table(args, zkey, device_name, copy_rate, rows, phase_rows)
                break
            of_pinned = r["h2d_gbps"] / copy_rate if r["h2d_gbps"] else float("nan")
            placement = r["placement"] + (f" (tails: {tails}, gpu_workers {gw}"
                                          f"{'' if depth == CudaOptions.stream_queue_depth else f', queue depth {depth}'}"
                                          f"{f', chunks <= {cap:g} GiB' if cap else ''}, H points {stream_h}, "
                                          f"in flight {in_flight or default_in_flight(batch)}, prep_msm workers {prep}"
                                          f"{'' if split == CudaOptions.stream_split_min_bits else f', split at >= {split:g} bits'}"
                                          f"{'' if gil_s is None else f', GIL switch {gil_s:g} s' if gil_s else ', GIL switch Python 5 ms'})" if budget else "")
            placement += ", coefficient table" if table == "on" else ""
            placement += "" if budget or fixed_base else ", fixed-base tables off"
            rows.append([share, f"{budget_gib:g}" if budget else "none", batch, placement, f"{r['load_s']:.1f}",
                         f"{r['s_per_proof']:.2f}", f"{r['batch_mean']:.1f}", f"{r['busy']:.3f}",
                         f"{r['vram_peak_gb']:.1f}", f"{r['h2d_gbps']:.1f}", f"{of_pinned:.2f}",
                         f"{r['stream_pass_ms']:.0f}" if budget else "-",
                         f"{r['stream_host_ms']:.0f} ({r['stream_blocked_ms']:.0f})" if budget else "-",
                         f"{r['phases_ms']:.0f}" if budget and args.phases else "-", f"{r['prep_ms']:.0f}",
                         "yes" if r["verifies"] else "NO"])
            if r["phases"]:
                phase_rows.append((rows[-1][1], placement, r["stream_pass_ms"], r["phases"]))
            print(rows[-1], flush=True)
            print(f"  pool retries {r['pool_retries']}; medians, ms: " + ", ".join(f"{k} {v:.1f}" for k, v in r["medians"].items()), flush=True)
            write_table(args, zkey, device_name, copy_rate, rows, phase_rows)  # after every row: a call cut short keeps them
            # a closed engine's arrays can sit in reference cycles until the collector runs; the fourth
            # engine of session 10's call 3 was killed by the OOM killer: collect, and log what is held
            gc.collect()
            print(f"host memory after the row: {host_memory_line()}", flush=True)
            if args.save_proofs:
                saved["rows"].append({"row": f"{share} 0/1, {budget_gib:g} GiB, {placement}, batch {batch}",
                                      "vk": vk, "proofs": r["proofs"]})
                Path(args.save_proofs).write_text(json.dumps(saved))


def row_jobs(specs: list[str], budget_gib: float, batch: int, default: int) -> int:
    """Jobs of the streamed row at ``budget_gib`` and ``batch``: the ``GIB:BATCH=JOBS`` spec that names it,
    else ``default``."""
    for spec in specs:
        row, _, jobs = spec.partition("=")
        gib, _, b = row.partition(":")
        if float(gib) == budget_gib and int(b) == batch:
            return int(jobs)
    return default


def host_memory_line() -> str:
    """This process's resident and peak resident memory, and the host's available memory (Linux)."""
    fields = {}
    for name in ("/proc/self/status", "/proc/meminfo"):
        try:
            for line in Path(name).read_text().splitlines():
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        except OSError:
            return "unknown (no /proc)"
    return (f"RSS {fields.get('VmRSS', '?')}, peak {fields.get('VmHWM', '?')}, "
            f"host available {fields.get('MemAvailable', '?')}")


def verify_saved(path: str) -> None:
    """Every proof of a --save-proofs file through ``snarkjs groth16 verify`` (bench/verify_proofs.cjs,
    one node process): per row, proofs and how many verify."""
    saved = json.loads(Path(path).read_text())
    # each row names its key's vk (a key per --bit-fractions value); files before session 59 have one, at the top
    items = [{"vk": row.get("vk", saved.get("vk")), "public": p["public"], "proof": p["proof"]}
             for row in saved["rows"] for p in row["proofs"]]
    out = subprocess.run(["node", str(REPO / "bench" / "verify_proofs.cjs"), str(REPO / "node_modules" / "snarkjs")],
                         input=json.dumps(items).encode(), capture_output=True, check=True, timeout=7200)
    verdicts = iter(line == "true" for line in out.stdout.decode().split())
    table = [[row["row"], len(row["proofs"]), sum(next(verdicts) for _ in row["proofs"])] for row in saved["rows"]]
    print(markdown_table(["row", "proofs", "verified by snarkjs"], table))


def write_table(args, zkey, device_name: str, copy_rate: float, rows: list[list], phase_rows: list) -> None:
    resident = {}  # per 0/1 share: its key's first resident row (the tables on, where --fixed-base has both)
    for r in rows:
        if r[1] == "none" and r[5] != "-":
            resident.setdefault(r[0], float(r[5]))
    shown = [[*row[:6], f"{float(row[5]) / resident[row[0]]:.2f}" if row[0] in resident and row[5] != "-" else "",
              *row[6:]] for row in rows]
    table = markdown_table(["0/1 share", "VRAM budget GiB", "batch max", "placement", "key load s", "s/partition", "vs resident",
                            "mean batch", "GPU lock busy", "VRAM peak GB", "H2D GB/s (passes)", "of pinned rate",
                            "pass device ms/partition", "pass host ms/partition (of it waiting for the device)",
                            "phases' device ms/partition",
                            "prep_msm ms/partition", "verifies"], shown)
    note = (f"\n{args.curve} 2^{args.log} development key ({zkey.host_bytes() / 1e9:.1f} GB), circuit witness (its share of values in {{0, 1}} first "
            f"in each row; a key per share); "
            f"{args.jobs} job(s) of {args.partitions} partitions per row"
            f"{''.join(f' ({j} for the {r} row)' for r, _, j in (x.partition('=') for x in args.row_jobs))}"
            f"{'' if args.resident_jobs is None else f' ({args.resident_jobs} for the resident row)'}, gpu_workers "
            f"{' and '.join(map(str, args.gpu_workers))} (streamed rows; the resident row 2), on {device_name}. "
            f"Pinned host-to-device copy rate measured in the same call: {copy_rate:.1f} GB/s. Per partition, a "
            f"pass's share (its time / its batch): device time from its start to its last step, host time spent "
            f"queueing its steps, and (--phases) the summed device time of its phases: device time beyond the phases "
            f"is the device waiting (for the host, or a copy). prep_msm: the stage's mean time per partition (staging "
            f"copy, 0/1 counts, range check), outside the GPU lock.\n")
    names = sorted({name for *_, phases in phase_rows for name in phases})
    if names:  # --phases: where each streamed row's device time went, per partition
        table += ("\n\nDevice ms per partition by phase of the streamed rows (events around each kind of queued "
                  "work, a pass's sum over its batch; the pass's own ms/partition beside them)\n\n" +
                  markdown_table(["VRAM budget GiB", "placement", "pass ms/partition", *names],
                                 [[b, placement, f"{whole:.0f}", *(f"{phases.get(n, 0.0):.1f}" for n in names)]
                                  for b, placement, whole, phases in phase_rows]))
    out = args.out or RESULTS / f"streamed_keys_{args.curve}_2e{args.log}.md"
    write_result(out, "# Streamed keys and batched passes\n" + note + "\n" + table + "\n", show=table)

if __name__ == "__main__":
    main()

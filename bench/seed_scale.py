"""Seed-scale proving (issue 11): jobs of 10 partitions of one seed-shaped key through the engine,
with sppark's stage beside ours from the same call.

    python3 -m bench.seed_scale --sizes 24 26 --curve bls12381                  GPU host: bench/device.sh seed
    python3 -m bench.seed_scale --backend cpu --sizes 10 --partitions 2 --jobs 1 --warmup 1   anywhere, seconds

Per size 2^k: a seed-shaped circuit and its witness (pipeline.synth, N_PUBLIC public inputs), the
development key for it (--key dev: on the GPU, pipeline/setup/gpu.py, its points handed to the
engine's device without an upload by setup.adopt_dev_key; on the CPU backend pipeline/setup/cpu.py;
--key random: random points in memory, uploaded by the backend's load_key). The key goes to the
engine from memory (Engine.register_key(zkey=...)): a 2^27 key does not fit the host's disk as a
file. Where the whole key does not fit the device next to a partition's scratch, the setup's device
points are freed and the engine places the key itself (streamed sections; not with
--device-points-only, whose key has no host points to stream). A 2^27 key fits one H200 whole.
Then a warm-up job, then --jobs jobs of --partitions partitions, all submitted at once, every
partition the same witness (--witness circuit: the circuit's own, whose proofs verify; random:
full-width values; bits95: 95% in {0, 1}). Table: s/proof (one proof = one job), the sum of
gpu-stage times per proof and their ratio, GPU lock busy, peak host RSS and tracked VRAM during the
stream, the key's setup / adopt / load times, per partition the engine's stage timings, and the
sppark-built stage (bench/sppark_stage.py) with our ratio to it. One timeline PNG per size.

Host memory: the engine's budgets are set from what the host has left once the key and the
witness are in memory (host_budgets below; the markdown says what was chosen and why).
"""
from __future__ import annotations

import asyncio
import gc
import platform
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench import sppark_stage
from bench.common import REPO, arg_parser, bit_heavy, placement_label, random_below, result_path
from bench.seed_report import host_rss, markdown, reset_host_rss, write_timelines
from pipeline.backends import CudaOptions, create_backend
from pipeline.curves import curve_by_name
from pipeline.engine import Engine, EngineConfig, JobFailed
from pipeline.engine.stages import partition_host_bytes
from pipeline.errors import ZkpipeError
from pipeline.formats.types import Groth16Zkey, VerificationKey, Witness
from pipeline.groth16.verifier import verify

N_PUBLIC = 8
HOST_RESERVE_BYTES = 16 << 30  # left to the OS, CUDA's own allocations and Python: not budgeted
GIB = 1 << 30


@dataclass
class Workload:
    zkey: Groth16Zkey
    witness: Witness
    dev_key: object | None  # setup.gpu.DevKey: the GPU setup's key, its points still on device 0; or None
    verifiable: bool  # the witness satisfies the key's circuit: its proofs must verify
    timings_s: dict[str, float]
    shape: str


def make_workload(args, curve, log_n: int, backend, setups: dict) -> Workload:
    """The key (its points on device 0 still when the GPU setup made it) and the witness every
    partition uses."""
    timings, rng, dev_key = {}, np.random.default_rng(log_n), None
    if args.key == "random":
        from bench.gpu_stage import random_key

        t0 = time.perf_counter()
        zkey, values, shape = random_key(curve, log_n, rng), None, "random key (random coordinates, 4 terms per row)"
        timings["random key s"] = time.perf_counter() - t0
    else:
        from pipeline.setup import DevSecrets, dev_setup_cpu
        from pipeline.synth import CircuitShape, generate_circuit

        t0 = time.perf_counter()
        r1cs, circuit_witness = generate_circuit(log_n, N_PUBLIC, curve, seed=log_n)
        values, shape = circuit_witness.values, f"pipeline.synth, {N_PUBLIC} public inputs, {CircuitShape().describe()}"
        del circuit_witness  # only its values stay (and only for --witness circuit): 4 GiB at 2^27
        timings["circuit s"] = time.perf_counter() - t0
        secrets = DevSecrets.draw(curve, r1cs.domain_size, seed=log_n)
        t1 = time.perf_counter()
        if backend.name == "cuda":
            from pipeline.setup.gpu import GpuDevSetup

            if id(backend) not in setups:
                setups[id(backend)] = GpuDevSetup(backend)  # kernels built once per curve, kept across sizes
            setup = setups[id(backend)]
            dev_key = setup.run(r1cs, secrets, path=f"<dev key 2^{log_n}>",
                                download_points=not getattr(args, "device_points_only", False))
            zkey = dev_key.zkey
            timings["setup s"] = time.perf_counter() - t1
        else:
            zkey = dev_setup_cpu(r1cs, secrets, path=f"<dev key 2^{log_n}>")
            timings["setup s"] = time.perf_counter() - t1
        del r1cs
    if args.witness == "circuit":
        if values is None:
            raise SystemExit("--witness circuit needs --key dev (a random key has no circuit)")
    else:
        values = None  # the circuit's own witness goes before the random one is drawn
        values = random_below(rng, zkey.n_vars, curve.fr.limbs, curve.fr.bits)
        if args.witness == "bits95":
            values = bit_heavy(rng, values, 0.95)
        values[0] = 0
        values[0, 0] = 1  # signal 0 is the constant one
    verifiable = args.witness == "circuit"
    gc.collect()
    return Workload(zkey, Witness(f"<{args.witness} witness 2^{log_n}>", curve, values), dev_key, verifiable, timings,
                    shape)


async def put_key_on_devices(args, engine: Engine, work: Workload, timings: dict) -> None:
    """Device 0: the setup's points adopted (setup.adopt_dev_key: only the CSR is uploaded) when the
    engine would keep the whole key there; otherwise they are freed and the engine places the key
    itself (sections streamed from host memory, issue 12). Other devices: the engine loads it."""
    uploads = list(range(args.devices))
    if work.dev_key is not None:
        from pipeline.setup.adopt import adopt_dev_key

        device = engine.devices[0]
        if (await asyncio.to_thread(device.place_key, work.zkey)).mode == "resident":
            t0 = time.perf_counter()
            handle = await asyncio.to_thread(adopt_dev_key, device.backend, work.dev_key)
            await engine.adopt_device_key("seed", handle, 0, witness_like=work.witness)  # tables for its witness
            timings["adopt s"] = time.perf_counter() - t0
            uploads = uploads[1:]
        else:
            work.dev_key.free()  # in the way of the engine's own placement
    if uploads:
        t0 = time.perf_counter()
        await engine.preload("seed", uploads, witness_like=work.witness)
        timings["load s" if len(uploads) == args.devices else "load (other devices) s"] = time.perf_counter() - t0


def available_host_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def host_budgets(zkey: Groth16Zkey, backend, in_flight_wanted: int) -> tuple[int, int, str]:
    """(max_partitions_in_flight, host_memory_budget_bytes, why): as many partitions as wanted
    whose engine-estimated bytes fit what the host has left now (the key and the witness are in
    memory already) minus a reserve (HOST_RESERVE_BYTES, at most a quarter of what is left)."""
    per_partition = partition_host_bytes(zkey, backend)
    available = available_host_bytes()
    reserve = 0 if available is None else min(HOST_RESERVE_BYTES, available // 4)
    n = in_flight_wanted if available is None else min(in_flight_wanted, (available - reserve) // per_partition)
    if n < 1:
        raise SystemExit(f"host memory: {size(available)} available cannot hold one partition ({size(per_partition)} "
                         f"by the engine's estimate) beside a {size(reserve)} reserve")
    staged = zkey.n_vars * zkey.curve.fr.n_bytes
    left = "no /proc/meminfo" if available is None else f"{size(available)} available after the key and witness"
    why = (f"per partition the engine reserves {size(per_partition)} (stages.partition_host_bytes: witness and "
           f"staged copy, 2 n_vars Fr values, plus the backend's {size(backend.partition_host_bytes(zkey))}: for "
           f"CUDA a streamed pass's pinned H and host 0/1 split); the real use here is the pinned staged copy, "
           f"{size(staged)}, as the partitions share one witness. {left}, {size(reserve)} kept back: "
           f"max_partitions_in_flight = {n} (wanted {in_flight_wanted}), host_memory_budget_bytes = {n} x "
           f"{size(per_partition)} = {size(n * per_partition)}, staging_buffers_kept = {n} (pinned: "
           f"{size(n * staged)} at most); key_host_budget_bytes = the key's {size(zkey.host_bytes())} + 64 MiB "
           f"(one key)")
    return n, n * per_partition, why


def size(n_bytes: int | None) -> str:
    if n_bytes is None:
        return "?"
    if n_bytes >= GIB:
        return f"{n_bytes / GIB:.1f} GiB"
    return f"{n_bytes / (1 << 20):.1f} MiB" if n_bytes >= 1 << 20 else f"{n_bytes / 1024:.1f} KiB"


async def run_size(args, backends: dict, setups: dict, log_n: int) -> dict:
    curve = curve_by_name(args.curve)
    work = make_workload(args, curve, log_n, backends[0], setups)
    zkey = work.zkey
    wanted = args.in_flight or args.devices * (args.gpu_workers + 2) + 1
    in_flight, host_budget, why = host_budgets(zkey, backends[0], wanted)
    config = EngineConfig(backend=args.backend, devices=tuple(range(args.devices)),
                          gpu_workers_per_device=args.gpu_workers, prep_msm_workers=2, g2_msm_placement=args.g2,
                          g2_msm_executor="thread", max_partitions_in_flight=in_flight,
                          host_memory_budget_bytes=host_budget, staging_buffers_kept=in_flight,
                          key_host_budget_bytes=zkey.host_bytes() + (64 << 20), check_r1cs=False)
    result = {"log_n": log_n, "n_vars": zkey.n_vars, "key_gb": zkey.host_bytes() / 1e9, "budgets": why,
              "shape": work.shape, "key_s": dict(work.timings_s), "proofs": [], "error": None, "placement": {}}
    async with Engine(config, backend_factory=lambda ordinal: backends[ordinal]) as engine:
        engine.register_key("seed", zkey=zkey)
        try:
            await put_key_on_devices(args, engine, work, result["key_s"])
            key = engine.status()["keys"]["keys"]["seed"]
            result["placement"] = {d: placement_label(key, d) for d in key["placement"]}
            warm = args.warmup if args.warmup is not None else min(args.partitions, in_flight)
            if warm:
                await (await engine.submit("seed", [work.witness] * warm)).result()  # kernels, twiddles, pinned buffers
            await stream(args, engine, work, result)
        except Exception as exc:  # a size that fails (2^27 on one GPU today) is a row of the table, not the end
            if not isinstance(exc, (JobFailed, ZkpipeError)):
                traceback.print_exc()
            result["error"] = f"{type(exc).__name__}: {exc}"
            print(f"2^{log_n}: {result['error']}", flush=True)
        finally:
            if work.dev_key is not None:
                work.dev_key.free()  # points not adopted (an error before): nothing once adopted
    result["verdict"] = check_proof(zkey, result["proofs"], work.verifiable)
    return result


async def stream(args, engine: Engine, work: Workload, result: dict) -> None:
    """The timed part: every job submitted at once; per-device peaks reset at its start."""
    for device in engine.devices:
        allocator = getattr(device.backend, "allocator", None)
        if allocator is not None:
            allocator.peak_bytes = allocator.in_use_bytes  # the stream's peak, not the setup's
    reset_host_rss()
    pins = engine.staging.pinned if engine.staging is not None and engine.staging.enabled else None
    t_start = time.perf_counter()
    jobs = [await engine.submit("seed", [work.witness] * args.partitions) for _ in range(args.jobs)]
    for job in jobs:
        result["proofs"].append(await job.result())
    wall = time.perf_counter() - t_start
    timeline = [iv for iv in engine.timeline() if iv.end >= t_start]
    gpu_s = sum(iv.end - max(iv.start, t_start) for iv in timeline if iv.stage == "gpu")
    vram = [getattr(getattr(d.backend, "allocator", None), "peak_bytes", None) for d in engine.devices]
    result.update(wall_s=wall, s_per_proof=wall / args.jobs, gpu_s_per_proof=gpu_s / args.jobs / args.devices,
                  lock_busy=gpu_s / wall / args.devices, peak_rss=host_rss(), timeline=timeline, t_start=t_start,
                  peak_vram=None if None in vram else max(vram),
                  stream_pins=None if pins is None else engine.staging.pinned - pins)


def check_proof(zkey: Groth16Zkey, jobs: list, verifiable: bool) -> str:
    """Our verifier on the first partition of the last job, and with a public input changed."""
    if not jobs:
        return "no proof"
    if not verifiable:
        return "n/a (the witness satisfies no circuit)"
    proof = jobs[-1][0]
    vk = VerificationKey.from_zkey(zkey)
    ok = verify(vk, proof.public_signals, proof.pi_a, proof.pi_b, proof.pi_c)
    changed = (proof.public_signals[0] + 1,) + tuple(proof.public_signals[1:])
    rejected = not verify(vk, changed, proof.pi_a, proof.pi_b, proof.pi_c)
    return f"{'yes' if ok else 'NO'} / {'yes' if rejected else 'NO'}"


async def main_async(args) -> None:
    sppark = ({k: "not run (CPU backend)" for k in args.sizes} if args.backend == "cpu" else
              sppark_stage.measure(args.curve, args.sizes, args.anchors, args.sppark_timeout))  # before our CUDA context
    cuda = ({"options": CudaOptions(spmv_long_rows=not args.thread_a_row, witness_prefetch=args.witness_prefetch,
                                    msm_fixed_base=args.fixed_base, vram_free_share=args.vram_free_share,
                                    msm_fixed_base_order="auto" if args.table_order == ["auto"] else args.table_order)}
            if args.backend == "cuda" else {})
    backends = {d: create_backend(args.backend, **({"device": d} if d else {}), **cuda) for d in range(args.devices)}
    setups: dict = {}
    results = []
    try:
        for log_n in args.sizes:
            results.append(await run_size(args, backends, setups, log_n))
            r = results[-1]
            print(f"2^{log_n}: {r.get('s_per_proof', float('nan')):.3f} s/proof, gpu {r.get('gpu_s_per_proof', 0):.3f} "
                  f"s/proof, lock busy {r.get('lock_busy', 0) * 100:.0f}%, verifies {r['verdict']}", flush=True)
            gc.collect()
    finally:
        device = getattr(backends[0], "device", None)
        machine = f"{platform.node()}, {getattr(device, 'name', args.backend)}"
        for setup in setups.values():
            setup.close()
        for backend in backends.values():
            backend.close()
    out = Path(args.out) if args.out else result_path(
        f"seed_scale_{args.backend}_{args.curve}_{'_'.join(map(str, args.sizes))}_{args.witness}"
        f"{'_random_key' if args.key == 'random' else ''}{'_thread_a_row' if args.thread_a_row else ''}{'' if args.witness_prefetch else '_no_prefetch'}{'' if args.fixed_base else '_no_fixed_base'}.md")
    pictures = write_timelines(out, results, f"{args.backend}, {args.curve}, {args.partitions} partitions per job")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(args, machine, results, sppark, pictures))
    print(out.read_text())
    print(f"wrote {out}" + "".join(f" and {p}" for p in pictures))


def main() -> None:
    p = arg_parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[24], help="log2 of the constraints, e.g. 24 26 27")
    p.add_argument("--curve", default="bls12381", choices=sorted(sppark_stage.HARNESS))
    p.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--key", default="dev", choices=("dev", "random"))
    p.add_argument("--witness", default="circuit", choices=("circuit", "random", "bits95"))
    p.add_argument("--partitions", type=int, default=10, help="partitions per job (one proof)")
    p.add_argument("--jobs", type=int, default=2, help="jobs in the timed stream, submitted at once")
    p.add_argument("--devices", type=int, default=1, help="the first N devices")
    p.add_argument("--gpu-workers", type=int, default=2)
    p.add_argument("--g2", choices=("gpu", "cpu"), default="gpu", help="where the G2 MSM of B runs")
    p.add_argument("--thread-a-row", action="store_true",
                   help="CudaOptions.spmv_long_rows off: every row of the sparse products a thread (before session 16)")
    p.add_argument("--device-points-only", action="store_true",
                   help="the GPU setup leaves the key's points on the device, none in host memory (a 2^27 key's 77 GB "
                        "do not fit a 128 GiB host beside the rest); the key must then be adopted there whole")
    p.add_argument("--no-fixed-base", dest="fixed_base", action="store_false",
                   help="CudaOptions.msm_fixed_base off: no fixed-base tables on the key (before session 23)")
    # The seed's witness is bit-heavy: B2 is mostly a sum of ones, which its table does not speed up, so "auto" (the
    # key adopted with the bench's witness) puts H's table first, and a larger share of the VRAM fits its one-set
    # table beside a 2^26 key (bench/NOTES.md, session 29)
    p.add_argument("--table-order", nargs="+", default=["auto"], metavar="SECTION",
                   help="sections in the order they get a fixed-base table (CudaOptions.msm_fixed_base_order; "
                        "default 'auto': the engine's choice for the bench's witness, H first for a seed-shaped one)")
    p.add_argument("--vram-free-share", type=float, default=0.965,
                   help="the device allocator's budget as a share of the free VRAM (CudaOptions.vram_free_share; "
                        "default 0.965, the engine's 0.9)")
    p.add_argument("--no-witness-prefetch", dest="witness_prefetch", action="store_false",
                   help="CudaOptions.witness_prefetch off: a partition uploads its witness under the GPU lock (before "
                        "session 17)")
    p.add_argument("--in-flight", type=int, default=None, help="partitions in flight wanted (default devices x "
                   "(gpu workers + 2) + 1; fewer if host memory says so)")
    p.add_argument("--warmup", type=int, default=None,
                   help="partitions of the warm-up job (default: as many as in flight; 0: none)")
    p.add_argument("--anchors", type=Path, default=REPO / ".anchors", help="folder of the sppark harness binaries")
    p.add_argument("--sppark-timeout", type=float, default=240.0, help="seconds per sppark harness call")
    p.add_argument("--out", default=None, help="markdown path (default bench/results/seed_scale_<...>.md)")
    args = p.parse_args()
    if args.device_points_only and (args.backend != "cuda" or args.key != "dev"):
        p.error("--device-points-only needs the GPU development setup (--backend cuda --key dev)")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

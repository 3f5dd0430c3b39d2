"""Jobs through the shared PostgreSQL store: claim latency and throughput with 1, 3 and 8 workers.

    python3 -m bench.cluster_throughput                         # this machine: CPU backend, bn128 multiplier
    python3 -m bench.cluster_throughput --workers 1,3,8 --jobs 200 --claims 3000
    bash bench/device.sh cluster                                # the GPU host: 1 vs 2 workers, one GPU each

1. the store alone: N claimer processes drain a queue of tiny partitions (claim one, store a
   proof-sized result, repeat): the ceiling of the coordination itself, no proving;
2. end to end: N ``zkpipe serve --store postgresql://...`` workers (CPU backend) prove J jobs of
   one partition each, inserted into the store at once after every worker answers /healthz;
   jobs/s from the first insert to the last job done; each worker's claim latency (median, p99
   of its claim transactions, as its /v1/status reports them).

A throwaway PostgreSQL runs in a temporary folder (``LocalPostgres``). Writes
bench/results/cluster_<backend>_<curve>_<circuit>.md.
"""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

from bench.common import FIXTURES, REPO, arg_parser, free_port, int_list, result_path, wait_answering, write_result
from pipeline.server.cluster.leases import PartitionLeases
from pipeline.server.cluster.local_postgres import LocalPostgres
from pipeline.server.cluster.pg_store import PartitionInput, PostgresJobStore
from pipeline.server.cluster.shared_spool import SharedSpool
from pipeline.server.store import JobRow

TOKEN = "bench-token"
# Many workers on 2 cores: one thread per CPU stage, and a 1 ms GIL switch so each worker's event loop
# (its claims and heartbeats) is not starved by the pure-Python prover threads (NOTES: engine_cpu_*).
CPU_ENGINE = "gil_switch_interval_s = 0.001\nsynthesize_workers = 1\nepilogue_workers = 1\n"
FAKE_PROOF = {"proof": {"pi_a": ["1" * 77] * 3, "pi_b": [["1" * 77] * 2] * 3, "pi_c": ["1" * 77] * 3},
              "public_signals": ["33"]}  # the size of a real BN254 proof


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def job_inputs(jobs: int, partitions: int, payload: bytes, shared: SharedSpool | None) -> list[list[PartitionInput]]:
    """Each job's partition inputs: in the rows, or (with a shared spool) files written there beforehand,
    as the accepting worker would have written them before committing."""
    if shared is None:
        return [[PartitionInput(payload)] * partitions for _ in range(jobs)]
    out = []
    for _ in range(jobs):
        job_id = uuid.uuid4().hex
        out.append([PartitionInput(spool_file=shared.store(job_id, i, data=payload)) for i in range(partitions)])
    return out


async def fill(url: str, key_id: str, inputs: list[list[PartitionInput]]) -> None:
    """Insert one job per entry of ``inputs`` through the store (what an accepting worker commits)."""
    store = PostgresJobStore(url)
    await store.open()
    try:
        for parts in inputs:
            spooled = parts[0].spool_file
            job_id = spooled.split("/")[0] if spooled else uuid.uuid4().hex
            row = JobRow(job_id=job_id, key_id=key_id, priority="normal", input_kind="wtns", n_partitions=len(parts))
            await store.insert(row, parts)
    finally:
        await store.close()


# -- 1. the store alone ----------------------------------------------------------------------------
def claimer(url: str, name: str, results) -> None:
    async def run() -> tuple[list[float], float, float]:
        store = PostgresJobStore(url, max_connections=2)
        await store.open()
        leases = PartitionLeases(store.pool)
        latencies = []
        first = time.time()  # wall clock: compared across processes
        try:
            while True:
                started = time.perf_counter()
                claims = await leases.claim(name, ["bench"], ["bench"], 1, 30.0, 60.0)
                latencies.append(time.perf_counter() - started)
                if not claims:
                    return latencies[:-1], first, time.time()
                await leases.read_input(claims[0])
                assert await leases.complete(claims[0], name, FAKE_PROOF, {"total_ms": 0.0})
        finally:
            await store.close()

    results.put(asyncio.run(run()))


def store_only(pg: LocalPostgres, n_workers: int, claims: int) -> dict:
    url = pg.create_database(f"claims_{n_workers}_{uuid.uuid4().hex[:6]}")
    asyncio.run(fill(url, "bench", job_inputs(claims // 4, 4, b"w" * 256, None)))
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=claimer, args=(url, f"c{i}", results)) for i in range(n_workers)]
    for p in procs:
        p.start()
    answers = [results.get(timeout=600) for _ in procs]
    latencies = [x for lat, _, _ in answers for x in lat]
    wall = max(end for *_, end in answers) - min(first for _, first, _ in answers)  # from the first claim, not spawn
    for p in procs:
        p.join()
    return {"workers": n_workers, "claims": len(latencies), "wall_s": wall, "per_s": len(latencies) / wall,
            "median_ms": statistics.median(latencies) * 1e3, "p99_ms": percentile(latencies, 0.99) * 1e3}


# -- 2. end to end ---------------------------------------------------------------------------------
class Worker:
    def __init__(self, root: Path, index: int, url: str, args, fixture: Path, shared: SharedSpool | None) -> None:
        keys = root / f"keys{index}"
        keys.mkdir(parents=True)
        (keys / "bench.zkey").symlink_to(fixture / "circuit_final.zkey")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = root / f"w{index}.toml"
        spool = f'shared_spool_dir = "{shared.root}"\n' if shared else ""
        config.write_text(f'[server]\nport = {self.port}\nkeys_dir = "{keys}"\nstate_dir = "{root / f"s{index}"}"\n'
                          f'auth_token = "{TOKEN}"\nstore_url = "{url}"\nlog_level = "warning"\n'
                          f'heartbeat_interval_s = 1.0\nclaim_poll_interval_s = 1.0\n{spool}'
                          f'[engine]\nbackend = "{args.backend}"\n{CPU_ENGINE if args.backend == "cpu" else ""}')
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        if args.devices_per_worker:  # one GPU per worker: worker i gets device i
            env["ZKPIPE_ENGINE_DEVICES"] = f"[{index}]"
        self.log = open(root / f"w{index}.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "serve", "--config", str(config)],
                                     cwd=REPO, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    async def ready(self, timeout_s: float = 300.0) -> None:
        await wait_answering(self.url, self.proc, timeout_s, lambda: Path(self.log.name).read_text()[-2000:])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)
        self.log.close()


async def end_to_end(pg: LocalPostgres, n_workers: int, warmup: int, args, fixture: Path, root: Path) -> dict:
    url = pg.create_database(f"e2e_{n_workers}_{uuid.uuid4().hex[:6]}")
    folder = root / f"e2e{n_workers}"
    shared = SharedSpool(folder / "shared", fsync=False) if args.shared_spool else None
    workers = [Worker(folder, i, url, args, fixture, shared) for i in range(n_workers)]
    payload = (fixture / "witness.wtns").read_bytes()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with aiohttp.ClientSession(headers=headers) as session:
            await asyncio.gather(*(w.ready() for w in workers))
            await fill(url, "bench", job_inputs(warmup, args.partitions, payload, shared))
            timed = job_inputs(args.jobs, args.partitions, payload, shared)  # spool files written before timing
            store = PostgresJobStore(url)
            await store.open()
            try:
                async def done_count() -> int:
                    return (await store.counts())["done"]

                while await done_count() < warmup:  # every key loaded, every worker warm
                    await asyncio.sleep(0.2)
                started = time.perf_counter()
                await fill(url, "bench", timed)
                while await done_count() < warmup + args.jobs:
                    await asyncio.sleep(0.05)
                wall = time.perf_counter() - started
                failed = (await store.counts())["failed"]
            finally:
                await store.close()
            await asyncio.sleep(1.5)  # one more heartbeat: each worker's claim latency into the store
            async with session.get(f"{workers[0].url}/v1/status") as resp:
                listed = (await resp.json())["server"]["workers"]
        medians = [w["counters"]["claim_latency_ms"].get("median", float("nan")) for w in listed]
        p99s = [w["counters"]["claim_latency_ms"].get("p99", float("nan")) for w in listed]
        stored = sorted(w["counters"]["stored"] for w in listed)
        return {"workers": n_workers, "jobs": args.jobs, "wall_s": wall, "jobs_per_s": args.jobs / wall,
                "proofs_per_s": args.jobs * args.partitions / wall, "claim_median_ms": statistics.median(medians),
                "claim_p99_ms": max(p99s), "stored": stored, "failed": failed}
    finally:
        for w in workers:
            w.stop()


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop the workers and the database
    parser = arg_parser(__doc__)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--curve", default="bn128")
    parser.add_argument("--circuit", default="multiplier", help="a fixture under tests/fixtures/CURVE/, or a folder")
    parser.add_argument("--workers", type=int_list, default=[1, 3, 8])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=1, help="partitions per job")
    parser.add_argument("--warmup", type=int, default=0, help="jobs proved before timing (default: 2 per worker)")
    parser.add_argument("--claims", type=int, default=2000, help="partitions drained in the store-only part (0: skip)")
    parser.add_argument("--devices-per-worker", action="store_true", help="worker i uses device i only")
    parser.add_argument("--shared-spool", action="store_true", help="witnesses travel through a shared spool folder "
                        "(on this host) instead of the database rows")
    parser.add_argument("--out")
    args = parser.parse_args()
    counts = args.workers
    fixture = Path(args.circuit) if Path(args.circuit).is_dir() else FIXTURES / args.curve / args.circuit
    out = Path(args.out) if args.out else result_path(f"cluster_{args.backend}_{args.curve}_{fixture.name}.md")
    with LocalPostgres.start() as pg, tempfile.TemporaryDirectory(prefix="zkpipe-cluster-bench-") as tmp:
        store_rows = [store_only(pg, n, args.claims) for n in counts] if args.claims else []
        for row in store_rows:
            print(f"store only: {row['workers']} claimers {row['per_s']:.0f} claims/s, "
                  f"claim median {row['median_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms", flush=True)
        e2e_rows = []
        for n in counts:
            e2e_rows.append(asyncio.run(end_to_end(pg, n, args.warmup or 2 * n, args, fixture, Path(tmp))))
            r = e2e_rows[-1]
            print(f"end to end: {n} workers {r['jobs_per_s']:.1f} jobs/s ({r['wall_s']:.1f} s), claim median "
                  f"{r['claim_median_ms']:.1f} ms p99 {r['claim_p99_ms']:.1f} ms, stored per worker {r['stored']}",
                  flush=True)
    write_result(out, table(args, fixture, store_rows, e2e_rows), show=f"wrote {out}")


def table(args, fixture: Path, store_rows: list[dict], e2e_rows: list[dict]) -> str:
    lines = [f"# Jobs through the shared PostgreSQL store: {args.backend} backend, {args.curve}/{fixture.name}", "",
             f"Host: {platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()}); "
             f"{time.strftime('%Y-%m-%d %H:%M')}; load average at the end {os.getloadavg()[0]:.1f} (the machine is "
             "shared). PostgreSQL: a throwaway local server (fsync off), loopback.", ""]
    if store_rows:
        lines += ["## The store alone (claim one partition, store a proof-sized result, repeat; no proving)", "",
                  "| claimer processes | partitions | claims/s | claim median ms | claim p99 ms |", "|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['workers']} | {r['claims']} | {r['per_s']:.0f} | {r['median_ms']:.2f} | {r['p99_ms']:.2f} |"
                  for r in store_rows]
        lines.append("")
    travel = "a shared spool folder" if args.shared_spool else "the database rows"
    lines += [f"## End to end: `zkpipe serve --store` workers proving {args.jobs} jobs of {args.partitions} "
              f"partition(s), inserted at once (witnesses through {travel})", "",
              "| workers | jobs/s | proofs/s | s/proof | wall s | ratio vs 1 worker | claim median ms | claim p99 ms | "
              "stored per worker (with warm-up) | failed |", "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    base = e2e_rows[0]["jobs_per_s"] if e2e_rows else 1.0
    lines += [f"| {r['workers']} | {r['jobs_per_s']:.1f} | {r['proofs_per_s']:.1f} | {1 / r['proofs_per_s']:.3f} | "
              f"{r['wall_s']:.1f} | "
              f"{r['jobs_per_s'] / base:.2f} | {r['claim_median_ms']:.1f} | {r['claim_p99_ms']:.1f} | "
              f"{', '.join(map(str, r['stored']))} | {r['failed']} |" for r in e2e_rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

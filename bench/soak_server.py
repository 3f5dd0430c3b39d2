"""Soak test of the HTTP service (not in CI): many clients, kill -9 every few seconds, a disk that fills.

    python3 -m bench.soak_server                                  # defaults: 1,200 + 1,500 jobs, 32 clients
    python3 -m bench.soak_server --chaos-jobs 200 --steady-jobs 300 --clients 20   # a short run

A real ``zkpipe serve`` (CPU backend, the small fixture keys of tests/fixtures) in a child
process, and ``--clients`` client tasks, each submitting jobs one after another and waiting
for each to finish. Every job carries a unique request_id; a client whose request got no
answer (the server was killed), a 503 or a 507 submits the same body again with the same
request_id, so a job is never accepted twice.

1. chaos phase (``--chaos-jobs``): the server is killed with SIGKILL every ``--kill-every``
   seconds (uniform within +-50%) and restarted at once; the disk fills for a few seconds
   every ``--fill-every`` seconds.
2. steady phase (``--steady-jobs``): no kills, the disk still fills and empties; the server's
   RSS is sampled and its growth after the warm-up is reported.

The disk: no small filesystem can be mounted here, so the server child installs the
fault-injection wrapper of tests/server/faults.py (ENOSPC on spool writes, SQLITE_FULL on
job-store writes while a flag file exists), which this script creates and removes.

At the end: every accepted job must be done (lost = 0), one job per request_id
(duplicated = 0), every proof's public signal a*b and accepted by snarkjs (invalid = 0).
Writes bench/results/soak_server_cpu.md.
"""
from __future__ import annotations

import asyncio
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.common import FIXTURES, REPO, arg_parser, free_port, result_path, wait_answering, write_result
from pipeline.curves import curve_by_name
from pipeline.formats.wtns import write_wtns

TOKEN = "soak-token"
KEYS = {"mult_bn128": "bn128", "mult_bls12381": "bls12381"}
RETRYABLE = (502, 503, 504, 507)
# The engine's bounded memories (finished jobs, stage intervals), small enough to be full after
# the warm-up: RSS that grows after that is a leak, not a cache filling up.
FINISHED_KEPT, TIMELINE_KEPT = 100, 1000


# -- the server child --------------------------------------------------------------------------------
def serve_child(config: str, disk_flag: str) -> int:
    from pipeline.cli import main
    from tests.server.faults import FaultyDisk

    FaultyDisk(lambda: os.path.exists(disk_flag)).install()
    return main(["serve", "--config", config])


class Server:
    def __init__(self, work: Path, port: int) -> None:
        self.work = work
        self.url = f"http://127.0.0.1:{port}"
        self.disk_flag = work / "disk-full"
        self.config = work / "zkpipe.toml"
        self.config.write_text(f'[server]\nhost = "127.0.0.1"\nport = {port}\nkeys_dir = "{self._keys()}"\n'
                               f'state_dir = "{work / "state"}"\nauth_token = "{TOKEN}"\nlog_level = "warning"\n'
                               '\n[engine]\nbackend = "cpu"\nsynthesize_workers = 1\nepilogue_workers = 1\n'
                               f'g2_msm_workers = 1\nfinished_jobs_kept = {FINISHED_KEPT}\n'
                               f'timeline_events_kept = {TIMELINE_KEPT}\n')
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def _keys(self) -> Path:
        keys = self.work / "keys"
        keys.mkdir(exist_ok=True)
        for key_id, curve in KEYS.items():
            for ext, name in (("zkey", "circuit_final.zkey"), ("r1cs", "circuit.r1cs"), ("wasm", "circuit.wasm")):
                (keys / f"{key_id}.{ext}").symlink_to(FIXTURES / curve / "multiplier" / name)
        return keys

    async def start(self) -> None:
        self.starts += 1
        log = open(self.work / "serve.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.soak_server", "serve-child", str(self.config),
                                      str(self.disk_flag)], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        await wait_answering(self.url, self.proc, 60.0,
                             lambda: (self.work / "serve.log").read_text(errors="replace")[-2000:], any_status=True)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)

    def rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None


# -- jobs and what they must prove -------------------------------------------------------------------------
@dataclass
class Planned:
    request_id: str
    key_id: str
    kind: str  # "wtns" | "inputs"
    pairs: list[tuple[int, int]]
    job_ids: set = field(default_factory=set)
    final: dict | None = None
    attempts: int = 0

    def body(self, work: Path):
        if self.kind == "inputs":
            doc = {"key_id": self.key_id, "request_id": self.request_id,
                   "inputs": [{"a": str(a), "b": str(b)} for a, b in self.pairs]}
            return json.dumps(doc).encode(), {"Content-Type": "application/json"}
        form = aiohttp.FormData(default_to_multipart=True)
        form.add_field("key_id", self.key_id)
        form.add_field("request_id", self.request_id)
        curve = curve_by_name(KEYS[self.key_id])
        for index, (a, b) in enumerate(self.pairs):
            path = work / "witnesses" / f"{self.request_id}-{index}.wtns"
            if not path.exists():
                write_wtns(path, curve, [1, a * b % curve.fr.modulus, a, b])
            form.add_field("witness", path.read_bytes(), filename=path.name, content_type="application/octet-stream")
        return form, {}

    def expected(self) -> list[list[str]]:
        p = curve_by_name(KEYS[self.key_id]).fr.modulus
        return [[str(a * b % p)] for a, b in self.pairs]


def plan(n: int, rng: random.Random, phase: str) -> list[Planned]:
    jobs = []
    for i in range(n):
        key_id = rng.choice(list(KEYS))
        kind = "inputs" if i % 2 else "wtns"
        pairs = [(rng.randrange(2, 10**9), rng.randrange(2, 10**9)) for _ in range(rng.choice((1, 1, 2)))]
        jobs.append(Planned(f"{phase}-{i}-{uuid.uuid4().hex[:8]}", key_id, kind, pairs))
    return jobs


@dataclass
class Tally:
    answers: dict = field(default_factory=dict)  # HTTP status (or "no answer") -> count
    done: int = 0

    def count(self, what) -> None:
        self.answers[what] = self.answers.get(what, 0) + 1


async def submit(session, server: Server, job: Planned, work: Path, tally: Tally) -> str:
    """POST until the service takes it (same request_id each time); return the job id."""
    delay = 0.05
    while True:
        job.attempts += 1
        body, headers = job.body(work)
        try:
            async with session.post(f"{server.url}/v1/jobs", data=body, headers=headers) as resp:
                answer = await resp.json(content_type=None)
                tally.count(resp.status)
                if resp.status in (200, 202):
                    job.job_ids.add(answer["job_id"])
                    return answer["job_id"]
                if resp.status not in RETRYABLE:
                    raise RuntimeError(f"{job.request_id}: HTTP {resp.status} {answer}")
        except (aiohttp.ClientError, asyncio.TimeoutError, json.JSONDecodeError) as exc:
            tally.count(f"no answer ({type(exc).__name__})")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


async def wait_done(session, server: Server, job: Planned, job_id: str, tally: Tally) -> None:
    while True:
        try:
            async with session.get(f"{server.url}/v1/jobs/{job_id}", params={"wait": "20"}) as resp:
                if resp.status == 404:
                    job.final = {"state": "lost (404)"}
                    return
                body = await resp.json(content_type=None)
                if resp.status == 200 and body["state"] in ("done", "failed", "cancelled"):
                    job.final = body
                    tally.done += 1
                    return
        except (aiohttp.ClientError, asyncio.TimeoutError, json.JSONDecodeError):
            pass
        await asyncio.sleep(0.2)


async def run_clients(server: Server, jobs: list[Planned], clients: int, work: Path, tally: Tally) -> None:
    queue: asyncio.Queue[Planned] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    timeout = aiohttp.ClientTimeout(total=60, sock_connect=5)

    async def client() -> None:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=timeout) as session:
            while not queue.empty():
                job = queue.get_nowait()
                job_id = await submit(session, server, job, work, tally)
                await wait_done(session, server, job, job_id, tally)

    await asyncio.gather(*(client() for _ in range(clients)))


# -- chaos ------------------------------------------------------------------------------------------------
async def killer(server: Server, every_s: float, rng: random.Random, kills: list) -> None:
    while True:
        await asyncio.sleep(every_s * rng.uniform(0.5, 1.5))
        server.kill()
        kills.append(time.monotonic())
        await server.start()


async def disk_filler(server: Server, every_s: float, full_s: float, rng: random.Random, fills: list) -> None:
    try:
        while True:
            await asyncio.sleep(every_s * rng.uniform(0.5, 1.5))
            server.disk_flag.touch()
            fills.append(time.monotonic())
            await asyncio.sleep(full_s * rng.uniform(0.5, 1.5))
            server.disk_flag.unlink()
    finally:
        server.disk_flag.unlink(missing_ok=True)


async def rss_sampler(server: Server, tally: Tally, samples: list) -> None:
    while True:
        rss = server.rss_mb()
        if rss is not None:
            samples.append((tally.done, rss))
        await asyncio.sleep(0.5)


# -- checks -----------------------------------------------------------------------------------------------
def snarkjs_verdicts(jobs: list[Planned]) -> list[bool]:
    """Every proof of every done job, verified by snarkjs in one node process."""
    vks = {key: json.loads((FIXTURES / curve / "multiplier" / "vk.json").read_text()) for key, curve in KEYS.items()}
    items = [{"vk": vks[job.key_id], "public": p["public_signals"], "proof": p["proof"]}
             for job in jobs if job.final and job.final.get("state") == "done" for p in job.final["proofs"]]
    out = subprocess.run(["node", str(REPO / "bench" / "verify_proofs.cjs"), str(REPO / "node_modules" / "snarkjs")],
                         input=json.dumps(items).encode(), capture_output=True, check=True, timeout=3600)
    return [line == "true" for line in out.stdout.decode().split()]


def check(jobs: list[Planned]) -> dict:
    lost = [j.request_id for j in jobs if not j.final or j.final.get("state") != "done"]
    duplicated = [j.request_id for j in jobs if len(j.job_ids) != 1]
    wrong_public = [j.request_id for j in jobs if j.final and j.final.get("state") == "done"
                    and [p["public_signals"] for p in j.final["proofs"]] != j.expected()]
    verdicts = snarkjs_verdicts(jobs)
    return {"jobs": len(jobs), "partitions": sum(len(j.pairs) for j in jobs), "lost": lost, "duplicated": duplicated,
            "wrong_public": wrong_public, "proofs_verified": len(verdicts), "invalid": verdicts.count(False),
            "resubmissions": sum(j.attempts - 1 for j in jobs)}


def rss_growth(samples: list, steady_jobs: int, warmup_fraction: float) -> dict:
    warm = int(steady_jobs * warmup_fraction)
    after = [rss for done, rss in samples if done >= warm]
    if len(after) < 10:
        return {"warm_up_jobs": warm, "samples": len(after)}
    window = max(5, len(after) // 10)
    base, end = statistics.median(after[:window]), statistics.median(after[-window:])
    return {"warm_up_jobs": warm, "samples": len(after), "rss_after_warm_up_mb": round(base, 1),
            "rss_end_mb": round(end, 1), "rss_max_mb": round(max(after), 1),
            "growth_pct": round(100 * (end - base) / base, 2)}


async def clients_beside(clients, helpers: list[asyncio.Task]) -> None:
    """Run the clients to the end while the helpers (killer, filler, sampler) run; a helper's failure stops all."""
    clients = asyncio.create_task(clients)
    done, _ = await asyncio.wait([clients, *helpers], return_when=asyncio.FIRST_COMPLETED)
    for task in helpers:
        task.cancel()
    await asyncio.gather(*helpers, return_exceptions=True)
    if clients not in done:
        clients.cancel()
        failed = next(task for task in done if task is not clients)
        raise RuntimeError(f"{failed.get_name()} stopped: {failed.exception()!r}")
    clients.result()


# -- main ---------------------------------------------------------------------------------------------------
async def soak(args) -> dict:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="zkpipe-soak-"))
    (work / "witnesses").mkdir()
    server = Server(work, free_port())
    await server.start()
    result: dict = {"work": str(work)}
    kills, fills, samples = [], [], []

    chaos_jobs, chaos_tally = plan(args.chaos_jobs, rng, "chaos"), Tally()
    started = time.monotonic()
    chaos = [asyncio.create_task(killer(server, args.kill_every, rng, kills)),
             asyncio.create_task(disk_filler(server, args.fill_every, args.full_for, rng, fills))]
    await clients_beside(run_clients(server, chaos_jobs, args.clients, work, chaos_tally), chaos)
    if server.proc.poll() is not None:
        await server.start()
    result["chaos"] = {"seconds": round(time.monotonic() - started, 1), "kills": len(kills),
                       "disk_full_periods": len(fills), "answers": chaos_tally.answers}

    steady_jobs, steady_tally = plan(args.steady_jobs, rng, "steady"), Tally()
    started = time.monotonic()
    background = [asyncio.create_task(disk_filler(server, args.fill_every, args.full_for, rng, fills)),
                  asyncio.create_task(rss_sampler(server, steady_tally, samples))]
    await clients_beside(run_clients(server, steady_jobs, args.clients, work, steady_tally), background)
    result["steady"] = {"seconds": round(time.monotonic() - started, 1), "answers": steady_tally.answers,
                        **rss_growth(samples, args.steady_jobs, args.warmup_fraction)}
    result["rss_samples"] = samples[::max(1, len(samples) // 200)]  # (jobs done, MB)
    result["sigterm_exit_code"] = server.stop()
    result["checks"] = check(chaos_jobs + steady_jobs)
    result["spool_left"] = sorted(p.name for p in (work / "state" / "spool" / "jobs").iterdir())
    return result


def report(args, result: dict) -> str:
    checks, chaos, steady = result["checks"], result["chaos"], result["steady"]
    ok = (not checks["lost"] and not checks["duplicated"] and not checks["wrong_public"] and checks["invalid"] == 0
          and steady.get("growth_pct", 100) < 10)
    lines = [
        "# Soak: zkpipe serve under kill -9 and a disk that fills (CPU backend, multiplier keys)",
        "",
        f"`python3 -m bench.soak_server --chaos-jobs {args.chaos_jobs} --steady-jobs {args.steady_jobs} "
        f"--clients {args.clients} --kill-every {args.kill_every} --fill-every {args.fill_every} "
        f"--full-for {args.full_for} --seed {args.seed}`",
        "",
        f"Machine: {platform.node()}, {os.cpu_count()} cores (shared with other work), Python "
        f"{platform.python_version()}. Disk full is injected (tests/server/faults.py: ENOSPC on spool writes, "
        "SQLITE_FULL on store writes while a flag file exists); kills are real SIGKILLs.",
        "",
        "| phase | jobs | seconds | kills | disk-full periods | answers seen (HTTP status: count) |",
        "|---|---|---|---|---|---|",
        f"| chaos | {args.chaos_jobs} | {chaos['seconds']} | {chaos['kills']} | {chaos['disk_full_periods']} | "
        f"{chaos['answers']} |",
        f"| steady | {args.steady_jobs} | {steady['seconds']} | 0 | (same filler) | {steady['answers']} |",
        "",
        "| check | result |",
        "|---|---|",
        f"| jobs / partitions | {checks['jobs']} / {checks['partitions']} |",
        f"| lost (accepted, not done) | {len(checks['lost'])} |",
        f"| duplicated (one request_id, two jobs) | {len(checks['duplicated'])} |",
        f"| wrong public signals | {len(checks['wrong_public'])} |",
        f"| proofs verified by snarkjs / invalid | {checks['proofs_verified']} / {checks['invalid']} |",
        f"| resubmissions (same request_id after no answer, 503 or 507) | {checks['resubmissions']} |",
        f"| server RSS after warm-up ({steady.get('warm_up_jobs')} jobs) -> end, MB | "
        f"{steady.get('rss_after_warm_up_mb')} -> {steady.get('rss_end_mb')} (max {steady.get('rss_max_mb')}) |",
        f"| RSS growth after warm-up | {steady.get('growth_pct')} % |",
        f"| SIGTERM exit code / spool folders left | {result['sigterm_exit_code']} / {len(result['spool_left'])} |",
        "",
        f"**{'PASS' if ok else 'FAIL'}**: 0 lost, 0 duplicated, 0 invalid, RSS growth < 10 % after warm-up.",
        "",
    ]
    for name in ("lost", "duplicated", "wrong_public"):
        if checks[name]:
            lines.append(f"{name}: {', '.join(checks[name][:20])}")
    return "\n".join(lines) + "\n"


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "serve-child":
        return serve_child(sys.argv[2], sys.argv[3])
    parser = arg_parser(__doc__)
    parser.add_argument("--chaos-jobs", type=int, default=1200)
    parser.add_argument("--steady-jobs", type=int, default=1500)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--kill-every", type=float, default=4.0, help="mean seconds between SIGKILLs (chaos phase)")
    parser.add_argument("--fill-every", type=float, default=10.0, help="mean seconds between disk-full periods")
    parser.add_argument("--full-for", type=float, default=2.0, help="mean seconds the disk stays full")
    parser.add_argument("--warmup-fraction", type=float, default=0.2, help="of the steady jobs, before RSS counts")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--out", default=str(result_path("soak_server_cpu.md")))
    args = parser.parse_args()
    result = asyncio.run(soak(args))
    (Path(args.out).with_suffix(".json")).write_text(json.dumps(result, indent=1, default=str))
    write_result(args.out, report(args, result))
    checks = result["checks"]
    return 0 if not (checks["lost"] or checks["duplicated"] or checks["wrong_public"] or checks["invalid"]) else 1


if __name__ == "__main__":
    sys.exit(main())

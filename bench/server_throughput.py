"""The HTTP service's cost over the library: accepted requests/s, and added latency per job.

    python3 -m bench.server_throughput --backend cpu                       # this machine
    python3 -m bench.server_throughput --backend cuda --key-circuit chain_2e10   # the GPU host

1. library latency: ``Engine.submit`` + ``job.result()`` for one small job (1 partition,
   a .wtns), sequential, median over --latency-jobs;
2. HTTP latency: the same job through a real ``zkpipe serve`` on loopback: POST (multipart)
   then GET ?wait= until done; the difference is the HTTP path's added latency (upload,
   durable spool + SQLite commit, dispatch, long-poll wake-up, JSON);
3. accepted requests/s: clients at several concurrency levels POST small jobs as fast as the
   service answers 202 (the engine proves them meanwhile, on the same machine), with and
   without fsync.

Writes bench/results/server_<backend>_<curve>_<circuit>.md.
"""
from __future__ import annotations

import asyncio
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.common import (CURVE_NAMES, FIXTURES, REPO, arg_parser, free_port, int_list, result_path, wait_answering,
                          write_result)
from pipeline.engine import Engine, EngineConfig

TOKEN = "bench-token"


async def library_latency(args, fixture: Path) -> tuple[list[float], list[float]]:
    """(client-seen ms, the engine's own partition total_ms) per job."""
    samples, engine_ms = [], []
    async with Engine(EngineConfig(backend=args.backend, gil_switch_interval_s=args.gil_switch_interval)) as engine:
        engine.register_key("bench", zkey_path=fixture / "circuit_final.zkey")
        await engine.preload("bench")
        for i in range(args.latency_jobs + 2):
            t0 = time.perf_counter()
            job = await engine.submit("bench", [str(fixture / "witness.wtns")])
            proofs = await job.result()
            if i >= 2:  # warm-up
                samples.append((time.perf_counter() - t0) * 1e3)
                engine_ms.append(proofs[0].timings_ms["total_ms"])
    return samples, engine_ms


class Server:
    def __init__(self, args, fixture: Path, state: Path, fsync: bool) -> None:
        keys = state / "keys"
        keys.mkdir(parents=True)
        (keys / "bench.zkey").symlink_to(fixture / "circuit_final.zkey")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = state / "zkpipe.toml"
        config.write_text(f'[server]\nport = {self.port}\nkeys_dir = "{keys}"\nstate_dir = "{state / "s"}"\n'
                          f'auth_token = "{TOKEN}"\nfsync = {"true" if fsync else "false"}\nlog_level = "warning"\n'
                          f'[engine]\nbackend = "{args.backend}"\n'
                          + (f"gil_switch_interval_s = {args.gil_switch_interval}\n" if args.gil_switch_interval else ""))
        self.proc = subprocess.Popen([sys.executable, "-m", "pipeline.server", "serve", "--config", str(config)],
                                     cwd=REPO, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                         filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})

    async def ready(self, session) -> None:
        await wait_answering(self.url, self.proc, 120.0)  # ~2 min: the CUDA backend may compile kernels at first start
        async with session.post(f"{self.url}/v1/keys/bench/preload") as pre:
            assert pre.status == 200

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def form(wtns: bytes) -> aiohttp.FormData:
    data = aiohttp.FormData()
    data.add_field("key_id", "bench")
    data.add_field("witness", wtns, filename="w.wtns", content_type="application/octet-stream")
    return data


async def http_latency(session, server: Server, wtns: bytes, n: int) -> list[dict[str, float]]:
    """Per job: client-seen total, the POST round trip, the server's created->finished time and
    the engine's own partition total (the last two from the job's ``timings``)."""
    samples = []
    for i in range(n + 2):
        t0 = time.perf_counter()
        async with session.post(f"{server.url}/v1/jobs", data=form(wtns)) as resp:
            job_id = (await resp.json())["job_id"]
        t_accepted = time.perf_counter()
        while True:
            async with session.get(f"{server.url}/v1/jobs/{job_id}", params={"wait": "30"}) as resp:
                job = await resp.json()
            if job["state"] in ("done", "failed", "cancelled"):
                break
        assert job["state"] == "done", job
        if i >= 2:
            t_end = time.perf_counter()
            samples.append({"total": (t_end - t0) * 1e3, "post": (t_accepted - t0) * 1e3,
                            "server": job["timings"]["total_ms"],
                            "engine": job["timings"]["partitions_ms"][0]["total_ms"]})
    return samples


async def accept_rate(session, server: Server, wtns: bytes, clients: int, total: int) -> tuple[float, float]:
    """(accepted requests/s, median POST latency ms) for ``total`` POSTs from ``clients`` clients."""
    latencies: list[float] = []
    counter = iter(range(total))

    async def client():
        for _ in counter:
            t0 = time.perf_counter()
            async with session.post(f"{server.url}/v1/jobs", data=form(wtns)) as resp:
                assert resp.status == 202, await resp.text()
            latencies.append((time.perf_counter() - t0) * 1e3)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return total / (time.perf_counter() - t0), statistics.median(latencies)


async def drain(session, server: Server, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        async with session.get(f"{server.url}/v1/status") as resp:
            jobs = (await resp.json())["server"]["jobs"]
        if jobs["queued"] + jobs["running"] == 0:
            return
        await asyncio.sleep(0.5)


async def main(args) -> None:
    fixture = FIXTURES / args.curve / args.key_circuit
    wtns = (fixture / "witness.wtns").read_bytes()
    lib, lib_engine = await library_latency(args, fixture)
    rows_latency, rows_rate = [], []
    for fsync in (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(args, fixture, Path(tmp), fsync)
            try:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                connector = aiohttp.TCPConnector(limit=256)
                async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
                    await server.ready(session)
                    http = await http_latency(session, server, wtns, args.latency_jobs)
                    rows_latency.append((fsync, http))
                    for clients in args.clients:
                        rate, post_ms = await accept_rate(session, server, wtns, clients, args.requests)
                        rows_rate.append((fsync, clients, rate, post_ms))
                        await drain(session, server)
            finally:
                server.stop()

    lib_median = statistics.median(lib)
    lines = [f"# HTTP service vs library: {args.backend} backend, {args.curve} {args.key_circuit}", "",
             f"Machine: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
             f"server: `zkpipe serve` subprocess on loopback (uvloop), client: aiohttp in this process; "
             f"gil_switch_interval_s = {args.gil_switch_interval or 'default (0.005)'}.", "",
             "## Latency of one job (1 partition, sequential)", "",
             "| path | fsync | median ms | p95 ms | added over library (median) |", "|---|---|---:|---:|---:|",
             f"| library (`Engine.submit` + `result()`) | - | {lib_median:.1f} | "
             f"{statistics.quantiles(lib, n=20)[-1]:.1f} | - |"]
    for fsync, http in rows_latency:
        total = [h["total"] for h in http]
        lines.append(f"| HTTP (POST multipart, GET ?wait=) | {fsync} | {statistics.median(total):.1f} | "
                     f"{statistics.quantiles(total, n=20)[-1]:.1f} | {statistics.median(total) - lib_median:+.1f} ms |")
    lines += ["", "Where the HTTP path's time goes (medians, ms): POST = the request until its 202 (upload, spool, "
              "SQLite); engine = the engine's own total for the partition; server - engine = dispatch and "
              "bookkeeping inside the service between its accepting the job and finishing it; rest = total - "
              "POST - server (storing the result, waking the long-poll, the GET's answer).", "",
              "| path | fsync | total | POST | engine | server - engine | rest |", "|---|---|---:|---:|---:|---:|---:|",
              f"| library | - | {lib_median:.1f} | - | {statistics.median(lib_engine):.1f} | - | - |"]
    for fsync, http in rows_latency:
        med = {k: statistics.median(h[k] for h in http) for k in ("total", "post", "server", "engine")}
        rest = statistics.median(h["total"] - h["post"] - h["server"] for h in http)
        gap = statistics.median(h["server"] - h["engine"] for h in http)
        lines.append(f"| HTTP | {fsync} | {med['total']:.1f} | {med['post']:.1f} | {med['engine']:.1f} | "
                     f"{gap:.1f} | {rest:.1f} |")
    lines += ["", f"## Accepted requests/s ({args.requests} POSTs of 1-partition jobs per level; the engine "
                  "proves them meanwhile on the same CPUs)", "",
              "| fsync | clients | accepted req/s | median POST ms |", "|---|---:|---:|---:|"]
    lines += [f"| {fsync} | {clients} | {rate:.0f} | {post_ms:.1f} |" for fsync, clients, rate, post_ms in rows_rate]
    gil = f"_gil{args.gil_switch_interval:g}" if args.gil_switch_interval else ""
    out = result_path(f"server_{args.backend}_{args.curve}_{args.key_circuit}{gil}.md")
    write_result(out, "\n".join(lines) + "\n", show="\n".join(lines))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    parser = arg_parser(__doc__)
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--curve", default="bn128", choices=CURVE_NAMES)
    parser.add_argument("--key-circuit", default="multiplier")
    parser.add_argument("--latency-jobs", type=int, default=30)
    parser.add_argument("--gil-switch-interval", type=float, default=None,
                        help="[engine] gil_switch_interval_s for both paths (default: Python's 5 ms)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int_list, default=[1, 4, 16])
    asyncio.run(main(parser.parse_args()))

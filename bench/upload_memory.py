"""Server memory under large concurrent uploads (issue 15, finding 8): peak RSS of ``zkpipe serve``.

    python3 -m bench.upload_memory                          # this tree, 4 x 248 MB
    python3 -m bench.upload_memory --baseline-ref 79c47db   # and the tree of a git ref, in the same run

Each upload is a multipart body of --parts file parts of --part-mb MB (parts under the old
4 MB in-memory threshold: the case that was held in memory until the body ended), sent by
--uploads concurrent clients. The bodies are not witnesses of the key, so each is answered 422
after it has been received and spooled: what is measured is the receiving. Peak RSS is the
server process's VmHWM. Writes bench/results/upload_memory.md.
"""
from __future__ import annotations

import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.common import REPO, arg_parser, markdown_table, result_path, write_result
from bench.server_throughput import free_port

TOKEN = "bench-token"


def tree_of(ref: str, into: Path) -> Path:
    """The source tree of a git ref, extracted (not checked out) into ``into``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


async def measure(tree: Path, work: Path, args) -> dict:
    port = free_port()
    keys = work / "keys"
    keys.mkdir()
    (keys / "mult_bn128.zkey").symlink_to(REPO / "tests" / "fixtures" / "bn128" / "multiplier" / "circuit_final.zkey")
    config = work / "zkpipe.toml"
    config.write_text(f'[server]\nhost = "127.0.0.1"\nport = {port}\nkeys_dir = "{keys}"\nstate_dir = "{work / "state"}"\n'
                      f'auth_token = "{TOKEN}"\nlog_level = "warning"\n\n[engine]\nbackend = "cpu"\n')
    log = open(work / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "serve", "--config", str(config)], cwd=tree,
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(tree)})
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"},
                                         timeout=aiohttp.ClientTimeout(total=3600)) as session:
            for _ in range(600):
                try:
                    async with session.get(f"{url}/healthz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            idle = peak_rss_mb(proc.pid)
            part = os.urandom(args.part_mb << 20)

            async def upload() -> int:
                form = aiohttp.FormData(default_to_multipart=True)
                form.add_field("key_id", "mult_bn128")
                for i in range(args.parts):
                    form.add_field("witness", part, filename=f"{i}.wtns", content_type="application/octet-stream")
                async with session.post(f"{url}/v1/jobs", data=form) as resp:
                    await resp.read()
                    return resp.status

            started = time.perf_counter()
            statuses = await asyncio.gather(*(upload() for _ in range(args.uploads)))
            seconds = time.perf_counter() - started
            return {"idle_mb": idle, "peak_mb": peak_rss_mb(proc.pid), "statuses": statuses, "seconds": seconds}
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


async def main_async(args) -> list[tuple[str, dict]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="zkpipe-upload-") as tmp:
        trees = [("this tree", REPO)]
        if args.baseline_ref:
            baseline = Path(tmp) / "baseline-tree"
            baseline.mkdir()
            trees.append((args.baseline_ref, tree_of(args.baseline_ref, baseline)))
        for name, tree in trees:
            work = Path(tmp) / f"work-{len(rows)}"
            work.mkdir()
            rows.append((name, await measure(tree, work, args)))
    return rows


def main() -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--uploads", type=int, default=4)
    parser.add_argument("--parts", type=int, default=62)
    parser.add_argument("--part-mb", type=int, default=4, help="MB per part (the old in-memory threshold was 4 MiB)")
    parser.add_argument("--baseline-ref", help="also measure the tree of this git ref, in the same run")
    parser.add_argument("--out", default=str(result_path("upload_memory.md")))
    args = parser.parse_args()
    rows = asyncio.run(main_async(args))
    body_mb = args.parts * args.part_mb
    lines = ["# Server memory under concurrent uploads (issue 15, finding 8)", "",
             f"`python3 -m bench.upload_memory --uploads {args.uploads} --parts {args.parts} --part-mb {args.part_mb}"
             f"{' --baseline-ref ' + args.baseline_ref if args.baseline_ref else ''}`: {args.uploads} concurrent "
             f"multipart bodies of {args.parts} parts x {args.part_mb} MB ({body_mb} MB each) on loopback. "
             f"Machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}.", "",
             markdown_table(["server", "RSS idle (MB)", "peak RSS (MB)", "peak - idle (MB)", "answers", "seconds"],
                            [[name, f"{r['idle_mb']:.0f}", f"{r['peak_mb']:.0f}", f"{r['peak_mb'] - r['idle_mb']:.0f}",
                              sorted(set(r["statuses"])), f"{r['seconds']:.1f}"] for name, r in rows])]
    if len(rows) == 2:
        growth = [r["peak_mb"] - r["idle_mb"] for _, r in rows]
        lines += ["", f"Memory taken by the uploads, {rows[1][0]} / this tree: {growth[1] / max(growth[0], 1):.1f}x."]
    write_result(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``zkpipe serve`` and ``zkpipe submit``: ``add_server_commands(subparsers)`` adds both to the CLI.

Every ``zkpipe`` command builds these parsers, so the module imports nothing heavy at the top
(asyncio, logging and aiohttp come with the commands that use them).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import ExitCode

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = ExitCode.OK, ExitCode.INVALID, ExitCode.BAD_INPUT


def add_server_commands(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP proving service (see README: HTTP service)")
    p.add_argument("--config", help="TOML config file (see zkpipe.example.toml); flags override it")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on (default 9820; 0: any free port)")
    p.add_argument("--keys-dir", help="folder of NAME.zkey (+ NAME.r1cs, NAME.wasm); default: bundled examples")
    p.add_argument("--state-dir", help="job store and spool folder")
    p.add_argument("--store", dest="store_url", help="postgresql://user@host:port/db: join the cluster sharing that "
                   "job store (default: SQLite in the state folder)")
    p.add_argument("--log-level", help="debug, info, warning, error")
    p.set_defaults(func=cmd_serve)

    p = subparsers.add_parser("submit", help="send a job to a running service, wait, write the proofs")
    p.add_argument("files", nargs="+", help="one file per partition: .wtns witnesses, or .json circuit inputs")
    p.add_argument("--key", required=True, help="key id (GET /v1/keys)")
    p.add_argument("--url", default=os.environ.get("ZKPIPE_URL", "http://127.0.0.1:9820"))
    p.add_argument("--token", default=os.environ.get("ZKPIPE_AUTH_TOKEN", ""), help="bearer token (or ZKPIPE_AUTH_TOKEN)")
    p.add_argument("--priority", default="normal")
    p.add_argument("--request-id")
    p.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the proofs (0: just submit)")
    p.add_argument("--out", default=".", help="folder for proof-NNN.json and public-NNN.json")
    p.set_defaults(func=cmd_submit)


# -- serve ----------------------------------------------------------------------------------------
def cmd_serve(args) -> int:
    import asyncio
    import logging

    from ..config import ConfigError, load_config

    overrides = {"host": args.host, "port": args.port, "keys_dir": args.keys_dir, "state_dir": args.state_dir,
                 "log_level": args.log_level, "store_url": args.store_url}
    try:
        config = load_config(args.config, overrides=overrides)
        config.engine_config()
    except ConfigError as exc:
        print(f"zkpipe serve: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logging.basicConfig(level=config.server.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop

        return uvloop.run(_serve(config))
    except ImportError:
        return asyncio.run(_serve(config))


async def _serve(config) -> int:
    import asyncio
    import signal

    from ..errors import BadInput, Unavailable
    from .listener import serving

    try:
        async with serving(config) as (host, port):
            print(f"zkpipe serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
            print("zkpipe serve: stopping (jobs not finished run again at the next start)", file=sys.stderr, flush=True)
    except (BadInput, Unavailable, FileNotFoundError) as exc:  # one line, not a traceback (a bug still has one)
        print(f"zkpipe serve: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


# -- submit ---------------------------------------------------------------------------------------
def cmd_submit(args) -> int:
    import asyncio

    return asyncio.run(_submit(args))


async def _submit(args) -> int:
    import asyncio

    import aiohttp
    import orjson

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    paths = [Path(f) for f in args.files]
    for path in paths:
        if not path.is_file():
            print(f"zkpipe submit: {path}: no such file", file=sys.stderr)
            return EXIT_BAD_INPUT
    base = args.url.rstrip("/")
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        if all(p.suffix == ".json" for p in paths):
            body = {"key_id": args.key, "priority": args.priority, "request_id": args.request_id,
                    "inputs": [orjson.loads(p.read_bytes()) for p in paths]}
            request = session.post(f"{base}/v1/jobs", data=orjson.dumps(body),
                                   headers={"Content-Type": "application/json"})
        else:
            form = aiohttp.FormData()
            form.add_field("key_id", args.key)
            form.add_field("priority", args.priority)
            if args.request_id:
                form.add_field("request_id", args.request_id)
            for path in paths:
                form.add_field("witness", path.read_bytes(), filename=path.name,
                               content_type="application/octet-stream")
            request = session.post(f"{base}/v1/jobs", data=form)
        async with request as resp:
            answer = await resp.json(content_type=None)
            if resp.status >= 400:
                print(f"zkpipe submit: HTTP {resp.status}: {answer['error']['message']}", file=sys.stderr)
                return EXIT_BAD_INPUT
        job_id = answer["job_id"]
        print(f"job {job_id}: {answer['state']}", file=sys.stderr)
        if args.wait <= 0:
            print(job_id)
            return EXIT_OK
        deadline = asyncio.get_running_loop().time() + args.wait
        while True:
            left = deadline - asyncio.get_running_loop().time()
            async with session.get(f"{base}/v1/jobs/{job_id}", params={"wait": f"{max(0.0, min(left, 30.0)):.1f}"}) as resp:
                job = await resp.json(content_type=None)
            if job.get("state") in ("done", "failed", "cancelled") or left <= 0:
                break
    return _write_result(job, Path(args.out))


def _write_result(job: dict, out: Path) -> int:
    import orjson

    state = job.get("state")
    if state != "done":
        error = (job.get("error") or {}).get("message") or ""
        print(f"job {job.get('job_id')}: {state} {error}".rstrip(), file=sys.stderr)
        return EXIT_FAILED
    out.mkdir(parents=True, exist_ok=True)
    for index, item in enumerate(job["proofs"]):
        (out / f"proof-{index:03d}.json").write_bytes(orjson.dumps(item["proof"], option=orjson.OPT_INDENT_2))
        (out / f"public-{index:03d}.json").write_bytes(orjson.dumps(item["public_signals"], option=orjson.OPT_INDENT_2))
    print(f"job {job['job_id']}: done, {len(job['proofs'])} proof(s) in {out}", file=sys.stderr)
    return EXIT_OK

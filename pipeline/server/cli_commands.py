"""``zkpipe serve`` and ``zkpipe submit``: ``add_server_commands(subparsers)`` adds both to the CLI.

Every ``zkpipe`` command builds these parsers, so the module imports nothing heavy at the top
(asyncio, logging and aiohttp come with the commands that use them).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import BadInput, ExitCode, Unavailable

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = ExitCode.OK, ExitCode.INVALID, ExitCode.BAD_INPUT


def add_server_commands(subparsers) -> None:
    from ..config import ServerConfig

    defaults = ServerConfig()
    p = subparsers.add_parser("serve", help="run the HTTP proving service (see README: HTTP service)",
                              description="Run the HTTP proving service.\nSettings: built-in defaults < --config file < "
                                          "ZKPIPE_* environment variables < these flags.")
    p.add_argument("--config", help="TOML config file (see zkpipe.example.toml); flags override it")
    p.add_argument("--host", help=f"address to listen on (default: {defaults.host})")
    p.add_argument("--port", type=int, help=f"port to listen on (default: {defaults.port}; 0: any free port)")
    p.add_argument("--keys-dir", help="folder of NAME.zkey (+ NAME.r1cs, NAME.wasm, NAME.sym); "
                                      "default: the bundled example keys")
    p.add_argument("--state-dir", help=f"job store and spool folder (default: {defaults.state_dir})")
    p.add_argument("--store", dest="store_url", help="postgresql://user@host:port/db: join the cluster sharing that "
                   "job store (default: SQLite in the state folder)")
    p.add_argument("--log-level", help=f"debug, info, warning or error (default: {defaults.log_level})")
    p.add_argument("--log-format", choices=["text", "json"],
                   help=f"text lines or JSON lines (default: {defaults.log_format})")
    p.set_defaults(func=cmd_serve)

    p = subparsers.add_parser("submit", help="send a job to a running service, wait, write the proofs",
                              description="Send one job to a running `zkpipe serve`, show its progress,\n"
                                          "and write proof-NNN.json / public-NNN.json when it is done.")
    p.add_argument("files", nargs="+", help="one file per partition: all .wtns witnesses, or all .json circuit "
                                            "inputs (not both in one job)")
    p.add_argument("--key", required=True, help="key id (GET /v1/keys)")
    p.add_argument("--url", default=os.environ.get("ZKPIPE_URL", "http://127.0.0.1:9820"),
                   help="the service (or ZKPIPE_URL)")
    p.add_argument("--token", help="bearer token (default: ZKPIPE_AUTH_TOKEN, else none)")
    p.add_argument("--priority", default="normal", choices=["critical", "high", "normal", "low"],
                   help="job priority")
    p.add_argument("--request-id", help="idempotency key: resubmitting it returns the first job")
    p.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the proofs (0: just submit)")
    p.add_argument("--out", default=".", help="folder for proof-NNN.json and public-NNN.json")
    p.set_defaults(func=cmd_submit)


# -- serve ----------------------------------------------------------------------------------------
def cmd_serve(args) -> int:
    import asyncio

    from ..config import ConfigError, load_config
    from .logs import configure_logging

    overrides = {"host": args.host, "port": args.port, "keys_dir": args.keys_dir, "state_dir": args.state_dir,
                 "log_level": args.log_level, "log_format": args.log_format, "store_url": args.store_url}
    try:
        config = load_config(args.config, overrides=overrides)
        config.engine_config()
    except ConfigError as exc:
        print(f"zkpipe serve: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_logging(config.server.log_level, config.server.log_format)
    try:
        import uvloop

        return uvloop.run(_serve(config))
    except ImportError:
        return asyncio.run(_serve(config))


async def _serve(config) -> int:
    import asyncio
    import signal

    from .listener import serving

    try:
        async with serving(config) as (host, port):  # binds first: a busy port fails before anything starts
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


# -- submit ----------------------------------------------------------------------------------------
POLL_S = 1.0  # long-poll slice: the server answers at once when the job finishes, else after this


class SubmitError(BadInput):
    """Why submitting or following the job did not work (no server at --url, a refused request);
    the message is the whole story, the exit code 2."""


def cmd_submit(args) -> int:
    import asyncio

    from .. import progress

    progress.enable()
    try:
        return asyncio.run(_submit(args))
    except SubmitError as exc:
        print(f"zkpipe submit: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _job_kind(paths: list[Path]) -> str:
    """"inputs" (every file .json) or "wtns" (none is); a mix is refused: one job is one kind."""
    for path in paths:
        if not path.is_file():
            raise SubmitError(f"{path}: no such file")
    json_files = [p.name for p in paths if p.suffix == ".json"]
    if json_files and len(json_files) < len(paths):
        other = next(p.name for p in paths if p.suffix != ".json")
        raise SubmitError(f"a job is either circuit inputs (.json) or witnesses (.wtns), not both "
                          f"(got {json_files[0]} and {other}): submit them as two jobs")
    return "inputs" if json_files else "wtns"


async def _submit(args) -> int:
    import aiohttp

    paths = [Path(f) for f in args.files]
    kind = _job_kind(paths)
    base = args.url.rstrip("/")
    token = args.token if args.token is not None else os.environ.get("ZKPIPE_AUTH_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
    try:
        async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
            job_id, state = await _post_job(session, base, args, paths, kind)
            print(f"job {job_id}: {state}", file=sys.stderr)
            if args.wait <= 0:
                print(job_id)
                return EXIT_OK
            job = await _follow(session, base, job_id, len(paths), args.wait)
    except aiohttp.ClientConnectorError as exc:
        error = exc.os_error
        why = os.strerror(error.errno) if error is not None and error.errno else str(exc)
        raise SubmitError(f"no zkpipe server answers at {base} ({why}); start one with `zkpipe serve` "
                          f"or point --url (or ZKPIPE_URL) at it") from None
    except aiohttp.ClientError as exc:
        raise SubmitError(f"lost the connection to {base}: {exc or type(exc).__name__}") from None
    return _write_result(job, Path(args.out))


async def _answer(resp, base: str) -> dict:
    """The JSON body of a zkpipe answer; an error answer becomes a ``SubmitError`` with its message."""
    import orjson

    raw = await resp.read()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    if resp.status >= 400:
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
        if message is None:
            raise SubmitError(f"{base} answered HTTP {resp.status} {resp.reason} without a zkpipe error: "
                              f"is it a zkpipe server?")
        hint = " (give --token or ZKPIPE_AUTH_TOKEN)" if resp.status == 401 else ""
        raise SubmitError(f"HTTP {resp.status}: {message}{hint}")
    if not isinstance(body, dict):
        raise SubmitError(f"{base} answered HTTP {resp.status} without a JSON object: is it a zkpipe server?")
    return body


async def _post_job(session, base: str, args, paths: list[Path], kind: str) -> tuple[str, str]:
    import aiohttp
    import orjson

    if kind == "inputs":
        try:
            inputs = [orjson.loads(p.read_bytes()) for p in paths]
        except orjson.JSONDecodeError as exc:
            raise SubmitError(f"not valid JSON: {exc}") from None
        body = {"key_id": args.key, "priority": args.priority, "request_id": args.request_id, "inputs": inputs}
        request = session.post(f"{base}/v1/jobs", data=orjson.dumps(body), headers={"Content-Type": "application/json"})
    else:
        form = aiohttp.FormData()
        form.add_field("key_id", args.key)
        form.add_field("priority", args.priority)
        if args.request_id:
            form.add_field("request_id", args.request_id)
        for path in paths:
            form.add_field("witness", path.read_bytes(), filename=path.name, content_type="application/octet-stream")
        request = session.post(f"{base}/v1/jobs", data=form)
    async with request as resp:
        answer = await _answer(resp, base)
    return answer["job_id"], answer["state"]


async def _follow(session, base: str, job_id: str, n_partitions: int, wait_s: float) -> dict:
    """Poll the job until it finishes or ``wait_s`` passes, showing partitions done / total."""
    import asyncio

    from .. import progress

    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    shown = None
    with progress.bar(f"job {job_id[:8]}", total=n_partitions, unit="partition", leave=True) as bar:
        while True:
            left = deadline - loop.time()
            async with session.get(f"{base}/v1/jobs/{job_id}",
                                   params={"wait": f"{max(0.0, min(left, POLL_S)):.1f}"}) as resp:
                job = await _answer(resp, base)
            done, state = job["progress"]["partitions_done"], job["state"]
            if progress.enabled():
                bar.update(done - bar.n)
                bar.set_postfix_str(state)
            elif (state, done) != shown:  # not a terminal: one line per change
                print(f"job {job_id}: {state}, {done}/{n_partitions} partitions done", file=sys.stderr)
            shown = (state, done)
            if state in ("done", "failed", "cancelled") or left <= 0:
                return job


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

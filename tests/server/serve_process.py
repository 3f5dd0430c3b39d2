"""A real ``zkpipe serve`` in a subprocess on loopback, and a small async client for it."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from bench.common import free_port, wait_answering
from tests.conftest import REPO
from tests.server.server_helpers import ENGINE_SETTINGS, TOKEN, build_keys_dir, check_proof, vk_for

FINAL = ("done", "failed", "cancelled")


def cli_module() -> str:
    """The module behind the ``zkpipe`` command: the tests run ``zkpipe serve`` / ``zkpipe submit`` themselves."""
    return "pipeline.cli"


def write_config(tmp_path: Path, port: int) -> Path:
    keys = tmp_path / "keys"
    if not keys.exists():
        build_keys_dir(keys)
    engine = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in ENGINE_SETTINGS.items())
    path = tmp_path / "zkpipe.toml"
    path.write_text(f'[server]\nhost = "127.0.0.1"\nport = {port}\nkeys_dir = "{keys}"\n'
                    f'state_dir = "{tmp_path / "state"}"\nauth_token = "{TOKEN}"\n\n[engine]\n{engine}\n')
    return path


class ServeProcess:
    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None) -> None:
        self.tmp_path = tmp_path
        self.env = env or {}  # extra ZKPIPE_* settings
        self.port = free_port()
        self.config = write_config(tmp_path, self.port)
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    async def start(self, timeout_s: float = 60.0) -> None:
        self.starts += 1
        env = {**os.environ, "PYTHONPATH": str(REPO), "ZKPIPE_AUTH_TOKEN": TOKEN, **self.env}
        with open(self.tmp_path / f"serve-{self.starts}.log", "wb") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen([sys.executable, "-m", cli_module(), "serve", "--config", str(self.config)],
                                         cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        await wait_answering(self.url, self.proc, timeout_s, self.log_text)

    def log_text(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in sorted(self.tmp_path.glob("serve-*.log")))

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9


async def wait_final(session: aiohttp.ClientSession, url: str, job_id: str, timeout_s: float) -> dict:
    """Long-poll one job until it is finished (a bounded loop)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"job {job_id} not finished in {timeout_s} s")
        async with session.get(f"{url}/v1/jobs/{job_id}", params={"wait": f"{min(left, 20.0):.1f}"}) as resp:
            assert resp.status == 200, await resp.text()
            job = await resp.json()
        if job["state"] in FINAL:
            return job


@functools.lru_cache(maxsize=None)
def _vk(key_id: str):
    return vk_for(key_id)


def verify_items(key_id: str, items: list[dict]) -> list[bool]:
    """Runs in a worker process: our verifier on each of a job's proofs."""
    return [check_proof(_vk(key_id), item) for item in items]

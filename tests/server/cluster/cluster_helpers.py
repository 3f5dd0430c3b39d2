"""Workers as real ``zkpipe serve`` processes on one PostgreSQL database, and the jobs the tests send them."""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
import orjson

from tests.conftest import FIXTURES, snarkjs_verify_many
from tests.server.serve_process import ServeProcess, wait_final
from tests.server.server_helpers import TEST_KEYS, multiplier_witness

# Short leases so a lost worker is noticed within seconds. The CPU backend's proving threads hold
# the GIL: a 1 ms switch interval keeps each worker's event loop (its heartbeats) on time.
CLUSTER_SETTINGS = {"LEASE_S": "4", "HEARTBEAT_INTERVAL_S": "0.5", "CLAIM_POLL_INTERVAL_S": "0.5",
                    "DRAIN_TIMEOUT_S": "20", "LOG_LEVEL": "info", "ENGINE_GIL_SWITCH_INTERVAL_S": "0.001"}


def worker(tmp_path: Path, name: str, store_url: str, keys: tuple[str, ...] | None = None, **settings) -> ServeProcess:
    """A worker process (not started) in tmp_path/name; ``keys`` limits its keys folder to those key ids."""
    env = {f"ZKPIPE_{k}": str(v) for k, v in {**CLUSTER_SETTINGS, **settings}.items()}
    process = ServeProcess(tmp_path / name, env={**env, "ZKPIPE_STORE_URL": store_url})
    if keys is not None:
        set_keys(process, keys)
    return process


def set_keys(process: ServeProcess, keys: tuple[str, ...]) -> None:
    """Leave only these key ids in the worker's keys folder (takes effect at its next start)."""
    folder = process.tmp_path / "keys"
    for link in folder.iterdir():
        link.unlink()
    for key_id in keys:
        curve, circuit = TEST_KEYS[key_id]
        for ext, name in ((".zkey", "circuit_final.zkey"), (".r1cs", "circuit.r1cs"), (".wasm", "circuit.wasm")):
            (folder / f"{key_id}{ext}").symlink_to(FIXTURES / curve / circuit / name)


@dataclass
class Sent:
    job_id: str
    key_id: str
    expected: list  # public signals per partition
    accepted_by: str


class Jobs:
    """Builds multiplier jobs whose partitions each prove a distinct product, and chain jobs."""

    def __init__(self, folder: Path, seed: int) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(seed)
        self.count = 0

    def body(self, key_id: str, n: int, as_inputs: bool = False):
        if key_id == "chain_bn128":
            form = aiohttp.FormData(default_to_multipart=True)
            form.add_field("key_id", key_id)
            wtns = (FIXTURES / "bn128" / "chain_2e8" / "witness.wtns").read_bytes()
            public = orjson.loads((FIXTURES / "bn128" / "chain_2e8" / "public.json").read_bytes())
            for i in range(n):
                form.add_field("witness", wtns, filename=f"chain{i}.wtns", content_type="application/octet-stream")
            return form, [public] * n
        curve = TEST_KEYS[key_id][0]
        pairs = [(self.rng.randrange(2, 10**9), self.rng.randrange(2, 10**9)) for _ in range(n)]
        expected = [[str(a * b)] for a, b in pairs]
        if as_inputs:
            return {"key_id": key_id, "inputs": [{"a": str(a), "b": str(b)} for a, b in pairs]}, expected
        form = aiohttp.FormData(default_to_multipart=True)
        form.add_field("key_id", key_id)
        for a, b in pairs:
            self.count += 1
            path = multiplier_witness(self.folder / f"w{self.count}.wtns", curve, a, b)
            form.add_field("witness", path.read_bytes(), filename=path.name, content_type="application/octet-stream")
        return form, expected

    async def send(self, session: aiohttp.ClientSession, url: str, key_id: str, n: int, as_inputs: bool = False) -> Sent:
        body, expected = self.body(key_id, n, as_inputs)
        request = session.post(f"{url}/v1/jobs", json=body) if as_inputs else session.post(f"{url}/v1/jobs", data=body)
        async with request as resp:
            answer = await resp.json()
            assert resp.status == 202, answer
        return Sent(answer["job_id"], key_id, expected, url)


async def start_all(*workers: ServeProcess) -> None:
    await asyncio.gather(*(w.start(timeout_s=120) for w in workers))


def stop_all(*workers: ServeProcess) -> list[int]:
    return [w.stop() for w in workers]


async def finish_all(session, urls: list[str], sent: list[Sent], timeout_s: float) -> list[dict]:
    """Each job long-polled on a worker other than the one that accepted it, until final; all must be done."""
    async def one(i: int, job: Sent) -> dict:
        others = [u for u in urls if u != job.accepted_by] or urls
        final = await wait_final(session, others[i % len(others)], job.job_id, timeout_s)
        assert final["state"] == "done", final
        assert [p["public_signals"] for p in final["proofs"]] == job.expected, job.job_id
        return final

    return await asyncio.gather(*(one(i, job) for i, job in enumerate(sent)))


async def status(session, url: str) -> dict:
    async with session.get(f"{url}/v1/status") as resp:
        assert resp.status == 200
        return (await resp.json())["server"]


async def db_rows(store_url: str, sql: str, *args) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(store_url)
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def wait_until(check, timeout_s: float, what: str, every_s: float = 0.1):
    """Poll ``await check()`` until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(every_s)
    raise AssertionError(f"not within {timeout_s} s: {what}")


async def assert_each_partition_stored_once(store_url: str, sent: list[Sent]) -> list[asyncpg.Record]:
    """Every partition of every job done, with one stored proof, by a known worker."""
    rows = await db_rows(store_url, "SELECT job_id, idx, state, stored_by, attempts, result FROM partitions")
    by_job: dict[str, list] = {}
    for r in rows:
        by_job.setdefault(r["job_id"], []).append(r)
    for job in sent:
        parts = sorted(by_job[job.job_id], key=lambda r: r["idx"])
        assert [r["idx"] for r in parts] == list(range(len(job.expected)))
        assert all(r["state"] == "done" and r["stored_by"] and r["result"] for r in parts), job.job_id
    return rows


def snarkjs_sample(finals: list[dict], sent: list[Sent], per_key: int = 2) -> list[bool]:
    """snarkjs's verdict on the first ``per_key`` proofs of each key."""
    items, taken = [], {}
    for job, final in zip(sent, finals):
        if taken.get(job.key_id, 0) >= per_key:
            continue
        taken[job.key_id] = taken.get(job.key_id, 0) + 1
        curve, circuit = TEST_KEYS[job.key_id]
        item = final["proofs"][-1]
        items.append((FIXTURES / curve / circuit / "vk.json", item["public_signals"], item["proof"]))
    return snarkjs_verify_many(items)


OUTCOMES = ("stored", "fenced", "cancelled", "released", "failed", "errors")


def assert_claims_ended(counters: dict) -> None:
    """Every claim of an idle worker ended exactly one way (nothing still held, nothing unaccounted)."""
    assert counters["claimed"] == sum(counters[k] for k in OUTCOMES), counters


def check_accounting(views: list[dict], rows: list, total: int) -> dict[str, int]:
    """Every claim of every worker ended one way, and the store holds one proof per partition from those
    claims: proofs stored (all workers) == partitions, and claims == the store's attempts + releases."""
    sums = {k: sum(v["counters"][k] for v in views) for k in ("claimed", *OUTCOMES)}
    for view in views:
        assert_claims_ended(view["counters"])
    assert sums["stored"] == total == len(rows), sums
    assert sums["claimed"] - sums["released"] == sum(r["attempts"] for r in rows), sums
    assert sums["errors"] == 0 and sums["failed"] == 0, sums
    return sums

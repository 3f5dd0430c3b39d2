"""A real ``zkpipe serve`` subprocess on loopback: concurrent load, and a SIGKILL + restart."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import aiohttp
import orjson
import pytest

from tests.conftest import FIXTURES, REPO, snarkjs_verify
from tests.server.serve_process import ServeProcess, cli_module, verify_items, wait_final
from tests.server.server_helpers import AUTH, TOKEN, multiplier_witness

pytestmark = pytest.mark.slow
PRIORITIES = ("critical", "high", "normal", "low")
CHAIN_PUBLIC = orjson.loads((FIXTURES / "bn128" / "chain_2e8" / "public.json").read_bytes())


class Load:
    """Builds job bodies and remembers what each accepted job must prove (its public signals)."""

    def __init__(self, tmp_path: Path, seed: int) -> None:
        self.dir = tmp_path / "witnesses"
        self.dir.mkdir(exist_ok=True)
        self.rng = random.Random(seed)
        self.count = 0

    def mult_wtns(self, key_id: str, n: int, priority: str, request_id: str | None = None):
        curve = "bn128" if key_id == "mult_bn128" else "bls12381"
        form = aiohttp.FormData(default_to_multipart=True)
        form.add_field("key_id", key_id)
        form.add_field("priority", priority)
        if request_id:
            form.add_field("request_id", request_id)
        expected = []
        for _ in range(n):
            self.count += 1
            a, b = self.rng.randrange(2, 10**6), self.rng.randrange(2, 10**6)
            path = multiplier_witness(self.dir / f"w{self.count}.wtns", curve, a, b)
            form.add_field("witness", path.read_bytes(), filename=path.name, content_type="application/octet-stream")
            expected.append([str(a * b)])
        return form, expected

    def mult_inputs(self, key_id: str, n: int, priority: str):
        pairs = [(self.rng.randrange(2, 10**6), self.rng.randrange(2, 10**6)) for _ in range(n)]
        body = {"key_id": key_id, "priority": priority, "inputs": [{"a": str(a), "b": str(b)} for a, b in pairs]}
        return orjson.dumps(body), [[str(a * b)] for a, b in pairs]

    def chain(self, n: int, priority: str):
        form = aiohttp.FormData(default_to_multipart=True)
        form.add_field("key_id", "chain_bn128")
        form.add_field("priority", priority)
        wtns = (FIXTURES / "bn128" / "chain_2e8" / "witness.wtns").read_bytes()
        for i in range(n):
            form.add_field("witness", wtns, filename=f"chain{i}.wtns", content_type="application/octet-stream")
        return form, [CHAIN_PUBLIC] * n


async def post(session, url: str, body, json: bool = False) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"} if json else None
    async with session.post(f"{url}/v1/jobs", data=body, headers=headers) as resp:
        return resp.status, await resp.json(content_type=None)


def malformed_requests(load: Load) -> list[tuple[object, bool, int, str]]:
    """(body, is_json, expected status, expected code): every one must be refused, nothing stored."""
    bls = (FIXTURES / "bls12381" / "multiplier" / "witness.wtns").read_bytes()
    wrong_curve = aiohttp.FormData(default_to_multipart=True)
    wrong_curve.add_field("key_id", "mult_bn128")
    wrong_curve.add_field("witness", bls, filename="bls.wtns", content_type="application/octet-stream")
    junk = aiohttp.FormData(default_to_multipart=True)
    junk.add_field("key_id", "mult_bls12381")
    junk.add_field("witness", b"\x00" * 64, filename="junk.wtns", content_type="application/octet-stream")
    wrong_size, _ = load.chain(1, "normal")
    wrong_size_form = aiohttp.FormData(default_to_multipart=True)
    wrong_size_form.add_field("key_id", "mult_bn128")
    wrong_size_form.add_field("witness", (FIXTURES / "bn128/chain_2e8/witness.wtns").read_bytes(), filename="c.wtns",
                              content_type="application/octet-stream")
    return [
        (wrong_curve, False, 422, "witness_curve_mismatch"),
        (junk, False, 422, "bad_witness"),
        (wrong_size_form, False, 422, "witness_size_mismatch"),
        (b'{"key_id": "mult_bn128", "inputs": [', True, 400, "malformed_json"),
        (b'{"key_id": "nope", "inputs": [{"a": 1}]}', True, 404, "unknown_key"),
        (b'{"key_id": "mult_bn128", "inputs": [{"a": 1}], "priority": "now"}', True, 400, "bad_priority"),
        (b'{"key_id": "mult_bn128", "inputs": [{"a": 1}]}', True, 422, "bad_circuit_inputs"),
    ]


async def test_concurrent_clients_on_a_real_server(tmp_path):
    """56 jobs from 12 concurrent clients: 44 good (2-3 partitions, all priorities, wtns and inputs),
    6 cancelled, 6 malformed. Every good proof passes our verifier; a sample passes snarkjs."""
    server = ServeProcess(tmp_path)
    await server.start()
    load = Load(tmp_path, seed=5)
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    try:
        good = []  # mostly BLS12-381: py_ecc verifies it about twice as fast as BN254
        for i in range(44):
            priority = PRIORITIES[i % 4]
            n = 2 + i % 2
            key_id = "mult_bn128" if i % 6 == 0 else "mult_bls12381"
            if i % 4 == 3:
                body, expected = load.mult_inputs(key_id, n, priority)
                good.append((key_id, body, True, expected))
            else:
                body, expected = load.mult_wtns(key_id, n, priority)
                good.append((key_id, body, False, expected))
        to_cancel = [load.chain(3, "low")[0] for _ in range(6)]
        malformed = malformed_requests(load)
        clients = asyncio.Semaphore(12)
        loop = asyncio.get_running_loop()
        verifications = []

        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=120)) as session:
            async def run_good(key_id, body, is_json, expected):
                async with clients:
                    status, answer = await post(session, server.url, body, is_json)
                assert status == 202, answer
                job = await wait_final(session, server.url, answer["job_id"], 150)
                assert job["state"] == "done", job
                assert [p["public_signals"] for p in job["proofs"]] == expected
                verifications.append(loop.run_in_executor(pool, verify_items, key_id, job["proofs"]))
                return key_id, job

            async def run_cancelled(body):
                async with clients:
                    status, answer = await post(session, server.url, body)
                    assert status == 202, answer
                    async with session.delete(f"{server.url}/v1/jobs/{answer['job_id']}") as resp:
                        cancel_status = resp.status
                job = await wait_final(session, server.url, answer["job_id"], 150)
                # cancelled, unless it finished first (then the DELETE was a 409)
                assert (cancel_status, job["state"]) in ((200, "cancelled"), (409, "done")), (cancel_status, job)
                return job

            async def run_malformed(body, is_json, status, code):
                async with clients:
                    got, answer = await post(session, server.url, body, is_json)
                assert (got, answer["error"]["code"]) == (status, code), answer

            tasks = [run_good(*args) for args in good] + [run_cancelled(b) for b in to_cancel] + \
                [run_malformed(*m) for m in malformed]
            random.Random(7).shuffle(tasks)
            results = await asyncio.gather(*tasks)
            jobs = [r for r in results if isinstance(r, tuple)]
            assert len(jobs) == 44
            verdicts = await asyncio.gather(*verifications)
            assert all(all(v) for v in verdicts)
            assert sum(len(v) for v in verdicts) == sum(len(e) for *_, e in good)

            async with session.get(f"{server.url}/v1/status") as resp:
                status = await resp.json()
            assert status["server"]["jobs"]["done"] >= 44 and status["server"]["jobs"]["queued"] == 0
            assert status["server"]["counters"]["accepted"] == 50

        for key_id, job in jobs[:2]:  # the external verdict on a sample
            curve = "bn128" if key_id == "mult_bn128" else "bls12381"
            item = job["proofs"][0]
            (tmp_path / "proof.json").write_bytes(orjson.dumps(item["proof"]))
            (tmp_path / "public.json").write_bytes(orjson.dumps(item["public_signals"]))
            assert snarkjs_verify(FIXTURES / curve / "multiplier" / "vk.json", tmp_path / "public.json",
                                  tmp_path / "proof.json")
        # the `zkpipe submit` client against the same server
        witness = FIXTURES / "bls12381" / "multiplier" / "witness.wtns"
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", cli_module(), "submit", "--url", server.url, "--key", "mult_bls12381",
            "--out", str(tmp_path / "out"), str(witness), str(witness), cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), "ZKPIPE_AUTH_TOKEN": TOKEN})
        assert await asyncio.wait_for(cli.wait(), 60) == 0
        assert orjson.loads((tmp_path / "out" / "public-001.json").read_bytes()) == ["33"]
        assert (tmp_path / "out" / "proof-001.json").is_file()
        assert server.stop() == 0
    finally:
        pool.shutdown(cancel_futures=True)
        server.kill()


async def test_sigkill_mid_load_then_restart_completes_every_accepted_job(tmp_path):
    server = ServeProcess(tmp_path)
    await server.start()
    load = Load(tmp_path, seed=11)
    accepted: dict[str, list] = {}  # job id -> expected public signals per partition
    keys: dict[str, str] = {}
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=60)) as session:
            status, answer = await post(session, server.url, load.mult_wtns("mult_bls12381", 1, "high", "before-kill")[0])
            first = await wait_final(session, server.url, answer["job_id"], 60)
            assert first["state"] == "done"

            async def submit_forever():
                for i in range(200):  # bounded: the kill comes long before
                    if i % 3 == 0:
                        body, expected = load.chain(2, PRIORITIES[i % 4])
                        key_id = "chain_bn128"
                    else:
                        key_id = "mult_bls12381"
                        body, expected = load.mult_wtns(key_id, 2, PRIORITIES[i % 4])
                    try:
                        status, answer = await post(session, server.url, body)
                    except aiohttp.ClientError:
                        return  # the server is gone: this request was not accepted
                    assert status == 202, answer
                    accepted[answer["job_id"]], keys[answer["job_id"]] = expected, key_id
                    await asyncio.sleep(0.02)

            submitter = asyncio.create_task(submit_forever())
            for _ in range(300):  # kill once some jobs are done and plenty are not
                await asyncio.sleep(0.1)
                async with session.get(f"{server.url}/v1/status") as resp:
                    jobs = (await resp.json())["server"]["jobs"]
                if jobs["done"] >= 4 and jobs["queued"] + jobs["running"] >= 5 and len(accepted) >= 15:
                    break
            server.kill()
            await submitter
        assert len(accepted) >= 15

        await server.start()
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=60)) as session:
            async with session.get(f"{server.url}/v1/status") as resp:
                assert (await resp.json())["server"]["counters"]["recovered"] >= 1
            finished = {job_id: await wait_final(session, server.url, job_id, 150) for job_id in accepted}
            for job_id, job in finished.items():
                assert job["state"] == "done", job
                assert [p["public_signals"] for p in job["proofs"]] == accepted[job_id]
            # results from before the kill are still there, and its request id still names it
            again = await wait_final(session, server.url, first["job_id"], 10)
            assert again["proofs"] == first["proofs"]
            status, answer = await post(session, server.url, load.mult_wtns("mult_bls12381", 1, "high", "before-kill")[0])
            assert (status, answer["job_id"]) == (200, first["job_id"])
        sample = list(finished.items())[:: max(1, len(finished) // 4)]
        for job_id, job in sample:
            assert all(verify_items(keys[job_id], job["proofs"][:1]))
        assert server.stop() == 0
        assert list((tmp_path / "state" / "spool" / "jobs").iterdir()) == []
    finally:
        server.kill()

"""Workers as separate ``zkpipe serve`` processes on one PostgreSQL database (CPU backend, small keys)."""
from __future__ import annotations

import asyncio

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.cluster.cluster_helpers import (Jobs, assert_each_partition_stored_once, check_accounting, db_rows,
                                                  finish_all, snarkjs_sample, start_all, status, stop_all, worker)
from tests.server.server_helpers import AUTH

pytestmark = pytest.mark.slow
MULT_KEYS = ("mult_bn128", "mult_bls12381")


async def test_three_workers_prove_200_jobs_and_store_each_partition_once(tmp_path, pg_url):
    workers = [worker(tmp_path, f"w{i}", pg_url) for i in range(3)]
    await start_all(*workers)
    urls = [w.url for w in workers]
    jobs = Jobs(tmp_path / "witnesses", seed=3)
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=300)) as session:
            clients = asyncio.Semaphore(8)

            async def send(i: int):
                async with clients:  # every worker accepts; 1 to 4 partitions; every 5th job as circuit inputs
                    return await jobs.send(session, urls[i % 3], MULT_KEYS[i % 2], 1 + i % 4, as_inputs=i % 5 == 4)

            sent = await asyncio.gather(*(send(i) for i in range(200)))
            finals = await finish_all(session, urls, sent, timeout_s=240)
            total = sum(len(job.expected) for job in sent)
            assert total == 500

            rows = await assert_each_partition_stored_once(pg_url, sent)
            views = [await status(session, url) for url in urls]
            ids = [v["worker_id"] for v in views]
            assert len(set(ids)) == 3
            sums = check_accounting(views, rows, total)
            # With no worker lost, a lease expires only if a heartbeat came more than lease_s late (an
            # overloaded host); a partition is then proved again but still stored once, the late proof fenced.
            assert sums["fenced"] <= sum(r["attempts"] - 1 for r in rows), sums
            stored_by = {worker_id: sum(r["stored_by"] == worker_id for r in rows) for worker_id in ids}
            for view in views:  # each worker's own count matches what the store holds from it; all took part
                assert view["counters"]["stored"] == stored_by[view["worker_id"]] > 0, stored_by
            listed = {w["worker_id"]: w for w in views[0]["workers"]}
            assert set(listed) == set(ids) and all(w["alive"] and w["host"] for w in listed.values())
            assert all(w["devices"] and w["devices"][0]["backend"] == "cpu" for w in listed.values())
            assert views[0]["partitions"]["done"] == total and views[0]["jobs"]["done"] == 200
            async with session.get(f"{urls[1]}/metrics") as resp:
                metrics = await resp.text()
            samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                       for family in text_string_to_metric_families(metrics) for s in family.samples}
            stored = (("outcome", "stored"), ("worker", ids[1]))
            assert samples[("zkpipe_worker_partitions_total", stored)] == float(stored_by[ids[1]])
            assert samples[("zkpipe_worker_claim_seconds_count", (("worker", ids[1]),))] > 0
        assert all(snarkjs_sample(finals, sent, per_key=3))
        assert stop_all(*workers) == [0, 0, 0]
        states = await db_rows(pg_url, "SELECT state, held FROM workers")
        assert [tuple(r) for r in states] == [("stopped", 0)] * 3
    finally:
        for w in workers:
            w.kill()

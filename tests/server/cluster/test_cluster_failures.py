"""Workers that die, pause, drain, change keys, or lose a job to a cancel: nothing lost, nothing stored twice."""
from __future__ import annotations

import os
import signal

import aiohttp
import pytest

from tests.server.cluster.cluster_helpers import (OUTCOMES, Jobs, assert_each_partition_stored_once, db_rows,
                                                  finish_all, set_keys, start_all, status, stop_all, wait_until, worker)
from tests.server.server_helpers import AUTH

pytestmark = pytest.mark.slow
HELD = "SELECT job_id, idx, lease_token FROM partitions WHERE state = 'leased' AND lease_owner = $1"


async def held_by(store_url: str, worker_id: str, at_least: int = 1, timeout_s: float = 60.0,
                  feed=None, feed_every_s: float = 10.0) -> list[tuple]:
    """The (job, partition, token) leases a worker holds, once it holds at least ``at_least``. With
    ``feed`` (a coroutine function sending one more job), every ``feed_every_s`` without a lease sends
    fresh work: the other workers may have taken all of it while this one was starting (a full-suite
    run on a loaded 2-core machine once waited 60 s for nothing)."""
    async def check():
        rows = [tuple(r) for r in await db_rows(store_url, HELD, worker_id)]
        return rows if len(rows) >= at_least else None
    what = f"{worker_id} holds {at_least} partition(s)"
    if feed is None:
        return await wait_until(check, timeout_s, what, every_s=0.05)
    for _ in range(max(1, round(timeout_s / feed_every_s)) - 1):
        try:
            return await wait_until(check, feed_every_s, what, every_s=0.05)
        except AssertionError:
            await feed()
    return await wait_until(check, feed_every_s, what, every_s=0.05)


async def moved(store_url: str, leases: list[tuple], away_from: str | None, timeout_s: float) -> list:
    """Wait until each lease was granted again (a newer token), to a worker other than ``away_from`` if given."""
    last = []

    async def check():
        rows = await db_rows(store_url, "SELECT job_id, idx, lease_token, lease_owner, stored_by, state FROM partitions")
        now = {(r["job_id"], r["idx"]): r for r in rows}
        current = [now[(job_id, idx)] for job_id, idx, _ in leases]
        last[:] = [(tuple(r), token) for r, (_, _, token) in zip(current, leases)]
        if all(r["lease_token"] > token and (r["lease_owner"] or r["stored_by"]) not in (None, away_from or "")
               for r, (_, _, token) in zip(current, leases)):
            return current
        return None
    try:
        return await wait_until(check, timeout_s, f"the leases of {away_from} moved", every_s=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; now: {last}") from None


async def kill_while_holding(store_url: str, victim, worker_id: str, feed=None) -> list[tuple]:
    """SIGKILL (no drain, no release) while the worker holds partitions; the leases it held when it died."""
    for _ in range(5):
        await held_by(store_url, worker_id, feed=feed)
        victim.kill()
        leases = [tuple(r) for r in await db_rows(store_url, HELD, worker_id)]
        if leases:
            return leases
        await victim.start(timeout_s=120)  # it finished them all just before the kill: again
    raise AssertionError(f"{worker_id} never died holding a partition")


async def test_kill_9_mid_partition_repeatedly_loses_and_duplicates_nothing(tmp_path, pg_url):
    # w2 claims with a lease no test waits for: only its restart can give its partitions back in time.
    workers = [worker(tmp_path, "w0", pg_url, WORKER_MAX_PARTITIONS=3),
               worker(tmp_path, "w1", pg_url, WORKER_MAX_PARTITIONS=3),
               worker(tmp_path, "w2", pg_url, WORKER_MAX_PARTITIONS=3, LEASE_S=120)]
    await start_all(*workers)
    urls = [w.url for w in workers]
    jobs = Jobs(tmp_path / "witnesses", seed=21)
    sent = []
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=120)) as session:
            ids = [(await status(session, url))["worker_id"] for url in urls]
            for victim, worker_id in zip(workers, ids):
                for i in range(4):  # fresh work each round: chain partitions (~0.4 s each) and multipliers
                    key_id = "chain_bn128" if i % 2 else "mult_bls12381"
                    sent.append(await jobs.send(session, urls[i % 3], key_id, 3))

                async def feed():  # 9 partitions: more than the other two workers' 6 slots take at once
                    for url in urls:
                        sent.append(await jobs.send(session, url, "chain_bn128", 3))
                leases = await kill_while_holding(pg_url, victim, worker_id, feed)
                if victim is workers[2]:
                    await victim.start(timeout_s=120)  # its restart frees its old leases at once
                    found = await moved(pg_url, leases, None, timeout_s=60)  # to anyone, itself included
                    assert "released" in victim.log_text()
                else:  # the others' leases expire (4 s) and live workers take them over
                    found = await moved(pg_url, leases, worker_id, timeout_s=60)
                    await victim.start(timeout_s=120)
                assert all(r["job_id"] for r in found)
            await finish_all(session, urls, sent, timeout_s=240)
        rows = await assert_each_partition_stored_once(pg_url, sent)
        assert len(rows) == 3 * len(sent)
        assert sum(r["attempts"] > 1 for r in rows) >= 3  # at least one partition per kill was claimed again
        assert stop_all(*workers) == [0, 0, 0]
    finally:
        for w in workers:
            w.kill()


async def test_a_worker_restarted_with_other_keys_proves_those_and_no_job_starves(tmp_path, pg_url):
    # Witnesses over 1 KiB (chain_bn128's) travel through the shared spool, the multipliers' in the rows.
    spool = {"SHARED_SPOOL_DIR": tmp_path / "shared", "MAX_DB_PARTITION_BYTES": 1024, "AFFINITY_MAX_AGE_S": 1}
    a = worker(tmp_path, "a", pg_url, keys=("mult_bn128", "mult_bls12381"), **spool)
    b = worker(tmp_path, "b", pg_url, keys=("mult_bn128",), **spool)
    await start_all(a, b)
    jobs = Jobs(tmp_path / "witnesses", seed=5)
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=120)) as session:
            a_id, b_id = [(await status(session, w.url))["worker_id"] for w in (a, b)]
            first = [await jobs.send(session, a.url, ("mult_bn128", "mult_bls12381")[i % 2], 2) for i in range(12)]
            await finish_all(session, [a.url, b.url], first, timeout_s=120)
            before = {w["worker_id"]: w for w in (await status(session, a.url))["workers"]}
            assert before[b_id]["served_keys"] == ["mult_bn128"] and before[b_id]["resident_keys"] == ["mult_bn128"]

            assert b.stop() == 0
            set_keys(b, ("mult_bls12381", "chain_bn128"))  # drops mult_bn128, adds a key only b serves
            await b.start(timeout_s=120)
            second = []
            for i in range(15):  # each to a worker whose folder has the key
                key_id = ("chain_bn128", "mult_bls12381", "mult_bn128")[i % 3]
                second.append(await jobs.send(session, a.url if key_id == "mult_bn128" else b.url, key_id, 2))
            await finish_all(session, [a.url, b.url], second, timeout_s=180)
            after = {w["worker_id"]: w for w in (await status(session, a.url))["workers"]}
        assert after[b_id]["served_keys"] == ["chain_bn128", "mult_bls12381"]
        # its affinity now: what it proved since the restart (chain_bn128 certainly: nobody else serves it)
        assert "chain_bn128" in after[b_id]["resident_keys"]
        assert set(after[b_id]["resident_keys"]) <= {"chain_bn128", "mult_bls12381"}
        rows = await assert_each_partition_stored_once(pg_url, first + second)
        key_of = {job.job_id: job.key_id for job in first + second}
        first_ids = {job.job_id for job in first}
        for r in rows:
            key_id = key_of[r["job_id"]]
            if r["stored_by"] == b_id:  # b proves only what its keys folder held at the time
                assert key_id in (("mult_bn128",) if r["job_id"] in first_ids else ("chain_bn128", "mult_bls12381"))
            else:
                assert r["stored_by"] == a_id and key_id != "chain_bn128"
        spooled = await db_rows(pg_url, "SELECT count(*) FROM partitions WHERE in_shared_spool")
        assert spooled[0][0] == 10  # the chain jobs' partitions
        assert not list((tmp_path / "shared" / "jobs").glob("*/*"))  # each file deleted once its proof was stored
        assert stop_all(a, b) == [0, 0]
    finally:
        a.kill()
        b.kill()


async def test_sigterm_drains_a_worker_finishing_or_releasing_its_partitions(tmp_path, pg_url):
    spool = {"SHARED_SPOOL_DIR": tmp_path / "shared", "MAX_DB_PARTITION_BYTES": 1024}  # every witness in the spool
    quick = worker(tmp_path, "quick", pg_url, DRAIN_TIMEOUT_S=0.05, WORKER_MAX_PARTITIONS=4, **spool)
    patient = worker(tmp_path, "patient", pg_url, DRAIN_TIMEOUT_S=60, WORKER_MAX_PARTITIONS=2, **spool)
    spare = worker(tmp_path, "spare", pg_url, **spool)
    await start_all(quick, patient)
    jobs = Jobs(tmp_path / "witnesses", seed=9)
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=120)) as session:
            quick_id, patient_id = [(await status(session, w.url))["worker_id"] for w in (quick, patient)]
            sent = [await jobs.send(session, quick.url, "chain_bn128", 3) for _ in range(5)]
            await held_by(pg_url, quick_id, at_least=2)
            assert quick.stop() == 0  # drain timeout 0.05 s: it gives its partitions back
            assert "drain: released" in quick.log_text()
            holding = await held_by(pg_url, patient_id, at_least=1)
            assert patient.stop() == 0  # drain timeout 60 s: it finishes what it holds
            assert "drain: released" not in patient.log_text()
            leased = await db_rows(pg_url, "SELECT count(*) FROM partitions WHERE state = 'leased'")
            assert leased[0][0] == 0
            await spare.start(timeout_s=120)
            await finish_all(session, [spare.url], sent, timeout_s=180)
        rows = {(r["job_id"], r["idx"]): r for r in await assert_each_partition_stored_once(pg_url, sent)}
        assert all(rows[(job_id, idx)]["stored_by"] == patient_id for job_id, idx, _ in holding)
        workers = {r["worker_id"]: r["state"] for r in await db_rows(pg_url, "SELECT worker_id, state FROM workers")}
        assert workers[quick_id] == workers[patient_id] == "stopped"
        assert spare.stop() == 0
    finally:
        for w in (quick, patient, spare):
            w.kill()


async def test_a_paused_worker_is_fenced_off_and_a_cancel_reaches_the_holder(tmp_path, pg_url):
    paused = worker(tmp_path, "paused", pg_url, WORKER_MAX_PARTITIONS=2)
    other = worker(tmp_path, "other", pg_url, WORKER_MAX_PARTITIONS=2, HEARTBEAT_INTERVAL_S=1.5)
    await start_all(paused, other)
    jobs = Jobs(tmp_path / "witnesses", seed=13)
    try:
        async with aiohttp.ClientSession(headers=AUTH, timeout=aiohttp.ClientTimeout(total=120)) as session:
            paused_id, other_id = [(await status(session, w.url))["worker_id"] for w in (paused, other)]
            sent = [await jobs.send(session, other.url, "chain_bn128", 3) for _ in range(4)]
            leases = await held_by(pg_url, paused_id)
            os.kill(paused.proc.pid, signal.SIGSTOP)  # no heartbeat: its leases expire and move
            try:
                await moved(pg_url, leases, paused_id, timeout_s=60)
                await wait_until(lambda: _all_done(pg_url, leases), 60, "the moved partitions are proved")
            finally:
                os.kill(paused.proc.pid, signal.SIGCONT)
            await finish_all(session, [paused.url, other.url], sent, timeout_s=180)

            async def noticed():  # its late results were discarded or its engine jobs stopped
                counters = (await status(session, paused.url))["counters"]
                return counters if counters["fenced"] + counters["leases_lost"] >= len(leases) else None
            counters = await wait_until(noticed, 30, "the paused worker noticed its lost leases")
            rows = {(r["job_id"], r["idx"]): r for r in await assert_each_partition_stored_once(pg_url, sent)}
            assert all(rows[(job_id, idx)]["stored_by"] != paused_id for job_id, idx, _ in leases), counters

            big = await jobs.send(session, paused.url, "chain_bn128", 20)  # cancelled through the other worker
            await wait_until(lambda: _holds_job(pg_url, other_id, big.job_id), 60, "the other worker holds a partition")
            before = (await status(session, other.url))["counters"]
            async with session.delete(f"{paused.url}/v1/jobs/{big.job_id}") as resp:
                assert resp.status == 200 and (await resp.json())["state"] == "cancelled"

            async def stopped():
                counters = (await status(session, other.url))["counters"]
                return counters if counters["cancelled"] > before["cancelled"] else None
            after = await wait_until(stopped, 10, "the holder stopped proving the cancelled job")
            assert after["leases_lost"] == before["leases_lost"]  # told by NOTIFY, before any heartbeat noticed
            assert "ended elsewhere" in other.log_text()
            for w in (paused, other):  # once idle, each claim ended one way: stored, fenced, cancelled ...
                await wait_until(lambda w=w: _claims_ended(session, w.url), 30, f"every claim of {w.url} ended")
        assert stop_all(paused, other) == [0, 0]
    finally:
        for w in (paused, other):
            os.kill(w.proc.pid, signal.SIGCONT) if w.proc and w.proc.poll() is None else None
            w.kill()


async def _all_done(store_url: str, leases: list[tuple]) -> bool:
    rows = await db_rows(store_url, "SELECT job_id, idx, state FROM partitions")
    state = {(r["job_id"], r["idx"]): r["state"] for r in rows}
    return all(state[(job_id, idx)] == "done" for job_id, idx, _ in leases)


async def _holds_job(store_url: str, worker_id: str, job_id: str) -> bool:
    return any(r["job_id"] == job_id for r in await db_rows(store_url, HELD, worker_id))


async def _claims_ended(session, url: str) -> bool:
    counters = (await status(session, url))["counters"]
    return counters["claimed"] == sum(counters[k] for k in OUTCOMES)

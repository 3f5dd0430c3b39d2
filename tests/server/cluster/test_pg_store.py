"""The shared store on a real PostgreSQL: migrations, jobs, claims (SKIP LOCKED, order, affinity, age
limit), leases with fencing tokens, heartbeats, reaping, release, cancel and failure, NOTIFY."""
from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import pytest

from pipeline.server.cluster.leases import PartitionLeases
from pipeline.server.cluster.migrations import LATEST, SchemaTooNew, migrate
from pipeline.server.cluster.notify import Notifications
from pipeline.server.cluster.pg_store import PartitionInput, PostgresJobStore
from pipeline.server.cluster.registry import WorkerRegistry
from pipeline.server.store import JobRow

LONG = 60.0  # a lease no test outlives unless it means to


@pytest.fixture(scope="module")
def shared_url(postgres_server) -> str:
    return postgres_server.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
async def store(shared_url):
    """A migrated store, emptied for each test (one database per module: creating one takes a second)."""
    store = PostgresJobStore(shared_url)
    await store.open()
    await store.pool.execute("TRUNCATE jobs, partitions, partition_inputs, workers; ALTER SEQUENCE lease_tokens RESTART")
    yield store
    await store.close()


@pytest.fixture
def leases(store):
    return PartitionLeases(store.pool)


async def add_job(store, key_id="k1", n=2, priority="normal", request_id=None, kind="wtns") -> JobRow:
    row = JobRow(job_id=uuid.uuid4().hex, key_id=key_id, priority=priority, input_kind=kind, n_partitions=n,
                 request_id=request_id)
    stored, created = await store.insert(row, [PartitionInput(f"input {i}".encode()) for i in range(n)])
    assert created
    return stored


async def claim(leases, worker="w1", keys=("k1", "k2"), resident=(), limit=10, lease_s=LONG, age_s=LONG):
    return await leases.claim(worker, list(keys), list(resident), limit, lease_s, age_s)


# -- migrations ------------------------------------------------------------------------------------
async def test_migrations_apply_once_when_workers_start_together(pg_url):
    conns = [await asyncpg.connect(pg_url) for _ in range(3)]
    try:
        applied = await asyncio.gather(*(migrate(c) for c in conns))
        assert sorted(v for versions in applied for v in versions) == list(range(1, LATEST + 1))
        assert await migrate(conns[0]) == []
        assert await conns[0].fetchval("SELECT count(*) FROM zkpipe_schema") == LATEST
    finally:
        for c in conns:
            await c.close()


async def test_a_database_migrated_by_a_newer_zkpipe_is_refused(store, shared_url):
    await store.pool.execute("INSERT INTO zkpipe_schema (version, name) VALUES ($1, 'from the future')", LATEST + 1)
    conn = await asyncpg.connect(shared_url)
    try:
        with pytest.raises(SchemaTooNew, match=f"version {LATEST + 1}"):
            await migrate(conn)
    finally:
        await conn.execute("DELETE FROM zkpipe_schema WHERE version > $1", LATEST)
        await conn.close()


# -- jobs ------------------------------------------------------------------------------------------
async def test_a_job_is_stored_with_its_partitions_and_inputs_in_one_commit(store):
    row = await add_job(store, n=3, priority="high")
    assert row.seq > 0 and row.state == "queued" and row.created_at == pytest.approx(time.time(), abs=30)
    got = await store.get(row.job_id)
    assert (got.key_id, got.priority, got.n_partitions, got.state) == ("k1", "high", 3, "queued")
    inputs = await store.pool.fetch("SELECT idx, data FROM partition_inputs WHERE job_id = $1 ORDER BY idx", row.job_id)
    assert [(r["idx"], r["data"]) for r in inputs] == [(i, f"input {i}".encode()) for i in range(3)]
    assert (await store.counts())["queued"] == 1 and (await store.partition_counts())["queued"] == 3
    assert await store.get_result(row.job_id) is None  # not done


async def test_a_repeated_request_id_returns_the_first_job_and_stores_nothing_new(store):
    first = await add_job(store, request_id="order-1")
    again = JobRow(job_id=uuid.uuid4().hex, key_id="k1", priority="normal", input_kind="wtns", n_partitions=5,
                   request_id="order-1")
    stored, created = await store.insert(again, [PartitionInput(b"x")] * 5)
    assert not created and stored.job_id == first.job_id
    assert (await store.partition_counts())["queued"] == 2
    assert await store.get(again.job_id) is None


# -- claims ----------------------------------------------------------------------------------------
async def test_concurrent_claims_take_disjoint_partitions(store, leases):
    for _ in range(4):
        await add_job(store, n=3)
    rounds = await asyncio.gather(*(claim(leases, worker=f"w{i}", limit=3) for i in range(6)))
    taken = [(c.job_id, c.index) for r in rounds for c in r]
    assert len(taken) == 12 and len(set(taken)) == 12
    assert len({c.token for r in rounds for c in r}) == 12
    assert (await store.counts())["running"] == 4


async def test_claim_order_is_priority_then_resident_keys_then_arrival(store, leases):
    a = await add_job(store, key_id="k1", n=1)
    b = await add_job(store, key_id="k2", n=1)
    c = await add_job(store, key_id="k2", n=1, priority="high")
    d = await add_job(store, key_id="k2", n=1)
    got = [(await claim(leases, resident=["k1"], limit=1))[0] for _ in range(4)]  # one at a time: the order taken
    assert [x.job_id for x in got] == [c.job_id, a.job_id, b.job_id, d.job_id]
    assert [x.priority for x in got] == ["high", "normal", "normal", "normal"]
    assert await claim(leases, resident=["k1"]) == []


async def test_a_partition_past_the_age_limit_goes_before_resident_keys_and_priority(store, leases):
    resident = await add_job(store, key_id="k1", n=1, priority="critical")
    old = await add_job(store, key_id="k2", n=1, priority="low")
    await store.pool.execute("UPDATE partitions SET enqueued_at = now() - interval '2 minutes' WHERE job_id = $1",
                             old.job_id)
    got = await claim(leases, resident=["k1"], limit=1, age_s=60)
    assert got[0].job_id == old.job_id  # it waited past the limit: nothing starves behind affinity
    assert (await claim(leases, resident=["k1"], limit=1, age_s=60))[0].job_id == resident.job_id


async def test_only_keys_the_worker_serves_are_claimed(store, leases):
    await add_job(store, key_id="k1", n=2)
    other = await add_job(store, key_id="k3", n=1)
    got = await claim(leases, keys=["k3"])
    assert [(x.job_id, x.key_id) for x in got] == [(other.job_id, "k3")]
    assert await claim(leases, keys=[]) == []


# -- leases and fencing ----------------------------------------------------------------------------
async def test_a_late_result_from_a_fenced_off_worker_is_discarded(store, leases):
    job = await add_job(store, n=1)
    (first,) = await claim(leases, worker="w1", lease_s=0.2)
    await asyncio.sleep(0.4)
    assert await leases.reap(max_attempts=5) == (1, 0)
    (second,) = await claim(leases, worker="w2")
    assert (second.job_id, second.index) == (first.job_id, first.index) and second.token > first.token
    assert second.attempt == 2
    assert not await leases.complete(first, "w1", {"proof": "late"}, {"total_ms": 1.0})
    assert await leases.complete(second, "w2", {"proof": "current"}, {"total_ms": 2.0})
    assert not await leases.complete(second, "w2", {"proof": "again"}, {})  # stored exactly once
    done = await store.get(job.job_id)
    assert (done.state, done.partitions_done) == ("done", 1)
    assert done.timings["partitions_ms"] == [{"total_ms": 2.0}] and done.timings["total_ms"] >= 0
    assert await store.get_result(job.job_id) == [{"proof": "current"}]
    row = await store.pool.fetchrow("SELECT stored_by, attempts FROM partitions WHERE job_id = $1", job.job_id)
    assert tuple(row) == ("w2", 2)
    assert await store.pool.fetchval("SELECT count(*) FROM partition_inputs") == 0


async def test_a_heartbeat_extends_live_leases_and_reports_lost_ones(store, leases):
    await add_job(store, n=2)
    mine = await claim(leases, worker="w1", lease_s=0.3)
    await asyncio.sleep(0.2)
    assert await leases.extend("w1", [c.token for c in mine], 0.3) == {c.token for c in mine}
    await asyncio.sleep(0.2)  # past the first lease, inside the extended one
    assert await leases.reap(5) == (0, 0)
    assert await leases.extend("w2", [c.token for c in mine], 0.3) == set()  # not w2's
    await asyncio.sleep(0.4)
    assert await leases.reap(5) == (2, 0)
    assert await leases.extend("w1", [c.token for c in mine], 0.3) == set()


async def test_a_job_completes_when_its_last_partition_is_stored(store, leases):
    job = await add_job(store, n=3)
    claims = await claim(leases)
    for c in reversed(claims):
        assert (await store.get(job.job_id)).state == "running"
        assert await leases.complete(c, "w1", {"i": c.index}, {"total_ms": float(c.index)})
    done = await store.get(job.job_id)
    assert (done.state, done.partitions_done) == ("done", 3)
    assert await store.get_result(job.job_id) == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert [t["total_ms"] for t in done.timings["partitions_ms"]] == [0.0, 1.0, 2.0]


async def test_a_failed_partition_fails_its_job_and_cancels_the_others(store, leases):
    job = await add_job(store, n=3)
    a, b = await claim(leases, limit=2)
    assert await leases.fail(a, "bad_input", "partition 0 (synthesize): bad witness")
    failed = await store.get(job.job_id)
    assert (failed.state, failed.error_code, failed.error_message) == (
        "failed", "bad_input", "partition 0 (synthesize): bad witness")
    states = [r[0] for r in await store.pool.fetch("SELECT state FROM partitions WHERE job_id = $1 ORDER BY idx",
                                                   job.job_id)]
    assert states == ["failed", "cancelled", "cancelled"]
    assert not await leases.complete(b, "w1", {}, {})
    assert await claim(leases) == []


async def test_release_requeues_at_once_without_spending_an_attempt(store, leases):
    await add_job(store, n=2)
    claims = await claim(leases, worker="w1")
    assert await leases.release("w1", [claims[0].token]) == 1
    again = await claim(leases, worker="w2")
    assert [(c.index, c.attempt) for c in again] == [(0, 1)]
    assert await leases.release("w1") == 1  # a restarted w1 frees whatever its previous run held
    assert not await leases.complete(claims[1], "w1", {}, {})


async def test_a_partition_whose_workers_keep_dying_fails_its_job(store, leases):
    job = await add_job(store, n=2)
    for attempt in range(1, 4):
        got = await claim(leases, worker=f"dies-{attempt}", limit=1, lease_s=0.05)
        assert [(c.index, c.attempt) for c in got] == [(0, attempt)]
        await asyncio.sleep(0.15)
        assert await leases.reap(max_attempts=3) == ((1, 0) if attempt < 3 else (0, 1))
    failed = await store.get(job.job_id)
    assert (failed.state, failed.error_code) == ("failed", "internal_error")
    assert "partition 0" in failed.error_message and "3 times" in failed.error_message


async def test_cancel_is_final_at_once_and_notifies_the_holder(store, leases, shared_url):
    notifications = Notifications(shared_url, reconnect_s=0.1)
    cancelled = []
    notifications.on_cancel = cancelled.append
    listener = asyncio.create_task(notifications.run())
    try:
        await asyncio.wait_for(notifications.connected.wait(), 10)
        job = await add_job(store, n=2)
        await asyncio.wait_for(notifications.work.wait(), 10)  # the insert woke idle workers
        (held,) = await claim(leases, limit=1)
        with notifications.job_finished(job.job_id) as finished:
            row = await store.cancel(job.job_id)
            assert row.state == "cancelled" and row.error_message == "cancelled by the client"
            await asyncio.wait_for(finished.wait(), 10)
        for _ in range(100):
            if cancelled:
                break
            await asyncio.sleep(0.05)
        assert cancelled == [job.job_id]
        assert not await leases.complete(held, "w1", {}, {})
        assert (await store.cancel(job.job_id)).state == "cancelled"  # a second cancel changes nothing
        assert await store.cancel("nosuchjob") is None
        assert await store.pool.fetchval("SELECT count(*) FROM partition_inputs") == 0
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)


async def test_finished_jobs_are_deleted_with_their_partitions(store, leases):
    job = await add_job(store, n=2)
    keep = await add_job(store, n=1)
    for c in await claim(leases, limit=2):
        await leases.complete(c, "w1", {}, {})
    assert await store.delete_finished_before(time.time() + 1) == [job.job_id]
    assert await store.get(job.job_id) is None and await store.get(keep.job_id) is not None
    assert await store.pool.fetchval("SELECT count(*) FROM partitions WHERE job_id = $1", job.job_id) == 0


async def test_the_registry_lists_workers_and_whether_they_answer(store):
    registry = WorkerRegistry(store.pool)
    await registry.register("w1", "host-a", 11, [{"index": 0, "ordinal": 0, "backend": "cpu"}], ["k1"])
    await registry.register("w2", "host-b", 12, [], ["k1", "k2"])
    await registry.heartbeat("w1", "running", ["k1"], ["k1"], 3, {"stored": 7})
    await store.pool.execute("UPDATE workers SET heartbeat_at = now() - interval '1 minute' WHERE worker_id = 'w2'")
    workers = {w["worker_id"]: w for w in await registry.list(lease_s=30)}
    assert workers["w1"]["alive"] and not workers["w2"]["alive"]
    assert (workers["w1"]["host"], workers["w1"]["resident_keys"], workers["w1"]["held"]) == ("host-a", ["k1"], 3)
    assert workers["w1"]["counters"] == {"stored": 7} and workers["w1"]["devices"][0]["backend"] == "cpu"
    assert await registry.forget_before(30) == 1
    assert [w["worker_id"] for w in await registry.list(30)] == ["w1"]


async def test_a_partition_in_the_shared_spool_goes_only_to_workers_that_mount_it(store, leases):
    row = JobRow(job_id=uuid.uuid4().hex, key_id="k1", priority="normal", input_kind="wtns", n_partitions=2)
    await store.insert(row, [PartitionInput(b"small"), PartitionInput(spool_file=f"{row.job_id}/part-00001.wtns")])
    (in_row,) = await leases.claim("w1", ["k1"], [], 10, LONG, LONG, shared_spool=False)
    assert in_row.index == 0 and await leases.read_input(in_row) == PartitionInput(b"small")
    (spooled,) = await leases.claim("w2", ["k1"], [], 10, LONG, LONG, shared_spool=True)
    assert await leases.read_input(spooled) == PartitionInput(spool_file=f"{row.job_id}/part-00001.wtns")
    assert await store.unfinished([row.job_id, "gone"]) == {row.job_id}

"""The job store: proofs serialised off the event loop and read back; a store that cannot be used is one error."""
from __future__ import annotations

import sqlite3
import threading

import orjson
import pytest

from pipeline.server import store as store_module
from pipeline.server.store import STATES, JobRow, JobStore, StoreOpenError


async def test_finish_serialises_the_proofs_off_the_event_loop_and_get_result_reads_them_back(tmp_path, monkeypatch):
    store = JobStore(tmp_path / "jobs.sqlite3", fsync=False)
    await store.open()
    try:
        row, created = await store.insert(JobRow(job_id="j1", key_id="k", priority="normal", input_kind="wtns",
                                                 n_partitions=2))
        assert created
        result = [{"proof": {"protocol": "groth16", "pi_a": [str(i)] * 3}, "public_signals": [str(i)]} for i in range(2)]
        on_loop_thread = []
        real_dumps = orjson.dumps

        def dumps(value, *args, **kwargs):
            if value is result:
                on_loop_thread.append(threading.current_thread() is threading.main_thread())
            return real_dumps(value, *args, **kwargs)

        monkeypatch.setattr(store_module.orjson, "dumps", dumps)
        row.state, row.partitions_done, row.timings = "done", 2, {"total_ms": 1.5}
        await store.finish(row, result)
        assert on_loop_thread == [False]
        assert await store.get_result("j1") == result
        stored = await store.get("j1")
        assert stored.state == "done" and stored.partitions_done == 2 and stored.timings == {"total_ms": 1.5}
    finally:
        await store.close()


def _garbage(path):
    path.write_bytes(b"this is not a SQLite database, " * 100)


def _old_schema(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE jobs (seq INTEGER PRIMARY KEY, job_id TEXT, state TEXT)")
    db.commit()
    db.close()


def _newer_version(path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()


@pytest.mark.parametrize("make_bad_store,words", [
    (_garbage, ("cannot open the job store", "not a database")),
    (_old_schema, ("another zkpipe version", "created_at", "move the file aside")),
    (_newer_version, ("schema version 99", "newer")),
    (lambda path: path.mkdir(), ("is a folder",)),
], ids=["corrupt", "old", "newer", "folder"])
async def test_a_store_that_cannot_be_used_is_one_clear_error_and_is_left_as_it_was(tmp_path, make_bad_store, words):
    path = tmp_path / "jobs.sqlite3"
    make_bad_store(path)
    before = path.read_bytes() if path.is_file() else None
    store = JobStore(path, fsync=False)
    with pytest.raises(StoreOpenError) as caught:
        await store.open()
    await store.close()
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    for word in words:
        assert word in message, message
    assert (path.read_bytes() if path.is_file() else None) == before


async def test_an_empty_store_file_is_a_new_store(tmp_path):
    path = tmp_path / "jobs.sqlite3"
    path.write_bytes(b"")
    store = JobStore(path, fsync=False)
    await store.open()
    try:
        assert await store.counts() == {state: 0 for state in STATES}
    finally:
        await store.close()

"""The job store: a finished job's proofs are serialised and written off the event loop, and read back."""
from __future__ import annotations

import threading

import orjson

from pipeline.server import store as store_module
from pipeline.server.store import JobRow, JobStore


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

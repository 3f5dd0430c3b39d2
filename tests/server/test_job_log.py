"""JobObserver: one log line per job event (failed ones with their reason), and the job histograms."""
from __future__ import annotations

import logging

from pipeline.server.job_log import JobObserver
from pipeline.server.metrics import ServerMetrics
from pipeline.server.store import JobRow


def fields(caplog) -> list[dict]:
    return [record.fields for record in caplog.records if record.name == "zkpipe.jobs"]


def test_each_event_is_one_line_with_its_fields(caplog):
    metrics = ServerMetrics()
    observer = JobObserver(metrics)
    row = JobRow(job_id="j1", key_id="k", priority="high", input_kind="wtns", n_partitions=2, created_at=100.0)
    with caplog.at_level(logging.INFO, logger="zkpipe.jobs"):
        observer.accepted(row)
        row.state, row.started_at = "running", 100.5
        observer.started(row)
        row.partitions_done = 1
        observer.partition_done(row, 0, {"synth_ms": 12.0, "gpu_total_ms": 250.0, "n_zero": 3, "total_ms": 400.0})
        row.state, row.finished_at, row.error_code, row.error_message = "failed", 103.0, "proving_failed", "bad"
        observer.finished(row)
    events = fields(caplog)
    assert [e["event"] for e in events] == ["job_accepted", "job_started", "job_partition_done", "job_failed"]
    assert events[0] == {"event": "job_accepted", "job_id": "j1", "key_id": "k", "partitions": 2,
                         "priority": "high", "input": "wtns"}
    assert events[1]["queued_s"] == 0.5
    assert events[2] == {"event": "job_partition_done", "job_id": "j1", "partition": 0, "done": "1/2",
                         "synthesize_s": 0.012, "gpu_s": 0.25, "total_s": 0.4}
    assert events[3]["code"] == "proving_failed" and events[3]["reason"] == "bad" and events[3]["total_s"] == 3.0
    assert caplog.records[-1].levelno == logging.WARNING
    assert caplog.records[2].getMessage() == ("job j1 partition_done: partition=0 done=1/2 synthesize_s=0.012 "
                                              "gpu_s=0.25 total_s=0.4")
    registry = metrics.registry
    assert registry.get_sample_value("zkpipe_server_job_seconds_count", {"outcome": "failed"}) == 1.0
    assert registry.get_sample_value("zkpipe_server_job_seconds_sum", {"outcome": "failed"}) == 3.0
    assert registry.get_sample_value("zkpipe_server_job_queued_seconds_sum") == 0.5


def test_cancelled_and_done_are_info_lines(caplog):
    observer = JobObserver()
    with caplog.at_level(logging.INFO, logger="zkpipe.jobs"):
        for state in ("cancelled", "done"):
            row = JobRow(job_id=state, key_id="k", priority="normal", input_kind="inputs", n_partitions=1,
                         created_at=1.0, state=state, finished_at=2.0)
            observer.finished(row)
    assert [e["event"] for e in fields(caplog)] == ["job_cancelled", "job_done"]
    assert all(r.levelno == logging.INFO for r in caplog.records)

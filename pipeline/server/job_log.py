"""One structured log line per job event, and the job histograms (``JobObserver``).

Events, on the ``zkpipe.jobs`` logger: ``job_accepted``, ``job_started``, ``job_partition_done``
(with that partition's stage times in seconds), ``job_done``, ``job_failed`` (with the error code
and reason, at warning level) and ``job_cancelled``. In text logs a line reads
``job 3f2a... partition_done: partition=0 done=1/2 synthesize_s=0.014 ...``; in JSON logs the same
values are fields of the object.
"""
from __future__ import annotations

import logging

from .store import JobRow

log = logging.getLogger("zkpipe.jobs")
# PartitionProof.timings_ms key -> field name in the partition_done line
STAGE_FIELDS = {"synth_ms": "synthesize_s", "prep_msm_ms": "prep_msm_s", "gpu_lock_wait_ms": "gpu_lock_wait_s",
                "gpu_total_ms": "gpu_s", "b_g2_msm_ms": "b_g2_msm_s", "epilogue_ms": "epilogue_s",
                "total_ms": "total_s"}


class JobObserver:
    def __init__(self, metrics=None) -> None:
        self.metrics = metrics  # ServerMetrics, or None (no histograms)

    def accepted(self, row: JobRow) -> None:
        self._event(logging.INFO, "accepted", row, key_id=row.key_id, partitions=row.n_partitions,
                    priority=row.priority, input=row.input_kind, request_id=row.request_id)

    def started(self, row: JobRow) -> None:
        queued_s = max(0.0, (row.started_at or row.created_at) - row.created_at)
        if self.metrics is not None:
            self.metrics.job_started(queued_s)
        self._event(logging.INFO, "started", row, queued_s=round(queued_s, 6))

    def partition_done(self, row: JobRow, index: int | None, timings_ms: dict) -> None:
        stages = {name: round(timings_ms[key] / 1e3, 6) for key, name in STAGE_FIELDS.items() if key in timings_ms}
        self._event(logging.INFO, "partition_done", row, partition=index,
                    done=f"{row.partitions_done}/{row.n_partitions}", **stages)

    def finished(self, row: JobRow) -> None:
        total_s = max(0.0, (row.finished_at or row.created_at) - row.created_at)
        if self.metrics is not None:
            self.metrics.job_finished(row.state, total_s)
        if row.state == "failed":
            self._event(logging.WARNING, "failed", row, code=row.error_code, reason=row.error_message,
                        total_s=round(total_s, 6))
        else:
            self._event(logging.INFO, row.state, row, partitions=row.n_partitions, total_s=round(total_s, 6))

    @staticmethod
    def _event(level: int, event: str, row: JobRow, **values) -> None:
        values = {k: v for k, v in values.items() if v is not None}
        text = " ".join(f"{k}={v}" for k, v in values.items())
        log.log(level, "job %s %s: %s", row.job_id, event, text,
                extra={"fields": {"event": f"job_{event}", "job_id": row.job_id, **values}})

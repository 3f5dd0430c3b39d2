"""A worker's own counters and claim latency, as a snapshot (stored with each heartbeat) and Prometheus text."""
from __future__ import annotations

import collections
import statistics

OUTCOMES = ("claimed", "stored", "fenced", "failed", "cancelled", "released", "leases_lost", "reaped", "errors")


class WorkerMetrics:
    def __init__(self, worker_id: str, recent_kept: int = 1024) -> None:
        self.worker_id = worker_id
        self.counters = dict.fromkeys(OUTCOMES, 0)
        self.claim_rounds = 0
        self.claim_seconds_total = 0.0
        self._recent_claim_s: collections.deque[float] = collections.deque(maxlen=recent_kept)

    def count(self, outcome: str, n: int = 1) -> None:
        self.counters[outcome] += n

    def claimed(self, seconds: float, n: int) -> None:
        """One claim transaction: its latency (client-side round trip) and how many partitions it took."""
        self.claim_rounds += 1
        self.claim_seconds_total += seconds
        self._recent_claim_s.append(seconds)
        self.counters["claimed"] += n

    def claim_latency_ms(self) -> dict[str, float]:
        recent = sorted(self._recent_claim_s)
        if not recent:
            return {}
        return {"median": round(statistics.median(recent) * 1e3, 3),
                "p99": round(recent[min(len(recent) - 1, int(len(recent) * 0.99))] * 1e3, 3)}

    def snapshot(self) -> dict:
        return {**self.counters, "claim_rounds": self.claim_rounds, "claim_latency_ms": self.claim_latency_ms()}

    def prometheus_lines(self, held: int, cluster_partitions: dict[str, int]) -> list[str]:
        w = f'worker="{self.worker_id}"'
        lines = ["# HELP zkpipe_worker_partitions_total Partitions by outcome on this worker.",
                 "# TYPE zkpipe_worker_partitions_total counter"]
        lines += [f'zkpipe_worker_partitions_total{{{w},outcome="{k}"}} {v}' for k, v in self.counters.items()]
        lines += ["# HELP zkpipe_worker_claim_seconds Claim transactions (round trip to the store).",
                  "# TYPE zkpipe_worker_claim_seconds summary",
                  f"zkpipe_worker_claim_seconds_count{{{w}}} {self.claim_rounds}",
                  f"zkpipe_worker_claim_seconds_sum{{{w}}} {self.claim_seconds_total:.6f}",
                  "# HELP zkpipe_worker_partitions_held Partitions leased by this worker now.",
                  "# TYPE zkpipe_worker_partitions_held gauge", f"zkpipe_worker_partitions_held{{{w}}} {held}",
                  "# HELP zkpipe_cluster_partitions Partitions in the shared store by state (last heartbeat).",
                  "# TYPE zkpipe_cluster_partitions gauge"]
        lines += [f'zkpipe_cluster_partitions{{state="{k}"}} {v}' for k, v in cluster_partitions.items()]
        return lines

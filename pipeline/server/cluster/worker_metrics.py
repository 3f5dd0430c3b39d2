"""A worker's own counters and claim latency, as a snapshot (stored with each heartbeat); /metrics exports
them through server/metrics.py (the service's one prometheus_client registry)."""
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

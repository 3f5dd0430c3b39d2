"""The service's Prometheus metrics, in the one registry the engine also writes to.

``create_app`` makes one ``CollectorRegistry``; the engine adds its own families to it
(``Engine(registry=...)``) and ``GET /metrics`` renders it with prometheus_client's encoder for
the scraper's ``Accept`` header (text 0.0.4 or OpenMetrics), with the matching content type.

    zkpipe_http_request_duration_seconds{method,route,status}   histogram, every request
    zkpipe_server_job_seconds{outcome}                           histogram, accepted -> finished
    zkpipe_server_job_queued_seconds                             histogram, accepted -> started
    zkpipe_server_jobs_total{outcome}                            counter, from zero
    zkpipe_server_jobs_active, zkpipe_server_dispatch_queue      gauges
    zkpipe_worker_*, zkpipe_cluster_partitions                   a cluster worker's own (docs/cluster.md)
    process_*, python_*                                          the client's standard collectors
"""
from __future__ import annotations

import time
from collections.abc import Iterator

from aiohttp import web
from prometheus_client import CollectorRegistry, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.exposition import choose_encoder

from ..engine.metrics import SECONDS_BUCKETS

HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
OUTCOMES = ("done", "failed", "cancelled")


class ServerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.http_seconds = Histogram(
            "zkpipe_http_request_duration_seconds", "HTTP requests: time from routing to the response",
            ["method", "route", "status"], buckets=HTTP_BUCKETS, registry=self.registry)
        self.job_seconds = Histogram(
            "zkpipe_server_job_seconds", "Jobs: accepted (202) to finished, by outcome",
            ["outcome"], buckets=SECONDS_BUCKETS, registry=self.registry)
        self.job_queued_seconds = Histogram(
            "zkpipe_server_job_queued_seconds", "Jobs: accepted to started by the engine",
            buckets=SECONDS_BUCKETS, registry=self.registry)
        for outcome in OUTCOMES:
            self.job_seconds.labels(outcome=outcome)
        self._service_collector = self._cluster_collector = None

    def watch_service(self, service) -> None:
        """Export the job service's counters and gauges (read at scrape time) until ``unwatch_service``."""
        self._service_collector = _ServiceCollector(service)
        self.registry.register(self._service_collector)

    def unwatch_service(self) -> None:
        for collector in (self._service_collector, self._cluster_collector):
            if collector is not None:
                self.registry.unregister(collector)
        self._service_collector = self._cluster_collector = None

    def watch_cluster(self, worker) -> None:
        """Export a cluster worker's claims, leases and the shared store's partitions (until ``unwatch_service``)."""
        self._cluster_collector = _ClusterCollector(worker)
        self.registry.register(self._cluster_collector)

    def job_started(self, queued_s: float) -> None:
        self.job_queued_seconds.observe(queued_s)

    def job_finished(self, outcome: str, total_s: float) -> None:
        self.job_seconds.labels(outcome=outcome).observe(total_s)

    def response(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept"))
        return web.Response(body=encoder(self.registry), headers={"Content-Type": content_type})

    def middleware(self):
        """Times every request (errors too: it runs outside the error middleware) by route template."""

        @web.middleware
        async def timed(request: web.Request, handler):
            started = time.perf_counter()
            status = 500
            try:
                response = await handler(request)
                status = response.status
                return response
            except web.HTTPException as exc:
                status = exc.status
                raise
            finally:
                resource = request.match_info.route.resource
                route = resource.canonical if resource is not None else "unmatched"
                self.http_seconds.labels(method=request.method, route=route, status=str(status)).observe(
                    time.perf_counter() - started)

        return timed


class _ServiceCollector:
    def __init__(self, service) -> None:
        self._service = service

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Metric]:
        service = self._service
        jobs = CounterMetricFamily("zkpipe_server_jobs", "Jobs by outcome since the server started",
                                   labels=["outcome"])
        for name, value in service.counters.items():
            jobs.add_metric([name], value)
        yield jobs
        yield GaugeMetricFamily("zkpipe_server_jobs_active", "Jobs accepted and not finished",
                                value=service.active_count())
        yield GaugeMetricFamily("zkpipe_server_dispatch_queue", "Jobs stored and not yet taken by the engine",
                                value=service.queue_depth())


class _ClusterCollector:
    """A cluster worker's ``WorkerMetrics``, the partitions it holds and the store's partition states."""

    def __init__(self, worker) -> None:
        self._worker = worker

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Metric]:
        worker = self._worker
        metrics = worker.metrics
        partitions = CounterMetricFamily("zkpipe_worker_partitions", "Partitions by outcome on this worker",
                                         labels=["worker", "outcome"])
        for outcome, value in metrics.counters.items():
            partitions.add_metric([metrics.worker_id, outcome], value)
        yield partitions
        claims = SummaryMetricFamily("zkpipe_worker_claim_seconds", "Claim transactions (round trip to the store)",
                                     labels=["worker"])
        claims.add_metric([metrics.worker_id], metrics.claim_rounds, metrics.claim_seconds_total)
        yield claims
        held = GaugeMetricFamily("zkpipe_worker_partitions_held", "Partitions leased by this worker now",
                                 labels=["worker"])
        held.add_metric([metrics.worker_id], len(worker.held))
        yield held
        cluster = GaugeMetricFamily("zkpipe_cluster_partitions", "Partitions in the shared store by state "
                                    "(last heartbeat)", labels=["state"])
        for state, value in worker.view.partitions.items():
            cluster.add_metric([state], value)
        yield cluster

"""Jobs: what a caller submits and awaits. States, priorities, progress, events, cancel.

A job is one proving key and one or more partitions (witnesses or circuit inputs); its result
is one ``PartitionProof`` per partition, in order. States move one way:

    queued -> running -> done | failed | cancelled      (queued -> cancelled directly too)

The engine drives a job through the ``_`` methods; callers use ``result()``, ``events()``,
``cancel()``, ``progress`` and ``snapshot()``. A finished job holds its proofs only.
"""
from __future__ import annotations

import asyncio
import enum
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from ..errors import ZkpipeError
from .config import PRIORITIES


class Priority(enum.IntEnum):
    """Lower value is served first; FIFO within one priority (by submission order)."""

    CRITICAL = 0
    HIGH = 1
    NORMAL = 2
    LOW = 3

    @classmethod
    def parse(cls, value: "Priority | str") -> "Priority":
        if isinstance(value, Priority):
            return value
        try:
            return cls[str(value).upper()]
        except KeyError:
            raise ValueError(f"unknown priority {value!r} (expected one of: {', '.join(PRIORITIES)})") from None


class JobState(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class JobFailed(ZkpipeError):
    """The job failed; ``reason`` says which partition and why, ``code`` whose fault it was
    (``errors.fault_code``: bad_input, unavailable, internal_error). Other jobs are unaffected."""

    def __init__(self, job_id: str, reason: str, code: str = "internal_error") -> None:
        super().__init__(f"job {job_id} failed: {reason}")
        self.job_id = job_id
        self.reason = reason
        self.code = code


class JobCancelled(ZkpipeError):
    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id} was cancelled")
        self.job_id = job_id


@dataclass(frozen=True)
class PartitionProof:
    """One partition's proof, as points and as snarkjs JSON (proof.json, public.json)."""

    index: int
    curve_name: str
    pi_a: tuple | None
    pi_b: tuple | None
    pi_c: tuple | None
    public_signals: tuple[int, ...]
    proof_json: dict
    public_json: list[str]
    verified: bool | None  # None: not verified (EngineConfig.verify_proofs off)
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class JobEvent:
    job_id: str
    kind: str  # queued | running | partition_done | done | failed | cancelled
    state: JobState
    partitions_done: int
    partitions_total: int
    time: float  # time.time()
    detail: dict[str, Any] = field(default_factory=dict)


class Job:
    def __init__(self, key_id: str, n_partitions: int, priority: Priority, request_id: str | None,
                 seq: int, on_cancel: Callable[["Job"], None],
                 on_event: Callable[[JobEvent], Any] | None = None) -> None:
        self.id = uuid.uuid4().hex
        self.key_id = key_id
        self.priority = priority
        self.request_id = request_id
        self.seq = seq  # submission order: FIFO within a priority
        self.total = n_partitions
        self.done_count = 0
        self.state = JobState.QUEUED
        self.reason = ""
        self.failure_code = ""  # set when the job fails (errors.fault_code)
        self.created = time.time()
        self.finished_at: float | None = None
        self._results: list[PartitionProof | None] = [None] * n_partitions
        self._finished = asyncio.Event()
        self._history: list[JobEvent] = []
        self._subscribers: list[asyncio.Queue] = []
        self._on_cancel = on_cancel
        self._on_event = on_event
        self._emit("queued")

    # -- caller side -----------------------------------------------------------------------
    @property
    def progress(self) -> tuple[int, int]:
        return self.done_count, self.total

    @property
    def finished(self) -> bool:
        return self.state.finished

    def cancel(self) -> bool:
        """Stop the job at its partitions' next stage boundary. False if already finished."""
        if self.finished:
            return False
        self._finish(JobState.CANCELLED, "cancelled by the caller")
        self._on_cancel(self)
        return True

    async def result(self) -> list[PartitionProof]:
        """The proofs in partition order; raises ``JobFailed`` or ``JobCancelled``."""
        await self._finished.wait()
        if self.state is JobState.FAILED:
            raise JobFailed(self.id, self.reason, self.failure_code)
        if self.state is JobState.CANCELLED:
            raise JobCancelled(self.id)
        return list(self._results)  # type: ignore[arg-type]

    async def wait(self) -> JobState:
        await self._finished.wait()
        return self.state

    async def events(self) -> AsyncIterator[JobEvent]:
        """Every event of the job from its start, then new ones, ending after the final one."""
        queue: asyncio.Queue = asyncio.Queue()
        for ev in self._history:
            queue.put_nowait(ev)
        if not self.finished:
            self._subscribers.append(queue)
        try:
            while True:
                if queue.empty() and self.finished and queue not in self._subscribers:
                    return
                ev = await queue.get()
                yield ev
                if ev.state.finished:
                    return
        finally:
            if queue in self._subscribers:
                self._subscribers.remove(queue)

    def snapshot(self) -> dict:
        return {"id": self.id, "key_id": self.key_id, "state": self.state.value, "priority": self.priority.name.lower(),
                "request_id": self.request_id, "partitions_done": self.done_count, "partitions_total": self.total,
                "reason": self.reason, "created": self.created, "finished": self.finished_at}

    # -- engine side -----------------------------------------------------------------------
    def mark_running(self) -> None:
        if self.state is JobState.QUEUED:
            self.state = JobState.RUNNING
            self._emit("running")

    def record_partition(self, proof: PartitionProof) -> None:
        if self.finished:
            return
        self._results[proof.index] = proof
        self.done_count += 1
        self._emit("partition_done", index=proof.index, timings_ms=proof.timings_ms)
        if self.done_count == self.total:
            self._finish(JobState.DONE, "")

    def fail(self, reason: str, code: str = "internal_error") -> bool:
        if self.finished:
            return False
        self.failure_code = code
        self._finish(JobState.FAILED, reason)
        return True

    def _finish(self, state: JobState, reason: str) -> None:
        self.state = state
        self.reason = reason
        self.finished_at = time.time()
        if state is not JobState.DONE:
            self._results = [None] * self.total  # drop partial proofs
        self._emit(state.value, reason=reason) if reason else self._emit(state.value)
        self._finished.set()

    def _emit(self, kind: str, **detail) -> None:
        ev = JobEvent(self.id, kind, self.state, self.done_count, self.total, time.time(), detail)
        self._history.append(ev)
        for queue in self._subscribers:
            queue.put_nowait(ev)
        if self.state.finished:
            self._subscribers.clear()
        if self._on_event is not None:
            self._on_event(ev)

    def __repr__(self) -> str:
        return f"Job({self.id[:8]}, key={self.key_id}, {self.state.value}, {self.done_count}/{self.total})"

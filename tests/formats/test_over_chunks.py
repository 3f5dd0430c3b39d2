"""formats.binfile.over_chunks: pieces on a worker pool, results in order, and two calls at once run one after the
other (each call's pieces queued together), so the first caller's result is not held back by the second's."""
from __future__ import annotations

import threading
import time

import pytest

from pipeline.formats.binfile import over_chunks, worker_pool


def test_results_come_in_order_and_a_single_piece_runs_in_the_caller():
    assert over_chunks(10, 3, lambda a, b: (a, b), pool="test-order") == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert over_chunks(3, 3, lambda a, b: threading.current_thread().name) == [threading.current_thread().name]
    assert over_chunks(0, 3, lambda a, b: a) == []


def test_the_first_exception_is_raised_and_the_pieces_not_started_are_cancelled():
    started = []

    def task(a: int, b: int) -> int:
        started.append(a)
        if a == 0:
            time.sleep(0.05)
            raise ValueError("piece 0")
        time.sleep(0.2)
        return a

    workers = worker_pool("test-cancel")._max_workers
    with pytest.raises(ValueError, match="piece 0"):
        over_chunks(40, 1, task, pool="test-cancel")
    worker_pool("test-cancel").submit(lambda: None).result()  # the pool is still usable
    time.sleep(0.3)
    assert len(started) <= 2 * workers  # the 40 pieces were not all run after the failure


@pytest.mark.parametrize("run", range(3))
def test_two_calls_at_once_run_their_pieces_one_call_after_the_other(run):
    """Two threads call over_chunks together on one pool, as prep_msm's two workers scan a job's first two
    witnesses: every piece of one call starts before any piece of the other (the pool is FIFO), so one call
    ends after about half of the work, not both at the end."""
    pool = f"test-turns-{run}"
    workers = worker_pool(pool)._max_workers
    order: list[str] = []
    ends: dict[str, float] = {}
    lock = threading.Lock()
    go = threading.Barrier(2)

    def call(name: str) -> None:
        def piece(a: int, b: int) -> None:
            with lock:
                order.append(name)
            time.sleep(0.002)
        go.wait()
        over_chunks(40 * workers, 1, piece, pool=pool)
        ends[name] = time.perf_counter()

    threads = [threading.Thread(target=call, args=(name,)) for name in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    first = order[0]
    n = 40 * workers
    assert order == [first] * n + [("B" if first == "A" else "A")] * n
    assert ends[first] < ends["B" if first == "A" else "A"]

"""The prep thread of a streamed pass (streamed._HostPrep), without a GPU: a fake pass stands in
for CudaStreamedPass (its cursor, its partitions that left, and what making one returns)."""
from __future__ import annotations

import threading
import time

import pytest

from pipeline.backends.cuda.streamed import _HostPrep


class FakePass:
    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n_items, self.cursor, self.left = n, 0, [False] * n
        self.made: list[int] = []
        self.fail_at = fail_at
        self.lock = threading.Lock()

    def _prepare_host(self, index: int):
        with self.lock:
            self.made.append(index)
        if index == self.fail_at:
            raise RuntimeError(f"no split for {index}")
        return f"split{index}", [f"lock{index}"], None

    def prologue(self, prep: _HostPrep, index: int):
        self.cursor = index + 1  # as StreamedPass.enqueue_next does before _prologue
        return prep.take(index)


def settle(predicate, timeout=5.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "the prep thread did not get there"
        time.sleep(0.01)


def test_partitions_are_made_in_order_one_ahead_of_the_prologue_that_takes_them():
    fake = FakePass(4)
    prep = _HostPrep(fake)
    try:
        settle(lambda: fake.made == [0])
        time.sleep(0.15)
        assert fake.made == [0]  # not ahead of a pass that has not started its first prologue
        assert fake.prologue(prep, 0) == ("split0", ["lock0"], None)
        settle(lambda: fake.made == [0, 1])
        time.sleep(0.15)
        assert fake.made == [0, 1]
        assert [fake.prologue(prep, i)[0] for i in (1, 2, 3)] == ["split1", "split2", "split3"]
    finally:
        assert prep.close() == []  # everything made was taken


def test_a_partition_that_left_is_not_made_and_a_failure_reaches_its_prologue():
    fake = FakePass(3, fail_at=2)
    fake.left[1] = True
    prep = _HostPrep(fake)
    try:
        fake.prologue(prep, 0)
        fake.cursor = 2  # partition 1's prologue was skipped
        with pytest.raises(RuntimeError, match="no split for 2"):
            fake.prologue(prep, 2)
        assert fake.made == [0, 2]
    finally:
        prep.close()


def test_closing_early_unlocks_what_was_made_and_not_taken_and_stops_the_thread():
    fake = FakePass(5)
    prep = _HostPrep(fake)
    fake.prologue(prep, 0)
    settle(lambda: fake.made == [0, 1])
    assert prep.close() == ["lock1"]
    assert not prep._thread.is_alive()
    assert fake.made == [0, 1]
